/* The allocation front. Record: best fit from the pool while the log runs; once the
 * iteration is found, plan it and, from the next period start, serve each allocation at
 * its planned offset after an O(1) check, falling back to best fit when the program does
 * something else. Two periods in a row with more than a tenth of their events off plan
 * retire the plan and record again. No driver call under pa_mu; the steady state makes
 * none at all (pages stay mapped). */
#include "pa.h"
#include "planner.h"
#include "treap.h"

#include <stdlib.h>
#define HASH_FUNCTION PA_HASH_WORD
#include <uthash.h>

enum { RECORD, PLANNING, SERVE, IDLE };

typedef struct pa_rec_s {
  CUdeviceptr ptr;
  uint64_t off, size, born; /* born: its allocation event */
  uint32_t node, slot, id, gen;
  uint64_t seq; /* its allocation's in the matcher's view (pa_record_event) */
  uint64_t nth; /* its allocation's number among all (fr.allocs) */
  uint32_t tag; /* the period position of its allocation (clock.c), or PA_CLOCK_OFF */
  pa_plan_t *plan;
  struct pa_rec_s *next_free;
  UT_hash_handle hh;
} pa_rec_t;

static struct {
  atomic_int phase;         /* read without pa_mu to skip the callsite when not recording */
  uint32_t gen;             /* recording generation: ids of older ones are not logged */
  pa_rec_t *live, *spare;   /* live allocations by pointer; unused records */
  pa_rec_t **by_node;       /* online block -> its allocation */
  size_t cap_nodes;
  pa_plan_t *plan;          /* its range: [plan_off, + its pool), claimed */
  uint64_t plan_off, events, serve_from, cut_event;
  uint64_t allocs;     /* allocations so far: a free's distance back, where the log has no id */
  uint64_t log_cut;    /* the new plan's cut in the log (detect) */
  uint64_t serve_base; /* the event the served clock's period starts at, or one a period later */
  uint32_t *caught;    /* a late plan's tags of the log's events since its cut (pa_clock_catch_up) */
  double rec_t0;       /* when this recording's first allocation came (s, pa_now), 0: none yet */
  uint64_t rec_ev0;    /* and its event */
  pa_clock_t clock; /* the served clock: the period event the program is at */
  pa_logged_t last;  /* what place() or drop() did with the event, for the event log */
  uint64_t period_mark; /* the monotonic clock at the last period end of this plan (ns), or 0 */
  uint64_t min_period;    /* shorter periods were repeats inside an iteration */
  uint64_t retry_at;      /* the recording's event a plan over two iterations is tried again at */
  uint64_t failed_plan;   /* the last plan's signature, if it never held */
  uint64_t failed_at, served_at; /* the event the last plan retired at; this one served from */
  bool dead_stale;     /* events went unlogged: the dead counts are rebuilt at the next logged free */
  bool pinned;         /* the plan's pages stay mapped when idle (pool.c) */
  bool trim_due;       /* a plan served its first whole period: give back idle pages */
  bool trim_wait;      /* the work freed on them was not done: again at the next period end */
  bool claim_due;      /* the new plan's range is claimed at its first served event */
  bool open;           /* its range is best fit's while the program is off the plan */
  bool open_due, close_due; /* from the next event on */
  uint32_t on_run;     /* the served clock's last events on the plan, in a row */
  uint32_t off_count;  /* its events off the plan, halved at each good period end */
  atomic_bool beside;  /* recording beside the plan: the program left it (read unlocked: a hint) */
  bool beside_due;     /* from the next event on (the events it logs are the ones fr.events counts) */
  bool served;         /* a served event happened since the plan was installed (waits.c) */
  bool again;          /* the plan serves again: a kept one, its in-place slots the last recording's */
  uint32_t off_run;    /* the served clock's last events off the plan, in a row */
  uint64_t around_until; /* the event its first period ends at: its slots' detours till then */
  struct {
    pa_plan_t *plan; /* a plan the program left: it may come back to it */
    uint64_t off, left; /* left: when (plans retired so far) */
    bool placed;        /* its range stays claimed while its buffers live, then goes (under a
                         * budget, or without memory to open it when the plan retired) */
    pa_match_t match[2]; /* its windows' hashes (PA_MATCH_LEN, PA_MATCH_SHORT), built when a recording runs beside a plan */
  } kept[8];
  uint64_t retirements;
  pa_match_t own;      /* the served plan's PA_MATCH_SHORT windows (kept_at's unique) */
} PA_PER_DEVICE(fr);
PA_BIND(fr)
#define fr PA_THIS(fr)

bool pa_recording(void) { return fr.phase == RECORD || fr.phase == PLANNING; }

/* Whether the events are logged (pa_mu held): while recording, and beside a plan the
 * program left. The buffers logged beside it are of the generation to come. */
static bool logging(void) { return pa_recording() || fr.beside; }
static uint32_t log_gen(void) { return fr.gen + (fr.beside ? 1 : 0); }

static void free_rec(pa_rec_t *r) { r->next_free = fr.spare, fr.spare = r; }

static pa_rec_t *new_rec(void) {
  if (!fr.spare) {
    pa_rec_t *chunk = calloc(256, sizeof *chunk);
    if (!chunk) return NULL;
    for (int i = 0; i < 256; i++) free_rec(&chunk[i]);
  }
  pa_rec_t *r = fr.spare;
  fr.spare = r->next_free;
  return r;
}

static bool note_node(uint32_t node, pa_rec_t *r) {
  if (!pa_grow(&fr.by_node, &fr.cap_nodes, (size_t)node + 1, sizeof *fr.by_node, SIZE_MAX)) return false;
  fr.by_node[node] = r;
  return true;
}

/* node (PA_NIL: none had) as r's block, noted; false, and no block, if not. */
static bool hold(pa_rec_t *r, uint32_t node) {
  r->node = node;
  if (node != PA_NIL && note_node(node, r)) return true;
  if (node != PA_NIL) pa_online_free(node);
  r->node = PA_NIL;
  return false;
}

/* ---- serving ----------------------------------------------------------------------- */

static bool claim_range(void);

static bool serving(uint64_t ev) {
  return fr.phase == SERVE && ev >= fr.serve_from && (!fr.claim_due || claim_range());
}

/* A plan's range: its pool, in whole grains. */
static uint64_t range_size(pa_plan_t *p) { return (uint64_t)pa_align_up((int64_t)pa_plan_pool(p), PA_GRAIN); }

static void unclaim(pa_plan_t *p, uint64_t off) { pa_online_unclaim(off, off + range_size(p)); }

static void unmatch(size_t i) { pa_match_free(&fr.kept[i].match[0]), pa_match_free(&fr.kept[i].match[1]); }

/* Keeps a plan the program left, with its address range, in place of the one left
 * longest ago whose slots are all free; false when every kept plan is still in use. */
static bool keep(pa_plan_t *p, uint64_t off, bool placed) {
  size_t n = sizeof fr.kept / sizeof *fr.kept, pick = n;
  for (size_t i = 0; i < n && (pick == n || fr.kept[pick].plan); i++) /* an empty entry ends it */
    if (!fr.kept[i].plan || (!pa_plan_live(fr.kept[i].plan) && (pick == n || fr.kept[i].left < fr.kept[pick].left)))
      pick = i;
  if (pick == n) return false;
  if (fr.kept[pick].plan && fr.kept[pick].placed) unclaim(fr.kept[pick].plan, fr.kept[pick].off);
  if (fr.kept[pick].plan) pa_plan_free(fr.kept[pick].plan);
  unmatch(pick);
  fr.kept[pick].plan = p, fr.kept[pick].off = off, fr.kept[pick].left = fr.retirements++, fr.kept[pick].placed = placed;
  return true;
}

/* The kept plan of this iteration, taken out of the list; NULL if none. *placed: whether
 * it still holds its range at *off; *turn: p's position t is its (t + *turn) % period.
 * Under a budget only as cut alike: the swap schedule comes from p, by p's positions. */
static pa_plan_t *kept_like(const pa_plan_t *p, uint64_t *off, bool *placed, uint32_t *turn) {
  for (size_t i = 0; i < sizeof fr.kept / sizeof *fr.kept; i++) {
    pa_plan_t *k = fr.kept[i].plan;
    if (!k || (*turn = pa_plan_rotation(k, p)) == PA_NO_ROTATION || (*turn && pa_plan_sched(p))) continue;
    *off = fr.kept[i].off, *placed = fr.kept[i].placed;
    fr.kept[i].plan = NULL;
    unmatch(i);
    return k;
  }
  return NULL;
}

static void beside_end(void);
static void open_range(void);

static void retire_plan(void) {
  uint64_t period = pa_plan_iteration(fr.plan), good = fr.clock.good;
  bool beside = fr.beside;
  fr.beside_due = false;
  fr.served = false, pa_waits_served(false), pa_swap_served(false), pa_pool_served(false);
  pa_pool_pin(0, 0), pa_pool_favour(0, 0), pa_pool_pin_soft(false), fr.pinned = false; /* its pages may serve elsewhere now */
  open_range(); /* its range best fit's: the next plan may lie over its buffers still live */
  bool placed = !fr.open && !fr.claim_due; /* its range still claimed (under a budget) */
  fr.open = fr.open_due = fr.close_due = false;
  if (!keep(fr.plan, fr.plan_off, placed)) { /* too many plans still in use: stop planning */
    pa_warn("the program keeps leaving its planned iterations: serving best fit from now on");
    beside_end();
    fr.phase = IDLE;
    return;
  }
  /* The same plan failing twice running was a pattern inside the iteration (an alloc/free
   * pair in a loop repeats and balances too): only longer periods are iterations. Once is
   * not enough: a plan installed after the program moved on (it plans on its own thread)
   * fails once too. Two plans of one length are not the same plan: a program whose shapes
   * change (another sequence length) leaves one plan for another of as many events. Nor
   * is a plan the program came back to after more than an iteration without it: a length
   * held for 4 steps, planned late in each of its stretches (stress-streams #11: its
   * second stretch came 3,102 events after the first, and the shortest period went above
   * every length's: 83.6 -> 2.3 % served once a free's token was its dead count). Nor is
   * one that held two whole periods: a length held for 6 steps, an iteration of 2 (a
   * logging buffer every other step), holds 2 of them after its first (stress-streams
   * #10: its plan failed twice so, and the 9-step cycle of lengths took 77 steps to
   * record: 44.8 -> 61.1 % served). */
  bool tiny = period < 2 * PA_CLOCK_MIN_SPAN, failed = good < (tiny ? 3u : 2u);
  uint64_t sig = pa_plan_signature(fr.plan);
  /* A few events that left their plan within three periods was a loop inside the step
   * (torch_stream's 60 layers: 8 scratch pairs, 2, 4, 6 ... events planned in turn, each
   * failing twice): no period that short is an iteration worth a second try. Laid out on
   * the allocating thread, such a plan serves the loop's last periods before it fails. */
  bool again = sig == fr.failed_plan && fr.served_at - fr.failed_at <= period;
  if (failed && (again || tiny) && period >= fr.min_period)
    fr.min_period = tiny ? 2 * PA_CLOCK_MIN_SPAN : period + 1;
  fr.failed_plan = failed ? sig : 0, fr.failed_at = fr.events;
  if (pa_opt.v[PA_OPT_VERBOSE].i)
    pa_info("the program left its planned iteration of %llu events after %llu periods: recording again",
            (unsigned long long)period, (unsigned long long)good);
  pa_budget_schedule(NULL, NULL, 0, 0, 0);
  pa_timeline_mark("left the plan of %llu events: recording again%s", (unsigned long long)period,
                   beside ? " (from where it left)" : "");
  pa_match_free(&fr.own);
  fr.plan = NULL, fr.gen++, fr.trim_wait = false, fr.retry_at = 0; /* the buffers logged beside are this generation's */
  fr.rec_t0 = 0;
  fr.phase = RECORD;
  fr.beside = false;
  if (beside) pa_record_go_on();
  else pa_record_reset();
  pa_access_reset();
  pa_stats.replans++;
}

/* The clock passed the period's last position (or the program left the plan for a
 * period's worth of events). */
static void period_end(const pa_tick_t *t) {
  bool bad = t->end == PA_PERIOD_DIVERGENT;
  uint64_t good = fr.clock.good;
  pa_stats.served_periods += t->whole;
  uint64_t now = pa_wait_begin(); /* the monotonic clock: the served phase's pace */
  if (fr.period_mark) pa_stats.served_ns += now - fr.period_mark, pa_stats.timed_periods++;
  fr.period_mark = now;
  /* After two whole periods the recording's last buffers are gone: what is idle now, the
   * served phase does not need; the plan's own pages are pinned from now on. Not before:
   * through the hand-over its idle pages back the ones it needs next (fewer at once). */
  if (!bad && good >= 2 && !fr.pinned) fr.pinned = true, pa_pool_pin(fr.plan_off, pa_plan_pool(fr.plan));
  if (!bad && good == 2) {
    fr.trim_due = true, pa_pool_serving();
    pa_timeline_mark("served phase: two periods on plan");
  }
  fr.trim_due |= !bad && fr.trim_wait;
  if (!bad) beside_end(), fr.off_count /= 2;
  pa_stats.divergent_periods += bad;
  if (bad)
    pa_timeline_mark("divergent period: %llu of %llu events off the plan", (unsigned long long)t->misses,
                     (unsigned long long)pa_plan_period(fr.plan));
  if (t->retire) retire_plan();
}

/* A period more than a tenth off the plan, or PA_BESIDE_RUN events off it in a row:
 * from the next event on, a recording runs beside it, so that when the plan retires (a
 * second such period) the iteration the program went on to is found in what it logged,
 * at once. Recording again only then, torch_stream's 3 shapes waited 2.7 steps more for
 * each of their 5 changes; a kept plan serves again as soon as the recording finds its
 * iteration. Not under a budget: the access trace, the swap schedule's data, is logged
 * only while recording. */
static void beside_begin(void) {
  if (fr.beside || fr.beside_due || pa_limit_on()) return;
  fr.beside_due = true;
}

/* Called as an event starts (pa_mu held, before it is counted). */
static void beside_start(void) {
  if (!fr.beside_due) return;
  fr.beside_due = false;
  fr.beside = true;
  pa_stats.beside++;
  pa_record_aside();
  pa_timeline_mark("off the plan: recording beside it");
}

static void serve(pa_plan_t *p, uint64_t off, uint32_t pos);
static bool place_plan(pa_plan_t *p, uint64_t *off);

static bool blocks(const pa_rec_t *r, const pa_plan_t *p, uint64_t before);
static uint64_t period_start(uint64_t period);

/* A kept anchored plan laid out with the recording's last buffers in place serves again
 * with its plain layout where that is lower, unless buffers of the program lie again
 * where its layout kept slots for them. The in-place layout's pages above max-live are
 * paid at every return, its places only the first time; but where lengths change in a
 * cycle, the last length's buffers lie at each change where they lay the first time
 * (torch_stream seed 305, lengths 64 and 128: the plain layout sent 42 slots around 2 of
 * them, 1.083 -> 1.099 x live). bench-lengths' 48 rows of several lengths 1.0500 ->
 * 1.0453 x live (seed 301, 15 layers: 1.152 -> 1.093). */
static void plain_again(pa_plan_t *k) {
  uint64_t hi = pa_plan_plain_range(k), before = period_start(pa_plan_period(k));
  pa_rec_t *r, *tmp;
  HASH_ITER(hh, fr.live, r, tmp)
    if (r->off < hi && !blocks(r, k, before) && pa_plan_in_place_is(k, r->off, r->size)) return;
  pa_plan_plain_again(k);
}

/* Kept plan k serves again at off, placed there already or just now (its clock's cut set):
 * slots still live from its last time are overdue. */
static void serve_again(pa_plan_t *k, uint64_t off, bool placed, uint32_t pos) {
  pa_plan_restart(k);
  serve(k, off, pos);
  fr.claim_due = !placed; /* else its range stayed claimed */
  fr.again = true;
  pa_stats.plans_reused++;
}

/* Kept plan i serves from the event after the one just logged, its position r; the plan
 * served now retires first (kept in turn: in the entry i leaves, if need be). */
static void adopt(size_t i, uint32_t r, uint32_t len) {
  pa_plan_t *k = fr.kept[i].plan;
  uint64_t off = fr.kept[i].off, period = pa_plan_period(k);
  bool placed = fr.kept[i].placed;
  fr.kept[i].plan = NULL;
  unmatch(i);
  if (fr.phase == SERVE) retire_plan();
  /* its period starts r events before the last (every free counts, those the log took
   * as made before it too): the buffers made since are tagged by its positions */
  fr.cut_event = fr.events - 1 - r + period - 1;
  if (!placed) plain_again(k);
  if (fr.phase != RECORD || (!placed && !place_plan(k, &off))) return pa_plan_free(k);
  serve_again(k, off, placed, (r + 1) % (uint32_t)period);
  pa_stats.plans_known++;
  pa_timeline_mark("kept plan of %llu events serves again: its last %u events came", (unsigned long long)period, len);
  if (pa_opt.v[PA_OPT_VERBOSE].i)
    pa_info("the program's last %u events are those of an iteration of %llu events planned before: serving its kept plan",
            len, (unsigned long long)period);
}

/* Kept plan i's positions a and b are one: its period is of several iterations, each
 * with the same events, and the clock follows it from either. */
static bool same(size_t i, uint32_t a, size_t j, uint32_t b) {
  uint64_t it = pa_plan_iteration(fr.kept[i].plan);
  return i == j && it && (a > b ? a - b : b - a) % it == 0;
}

/* m, period p's windows of len events, built the first time they are asked for. */
static bool built(pa_match_t *m, const pa_period_t *p, uint32_t len) { return m->n || pa_match_build(m, p, len); }

/* The next position of p whose window m hashes as h and where the program's last len
 * events are p's (*it as pa_match_next's); PA_CLOCK_OFF ends. */
static uint32_t next_place(const pa_match_t *m, const pa_period_t *p, uint32_t len, uint64_t h, uint32_t *it) {
  uint32_t at;
  while ((at = pa_match_next(m, h, it)) != PA_CLOCK_OFF && !pa_record_is(p, at, len)) {}
  return at;
}

/* The program's last len events are the served plan's too (somewhere): the stretch the
 * program ran is one that plan and a kept one share (an optimizer's step over the same
 * weights, whatever the sequence length). */
static bool own_at(uint32_t len) {
  uint64_t h = pa_record_recent(len);
  const pa_period_t *p = fr.plan ? pa_plan_period_of(fr.plan) : NULL;
  uint32_t it = 0;
  return p && h && built(&fr.own, p, len) && next_place(&fr.own, p, len, h, &it) != PA_CLOCK_OFF;
}

/* The program's last len events end as kept plans' do, the last at *r of kept[*i]: the
 * first such place found, or with unique, the one only; false if none (or several). */
static bool kept_at(uint32_t len, bool unique, size_t *i, uint32_t *r) {
  uint64_t h = pa_record_recent(len);
  size_t w = len == PA_MATCH_SHORT, found = 0;
  for (size_t j = 0; h && j < sizeof fr.kept / sizeof *fr.kept; j++) {
    pa_match_t *m = &fr.kept[j].match[w];
    const pa_period_t *p = fr.kept[j].plan ? pa_plan_period_of(fr.kept[j].plan) : NULL;
    /* not a plan that failed twice running as a pattern inside the iteration: the loop of
     * lengths 64, 64, 128 a step each served its 64, 64 plan again after each 128 step,
     * and the 3-step cycle was never recorded (48 % served; 88.9 % so) */
    if (!p || pa_plan_iteration(fr.kept[j].plan) < fr.min_period || !built(m, p, len)) continue;
    uint32_t it = 0, at;
    while ((at = next_place(m, p, len, h, &it)) != PA_CLOCK_OFF)
      if (fr.events - 1 >= at && !(found && same(j, at, *i, *r)) && !found++) *i = j, *r = at;
    if (found && (!unique || found > 1)) break;
  }
  return found == 1 ? !unique || !own_at(len) : found && !unique;
}

/* The events logged beside the plan end as a kept plan's do: true once it serves. */
static bool beside_kept(void) {
  size_t i;
  uint32_t r;
  if (kept_at(PA_MATCH_LEN, false, &i, &r)) return adopt(i, r, PA_MATCH_LEN), true;
  if (kept_at(PA_MATCH_SHORT, true, &i, &r)) return adopt(i, r, PA_MATCH_SHORT), true;
  return false;
}

/* Recording, with no plan on its way: the program's last events are a kept plan's, which
 * serves from the next event on, as off a plan (beside_kept), not once the finder has its
 * period again, 1.5-2 iterations in (stress-streams #10, lengths 128 x 6 steps and 64 x
 * 3: each 128 stretch found again 3.2 steps in). */
static bool record_kept(void) {
  if (fr.phase != RECORD || pa_limit_on() || pa_opt.v[PA_OPT_MODE].i == PA_MODE_RECORD) return false;
  size_t i;
  uint32_t r;
  if (kept_at(PA_MATCH_LEN, true, &i, &r)) return adopt(i, r, PA_MATCH_LEN), true;
  return false;
}

/* The recording beside the plan: a kept plan's events came, which serves at once; or it
 * found an iteration (not a loop of a few events): the program repeats something else
 * now, and the plan retires at once, not at the end of a second period off it. */
static void beside_check(void) {
  if (!fr.beside || fr.phase != SERVE || beside_kept()) return;
  uint64_t cut, least = fr.min_period > 2 * PA_CLOCK_MIN_SPAN ? fr.min_period : 2 * PA_CLOCK_MIN_SPAN;
  if (pa_record_period(least, &cut)) retire_plan();
}

/* The plan held after all (or planning stops): its recording is the log again, and the
 * buffers logged beside it are as any the served phase makes. */
static void beside_end(void) {
  fr.beside_due = false;
  if (!fr.beside) return;
  fr.beside = false;
  pa_record_restore();
  pa_rec_t *r, *tmp;
  HASH_ITER(hh, fr.live, r, tmp) if (r->gen == fr.gen + 1) r->gen = fr.gen, r->id = UINT32_MAX;
}

/* Events off the plan in a row past the clock's window: the program left it, and the
 * plan's idle pages serve what it does instead. Waiting for a tenth of the period took
 * torch_stream's 3 shapes 60 events into each change, their allocations on new pages
 * beside the last shape's idle range (mapped peak 1.140 x live; 1.071 so). A logging
 * buffer is 2 events off it. */
#define PA_OFF_RUN PA_CLOCK_WINDOW

/* Events off the plan in a row from which a recording runs beside it, and the kept plans'
 * matcher looks for the iteration the program went to: at a tenth of the period, the
 * other length's step was 50-90 events in before its kept plan served, its first
 * buffers best fit's (bench-lengths' rows of several lengths 1.0772 -> 1.0726 x live at
 * 4, with the range opened below). A logging buffer is 2. */
#define PA_BESIDE_RUN 4

/* Allocations off the plan from which its range opens to best fit (halved at each good
 * period end: a logging buffer a period never reaches it; frees are left out, the last
 * length's buffers freed in a kept plan's first period all miss). The other length's
 * first step then fills the plan's holes among the weights and its mapped pages, not new
 * ones beside its claimed range: torch_stream seed 306 (96, 192, 64) held 157 pages for
 * 142 of live data there, best fit alone 148. bench-lengths' rows of several lengths
 * 1.0877 -> 1.0776 x live (at 4: 1.0904, opened by a few periods' logging buffers; at 64:
 * 1.0819). While open, a slot takes its place where best fit left it free. */
#define PA_OPEN_MISSES 16

/* Events off the plan in its period from which its pinned range's idle pages back the
 * new pages best fit maps beside it, till the period ends or the pages are unpinned:
 * before the run of PA_OFF_RUN, which a step of another length reaches late (its
 * allocations of the sizes the plan has there match it now and then). torch_stream
 * 64,128 every 12 steps, 73 layers: the other length's first step mapped 12 pages more
 * beside the last plan's 138 idle ones (1.0905 x live; 1.0463 so, caching 1.0500); the
 * 24 streams of 2-3 lengths of scripts/bench-lengths.sh: 1.1000 -> 1.0898. A logging
 * buffer (2 events off the plan) maps its page beside the range once and keeps it; at 1
 * it took a pinned page each period, which the plan then mapped again (15 + 15 page
 * calls a run). */
#define PA_SOFT_MISSES 4

/* What the clock decided: the plan's slots whose planned free it passed are overdue; a
 * period going off the plan, or a run of PA_OFF_RUN events, unpins its pages (what the
 * program does instead takes the idle ones' memory rather than new pages: Maphsge4's
 * snapshot, whose window leaves its 188-event step for a stretch of larger buffers,
 * peaked 16 % above max-live with the plan's 64 MiB held idle beside them; a good period
 * pins them again); a period end. */
static void follow(const pa_tick_t *t) {
  uint64_t period = pa_plan_period(fr.plan);
  for (uint32_t i = 0; i < t->n; i++) pa_plan_tick(fr.plan, (t->from + i) % period);
  fr.off_run = t->at == PA_CLOCK_OFF ? fr.off_run + 1 : 0;
  fr.on_run = t->at == PA_CLOCK_OFF ? 0 : fr.on_run + 1;
  fr.open_due |= !fr.open && fr.off_count >= PA_OPEN_MISSES;
  fr.close_due |= fr.open && fr.on_run >= PA_CLOCK_WINDOW;
  if (fr.pinned && (fr.clock.misses * 10 > period || fr.off_run >= PA_OFF_RUN)) {
    fr.pinned = false, pa_pool_pin(0, 0);
    pa_timeline_mark("off the plan: its idle pages may serve elsewhere");
  }
  if (fr.clock.misses * 10 > period || fr.off_run >= PA_BESIDE_RUN) beside_begin();
  pa_pool_pin_soft(fr.pinned && fr.clock.misses >= PA_SOFT_MISSES);
  if (t->end) period_end(t);
  /* The served phase's figures (host waits, bytes moved) count from the first whole
   * period the plan serves: a plan installed mid-period serves at once, and its figures
   * are per period. */
  if (!fr.served && fr.phase == SERVE && (t->end || !fr.clock.partial))
    fr.served = true, pa_waits_served(true), pa_swap_served(true);
  if (fr.phase == SERVE) pa_budget_at(fr.clock.pos);
}

/* The slot for an allocation while serving, or PA_PLAN_NONE (best fit); *tag: the
 * position the clock gave it. A slot taken just before its plan retires stays that
 * plan's: the caller recorded which plan. */
static uint32_t serve_alloc(uint64_t size, uint64_t *off, uint32_t *tag) {
  pa_tick_t t = pa_clock_alloc(&fr.clock, size);
  uint32_t slot = PA_PLAN_NONE;
  for (uint32_t i = 0; i + 1 < t.n; i++) /* first: the frees it skips make their slots overdue before the check */
    pa_plan_tick(fr.plan, (t.from + i) % pa_plan_period(fr.plan));
  bool around = fr.events < fr.around_until && pa_online_intruders() > 0, detoured = false;
  if (t.at != PA_CLOCK_OFF && !t.late) slot = pa_plan_take(fr.plan, t.at, size, around, off, &detoured);
  if (slot != PA_PLAN_NONE && pa_online_intruders() && pa_online_intrudes(fr.plan_off + *off, fr.plan_off + *off + size))
    pa_plan_give(fr.plan, slot), slot = PA_PLAN_NONE, pa_stats.intruded++; /* the recording's buffer is still there */
  pa_stats.detoured += slot != PA_PLAN_NONE && detoured;
  *tag = t.at;
  fr.off_count += t.at == PA_CLOCK_OFF;
  follow(&t);
  return slot;
}

/* A buffer was freed while serving (its slot, if any, given back); the position it took. */
static uint32_t serve_free(uint32_t tag) {
  pa_tick_t t = pa_clock_free(&fr.clock, tag);
  follow(&t);
  return t.at;
}

/* ---- recording and planning ---------------------------------------------------------------- */

/* The period position a buffer made at event ev has, by the plan's period (PA_CLOCK_OFF
 * where the plan allocates no such size there): from the served clock's start on, as it
 * started; before, as the cut counts. The recording's events count as the served clock
 * does: a free it could not log counted none. */
static uint32_t tag_of(uint64_t ev, uint64_t size) {
  uint64_t period = pa_plan_period(fr.plan), start = ev >= fr.serve_from ? fr.serve_base : fr.cut_event + 1 - period;
  return pa_period_tag(pa_plan_period_of(fr.plan), ev, start, size);
}

/* The position the period is at by the cut's count: the events since it all the plan's. */
static uint32_t cut_pos(uint64_t period) { return (uint32_t)((fr.events - (fr.cut_event + 1 - period)) % period); }

/* A buffer best fit made in the period the plan starts serving in, before it served: a
 * new length's first ones, made while the program's last plan still served and missed
 * them (the recording beside it starts later), are its buffers at their positions.
 * Untagged, they lay in its range through the period as buffers of no position (torch_
 * stream seed 313, lengths 64 and 128: the kept 128 plan's detours found no layout
 * around them, and 30 slots went to best fit). */
static bool made_before(const pa_rec_t *r) {
  return !r->plan && r->born < fr.serve_from && r->born + pa_plan_period(fr.plan) >= fr.serve_base;
}

/* A buffer of this recording's tag: where the clock that caught up placed it, if made
 * after the cut and so followed; else by the cut. */
static uint32_t live_tag(const pa_rec_t *r) {
  if (r->gen != fr.gen) return made_before(r) ? tag_of(r->born, r->size) : PA_CLOCK_OFF;
  uint64_t j = fr.caught && r->id != UINT32_MAX && r->id < pa_log.nalloc ? pa_log.alloc_pos[r->id] : 0;
  return fr.caught && j > fr.log_cut && j < pa_log.nev ? fr.caught[j - fr.log_cut - 1] : tag_of(r->born, r->size);
}

/* The buffers this recording made know their position when its plan starts: their frees
 * (a step's gradients freed at the next one's zero_grad) are the plan's events too. */
static void tag_live(void) {
  pa_rec_t *r, *tmp;
  HASH_ITER(hh, fr.live, r, tmp) r->tag = live_tag(r);
}

/* Serves p from the next event on, at off in the pool (its claimed range). */
static void serve(pa_plan_t *p, uint64_t off, uint32_t pos) {
  uint64_t period = pa_plan_period(p);
  pa_match_free(&fr.own);
  fr.plan = p, fr.plan_off = off, fr.off_run = fr.on_run = fr.off_count = 0, fr.around_until = 0;
  fr.open = fr.open_due = fr.close_due = false;
  fr.phase = SERVE;
  pa_pool_favour(off, pa_plan_pool(p));
  pa_stats.served_periods = pa_stats.timed_periods = pa_stats.served_ns = 0, fr.period_mark = 0;
  pa_swap_served_reset(); /* the served phase's numbers are this plan's */
  fr.served_at = fr.events;
  fr.serve_from = fr.events; /* at once, mid-period: where the recording's buffers lie, the slots wait (intruders) */
  fr.serve_base = fr.events + period - pos % period;
  pa_clock_start(&fr.clock, pa_plan_period_of(p), pos);
  pa_plan_slots_t slots;
  pa_plan_slots(p, &slots);
  if (pa_plan_sched(p)) pa_sched_place(pa_plan_sched(p), &slots, off, pa_limit_page());
  pa_budget_schedule(pa_plan_sched(p), &slots, off, pa_ktime_ns(), pa_ktime_iter_ns()); /* positioned by the first served event */
  tag_live();
  pa_stats.period = period, pa_stats.plan_pool = pa_plan_own(p);
  pa_stats.maxlive_iter = pa_plan_maxlive(p), pa_stats.plan_buffers = pa_plan_buffers(p);
}

/* Where the plan's range goes: the obstacles are what stays (buffers older than the
 * recorded period, kept plans' ranges); the recording's last buffers may lie under it
 * (they leave within a period). Among the gaps, the start whose range maps the fewest
 * pages anew (freed pages stay mapped: each one more is the peak's), then needs the
 * fewest of its own (right after an obstacle it shares that obstacle's last page): a
 * page mapped anew takes an idle page's handle (an unmap and a map) or new memory. GPT's
 * replay: 9,809 + 5,475 maps and unmaps, 9,845 + 5,511 by own pages alone. What stays
 * is the holes between the obstacles (torch_stream exact: 18 pages at the placement,
 * 1.087 x its live peak): an anchored plan (below) fills them where it covers fewer. */
typedef pa_extent_t span_t;

static int span_cmp(const void *a, const void *b) {
  const span_t *x = a, *y = b;
  return (x->lo > y->lo) - (x->lo < y->lo);
}

/* The record's buffer stays (a plan's range goes around it): older than the period the
 * plan was cut from (before: its first event). Not by its recording: a kept plan served
 * again starts its period before the recording that follows the one it left, and the
 * other length's first buffers, made in it, go within it (intruders, not obstacles that
 * pushed its range beside the weights' holes: bench-lengths' rows of several lengths
 * 1.0765 -> 1.0712 x live). */
static bool stays(const pa_rec_t *r, uint64_t before) { return r->born < before; }

/* A buffer of a plan the program left: it goes within the iteration the program went on
 * to, and a range may lie over it (it intrudes) with its pages. */
static bool passing(const pa_rec_t *r) { return r->plan && r->plan != fr.plan; }

static uint64_t period_start(uint64_t period) { return fr.cut_event + 1 > period ? fr.cut_event + 1 - period : 0; }

/* r, made at p's position t a period ago, outlived that position's slot (and the clock's
 * window besides): it is not that period's, and stays. PyTorch's optimizer state, made
 * in the first step where the step makes buffers of its size: taken for the step's, it
 * let ResNet-50's range lie over it (1.021 -> 1.036 x live without this). */
static bool overdue(const pa_rec_t *r, const pa_plan_t *p, uint32_t t) {
  pa_plan_slots_t v;
  pa_plan_slots(p, &v);
  uint32_t k = v.slot_at[t];
  if (k == PA_PLAN_NONE) return false;
  uint64_t life = (v.free_at[k] + v.period - t) % v.period;
  return r->born + life + PA_CLOCK_WINDOW < fr.events;
}

/* A buffer made in the period before p's current one where p makes one of its size: that
 * period's, which p's clock frees (a length the program went back to: its first
 * allocation, a few events before its kept plan's period starts, kept the plan from
 * the pool's start; bench-lengths' 48 rows of several lengths 1.0602 -> 1.0499 x live,
 * stress-streams 1.0451 -> 1.0391). */
static bool last_periods(const pa_rec_t *r, const pa_plan_t *p, uint64_t before) {
  if (r->born >= before || r->born + pa_plan_period(p) < before) return false;
  uint32_t t = pa_period_tag(pa_plan_period_of(p), r->born, before, r->size);
  return t != PA_CLOCK_OFF && !overdue(r, p, t);
}

/* What p's range goes around: buffers that stay through its period. */
static bool blocks(const pa_rec_t *r, const pa_plan_t *p, uint64_t before) {
  return stays(r, before) && !passing(r) && !last_periods(r, p, before);
}

static size_t obstacles(span_t *o, size_t cap, const pa_plan_t *p) {
  size_t n = 0;
  uint64_t before = period_start(pa_plan_period(p));
  pa_rec_t *r, *tmp;
  HASH_ITER(hh, fr.live, r, tmp) if (n < cap && blocks(r, p, before)) o[n++] = (span_t){r->off, r->off + r->size};
  for (size_t i = 0; i < sizeof fr.kept / sizeof *fr.kept; i++)
    if (fr.kept[i].plan && fr.kept[i].placed && n < cap) o[n++] = (span_t){fr.kept[i].off, fr.kept[i].off + range_size(fr.kept[i].plan)};
  qsort(o, n, sizeof *o, span_cmp);
  return n;
}

/* Pages [s, s + size) maps beyond those of the obstacles ending at a and starting at b. */
static uint64_t own_pages(uint64_t s, uint64_t size, uint64_t a, uint64_t b) {
  uint64_t page = pa_pool_page(), first = s / page, last = (s + size - 1) / page;
  uint64_t shared = (a % page && (a - 1) / page == first) + (b % page && b / page == last && b < pa_pool_size());
  return last - first + 1 - (shared > last - first + 1 ? last - first + 1 : shared);
}

typedef struct place_s { uint64_t size, a, b, best, cost; } place_t;

/* new: the range's pages not mapped now (pa_pool_unmapped's count). */
static void consider(place_t *pl, uint64_t s, uint64_t new) {
  if (s < pl->a || s + pl->size > pl->b) return;
  uint64_t c = new << 32 | own_pages(s, pl->size, pl->a, pl->b);
  if (c < pl->cost) pl->cost = c, pl->best = s;
}

static void consider_at(place_t *pl, uint64_t s) { consider(pl, s, pa_pool_unmapped(s, pl->size)); }

/* Every page start of the gap, its range's unmapped pages counted as it slides a page:
 * O(pages of the gap). */
static void slide(place_t *pl) {
  uint64_t page = pa_pool_page(), span = (pl->size + page - 1) / page;
  uint64_t s = (uint64_t)pa_align_up((int64_t)pl->a, (int64_t)page);
  if (s + pl->size > pl->b) return;
  uint64_t n = pa_pool_unmapped(s, pl->size);
  for (;; s += page) {
    consider(pl, s, n);
    if (!n || s + page + pl->size > pl->b) return;
    n = n - pa_pool_unmapped(s, 1) + pa_pool_unmapped(s + span * page, 1);
  }
}

static bool plan_start(pa_plan_t *p, uint64_t *start) {
  size_t cap = HASH_COUNT(fr.live) + sizeof fr.kept / sizeof *fr.kept;
  span_t *o = malloc((cap + 1) * sizeof *o);
  if (!o) return false;
  size_t n = obstacles(o, cap, p);
  place_t pl = {.size = range_size(p), .cost = UINT64_MAX};
  for (size_t i = 0; i <= n; i++) {
    pl.b = i < n ? o[i].lo : pa_pool_size();
    if (pl.b > pl.a && !pa_plan_paged(p)) {
      consider_at(&pl, (uint64_t)pa_align_up((int64_t)pl.a, PA_GRAIN));
      if (pl.b >= pl.size) consider_at(&pl, (pl.b - pl.size) / PA_GRAIN * PA_GRAIN);
    }
    if (pl.b > pl.a) slide(&pl);
    if (i < n && o[i].hi > pl.a) pl.a = o[i].hi;
  }
  free(o);
  *start = pl.best;
  return pl.cost != UINT64_MAX;
}

/* A kept plan none of whose buffers lives gives its range back: a plan that comes back
 * is placed again, and ranges kept idle would split the pool for the plans to come (a
 * 4 KiB plan of a pattern inside the iteration, kept in the middle, pushed the real one
 * above it). */
static void release_idle_kept(void) {
  for (size_t i = 0; i < sizeof fr.kept / sizeof *fr.kept; i++)
    if (fr.kept[i].plan && fr.kept[i].placed && !pa_plan_live(fr.kept[i].plan))
      unclaim(fr.kept[i].plan, fr.kept[i].off), fr.kept[i].placed = false;
}

/* ---- anchored plans: laid out at offset 0 around the buffers that stay ---------------------- */

/* The same iteration laid out again from the pool's start, with the buffers that stay as
 * fixed ones, serves instead of the plan placed beside them where it and they cover no
 * more pages: the holes best fit left between a program's weights are the plan's, and
 * its range is the recording's own mapped pages (torch_stream exact: 1.087 -> 1.040 x its
 * live peak, 166 + 52 -> 134 + 25 page maps and unmaps). */

/* A kept plan holds a range starting below top. */
static bool kept_below(uint64_t top) {
  for (size_t i = 0; i < sizeof fr.kept / sizeof *fr.kept; i++)
    if (fr.kept[i].plan && fr.kept[i].placed && fr.kept[i].off < top) return true;
  return false;
}

/* Placed at 0 now: every buffer that stays in its range is one it was laid out around,
 * and no kept plan holds a range there (the recording's last buffers may lie under it:
 * they intrude, as under any plan). Nor does one made in the period before its own: a
 * buffer the last length held across its step (a loss, an input), in a hole of the range
 * best fit found, is gone within a step, and its slots go to best fit till then
 * (stress-streams #7: the 256 length's kept plan went beside everything at its first
 * return for a 256-byte buffer, 1.0566 -> 1.0273 x live; #15 1.0329 -> 1.0143). */
static bool anchor_fits(const pa_plan_t *p) {
  uint64_t top = range_size((pa_plan_t *)p), before = period_start(pa_plan_period(p));
  if (kept_below(top)) return false;
  pa_rec_t *r, *tmp;
  HASH_ITER(hh, fr.live, r, tmp)
    if (r->off < top && blocks(r, p, before) && r->born + pa_plan_period(p) < before && !pa_plan_anchor_is(p, r->off, r->size))
      return false;
  return true;
}

/* The recording's last buffers, live now, are the anchored plan's slots at the positions
 * they were made at: each slot keeps its buffer's offset, so the first served period
 * finds them where its layout has them (else they lie under the range and the slots
 * there go to best fit: 0.3-0.7 % of the allocations fewer served). */
static void live_in_place(pa_plan_t *a) {
  uint64_t period = pa_plan_period(a), before = period_start(period);
  pa_rec_t *r, *tmp;
  HASH_ITER(hh, fr.live, r, tmp) {
    if (stays(r, before)) continue;
    uint32_t t = pa_period_tag(pa_plan_period_of(a), r->born, before, r->size);
    if (t != PA_CLOCK_OFF) pa_plan_in_place(a, t, r->off, r->size);
  }
}

/* Sorts the spans and joins those that touch: best fit lays a program's weights side by
 * side, and each fixed buffer is one more range every slot's placement sorts (ResNet-50's
 * 485 took the layouts 0.7 s). */
static size_t merge_touching(span_t *o, size_t n) {
  size_t k = 0;
  qsort(o, n, sizeof *o, span_cmp);
  for (size_t i = 0; i < n; i++)
    if (k && o[i].lo <= o[k - 1].hi) o[k - 1].hi = o[i].hi > o[k - 1].hi ? o[i].hi : o[k - 1].hi;
    else o[k++] = o[i];
  return k;
}

/* The anchored alternative of p (pa_mu held, fr.cut_event set): the same iteration built
 * again with the buffers that stay as fixed ones. Without a budget (its schedule places
 * slots by page). For every length of a program of several: a later length placed
 * beside the weights left their holes to no plan (torch_stream seed 342, 12 layers: the
 * 192 length's range 7 pages above its first's; scripts/bench-lengths.sh's 24 rows of
 * several lengths 1.0706 -> 1.0680 x live). Once the program left a plan, its range is
 * open (below), so no kept plan holds the pool's start. */
static void anchor_alt(pa_plan_t *p, uint64_t iteration, uint64_t cut) {
  if (pa_limit_on() || pa_opt.v[PA_OPT_MODE].i == PA_MODE_RECORD || !pa_opt.v[PA_OPT_ANCHOR].i) return;
  size_t n = 0, cap = HASH_COUNT(fr.live) + 1;
  span_t *o = malloc(cap * sizeof *o);
  uint64_t before = period_start(pa_plan_period(p));
  pa_plan_t *a = o ? pa_plan_build(iteration, cut) : NULL;
  pa_rec_t *r, *tmp;
  HASH_ITER(hh, fr.live, r, tmp) if (a && stays(r, before)) o[n++] = (span_t){r->off, r->off + r->size};
  n = merge_touching(o, n);
  if (a && pa_plan_anchor(a, o, n)) live_in_place(a), pa_plan_set_alt(p, a), a = NULL;
  pa_plan_free(a);
  free(o);
}

/* Pages the range [lo, hi) and the buffers that stay (o, sorted) cover together: what
 * stays mapped once the served phase gives the idle ones back. */
static uint64_t covered(const span_t *o, size_t n, uint64_t lo, uint64_t hi) {
  uint64_t page = pa_pool_page(), count = 0, end = 0; /* end: one past the last page counted */
  bool range = hi > lo;
  for (size_t i = 0; i < n || range;) {
    bool take_range = range && (i == n || lo <= o[i].lo);
    uint64_t a = take_range ? lo : o[i].lo, b = take_range ? hi : o[i].hi;
    take_range ? (void)(range = false) : (void)i++;
    uint64_t first = a / page, last = (b - 1) / page + 1, from = first > end ? first : end;
    if (b > a && last > from) count += last - from, end = last;
  }
  return count;
}

/* The pages p's layout (plain: that one) lies above max-live. */
static uint64_t pages_over(const pa_plan_t *p, bool plain) {
  uint64_t page = pa_pool_page();
  return (pa_plan_over(p, plain) + page - 1) / page;
}

/* Pages the anchored plan may cover beyond the placed one: one per PA_HANDOVER_PAGES of
 * the placed range's pages not mapped now. Each of those costs the hand-over a map, an
 * access and, for the recording's page it takes the handle of, an unmap (ResNet-50's
 * placed plan: 1,912 maps and 1,914 unmaps in its first two periods, 5 % of the run's
 * allocations; its anchored layout covers 1-2 pages more, 0.1 %, and serves on the
 * recording's own pages). */
#define PA_HANDOVER_PAGES 128

/* The anchored plan a, when its range and the buffers that stay cover no more pages than
 * p's placed beside them, but for the hand-over's allowance (its range over the
 * recording's own pages), each counted with the pages its layout lies above max-live:
 * the greedy orders around fixed buffers leave 5-10 % there, which a plan pays wherever
 * it is placed again and at each shape change (torch_stream 32,64,64,64: 1 page fewer at
 * its placement, 2 more above max-live, its whole-run peak 1.087 -> 1.116 x live without
 * this). */
static bool anchor_better(pa_plan_t *a, pa_plan_t *p) {
  if (!anchor_fits(a)) return false;
  size_t cap = HASH_COUNT(fr.live) + sizeof fr.kept / sizeof *fr.kept;
  span_t *o = malloc((cap + 1) * sizeof *o);
  uint64_t start = 0, placed = UINT64_MAX, fresh = 0;
  if (!o) return false;
  size_t n = obstacles(o, cap, p);
  if (plan_start(p, &start)) placed = covered(o, n, start, start + range_size(p)) + pages_over(p, false);
  if (placed != UINT64_MAX) fresh = pa_pool_unmapped(start, range_size(p));
  uint64_t in_place = covered(o, n, 0, range_size(a)) + pages_over(a, false);
  uint64_t plain = covered(o, n, 0, pa_plan_plain_range(a)) + pages_over(a, true);
  uint64_t allowed = placed + fresh / PA_HANDOVER_PAGES; /* fresh 0 where no place was found */
  free(o);
  if (pa_opt.v[PA_OPT_VERBOSE].i)
    pa_info("plan's pages, with its layout's above max-live: %llu placed beside the buffers that stay (%llu of its "
            "range's to map anew), %llu laid out around them, %llu so with the recording's last buffers where they lie",
            (unsigned long long)placed, (unsigned long long)fresh, (unsigned long long)plain,
            (unsigned long long)in_place);
  if (in_place <= allowed) return true;
  if (plain > allowed) return false;
  pa_plan_plain(a); /* fewer pages, the first period's slots under those buffers to best fit */
  return true;
}

/* Chooses the plan's range, and moves its slots of a page or more onto the pages there
 * where the layout has room (planner/snap.c); false when the pool has no room for it. */
static bool place_plan(pa_plan_t *p, uint64_t *off) {
  release_idle_kept();
  if (pa_plan_anchored(p)) {
    if (anchor_fits(p)) return *off = 0, true;
    if (!pa_plan_unanchor(p)) return false;
    pa_timeline_mark("kept plan: what stays moved, its own layout placed");
  }
  if (!plan_start(p, off)) return false;
  size_t saved = pa_plan_snap(p, *off, pa_pool_page());
  if (pa_opt.v[PA_OPT_VERBOSE].i && saved)
    pa_info("plan of %llu events placed at pool offset %llu: its slots span %zu fewer pages on page starts",
            (unsigned long long)pa_plan_period(p), (unsigned long long)*off, saved);
  return true;
}

/* The recording's buffers the claim leaves in a placed plan's range: its first period's
 * slots that meet them get detours in the range (torch_stream with a logging buffer every
 * 5th step: 18 of its 26 allocations off the plan after the warm-up were such slots, sent
 * to best fit). Not under an anchored plan laid out with them where they lie: there its
 * detours' pages come from the idle ones in its range the hand-over maps again (ResNet-50:
 * page maps and unmaps 2.2k + 0.7k -> 2.9k + 1.4k, mapped peak 1.011 -> 1.023 x live);
 * but under one laid out without them (pa_plan_plain), whose slots lie under them by
 * choice (torch_stream seed 57: 73 to best fit, 89.5 % served and 1.040 x live; so 90.0 %
 * and 1.028); and under a kept one served again, whose in-place slots are the recording's
 * before last: what lies in its range now is the last length's buffers and the new one's
 * first (bench-lengths' rows of several lengths 1.0665 -> 1.0601 x live with the next two
 * and plan.c's own slots); nor under a budget, whose schedule places slots by page. A
 * buffer where an in-place slot is fixed is that slot's: listed again, it made the layout
 * around them invalid (two fixed buffers in one place), and no slot got a detour. */
static void detour_intruders(void) {
  pa_plan_detours(fr.plan, NULL, 0, 0); /* a kept plan's from its last time went around others */
  if (!pa_online_intruders() || pa_limit_on() || (pa_plan_anchored(fr.plan) && !pa_plan_plain_serves(fr.plan) && !fr.again)) return;
  uint64_t lo = fr.plan_off, hi = lo + range_size(fr.plan), before = period_start(pa_plan_period(fr.plan));
  size_t n = 0;
  pa_obstacle_t *o = malloc((HASH_COUNT(fr.live) + 1) * sizeof *o);
  pa_rec_t *r, *tmp;
  HASH_ITER(hh, fr.live, r, tmp)
    if (o && r->off < hi && r->off + r->size > lo && r->plan != fr.plan && !blocks(r, fr.plan, before) &&
        !pa_plan_anchor_is(fr.plan, r->off, r->size) && !pa_plan_in_place_is(fr.plan, r->off, r->size)) /* in its trace */
      o[n++] = (pa_obstacle_t){r->off - lo, r->size, r->tag};
  size_t given = o ? pa_plan_detours(fr.plan, o, n, fr.clock.pos) : 0;
  fr.around_until = fr.events + pa_plan_period(fr.plan);
  if (pa_opt.v[PA_OPT_VERBOSE].i)
    pa_info("the recording's last %zu buffers under the plan's range: %zu of its slots go around them in its first period", n, given);
  free(o);
}

/* ---- the range opened to best fit while the program is off its plan ------------------------ */

/* The served plan's live buffers become best fit's used blocks, each taken out of the
 * claim, so that the range can go back to best fit around them; false, nothing changed,
 * without memory. */
static bool own_as_blocks(void) {
  size_t n = 0, cap = HASH_COUNT(fr.live);
  pa_rec_t **took = malloc((cap ? cap : 1) * sizeof *took), *r, *tmp;
  bool ok = took != NULL;
  HASH_ITER(hh, fr.live, r, tmp) {
    if (!ok || r->plan != fr.plan || r->node != PA_NIL) continue;
    if (hold(r, pa_online_take(r->off, r->size))) took[n++] = r;
    else ok = false;
  }
  for (size_t i = 0; !ok && i < n; i++) pa_online_free(took[i]->node), took[i]->node = PA_NIL;
  free(took);
  return ok;
}

static void open_range(void) {
  fr.open_due = false;
  if (fr.open || fr.claim_due || fr.phase != SERVE || pa_limit_on() || !own_as_blocks()) return;
  pa_online_unclaim(fr.plan_off, fr.plan_off + range_size(fr.plan));
  fr.open = true;
  pa_timeline_mark("off the plan: its range opened to best fit");
}

static void close_range(void) {
  fr.close_due = false;
  if (!fr.open || fr.phase != SERVE || !pa_online_claim(fr.plan_off, fr.plan_off + range_size(fr.plan))) return;
  fr.open = false, fr.off_count = 0;
  detour_intruders();
  pa_timeline_mark("back on the plan: its range claimed again");
}

/* Called as an event starts (pa_mu held): what the last one decided about the range. */
static void range_start(void) {
  if (fr.open_due) open_range();
  if (fr.close_due) close_range();
}

/* Claimed at the first served event, not when the plan is placed: the rest of the
 * iteration then in progress may still use the range (best fit, on pages already
 * mapped), and most of it is gone by the period start. What remains, intrudes. */
static bool claim_range(void) {
  fr.claim_due = false;
  if (pa_online_claim(fr.plan_off, fr.plan_off + range_size(fr.plan))) return detour_intruders(), true;
  pa_warn("no memory to claim the plan's address range: serving best fit from now on");
  pa_budget_schedule(NULL, NULL, 0, 0, 0);
  fr.phase = IDLE;
  return false;
}

/* Where new plan p's period is now, by following the log's events since its cut (their
 * tags into fr.caught): a plan laid out on the planner's thread comes thousands of events
 * after its cut, and each logging buffer made meanwhile shifted the period by two events
 * (torch_stream seed 245, 13 layers, a logging buffer every 5th step: three of them, the
 * clock 6 events ahead, the recording's buffers' frees off the plan, 1 divergent period
 * and 3-18 % served). By the cut's count where the log did not take every event since. */
static uint32_t caught_up(pa_plan_t *p) {
  uint64_t since = pa_log.nev - 1 - fr.log_cut, period = pa_plan_period(p);
  if (fr.log_cut >= pa_log.nev || since != fr.events - 1 - fr.cut_event || !since) return cut_pos(period);
  if (!(fr.caught = malloc(since * sizeof *fr.caught))) return cut_pos(period);
  return pa_clock_catch_up(pa_plan_period_of(p), &pa_log, fr.log_cut + 1, fr.caught);
}

static void start(pa_plan_t *p, bool ok);

/* a serves in p's place; p's layout goes with it. */
static pa_plan_t *anchored_for(pa_plan_t *a, pa_plan_t *p) {
  pa_plan_keep_normal(a, p);
  pa_plan_free(p);
  return a;
}

static void install(pa_plan_t *p, bool ok) {
  bool record_only = pa_opt.v[PA_OPT_MODE].i == PA_MODE_RECORD;
  pa_plan_t *a = pa_plan_take_alt(p);
  if (a && !record_only && ok && anchor_better(a, p)) p = anchored_for(a, p);
  else if (a && !record_only && !ok) pa_plan_free(p), p = a, ok = true;
  else pa_plan_free(a);
  start(p, ok);
}

static void start(pa_plan_t *p, bool ok) {
  uint64_t off = 0;
  bool record_only = pa_opt.v[PA_OPT_MODE].i == PA_MODE_RECORD;
  pa_plan_polished(p); /* an anchored plan that serves: its polished layout (a placed one has none) */
  if (!ok || record_only || !place_plan(p, &off)) {
    fr.phase = ok && record_only ? RECORD : IDLE;
    if (fr.plan) pa_plan_free(fr.plan);
    fr.plan = p; /* kept for the dump */
    return;
  }
  serve(p, off, caught_up(p));
  fr.again = false;
  free(fr.caught), fr.caught = NULL;
  fr.claim_due = true;
  pa_stats.plans++;
  pa_timeline_mark("plan: %u buffers in %llu bytes (max-live %llu)%s", pa_plan_buffers(p),
                   (unsigned long long)pa_plan_own(p), (unsigned long long)pa_plan_maxlive(p),
                   pa_plan_anchored(p) ? " at the pool start around the buffers that stay" : "");
  if (pa_opt.v[PA_OPT_VERBOSE].i)
    pa_info("iteration of %llu events found: %u buffers planned in %llu bytes (max-live %llu), "
            "persistent %llu bytes%s", (unsigned long long)pa_plan_period(p), pa_plan_buffers(p),
            (unsigned long long)pa_plan_own(p), (unsigned long long)pa_plan_maxlive(p),
            (unsigned long long)pa_stats.persistent,
            pa_plan_anchored(p) ? ", laid out from the pool's start around the buffers that stay" : "");
}

/* The iteration found is one the program ran before: its kept plan serves it again, no
 * planning. true if so (pa_mu held). */
static bool serve_kept(pa_plan_t *p) {
  uint64_t off;
  bool placed;
  uint32_t turn;
  pa_plan_t *k = kept_like(p, &off, &placed, &turn);
  if (!k) return false;
  if (!placed) plain_again(k);
  if (!placed && !place_plan(k, &off)) {
    pa_plan_free(k);
    return false;
  }
  /* k's period starts turn events before p's: its clock, and the tags of the buffers
   * live now, count from there (later by period - turn, never before event 0) */
  if (turn) fr.cut_event += pa_plan_period(k) - turn;
  pa_plan_set_sched(k, pa_plan_take_sched(p)); /* the fixed buffers are today's */
  pa_plan_free(p);
  serve_again(k, off, placed, cut_pos(pa_plan_period(k)));
  pa_timeline_mark("kept plan of %llu events serves again", (unsigned long long)pa_plan_period(k));
  if (pa_opt.v[PA_OPT_VERBOSE].i)
    pa_info("iteration of %llu events is one planned before: serving its kept plan (cut %u events later)",
            (unsigned long long)pa_plan_period(k), turn);
  return true;
}

/* Under a budget, the served phase's victims come from the iteration's access trace:
 * every buffer's uses, the plan's slots and the buffers live through it at one address. */
static void schedule(pa_plan_t *p, uint64_t start) {
  if (!pa_limit_on()) return;
  pa_plan_slots_t slots;
  pa_plan_slots(p, &slots);
  pa_sched_t *s = pa_sched_new(&slots, start);
  pa_rec_t *r, *tmp;
  bool ok = s != NULL;
  HASH_ITER(hh, fr.live, r, tmp) {
    if (!ok) break;
    if (r->gen != fr.gen) ok = r->plan || pa_sched_add_fixed(s, pa_access_old(r->off), r->off, r->size);
    else if (r->id < pa_log.nalloc && pa_log.alloc_pos[r->id] < start) ok = pa_sched_add_fixed(s, r->id, r->off, r->size);
  }
  if (ok && pa_sched_finish(s)) return pa_plan_set_sched(p, s);
  pa_warn("no memory for the budget's schedule: the reactive victim score serves");
  pa_sched_free(s);
}

/* A plan over two iterations needs the two before its cut to repeat: where the cut
 * with the fewest bytes live reaches into the warm-up, a later one in the same period
 * does (the finder saw the last two periods repeat), not a period later: torch_stream's
 * exact stream is found at event 1197, not 1523, and 90.2 % served, not 87.7 %. */
static bool ready_later(uint64_t period, uint64_t *cut) {
  uint64_t later = pa_record_later_cut(period, *cut);
  if (later == PA_NO_EVENT || !pa_plan_ready(period, later)) return false;
  return *cut = later, true;
}

/* How long a plan may search for a layout on the planner's thread, best fit serving the
 * program meanwhile: PA_SEARCH_PERIODS of its iterations at the recording's pace, at
 * least PA_SEARCH_LEAST. torch_stream seed 247 (39 layers, 2,142 events a step, a
 * logging buffer every 4th): PLANALLOC_PLAN_TIME's 10 s searched past the replay's end
 * for 0.9 % of max-live, and no plan served; on the GPU a step of ResNet-50 takes 80 ms.
 * Not under a budget, where the searched layout moves fewer bytes every period
 * (trace_replay at 30 %: 59 MiB an iteration against the quick layout's 120, plan.c). */
#define PA_SEARCH_PERIODS 2
#define PA_SEARCH_LEAST 0.02
static double search_time(uint64_t period) {
  double t = fr.rec_t0 > 0 && fr.events > fr.rec_ev0 ? (pa_now() - fr.rec_t0) / (double)(fr.events - fr.rec_ev0) : 0;
  double s = PA_SEARCH_PERIODS * t * (double)period;
  return s > PA_SEARCH_LEAST ? s : PA_SEARCH_LEAST;
}

/* Found the iteration: build its trace now (pa_mu held); the caller plans it unlocked. */
static pa_plan_t *detect(uint64_t ev) {
  if (!fr.rec_t0) fr.rec_t0 = pa_now(), fr.rec_ev0 = ev; /* the recording's pace: search_time */
  if (fr.plan && pa_opt.v[PA_OPT_MODE].i == PA_MODE_RECORD) return NULL; /* planned once: log on */
  if (record_kept() || pa_record_events() < fr.retry_at) return NULL;
  uint64_t cut, period = pa_record_period(fr.min_period, &cut);
  if (!period) {
    if (pa_record_full()) {
      pa_warn("no repeating iteration in %llu allocation events: serving them best fit",
              (unsigned long long)pa_record_events());
      fr.phase = IDLE;
    }
    return NULL;
  }
  if (!pa_plan_ready(period, cut) && !ready_later(period, &cut))
    return fr.retry_at = pa_record_events() + period, NULL; /* O(period) a try */
  pa_plan_t *p = pa_plan_build(period, cut);
  if (!p) { /* a pattern inside the iteration whose buffers outlive it: look further */
    fr.min_period = period + 1;
    return NULL;
  }
  uint64_t iteration = period;
  period = pa_plan_period(p); /* one iteration or two */
  schedule(p, cut + 1 - period);
  pa_timeline_mark("iteration found: %llu events%s", (unsigned long long)iteration,
                   period > iteration ? " (planned over two: a buffer outlives one)" : "");
  fr.cut_event = ev - (pa_record_events() - 1 - cut), fr.log_cut = cut;
  fr.phase = PLANNING;
  /* live at the cut, by what the program holds now minus what the log saw since */
  pa_stats.persistent = pa_stats.live - (pa_log.live[pa_log.nev - 1] - pa_log.live[cut]) - pa_plan_wrap_bytes(p);
  if (pa_opt.v[PA_OPT_MODE].i != PA_MODE_RECORD && serve_kept(p)) return NULL;
  anchor_alt(p, iteration, cut);
  if (!pa_limit_on()) pa_plan_set_search(p, search_time(period));
  return p;
}

static void install_locked(pa_plan_t *p, bool ok) {
  pthread_mutex_lock(&pa_mu);
  install(p, ok);
  pthread_mutex_unlock(&pa_mu);
}

/* p's anchored alternative laid out (unlocked: the plans are this thread's own until
 * installed). */
static void install_with_alt(pa_plan_t *p, bool ok) {
  pa_plan_t *a = pa_plan_take_alt(p);
  if (a && (pa_plan_pool(a) || pa_plan_layout_anchored(a))) pa_plan_set_alt(p, a); /* laid out by anchored_first */
  else pa_plan_free(a);
  install_locked(p, ok);
}

static void *plan_unlocked(void *arg) {
  pa_plan_t *p = arg;
  pa_slot_set(pa_plan_device(p)); /* on a thread of its own: the device it was recorded on */
  install_with_alt(p, pa_plan_layout(p, false));
  return NULL;
}

/* Where the quick layout is not tight, the anchored alternative is laid out here first:
 * if it beats even the best layout a search could find for p (max-live's pages), it
 * serves now, with p's quick layout as its normal one, and nothing searches. torch_stream
 * seeds 341, 370 and 390 (65, 68 and 58 layers, several lengths): the search and the
 * alternative took 40-50 ms on the planner's thread, 10,000-20,000 of a replay's events
 * served best fit, and the anchored alternative served in the end (65-79 % -> 88-91 %
 * served). true if it serves; else it stays p's alternative, laid out. */
static bool anchored_first(pa_plan_t *p) {
  pa_plan_t *a = pa_plan_take_alt(p);
  if (!a || !pa_plan_rough_pool(p) || pa_opt.v[PA_OPT_MODE].i == PA_MODE_RECORD || !pa_plan_layout_anchored(a)) {
    if (a) pa_plan_free(a);
    return false;
  }
  pthread_mutex_lock(&pa_mu);
  uint64_t rough = pa_plan_set_pool(p, pa_plan_maxlive(p));
  bool now = anchor_better(a, p);
  pa_plan_set_pool(p, rough);
  if (now && pa_plan_rough(p)) start(anchored_for(a, p), true);
  else pa_plan_set_alt(p, a), now = false;
  pthread_mutex_unlock(&pa_mu);
  return now;
}

/* A layout found on the allocating thread serves from its next allocation. The planner's
 * thread took 30-40 ms on a loaded 2-core machine for ResNet-50's 1,806 events, whose
 * heuristics reach max-live in 1-3 ms: a step of the program's lost to best fit, where
 * blocking one allocation for those milliseconds costs it less. The quick layout runs
 * heuristics whose summed cost the trace bounds (plan.c); the slot cap bounds the other
 * algorithms' (PLANALLOC_ALGO=megengine: time-ordered best fit, O(n log n)). */
#define PA_PLAN_INLINE_SLOTS 8192

/* The planner searches for up to PLANALLOC_PLAN_TIME seconds on a thread of its own where
 * the quick layout on this thread is not within 0.5 % of max-live, nor a page over that
 * (pa_plan_rough_close), nor beaten by the anchored alternative; best fit serves until
 * the plan is installed. With no search time (the heuristics only), or if no thread can
 * be made, on this thread. */
static void plan_async(pa_plan_t *p) {
  pthread_t th;
  pthread_attr_t attr;
  bool made = pa_opt.v[PA_OPT_PLAN_TIME].seconds > 0;
  if (made && pa_plan_buffers(p) <= PA_PLAN_INLINE_SLOTS && pa_plan_layout(p, true))
    return install_with_alt(p, true);
  if (made && !pa_limit_on() && anchored_first(p)) return;
  if (made && pa_plan_rough_close(p) && pa_plan_rough(p)) return install_with_alt(p, true);
  if (made && (made = !pthread_attr_init(&attr))) {
    made = !pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED) && !pthread_create(&th, &attr, plan_unlocked, p);
    pthread_attr_destroy(&attr);
  }
  if (!made) plan_unlocked(p);
}

/* ---- the front ------------------------------------------------------------------------------ */

static pa_plan_t *drop(pa_rec_t *r);

static void count_live(int64_t delta) {
  pa_stats.live += (uint64_t)delta;
  if (pa_stats.live > pa_stats.live_peak) pa_stats.live_peak = pa_stats.live;
}

/* The event log's view of what the clock expected before an event (pa_mu held). */
static void expect(pa_plan_t *plan) {
  const pa_period_t *per = pa_plan_period_of(plan);
  uint32_t at = fr.clock.pos;
  fr.last.expected = at, fr.last.want_size = per->size[at], fr.last.want_mate = per->mate[at];
}

/* An allocation off the plan while it serves, one among allocations it serves (a
 * logging buffer every few steps), goes where no slot lies for the next PA_WINDOW_PART
 * of a period, in the plan's range on the pages mapped for it, not to best fit beside
 * the range, where it maps a page more at the step's peak (torch_stream seed 123: 41
 * pages -> 40, seed 24: 1.026 -> 1.017 x live, seed 79: 1.010 -> 1.005). A slot that
 * finds it still there goes to best fit (pa_online_intrudes). An eighth of a period
 * found fewer places (seed 123 kept its 41 pages), half or all of it none. Not under a
 * budget, whose schedule places by page, nor once the program leaves the plan (a second
 * miss in the period, a run off it, a recording beside it): a new length's buffers live
 * on there (torch_stream 32,64,64,64: 1.087 -> 1.116 x live with them in windows). */
#define PA_WINDOW_PART 4
#define PA_WINDOW_TRIES 8 /* places tried past the recording's buffers still there */

static bool window_open(void) {
  return fr.plan && fr.phase == SERVE && !fr.beside && !fr.open && fr.off_run <= 1 && fr.clock.misses <= 1 && !pa_limit_on() &&
         !fr.claim_due;
}

static bool in_window(pa_rec_t *r) {
  if (!window_open()) return false;
  uint64_t h = pa_plan_period(fr.plan) / PA_WINDOW_PART, from = 0, x;
  for (int i = 0; i < PA_WINDOW_TRIES; i++, from = x + PA_GRAIN) {
    if (!pa_plan_window(fr.plan, fr.clock.pos, r->size, h, from, &x)) return false;
    uint64_t lo = fr.plan_off + x;
    if (pa_online_intrudes(lo, lo + r->size)) continue;
    if (!hold(r, pa_online_take(lo, r->size))) return false;
    r->off = lo, pa_stats.windowed++;
    return true;
  }
  return false;
}

/* Places the allocation (pa_mu held); false when the address space is exhausted. */
static bool place(pa_rec_t *r, uint64_t ev) {
  uint64_t off;
  r->slot = PA_PLAN_NONE, r->node = PA_NIL, r->plan = NULL, r->tag = PA_CLOCK_OFF;
  pa_plan_t *plan = fr.plan;
  uint64_t base = fr.plan_off;
  bool on = serving(ev);
  if (!on && fr.phase == SERVE) r->tag = tag_of(ev, r->size); /* between the plan's install and its first period */
  fr.last.did = pa_recording() ? "record" : fr.phase == SERVE ? "fit" : "idle", fr.last.expected = PA_CLOCK_OFF;
  if (on) expect(plan);
  /* a slot where best fit may be: the range is open, or its plan retired (its period
   * ended off it) and opened it with this buffer not yet among the live ones */
  if (on && (r->slot = serve_alloc(r->size, &off, &r->tag)) != PA_PLAN_NONE && (fr.open || fr.plan != plan) &&
      !hold(r, pa_online_reserve(base + off, r->size)))
    pa_plan_give(plan, r->slot), r->slot = PA_PLAN_NONE;
  if (r->slot != PA_PLAN_NONE) {
    r->off = base + off, r->plan = plan;
    pa_stats.served++;
    fr.last.did = "plan", fr.last.pos = r->tag;
    return true;
  }
  if (on) fr.last.did = r->tag == PA_CLOCK_OFF ? "miss" : "fit";
  fr.last.pos = r->tag;
  /* under a budget, the fewest pages a launch must hold resident: mlp_train's 4 MiB
   * gradient at a 256-byte offset spanned 3 pages, and its SGD step needed 5 of the 4 a
   * 50 % budget holds */
  if (on && in_window(r)) return pa_stats.fallback++, true;
  r->node = pa_online_alloc(r->size, pa_limit_page(), &r->off);
  if (r->node == PA_NIL || !note_node(r->node, r)) return false;
  pa_stats.fallback++;
  return true;
}

/* An allocation that failed after all was none (pa_mu held). */
static void uncount(const pa_rec_t *r) {
  pa_stats.allocs--;
  pa_stats.since_served -= pa_stats.since_served > 0;
  if (r->plan) pa_stats.served--;
  else pa_stats.fallback--;
}

/* A kept plan's last buffer gone, its range goes back to best fit at once, not at the
 * next plan's placement: the program that left it records in its pages meanwhile. */
static void unplace(pa_rec_t *r) {
  if (!r->plan) return pa_online_free(r->node);
  pa_plan_give(r->plan, r->slot);
  if (r->node != PA_NIL) pa_online_free(r->node); /* made while its range was open */
  if (r->plan != fr.plan && !pa_plan_live(r->plan)) release_idle_kept();
}

/* What an allocation or free leaves to do once pa_mu is released: plan the iteration
 * it completed, give back the pages a served plan does not use. */
static void finish(pa_plan_t *todo, bool trim) {
  if (todo) pa_ktime_measure(pa_plan_period(todo)), plan_async(todo);
  if (!trim) return;
  bool wait = !pa_pool_trim();
  pthread_mutex_lock(&pa_mu);
  fr.trim_wait = wait;
  pthread_mutex_unlock(&pa_mu);
}

/* Whether idle pages are due back to the driver (pa_mu held). */
static bool take_trim(void) {
  bool due = fr.trim_due && fr.plan && fr.phase == SERVE;
  fr.trim_due = false;
  return due;
}

static pa_rec_t *find(CUdeviceptr p) {
  pa_rec_t *r;
  HASH_FIND(hh, fr.live, &p, sizeof p, r);
  return r;
}

#define MAX_WAITS 8

/* More pages than the whole budget: no eviction can make room. */
static bool beyond_budget(size_t bytes) {
  size_t page = pa_pool_page(), pages = (bytes + page - 1) / page;
  if (!pa_limit_on() || pages <= pa_limit_pages()) return false;
  char words[PA_LIMIT_WORDS];
  pa_error("a %zu-byte allocation needs %zu pages of %zu bytes, more than %s holds (%zu): out of memory", bytes,
           pages, page, pa_limit_words(words, sizeof words), pa_limit_pages());
  return true;
}

/* The new buffer's memory may still be in copies' hands: a page that was EVICTED
 * comes back with its other buffers' bytes, and a handle a victim gave up may still be
 * read by its copy out. A stream-ordered allocation's stream waits for it. cudaMalloc's
 * caller may touch the buffer on any stream once it returns, through a pointer stored
 * in device memory too: every launch after it waits for the copy on its own stream
 * (swap.c), the host does not. */
static int await_copy(const pa_copies_t *copies, CUstream stream, bool async) {
  if (async) return pa_swap_wait_each(copies, stream);
  pa_swap_owe(copies);
  return CUDA_SUCCESS;
}

/* Without a budget, pages the driver refuses to the pool (a VMM failure the plain
 * allocator may not share) leave the allocation to the driver itself: the program gets
 * its memory or the driver's own error, never ours. Said once; the stats count them. */
static int pass_to_driver(size_t bytes, int rc) {
  static atomic_bool told;
  if (!atomic_exchange(&told, true))
    pa_warn("the driver refused pages for %zu bytes (%s = %d): such allocations go to the "
            "driver directly (stats: passed to the driver)", bytes, pa_gpu_error_name(rc), rc);
  return PA_PASS;
}

/* The dead counts (dead.c) are kept while the events are logged: a free's token. */
static void dead_born(uint64_t nth) {
  if (logging()) pa_dead_born(nth);
  else fr.dead_stale = true;
}

/* r's dead count (0 unlogged), r taken out of them; those of a time unlogged are
 * counted again first (r is no longer among the live: it is born and gone). */
static uint64_t dead_gone(const pa_rec_t *r, bool log) {
  if (!log) return fr.dead_stale = true, 0;
  if (fr.dead_stale) {
    pa_rec_t *q, *tmp;
    pa_dead_reset();
    HASH_ITER(hh, fr.live, q, tmp) if (fr.allocs - q->nth <= PA_DEAD_RING) pa_dead_born(q->nth);
    fr.dead_stale = false;
  }
  uint64_t dead = pa_dead_count(r->nth, fr.allocs);
  pa_dead_gone(r->nth, fr.allocs);
  return dead;
}

/* The event just placed or dropped, to the event log (pa_mu held). */
static void log_event(char kind, CUstream s, CUdeviceptr p, uint64_t size, uint64_t site) {
  pa_logged_t e = fr.last;
  e.kind = kind, e.stream = s, e.ptr = p, e.size = size, e.site = site;
  pa_events_write(&e);
}

int pa_alloc(CUdeviceptr *dptr, size_t bytes, CUstream stream, bool async) {
  if (!dptr || !bytes || !pa_device_alloc(stream, async) || !pa_pool_init()) return PA_PASS;
  pa_device_pool_ready();
  if (beyond_budget(bytes)) return CUDA_ERROR_OUT_OF_MEMORY;
  uint64_t size = (uint64_t)pa_align_up((int64_t)bytes, PA_GRAIN);
  pa_site_t site;
  site.hash = 0, site.n = 0, site.py_line = -1;
  if (fr.phase == RECORD || fr.beside || pa_events_on()) pa_callsite(&site); /* a hint: a stale phase only costs a hash */
  pa_plan_t *todo = NULL;
  pthread_mutex_lock(&pa_mu);
  beside_start();
  range_start();
  uint64_t ev = fr.events++;
  pa_rec_t *r = new_rec();
  if (r) r->size = size, r->born = ev;
  if (!r || !place(r, ev)) {
    if (r) free_rec(r);
    pthread_mutex_unlock(&pa_mu);
    pa_error("out of pool address space for %zu bytes", bytes);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  r->ptr = pa_pool_base() + r->off, r->gen = log_gen(), r->id = UINT32_MAX;
  r->seq = pa_record_event(true, size, 0), r->nth = fr.allocs++;
  dead_born(r->nth);
  if (logging()) r->id = pa_record_alloc(size, site.hash, r->off), pa_site_note(&site), pa_ktime_event(ev);
  HASH_ADD(hh, fr.live, ptr, sizeof r->ptr, r); /* before a kept plan serves: its plan's range opens around it */
  beside_check();
  pa_shadow_alloc(r->ptr, size);
  pa_budget_track(r->off, size, r->plan && r->plan == fr.plan ? r->slot : PA_PLAN_NONE);
  bool mapped = pa_pool_acquire(r->off, size);
  pa_copies_t restored = mapped && pa_limit_on() ? pa_pool_restored(r->off, size) : (pa_copies_t){{0, 0}};
  count_live((int64_t)size);
  pa_stats.allocs++;
  pa_stats.since_served += pa_stats.served > 0;
  pa_timeline_event();
  if (pa_events_on()) log_event('a', stream, r->ptr, bytes, site.hash);
  if (fr.phase == RECORD) todo = detect(ev);
  CUdeviceptr ptr = r->ptr;
  CUevent waits[MAX_WAITS];
  size_t nwaits = pa_pending_waits(ptr, size, stream, async, waits, MAX_WAITS);
  /* memory freed stream-ordered: cudaMalloc's caller may use it on any stream, and too
   * many events are better served so too: every stream's next work follows the frees */
  if (nwaits && (!async || nwaits > MAX_WAITS)) pa_fence_raise(), nwaits = 0;
  bool trim = take_trim();
  pthread_mutex_unlock(&pa_mu);
  uint64_t t = mapped ? 0 : pa_htime_start();
  int rc = mapped ? CUDA_SUCCESS : pa_budget_map(ptr - pa_pool_base(), size, &restored);
  pa_htime_lap(PA_HT_BIRTH, t);
  bool unmapped = rc != CUDA_SUCCESS;
  if (!rc) rc = await_copy(&restored, stream, async);
  if (!rc && nwaits) rc = pa_pending_wait(waits, nwaits, stream);
  finish(todo, trim);
  if (rc) {
    pthread_mutex_lock(&pa_mu);
    pa_rec_t *gone = find(ptr);
    if (gone) uncount(gone);
    bool pass = unmapped && !pa_limit_on();
    pa_stats.passed += pass;
    pa_plan_t *later = gone ? drop(gone) : NULL;
    pthread_mutex_unlock(&pa_mu);
    finish(later, false);
    if (pass) return pass_to_driver(bytes, rc);
    char words[PA_LIMIT_WORDS];
    if (pa_limit_on())
      pa_error("no room for %zu bytes within %s: nothing else can leave the device (%s = %d): out of memory",
               bytes, pa_limit_words(words, sizeof words), pa_gpu_error_name(rc), rc);
    else
      pa_error("cannot map or order device memory for %zu bytes (%s = %d)", bytes, pa_gpu_error_name(rc), rc);
    return CUDA_ERROR_OUT_OF_MEMORY;
  }
  *dptr = ptr;
  return CUDA_SUCCESS;
}

/* Takes r out (pa_mu held). */
static pa_plan_t *drop(pa_rec_t *r) {
  beside_start();
  range_start();
  /* A buffer made before the log began is logged too, by how many allocations back it was
   * made: else the log's first step lacks those frees, is shorter than the next, and the
   * two never repeat, so a length held for 3 steps got no plan (stress-streams #20, lengths
   * 192 and 128: 4 divergent periods, a kept plan served once; 1 and 18 so) */
  bool log = logging(), logged = log && r->gen == log_gen() && r->id != UINT32_MAX;
  uint64_t ev = fr.events++;
  HASH_DEL(fr.live, r);
  pa_shadow_free(r->ptr, r->size);
  pa_pool_release(r->off, r->size);
  pa_budget_untrack(r->off); /* after the release: it tells the pool about the idle pages */
  uint32_t tag = r->tag;
  unplace(r);
  uint64_t dead = dead_gone(r, log);
  if (logged) pa_record_free(r->id, dead);
  else if (log) pa_record_free_old(fr.allocs - r->nth, dead, r->size);
  if (log) pa_ktime_event(ev);
  pa_record_event(false, 0, r->seq);
  count_live(-(int64_t)r->size);
  free_rec(r);
  fr.last.did = logged ? "record" : "idle", fr.last.pos = fr.last.expected = PA_CLOCK_OFF;
  if (serving(ev))
    expect(fr.plan), fr.last.pos = serve_free(tag), fr.last.did = fr.last.pos == PA_CLOCK_OFF ? "miss" : "plan";
  if (log) beside_check(); /* after the old clock took the event: a kept plan's starts after it */
  return fr.phase == RECORD ? detect(ev) : NULL;
}

/* cudaFree's promise, that the work which may use the buffer is done before its memory
 * serves again, is kept on the device (fence.c): the free raises the fence and returns
 * at once. With PLANALLOC_FREE=sync the host first waits for the device, as the real call
 * does (everything pending is then complete). A stream-ordered free records an event on
 * its stream instead, which whoever reuses the range waits for (streams.c); where no
 * event can be had it raises the fence too. A pointer that is no live buffer is an
 * error, waited for or not. */
int pa_free(CUdeviceptr p, CUstream stream, bool async) {
  int slot = p ? pa_pool_find(p) : -1; /* the device whose pool holds it, whichever is current */
  if (slot < 0) return PA_PASS;
  pa_slot_set(slot);
  bool sync = !async && pa_opt.v[PA_OPT_FREE].i == PA_FREE_SYNC;
  uint64_t mark = sync ? pa_pending_mark() : 0;
  int rc = sync ? pa_wait_device(PA_WAIT_FREE) : CUDA_SUCCESS;
  if (rc) return rc;
  CUevent ev = async ? pa_event_after(stream) : NULL;
  pthread_mutex_lock(&pa_mu);
  pa_rec_t *r = find(p);
  if (sync) pa_pending_clear(mark);
  bool pended = r && ev && pa_pending_add(r->ptr, r->size, stream, ev);
  if (ev && !pended) pa_pending_drop(ev);
  if (r && !sync && !pended) pa_fence_raise();
  CUdeviceptr at = r ? r->ptr : 0;
  uint64_t size = r ? r->size : 0;
  pa_plan_t *todo = r ? drop(r) : NULL;
  if (r) pa_stats.frees++, pa_timeline_event();
  if (r && pa_events_on()) log_event('f', stream, at, size, 0);
  bool trim = take_trim();
  pthread_mutex_unlock(&pa_mu);
  finish(todo, trim);
  if (async) pa_pending_prune(4);
  return r ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

size_t pa_alloc_size(CUdeviceptr p) {
  pthread_mutex_lock(&pa_mu);
  pa_rec_t *r = find(p);
  size_t size = r ? r->size : 0;
  pthread_mutex_unlock(&pa_mu);
  return size;
}

uint32_t pa_alloc_id_at(CUdeviceptr p) {
  if (!pa_pool_contains(p)) return UINT32_MAX;
  uint32_t node = pa_online_find(p - pa_pool_base());
  pa_rec_t *r = node != PA_NIL && node < fr.cap_nodes ? fr.by_node[node] : NULL;
  if (!r || r->node != node) return UINT32_MAX;
  return r->gen == fr.gen ? r->id : pa_access_old(r->off);
}

void pa_plan_dump_current(FILE *f) {
  fprintf(f, "# planalloc plan 1\n");
  if (fr.plan) pa_plan_dump(fr.plan, f);
  else fprintf(f, "id,lower,upper,size,offset\n");
}
