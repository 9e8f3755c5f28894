/* The budget's policy front (PLANALLOC_BUDGET): the physical pages planalloc maps never
 * exceed the limit (limit.c). When a page is needed and none is free, the pool says so
 * (PA_POOL_FULL) and this file picks a victim, whose pages the pool sends to pinned host
 * memory (swap.c) and brings back at the same address before the next launch or copy
 * that touches them. The mechanism never calls back here: the pool and the copies
 * carry out what this file decides, and dtr/ scores. This file says what each
 * candidate costs and frees (the live buffers and who touched them are users.c's),
 * keeps the calling thread's held list (the buffers a launch or copy keeps resident
 * while it is issued), and runs the served clock: in the served phase the evicted
 * buffers of the next launches come back early, into free pages only (prefetch), and
 * the swap schedule's pages (pageplan.c, planned by dtr/served.c) go out and back
 * around each launch.
 * Victims: the MegEngine DTR score (dtr/policy.c, the simulator's too) with a swap's
 * cost (bytes to copy), the pages the eviction frees (free neighbours, at page
 * granularity), staleness on the touch clock and a repeat penalty. In the served phase
 * the iteration is known (schedule.c): a page's next use is its buffers' soonest, and
 * Belady picks the page used farthest ahead (a slot freed before its next use is dead:
 * gone, never back). A buffer no launch or copy was ever seen to touch is never a
 * victim: it may be reached only through pointers stored in device memory.
 * pa_mu guards everything but the held list, which is the thread's own. */
#include "dtr.h"
#include "pa.h"
#include "treap.h"

#include <math.h>
#include <stdlib.h>

static struct {
  uint64_t rng;
  const pa_sched_t *sched; /* the served plan's: next uses */
  uint32_t *by_ident;      /* the live buffer (users.c node) of each of its idents, or NONE */
  uint32_t nby_ident;
  bool placed;             /* the served clock has positioned it */
  uint64_t at, end;        /* the next launch's position; one past the period event's last */
  uint64_t issued;         /* the position of the launch just issued, or NO_POS */
  pa_pageplan_t *swaps;    /* the served plan's swap schedule, or NULL */
  uint64_t range_lo, range_hi; /* the served plan's pool range */
  uint64_t planned_victims, scheduled_outs, scheduled_backs;
  uint64_t kept_victims; /* victims chosen for the handle a wanted page kept */
  atomic_bool swapping; /* a swap schedule is served: pa_budget_done has work after every launch */
} PA_PER_DEVICE(bg) = {[0 ... PA_SLOTS - 1] = {.rng = 0x2545f4914f6cdd1dull}};
PA_BIND(bg)
#define bg PA_THIS(bg)

#define NONE UINT32_MAX
#define NO_POS UINT64_MAX

typedef pa_move_t held_t;

static PA_TLS held_t *held;
static PA_TLS size_t nheld, cap_held;

static pa_user_t *user(uint32_t n) { return pa_users_node(n); }

/* ---- the live buffers (users.c), named by the served schedule ------------------------------ */

static uint32_t schedule_ident(uint64_t off, uint64_t size, uint32_t slot) {
  if (!bg.sched) return NONE;
  return slot != PA_PLAN_NONE && slot < pa_sched_slots(bg.sched) ? slot : pa_sched_fixed(bg.sched, off, size);
}

static void name(uint32_t n, uint32_t ident) {
  user(n)->ident = ident;
  if (ident < bg.nby_ident) bg.by_ident[ident] = n;
}

void pa_budget_track(uint64_t off, uint64_t size, uint32_t slot) {
  uint32_t n = pa_limit_on() ? pa_users_track(off, size) : PA_NIL;
  if (n != PA_NIL) name(n, schedule_ident(off, size, slot));
}

/* The schedule's next birth on each page of a buffer just freed, told to the pool: an
 * idle page born on again soon is the worst to take a handle from (its address must be
 * unmapped first, after the work freed there, which the device may not have run yet). */
static void expect_births(uint64_t off, uint64_t size) {
  uint64_t page = pa_limit_page();
  for (uint64_t at = off / page * page; bg.placed && at < off + size; at += page) {
    uint64_t d = pa_sched_next_birth(bg.sched, at, at + page, bg.at);
    pa_pool_wanted(at, page, d == UINT64_MAX ? UINT64_MAX : pa_users_launches() + d);
  }
}

void pa_budget_untrack(uint64_t off) {
  uint32_t n = pa_limit_on() ? pa_users_at(off) : PA_NIL;
  if (n == PA_NIL || user(n)->off != off) return;
  uint32_t ident = user(n)->ident;
  uint64_t size = user(n)->size;
  if (ident < bg.nby_ident && bg.by_ident[ident] == n) bg.by_ident[ident] = NONE;
  pa_users_untrack(n);
  expect_births(off, size);
}

/* ---- the held list: what the current launch or copy needs resident ------------------------- */

static pthread_key_t held_key;
static pthread_once_t held_once = PTHREAD_ONCE_INIT;
static bool held_keyed;

/* A thread's held list goes with it: a replay's threads, or a program's workers, that
 * launched under a budget each left 16 KiB behind (LeakSanitizer on the H200 recording's
 * replay). */
static void drop_held(void *list) {
  free(list);
  held = NULL, nheld = cap_held = 0;
}

static void make_held_key(void) { held_keyed = !pthread_key_create(&held_key, drop_held); }

static void hold(uint64_t off, uint64_t size) {
  if (nheld && held[nheld - 1].off == off && held[nheld - 1].size == size) return;
  held_t *was = held;
  if (!pa_grow(&held, &cap_held, nheld + 1, sizeof *held, SIZE_MAX)) return;
  if (held != was && !pthread_once(&held_once, make_held_key) && held_keyed) (void)pthread_setspecific(held_key, held);
  held[nheld++] = (held_t){off, size};
  pa_pool_hold(off, size);
}

void pa_budget_touch(uint64_t x, CUstream s) {
  uint32_t n = pa_users_at(x);
  if (n == PA_NIL) return;
  pa_users_touch(n, s);
  hold(user(n)->off, user(n)->size);
}

void pa_budget_touch_range(uint64_t off, uint64_t size, CUstream s) {
  pa_users_touch_range(off, size, s);
  hold(off, size);
}

/* Work the budget cannot follow must find every buffer on the device: each live buffer
 * is held (the caller brings them back) and nothing is evicted from then on: the budget
 * gives way to correct results (pa_mu held). false: no budget, or lifted already. */
static bool lift(void) {
  if (!pa_limit_lift()) return false;
  for (uint32_t n = pa_users_first(); n != PA_NIL; n = pa_users_next(n)) hold(user(n)->off, user(n)->size);
  return true;
}

/* A CUDA graph's kernels are no launches the preload sees. */
void pa_budget_lift(void) {
  if (lift())
    pa_warn("a CUDA graph was launched under PLANALLOC_BUDGET=%llu bytes: its kernels' buffers cannot be seen, "
            "so every evicted buffer comes back and the budget is lifted", (unsigned long long)pa_limit_bytes());
}

/* Another device's work on s may touch this device's pool (a copy of it; a kernel under
 * peer access): which buffers, and when that work is done, are its device's to know, not
 * this budget's, so every buffer comes back before it, s waiting for the restores on the
 * device, and the budget is lifted (pa_mu not held; pa_slot is this pool's). */
int pa_budget_foreign(CUstream s) {
  if (!pa_limit_on() || pa_limit_lifted()) return CUDA_SUCCESS;
  pthread_mutex_lock(&pa_mu);
  bool lifted = lift();
  pthread_mutex_unlock(&pa_mu);
  if (!lifted) return CUDA_SUCCESS;
  pa_warn("another device's work touches device %d's pool under PLANALLOC_BUDGET=%llu bytes: the budget cannot "
          "follow it across devices, so every evicted buffer comes back and device %d's budget is lifted",
          (int)pa_pool_device(), (unsigned long long)pa_limit_bytes(), (int)pa_pool_device());
  int rc = pa_budget_ready(s);
  pa_budget_done();
  return rc;
}

void pa_budget_tick(bool launch) {
  pa_users_tick(launch);
  bg.issued = launch && bg.placed && bg.at < bg.end ? bg.at : NO_POS;
  bg.at += launch && bg.at < bg.end;
  if (launch && bg.placed) pa_pool_position(bg.at);
}

/* ---- the served plan's schedule ---------------------------------------------------------- */

/* The prefetch's and the swaps' map from idents to live buffers; none (no prefetch, no
 * swaps) without memory. */
static void index_idents(void) {
  uint32_t n = bg.sched && pa_opt.v[PA_OPT_PREFETCH].i ? pa_sched_idents(bg.sched) : 0;
  free(bg.by_ident);
  bg.by_ident = n ? malloc(n * sizeof *bg.by_ident) : NULL;
  bg.nby_ident = bg.by_ident ? n : 0;
  for (uint32_t i = 0; i < bg.nby_ident; i++) bg.by_ident[i] = NONE;
}

static double mib(uint64_t bytes) { return (double)bytes / (1 << 20); }

/* What the budget will cost, said once the recording is planned and before it costs it
 * (issue #39): the model's iteration with the schedule, and the floor. The model's
 * stalls are added to the iteration as the recording timed it, less planalloc's own
 * waits, where that is longer than its kernels: a program's own copies and host work
 * are time the kernels leave out (multistream: 2 ms of kernels in an 11 ms iteration
 * made the turn over the kernels alone 6.3x, where the run took 1.45x). */
static void say_forecast(const pa_forecast_t *fc, uint64_t budget, double gbps, bool measured, double iter_ns) {
  if (!fc->compute_ns) return;
  double base = iter_ns > fc->compute_ns ? iter_ns : fc->compute_ns;
  if (budget < fc->floor)
    pa_warn("PLANALLOC_BUDGET=%.1f MiB is below this iteration's floor, %.1f MiB (the most one launch needs on the "
            "device at once): those launches wait for victims, or fail", mib(budget), mib(fc->floor));
  else if (!fc->bytes_out && !fc->bytes_in)
    pa_info("budget %.1f MiB: the iteration fits, nothing moves (floor %.1f MiB)", mib(budget), mib(fc->floor));
  else
    pa_info("budget %.1f MiB: predicted %.2fx the iteration's %.1f ms (%.1f ms of kernels), %.1f MiB out and %.1f MiB "
            "back an iteration at %.1f GB/s (%s), %.1f ms of mapping calls (floor %.1f MiB%s)", mib(budget),
            (base + fc->turn_ns - fc->compute_ns) / base, base / 1e6, fc->compute_ns / 1e6, mib(fc->bytes_out),
            mib(fc->bytes_in), gbps, measured ? "measured" : "PLANALLOC_LINK_GBPS", fc->map_ns / 1e6, mib(fc->floor),
            fc->over ? "; the schedule leaves some launches over: victims chosen at need meet them" : "");
}

/* The link the schedule times its copies by: PLANALLOC_LINK_GBPS where set, else what the
 * recording's copies measured (link.c), else the option's default; *measured: which. */
static double link_gbps(bool *measured) {
  double gbps = pa_link_gbps();
  *measured = !pa_opt.v[PA_OPT_LINK_GBPS].from_env && gbps > 0;
  return *measured ? gbps : (double)pa_opt.v[PA_OPT_LINK_GBPS].i;
}

/* The swap schedule in pages, planned at the kernel time the recording measured (none
 * measured: none planned, victims are chosen as launches need them). */
static void plan_swaps(const pa_plan_slots_t *slots, uint64_t base, double ns, double iter_ns) {
  pa_pageplan_free(bg.swaps), bg.swaps = NULL;
  pa_pool_hues(NULL);
  if (!bg.sched || !slots || !pa_opt.v[PA_OPT_SWAP_SCHEDULE].i) return;
  uint64_t budget = (uint64_t)pa_limit_pages() * pa_limit_page();
  bool measured;
  double gbps = link_gbps(&measured);
  if (ns <= 0) {
    pa_info("budget %.1f MiB: no kernel time measured while recording: no swap schedule and no forecast, "
            "victims chosen at need", mib(budget));
    return;
  }
  uint64_t t0 = pa_wait_begin(); /* the monotonic clock, ns */
  double most = (double)pa_opt.v[PA_OPT_LEAD].i * ns;
  pa_forecast_t fc;
  pa_link_t link = {gbps, (double)pa_opt.v[PA_OPT_PAGE_MAP_NS].i};
  bg.swaps = pa_pageplan_new(bg.sched, slots, base, pa_limit_page(), budget, ns, link, most, &fc);
  say_forecast(&fc, budget, gbps, measured, iter_ns);
  const pa_hues_t *hs = pa_pageplan_hues(bg.swaps);
  pa_pool_hues(hs); /* the pages that share a handle, period after period */
  if (pa_opt.v[PA_OPT_VERBOSE].i)
    pa_info("budget swap schedule: %zu page runs out an iteration, for a lead of %llu launches (%u positions over "
            "budget), planned at %.1f us a launch (%gx the %.1f measured) and %.1f GB/s in %.1f ms",
            pa_pageplan_swaps(bg.swaps), (unsigned long long)pa_pageplan_lead(bg.swaps), pa_pageplan_over(bg.swaps),
            ns * fc.stretch / 1000, fc.stretch, ns / 1000, gbps, (double)(pa_wait_begin() - t0) / 1e6);
  if (bg.swaps && pa_pageplan_swaps(bg.swaps) && !hs)
    pa_warn("budget: the swap schedule's pages got no handle colours (past %u pages that leave, or no memory): "
            "each comes back to a handle another took, three mapping calls", PA_HUES_MOST_MOVING);
  if (pa_opt.v[PA_OPT_VERBOSE].i && hs)
    pa_info("budget handle colours: %u pages share %u handles, %u of them one handle all turn, %u changing handles "
            "within it (their stays met too many others)", hs->npages, hs->ncolours, hs->nwhole, hs->nsplit);
}

/* The buffers live now that the schedule knows are the fixed ones: slots come later. */
void pa_budget_schedule(const pa_sched_t *s, const pa_plan_slots_t *slots, uint64_t base, double kernel_ns,
                        double iter_ns) {
  if (!pa_limit_on()) return;
  bg.sched = pa_opt.v[PA_OPT_EVICT_PLANNED].i ? s : NULL, bg.placed = false, bg.issued = NO_POS;
  bg.range_lo = base, bg.range_hi = slots ? base + slots->pool : base;
  plan_swaps(slots, base, kernel_ns, iter_ns);
  atomic_store_explicit(&bg.swapping, bg.swaps != NULL, memory_order_relaxed);
  pa_pace_start(pa_pageplan_lead(bg.swaps)); /* the lead the schedule was planned for */
  index_idents();
  for (size_t i = 0; i < pa_users_count(); i++) {
    uint32_t n = pa_users_nth(i);
    name(n, schedule_ident(user(n)->off, user(n)->size, PA_PLAN_NONE));
  }
}

void pa_budget_dump_cycle(FILE *f) {
  if (bg.swaps) pa_pageplan_dump(bg.swaps, f);
  else fprintf(f, "# planalloc cycle 1\n# no swap schedule was planned\n");
}

uint64_t pa_budget_planned_victims(void) { return bg.planned_victims; }
uint64_t pa_budget_kept_victims(void) { return bg.kept_victims; }
uint64_t pa_budget_scheduled_outs(void) { return bg.scheduled_outs; }
uint64_t pa_budget_scheduled_backs(void) { return bg.scheduled_backs; }

uint64_t pa_budget_lead(void) { return pa_pageplan_lead(bg.swaps); }
uint64_t pa_budget_over(void) { return pa_pageplan_over(bg.swaps); }

/* The pages idle when the schedule starts went idle unforeseen: told their next births
 * now, the pool gives away those wanted last (pa_mu held). */
static void expect_idle_births(void) {
  uint64_t page = pa_limit_page();
  for (uint64_t at = bg.range_lo / page * page; at < bg.range_hi; at += page) expect_births(at, page);
}

void pa_budget_at(uint64_t pos) {
  if (!bg.sched) return;
  bool first = !bg.placed;
  bg.at = pa_sched_first(bg.sched, pos), bg.end = pa_sched_end(bg.sched, pos), bg.placed = true;
  pa_pool_position(bg.at);
  if (first) expect_idle_births();
}

bool pa_budget_holding(void) { return nheld > 0; }

static pa_pool_stop_t spare_within_lead(void);
static int map_sparing(uint64_t off, uint64_t size, pa_copies_t *restored, pa_pool_stop_t stop);

/* Whether every held buffer is on the device (pa_mu not held). */
static bool held_mapped(void) {
  bool all = true;
  pthread_mutex_lock(&pa_mu);
  for (size_t i = 0; i < nheld && all; i++) all = !pa_pool_unmapped(held[i].off, held[i].size);
  pthread_mutex_unlock(&pa_mu);
  return all;
}

/* pa_mu not held. Brings back what the held buffers lost and orders the caller's stream
 * after it, and after any restore of their pages still running (queued for another
 * stream or thread, too): s waits on the copies, the host never (a synchronous copy runs
 * on its default stream, which waits the same way). */
int pa_budget_ready(CUstream s) {
  pa_copies_t restored = {{0, 0}};
  int rc = CUDA_SUCCESS;
  if (!nheld) return rc;
  if (!held_mapped()) pa_mover_drain();
  pa_pool_stop_t stop = spare_within_lead();
  for (size_t i = 0; i < nheld && !rc; i++) rc = map_sparing(held[i].off, held[i].size, &restored, stop);
  if (rc) {
    char words[PA_LIMIT_WORDS];
    pa_error("cannot bring %zu buffers back within %s for a launch or copy (%s = %d)", nheld,
             pa_limit_words(words, sizeof words), pa_gpu_error_name(rc), rc);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  return pa_swap_wait_each(&restored, s);
}

/* ---- prefetch: the served phase's evicted buffers come back before their launch ---------- */

#define AHEAD_MAX 16 /* buffers one prefetch brings back at most */
#define SWAPS_MAX 64 /* page ranges the schedule moves at one launch, at most */
#define BIRTHS_MAX 16 /* births mapped ahead after one launch, at most */
#define BIRTHS_AHEAD 2 /* launches ahead whose births the mover maps */
_Static_assert(2 * SWAPS_MAX + AHEAD_MAX + BIRTHS_MAX <= PA_MOVES_MAX, "the mover takes a launch's moves");

/* Adds the buffer ident if it is live, on the host (some of it) and next used `distance`
 * launches ahead: not a slot's instance that dies first, not one already listed. */
static size_t add_evicted(held_t *ahead, size_t n, uint32_t ident, uint64_t distance) {
  uint32_t x = ident < bg.nby_ident ? bg.by_ident[ident] : NONE;
  if (x == NONE || !pa_pool_evicted(user(x)->off, user(x)->size)) return n;
  if (pa_sched_next_use(bg.sched, ident, bg.at) != distance) return n;
  for (size_t i = 0; i < n; i++)
    if (ahead[i].off == user(x)->off) return n;
  ahead[n] = (held_t){user(x)->off, user(x)->size};
  return n + 1;
}

/* What the next PLANALLOC_PREFETCH launches need from the host, soonest first (pa_mu
 * held). Only where the schedule is positioned and the budget not lifted. */
static size_t prefetch_due(held_t *ahead, size_t n) {
  uint64_t depth = bg.placed && bg.nby_ident && !pa_limit_lifted() ? (uint64_t)pa_opt.v[PA_OPT_PREFETCH].i : 0;
  for (uint64_t d = 0; d < depth && n < AHEAD_MAX; d++) {
    const uint32_t *ids = NULL;
    uint32_t k = pa_sched_used_at(bg.sched, bg.at + d, &ids);
    for (uint32_t i = 0; i < k && n < AHEAD_MAX; i++) n = add_evicted(ahead, n, ids[i], d);
  }
  return n;
}

/* The plan's buffers born before the next BIRTHS_AHEAD launches whose pages are not all
 * mapped (pa_mu held): the mover maps them ahead, beside the program, where handles are
 * spare (on the H200's GPT recording replayed at its budget, 72 % of the served phase's
 * mapping calls were births, made in cudaMalloc). */
static size_t births_due(held_t *list) {
  size_t n = 0;
  for (uint64_t d = 0; bg.placed && d < BIRTHS_AHEAD; d++) {
    const uint32_t *slots = NULL;
    uint32_t k = pa_sched_born_at(bg.sched, bg.at + d, &slots);
    for (uint32_t i = 0; i < k && n < BIRTHS_MAX; i++) {
      uint64_t off, size;
      pa_sched_slot_range(bg.sched, slots[i], &off, &size);
      if (size && off + size <= pa_pool_size() && pa_pool_unmapped(off, size)) list[n++] = (held_t){off, size};
    }
  }
  return n;
}

/* ---- the swap schedule (dtr/served.c): what leaves after a launch, what comes back ---- */

static bool page_can_leave(uint64_t at);

/* The schedule's page runs at position q (outs: the pages that may leave now, unheld
 * and with every buffer on them seen touched; backs: those away), as ranges into list
 * from n on (pa_mu held). */
static size_t scheduled(held_t *list, size_t n, uint64_t q, bool out) {
  const pa_run_t *runs = NULL;
  uint32_t k = out ? pa_pageplan_outs(bg.swaps, q, &runs) : pa_pageplan_backs(bg.swaps, q, &runs);
  uint64_t page = pa_limit_page();
  for (uint32_t i = 0; i < k; i++)
    for (uint64_t at = (uint64_t)runs[i].first * page, end = at + (uint64_t)runs[i].n * page; at < end && n < SWAPS_MAX; at += page) {
      bool moves = out ? page_can_leave(at) : pa_pool_evicted(at, page) > 0;
      if (!moves) continue;
      if (n && list[n - 1].off + list[n - 1].size == at) list[n - 1].size += page; /* one run */
      else list[n++] = (held_t){at, page};
    }
  return n;
}

/* After a launch or copy is issued: its holds go; the schedule's copies out after it are
 * queued (the buffers' idle stretch starts), then, while free pages allow, the buffers
 * the schedule brings back before the next launch and those the next launches need
 * start back on the in stream, behind the work just queued instead of in front of the
 * launch that needs them. */
static void move(const pa_moves_t *m);

void pa_budget_done(void) {
  if (!nheld && !atomic_load_explicit(&bg.swapping, memory_order_relaxed)) return;
  held_t ahead[SWAPS_MAX + AHEAD_MAX], outs[SWAPS_MAX], births[BIRTHS_MAX];
  size_t nout = 0, nbirth = 0;
  pthread_mutex_lock(&pa_mu);
  for (size_t i = 0; i < nheld; i++) pa_pool_unhold(held[i].off, held[i].size);
  bool planned = atomic_load_explicit(&bg.swapping, memory_order_relaxed) && bg.placed && bg.issued != NO_POS &&
                 !pa_limit_lifted();
  size_t n = planned ? scheduled(ahead, 0, bg.at, false) : 0, backs = n;
  if (planned) nout = scheduled(outs, 0, bg.issued, true), bg.issued = NO_POS;
  n += prefetch_due(ahead + backs, 0); /* what the schedule brings back is mapped by then */
  if (planned && pa_opt.v[PA_OPT_MOVER].i == PA_MOVER_ON) nbirth = births_due(births);
  uint64_t launch = pa_users_launches(), lead = pa_budget_lead();
  pthread_mutex_unlock(&pa_mu);
  nheld = 0;
  pa_moves_t m = {outs, nout, ahead, n, backs, births, nbirth};
  if (!pa_mover_post(&m, launch, lead ? lead : 32, move)) m.nbirth = 0, move(&m); /* inline, a birth maps itself */
}

static void move(const pa_moves_t *m) {
  size_t sent = 0, brought = 0, i;
  for (i = 0; i < m->nout; i++) sent += pa_pool_evict_range(m->out[i].off, m->out[i].size, SIZE_MAX) > 0;
  for (i = 0; i < m->nin && pa_pool_prefetch(m->in[i].off, m->in[i].size); i++) brought += i < m->backs;
  for (i = 0; i < m->nbirth && pa_pool_premap(m->birth[i].off, m->birth[i].size); i++) {}
  if (!sent && !brought) return;
  pthread_mutex_lock(&pa_mu);
  bg.scheduled_outs += sent, bg.scheduled_backs += brought;
  pthread_mutex_unlock(&pa_mu);
}

/* ---- victims ------------------------------------------------------------------------------ */

#define LATENCY_BYTES (256u << 10) /* a copy's fixed cost, as bytes (~10 us at 25 GB/s) */

/* Whether the page at pool offset at could leave: mapped, not held, and every buffer on
 * it seen touched. */
static bool page_can_leave(uint64_t at) {
  return pa_pool_evictable(at, 1) && !pa_users_span(at, at + pa_limit_page(), NULL, 0).unseen;
}

/* The pages of b that could leave: the inner ones are b's alone. */
static size_t leaving_pages(const pa_user_t *b, uint64_t lo, uint64_t hi) {
  size_t n = pa_pool_evictable(b->off, b->size);
  uint64_t last = hi - pa_limit_page();
  if (n && !page_can_leave(lo) && pa_pool_evictable(lo, 1)) n--;
  if (n && last > lo && !page_can_leave(last) && pa_pool_evictable(last, 1)) n--;
  return n;
}

/* Its next use is known: the served phase repeats the recorded iteration. */
static bool planned(const pa_user_t *b) { return bg.placed && b->ident != NONE; }

/* Launches until b's next use: known from the schedule, else guessed from how long ago
 * it was last used. */
static double next_use(const pa_user_t *b) {
  if (planned(b)) return (double)pa_sched_next_use(bg.sched, b->ident, bg.at);
  return (double)(pa_users_clock() - b->last_use);
}

/* Pages leave whole, with every buffer on them: the soonest next use among those, or
 * the plan's next allocation on them, which wants them mapped again (and, while their
 * copy out has not run, makes the host wait for it: 37 of the demo's 97 served-phase
 * waits; 97 -> 15 with births counted, 1718 -> 1633 MB moved). */
static double soonest_use(uint64_t lo, uint64_t hi) {
  double soonest = INFINITY;
  for (uint32_t n = pa_users_first_over(lo); n != PA_NIL && user(n)->off < hi; n = pa_users_next(n)) {
    const pa_user_t *b = user(n);
    if (!pa_users_fresh(b)) soonest = fmin(soonest, next_use(b));
  }
  if (bg.placed) soonest = fmin(soonest, (double)pa_sched_next_birth(bg.sched, lo, hi, bg.at));
  return soonest;
}

#define LAST_RESORT 1e12 /* a factor that puts a score after every other */

/* Belady's, but a page the next launch uses goes last: it would come straight back. By
 * bytes alone a nearly empty page of small buffers scored best, and mlp_train at 90 %
 * sent out the page every launch uses, for an allocation just before a launch (served
 * waits 25 -> 6 at 90 %, 31 -> 19 at 50 %). */
static double planned_score(double cost, double freed, double next_use) {
  double s = pa_belady_score(cost, freed, next_use);
  return next_use < 1 ? s * LAST_RESORT : s;
}

/* A copy out orders itself after its users by an event recorded on each, which a
 * capturing stream would capture instead: for such users it waits for the whole device
 * (pa_users_span), which a strict capture forbids this thread. Pages that need it
 * then stay until the capture ends (pa_mu held; asks the driver, off the hot path). */
static bool capture_pins(uint64_t lo, uint64_t hi) {
  if (!pa_capture_open() || !pa_capture_forbids()) return false;
  CUstream streams[PA_EVICT_STREAMS];
  return pa_users_span(lo, hi, streams, PA_EVICT_STREAMS).nstreams > PA_EVICT_STREAMS;
}

/* Lower is a better victim; INFINITY: not one (dtr/policy.c), nor one whose pages are
 * wanted sooner than beyond launches on (0: any; only where the schedule says). Belady
 * on what actually leaves where the schedule knows the next use: the pages, whose next
 * use is their buffers' soonest. Else DTR's score on the staleness (the past as the
 * future's guess). */
static double score(const pa_user_t *b, double min_size, uint64_t beyond) {
  uint64_t page = pa_limit_page(), lo = b->off / page * page, hi = (b->off + b->size + page - 1) / page * page;
  size_t pages = b->seen && (double)b->size >= min_size ? leaving_pages(b, lo, hi) : 0;
  if (!pages || capture_pins(lo, hi)) return INFINITY;
  pa_users_t u = pa_users_span(lo, hi, NULL, 0);
  double cost = (double)(u.hi - u.lo) + LATENCY_BYTES;
  double gain = pa_opt.v[PA_OPT_EVICT_FRAG].i ? (double)(pages * page) : (double)b->size;
  double soonest = bg.placed ? soonest_use(lo, hi) : 0;
  if (beyond && !(planned(b) && soonest >= (double)beyond)) return INFINITY;
  if (bg.placed) return planned_score(cost, (double)(pages * page), soonest);
  pa_victim_t v = {cost, gain, (double)(pa_users_clock() - b->last_use), b->evictions};
  return pa_dtr_score(&v, (double)pa_opt.v[PA_OPT_EVICT_REPEAT].i / 100);
}

static double score_at(void *beyond, size_t i, double min_size) {
  return score(user(pa_users_nth(i)), min_size, *(const uint64_t *)beyond);
}

/* What a map still wants: the pages [off, off+size). */
typedef struct need_s {
  uint64_t off, size;
} need_t;

#define KEPT 8          /* the wanted pages whose kept handles are looked for */
#define KEPT_FACTOR 100 /* how much worse than the best a victim for them may score */

/* Where victims are guessed, instead of best, a buffer on a page holding the handle a
 * wanted page's address kept, where its score is within KEPT_FACTOR of best's: sent out,
 * its handle takes the wanted page back with no mapping call (pool.c), and the two
 * pages come to share that handle while their lives alternate, as the served phase's
 * colours do by plan. Mapping calls a page moved outside the served phase, 2 GB/s:
 * trace_replay at 50 % 1.95 -> 1.75, at 30 % 1.74 -> 1.42; transformer_train at 50 %
 * 2.30 -> 2.01. Not where the schedule knows the next uses: on ResNet-50's GPU stream
 * without a swap schedule, the served phase's host waits went 115 -> 140 (Belady's
 * victims held). */
static pa_user_t *kept_victim(pa_user_t *best, uint64_t beyond, const need_t *need) {
  uint64_t at[KEPT];
  size_t nat = need->size && !bg.placed ? pa_pool_kept_holders(need->off, need->size, at, KEPT) : 0;
  double most = nat ? score(best, 0, beyond) * KEPT_FACTOR : 0;
  pa_user_t *pick = best;
  for (size_t i = 0; i < nat; i++)
    for (uint32_t h = pa_users_first_over(at[i]); h != PA_NIL && user(h)->off < at[i] + pa_limit_page(); h = pa_users_next(h)) {
      double s = score(user(h), 0, beyond);
      if (s <= most) pick = user(h), most = s;
    }
  bg.kept_victims += pick != best;
  return pick;
}

/* The buffer whose pages should leave next, of those wanted beyond launches on at the
 * soonest (pa_mu held); false when none can. The reactive choice samples
 * (dtr/policy.c); the planned one sees every buffer. A planned
 * victim gives up only the pages the caller needs (*take: in, those; out, how many may
 * leave): Belady on pages, since its next use is known and the rest may stay until a
 * later need (vendor_gemm at 70 %: 94 MiB moved instead of 124). A guessed one leaves
 * whole: page by page, the reactive score moved more bytes (transformer_train at 50 and
 * 35 %, +5 %), in more evictions (dtr/BENCHMARKS.md). */
static bool victim(uint64_t *off, uint64_t *size, size_t *take, uint64_t beyond, const need_t *need) {
  size_t n = pa_users_count();
  if (!n) return false;
  bool sample = pa_opt.v[PA_OPT_EVICT_SAMPLE].i && !bg.placed;
  size_t k = pa_victim_pick(n, (double)pa_users_live_bytes() / (double)n, sample ? &bg.rng : NULL, score_at, &beyond);
  if (k == SIZE_MAX) return false;
  pa_user_t *b = kept_victim(user(pa_users_nth(k)), beyond, need);
  b->evictions++;
  bg.planned_victims += planned(b);
  if (!planned(b)) *take = SIZE_MAX;
  *off = b->off, *size = b->size;
  return true;
}

#define TRIES 4 /* victims whose pages turned out pinned before the eviction gives up */

/* Evicts a victim's pages, wanted again beyond launches on at the soonest (0: any), for
 * a caller that still has want pages to map (pa_mu not held); false when nothing could
 * leave. */
static bool evict_for(size_t want, uint64_t beyond, const need_t *need) {
  for (int tries = 0; tries < TRIES; tries++) {
    uint64_t off, size;
    size_t take = want;
    pthread_mutex_lock(&pa_mu);
    bool found = victim(&off, &size, &take, beyond, need);
    pthread_mutex_unlock(&pa_mu);
    if (!found) return false;
    if (pa_pool_evict_range(off, size, take)) return true;
  }
  return false;
}

/* The idle pages a map spares (pa_pool_stop_t, pa_mu not held): those the schedule bears
 * on again within its lead, as far as the device may run behind the host: taking one
 * would make the allocation there wait for the work freed on it. None unless a swap
 * schedule serves (without one, nobody knows when a page is wanted). */
static pa_pool_stop_t spare_within_lead(void) {
  pthread_mutex_lock(&pa_mu);
  uint64_t now = pa_users_launches(), lead = bg.placed && !pa_limit_lifted() ? pa_pageplan_lead(bg.swaps) : 0;
  pthread_mutex_unlock(&pa_mu);
  return (pa_pool_stop_t){.spare_from = now, .spare_until = lead ? now + lead : 0};
}

/* Goes on from the page refused: starting over, the range's pages mapped already could
 * be the victim's and would take back what just left, again and again. An idle page
 * spared gives its handle after all when no victim is wanted later than it may be. */
static int map_sparing(uint64_t off, uint64_t size, pa_copies_t *restored, pa_pool_stop_t stop) {
  uint64_t end = off + size;
  int rc;
  while ((rc = pa_pool_map(off, end - off, restored, &stop)) == PA_POOL_FULL) {
    need_t need = {stop.at, end - stop.at};
    bool evicted = evict_for(stop.want, stop.spared ? stop.spare_until - stop.spare_from : 0, &need);
    if (!evicted && !stop.spared) return CUDA_ERROR_OUT_OF_MEMORY;
    if (!evicted) stop.spare_until = 0;
    off = stop.at > off ? stop.at : off;
  }
  return rc;
}

int pa_budget_map(uint64_t off, uint64_t size, pa_copies_t *restored) {
  pa_mover_drain();
  return map_sparing(off, size, restored, spare_within_lead());
}
