/* From the recorded period to a served layout. The period's events are cut after the
 * event where the fewest bytes are live; an allocation freed in the same period is one
 * interval, one freed in the next period (its previous instance was freed in this one,
 * before it was made) wraps around the cut as two intervals, anything longer-lived is
 * left to the online allocator. Serving checks in O(1) that a slot's range is free: the
 * plan guarantees it unless a slot outlived its planned end ("overdue"), and only those
 * few are compared. */
#include "pa.h"
#include "planner.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_OVERDUE 64
#define PA_INPLACE_ROUNDS 8 /* layouts an anchored plan tries, each with the buffers under the last fixed */

struct pa_plan_s {
  uint64_t period, pool, maxlive, wrap_bytes;
  uint64_t iteration; /* the program's: the period is one or two of them */
  uint32_t nslots, nlive;
  uint8_t *is_alloc;   /* per period event */
  uint32_t *slot_at;   /* per period event: the slot made or planned to go there */
  int64_t *off;        /* per slot */
  uint64_t *free_at;   /* per slot: the period event where the plan frees it */
  uint8_t *live;       /* per slot */
  pa_trace_t trace;    /* slot k is buffer k */
  pa_period_t per;     /* every event of the period, as the clock follows it */
  pa_sched_t *sched;   /* each slot's and fixed buffer's uses (schedule.c), or NULL */
  uint32_t overdue[MAX_OVERDUE], noverdue;
  bool overflow;       /* more overdue than the list holds: nothing is served */
  bool paged;          /* its slots of a page or more start on pages: so must its range */
  int device;          /* the slot (pa_slot) it was recorded in: its planner thread works there */
  double search;       /* the longest its layout may search on the planner's thread (s), 0: the option's */
  uint64_t rough;      /* the pool of the quick layout in off, not tight enough to serve (0: none) */
  int64_t *planned;    /* per slot: the layout as planned, before pa_plan_snap moved it (or NULL) */
  pa_snap_room_t *room;
  uint64_t page, budget_pages; /* the budget's when the plan was built (0: none) */
  bool anchored;       /* laid out at pool offset 0 around the buffers that stay: trace
                          buffers nslots.. are those, fixed, live the whole period */
  pa_plan_t *alt;      /* the same iteration anchored, laid out beside this one (alloc.c picks) */
  struct pa_inplace_s { uint32_t slot; int64_t off; } *inplace; /* the recording's buffers live now, */
  uint32_t ninplace;                                            /* slots where they lie (anchored) */
  bool plain_serves;   /* the anchored layout without them serves: they intrude (pa_plan_plain) */
  int64_t *plain;      /* the anchored layout without them (or NULL: the same), and its pool */
  uint64_t plain_pool;
  int64_t *polished, *plain_polished; /* the same two polished, where lower (or NULL) */
  uint64_t polished_pool, plain_polished_pool;
  int64_t *normal;     /* anchored: the layout of the plan it served instead of (or NULL) */
  uint64_t normal_pool;
  int64_t *detour;     /* per slot: where it goes while its place holds a recording's buffer (or NULL) */
  int64_t *at;         /* per slot: where its live instance lies, if a detour (or NULL) */
  uint32_t *away, naway; /* the slots live at their detours */
  struct pa_gap_s { int64_t lo, hi; } *taken; /* pa_plan_window's scratch (or NULL) */
};

static pa_plan_t *plan_new(uint64_t period) {
  pa_plan_t *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  p->period = period;
  p->is_alloc = calloc(period, 1);
  p->slot_at = malloc(period * sizeof *p->slot_at);
  p->off = malloc(period * sizeof *p->off);
  p->free_at = malloc(period * sizeof *p->free_at);
  p->live = calloc(period, 1);
  pa_trace_init(&p->trace);
  p->trace.cols |= PA_COL_GAPS; /* the dump shows a wrapping slot's two intervals */
  p->page = pa_limit_page(), p->budget_pages = pa_limit_pages(); /* read under pa_mu */
  if (p->is_alloc && p->slot_at && p->off && p->free_at && p->live) return p;
  pa_plan_free(p);
  return NULL;
}

void pa_plan_free(pa_plan_t *p) {
  if (!p) return;
  free(p->is_alloc), free(p->slot_at), free(p->off), free(p->free_at), free(p->live);
  free(p->planned), pa_snap_room_free(p->room);
  free(p->detour), free(p->at), free(p->away);
  pa_period_free(&p->per);
  pa_trace_free(&p->trace);
  pa_sched_free(p->sched);
  pa_plan_free(p->alt);
  free(p->inplace), free(p->plain), free(p->normal), free(p->polished), free(p->plain_polished);
  free(p->taken);
  free(p);
}

/* The lifetime, in events, of the buffer allocated at log event j: its own where it is
 * freed already, else that of the same allocation an iteration (or two) earlier, if
 * that one is; PA_NO_EVENT where none is (it outlives what was recorded). */
static uint64_t lifetime(uint64_t j, uint64_t period) {
  for (uint64_t k = 0; k < 3 && k * period <= j; k++) {
    uint64_t i = j - k * period, f = pa_log.free_pos[pa_log.ev_id[i]];
    if (!pa_log.ev_alloc[i] || pa_log.tok[i] != pa_log.tok[j]) return PA_NO_EVENT;
    if (f != PA_NO_EVENT) return f - i;
  }
  return PA_NO_EVENT;
}

/* When the buffer allocated at log event j (the plan's period starting at s) is free
 * again, in period time, and whether that is in the next period; false if it lives
 * longer than the period. */
static bool end_of(uint64_t j, uint64_t s, uint64_t period, uint64_t iteration, uint64_t *end, bool *wraps) {
  uint64_t life = lifetime(j, iteration), f = life == PA_NO_EVENT ? PA_NO_EVENT : j + life;
  if (f == PA_NO_EVENT || life > period) return false;
  if (f < s + period) return *end = f - s, *wraps = false, true;
  return *end = f - s - period, *wraps = true, true;
}

/* Iterations the plan spans: 2 where a buffer outlives one iteration but not two (PyTorch
 * holds the loss and the input batch until the next step's are made: two instances live
 * at once, which one iteration's layout cannot place); else 1. */
static uint64_t iterations_spanned(uint64_t period, uint64_t cut) {
  for (uint64_t j = cut + 1 - period; j <= cut; j++) {
    uint64_t life = pa_log.ev_alloc[j] ? lifetime(j, period) : PA_NO_EVENT;
    if (life != PA_NO_EVENT && life > period && life <= 2 * period) return 2;
  }
  return 1;
}

bool pa_plan_ready(uint64_t iteration, uint64_t cut) {
  if (iterations_spanned(iteration, cut) == 1) return true;
  /* the finder saw two iterations repeat before the log's end: the plan's two before the
   * cut must repeat too, or the first holds the warm-up's events (its frees name other
   * buffers) */
  uint64_t s = cut + 1 >= 2 * iteration ? cut + 1 - 2 * iteration : 0;
  return cut + 1 >= 2 * iteration && !memcmp(pa_log.tok + s, pa_log.tok + s + iteration, iteration * sizeof *pa_log.tok);
}

/* A slot is named after the recording's instance of it ("b<id>", as in the trace dump),
 * so the plan dump joins the trace dump's columns (the callsite). */
static bool add_slot(pa_plan_t *p, uint64_t t, uint64_t end, bool wraps, uint32_t id) {
  uint64_t size = pa_log.size[id];
  char name[16];
  snprintf(name, sizeof name, "b%u", id);
  pa_span_t sp[2] = {{(int64_t)t, (int64_t)end}};
  uint32_t n = 1;
  if (wraps && end) /* [0, end) of the next period, then [t, period) */
    sp[0] = (pa_span_t){0, (int64_t)end}, sp[1] = (pa_span_t){(int64_t)t, (int64_t)p->period}, n = 2;
  else if (wraps) /* freed at the period's first event */
    sp[0] = (pa_span_t){(int64_t)t, (int64_t)p->period};
  if (pa_trace_add(&p->trace, name, (int64_t)size, PA_GRAIN, PA_NO_OFFSET, sp, n)) return false;
  if (wraps) p->wrap_bytes += size;
  p->slot_at[t] = p->nslots;
  p->free_at[p->nslots] = end;
  p->slot_at[end] = p->nslots++; /* a wrapping slot's previous instance goes at end */
  return true;
}

pa_plan_t *pa_plan_build(uint64_t iteration, uint64_t cut) {
  uint64_t period = iteration * iterations_spanned(iteration, cut), s = cut + 1 - period;
  pa_plan_t *p = plan_new(period);
  if (!p) return NULL;
  p->device = pa_slot, p->iteration = iteration;
  if (!pa_period_build(&p->per, &pa_log, period, cut)) return pa_plan_free(p), NULL;
  for (uint64_t t = 0; t < period; t++) p->slot_at[t] = PA_PLAN_NONE;
  for (uint64_t t = 0; t < period; t++) {
    uint64_t j = s + t, end;
    bool wraps;
    p->is_alloc[t] = pa_log.ev_alloc[j];
    if (!pa_log.ev_alloc[j] || !end_of(j, s, period, iteration, &end, &wraps)) continue;
    if (!add_slot(p, t, end, wraps, pa_log.ev_id[j])) return pa_plan_free(p), NULL;
  }
  if (p->nslots) return p;
  pa_plan_free(p);
  return NULL;
}

static int64_t slot_size(const pa_plan_t *p, uint32_t k) { return p->trace.bufs[k].size; }

typedef struct pages_s {
  uint64_t first, last;
} pages_t;

static int pages_cmp(const void *a, const void *b) {
  const pages_t *x = a, *y = b;
  return x->first < y->first ? -1 : x->first > y->first;
}

/* Pages in the union of r[0 .. n) (sorted here). */
static uint64_t union_pages(pages_t *r, size_t n) {
  qsort(r, n, sizeof *r, pages_cmp);
  uint64_t count = 0, end = 0; /* one past the last page counted */
  for (size_t i = 0; i < n; i++) {
    uint64_t from = r[i].first > end ? r[i].first : end;
    if (r[i].last + 1 > from) count += r[i].last + 1 - from, end = r[i].last + 1;
  }
  return count;
}

/* The pages the launch at position q holds: its slots' (the range starting on a page)
 * and its fixed buffers', counted apart (they lie in different address ranges). */
static uint64_t pages_at(const pa_plan_t *p, const int64_t *off, uint64_t q, uint64_t page, pages_t *r) {
  const uint32_t *ids = NULL;
  uint32_t n = pa_sched_used_at(p->sched, q, &ids);
  size_t nslot = 0, nfixed = 0;
  for (uint32_t i = 0; i < n; i++) {
    uint64_t at, size;
    if (ids[i] < p->nslots) at = (uint64_t)off[ids[i]], size = (uint64_t)slot_size(p, ids[i]);
    else if (!pa_sched_fixed_range(p->sched, ids[i], &at, &size)) continue;
    pages_t pg = {at / page, (at + size - 1) / page};
    if (ids[i] < p->nslots) r[nslot++] = pg;
    else r[n - ++nfixed] = pg; /* fixed ones from the end */
  }
  return union_pages(r, nslot) + union_pages(r + n - nfixed, nfixed);
}

/* The most pages one launch of the iteration holds resident in the layout off[];
 * UINT64_MAX without memory. */
static uint64_t launch_pages(const pa_plan_t *p, const int64_t *off, uint64_t page) {
  uint64_t most = 0;
  pages_t *r = malloc((pa_sched_idents(p->sched) + 1) * sizeof *r); /* a launch uses each ident once */
  for (uint64_t q = 0; r && q < pa_sched_launches(p->sched); q++) {
    uint64_t pages = pages_at(p, off, q, page, r);
    if (pages > most) most = pages;
  }
  bool counted = r != NULL;
  free(r);
  return counted ? most : UINT64_MAX;
}

/* Every slot of at least min bytes aligned to align, the others to the grain. */
static void align_slots(pa_plan_t *p, int64_t min, int64_t align) {
  p->trace.sum_padded = 0;
  for (uint32_t k = 0; k < p->nslots; k++) {
    pa_buf_t *b = &p->trace.bufs[k];
    b->align = b->size >= min ? align : PA_GRAIN;
    p->trace.sum_padded += b->size + b->align - 1;
  }
}

/* Under a budget, a launch whose buffers span more pages than it holds cannot run. If
 * the layout makes one, the slots of a page or more are planned again from page starts
 * (each then spans the fewest pages; mlp_train's SGD step at 50 %: 5 pages of 4 with
 * megengine's layout), kept only where that makes every launch fit: on a plan that
 * fits, page-aligned slots and range cost bytes moved (trace_replay: 2x). */
static void fit_budget(pa_plan_t *p, const pa_algo_t *a, const pa_plan_opts_t *o) {
  uint64_t page = p->page, need = page && p->sched ? launch_pages(p, p->off, page) : 0, paged = UINT64_MAX;
  int64_t *off = need > p->budget_pages ? malloc(p->nslots * sizeof *off) : NULL, peak = 0;
  if (!off) return;
  char err[256];
  align_slots(p, (int64_t)page, (int64_t)page);
  if (!pa_plan(a, &p->trace, o, off, &peak, err, sizeof err)) paged = launch_pages(p, off, page);
  if (paged <= p->budget_pages) {
    memcpy(p->off, off, p->nslots * sizeof *off);
    p->pool = (uint64_t)peak, p->paged = true, p->trace.cols |= PA_COL_ALIGNMENT;
  } else {
    align_slots(p, INT64_MAX, PA_GRAIN);
  }
  free(off);
  char got[32] = "no layout";
  if (paged != UINT64_MAX) snprintf(got, sizeof got, "%llu", (unsigned long long)paged);
  if (pa_opt.v[PA_OPT_VERBOSE].i)
    pa_info("a launch needs %llu pages in the plan's layout, the budget holds %llu: with its buffers of a page or more "
            "on pages, %s (%s)", (unsigned long long)need, (unsigned long long)p->budget_pages, got,
            p->paged ? "kept" : "not kept");
}

/* The room each slot has, found once on the planner's thread: where the plan's pages
 * fall is known only when it is placed (pa_plan_snap). */
static void find_room(pa_plan_t *p) {
  size_t n = p->nslots;
  p->planned = malloc(n * sizeof *p->planned);
  p->room = p->planned ? pa_snap_room_new(&p->trace, p->off, (int64_t)p->pool) : NULL;
  if (p->room) return (void)memcpy(p->planned, p->off, n * sizeof *p->off);
  free(p->planned);
  p->planned = NULL;
}

size_t pa_plan_snap(pa_plan_t *p, uint64_t base, uint64_t page) {
  if (!p->room || !page) return 0;
  return pa_snap(p->room, &p->trace, p->planned, (int64_t)page, (int64_t)(base % page), p->off);
}

/* Good enough to serve at once: within 0.5 % of max-live. At 0.1 % a torch_stream of 44
 * layers and three sequence lengths, laid out 0.17 % above it by the heuristics, searched
 * on a thread for PLANALLOC_PLAN_TIME while best fit served the whole replay (0 of 24,133
 * allocations served; at 0.5 %, its plans serve from the next allocation). */
#define PA_QUICK_SLACK 200 /* max-live / this */
/* Under a budget, within 0.1 %, as before: there each byte above max-live is pages moved
 * every period, and the search on the planner's thread costs best fit once per plan.
 * ResNet-50's trace_replay at 1/32 under 30 % of its peak: its quick layout, 0.28 %
 * above max-live, moved 120 MiB an iteration in 507 ms; the searched one, at max-live,
 * 59 MiB in 430 ms (at 50 %: 39.5 and 34.7 MiB). */
#define PA_QUICK_SLACK_BUDGET 1000
/* Without a budget, also a layout in no more pages than max-live's: the search cannot
 * save a page there (torch_stream seed 202, 54 layers: skyline 0.55 % above max-live,
 * both 114 pages; the search took 73 ms on the planner's thread, 14,000 of the replay's
 * events served best fit, 13-41 % of its allocations served). */
static int64_t good_enough(const pa_plan_t *p) {
  int64_t slack = (int64_t)(p->maxlive + p->maxlive / (pa_limit_on() ? PA_QUICK_SLACK_BUDGET : PA_QUICK_SLACK));
  int64_t page = (int64_t)pa_pool_page(), pages = page > 0 ? pa_align_up((int64_t)p->maxlive, page) : 0;
  return pa_limit_on() || pages < slack ? slack : pages;
}

static bool tight(const pa_plan_t *p, int64_t peak) { return peak <= good_enough(p); }

/* Where the heuristics miss, best's search on this thread for PA_QUICK_SEARCH seconds at
 * most, stopped as soon as it is good enough. torch_stream seed 346 (10 layers, lengths
 * 96, 192, 64): the 64 plan's skyline was a page above max-live's, the search reaches it
 * in 2 ms, but on the planner's thread its 20 ms took 4,000-11,000 of the replay's
 * events (its two threads and the search's own on two cores), and the length had
 * changed by then. */
#define PA_QUICK_SEARCH 0.005
static int quick_search(pa_plan_t *p, const pa_algo_t *a, const pa_plan_opts_t *o, int64_t *peak) {
  char err[256];
  pa_plan_opts_t q = *o;
  int64_t good = good_enough(p);
  q.time_limit = PA_QUICK_SEARCH;
  q.gap = p->maxlive ? (double)(good - (int64_t)p->maxlive) / (double)p->maxlive : 0;
  return pa_plan(a, &p->trace, &q, p->off, peak, err, sizeof err);
}

/* The quick layout: with PLANALLOC_ALGO=best, its portfolio's heuristics while their
 * estimated cost stays under 10 ms, until one is within 0.5 % of max-live (planner's
 * pa_best_quick: decided by the trace alone; best's own deadline skipped them on a loaded
 * machine). Another algorithm runs alone. */
static int quick_layout(pa_plan_t *p, const pa_algo_t *a, const pa_plan_opts_t *o, int64_t *peak) {
  char err[256];
  if (strcmp(a->name, "best")) return pa_plan(a, &p->trace, o, p->off, peak, err, sizeof err);
  if (!pa_best_quick(&p->trace, o, 0.01, good_enough(p), p->off, peak)) return PA_OK;
  return quick_search(p, a, o, peak);
}

bool pa_plan_layout(pa_plan_t *p, bool quick) {
  const pa_algo_t *a = pa_algo_find(pa_opt.v[PA_OPT_ALGO].text);
  double seconds = pa_opt.v[PA_OPT_PLAN_TIME].seconds;
  if (p->search > 0 && p->search < seconds) seconds = p->search;
  pa_plan_opts_t o = {.time_limit = seconds > 0 ? seconds : 0.01, .gap = 1e-4};
  char err[256];
  int64_t peak = 0;
  p->maxlive = (uint64_t)pa_trace_maxlive(&p->trace);
  p->rough = 0;
  if (quick && (!a || quick_layout(p, a, &o, &peak))) return false;
  if (quick && !tight(p, peak)) return p->rough = (uint64_t)peak, false;
  int rc = quick ? PA_OK : a ? pa_plan(a, &p->trace, &o, p->off, &peak, err, sizeof err) : PA_EINPUT;
  if (rc) pa_warn("planning %u buffers failed (%s): serving online", p->nslots, a ? err : "no such algorithm");
  p->pool = (uint64_t)peak;
  if (rc == PA_OK) fit_budget(p, a, &o);
  if (rc == PA_OK && !p->paged) find_room(p);
  return rc == PA_OK;
}

/* The layout the quick one left, made the plan's own (not under a budget: that one is
 * planned again by page). */
bool pa_plan_rough(pa_plan_t *p) {
  if (!p->rough || p->page) return false;
  p->pool = p->rough, p->rough = 0;
  find_room(p);
  return true;
}

uint64_t pa_plan_rough_pool(const pa_plan_t *p) { return p->rough; }

/* A quick layout at most a page over good enough serves at once, rather than after the
 * planner's search: that search, on a thread beside the program's on 2 loaded cores,
 * came 54,177 events late for a length torch_stream held 3 steps (seed 141: 4-20 kept
 * plans served again from run to run, 11.6-85.0 % served), where the most it could save
 * is that page. */
bool pa_plan_rough_close(const pa_plan_t *p) {
  return p->rough && (int64_t)p->rough <= good_enough(p) + (int64_t)pa_pool_page();
}

uint64_t pa_plan_set_pool(pa_plan_t *p, uint64_t pool) {
  uint64_t was = p->pool;
  p->pool = pool;
  return was;
}

bool pa_plan_paged(const pa_plan_t *p) { return p->paged; }
void pa_plan_set_search(pa_plan_t *p, double seconds) { p->search = seconds; }

/* ---- anchored plans ------------------------------------------------------------------------ */

bool pa_plan_anchor(pa_plan_t *p, const pa_extent_t *fixed, size_t n) {
  int64_t *o = realloc(p->off, ((size_t)p->nslots + n + 1) * sizeof *o);
  if (!o) return false;
  p->off = o;
  pa_span_t whole = {0, (int64_t)p->period};
  for (size_t i = 0; i < n; i++) {
    char name[32];
    snprintf(name, sizeof name, "o%zu", i);
    if (fixed[i].hi > (uint64_t)PA_VALUE_LIMIT ||
        pa_trace_add(&p->trace, name, (int64_t)(fixed[i].hi - fixed[i].lo), PA_GRAIN, (int64_t)fixed[i].lo, &whole, 1))
      return false;
  }
  return p->anchored = true;
}

bool pa_plan_in_place(pa_plan_t *p, uint64_t t, uint64_t off, uint64_t size) {
  uint32_t k = t < p->period && p->is_alloc[t] ? p->slot_at[t] : PA_PLAN_NONE;
  if (k >= p->nslots || off % PA_GRAIN || off > (uint64_t)PA_VALUE_LIMIT || (uint64_t)p->trace.bufs[k].size != size)
    return false;
  if (!p->inplace && !(p->inplace = malloc(((size_t)p->nslots + 1) * sizeof *p->inplace))) return false;
  for (uint32_t i = 0; i < p->ninplace; i++)
    if (p->inplace[i].slot == k) return false; /* two live at one position: the program left the period */
  p->inplace[p->ninplace++] = (struct pa_inplace_s){k, (int64_t)off};
  return true;
}

bool pa_plan_in_place_is(const pa_plan_t *p, uint64_t off, uint64_t size) {
  for (uint32_t i = 0; i < p->ninplace; i++) {
    const pa_buf_t *b = &p->trace.bufs[p->inplace[i].slot];
    if (b->fixed != PA_NO_OFFSET && (uint64_t)b->fixed == off && (uint64_t)b->size == size) return true;
  }
  return false;
}

/* Fixes the buffers in place under top; true if any was not fixed before. */
static bool fix_under(pa_plan_t *p, uint64_t top) {
  bool more = false;
  for (uint32_t i = 0; i < p->ninplace; i++) {
    pa_buf_t *b = &p->trace.bufs[p->inplace[i].slot];
    if (b->fixed != PA_NO_OFFSET || (uint64_t)p->inplace[i].off >= top) continue;
    b->fixed = p->inplace[i].off, more = true;
  }
  return more;
}

/* The buffers in place float again (their slots laid out as any). */
static void unfix_in_place(pa_plan_t *p) {
  for (uint32_t i = 0; i < p->ninplace; i++) p->trace.bufs[p->inplace[i].slot].fixed = PA_NO_OFFSET;
}

bool pa_plan_anchored(const pa_plan_t *p) { return p->anchored; }
bool pa_plan_plain_serves(const pa_plan_t *p) { return p->plain_serves; }

void pa_plan_keep_normal(pa_plan_t *a, pa_plan_t *p) {
  free(a->normal), a->normal = p->off, p->off = NULL, a->normal_pool = p->pool;
  pa_snap_room_free(a->room), free(a->planned);
  a->planned = p->planned, a->room = p->room, p->planned = NULL, p->room = NULL;
}

bool pa_plan_unanchor(pa_plan_t *p) {
  if (!p->anchored || !p->normal) return false;
  free(p->plain), p->plain = NULL;
  unfix_in_place(p);
  pa_trace_truncate(&p->trace, p->nslots);
  free(p->off), p->off = p->normal, p->normal = NULL;
  p->pool = p->normal_pool, p->anchored = false;
  p->maxlive = (uint64_t)pa_trace_maxlive(&p->trace);
  return true;
}
void pa_plan_set_alt(pa_plan_t *p, pa_plan_t *alt) { pa_plan_free(p->alt), p->alt = alt; }
pa_plan_t *pa_plan_take_alt(pa_plan_t *p) {
  pa_plan_t *a = p->alt;
  p->alt = NULL;
  return a;
}

static int64_t slots_top(const pa_plan_t *p, const int64_t *off) {
  int64_t top = 0;
  for (uint32_t k = 0; k < p->nslots; k++)
    if (off[k] + slot_size(p, k) > top) top = off[k] + slot_size(p, k);
  return top;
}

/* The fixed buffers' bytes below top. */
static uint64_t fixed_below(const pa_plan_t *p, uint64_t top) {
  uint64_t n = 0;
  for (size_t i = p->nslots; i < p->trace.n; i++) {
    uint64_t lo = (uint64_t)p->trace.bufs[i].fixed, hi = lo + (uint64_t)p->trace.bufs[i].size;
    n += lo < top ? (hi < top ? hi : top) - lo : 0;
  }
  return n;
}

uint64_t pa_plan_own(const pa_plan_t *p) { return p->anchored ? p->pool - fixed_below(p, p->pool) : p->pool; }

/* A greedy layout: an order and a fit. */
typedef struct greedy_s {
  pa_order_t order;
  pa_fit_t fit;
} greedy_t;

/* The greedy orders that honour fixed buffers and fill the holes between them (beside
 * the skylines around them; megengine and start-best take none), those that won
 * on the replays and torch_streams, most often first: start-lowest mostly once the
 * recording's buffers are fixed where best fit put them; size-best, duration-lowest and
 * the placed plan's layout compacted lowest-fit around what stays never did. */
static const greedy_t anchor_orders[] = {{PA_ORDER_SIZE, PA_FIT_LOWEST}, {PA_ORDER_START, PA_FIT_LOWEST},
                                         {PA_ORDER_AREA, PA_FIT_BEST}, {PA_ORDER_DURATION, PA_FIT_BEST},
                                         {PA_ORDER_AREA, PA_FIT_LOWEST}};
static const greedy_t in_place_orders[] = {{PA_ORDER_START, PA_FIT_LOWEST}, {PA_ORDER_AREA, PA_FIT_LOWEST},
                                           {PA_ORDER_SIZE, PA_FIT_LOWEST}, {PA_ORDER_AREA, PA_FIT_BEST},
                                           {PA_ORDER_DURATION, PA_FIT_BEST}};
#define PA_ANCHOR_ORDERS (sizeof anchor_orders / sizeof *anchor_orders)
_Static_assert(sizeof in_place_orders == sizeof anchor_orders, "layout_fixed bounds both by PA_ANCHOR_ORDERS");

/* The layouts the allocating thread may spend on it: as many as 80 ms hold at the
 * planner's estimate of a greedy layout (PA_GREEDY_NS_PER_OVERLAP, twice what they take;
 * a skyline around fixed buffers is counted as one: 1-3 times a greedy's time on the
 * anchored traces of GPT's and ResNet-50's logs).
 * All of them took ResNet-50's 903 slots 95 ms at 1/4 of its sizes, GPT's 67 ms, and the
 * replays 1.5-2.5 % longer where the device waited for that host. At 40 ms ResNet-50's
 * took one layout (23 ms at the estimate), and the round with the recording's buffers in
 * place never ran: found a step earlier since frees are named by their dead count, its
 * plan took over with 210 of them live, 146 of its slots went to best fit above the
 * range, and the demo's peak rose 770 -> 790 MiB. At 80 ms (3 layouts, 16 ms on the
 * clock; GPT's 29 ms) the round runs: 756 MiB. */
#define PA_ANCHOR_SECONDS 0.08

/* The polish's layouts after the best order (planner: pa_greedy_polish), at most. On
 * torch_stream's anchored plans dumped and polished offline (170-594 slots around a
 * program's weights) every page it saved came within 50 (seeds 3, 13, 57, 123: 1 page
 * each; 10,000 found nothing more). */
#define PA_ANCHOR_POLISH 48
/* ... and as many as this holds at the estimate (0.01 s: 9 on torch_stream's exact
 * stream), with PA_ANCHOR_SECONDS by the clock as the bound: the polish is paid on the
 * allocating thread for every plan, the anchored one or not. GPT's anchored alternative
 * (652 buffers, never chosen) took 8 ms without it, 16 ms so, 46 ms with the whole
 * anchored budget to polish in; torch_stream's pages saved came within 4-7 layouts
 * (seeds 3, 134). The estimate, not the clock, so that a stream gets the same layout on
 * a loaded machine or under the sanitizers (it is 5-10 times what these layouts take). */
#define PA_POLISH_SECONDS 0.01

/* The greedy layout that won: its order and fit, which the polish starts from. */
typedef struct won_s {
  uint32_t *order;
  pa_fit_t fit;
} won_t;

/* The best of the first k orders, into p->off, its order and fit into w; INT64_MAX if
 * none ran. */
static int64_t best_order(pa_plan_t *p, const greedy_t *orders, size_t k, won_t *w) {
  size_t n = p->trace.n;
  uint32_t *order = malloc((n + 1) * sizeof *order);
  int64_t *off = malloc((n + 1) * sizeof *off), best = INT64_MAX;
  for (size_t i = 0; order && off && i < k && i < PA_ANCHOR_ORDERS; i++) {
    if (pa_order_make(&p->trace, orders[i].order, order) || pa_greedy_ordered(&p->trace, order, orders[i].fit, off)) continue;
    int64_t top = slots_top(p, off);
    if (top >= best) continue;
    best = top, w->fit = orders[i].fit;
    memcpy(w->order, order, n * sizeof *order), memcpy(p->off, off, n * sizeof *off);
  }
  free(order), free(off);
  return best;
}

/* The skylines around fixed buffers (planner: pa_skyline_around), tried after the greedy
 * orders: each strip between two of them has a skyline of its own, so the holes between
 * a program's weights fill lowest first (torch_stream seed 57: 180 -> 176 pages, seed 13:
 * 103 -> 102). */
#define PA_ANCHOR_LAYOUTS (PA_ANCHOR_ORDERS + PA_SKYLINE_PREORDERS) /* a round's, at most */

/* The lowest of best (in p->off, its order in w) and the first k skylines' layouts; a
 * skyline that wins leaves its layout as w's order, lowest fit (the polish's start).
 * Its top. */
static int64_t best_skyline(pa_plan_t *p, size_t k, int64_t best, won_t *w) {
  size_t n = p->trace.n;
  uint32_t *order = malloc((n + 1) * sizeof *order);
  int64_t *off = malloc((n + 1) * sizeof *off);
  for (size_t i = 0; order && off && i < k && i < PA_SKYLINE_PREORDERS; i++) {
    if (pa_skyline_as_order(&p->trace, pa_skyline_preorders[i], order, off)) continue;
    int64_t top = slots_top(p, off);
    if (top >= best) continue;
    best = top, w->fit = PA_FIT_LOWEST;
    memcpy(w->order, order, n * sizeof *order), memcpy(p->off, off, n * sizeof *off);
  }
  free(order), free(off);
  return best;
}

/* Whether a layout passes the independent check the planner gives every algorithm's
 * (pa_plan): the greedy layouts here are made without that entry point. */
static bool checked(pa_plan_t *p, const int64_t *off) {
  char err[256];
  int64_t peak;
  return !pa_validate(&p->trace, off, &peak, err, sizeof err);
}

/* The one of the first k layouts (the greedy orders, then the skylines) whose slots end
 * lowest. */
static bool layout_fixed(pa_plan_t *p, const greedy_t *orders, size_t k, won_t *w) {
  int64_t best = best_skyline(p, k > PA_ANCHOR_ORDERS ? k - PA_ANCHOR_ORDERS : 0, best_order(p, orders, k, w), w);
  if (best == INT64_MAX || !checked(p, p->off)) return false;
  p->pool = (uint64_t)best;
  p->maxlive = (uint64_t)pa_trace_maxlive(&p->trace) - fixed_below(p, UINT64_MAX);
  return true;
}

/* The winning order polished (planner: pa_greedy_polish) by up to tries layouts before
 * the deadline: a copy where its slots end lower than pool (*out, *out_pool), else none. */
static void polish(pa_plan_t *p, won_t *w, size_t tries, double deadline, uint64_t pool, int64_t **out, uint64_t *out_pool) {
  size_t n = p->trace.n;
  int64_t *o = tries ? malloc((n + 1) * sizeof *o) : NULL;
  bool lower = o && !pa_greedy_polish(&p->trace, w->order, w->fit, tries, tries, deadline, o) &&
               (uint64_t)slots_top(p, o) < pool && checked(p, o);
  free(*out), *out = lower ? o : NULL, *out_pool = lower ? (uint64_t)slots_top(p, o) : 0;
  if (!lower) free(o);
}

static size_t at_most(size_t a, size_t b) { return a < b ? a : b; }

/* A greedy layout of p's trace, by the planner's estimate (seconds). */
static double greedy_seconds(const pa_plan_t *p) { return pa_trace_overlaps(&p->trace) * PA_GREEDY_NS_PER_OVERLAP * 1e-9; }

/* The buffers in place under the range are fixed where they lie, and the range laid out
 * again, until none is left under it; those above it do not meet it. Fixing them all at
 * once took ResNet-50's range from 1,371 pages to 1,531 (some lie high). Within the
 * budget, the first layout leaves two for those rounds where it can (without them those
 * buffers intrude: torch_stream's 60 layers 0.8 % fewer served). The plain layout and
 * the last are polished beside that budget (PA_POLISH_SECONDS): polish layouts taken
 * from the rounds changed which buffers they fixed. The rounds start from the orders'
 * layout, not the polished one: fixing the recording's buffers under a lower top fixes
 * others (torch_stream seed 46's in-place plan ended 2 pages higher so). */
static bool anchored(pa_plan_t *p, won_t *w) {
  double each = greedy_seconds(p), deadline = pa_now() + PA_ANCHOR_SECONDS;
  size_t left = each > 0 ? (size_t)fmin(PA_ANCHOR_SECONDS / each, 1e6) : SIZE_MAX;
  size_t k = left > 2 ? at_most(left - 2, PA_ANCHOR_LAYOUTS) : at_most(left, 1), bytes = p->trace.n * sizeof *p->off;
  size_t tries = each > 0 ? (size_t)fmin(PA_POLISH_SECONDS / each, PA_ANCHOR_POLISH) : PA_ANCHOR_POLISH;
  if (!k || !layout_fixed(p, anchor_orders, k, w)) return false;
  if (!p->ninplace || !(p->plain = malloc(bytes + 1)))
    return polish(p, w, tries, deadline, p->pool, &p->polished, &p->polished_pool), true;
  memcpy(p->plain, p->off, bytes), p->plain_pool = p->pool;
  polish(p, w, tries, deadline, p->plain_pool, &p->plain_polished, &p->plain_polished_pool);
  int round = 0;
  for (; round < PA_INPLACE_ROUNDS; round++) {
    left -= k;
    if (!left || !fix_under(p, p->pool)) break;
    k = at_most(left, PA_ANCHOR_LAYOUTS);
    if (!layout_fixed(p, in_place_orders, k, w)) return pa_plan_plain(p), true;
  }
  if (round) polish(p, w, tries, deadline, p->pool, &p->polished, &p->polished_pool);
  else if (p->plain_polished && (p->polished = malloc(bytes + 1))) /* no round: the plain layout is the last */
    memcpy(p->polished, p->plain_polished, bytes), p->polished_pool = p->plain_polished_pool;
  return true;
}

bool pa_plan_layout_anchored(pa_plan_t *p) {
  won_t w = {malloc((p->trace.n + 1) * sizeof *w.order), PA_FIT_LOWEST};
  bool ok = w.order && anchored(p, &w);
  free(w.order);
  return ok;
}

uint64_t pa_plan_over(const pa_plan_t *p, bool plain) {
  uint64_t pool = plain && p->plain ? p->plain_pool : p->pool, own = pool - fixed_below(p, pool);
  return own > p->maxlive ? own - p->maxlive : 0;
}

uint64_t pa_plan_plain_range(const pa_plan_t *p) {
  return (uint64_t)pa_align_up((int64_t)(p->plain ? p->plain_pool : p->pool), PA_GRAIN);
}

void pa_plan_plain(pa_plan_t *p) {
  if (!p->plain) return;
  p->plain_serves = true;
  memcpy(p->off, p->plain, p->trace.n * sizeof *p->off), p->pool = p->plain_pool;
  unfix_in_place(p);
  free(p->plain), p->plain = NULL;
  free(p->polished), p->polished = p->plain_polished, p->polished_pool = p->plain_polished_pool;
  p->plain_polished = NULL;
}

/* A kept anchored plan laid out with the recording's last buffers in place, served again
 * where they are gone (alloc.c): its plain layout, polished, where that is lower. */
bool pa_plan_plain_again(pa_plan_t *p) {
  uint64_t plain = p->plain_polished ? p->plain_polished_pool : p->plain_pool;
  if (!p->anchored || !p->plain || plain >= p->pool) return false;
  pa_plan_plain(p);
  pa_plan_polished(p);
  return true;
}

/* The anchored plan serves: its polished layout, where it has one, replaces the one its
 * choice was made on. That choice stays the greedy orders': with the polished pages
 * counted, torch_stream 32,64,64,64's first shape took its anchored plan (1 page fewer
 * than placed, 3 above max-live), and the next shape's recording beside it mapped 77
 * pages where 75 did beside the placed one. */
void pa_plan_polished(pa_plan_t *p) {
  if (!p->polished) return;
  memcpy(p->off, p->polished, p->trace.n * sizeof *p->off), p->pool = p->polished_pool;
  free(p->polished), p->polished = NULL;
}

/* Whether [off, off + size) lies in one of its fixed buffers. */
bool pa_plan_anchor_is(const pa_plan_t *p, uint64_t off, uint64_t size) {
  for (size_t i = p->nslots; i < p->trace.n; i++) {
    uint64_t lo = (uint64_t)p->trace.bufs[i].fixed, hi = lo + (uint64_t)p->trace.bufs[i].size;
    if (lo <= off && off + size <= hi) return true;
  }
  return false;
}

int pa_plan_device(const pa_plan_t *p) { return p->device; }

uint64_t pa_plan_period(const pa_plan_t *p) { return p->period; }
uint64_t pa_plan_iteration(const pa_plan_t *p) { return p->iteration; }
uint64_t pa_plan_pool(const pa_plan_t *p) { return p->pool; }
uint64_t pa_plan_maxlive(const pa_plan_t *p) { return p->maxlive; }
uint64_t pa_plan_wrap_bytes(const pa_plan_t *p) { return p->wrap_bytes; }
uint32_t pa_plan_buffers(const pa_plan_t *p) { return p->nslots; }
uint32_t pa_plan_live(const pa_plan_t *p) { return p->nlive; }

/* Where slot k's live instance lies: its place, or its detour. */
static int64_t live_at(const pa_plan_t *p, uint32_t k) {
  return p->at && p->at[k] != PA_NO_OFFSET ? p->at[k] : p->off[k];
}

static bool meets(const pa_plan_t *p, uint32_t o, uint32_t k, int64_t at) {
  return o != k && live_at(p, o) < at + slot_size(p, k) && at < live_at(p, o) + slot_size(p, o);
}

/* An overdue slot, or one live at its detour, lies in [at, at + slot k's size). */
static bool collides_at(const pa_plan_t *p, uint32_t k, int64_t at) {
  if (p->overflow) return true;
  for (uint32_t i = 0; i < p->noverdue; i++)
    if (meets(p, p->overdue[i], k, at)) return true;
  for (uint32_t i = 0; i < p->naway; i++)
    if (meets(p, p->away[i], k, at)) return true;
  return false;
}

static bool collides(const pa_plan_t *p, uint32_t k) { return collides_at(p, k, p->off[k]); }

const pa_period_t *pa_plan_period_of(const pa_plan_t *p) { return &p->per; }

uint64_t pa_plan_signature(const pa_plan_t *p) {
  uint64_t h = pa_mix64(p->period);
  for (uint64_t t = 0; t < p->period; t++) h = pa_mix64(h ^ p->per.size[t] ^ ((uint64_t)p->slot_at[t] << 32));
  return h | 1; /* never 0: none */
}

/* Whether b's position t is a's position (t + r) % period throughout: the same events,
 * frees naming the same allocations, slots of the same sizes freed at the same places. */
static bool rotated(const pa_plan_t *a, const pa_plan_t *b, uint64_t r) {
  uint64_t n = a->period;
  for (uint64_t t = 0; t < n; t++) {
    uint64_t u = (t + r) % n;
    uint32_t ka = a->slot_at[u], kb = b->slot_at[t], ma = a->per.mate[u], mb = b->per.mate[t];
    if (a->is_alloc[u] != b->is_alloc[t] || a->per.size[u] != b->per.size[t] || (ka == PA_PLAN_NONE) != (kb == PA_PLAN_NONE))
      return false;
    if ((ma == PA_CLOCK_OFF) != (mb == PA_CLOCK_OFF) || (mb != PA_CLOCK_OFF && ma != (mb + r) % n)) return false;
    if (kb != PA_PLAN_NONE && b->is_alloc[t] &&
        (slot_size(a, ka) != slot_size(b, kb) || a->free_at[ka] != (b->free_at[kb] + r) % n))
      return false;
  }
  return true;
}

/* A layout is cyclic (a slot freed past the cut wraps around it), so one found again
 * cut elsewhere serves as it is, its clock turned: the least r that turns a into b. */
uint32_t pa_plan_rotation(const pa_plan_t *a, const pa_plan_t *b) {
  if (a->period != b->period || a->nslots != b->nslots) return PA_NO_ROTATION;
  for (uint64_t r = 0; r < a->period; r++)
    if (rotated(a, b, r)) return (uint32_t)r;
  return PA_NO_ROTATION;
}

void pa_plan_restart(pa_plan_t *p) {
  p->noverdue = 0, p->overflow = false;
  for (uint32_t k = 0; k < p->nslots; k++)
    if (p->live[k] && p->noverdue < MAX_OVERDUE) p->overdue[p->noverdue++] = k;
    else if (p->live[k]) p->overflow = true;
}

/* A live slot lies in [at, at + slot k's size). The detours were laid out for the first
 * period as though every slot that met the recording's buffers took its own, but one
 * whose detour was taken by its turn takes its place: every live one is compared. */
static bool taken_at(const pa_plan_t *p, uint32_t k, int64_t at) {
  for (uint32_t o = 0; o < p->nslots; o++)
    if (p->live[o] && meets(p, o, k, at)) return true;
  return false;
}

/* Slot k at its detour, where no live slot lies (false: none, or taken). */
static bool go_around(pa_plan_t *p, uint32_t k, uint64_t *off) {
  if (!p->detour || !p->at || !p->away || p->detour[k] == PA_NO_OFFSET || p->overflow || taken_at(p, k, p->detour[k]))
    return false;
  p->at[k] = p->detour[k], p->away[p->naway++] = k;
  *off = (uint64_t)p->detour[k];
  return true;
}

uint32_t pa_plan_take(pa_plan_t *p, uint64_t t, uint64_t size, bool around, uint64_t *off, bool *detoured) {
  uint32_t k = t < p->period && p->is_alloc[t] ? p->slot_at[t] : PA_PLAN_NONE;
  *detoured = false;
  if (k == PA_PLAN_NONE || slot_size(p, k) != (int64_t)size || p->live[k]) return PA_PLAN_NONE;
  /* its detour in the first period, and later where a slot still at its own lies in its place */
  bool in_way = (p->noverdue || p->naway) && collides(p, k);
  if ((around || (in_way && p->naway)) && go_around(p, k, off)) return p->live[k] = 1, p->nlive++, *detoured = true, k;
  if (in_way) return PA_PLAN_NONE;
  p->live[k] = 1, p->nlive++;
  if (p->at) p->at[k] = PA_NO_OFFSET;
  *off = (uint64_t)p->off[k];
  return k;
}

/* When the recording's buffer made at period position tag goes: its slot's planned free
 * (a slot's previous instance is freed where the slot is), or UINT64_MAX if not known. */
static uint64_t goes_at(const pa_plan_t *p, uint32_t tag) {
  uint32_t k = tag < p->period && p->is_alloc[tag] ? p->slot_at[tag] : PA_PLAN_NONE;
  return k < p->nslots ? p->free_at[k] : UINT64_MAX;
}

/* The recording's buffer r as a buffer of the trace fixed where it lies, over the period
 * positions it lives on from `from` (past the period's end into the next one's where it
 * goes before from; the whole period where when is not known). */
static bool add_obstacle(pa_plan_t *p, const pa_obstacle_t *r, uint64_t from) {
  uint64_t to = goes_at(p, r->tag);
  pa_span_t sp[2] = {{0, (int64_t)p->period}};
  uint32_t n = 1;
  if (to == UINT64_MAX || from >= p->period || to > p->period) n = 1;
  else if (from < to) sp[0] = (pa_span_t){(int64_t)from, (int64_t)to};
  else if (to) sp[0] = (pa_span_t){0, (int64_t)to}, sp[1] = (pa_span_t){(int64_t)from, (int64_t)p->period}, n = 2;
  else sp[0] = (pa_span_t){(int64_t)from, (int64_t)p->period};
  return r->off <= (uint64_t)PA_VALUE_LIMIT && r->size && r->size <= (uint64_t)PA_VALUE_LIMIT &&
         !pa_trace_add(&p->trace, NULL, (int64_t)r->size, 1, (int64_t)r->off, sp, n);
}

/* The layout settled around the obstacles (trace buffers base..): off, if valid. */
static bool settled(pa_plan_t *p, size_t base, int64_t *was, int64_t *off) {
  int64_t peak;
  char err[256];
  memcpy(was, p->off, base * sizeof *was);
  for (size_t i = base; i < p->trace.n; i++) was[i] = PA_NO_OFFSET;
  return !pa_greedy_settle(&p->trace, was, off, NULL) && !pa_validate(&p->trace, off, &peak, err, sizeof err);
}

/* The slots fixed in place float for a layout around the recording's buffers: theirs are
 * gone (a kept plan's, of the recording before last), or not among those: a 917 KiB buffer
 * of the last length over one of them made that layout fail, and no slot got a detour
 * (torch_stream seed 309: 34 slots still occupied sent to best fit, 12 so). Their fixed
 * offsets, to put back (NULL without memory: nothing changed). */
static int64_t *float_in_place(pa_plan_t *p) {
  int64_t *fixed = malloc(((size_t)p->ninplace + 1) * sizeof *fixed);
  for (uint32_t i = 0; fixed && i < p->ninplace; i++) fixed[i] = p->trace.bufs[p->inplace[i].slot].fixed;
  if (fixed) unfix_in_place(p);
  return fixed;
}

static void refix_in_place(pa_plan_t *p, int64_t *fixed) {
  for (uint32_t i = 0; fixed && i < p->ninplace; i++) p->trace.bufs[p->inplace[i].slot].fixed = fixed[i];
  free(fixed);
}

/* Whether the recording's buffer r, fixed from `from`, lives into the next period. */
static bool wraps(const pa_plan_t *p, const pa_obstacle_t *r, uint64_t from) {
  uint64_t to = goes_at(p, r->tag);
  return to == UINT64_MAX || to > p->period || to <= from;
}

/* Where slot k is made in the period: its span's start, or of two, the one to its end. */
static uint64_t made_at(const pa_plan_t *p, uint32_t k) {
  const pa_buf_t *b = &p->trace.bufs[k];
  const pa_span_t *sp = pa_buf_spans(&p->trace, b);
  for (uint32_t i = 0; i < b->nspans; i++)
    if (b->nspans == 1 || (uint64_t)sp[i].upper == p->period) return (uint64_t)sp[i].lower;
  return 0;
}

/* The slot the recording's buffer r is this period's instance of: made at the slot's
 * position (r's tag), of its size, not served (the clock came after it), and living
 * across `from` in one span. PA_PLAN_NONE if none. */
static uint32_t own_slot(const pa_plan_t *p, const pa_obstacle_t *r, uint64_t from) {
  uint32_t k = r->tag < p->period && p->is_alloc[r->tag] ? p->slot_at[r->tag] : PA_PLAN_NONE;
  if (k == PA_PLAN_NONE || slot_size(p, k) != (int64_t)r->size || p->live[k] || r->off > (uint64_t)PA_VALUE_LIMIT ||
      p->trace.bufs[k].fixed != PA_NO_OFFSET)
    return PA_PLAN_NONE;
  const pa_buf_t *b = &p->trace.bufs[k];
  const pa_span_t *sp = pa_buf_spans(&p->trace, b);
  return b->nspans == 1 && (uint64_t)sp[0].lower <= from && from < (uint64_t)sp[0].upper ? k : PA_PLAN_NONE;
}

/* The recording's buffers r[0..n) in the layout: each that is its slot's instance moves
 * that slot to where it lies (pin: those slots), the others are fixed buffers of their own
 * from `from` on; *late: one of those lives into the next period. false without memory. */
static bool lay_obstacles(pa_plan_t *p, const pa_obstacle_t *r, size_t n, uint64_t from, uint32_t *pin, size_t *npin, bool *late) {
  for (size_t i = 0; i < n; i++) {
    uint32_t k = own_slot(p, &r[i], from);
    if (k != PA_PLAN_NONE) p->trace.bufs[k].fixed = (int64_t)r[i].off, pin[(*npin)++] = k;
    else if (!add_obstacle(p, &r[i], from)) return false;
    else *late |= wraps(p, &r[i], from);
  }
  return true;
}

/* The slots made from `from` on, once each, in one period: the first period lays them
 * again (a slot that wraps into the next is left where it is, with the next period's
 * slots around it). */
static bool again_now(const pa_plan_t *p, uint32_t k, uint64_t from) {
  return made_at(p, k) >= from && !p->live[k] && p->trace.bufs[k].nspans == 1;
}

/* Their top in layout off. */
static int64_t first_top(const pa_plan_t *p, const int64_t *off, uint64_t from) {
  int64_t top = 0;
  for (uint32_t k = 0; k < p->nslots; k++)
    if (again_now(p, k, from) && off[k] + slot_size(p, k) > top) top = off[k] + slot_size(p, k);
  return top;
}

/* The other slots fixed where they are (fx: their fixed offsets before, for unfix_others). */
static void fix_others(pa_plan_t *p, uint64_t from, int64_t *fx) {
  for (uint32_t k = 0; k < p->nslots; k++) {
    fx[k] = p->trace.bufs[k].fixed;
    if (fx[k] == PA_NO_OFFSET && !again_now(p, k, from)) p->trace.bufs[k].fixed = live_at(p, k);
  }
}

static void unfix_others(pa_plan_t *p, const int64_t *fx) {
  for (uint32_t k = 0; k < p->nslots; k++) p->trace.bufs[k].fixed = fx[k];
}

#define PA_RELAYS ((PA_ORDER_COUNT + 1) * PA_FIT_COUNT) /* the settled layout's order, then each key's */
#define PA_RELAY_SECONDS 0.02 /* by the planner's estimate, on the allocating thread */

/* Layout i of the first period's slots around the others (into o): the settled one's
 * order, lowest or best fit, then each order key's. */
static bool relaid(pa_plan_t *p, int i, const int64_t *off, uint32_t *order, int64_t *o) {
  int v = i / PA_FIT_COUNT - 1;
  int rc = v < 0 ? pa_order_by_offset(&p->trace, off, order) : pa_order_make(&p->trace, (pa_order_t)v, order);
  return !rc && !pa_greedy_ordered(&p->trace, order, (pa_fit_t)(i % PA_FIT_COUNT), o) && checked(p, o);
}

/* The layouts the winner's polish may try within the same estimate: still above the
 * range, a slot at its top moved earlier in the order (bench-lengths' rows of several
 * lengths 1.0549 -> 1.0532 x live). */
static size_t polishes(double each) {
  double left = each > 0 ? PA_RELAY_SECONDS / each - PA_RELAYS : PA_ANCHOR_POLISH;
  return left < 1 ? 0 : left > PA_ANCHOR_POLISH ? PA_ANCHOR_POLISH : (size_t)left;
}

/* The settle moves only the slots that meet the recording's buffers, each to the lowest
 * place free, and one that finds none in the range goes to best fit above it. The first
 * period's slots laid again around the rest, the others make room: off takes the lowest
 * of those layouts where it is lower (torch_stream's 3 shapes: 1.0633 -> 1.0401 x live). */
static void relay(pa_plan_t *p, uint64_t from, int64_t *off) {
  size_t n = p->trace.n;
  int64_t top = first_top(p, off, from);
  if (top <= (int64_t)p->pool) return;
  double each = greedy_seconds(p);
  int tries = each > 0 && PA_RELAY_SECONDS / each < PA_RELAYS ? (int)(PA_RELAY_SECONDS / each) : PA_RELAYS, fit = 0;
  int64_t *fx = malloc((p->nslots + 1) * sizeof *fx), *o = malloc((n + 1) * sizeof *o), *best = malloc((n + 1) * sizeof *best);
  uint32_t *order = malloc((n + 1) * sizeof *order), *won = malloc((n + 1) * sizeof *won);
  bool mem = fx && o && best && order && won, ok = false;
  if (mem) fix_others(p, from, fx);
  for (int i = 0; mem && i < tries; i++) {
    int64_t t = relaid(p, i, off, order, o) ? first_top(p, o, from) : INT64_MAX;
    if (t < top) top = t, ok = true, fit = i % PA_FIT_COUNT, memcpy(best, o, n * sizeof *o), memcpy(won, order, n * sizeof *won);
  }
  size_t more = polishes(each);
  if (ok && more && top > (int64_t)p->pool && !pa_greedy_polish(&p->trace, won, (pa_fit_t)fit, more, more, 0, o) &&
      first_top(p, o, from) < top && checked(p, o))
    memcpy(best, o, n * sizeof *o);
  if (mem) unfix_others(p, fx);
  if (ok) memcpy(off, best, n * sizeof *off);
  free(fx), free(o), free(best), free(order), free(won);
}

size_t pa_plan_detours(pa_plan_t *p, const pa_obstacle_t *r, size_t n, uint64_t from) {
  size_t base = p->trace.n, given = 0, npin = 0;
  if (!n) return free(p->detour), p->detour = NULL, 0;
  int64_t *was = malloc((base + n + 1) * sizeof *was), *off = malloc((base + n + 1) * sizeof *off);
  uint32_t *pin = malloc((n + 1) * sizeof *pin);
  if (!p->detour) p->detour = malloc((p->nslots + 1) * sizeof *p->detour);
  if (!p->away) p->away = malloc((p->nslots + 1) * sizeof *p->away);
  if (!p->at && (p->at = malloc((p->nslots + 1) * sizeof *p->at)))
    for (uint32_t k = 0; k < p->nslots; k++) p->at[k] = PA_NO_OFFSET; /* once: a kept plan's live ones stay where they are */
  int64_t *fixed = float_in_place(p);
  bool late = false, ok = was && off && pin && fixed && p->detour && p->at && p->away && lay_obstacles(p, r, n, from, pin, &npin, &late);
  ok = ok && settled(p, base, was, off);
  if (ok) relay(p, from, off);
  for (size_t i = 0; i < npin; i++) p->trace.bufs[pin[i]].fixed = PA_NO_OFFSET;
  for (size_t i = 0; ok && i < npin; i++) off[pin[i]] = p->off[pin[i]]; /* made already: no detour */
  for (uint32_t k = 0; p->detour && k < p->nslots; k++) {
    bool moved = ok && off[k] != p->off[k] && (uint64_t)(off[k] + slot_size(p, k)) <= p->pool && (late || made_at(p, k) >= from);
    p->detour[k] = moved ? off[k] : PA_NO_OFFSET, given += moved;
  }
  pa_trace_truncate(&p->trace, base);
  refix_in_place(p, fixed);
  free(was), free(off), free(pin);
  return given;
}

/* Whether slot k lives at a position of [pos, pos + h] (of its period, from pos on). */
static bool lives_within(const pa_plan_t *p, uint32_t k, uint64_t pos, uint64_t h) {
  const pa_buf_t *b = &p->trace.bufs[k];
  const pa_span_t *sp = pa_buf_spans(&p->trace, b);
  uint64_t end = pos + h + 1, wrap = end > p->period ? end - p->period : 0;
  for (uint32_t i = 0; i < b->nspans; i++) {
    uint64_t lo = (uint64_t)sp[i].lower, hi = (uint64_t)sp[i].upper;
    if ((lo < end && pos < hi) || lo < wrap) return true;
  }
  return false;
}

static int gap_cmp(const void *a, const void *b) {
  const struct pa_gap_s *x = a, *y = b;
  return (x->lo > y->lo) - (x->lo < y->lo);
}

/* The places in the range taken from period position pos for h more: the fixed buffers,
 * the slots live then and where a live one lies now (its detour or an overdue slot's
 * place); their count, into p->taken (sorted), or -1 without memory. */
static int64_t taken_within(pa_plan_t *p, uint64_t pos, uint64_t h) {
  size_t n = 0;
  if (!p->taken && !(p->taken = malloc((2 * p->trace.n + 1) * sizeof *p->taken))) return -1;
  for (size_t i = p->nslots; i < p->trace.n; i++)
    p->taken[n++] = (struct pa_gap_s){p->trace.bufs[i].fixed, p->trace.bufs[i].fixed + p->trace.bufs[i].size};
  for (uint32_t k = 0; k < p->nslots; k++) {
    int64_t at = live_at(p, k), size = slot_size(p, k);
    if (p->live[k] || lives_within(p, k, pos, h)) p->taken[n++] = (struct pa_gap_s){p->off[k], p->off[k] + size};
    if (p->live[k] && at != p->off[k]) p->taken[n++] = (struct pa_gap_s){at, at + size};
  }
  qsort(p->taken, n, sizeof *p->taken, gap_cmp);
  return (int64_t)n;
}

bool pa_plan_window(pa_plan_t *p, uint64_t pos, uint64_t size, uint64_t h, uint64_t from, uint64_t *off) {
  int64_t n = pos < p->period && !p->overflow && size ? taken_within(p, pos, h) : -1;
  int64_t at = pa_align_up((int64_t)from, PA_GRAIN);
  for (int64_t i = 0; i < n && p->taken[i].lo < at + (int64_t)size; i++)
    if (p->taken[i].hi > at) at = pa_align_up(p->taken[i].hi, PA_GRAIN);
  if (n < 0 || at + (int64_t)size > (int64_t)p->pool) return false;
  return *off = (uint64_t)at, true;
}

void pa_plan_give(pa_plan_t *p, uint32_t k) {
  p->live[k] = 0, p->nlive--;
  for (uint32_t i = 0; p->at && p->at[k] != PA_NO_OFFSET && i < p->naway; i++)
    if (p->away[i] == k) p->away[i] = p->away[--p->naway], p->at[k] = PA_NO_OFFSET;
  for (uint32_t i = 0; i < p->noverdue; i++)
    if (p->overdue[i] == k) p->overdue[i] = p->overdue[--p->noverdue];
}

void pa_plan_tick(pa_plan_t *p, uint64_t t) {
  uint32_t k = !p->is_alloc[t] ? p->slot_at[t] : PA_PLAN_NONE;
  if (k == PA_PLAN_NONE || !p->live[k]) return;
  for (uint32_t i = 0; i < p->noverdue; i++)
    if (p->overdue[i] == k) return;
  if (p->noverdue < MAX_OVERDUE) p->overdue[p->noverdue++] = k;
  else p->overflow = true;
}

void pa_plan_set_sched(pa_plan_t *p, pa_sched_t *s) {
  pa_sched_free(p->sched);
  p->sched = s;
}

pa_sched_t *pa_plan_sched(const pa_plan_t *p) { return p->sched; }

void pa_plan_slots(const pa_plan_t *p, pa_plan_slots_t *v) {
  *v = (pa_plan_slots_t){p->period, p->pool, p->nslots, p->is_alloc, p->slot_at, p->free_at, p->off, p->trace.bufs};
}

pa_sched_t *pa_plan_take_sched(pa_plan_t *p) {
  pa_sched_t *s = p->sched;
  p->sched = NULL;
  return s;
}

void pa_plan_dump(const pa_plan_t *p, FILE *f) {
  pa_trace_t slots = p->trace; /* the slots come first: an anchored plan's fixed ones are no slots of its */
  slots.n = p->nslots;
  pa_csv_write(f, &slots, p->off);
}
