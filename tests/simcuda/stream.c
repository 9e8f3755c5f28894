/* Streams really are asynchronous: each has a queue and a worker thread, so a program
 * that forgets a stream wait computes a wrong result here as it would on a GPU. The
 * legacy default stream is ordered against every blocking stream, as CUDA specifies.
 * One mutex guards all queues; one condition variable is broadcast whenever any stream
 * finishes an operation, which is what every waiter (host or worker) waits on. */
#include "sim.h"

#include <errno.h>
#include <unistd.h>
#include <sys/mman.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

/* Every stream and event ever created, destroyed ones included (kept because queued
 * waits may refer to them): a handle is only dereferenced once found here. */
static struct CUstream_st *streams; /* guarded by sim.mu */
static struct CUevent_st *events;
static _Atomic(struct CUstream_st *) legacy[SIM_MAX_DEVICES]; /* each device's, made at first use */
static pthread_mutex_t legacy_mu = PTHREAD_MUTEX_INITIALIZER;
static __thread struct CUstream_st *per_thread[SIM_MAX_DEVICES];

struct CUstream_st *sim_streams(void) { return streams; }

sim_op_t *sim_op_new(sim_op_kind_t kind) {
  sim_op_t *op = calloc(1, sizeof *op);
  if (op) op->kind = kind;
  return op;
}

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static double now_ms(void) { return now_ns() * 1e-6; }

/* The calling thread's CPU time: a kernel's body is what it computes, not what the
 * machine's other threads took from it meanwhile. */
static double cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static void sleep_until(double ns) {
  struct timespec ts = {(time_t)(ns / 1e9), (long)(ns - (double)(time_t)(ns / 1e9) * 1e9)};
  while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) continue;
}

/* ---- the worker ------------------------------------------------------------ */

bool sim_event_ran(const struct CUevent_st *e, uint64_t gen) {
  if (e->shared) return gen <= atomic_load(&e->shared->done);
  if (gen <= e->completed) return true;
  for (size_t i = 0; i < e->nabove; i++)
    if (e->above[i] == gen) return true;
  return false;
}

/* Generation gen ran (sim.mu held). Out of order (another stream's later record ran
 * first) it waits in above until the ones before it ran too. */
static void event_ran(struct CUevent_st *e, uint64_t gen) {
  if (sim_event_ran(e, gen)) return;
  if (e->shared) {
    unsigned long long d = atomic_load(&e->shared->done);
    while (d < gen && !atomic_compare_exchange_weak(&e->shared->done, &d, gen)) {}
    return;
  }
  if (gen != e->completed + 1) {
    size_t cap = e->cap_above ? 2 * e->cap_above : 8;
    uint64_t *a = e->nabove < e->cap_above ? e->above : realloc(e->above, cap * sizeof *a);
    if (!a) abort(); /* the simulator's own bookkeeping: no way to go on faithfully */
    if (a != e->above) e->above = a, e->cap_above = cap;
    e->above[e->nabove++] = gen;
    return;
  }
  e->completed = gen;
  for (size_t i = 0; i < e->nabove;)
    if (e->above[i] == e->completed + 1) e->completed++, e->above[i] = e->above[--e->nabove], i = 0;
    else i++;
}

/* The latest generation recorded (in any process, for an interprocess event). */
static uint64_t latest(const struct CUevent_st *e) { return e->shared ? atomic_load(&e->shared->recorded) : e->recorded; }

/* Another process completes an interprocess event's records: nobody here signals it, so
 * whoever waits for one looks again every 100 us (sim.mu held). */
static void wait_cv(bool poll) {
  if (!poll) {
    pthread_cond_wait(&sim.cv, &sim.mu);
    return;
  }
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  t.tv_nsec += 100000;
  if (t.tv_nsec >= 1000000000) t.tv_sec++, t.tv_nsec -= 1000000000;
  pthread_cond_timedwait(&sim.cv, &sim.mu, &t);
}

static bool ready(const sim_op_t *op) {
  if (op->kind == OP_WAIT_EVENT) return sim_event_ran(op->u.event.e, op->u.event.gen);
  if (op->kind == OP_WAIT_STREAM) return op->u.stream.s->done >= op->u.stream.seq;
  return true;
}

/* Operations that only touch simulator state run under the lock. */
static bool run_locked(sim_op_t *op) {
  switch (op->kind) {
  case OP_WAIT_EVENT:
  case OP_WAIT_STREAM: return true;
  case OP_RECORD:
    if (!sim_event_ran(op->u.event.e, op->u.event.gen)) event_ran(op->u.event.e, op->u.event.gen), op->u.event.e->time = now_ms();
    return true;
  case OP_FREE: sim_mem_release_now(op->u.free.p); return true;
  default: return false;
  }
}

/* The memmove estimate follows a faster host at once and a slower one by a quarter a
 * copy: one memmove preempted on a loaded machine must not make the next copies read
 * their sources at once instead of at the end of their link time. */
static double next_estimate(double est, double sample) { return est <= 0 || sample < est * 1.25 ? sample : est * 1.25; }

/* SIMCUDA_COPY_GBPS: a copy holds its stream bytes / GB/s and reads and writes its bytes
 * at the end, so a reader or writer not ordered with it sees that every time. The bytes
 * move by memmove on the host, inside that time: the copy sleeps first what the memmove
 * will not take (its cost per byte as measured on the copies so far), so a link the
 * host's memmove outruns is timed as modelled, not as link + memmove (which made a
 * 25 GB/s link run at 4-5 on a 2-core machine); one whose memmove beat the estimate
 * holds its stream for the rest. A copy whose memmove, with its fill (fill: a mapping's
 * pages the helper may not have faulted in yet, pager.c), took longer than its link
 * time (the host was slower than the link) is counted: the exit report says when the
 * link was the host's rather than the one modelled. Those are what is judged, not the
 * copy's wall time, so a loaded machine waking the copy late is not taken for a slow
 * link. */
static void copy_timed(sim_op_t *op, double link, bool fill) {
  size_t n = op->u.copy.n;
  double est = atomic_load_explicit(&sim.memmove_ns_per_byte, memory_order_relaxed);
  double start = now_ns();
  if (fill) sim_pager_fill((uintptr_t)op->u.copy.dst, n);
  double filled = now_ns() - start, lead = link - filled - (double)n * est;
  if (lead > 0) sleep_until(start + filled + lead);
  double before = now_ns();
  memmove(op->u.copy.dst, op->u.copy.src, n);
  double end = now_ns();
  if (n >= 4096) atomic_store_explicit(&sim.memmove_ns_per_byte, next_estimate(est, (end - before) / (double)n),
                                      memory_order_relaxed);
  if (end < start + link) sleep_until(start + link); /* a memmove faster than the estimate */
  atomic_fetch_add_explicit(&sim.link_bytes, n, memory_order_relaxed);
  if (filled + end - before > link + 20e3) atomic_fetch_add_explicit(&sim.link_slow_bytes, n, memory_order_relaxed);
}

/* The link has one lane each way, as PCIe (full duplex) and a GPU's copy engines have:
 * copies the same way share it, whatever their streams, one at a time; the two ways run
 * at once. A device-to-device copy (or host to host) takes no lane. */
static pthread_mutex_t lane_mu[2] = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER};

static void copy_bytes(sim_op_t *op) {
  double link = (double)op->u.copy.n * sim.copy_ns_per_byte;
  if (link <= 0) return (void)memmove(op->u.copy.dst, op->u.copy.src, op->u.copy.n); /* no link modelled */
  bool to_dev = sim_in_device_range((uintptr_t)op->u.copy.dst), from_dev = sim_in_device_range((uintptr_t)op->u.copy.src);
  pthread_mutex_t *lane = to_dev != from_dev ? &lane_mu[to_dev] : NULL;
  if (lane) pthread_mutex_lock(lane);
  copy_timed(op, link, to_dev && (uintptr_t)op->u.copy.dst >= sim.vmm_base); /* cuMemAlloc's faults at its first touch */
  if (lane) pthread_mutex_unlock(lane);
}

/* SIMCUDA_KERNEL_US: a kernel holds its stream that long from when it could start (queued,
 * and the stream done with what came before), asleep, and runs its body at the end of
 * that time: a reader that was not waited for sees what is there when it ends, every
 * time, and the host is free meanwhile, as with a GPU. Each stream is a timeline of its
 * own. The body starts its expected time before the hold's end (the same kernel's runs
 * over the same grid, leave_device), so the kernel takes max(SIMCUDA_KERNEL_US, the CPU
 * its body computes for) of its stream, and whatever waits for it sees that too. With
 * the body after the whole hold, a body longer than the hold (mlp_train's weight
 * gradient, 53-55 ms of this host's time under 30 ms holds) let the next kernel's hold
 * on its stream run beside it, while a stream ordered after it by an event saw its real
 * end: a budget's copies, ordered so, exposed 25 ms a body, 50 ms of the 53 that a
 * served period at half the peak took over the unbudgeted one. */
#define BODIES 256 /* kernels (function, grid) whose body time is followed; others share */

static struct {
  pthread_mutex_t mu;
  struct { const void *f; unsigned grid[3]; double ns; } slot[BODIES];
} bodies = {.mu = PTHREAD_MUTEX_INITIALIZER};

static size_t body_slot(const sim_op_t *op) {
  const unsigned *g = op->u.kernel.launch.grid;
  uintptr_t h = (uintptr_t)op->u.kernel.f * 31u + g[0] * 7u + g[1] * 3u + g[2];
  return (h ^ h >> 9) % BODIES;
}

/* The body's expected time (0: never run), or with ns >= 0 its latest run noted. */
static double body_ns(const sim_op_t *op, double ns) {
  size_t i = body_slot(op);
  const unsigned *g = op->u.kernel.launch.grid;
  pthread_mutex_lock(&bodies.mu);
  bool same = bodies.slot[i].f == op->u.kernel.f && !memcmp(bodies.slot[i].grid, g, sizeof bodies.slot[i].grid);
  double est = same ? bodies.slot[i].ns : 0;
  if (ns >= 0) {
    bodies.slot[i].f = op->u.kernel.f, memcpy(bodies.slot[i].grid, g, sizeof bodies.slot[i].grid);
    bodies.slot[i].ns = same && ns < est ? est - (est - ns) / 4 : ns; /* slower at once, faster by a quarter */
  }
  pthread_mutex_unlock(&bodies.mu);
  return est;
}

/* When the kernel could take its stream; *due: when its body is to run, its expected
 * time before the hold's end, not before that start. */
static double take_device(struct CUstream_st *s, const sim_op_t *op, double *due) {
  double start = op->queued_ns > s->busy_until ? op->queued_ns : s->busy_until;
  *due = start + sim.kernel_ns - body_ns(op, -1);
  if (*due < start) *due = start;
  s->busy_until = start + sim.kernel_ns;
  sleep_until(*due);
  return start;
}

/* The body, due at `due`, took `body` of this thread's CPU (what it computes, not what
 * the machine's other threads took meanwhile): its stream is busy to the hold's end, or
 * to the body's end counted from its due time, so that the kernel takes max(hold, body)
 * where the expectation holds, and whatever waits on an event after it sees the same
 * end as the next kernel on its stream. The expectation follows a slower body at once
 * and a faster one by a quarter a run: a body that ran longer than expected lengthens
 * its stream by as much, one expected long enough does not (the first run of each
 * kernel, expected to take nothing, runs after the hold and lengthens it by its body).
 * Its results appear no earlier than the stream's end, slept for only where that is
 * still to come: an absolute sleep already past is no free call on this machine (the
 * H200 ResNet-50 recording's replay under planalloc at 20 us kernels, 57,000 of them:
 * 3.1 s against 1.8). */
static void leave_device(struct CUstream_st *s, const sim_op_t *op, double due, double body) {
  body_ns(op, body);
  if (due + body > s->busy_until) s->busy_until = due + body;
  if (now_ns() < s->busy_until) sleep_until(s->busy_until);
}

/* Runs op, which takes its stream's time; when it started (a kernel: when it could take
 * its stream, or was taken up, whichever came later). */
static double run_unlocked(struct CUstream_st *s, sim_op_t *op) {
  double start = now_ns();
  switch (op->kind) {
  case OP_KERNEL: {
    if (!(sim.kernel_ns > 0)) { /* no device time: no clock read (a thread's CPU clock is a system call) */
      sim_run_kernel(op);
      break;
    }
    double due, could = take_device(s, op, &due), from = cpu_ns();
    if (could > start) start = could;
    sim_run_kernel(op);
    leave_device(s, op, due, cpu_ns() - from);
    break;
  }
  case OP_COPY:
    copy_bytes(op);
    if (sim.kernel_ns > 0 && now_ns() > s->busy_until) s->busy_until = now_ns(); /* the stream was busy */
    break;
  case OP_SET:
    for (size_t i = 0; i < op->u.set.count; i++) {
      unsigned char *d = (unsigned char *)op->u.set.dst + i * op->u.set.width;
      memcpy(d, &op->u.set.value, op->u.set.width); /* little endian: low bytes first */
    }
    break;
  case OP_HOST: op->u.host.fn(op->u.host.data); break;
  default: break;
  }
  return start;
}

static void *worker(void *arg) {
  struct CUstream_st *s = arg;
  prctl(PR_SET_TIMERSLACK, 1UL); /* kernel times in microseconds, not the default 50 us slack */
  pthread_mutex_lock(&sim.mu);
  for (;;) {
    bool blocked = false; /* the next operation waited for another stream */
    while (!(s->head && ready(s->head)) && !(s->stop && !s->head)) {
      blocked |= s->head != NULL;
      wait_cv(s->head && s->head->kind == OP_WAIT_EVENT && s->head->u.event.e->shared);
    }
    if (!s->head) break; /* destroyed and drained */
    sim_op_t *op = s->head;
    if (blocked && sim.kernel_ns > 0 && now_ns() > s->busy_until) s->busy_until = now_ns();
    if (!run_locked(op)) {
      pthread_mutex_unlock(&sim.mu);
      double start = run_unlocked(s, op);
      if (op->kind == OP_KERNEL || op->kind == OP_COPY || op->kind == OP_SET) sim_timeline_note(s, op, start, now_ns());
      pthread_mutex_lock(&sim.mu);
    }
    s->head = op->next;
    if (!s->head) s->tail = NULL;
    s->done++;
    sim_op_free(op);
    pthread_cond_broadcast(&sim.cv);
  }
  pthread_mutex_unlock(&sim.mu);
  return NULL;
}

static struct CUstream_st *stream_new(unsigned flags, bool is_legacy, int device) {
  struct CUstream_st *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->magic = SIM_STREAM_MAGIC, s->flags = flags, s->legacy = is_legacy, s->device = device;
  if (pthread_create(&s->worker, NULL, worker, s)) {
    free(s);
    return NULL;
  }
  pthread_detach(s->worker);
  pthread_mutex_lock(&sim.mu);
  s->number = streams ? streams->number + 1 : 0;
  s->next_stream = streams, streams = s;
  pthread_mutex_unlock(&sim.mu);
  return s;
}

/* ---- resolving handles -------------------------------------------------------- */

static struct CUstream_st *legacy_of(int device) {
  pthread_mutex_lock(&legacy_mu);
  struct CUstream_st *s = atomic_load(&legacy[device]);
  if (!s) atomic_store(&legacy[device], s = stream_new(0, true, device));
  pthread_mutex_unlock(&legacy_mu);
  return s;
}

/* A thread's default stream ends with the thread (its queued work still completes), so
 * programs that start many short threads do not accumulate workers. Destroyed streams
 * retire the same way. */
static pthread_key_t per_thread_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

static void retire(struct CUstream_st *s) {
  pthread_mutex_lock(&sim.mu);
  s->magic = 0, s->stop = true;
  pthread_cond_broadcast(&sim.cv);
  pthread_mutex_unlock(&sim.mu);
}

/* arg: the exiting thread's default streams, one per device */
static void retire_all(void *arg) {
  struct CUstream_st **mine = arg;
  for (int d = 0; d < SIM_MAX_DEVICES; d++)
    if (mine[d]) retire(mine[d]);
}

static void make_key(void) { pthread_key_create(&per_thread_key, retire_all); }

static struct CUstream_st *thread_stream(int device) {
  if (per_thread[device]) return per_thread[device];
  pthread_once(&key_once, make_key);
  per_thread[device] = stream_new(0, false, device); /* a blocking stream of its own */
  if (per_thread[device]) pthread_setspecific(per_thread_key, per_thread);
  return per_thread[device];
}

struct CUstream_st *sim_stream(CUstream s, bool ptsz) {
  if (s == CU_STREAM_PER_THREAD || (!s && ptsz)) return thread_stream(sim_device());
  if (!s || s == CU_STREAM_LEGACY) return legacy_of(sim_device());
  return s;
}

static bool listed_stream(CUstream s) {
  pthread_mutex_lock(&sim.mu);
  struct CUstream_st *x = streams;
  while (x && x != s) x = x->next_stream;
  bool ok = x && x->magic == SIM_STREAM_MAGIC;
  pthread_mutex_unlock(&sim.mu);
  return ok;
}

static bool event_ok(CUevent e) {
  pthread_mutex_lock(&sim.mu);
  struct CUevent_st *x = events;
  while (x && x != e) x = x->next_event;
  bool ok = x && x->magic == SIM_EVENT_MAGIC;
  pthread_mutex_unlock(&sim.mu);
  return ok;
}

bool sim_stream_valid(CUstream s) {
  return !s || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD || listed_stream(s);
}

/* ---- queueing ------------------------------------------------------------------ */

static void append(struct CUstream_st *s, sim_op_t *op) {
  op->next = NULL;
  if (sim.kernel_ns > 0) op->queued_ns = now_ns();
  if (s->tail) s->tail->next = op;
  else s->head = op;
  s->tail = op;
  s->enqueued++;
}

static void wait_for(struct CUstream_st *s, struct CUstream_st *other) {
  if (other == s || other->done >= other->enqueued) return;
  sim_op_t *w = sim_op_new(OP_WAIT_STREAM);
  if (!w) return; /* out of memory: ordering degrades to none rather than crash */
  w->u.stream.s = other, w->u.stream.seq = other->enqueued;
  append(s, w);
}

/* A device's legacy stream waits for its blocking streams' earlier work, and blocking
 * streams wait for their device's legacy stream's earlier work; another device's streams
 * are not ordered (sim.mu held; a legacy stream made meanwhile has no earlier work). */
static void implicit_order(struct CUstream_st *s) {
  if (s->legacy) {
    for (struct CUstream_st *x = streams; x; x = x->next_stream)
      if (!(x->flags & CU_STREAM_NON_BLOCKING) && x->device == s->device) wait_for(s, x);
  } else if (!(s->flags & CU_STREAM_NON_BLOCKING) && atomic_load(&legacy[s->device])) {
    wait_for(s, atomic_load(&legacy[s->device]));
  }
}

/* SIMCUDA_QUEUE_DEPTH: a GPU's stream takes about a thousand operations ahead of the
 * device, then the call that queues the next one blocks until one finishes (a launch
 * takes a kernel's time from then on): a host cannot run further ahead of the device
 * than that, and what a program or a preload decides "now" is that far from when the
 * device gets there. */
static void wait_for_room(struct CUstream_st *s) {
  while (sim.queue_depth && s->enqueued - s->done >= sim.queue_depth) pthread_cond_wait(&sim.cv, &sim.mu);
}

void sim_enqueue(struct CUstream_st *s, sim_op_t *op) {
  pthread_mutex_lock(&sim.mu);
  if (sim_capture_take(s, op)) {
    pthread_mutex_unlock(&sim.mu);
    return;
  }
  wait_for_room(s);
  implicit_order(s);
  append(s, op);
  pthread_cond_broadcast(&sim.cv);
  pthread_mutex_unlock(&sim.mu);
}

void sim_stream_sync(struct CUstream_st *s) {
  pthread_mutex_lock(&sim.mu);
  uint64_t target = s->enqueued;
  while (s->done < target) pthread_cond_wait(&sim.cv, &sim.mu);
  pthread_mutex_unlock(&sim.mu);
}

static bool op_touches(const sim_op_t *op, uintptr_t p, size_t len, char *what, size_t n) {
  unsigned param;
  uint64_t v;
  switch (op->kind) {
  case OP_KERNEL:
    if (!sim_kernel_points_into(op, p, len, &param, &v)) return false;
    snprintf(what, n, "kernel %s, parameter %u = 0x%llx", op->u.kernel.f->name, param, (unsigned long long)v);
    return true;
  case OP_COPY:
    if (!sim_overlaps(p, len, (uintptr_t)op->u.copy.dst, op->u.copy.n) &&
        !sim_overlaps(p, len, (uintptr_t)op->u.copy.src, op->u.copy.n))
      return false;
    snprintf(what, n, "a copy of %zu bytes from %p to %p", op->u.copy.n, op->u.copy.src, op->u.copy.dst);
    return true;
  case OP_SET:
    if (!sim_overlaps(p, len, (uintptr_t)op->u.set.dst, op->u.set.count * op->u.set.width)) return false;
    snprintf(what, n, "a memset of %zu bytes at %p", op->u.set.count * op->u.set.width, op->u.set.dst);
    return true;
  default: return false;
  }
}

bool sim_queued_touches(uintptr_t p, size_t len, char *what, size_t n) {
  for (struct CUstream_st *x = streams; x; x = x->next_stream)
    for (const sim_op_t *op = x->head; op; op = op->next)
      if (op_touches(op, p, len, what, n)) return true;
  return false;
}

/* device < 0: every device's */
static void sync_streams(int device) {
  pthread_mutex_lock(&sim.mu);
  for (struct CUstream_st *x = streams; x; x = x->next_stream) {
    uint64_t target = x->enqueued;
    while ((device < 0 || x->device == device) && x->done < target) pthread_cond_wait(&sim.cv, &sim.mu);
  }
  pthread_mutex_unlock(&sim.mu);
}

void sim_device_sync(void) { sync_streams(-1); }

bool sim_device_busy(void) {
  bool busy = false;
  pthread_mutex_lock(&sim.mu);
  for (struct CUstream_st *x = streams; x && !busy; x = x->next_stream) busy = x->done < x->enqueued;
  pthread_mutex_unlock(&sim.mu);
  return busy;
}
void sim_ctx_sync(int device) { sync_streams(device); }

/* ---- stream API ------------------------------------------------------------------ */

#define CHECK_STREAM(s)                                                   \
  do {                                                                    \
    CUresult rc_ = sim_ctx_check();                                       \
    if (rc_) return rc_;                                                  \
    if (!sim_stream_valid(s)) return CUDA_ERROR_INVALID_HANDLE;           \
  } while (0)

SIM_EXPORT CUresult cuStreamCreate(CUstream *ph, unsigned int flags) {
  SIM_CALLED();
  CUresult rc = sim_ctx_check();
  if (rc) return rc;
  if (!ph || (flags & ~(unsigned)CU_STREAM_NON_BLOCKING)) return CUDA_ERROR_INVALID_VALUE;
  struct CUstream_st *s = stream_new(flags, false, sim_device());
  if (!s) return CUDA_ERROR_OUT_OF_MEMORY;
  *ph = s;
  return CUDA_SUCCESS;
}

/* The device a stream's work runs on; the default streams are the current device's. */
SIM_EXPORT CUresult cuStreamGetDevice(CUstream s, CUdevice *device) {
  SIM_CALLED();
  CHECK_STREAM(s);
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  *device = sim_stream(s, false)->device;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuStreamCreateWithPriority(CUstream *ph, unsigned int flags, int priority) {
  SIM_CALLED();
  (void)priority; /* one worker per stream: priorities cannot change the order here */
  return cuStreamCreate(ph, flags);
}

/* Returns at once; queued work still completes, then the worker ends. The handle stays
 * allocated (invalidated) because other streams may still wait on it. */
SIM_EXPORT CUresult cuStreamDestroy_v2(CUstream s) {
  SIM_CALLED();
  CUresult rc = sim_ctx_check();
  if (rc) return rc;
  if (!s || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD || !listed_stream(s))
    return CUDA_ERROR_INVALID_HANDLE;
  retire(s);
  return CUDA_SUCCESS;
}

static CUresult stream_sync(CUstream s, bool ptsz) {
  CHECK_STREAM(s);
  if (sim_capture_forbids()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  sim_stream_sync(sim_stream(s, ptsz));
  return CUDA_SUCCESS;
}

static CUresult stream_query(CUstream s, bool ptsz) {
  CHECK_STREAM(s);
  struct CUstream_st *x = sim_stream(s, ptsz);
  pthread_mutex_lock(&sim.mu);
  bool idle = x->done == x->enqueued;
  pthread_mutex_unlock(&sim.mu);
  return idle ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

static CUresult stream_wait_event(CUstream s, CUevent e, unsigned flags, bool ptsz) {
  CHECK_STREAM(s);
  if (!event_ok(e)) return CUDA_ERROR_INVALID_HANDLE;
  if (flags & ~(unsigned)CU_EVENT_WAIT_EXTERNAL) return CUDA_ERROR_INVALID_VALUE;
  struct CUstream_st *x = sim_stream(s, ptsz);
  sim_op_t *op = sim_op_new(OP_WAIT_EVENT);
  if (!op) return CUDA_ERROR_OUT_OF_MEMORY;
  pthread_mutex_lock(&sim.mu);
  CUresult rc = sim_capture_wait(x, e, flags);
  op->u.event.e = e, op->u.event.gen = latest(e); /* the last record before this call */
  pthread_mutex_unlock(&sim.mu);
  if (rc) return free(op), rc;
  sim_enqueue(x, op);
  return CUDA_SUCCESS;
}

static CUresult stream_is_capturing(CUstream s, CUstreamCaptureStatus *status, bool ptsz) {
  CHECK_STREAM(s);
  if (!status) return CUDA_ERROR_INVALID_VALUE;
  struct CUstream_st *x = sim_stream(s, ptsz);
  pthread_mutex_lock(&sim.mu);
  *status = !x->capturing ? CU_STREAM_CAPTURE_STATUS_NONE
            : sim_capture_invalid(x) ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                             : CU_STREAM_CAPTURE_STATUS_ACTIVE;
  pthread_mutex_unlock(&sim.mu);
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuStreamSynchronize(CUstream s) { SIM_CALLED(); return stream_sync(s, false); }
SIM_EXPORT CUresult cuStreamSynchronize_ptsz(CUstream s) { SIM_CALLED(); return stream_sync(s, true); }
SIM_EXPORT CUresult cuStreamQuery(CUstream s) { SIM_CALLED(); return stream_query(s, false); }
SIM_EXPORT CUresult cuStreamQuery_ptsz(CUstream s) { SIM_CALLED(); return stream_query(s, true); }
SIM_EXPORT CUresult cuStreamWaitEvent(CUstream s, CUevent e, unsigned int flags) {
  SIM_CALLED();
  return stream_wait_event(s, e, flags, false);
}
SIM_EXPORT CUresult cuStreamWaitEvent_ptsz(CUstream s, CUevent e, unsigned int flags) {
  SIM_CALLED();
  return stream_wait_event(s, e, flags, true);
}
SIM_EXPORT CUresult cuStreamIsCapturing(CUstream s, CUstreamCaptureStatus *status) {
  SIM_CALLED();
  return stream_is_capturing(s, status, false);
}
SIM_EXPORT CUresult cuStreamIsCapturing_ptsz(CUstream s, CUstreamCaptureStatus *status) {
  SIM_CALLED();
  return stream_is_capturing(s, status, true);
}

/* ---- events ---------------------------------------------------------------------- */


SIM_EXPORT CUresult cuEventCreate(CUevent *ph, unsigned int flags) {
  SIM_CALLED();
  CUresult rc = sim_ctx_check();
  if (rc) return rc;
  unsigned known = CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
  if (!ph || (flags & ~known)) return CUDA_ERROR_INVALID_VALUE;
  if ((flags & CU_EVENT_INTERPROCESS) && !(flags & CU_EVENT_DISABLE_TIMING)) return CUDA_ERROR_INVALID_VALUE; /* "must be specified along with" */
  if ((rc = sim_fault("cuEventCreate"))) return rc;
  sim_shared_event_t *page = NULL;
  int fd = -1;
  if (flags & CU_EVENT_INTERPROCESS) {
    fd = memfd_create("simcuda-event", MFD_CLOEXEC);
    page = fd >= 0 && !ftruncate(fd, sizeof *page) ? mmap(NULL, sizeof *page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
    if (page == MAP_FAILED) return fd >= 0 ? close(fd) : 0, CUDA_ERROR_OUT_OF_MEMORY;
  }
  CUevent e = sim_event_over(page, fd);
  if (!e && page) munmap(page, sizeof *page), close(fd);
  if (!e) return CUDA_ERROR_OUT_OF_MEMORY;
  e->flags = flags;
  *ph = e;
  return CUDA_SUCCESS;
}

CUevent sim_event_over(sim_shared_event_t *page, int fd) {
  struct CUevent_st *e = calloc(1, sizeof *e);
  if (!e) return NULL;
  e->magic = SIM_EVENT_MAGIC, e->flags = CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING, e->device = sim_device();
  e->shared = page, e->shared_fd = fd;
  pthread_mutex_lock(&sim.mu);
  e->next_event = events, events = e;
  pthread_mutex_unlock(&sim.mu);
  return e;
}

int sim_event_page_fd(CUevent e) { return event_ok(e) && e->shared ? e->shared_fd : -1; }

/* Like streams, an event stays allocated: queued waits may still refer to it. */
SIM_EXPORT CUresult cuEventDestroy_v2(CUevent e) {
  SIM_CALLED();
  CUresult rc = sim_ctx_check();
  if (rc) return rc;
  if (!event_ok(e)) return CUDA_ERROR_INVALID_HANDLE;
  e->magic = 0;
  return CUDA_SUCCESS;
}

static CUresult event_record(CUevent e, CUstream s, bool ptsz) {
  CHECK_STREAM(s);
  if (!event_ok(e)) return CUDA_ERROR_INVALID_HANDLE;
  struct CUstream_st *x = sim_stream(s, ptsz);
  if (x->device != e->device) return CUDA_ERROR_INVALID_HANDLE; /* "must be from the same context" */
  sim_op_t *op = sim_op_new(OP_RECORD);
  if (!op) return CUDA_ERROR_OUT_OF_MEMORY;
  pthread_mutex_lock(&sim.mu);
  op->u.event.e = e, op->u.event.gen = e->shared ? atomic_fetch_add(&e->shared->recorded, 1) + 1 : ++e->recorded;
  sim_capture_record(x, e);
  pthread_mutex_unlock(&sim.mu);
  sim_enqueue(x, op);
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuEventRecord(CUevent e, CUstream s) { SIM_CALLED(); return event_record(e, s, false); }
SIM_EXPORT CUresult cuEventRecord_ptsz(CUevent e, CUstream s) { SIM_CALLED(); return event_record(e, s, true); }

SIM_EXPORT CUresult cuEventQuery(CUevent e) {
  SIM_CALLED();
  CUresult rc = sim_ctx_check();
  if (rc) return rc;
  if (!event_ok(e)) return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&sim.mu);
  bool captured = e->captured, done = sim_event_ran(e, latest(e));
  pthread_mutex_unlock(&sim.mu);
  if (captured) return CUDA_ERROR_CAPTURED_EVENT;
  return done ? CUDA_SUCCESS : CUDA_ERROR_NOT_READY;
}

SIM_EXPORT CUresult cuEventSynchronize(CUevent e) {
  SIM_CALLED();
  CUresult rc = sim_ctx_check();
  if (rc) return rc;
  if (!event_ok(e)) return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&sim.mu);
  uint64_t target = latest(e);
  bool captured = e->captured;
  while (!captured && !sim_event_ran(e, target)) wait_cv(e->shared);
  pthread_mutex_unlock(&sim.mu);
  return captured ? CUDA_ERROR_CAPTURED_EVENT : CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuEventElapsedTime_v2(float *ms, CUevent start, CUevent end) {
  SIM_CALLED();
  CUresult rc = sim_ctx_check();
  if (rc) return rc;
  if (!ms) return CUDA_ERROR_INVALID_VALUE;
  if (!event_ok(start) || !event_ok(end)) return CUDA_ERROR_INVALID_HANDLE;
  if ((start->flags | end->flags) & CU_EVENT_DISABLE_TIMING) return CUDA_ERROR_INVALID_HANDLE;
  pthread_mutex_lock(&sim.mu);
  bool recorded = start->recorded && end->recorded;
  bool done = sim_event_ran(start, start->recorded) && sim_event_ran(end, end->recorded);
  float v = (float)(end->time - start->time);
  pthread_mutex_unlock(&sim.mu);
  if (!recorded) return CUDA_ERROR_INVALID_HANDLE;
  if (!done) return CUDA_ERROR_NOT_READY;
  *ms = v;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuEventElapsedTime(float *ms, CUevent start, CUevent end) {
  SIM_CALLED();
  return cuEventElapsedTime_v2(ms, start, end);
}
