/* Frees that never make the host wait (PLANALLOC_FREE=ordered). cudaFree promises that
 * the work which may touch the buffer is done; planalloc keeps that promise on the
 * device instead: a reused range must not be touched before that work ends, and the
 * page under it must not be unmapped before either.
 *
 * Who may touch a freed buffer is unknown (a kernel reaches memory through pointers
 * stored in device memory too), so the rule is conservative and cheap: a free raises
 * the fence (an epoch; frees with no work between them share one), and before its next
 * work every stream (a lane) is ordered after every other lane's work from before the
 * fence, by an event recorded on that lane and cuStreamWaitEvent. Same-stream order
 * covers a lane's own work, so a one-stream program never makes a driver call for it;
 * with several streams it costs about one record per lane and one wait per pair of
 * lanes for each batch of frees, never one per buffer. A lane's event, once recorded,
 * serves every other lane that needs it.
 *
 * The pages: a page that went idle at fence F may be unmapped only once every lane's
 * work from before F is complete, which its event answers by a query (pa_fence_known,
 * pa_fence_settle); only an unmap that cannot wait for that waits on the host.
 *
 * Another device's stream whose work may touch the pool (a kernel under peer access, an
 * async copy) is a lane too, keyed by its context as well (each device has its own
 * legacy and per-thread streams): its events are made and recorded in that context,
 * and streams on either device wait for them (cuStreamWaitEvent takes another device's
 * event). The pool's device's own syncs vouch for its lanes only.
 *
 * State is under pa_mu; driver calls are made without it. Work is marked on hot paths
 * (pa_fence_mark: a thread-local lookup and two stores). The per-thread default stream
 * is one lane per thread; another thread's is ordered by an event on the legacy stream,
 * which comes after all blocking streams' work (the per-thread streams are blocking). */
#include "pa.h"

#include <string.h>

#define MAX_LANES 64
enum { FREE, LIVE, RETIRED };

typedef struct lane_s {
  CUstream s;       /* NULL: the legacy stream */
  CUcontext ctx;    /* another device's context, its stream's (NULL: the pool's) */
  pthread_t owner;  /* for CU_STREAM_PER_THREAD: whose */
  uint8_t state;    /* RETIRED: destroyed; its event covers all its work */
  uint64_t last;    /* the fence epoch of its latest work (0: none) */
  uint64_t checked; /* the fence it was last brought up to */
  CUevent ev;       /* its event: recorded after its work ... */
  uint64_t covers;  /* ... from before this fence (0: not yet) */
  uint64_t done;    /* its work from before this fence is complete */
  uint64_t after[MAX_LANES]; /* it follows lane t's work from before after[t] */
} lane_t;

static struct {
  lane_t lane[MAX_LANES];
  uint64_t fence;   /* the current epoch, from 1 */
  bool work_since;  /* work was marked since the fence was raised */
  uint32_t gen;     /* bumped when a lane is freed: thread-local lookups stay valid */
  uint64_t stray;   /* epoch of the latest work on a stream no lane could hold ... */
  uint64_t stray_done; /* ... complete from before this fence (a device-wide wait) */
  CUcontext others[8]; /* other devices' contexts whose work on a stream no lane held touched */
  size_t nothers;      /* the pool: a device-wide wait waits for them too (devices.c) */
} PA_PER_DEVICE(fc) = {[0 ... PA_SLOTS - 1] = {.fence = 1, .stray_done = 1}};
PA_BIND(fc)
#define fc PA_THIS(fc)

static PA_TLS struct {
  CUstream s;
  CUcontext ctx;
  uint32_t i, gen;
  int slot; /* whose fence: every device's counts its own gen */
  bool valid;
} hit;

/* ---- lanes ---------------------------------------------------------------------------- */

static CUstream key(CUstream s) { return s == CU_STREAM_LEGACY ? NULL : s; }

static bool is(const lane_t *l, CUstream s, CUcontext ctx) {
  return l->state == LIVE && l->s == s && l->ctx == ctx &&
         (s != CU_STREAM_PER_THREAD || pthread_equal(l->owner, pthread_self()));
}

/* Where lane l's events are made and recorded: its device's context. NULL (the caller's
 * current one) while the process sees one device. */
static CUcontext lane_ctx(const lane_t *l) {
  if (l->ctx) return l->ctx;
  return atomic_load_explicit(&pa_devices_seen, memory_order_relaxed) == 2 ? atomic_load(&pa_pool_ctx) : NULL;
}

/* Its work from before fence f is complete (pa_mu held). */
static bool lane_done(const lane_t *l, uint64_t f) { return l->state == FREE || l->last < l->done || l->done >= f; }

/* Its event as recorded follows its work from before f. */
static bool covered(const lane_t *l, uint64_t f) { return l->covers && (l->covers >= f || l->last < l->covers); }

/* A lane done with all its work goes; its event stays with the slot: whoever still
 * waits for it needs nothing that is not complete. */
static void release(uint32_t i) {
  CUevent ev = fc.lane[i].ev;
  fc.lane[i] = (lane_t){.ev = ev};
  for (uint32_t k = 0; k < MAX_LANES; k++) fc.lane[k].after[i] = 0;
  fc.gen++;
}

static bool reclaim(void) {
  for (uint32_t i = 0; i < MAX_LANES; i++)
    if (fc.lane[i].state != FREE && fc.lane[i].last < fc.lane[i].done) return release(i), true;
  return false;
}

static int free_slot(void) {
  for (int i = 0; i < MAX_LANES; i++)
    if (fc.lane[i].state == FREE) return i;
  return -1;
}

/* A stream seen first: it follows nothing yet (its first work may touch what an older
 * lane freed), and its own work starts now. */
static int new_lane(CUstream s, CUcontext ctx) {
  int i = free_slot();
  if (i < 0 && reclaim()) i = free_slot();
  if (i < 0) return -1;
  lane_t *l = &fc.lane[i];
  l->state = LIVE, l->s = s, l->ctx = ctx, l->owner = pthread_self(), l->done = fc.fence;
  return i;
}

/* s's lane if it has one (pa_mu held), else -1; ctx: another device's context, whose
 * legacy and per-thread streams are not the pool's. */
static int find_lane(CUstream s, CUcontext ctx) {
  s = key(s);
  for (int i = 0; i < MAX_LANES; i++)
    if (is(&fc.lane[i], s, ctx)) return i;
  return -1;
}

/* s's lane, made on first sight (pa_mu held); -1 when none can be had. */
static int lane_of(CUstream s, CUcontext ctx) {
  s = key(s);
  if (hit.valid && hit.s == s && hit.ctx == ctx && hit.gen == fc.gen && hit.slot == pa_slot) return (int)hit.i;
  int i = find_lane(s, ctx);
  if (i < 0 && (i = new_lane(s, ctx)) < 0) return -1;
  hit.s = s, hit.ctx = ctx, hit.i = (uint32_t)i, hit.gen = fc.gen, hit.slot = pa_slot, hit.valid = true;
  return i;
}

bool pa_fence_mark(CUstream s) {
  int i = lane_of(s, NULL);
  fc.work_since = true;
  if (i < 0) return true; /* pa_fence_order finds it one, or notes it stray */
  fc.lane[i].last = fc.fence;
  return fc.lane[i].checked != fc.fence;
}

uint64_t pa_fence_raise(void) {
  if (fc.work_since) fc.fence++, fc.work_since = false;
  return fc.fence;
}

uint64_t pa_fence_now(void) { return fc.fence; }

static bool stray_due(uint64_t f) { return fc.stray >= fc.stray_done && fc.stray_done < f; }

bool pa_fence_known(uint64_t f) {
  if (stray_due(f)) return false;
  for (uint32_t i = 0; i < MAX_LANES; i++)
    if (!lane_done(&fc.lane[i], f)) return false;
  return true;
}

/* After a device-wide wait that began at fence f: everything from before it is done, on
 * the pool's device (and, foreign, on the other devices whose lanes it waited for too). */
static void all_done(uint64_t f, bool foreign) {
  if (f > fc.stray_done) fc.stray_done = f;
  for (uint32_t i = 0; i < MAX_LANES; i++)
    if (fc.lane[i].done < f && (foreign || !fc.lane[i].ctx)) fc.lane[i].done = f;
}

/* Another device's work that may touch the pool (c: its context) is a lane of its own:
 * it follows the frees before it, on the device, and later reuse follows it. Where no
 * lane can be had, c joins the contexts a device-wide wait covers, and order() waits. */
static int order(CUstream s, CUcontext ctx, bool again);

static bool among(const CUcontext *list, size_t n, CUcontext c) {
  for (size_t k = 0; k < n; k++)
    if (list[k] == c) return true;
  return false;
}

int pa_fence_foreign(CUcontext c, CUstream s) {
#ifdef PA_UNORDERED
  return (void)c, (void)s, CUDA_SUCCESS;
#endif
  pthread_mutex_lock(&pa_mu);
  int i = lane_of(s, c);
  if (i < 0 && !among(fc.others, fc.nothers, c) && fc.nothers < sizeof fc.others / sizeof *fc.others)
    fc.others[fc.nothers++] = c;
  if (i < 0) fc.stray = fc.fence;
  else fc.lane[i].last = fc.fence;
  fc.work_since = true;
  bool due = i < 0 || fc.lane[i].checked != fc.fence; /* no lane: order() frees one, or waits on the host */
  pthread_mutex_unlock(&pa_mu);
  return due ? order(s, c, false) : CUDA_SUCCESS;
}

/* The contexts of other devices whose work touched the pool: its lanes' and the strays'
 * (pa_mu held); n at most max. */
static size_t other_contexts(CUcontext *c, size_t max) {
  size_t n = fc.nothers < max ? fc.nothers : max;
  memcpy(c, fc.others, n * sizeof *c);
  for (uint32_t i = 0; i < MAX_LANES && n < max; i++)
    if (fc.lane[i].ctx && fc.lane[i].state != FREE && !among(c, n, fc.lane[i].ctx)) c[n++] = fc.lane[i].ctx;
  return n;
}

/* The pool's device, then every other context whose work touched the pool. */
static int wait_all(pa_wait_why_t why) {
  int rc = pa_wait_device(why);
  CUcontext c[MAX_LANES + sizeof fc.others / sizeof *fc.others];
  pthread_mutex_lock(&pa_mu);
  size_t n = other_contexts(c, sizeof c / sizeof *c);
  pthread_mutex_unlock(&pa_mu);
  for (size_t i = 0; i < n && !rc; i++) rc = pa_wait_context(c[i], why);
  return rc;
}

/* The host waits for the device: the order of last resort, for a stream no event can
 * reach. Refused while a capture forbids it (said once): the work then goes unordered,
 * which only a program that frees and reuses memory around an open capture can meet. */
static int device_wait(pa_wait_why_t why) {
  static atomic_bool told;
  if (pa_capture_forbids()) {
    if (!atomic_exchange(&told, true))
      pa_warn("a stream could not be ordered after freed memory while a stream capture was open");
    return CUDA_SUCCESS;
  }
  pthread_mutex_lock(&pa_mu);
  uint64_t f = fc.fence;
  pthread_mutex_unlock(&pa_mu);
  int rc = wait_all(why);
  pthread_mutex_lock(&pa_mu);
  if (!rc) all_done(f, true);
  pthread_mutex_unlock(&pa_mu);
  return rc;
}

/* ---- events: who records where -------------------------------------------------------- */

/* Where lane l's event can be recorded from this thread (pa_mu held; asks the driver
 * while a capture is open). Another thread's default stream cannot be named here: the
 * legacy stream's event comes after its work (it is blocking), unless a capture is open
 * (the legacy stream may not be used then). A destroyed stream: nowhere. */
static bool recordable(const lane_t *l, CUstream *on) {
  *on = l->s;
  if (l->state != LIVE) return false;
  if (l->s == CU_STREAM_PER_THREAD && !pthread_equal(l->owner, pthread_self())) *on = NULL;
  return !pa_capture_open() || (*on && !pa_stream_capturing(*on));
}

typedef struct step_s {
  uint32_t t;
  CUcontext ctx; /* lane t's context, where its event is made and recorded (NULL: the current one) */
  CUevent ev;    /* lane t's event, or one made for it (made) */
  CUstream on;   /* where it is recorded, when record */
  uint64_t covers; /* what a record covers */
  bool record, made, ok;
} step_t;

/* Lane t's event, made if it has none, recorded if behind f (pa_mu not held); then
 * waited for by s, or on the host (s NULL), or only asked (query). */
static int event_step(step_t *st, CUstream s, bool host, bool query) {
  int rc = CUDA_SUCCESS;
  CUcontext was = NULL;
  bool moved = st->ctx && (st->record || !st->ev) && !pa_cu.CtxGetCurrent(&was) && was != st->ctx &&
               !pa_cu.CtxSetCurrent(st->ctx);
  if (!st->ev && !(rc = pa_cu.EventCreate(&st->ev, CU_EVENT_DISABLE_TIMING))) st->made = true;
  if (!rc && st->record) rc = pa_cu.EventRecord(st->ev, st->on);
  if (moved) pa_cu.CtxSetCurrent(was); /* the wait is the waiting stream's, in the caller's context */
  st->ok = rc == CUDA_SUCCESS;
  if (!rc) rc = query ? (int)pa_cu.EventQuery(st->ev) : host ? pa_wait_event(st->ev, PA_WAIT_PAGE)
                                                          : (int)pa_cu.StreamWaitEvent(s, st->ev, 0);
  return rc;
}

/* What a step left (pa_mu held, lanes unchanged since the step was planned): the lane
 * keeps the first event made for it, its record's cover. The other made one, if any, is
 * returned for destruction (it was recorded and waited for: destroying it is deferred
 * by the driver until then). */
static CUevent step_done(const step_t *st) {
  lane_t *o = &fc.lane[st->t];
  if (!o->ev && st->ok) o->ev = st->ev;
  if (st->record && st->ok && o->ev == st->ev && st->covers > o->covers) o->covers = st->covers;
  return st->made && o->ev != st->ev ? st->ev : NULL;
}

/* ---- ordering a stream after the frees ---------------------------------------------------- */

/* What lane si (or, si < 0, a stream that is no lane) needs to follow every other
 * lane's work from before f (pa_mu held): the steps, and whether a device-wide wait must
 * serve (a stream no event can reach). Lanes that need nothing are settled here. */
static size_t plan(int si, uint64_t f, step_t *steps, bool *device) {
  lane_t *s = si < 0 ? NULL : &fc.lane[si];
  size_t n = 0;
  *device = stray_due(f);
  for (uint32_t t = 0; t < MAX_LANES; t++) {
    lane_t *o = &fc.lane[t];
    if ((int)t == si || o->state == FREE || (s && s->after[t] >= f)) continue;
    if ((s && o->last < s->after[t]) || lane_done(o, f)) {
      if (s) s->after[t] = f;
      continue;
    }
    step_t st = {.t = t, .ctx = lane_ctx(o), .ev = o->ev, .covers = fc.fence, .record = !covered(o, f)};
    if (st.record && !recordable(o, &st.on)) *device = true;
    else steps[n++] = st;
  }
  return n;
}

static bool settle(uint64_t f, bool host);

/* Every lane is taken (streams made and destroyed by the dozen): the lanes' events are
 * asked (no wait), those done with all their work go, and s gets one; failing that, the
 * host waits for the device, after which s follows everything. */
static int no_lane(CUstream s, CUcontext ctx, uint64_t f, bool again) {
  if (again) {
    pthread_mutex_lock(&pa_mu);
    fc.stray = fc.fence; /* its work: every lane follows it through the device from now on */
    pthread_mutex_unlock(&pa_mu);
    return device_wait(PA_WAIT_ORDER);
  }
  settle(f, false);
  return order(s, ctx, true);
}

int pa_fence_order(CUstream s) {
#ifdef PA_UNORDERED /* the race tests' negative control (libplanalloc-unordered.so) */
  return (void)s, CUDA_SUCCESS;
#endif
  return order(s, NULL, false);
}

/* s waits for the planned steps (pa_mu not held), then what they made is noted: the
 * lanes' events, and, for lane si (none: si < 0), that it follows them up to f. */
static int take_steps(step_t *steps, size_t n, bool device, CUstream s, int si, uint64_t f, uint32_t gen) {
  int rc = CUDA_SUCCESS;
  for (size_t k = 0; k < n && !rc; k++) rc = event_step(&steps[k], s, false, false);
  if (rc || device) rc = device_wait(PA_WAIT_ORDER); /* an event refused, or a stream none reaches */
  CUevent extra[MAX_LANES];
  size_t nextra = 0;
  pthread_mutex_lock(&pa_mu);
  bool same = gen == fc.gen; /* else lanes moved meanwhile: nothing is noted, made events go */
  for (size_t k = 0; k < n; k++)
    if ((extra[nextra] = same ? step_done(&steps[k]) : steps[k].made ? steps[k].ev : NULL)) nextra++;
  for (size_t k = 0; si >= 0 && same && !rc && k < n; k++) fc.lane[si].after[steps[k].t] = f;
  if (si >= 0 && same && !rc) fc.lane[si].checked = f;
  pthread_mutex_unlock(&pa_mu);
  while (nextra) pa_cu.EventDestroy(extra[--nextra]);
  return rc;
}

static int order(CUstream s, CUcontext ctx, bool again) {
  step_t steps[MAX_LANES];
  bool device;
  pthread_mutex_lock(&pa_mu);
  int si = lane_of(s, ctx);
  uint64_t f = fc.fence;
  uint32_t gen = fc.gen;
  if (si >= 0) fc.lane[si].last = f; /* the work it is ordered for comes next (again: a lane found late) */
  size_t n = si < 0 ? 0 : plan(si, f, steps, &device);
  if (si >= 0 && !n && !device) fc.lane[si].checked = f;
  pthread_mutex_unlock(&pa_mu);
  if (si < 0) return no_lane(s, ctx, f, again);
  return take_steps(steps, n, device, s, si, f, gen);
}

/* planalloc's out stream follows the frees without being a lane: what it copies never
 * becomes the program's memory before the pool's own copy numbers say so, so no program
 * stream need ever wait for it (as a lane, every batch of frees would make each program
 * stream wait for it: a one-stream program's launches would pay a wait each batch). */
int pa_fence_follow(CUstream s) {
#ifdef PA_UNORDERED
  return (void)s, CUDA_SUCCESS;
#endif
  step_t steps[MAX_LANES];
  bool device;
  pthread_mutex_lock(&pa_mu);
  uint64_t f = fc.fence;
  uint32_t gen = fc.gen;
  size_t n = plan(-1, f, steps, &device);
  pthread_mutex_unlock(&pa_mu);
  return take_steps(steps, n, device, s, -1, f, gen);
}

/* ---- completion: what a page's unmap waits for ------------------------------------------ */

/* Lane i's work from before f, complete? Asked of its event as recorded (no wait), then,
 * if that is not enough, of one recorded now, or waited for (host). The next question
 * finds the one recorded now likely done. A lane no event reaches answers no. */
static bool settle_lane(uint32_t i, uint64_t f, bool host) {
  for (int round = 0; round < 2; round++) {
    pthread_mutex_lock(&pa_mu);
    lane_t *l = &fc.lane[i];
    bool done = lane_done(l, f), old = l->ev && l->covers > l->done && !round;
    step_t st = {.t = i, .ctx = lane_ctx(l), .ev = l->ev, .covers = fc.fence, .record = !old && !covered(l, f)};
    bool can = done || !st.record || recordable(l, &st.on);
    uint64_t upto = st.record ? fc.fence : l->covers;
    uint32_t gen = fc.gen;
    pthread_mutex_unlock(&pa_mu);
    if (done || !can) return done;
    int rc = event_step(&st, NULL, host && !old, !host || old);
    pthread_mutex_lock(&pa_mu);
    CUevent extra = gen == fc.gen ? step_done(&st) : st.made ? st.ev : NULL;
    if (gen == fc.gen && !rc && upto > l->done) l->done = upto;
    done = gen == fc.gen && lane_done(l, f);
    pthread_mutex_unlock(&pa_mu);
    if (extra) pa_cu.EventDestroy(extra);
    if (done || gen != fc.gen) return done;
  }
  return false;
}

static bool settle(uint64_t f, bool host) {
  bool all = true;
  for (uint32_t i = 0; i < MAX_LANES; i++) all &= settle_lane(i, f, host);
  pthread_mutex_lock(&pa_mu);
  all = all && !stray_due(f);
  pthread_mutex_unlock(&pa_mu);
  return all;
}

bool pa_fence_query(uint64_t f) {
  pthread_mutex_lock(&pa_mu);
  bool known = pa_fence_known(f);
  pthread_mutex_unlock(&pa_mu);
  return known || settle(f, false);
}

int pa_fence_settle(uint64_t f) {
  if (pa_fence_query(f) || settle(f, true)) return CUDA_SUCCESS;
  return device_wait(PA_WAIT_PAGE); /* a lane no event reaches */
}

/* ---- the program's own host waits ---------------------------------------------------------- */

/* A sync the program makes anyway says what is done, for free: a page freed before it
 * then needs no query, drain or wait. The fence is raised first, so that work another
 * thread queues meanwhile is not counted done; for one stream only when every other
 * lane's work is known done (else their next work would wait for each other's for
 * nothing): a stream sync then vouches for the work from before the current fence. */
pa_fence_sync_t pa_fence_sync_begin(CUstream s, bool all) {
  pa_fence_sync_t t = {.lane = -1};
  pthread_mutex_lock(&pa_mu);
  int si = all ? -1 : find_lane(s, NULL);
  bool alone = true;
  for (uint32_t i = 0; i < MAX_LANES && !all; i++) alone &= (int)i == si || lane_done(&fc.lane[i], fc.fence + 1);
  if (all || (si >= 0 && alone)) pa_fence_raise();
  t.f = fc.fence, t.lane = si, t.gen = fc.gen, t.all = all;
  pthread_mutex_unlock(&pa_mu);
  return t;
}

/* After the sync returned success (pa_mu not held). */
void pa_fence_sync_end(const pa_fence_sync_t *t) {
  pthread_mutex_lock(&pa_mu);
  if (t->all) all_done(t->f, false); /* the pool's device's sync: other devices' lanes go on */
  else if (t->lane >= 0 && t->gen == fc.gen && fc.lane[t->lane].done < t->f) fc.lane[t->lane].done = t->f;
  pthread_mutex_unlock(&pa_mu);
}

/* ---- streams that begin a capture or end ------------------------------------------------ */

/* The lane of another device's stream s, a named one (a handle no other stream has
 * while it lives), else -1 (pa_mu held). */
static int foreign_named(CUstream s) {
  for (int i = 0; s && s != CU_STREAM_LEGACY && s != CU_STREAM_PER_THREAD && i < MAX_LANES; i++)
    if (fc.lane[i].state == LIVE && fc.lane[i].s == s && fc.lane[i].ctx) return i;
  return -1;
}

/* s's event recorded now after all its work (pa_mu not held). retire: s is being
 * destroyed: its lane names no stream from then on, and goes once its work is done. */
static void record_now(CUstream s, bool retire) {
  pthread_mutex_lock(&pa_mu);
  int i = retire ? foreign_named(s) : -1;
  if (i < 0) i = lane_of(s, NULL);
  lane_t *l = i < 0 ? NULL : &fc.lane[i];
  bool work = l && l->last && l->last >= l->done, need = work && l->last >= l->covers;
  if (retire && l && !work) release((uint32_t)i);
  else if (retire && l && !need) l->state = RETIRED, fc.gen++; /* its event covers it all */
  step_t st = {.t = (uint32_t)i, .ctx = l ? lane_ctx(l) : NULL, .ev = l ? l->ev : NULL, .on = key(s),
               .covers = retire ? UINT64_MAX : fc.fence,
               .record = true};
  uint32_t gen = fc.gen;
  pthread_mutex_unlock(&pa_mu);
  if (!need) return;
  event_step(&st, NULL, false, true);
  pthread_mutex_lock(&pa_mu);
  CUevent extra = gen == fc.gen ? step_done(&st) : st.made ? st.ev : NULL;
  if (retire && gen == fc.gen) l->state = RETIRED, fc.gen++;
  pthread_mutex_unlock(&pa_mu);
  if (extra) pa_cu.EventDestroy(extra);
}

/* Before s begins a capture: later, an event recorded there would be captured, so the
 * lanes that must follow its earlier work wait for this one. */
void pa_fence_before_capture(CUstream s) { record_now(s, false); }

/* s is being destroyed: its last event covers all its work; the handle may come back
 * for another stream, so the lane names none from now on and goes once done. */
void pa_fence_retire(CUstream s) { record_now(s, true); }
