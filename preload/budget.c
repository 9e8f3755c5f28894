/* The budget (PLANALLOC_BUDGET): the physical pages planalloc maps never exceed it. When
 * a page is needed and none is free, the pages of a live buffer leave for pinned host
 * memory (swap.c, driven by pool.c) and come back at the same address before the next
 * launch or copy that touches them. This file holds what that needs above the pages:
 * every live pool buffer by address, when and on which stream it was last touched and
 * how often it left (the victim score), and the calling thread's held list: the buffers
 * a launch or copy keeps resident while it is issued. In the served phase the evicted
 * buffers of the next launches come back early, into free pages only (prefetch).
 * Victims: the MegEngine DTR score (dtr/policy.c, the simulator's too) with a swap's
 * cost (bytes to copy), the pages the eviction frees (free neighbours, at page
 * granularity), staleness on the touch clock and a repeat penalty; this file says what
 * each candidate costs and frees. In the served phase the iteration is known (schedule.c): a
 * page's next use is its buffers' soonest, and Belady picks the page used farthest ahead
 * (a slot freed before its next use is dead: gone, never back). A buffer no launch or
 * copy was ever seen to touch is never a victim: it may be reached only through
 * pointers stored in device memory.
 * pa_mu guards everything but the held list, which is the thread's own. */
#include "dtr.h"
#include "pa.h"
#include "treap.h"

#include <math.h>
#include <stdlib.h>

#define BUF_STREAMS 4

typedef struct buf_s {
  uint64_t off, size, last_use, born; /* born: launches before it was allocated */
  CUstream streams[BUF_STREAMS]; /* those that touched it: its copy out waits for each */
  uint32_t evictions, pos; /* pos: index in the dense list */
  uint32_t ident; /* in the served plan's schedule, or NONE */
  uint8_t nstreams;
  bool seen, multi; /* multi: touched from more streams than listed (or a per-thread one) */
} buf_t;

static struct {
  uint64_t bytes;   /* 0: no budget */
  size_t pages, page;
  buf_t *b;
  uint32_t *next_free, *order; /* node free list; live nodes, dense (sampling) */
  uint32_t free_head;
  size_t cap, n;
  uint64_t live_bytes, clock, launches, rng;
  pa_treap_t by_addr;
  const pa_sched_t *sched; /* the served plan's: next uses */
  uint32_t *by_ident;      /* the live buffer of each of its idents, or NONE */
  uint32_t nby_ident;
  bool placed;             /* the served clock has positioned it */
  uint64_t at, end;        /* the next launch's position; one past the period event's last */
  uint64_t issued;         /* the position of the launch just issued, or NO_POS */
  uint64_t planned_victims, scheduled_outs, scheduled_backs;
  bool lowered;            /* the device refused a page below the budget */
} bg = {.free_head = PA_NIL};

#define NONE UINT32_MAX
#define NO_POS UINT64_MAX

typedef struct held_s {
  uint64_t off, size;
} held_t;

static atomic_bool swapping; /* a swap schedule is served: pa_budget_done has work after every launch */
static PA_TLS held_t *held;
static PA_TLS size_t nheld, cap_held;

/* ---- set-up ------------------------------------------------------------------------- */

void pa_budget_init(size_t page, size_t device_bytes) {
  const pa_opt_value_t *v = &pa_opt.v[PA_OPT_BUDGET];
  bg.page = page;
  bg.bytes = v->percent > 0 ? (uint64_t)((double)device_bytes * v->percent / 100) : (uint64_t)v->i;
  bg.pages = bg.bytes / page;
  bg.rng = 0x2545f4914f6cdd1dull;
  if (bg.bytes && !bg.pages)
    pa_warn("PLANALLOC_BUDGET=%llu bytes is less than one %zu-byte page: every allocation will fail",
            (unsigned long long)bg.bytes, page);
  if (bg.bytes && pa_opt.v[PA_OPT_VERBOSE].i)
    pa_info("budget %llu bytes: %zu pages of %zu bytes", (unsigned long long)bg.bytes, bg.pages, page);
}

bool pa_budget_on(void) { return bg.bytes != 0; }

uint64_t pa_budget_page(void) { return bg.bytes ? bg.page : 0; }
size_t pa_budget_pages(void) { return bg.pages; }
uint64_t pa_budget_bytes(void) { return bg.bytes; }

/* What PLANALLOC_BUDGET said, or what is left of it once the device refused pages. */
const char *pa_budget_words(char *buf, size_t n) {
  if (bg.lowered)
    snprintf(buf, n, "the budget of %llu bytes (PLANALLOC_BUDGET=%llu, lowered when the device refused a page)",
             (unsigned long long)(bg.pages * bg.page), (unsigned long long)bg.bytes);
  else
    snprintf(buf, n, "PLANALLOC_BUDGET=%llu bytes", (unsigned long long)bg.bytes);
  return buf;
}

static bool grow(void) {
  size_t cap = bg.cap ? 2 * bg.cap : 1024;
  buf_t *b = realloc(bg.b, cap * sizeof *b);
  if (b) bg.b = b;
  uint32_t *nf = b ? realloc(bg.next_free, cap * sizeof *nf) : NULL;
  if (nf) bg.next_free = nf;
  uint32_t *order = nf ? realloc(bg.order, cap * sizeof *order) : NULL;
  if (order) bg.order = order;
  if (!order || (bg.cap ? pa_treap_grow(&bg.by_addr, bg.cap, cap) : pa_treap_init(&bg.by_addr, cap, 13))) return false;
  for (size_t k = cap; k-- > bg.cap;) bg.next_free[k] = bg.free_head, bg.free_head = (uint32_t)k;
  bg.cap = cap;
  return true;
}

/* ---- the live buffers -------------------------------------------------------------------- */

static uint32_t schedule_ident(uint64_t off, uint64_t size, uint32_t slot) {
  if (!bg.sched) return NONE;
  return slot != PA_PLAN_NONE && slot < pa_sched_slots(bg.sched) ? slot : pa_sched_fixed(bg.sched, off, size);
}

void pa_budget_track(uint64_t off, uint64_t size, uint32_t slot) {
  if (!bg.bytes || (bg.free_head == PA_NIL && !grow())) return; /* untracked: never a victim */
  uint32_t x = bg.free_head;
  bg.free_head = bg.next_free[x];
  bg.b[x] = (buf_t){.off = off, .size = size, .last_use = bg.clock, .born = bg.launches, .pos = (uint32_t)bg.n,
                    .ident = schedule_ident(off, size, slot)};
  if (bg.b[x].ident < bg.nby_ident) bg.by_ident[bg.b[x].ident] = x;
  bg.order[bg.n++] = x;
  bg.live_bytes += size;
  pa_treap_insert(&bg.by_addr, x, (int64_t)off);
}

/* The live buffer containing pool offset x, or PA_NIL. */
static uint32_t containing(uint64_t x) {
  uint32_t n = bg.cap ? pa_treap_floor(&bg.by_addr, (int64_t)x) : PA_NIL;
  return n != PA_NIL && x < bg.b[n].off + bg.b[n].size ? n : PA_NIL;
}

/* The first live buffer that ends after x (the one containing it, else the next), or PA_NIL:
 * for (n = first_over(lo); n != PA_NIL && bg.b[n].off < hi; n = next) walks those
 * overlapping [lo, hi). */
static uint32_t first_over(uint64_t x) {
  uint32_t n = containing(x);
  return n != PA_NIL || !bg.cap ? n : pa_treap_ceil(&bg.by_addr, (int64_t)x);
}

void pa_budget_untrack(uint64_t off) {
  uint32_t x = bg.bytes ? containing(off) : PA_NIL;
  if (x == PA_NIL || bg.b[x].off != off) return;
  pa_treap_erase(&bg.by_addr, x);
  uint32_t last = bg.order[--bg.n];
  bg.order[bg.b[x].pos] = last, bg.b[last].pos = bg.b[x].pos;
  bg.live_bytes -= bg.b[x].size;
  if (bg.b[x].ident < bg.nby_ident && bg.by_ident[bg.b[x].ident] == x) bg.by_ident[bg.b[x].ident] = NONE;
  bg.next_free[x] = bg.free_head, bg.free_head = x;
}

/* streams[0 .. n) with s too; max + 1 when that makes too many. */
static size_t add_stream(CUstream *streams, size_t n, size_t max, CUstream s) {
  for (size_t i = 0; i < n; i++)
    if (streams[i] == s) return n;
  if (n == max) return max + 1;
  streams[n] = s;
  return n + 1;
}

/* The per-thread default stream is a different stream in every thread: an event the
 * evicting thread records on it would order the wrong stream. */
static void touched_by(buf_t *b, CUstream s) {
  size_t n = s == CU_STREAM_PER_THREAD ? BUF_STREAMS + 1 : add_stream(b->streams, b->nstreams, BUF_STREAMS, s);
  if (n > BUF_STREAMS) b->multi = true;
  else b->nstreams = (uint8_t)n;
  b->seen = true, b->last_use = bg.clock;
}

/* ---- the held list: what the current launch or copy needs resident ------------------------- */

static void hold(uint64_t off, uint64_t size) {
  if (nheld && held[nheld - 1].off == off && held[nheld - 1].size == size) return;
  if (!pa_grow(&held, &cap_held, nheld + 1, sizeof *held, SIZE_MAX)) return;
  held[nheld++] = (held_t){off, size};
  pa_pool_hold(off, size);
}

void pa_budget_touch(uint64_t x, CUstream s) {
  uint32_t n = containing(x);
  if (n == PA_NIL) return;
  touched_by(&bg.b[n], s);
  hold(bg.b[n].off, bg.b[n].size);
}

void pa_budget_touch_range(uint64_t off, uint64_t size, CUstream s) {
  uint64_t end = off + size;
  for (uint32_t n = first_over(off); n != PA_NIL && bg.b[n].off < end; n = pa_treap_next(&bg.by_addr, n)) touched_by(&bg.b[n], s);
  hold(off, size);
}

/* A CUDA graph's kernels are no launches the preload sees: whatever they touch must be on
 * the device. Every live buffer is held (the caller brings them back) and nothing is
 * evicted from then on: the budget gives way to correct results. */
void pa_budget_lift(void) {
  if (!pa_budget_on() || bg.pages == SIZE_MAX) return; /* lifted already */
  bg.pages = SIZE_MAX;
  pa_warn("a CUDA graph was launched under PLANALLOC_BUDGET=%llu bytes: its kernels' buffers cannot be seen, "
          "so every evicted buffer comes back and the budget is lifted", (unsigned long long)bg.bytes);
  for (uint32_t n = pa_treap_first(&bg.by_addr); n != PA_NIL; n = pa_treap_next(&bg.by_addr, n))
    hold(bg.b[n].off, bg.b[n].size);
}

bool pa_budget_lower(size_t pages, int refused) {
  if (bg.pages == SIZE_MAX || pages >= bg.pages) return false; /* lifted, or no lower */
  char words[PA_BUDGET_WORDS];
  pa_warn("the device refused a page at %zu of the %zu pages %s allows (%s = %d): the budget is %zu page%s from now on",
          pages, bg.pages, pa_budget_words(words, sizeof words), pa_gpu_error_name(refused), refused, pages,
          pages == 1 ? "" : "s");
  bg.pages = pages, bg.lowered = true;
  return true;
}

bool pa_budget_lowered(void) { return bg.lowered; }

void pa_budget_tick(bool launch) {
  bg.clock++;
  bg.launches += launch;
  bg.issued = launch && bg.placed && bg.at < bg.end ? bg.at : NO_POS;
  bg.at += launch && bg.at < bg.end;
}

/* ---- the served plan's schedule ---------------------------------------------------------- */

/* The prefetch's and the swaps' map from idents to live buffers; none (no prefetch, no
 * swaps) without memory. */
static void index_idents(bool swaps) {
  uint32_t n = bg.sched && (pa_opt.v[PA_OPT_PREFETCH].i || swaps) ? pa_sched_idents(bg.sched) : 0;
  free(bg.by_ident);
  bg.by_ident = n ? malloc(n * sizeof *bg.by_ident) : NULL;
  bg.nby_ident = bg.by_ident ? n : 0;
  for (uint32_t i = 0; i < bg.nby_ident; i++) bg.by_ident[i] = NONE;
}

/* The buffers live now that the schedule knows are the fixed ones: slots come later. */
void pa_budget_schedule(const pa_sched_t *s) {
  if (!bg.bytes) return;
  bg.sched = pa_opt.v[PA_OPT_EVICT_PLANNED].i ? s : NULL, bg.placed = false, bg.issued = NO_POS;
  bool swaps = bg.sched && pa_sched_swaps(bg.sched);
  atomic_store_explicit(&swapping, swaps, memory_order_relaxed);
  index_idents(swaps);
  for (size_t i = 0; i < bg.n; i++) {
    buf_t *b = &bg.b[bg.order[i]];
    b->ident = schedule_ident(b->off, b->size, PA_PLAN_NONE);
    if (b->ident < bg.nby_ident) bg.by_ident[b->ident] = bg.order[i];
  }
}

uint64_t pa_budget_planned_victims(void) { return bg.planned_victims; }
uint64_t pa_budget_scheduled_outs(void) { return bg.scheduled_outs; }
uint64_t pa_budget_scheduled_backs(void) { return bg.scheduled_backs; }

void pa_budget_at(uint64_t pos) {
  if (!bg.sched) return;
  bg.at = pa_sched_first(bg.sched, pos), bg.end = pa_sched_end(bg.sched, pos), bg.placed = true;
}

bool pa_budget_holding(void) { return nheld > 0; }

/* pa_mu not held. Brings back what the held buffers lost and orders the caller after
 * it, and after any restore of their pages still running (queued for another stream or
 * thread, too): stream-ordered work on s waits on the copies; a synchronous caller, the
 * host. */
int pa_budget_ready(CUstream s, bool host_wait) {
  uint64_t restored = 0;
  int rc = CUDA_SUCCESS;
  for (size_t i = 0; i < nheld && !rc; i++) rc = pa_pool_map(held[i].off, held[i].size, &restored);
  if (rc) {
    char words[PA_BUDGET_WORDS];
    pa_error("cannot bring %zu buffers back within %s for a launch or copy (%s = %d)", nheld,
             pa_budget_words(words, sizeof words), pa_gpu_error_name(rc), rc);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  return pa_swap_wait(restored, s, host_wait);
}

/* ---- prefetch: the served phase's evicted buffers come back before their launch ---------- */

#define AHEAD_MAX 16 /* buffers one prefetch brings back at most */

/* Adds the buffer ident if it is live, on the host (some of it) and next used `distance`
 * launches ahead: not a slot's instance that dies first, not one already listed. */
static size_t add_evicted(held_t *ahead, size_t n, uint32_t ident, uint64_t distance) {
  uint32_t x = ident < bg.nby_ident ? bg.by_ident[ident] : NONE;
  if (x == NONE || !pa_pool_evicted(bg.b[x].off, bg.b[x].size)) return n;
  if (pa_sched_next_use(bg.sched, ident, bg.at) != distance) return n;
  for (size_t i = 0; i < n; i++)
    if (ahead[i].off == bg.b[x].off) return n;
  ahead[n] = (held_t){bg.b[x].off, bg.b[x].size};
  return n + 1;
}

/* What the next PLANALLOC_PREFETCH launches need from the host, soonest first (pa_mu
 * held). Only where the schedule is positioned and the budget not lifted. */
static size_t prefetch_due(held_t *ahead, size_t n) {
  uint64_t depth = bg.placed && bg.nby_ident && bg.pages != SIZE_MAX ? (uint64_t)pa_opt.v[PA_OPT_PREFETCH].i : 0;
  for (uint64_t d = 0; d < depth && n < AHEAD_MAX; d++) {
    const uint32_t *ids = NULL;
    uint32_t k = pa_sched_used_at(bg.sched, bg.at + d, &ids);
    for (uint32_t i = 0; i < k && n < AHEAD_MAX; i++) n = add_evicted(ahead, n, ids[i], d);
  }
  return n;
}

/* ---- the swap schedule (dtr/served.c): what leaves after a launch, what comes back ---- */

/* The live buffer of each ident at position q of the schedule's list (outs: resident
 * ones that may leave; backs: ones away), into list from n on (pa_mu held). */
static size_t scheduled(held_t *list, size_t n, uint64_t q, bool out) {
  const uint32_t *ids = NULL;
  uint32_t k = out ? pa_sched_outs(bg.sched, q, &ids) : pa_sched_backs(bg.sched, q, &ids);
  for (uint32_t i = 0; i < k && n < AHEAD_MAX; i++) {
    uint32_t x = ids[i] < bg.nby_ident ? bg.by_ident[ids[i]] : NONE;
    if (x == NONE || !bg.b[x].seen) continue;
    if (!(out ? pa_pool_evictable : pa_pool_evicted)(bg.b[x].off, bg.b[x].size)) continue; /* nothing to move */
    list[n++] = (held_t){bg.b[x].off, bg.b[x].size};
  }
  return n;
}

/* After a launch or copy is issued: its holds go; the schedule's copies out after it are
 * queued (the buffers' idle stretch starts), then, while free pages allow, the buffers
 * the schedule brings back before the next launch and those the next launches need
 * start back on the copy stream, behind the work just queued instead of in front of the
 * launch that needs them. */
void pa_budget_done(void) {
  if (!nheld && !atomic_load_explicit(&swapping, memory_order_relaxed)) return;
  held_t ahead[AHEAD_MAX], outs[AHEAD_MAX];
  size_t nout = 0;
  pthread_mutex_lock(&pa_mu);
  for (size_t i = 0; i < nheld; i++) pa_pool_unhold(held[i].off, held[i].size);
  bool planned = atomic_load_explicit(&swapping, memory_order_relaxed) && bg.placed && bg.issued != NO_POS &&
                 bg.pages != SIZE_MAX;
  size_t n = planned ? scheduled(ahead, 0, bg.at, false) : 0, backs = n;
  if (planned) nout = scheduled(outs, 0, bg.issued, true), bg.issued = NO_POS;
  n = prefetch_due(ahead, n);
  pthread_mutex_unlock(&pa_mu);
  nheld = 0;
  size_t sent = 0, brought = 0;
  for (size_t i = 0; i < nout; i++) sent += pa_pool_evict_range(outs[i].off, outs[i].size) > 0;
  for (size_t i = 0; i < n && pa_pool_prefetch(ahead[i].off, ahead[i].size); i++) brought += i < backs;
  if (!sent && !brought) return;
  pthread_mutex_lock(&pa_mu);
  bg.scheduled_outs += sent, bg.scheduled_backs += brought;
  pthread_mutex_unlock(&pa_mu);
}

/* ---- what a page's eviction involves ------------------------------------------------------ */

/* Never seen touched and no launch since its allocation: nothing could have written it. */
static bool fresh(const buf_t *b) { return !b->seen && b->born == bg.launches; }

/* Who uses [lo, hi) (pa_mu held): the live bytes as one span (first live byte to last),
 * the streams that touched them in streams[0 .. nstreams) (nstreams = max + 1 when
 * unknown or too many: then the whole device must be waited for), and whether one of
 * them was never seen touched though launches ran since it was allocated (it must not
 * leave: a kernel may reach it through a pointer stored in device memory). One that
 * nothing could have written yet holds no bytes worth a copy. */
pa_users_t pa_budget_users(uint64_t lo, uint64_t hi, CUstream *streams, size_t max) {
  pa_users_t u = {hi, lo, 0, false};
  for (uint32_t n = first_over(lo); n != PA_NIL && bg.b[n].off < hi; n = pa_treap_next(&bg.by_addr, n)) {
    const buf_t *b = &bg.b[n];
    if (fresh(b)) continue;
    uint64_t a = b->off > lo ? b->off : lo, e = b->off + b->size < hi ? b->off + b->size : hi;
    if (a < u.lo) u.lo = a;
    if (e > u.hi) u.hi = e;
    u.unseen |= !b->seen;
    if (!b->seen || u.nstreams > max) continue;
    if (b->multi) u.nstreams = max + 1;
    for (uint8_t k = 0; k < b->nstreams && u.nstreams <= max; k++) u.nstreams = add_stream(streams, u.nstreams, max, b->streams[k]);
  }
  bool named = streams && u.nstreams <= max;
  for (size_t i = 0; named && pa_capture_open() && i < u.nstreams; i++)
    if (pa_stream_capturing(streams[i])) u.nstreams = max + 1, named = false; /* no event can be recorded there */
  if (u.lo >= u.hi) u.lo = u.hi = lo;
  return u;
}

/* ---- victims ------------------------------------------------------------------------------ */

#define LATENCY_BYTES (256u << 10) /* a copy's fixed cost, as bytes (~10 us at 25 GB/s) */

/* Whether the page at pool offset at could leave: mapped, not held, and every buffer on
 * it seen touched. */
static bool page_can_leave(uint64_t at) {
  return pa_pool_evictable(at, 1) && !pa_budget_users(at, at + bg.page, NULL, 0).unseen;
}

/* The pages of b that could leave: the inner ones are b's alone. */
static size_t leaving_pages(const buf_t *b, uint64_t lo, uint64_t hi) {
  size_t n = pa_pool_evictable(b->off, b->size);
  if (n && !page_can_leave(lo) && pa_pool_evictable(lo, 1)) n--;
  if (n && hi - bg.page > lo && !page_can_leave(hi - bg.page) && pa_pool_evictable(hi - bg.page, 1)) n--;
  return n;
}

/* Its next use is known: the served phase repeats the recorded iteration. */
static bool planned(const buf_t *b) { return bg.placed && b->ident != NONE; }

/* Launches until b's next use: known from the schedule, else guessed from how long ago
 * it was last used. */
static double next_use(const buf_t *b) {
  if (planned(b)) return (double)pa_sched_next_use(bg.sched, b->ident, bg.at);
  return (double)(bg.clock - b->last_use);
}

/* Pages leave whole, with every buffer on them: the soonest next use among those, or
 * the plan's next allocation on them, which wants them mapped again (and, while their
 * copy out has not run, makes the host wait for it: 37 of the demo's 97 served-phase
 * waits; 97 -> 15 with births counted, 1718 -> 1633 MB moved). */
static double soonest_use(uint64_t lo, uint64_t hi) {
  double soonest = INFINITY;
  for (uint32_t n = first_over(lo); n != PA_NIL && bg.b[n].off < hi; n = pa_treap_next(&bg.by_addr, n)) {
    const buf_t *b = &bg.b[n];
    if (!fresh(b)) soonest = fmin(soonest, next_use(b));
  }
  if (bg.placed) soonest = fmin(soonest, (double)pa_sched_next_birth(bg.sched, lo, hi, bg.at));
  return soonest;
}

/* A copy out orders itself after its users by an event recorded on each, which a
 * capturing stream would capture instead: for such users it waits for the whole device
 * (pa_budget_users), which a strict capture forbids this thread. Pages that need it
 * then stay until the capture ends (pa_mu held; asks the driver, off the hot path). */
static bool capture_pins(uint64_t lo, uint64_t hi) {
  if (!pa_capture_open() || !pa_capture_forbids()) return false;
  CUstream streams[PA_EVICT_STREAMS];
  return pa_budget_users(lo, hi, streams, PA_EVICT_STREAMS).nstreams > PA_EVICT_STREAMS;
}

/* Lower is a better victim; INFINITY: not one (dtr/policy.c). Belady on what actually
 * leaves where the schedule knows the next use: the pages, whose next use is their
 * buffers' soonest. Else DTR's score on the staleness (the past as the future's guess). */
static double score(const buf_t *b, double min_size) {
  uint64_t lo = b->off / bg.page * bg.page, hi = (b->off + b->size + bg.page - 1) / bg.page * bg.page;
  size_t pages = b->seen && (double)b->size >= min_size ? leaving_pages(b, lo, hi) : 0;
  if (!pages || capture_pins(lo, hi)) return INFINITY;
  pa_users_t u = pa_budget_users(lo, hi, NULL, 0);
  double cost = (double)(u.hi - u.lo) + LATENCY_BYTES;
  double gain = pa_opt.v[PA_OPT_EVICT_FRAG].i ? (double)(pages * bg.page) : (double)b->size;
  if (bg.placed) return pa_belady_score(cost, (double)(pages * bg.page), soonest_use(lo, hi));
  pa_victim_t v = {cost, gain, (double)(bg.clock - b->last_use), b->evictions};
  return pa_dtr_score(&v, (double)pa_opt.v[PA_OPT_EVICT_REPEAT].i / 100);
}

static double score_at(void *ctx, size_t i, double min_size) {
  (void)ctx;
  return score(&bg.b[bg.order[i]], min_size);
}

/* The buffer whose pages should leave next (pa_mu held); false when none can. The
 * reactive choice samples (dtr/policy.c); the planned one sees every buffer. A planned victim gives up
 * only the pages the caller needs: Belady on pages, since its next use is known and
 * the rest may stay until a later need (vendor_gemm at 70 %: 94 MiB moved instead of
 * 124). A guessed one leaves whole: page by page, the reactive score moved more bytes
 * (transformer_train at 50 and 35 %, +5 %), in more evictions (dtr/BENCHMARKS.md). */
bool pa_budget_victim(uint64_t *off, uint64_t *size, size_t *take) {
  if (!bg.n) return false;
  bool sample = pa_opt.v[PA_OPT_EVICT_SAMPLE].i && !bg.placed;
  size_t k = pa_victim_pick(bg.n, (double)bg.live_bytes / (double)bg.n, sample ? &bg.rng : NULL, score_at, NULL);
  if (k == SIZE_MAX) return false;
  uint32_t x = bg.order[k];
  bg.b[x].evictions++;
  bg.planned_victims += planned(&bg.b[x]);
  if (!planned(&bg.b[x])) *take = SIZE_MAX;
  *off = bg.b[x].off, *size = bg.b[x].size;
  return true;
}
