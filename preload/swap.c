/* The budget's copies: pages out to pinned host memory and back, on two copy streams of
 * planalloc's own, one each way, and nothing on the host waits for them. The link and a
 * GPU's copy engines run both ways at once; on one stream a restore queued behind copies
 * out that waited for kernels not yet run, and so did the launch that needed it. Out:
 * the out stream first waits for every stream that touched the page's buffers (events
 * recorded now, so after their last launch) and for the frees pending on it. In: a
 * fresh page is mapped at the same address and filled on the in stream, after the last
 * use of the handle it was given (a copy out still reading it, freed work: pool.c), the
 * one dependency between the two with the host blocks' (a block a restore still reads
 * goes to no copy out before it). A copy's number (gen) says its direction (low bit)
 * and its place in its stream; each has an event of its stream's ring recorded after
 * it: whoever touches a page whose physical memory a copy may still use waits for that
 * copy, a stream with cuStreamWaitEvent, a synchronous caller on the host; not for the
 * copies queued after it, which may wait for kernels queued since (an event reused for a
 * later copy only waits longer: safe). Copies are queued under the pool's map_mu, one at
 * a time. Host blocks, one page each, are recycled and never returned. Where pinned
 * memory is refused (a container's locked-memory limit), a block is pageable: the
 * driver then returns from a copy out only once it is done, and stages a copy back at
 * the call, so the order holds; the host waits, and those waits are counted. */
#include "pa.h"

#include <stdlib.h>
#define HASH_FUNCTION PA_HASH_WORD
#include <uthash.h>

#define RING 64
#define DIR(gen) ((gen) & 1)
#define SEQ(gen) ((gen) >> 1)

typedef struct block_s {
  void *host;
  uint64_t after; /* the restore still reading it, or 0 */
} block_t;

static struct {
  pthread_mutex_t mu;    /* host blocks, the counters */
  CUstream stream[2];    /* PA_COPY_OUT, PA_COPY_IN */
  CUevent ring[2][RING]; /* copy gen's is ring[DIR][SEQ % RING], recorded after it or a later one */
  pa_copies_t queued;    /* each direction's newest copy (gen), numbered from 1 in it */
  pa_copies_t done;      /* those known complete */
  block_t *blocks;
  size_t nblocks, cap;
  struct pageable_s *pageable; /* the blocks not pinned */
  pa_swap_stats_t st;
  int ready;          /* 0 not yet, 1 ready, 2 failed */
} PA_PER_DEVICE(sw) = {[0 ... PA_SLOTS - 1] = {.mu = PTHREAD_MUTEX_INITIALIZER}};
PA_BIND(sw)
#define sw PA_THIS(sw)
/* Bytes moved: atomics, not sw.st's, since the timeline reads them holding pa_mu. */
static struct {
  atomic_uint_fast64_t moved_out, moved_in, served_out, served_in, served_pages_out;
  atomic_bool serving; /* a plan serves: the bytes count for the served phase too */
  /* Each direction's newest copy that the memory of a buffer cudaMalloc returned may
   * still wait for (0: none), and how many allocations left their wait to the launches. */
  atomic_uint_fast64_t owed[2], deferred;
} PA_PER_DEVICE(mv);
PA_BIND(mv)
#define mv PA_THIS(mv)

static bool make_stream(int dir) {
  if (pa_cu.StreamCreate(&sw.stream[dir], CU_STREAM_NON_BLOCKING)) return false;
  for (size_t i = 0; i < RING; i++)
    if (pa_cu.EventCreate(&sw.ring[dir][i], CU_EVENT_DISABLE_TIMING)) return false;
  return true;
}

static bool ready(void) {
  pthread_mutex_lock(&sw.mu);
  if (!sw.ready) {
    bool ok = pa_cu.StreamCreate && pa_cu.MemcpyDtoHAsync && pa_cu.MemcpyHtoDAsync && pa_cu.MemHostAlloc &&
              pa_cu.MemsetD8Async && make_stream(PA_COPY_OUT) && make_stream(PA_COPY_IN);
    sw.ready = ok ? 1 : 2;
    if (!ok) pa_error("cannot create the budget's copy streams: buffers cannot leave the device");
  }
  pthread_mutex_unlock(&sw.mu);
  return sw.ready == 1;
}

typedef struct pageable_s {
  void *block;
  UT_hash_handle hh;
} pageable_t;

/* Said once: the job goes on, slower. */
static void *pageable_block(size_t page, int refused) {
  static atomic_bool told;
  pageable_t *b = malloc(sizeof *b);
  void *h = b ? malloc(page) : NULL;
  if (!h) return free(b), NULL;
  b->block = h;
  pthread_mutex_lock(&sw.mu);
  HASH_ADD_PTR(sw.pageable, block, b);
  sw.st.pageable++;
  pthread_mutex_unlock(&sw.mu);
  if (!atomic_exchange(&told, true))
    pa_warn("pinned host memory refused for a %zu-byte block (%s = %d): evicted pages go to pageable memory "
            "too, and the host waits for their copies out", page, pa_gpu_error_name(refused), refused);
  return h;
}

void *pa_swap_block(size_t page, pa_copies_t *after) {
  void *h = NULL;
  pthread_mutex_lock(&sw.mu);
  if (sw.nblocks) h = sw.blocks[--sw.nblocks].host, pa_copies_note(after, sw.blocks[sw.nblocks].after);
  pthread_mutex_unlock(&sw.mu);
  int rc = h ? CUDA_SUCCESS : pa_cu.MemHostAlloc(&h, page, 0);
  return rc ? pageable_block(page, rc) : h;
}

static bool any_pageable(const pa_swap_page_t *pages, size_t n) {
  pageable_t *b = NULL;
  pthread_mutex_lock(&sw.mu);
  for (size_t i = 0; i < n && !b && sw.pageable; i++) HASH_FIND_PTR(sw.pageable, &pages[i].host, b);
  pthread_mutex_unlock(&sw.mu);
  return b != NULL;
}

void pa_swap_unblock(void *h, uint64_t after) {
  pthread_mutex_lock(&sw.mu);
  if (h && pa_grow(&sw.blocks, &sw.cap, sw.nblocks + 1, sizeof *sw.blocks, SIZE_MAX))
    sw.blocks[sw.nblocks++] = (block_t){h, after};
  pthread_mutex_unlock(&sw.mu);
}

/* The out stream after every stream of the pages' users (or after the whole device). */
static int after_users(const CUstream *streams, size_t n, size_t max) {
  if (n > max) return pa_wait_device(PA_WAIT_COPY);
  int rc = CUDA_SUCCESS;
  for (size_t i = 0; i < n && !rc; i++) {
    CUevent ev = pa_event_after(streams[i]);
    rc = ev ? (int)pa_cu.StreamWaitEvent(sw.stream[PA_COPY_OUT], ev, 0) : pa_wait_stream(streams[i], PA_WAIT_COPY); /* no event: counted */
    if (ev) {
      pthread_mutex_lock(&pa_mu);
      pa_pending_drop(ev); /* recorded and waited for: the pool may record it again */
      pthread_mutex_unlock(&pa_mu);
    }
  }
  return rc;
}

int pa_swap_after(const CUstream *streams, size_t nstreams, const CUevent *frees, size_t nfrees, size_t max) {
  if (!ready()) return CUDA_ERROR_NOT_SUPPORTED;
  int rc = pa_fence_follow(sw.stream[PA_COPY_OUT]); /* what the program freed on the pages may still run */
  if (!rc) rc = after_users(streams, nstreams, max);
  if (nfrees > max) return rc ? rc : pa_wait_device(PA_WAIT_COPY);
  for (size_t i = 0; i < nfrees && !rc; i++) rc = pa_cu.StreamWaitEvent(sw.stream[PA_COPY_OUT], frees[i], 0);
  return rc;
}

static CUevent event_of(uint64_t gen) { return sw.ring[DIR(gen)][SEQ(gen) % RING]; }

/* The copy just queued on dir's stream: its number, 0 on failure. Counted after the record
 * (map_mu orders the copies): the counter never names a copy whose event is not
 * recorded. */
static uint64_t number(int dir) {
  uint64_t next = sw.queued.dir[dir] ? sw.queued.dir[dir] + 2 : 2 + (uint64_t)dir;
  if (pa_cu.EventRecord(event_of(next), sw.stream[dir])) return 0;
  pthread_mutex_lock(&sw.mu);
  sw.queued.dir[dir] = next;
  pthread_mutex_unlock(&sw.mu);
  return next;
}

/* Whether copy gen may still run (0: none, never). Its own event answers, not the
 * newest copy's, which may wait for kernels queued since: a copy done is never waited
 * for. A slot recorded again for a later copy only answers later (safe); once gen is
 * done, so are the copies before it on its stream. */
static bool in_flight(uint64_t gen) {
  pthread_mutex_lock(&sw.mu);
  bool done = pa_copies_known(gen, &sw.done) || pa_cu.EventQuery(event_of(gen)) == CUDA_SUCCESS;
  if (done) pa_copies_note(&sw.done, gen);
  pthread_mutex_unlock(&sw.mu);
  return !done;
}

/* dir's stream after copy gen of the other direction, if it may still run. */
static int follow(int dir, uint64_t gen) {
  if (!gen || DIR(gen) == (uint64_t)dir || !in_flight(gen)) return CUDA_SUCCESS; /* its own stream runs in order */
  return pa_cu.StreamWaitEvent(sw.stream[dir], event_of(gen), 0);
}

static void moved(atomic_uint_fast64_t *all, atomic_uint_fast64_t *served, uint64_t bytes) {
  atomic_fetch_add_explicit(all, bytes, memory_order_relaxed);
  if (atomic_load_explicit(&mv.serving, memory_order_relaxed)) atomic_fetch_add_explicit(served, bytes, memory_order_relaxed);
}

void pa_swap_served(bool on) { atomic_store_explicit(&mv.serving, on, memory_order_relaxed); }

void pa_swap_served_reset(void) {
  atomic_store_explicit(&mv.served_out, 0, memory_order_relaxed);
  atomic_store_explicit(&mv.served_in, 0, memory_order_relaxed);
  atomic_store_explicit(&mv.served_pages_out, 0, memory_order_relaxed);
}

int pa_swap_out(const pa_swap_page_t *pages, size_t n, const pa_copies_t *after, uint64_t *gen) {
  *gen = 0;
  if (!ready()) return CUDA_ERROR_NOT_SUPPORTED;
  int rc = follow(PA_COPY_OUT, after->dir[PA_COPY_IN]);
  CUstream out = sw.stream[PA_COPY_OUT];
  uint64_t bytes = 0, t0 = any_pageable(pages, n) ? pa_wait_begin() : 0;
  int timed = rc ? -1 : pa_link_begin(out);
  for (size_t i = 0; i < n && !rc; i++) {
    size_t len = pages[i].hi - pages[i].lo;
    rc = pa_cu.MemcpyDtoHAsync((char *)pages[i].host + (pages[i].lo - pages[i].at), pages[i].lo, len, out);
    bytes += len;
  }
  pa_link_end(timed, out, rc ? 0 : bytes);
  if (t0) pa_wait_end(PA_WAIT_COPY, t0); /* a copy to pageable memory returns once done */
  for (size_t i = 0; i < n && !rc && pa_opt.v[PA_OPT_POISON].i; i++)
    rc = pa_cu.MemsetD8Async(pages[i].lo, 0xa5, pages[i].hi - pages[i].lo, out);
  if (!rc && !(*gen = number(PA_COPY_OUT))) rc = CUDA_ERROR_UNKNOWN;
  pthread_mutex_lock(&sw.mu);
  if (!rc) sw.st.pages_out += n, sw.st.victims++, moved(&mv.moved_out, &mv.served_out, bytes);
  if (!rc && atomic_load_explicit(&mv.serving, memory_order_relaxed)) atomic_fetch_add_explicit(&mv.served_pages_out, n, memory_order_relaxed);
  pthread_mutex_unlock(&sw.mu);
  return rc;
}

int pa_swap_in(const pa_swap_page_t *pg, uint64_t after, uint64_t *gen) {
  *gen = 0;
  if (!ready()) return CUDA_ERROR_NOT_SUPPORTED;
  int rc = follow(PA_COPY_IN, after);
  size_t len = pg->hi - pg->lo;
  if (!rc && len) rc = pa_cu.MemcpyHtoDAsync(pg->lo, (char *)pg->host + (pg->lo - pg->at), len, sw.stream[PA_COPY_IN]);
  if (!rc && !(*gen = number(PA_COPY_IN))) rc = CUDA_ERROR_UNKNOWN;
  pthread_mutex_lock(&sw.mu);
  if (!rc) sw.st.pages_in++, moved(&mv.moved_in, &mv.served_in, pg->hi - pg->lo);
  pthread_mutex_unlock(&sw.mu);
  return rc;
}

/* On the out stream, after the freed work and after copy `after` (a restore into the page
 * nobody used: no fence covers the copy streams). */
int pa_swap_drain(const CUevent *frees, size_t nfrees, size_t max, uint64_t after, uint64_t *gen) {
  *gen = 0;
  if (nfrees > max) return CUDA_ERROR_NOT_SUPPORTED; /* pa_swap_after would wait on the host */
  int rc = pa_swap_after(NULL, 0, frees, nfrees, max);
  if (!rc) rc = follow(PA_COPY_OUT, after);
  if (!rc && !(*gen = number(PA_COPY_OUT))) rc = CUDA_ERROR_UNKNOWN;
  return rc;
}

bool pa_copies_known(uint64_t gen, const pa_copies_t *done) { return gen <= done->dir[DIR(gen)]; }

void pa_copies_note(pa_copies_t *latest, uint64_t gen) {
  if (gen > latest->dir[DIR(gen)]) latest->dir[DIR(gen)] = gen;
}

/* Each stream's newest copy's event answers for the stream: it runs them in order. */
pa_copies_t pa_swap_completed(void) {
  pthread_mutex_lock(&sw.mu);
  for (int dir = 0; dir < 2; dir++) {
    uint64_t upto = sw.queued.dir[dir];
    if (!pa_copies_known(upto, &sw.done) && pa_cu.EventQuery(event_of(upto)) == CUDA_SUCCESS) sw.done.dir[dir] = upto;
  }
  pa_copies_t done = sw.done;
  pthread_mutex_unlock(&sw.mu);
  return done;
}

pa_copies_t pa_swap_queued(void) {
  pthread_mutex_lock(&sw.mu);
  pa_copies_t queued = sw.queued;
  pthread_mutex_unlock(&sw.mu);
  return queued;
}

void pa_swap_synced(const pa_copies_t *synced) {
  pthread_mutex_lock(&sw.mu);
  for (int dir = 0; dir < 2; dir++) pa_copies_note(&sw.done, synced->dir[dir]);
  pthread_mutex_unlock(&sw.mu);
}

int pa_swap_wait(uint64_t gen, CUstream s, bool host) {
  if (!gen || !in_flight(gen)) return CUDA_SUCCESS;
  CUevent ev = event_of(gen);
  return host ? pa_wait_event(ev, PA_WAIT_COPY) : (int)pa_cu.StreamWaitEvent(s, ev, 0);
}

int pa_swap_wait_each(const pa_copies_t *copies, CUstream s) {
  int rc = pa_swap_wait(copies->dir[PA_COPY_OUT], s, false);
  return rc ? rc : pa_swap_wait(copies->dir[PA_COPY_IN], s, false);
}

/* cudaMalloc's memory must be usable on any stream once it returns, and a kernel may
 * reach it through a pointer stored in device memory, unseen: rather than the host
 * waiting for the copies, every launch from now on waits for them on its stream. */
void pa_swap_owe(const pa_copies_t *copies) {
  bool owes = false;
  for (int dir = 0; dir < 2; dir++) {
    uint64_t gen = copies->dir[dir];
    if (!gen || !in_flight(gen)) continue;
    uint64_t was = atomic_load_explicit(&mv.owed[dir], memory_order_relaxed);
    while (was < gen && !atomic_compare_exchange_weak(&mv.owed[dir], &was, gen)) continue;
    owes = true;
  }
  if (owes) atomic_fetch_add_explicit(&mv.deferred, 1, memory_order_relaxed);
}

/* Before a launch on s (one that runs now, not a captured one). Once a direction's copy is
 * done, nobody waits for it again. */
static int settle_dir(int dir, CUstream s) {
  uint64_t gen = atomic_load_explicit(&mv.owed[dir], memory_order_relaxed);
  if (!gen) return CUDA_SUCCESS;
  if (!in_flight(gen)) return atomic_compare_exchange_strong(&mv.owed[dir], &gen, 0), CUDA_SUCCESS;
  return pa_swap_wait(gen, s, false);
}

int pa_swap_settle(CUstream s) {
  int rc = settle_dir(PA_COPY_OUT, s);
  return rc ? rc : settle_dir(PA_COPY_IN, s);
}

void pa_swap_moved(uint64_t *out, uint64_t *in) {
  *out = atomic_load_explicit(&mv.moved_out, memory_order_relaxed);
  *in = atomic_load_explicit(&mv.moved_in, memory_order_relaxed);
}

void pa_swap_stats(pa_swap_stats_t *s) {
  pthread_mutex_lock(&sw.mu);
  *s = sw.st;
  pthread_mutex_unlock(&sw.mu);
  pa_swap_moved(&s->bytes_out, &s->bytes_in);
  s->deferred = atomic_load_explicit(&mv.deferred, memory_order_relaxed);
  s->served_out = atomic_load_explicit(&mv.served_out, memory_order_relaxed);
  s->served_in = atomic_load_explicit(&mv.served_in, memory_order_relaxed);
  s->served_pages_out = atomic_load_explicit(&mv.served_pages_out, memory_order_relaxed);
}
