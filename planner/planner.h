/* planalloc static planner: the trace model, its CSV form and the layout algorithms.
 *
 * Error convention (mimalloc's): functions that can fail return int, 0 on success and a
 * PA_E* code otherwise. Time is an abstract event clock; an occupancy interval
 * [lower, upper) is half-open, so a buffer freed at t and one allocated at t may share
 * space.
 *
 * The cross-file API is listed below grouped by the file that defines it. */
#ifndef PLANALLOC_PLANNER_H
#define PLANALLOC_PLANNER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define PA_NO_OFFSET (-1)

enum {
  PA_OK = 0,
  PA_EINPUT = 2,     /* bad trace or bad arguments */
  PA_ENOMEM = 3,
  PA_EUNSUPPORTED = 4, /* the algorithm cannot honour this trace (e.g. fixed offsets) */
  PA_EINTERNAL = 5,  /* a layout failed validation: a planner bug, never returned silently */
  PA_ETIMEOUT = 6,
};

/* An occupancy interval: the buffer holds its address range during [lower, upper). */
typedef struct pa_span_s {
  int64_t lower, upper;
} pa_span_t;

typedef struct pa_buf_s {
  int64_t size;
  int64_t align;        /* >= 1; the offset must be a multiple of it */
  int64_t fixed;        /* PA_NO_OFFSET, or the offset the buffer must keep */
  int64_t lower, upper; /* lifespan: first span's lower, last span's upper */
  uint32_t span0;       /* index of the first occupancy interval in trace->spans */
  uint32_t nspans;      /* >= 1, sorted, disjoint, non-adjacent */
} pa_buf_t;

/* Which optional columns a trace came with (so the writer gives them back). */
enum { PA_COL_ALIGNMENT = 1, PA_COL_GAPS = 2, PA_COL_OFFSET = 4, PA_COL_LEGACY = 8 };

typedef struct pa_trace_s {
  size_t n, cap;
  pa_buf_t *bufs;
  char **ids; /* one owned string per buffer */
  size_t nspans, spancap;
  pa_span_t *spans;
  unsigned cols;
  int64_t sum_padded; /* sum of size + align - 1: bounds every stacked layout */
} pa_trace_t;

/* Every size, time and the padded sum of sizes stay below this, so offset arithmetic
 * never overflows int64. */
#define PA_VALUE_LIMIT (INT64_C(1) << 62)

static inline int64_t pa_align_up(int64_t v, int64_t a) { return a == 1 ? v : (v + a - 1) / a * a; }
static inline int64_t pa_gcd(int64_t a, int64_t b) {
  while (b) {
    int64_t r = a % b;
    a = b, b = r;
  }
  return a;
}

/* ---- trace.c ------------------------------------------------------------ */
void pa_trace_init(pa_trace_t *t);
void pa_trace_free(pa_trace_t *t);
void pa_trace_truncate(pa_trace_t *t, size_t n); /* drops the buffers from n on (the last added) */
/* Adds a buffer live over the given spans (sorted, disjoint); id may be NULL (then its
 * index is used). Fails with PA_EINPUT on a malformed buffer, PA_ENOMEM. */
int pa_trace_add(pa_trace_t *t, const char *id, int64_t size, int64_t align, int64_t fixed,
                 const pa_span_t *spans, uint32_t nspans);
static inline const pa_span_t *pa_buf_spans(const pa_trace_t *t, const pa_buf_t *b) {
  return t->spans + b->span0;
}
/* Max-live: the largest total size of buffers occupying one instant (the lower bound). */
int64_t pa_trace_maxlive(const pa_trace_t *t);
/* The first instant at which max-live is reached (-1 when out of memory). */
int64_t pa_trace_peak_time(const pa_trace_t *t);
double pa_trace_overlaps(const pa_trace_t *t);
/* A lower bound that also counts the padding alignment forces (>= max-live). */
int64_t pa_trace_bound(const pa_trace_t *t);
bool pa_trace_has_fixed(const pa_trace_t *t);
/* Raises every buffer's alignment to a multiple of align (lcm); PA_EINPUT on overflow. */
int pa_trace_apply_alignment(pa_trace_t *t, int64_t align);

/* ---- csv_read.c --------------------------------------------------------- */
/* Reads MiniMalloc's CSV. On error returns PA_EINPUT/PA_ENOMEM and writes one message
 * "LINE: what" (without prefix or file name) into err. */
int pa_csv_read(FILE *f, pa_trace_t *t, char *err, size_t errlen);
int pa_csv_read_buf(const char *data, size_t len, pa_trace_t *t, char *err, size_t errlen);

/* ---- csv_write.c -------------------------------------------------------- */
/* Writes the trace's columns plus `offset` (offsets may be NULL: the trace as it is). */
int pa_csv_write(FILE *f, const pa_trace_t *t, const int64_t *offsets);

/* ---- validate.c --------------------------------------------------------- */
/* Independent check of a layout: every offset aligned and non-negative, fixed offsets
 * kept, no two time-overlapping buffers overlapping in address. On failure writes what
 * is wrong into err. Sets *peak to max(offset + size). */
int pa_validate(const pa_trace_t *t, const int64_t *offsets, int64_t *peak, char *err,
                size_t errlen);
int64_t pa_layout_peak(const pa_trace_t *t, const int64_t *offsets);
/* qsort_r order of buffer indices (uint32_t) by their offsets in the array arg. */
int pa_cmp_offset(const void *a, const void *b, void *offsets);
/* Checks the fixed offsets among themselves: PA_EINPUT when two of them collide. */
int pa_validate_fixed(const pa_trace_t *t, char *err, size_t errlen);

/* ---- clock.c ------------------------------------------------------------ */
double pa_now(void); /* monotonic seconds */

/* ---- algos.c: the algorithm registry and the validating entry point ---- */
typedef struct pa_plan_opts_s {
  double time_limit; /* seconds for searching algorithms (best); <= 0: default */
  double gap;        /* best stops once pool <= bound * (1 + gap); 0 = only at the bound */
  bool verbose; /* progress lines on stderr */
  const atomic_bool *cancel; /* long heuristics give up (PA_ETIMEOUT) soon after it is set */
} pa_plan_opts_t;

typedef int (*pa_algo_fn)(const pa_trace_t *t, const pa_plan_opts_t *o, int64_t *offsets);

typedef struct pa_algo_s {
  const char *name;
  pa_algo_fn run;
  const char *doc;
} pa_algo_t;

const pa_algo_t *pa_algo_find(const char *name);
const pa_algo_t *pa_algo_list(size_t *count);
/* Runs an algorithm, then validates its layout; *peak gets the pool size. A layout that
 * fails validation is reported (err) and PA_EINTERNAL returned. */
int pa_plan(const pa_algo_t *a, const pa_trace_t *t, const pa_plan_opts_t *o,
            int64_t *offsets, int64_t *peak, char *err, size_t errlen);

/* ---- algo_greedy.c ------------------------------------------------------ */
/* TOTAL is MiniMalloc's "TWA": the most live bytes at any instant of the buffer's life,
 * then duration, then area. */
typedef enum { PA_ORDER_SIZE, PA_ORDER_DURATION, PA_ORDER_AREA, PA_ORDER_START,
               PA_ORDER_TOTAL, PA_ORDER_COUNT } pa_order_t;
typedef enum { PA_FIT_BEST, PA_FIT_LOWEST, PA_FIT_COUNT } pa_fit_t;
extern const char *const pa_order_names[PA_ORDER_COUNT];
extern const char *const pa_fit_names[PA_FIT_COUNT];
/* Places buffers one by one in the given order, each into the best-fitting (or lowest)
 * gap free over its whole occupancy. */
int pa_greedy(const pa_trace_t *t, pa_order_t order, pa_fit_t fit, int64_t *offsets);
/* Same with an explicit placement order (a permutation of 0..n-1). */
int pa_greedy_ordered(const pa_trace_t *t, const uint32_t *order, pa_fit_t fit,
                      int64_t *offsets);
/* Writes the placement order for a key (descending; start ascending) into out[n]. */
int pa_order_make(const pa_trace_t *t, pa_order_t order, uint32_t *out);
/* order: the buffers by their offsets in off, lowest first (ties: larger first). */
int pa_order_by_offset(const pa_trace_t *t, const int64_t *off, uint32_t *order);
/* A layout was[] valid but for buffers fixed since (their fixed offsets differ from
 * was): those take their fixed offsets, and only the buffers they meet are placed again,
 * largest first, each at the lowest gap free over its occupancy (into off[]; *moved: how
 * many). A repair in a sort's time where a whole layout again costs n greedy placements
 * (preload: a plan's first period around the recording's buffers still under it). */
int pa_greedy_settle(const pa_trace_t *t, const int64_t *was, int64_t *off, size_t *moved);

/* ---- algo_polish.c ------------------------------------------------------ */
/* Iterated greedy: from order's layout, a buffer ending at the top (of those not fixed)
 * moves to a random earlier place in the order, kept where that top does not rise; at
 * most tries layouts, stopping after patience without a lower top, or at the deadline
 * (pa_now() seconds; 0: none). order ends as the best one, off as its layout.
 * Deterministic for a trace within its deadline. */
int pa_greedy_polish(const pa_trace_t *t, uint32_t *order, pa_fit_t fit, size_t tries, size_t patience,
                     double deadline, int64_t *off);
/* The algorithm "polish": the lowest of every greedy order and fit and of the skylines
 * around fixed buffers (pa_skyline_as_order), polished (up to PA_POLISH_TRIES layouts,
 * until the deadline: pa_now() seconds, 0 for none). */
#define PA_POLISH_TRIES 2000
int pa_polish(const pa_trace_t *t, double deadline, int64_t *off);

/* ---- events.c ----------------------------------------------------------- */
typedef struct pa_event_s {
  int64_t time;
  uint32_t buf, rank; /* rank: position in start order, breaks ties */
  int32_t alloc;      /* 1 = allocation, 0 = free */
} pa_event_t;
pa_event_t *pa_events_make(const pa_trace_t *t, size_t *count);
/* Every occupancy interval's start and end, by time, ends first at equal times (a buffer
 * freed at t and one allocated at t may share space); with offsets, only the buffers
 * that have one. For the sweeps that keep the live buffers in address order. */
typedef struct pa_span_event_s {
  int64_t time;
  uint32_t buf;
  int32_t enter; /* 0 = leaves, 1 = enters */
} pa_span_event_t;
pa_span_event_t *pa_span_events(const pa_trace_t *t, const int64_t *offsets, size_t *count);

/* ---- algo_online.c ------------------------------------------------------ */
/* Time-ordered best fit over a free-block heap: what an online allocator would do. */
int pa_online_bestfit(const pa_trace_t *t, int64_t *offsets);

/* ---- algo_megengine.c --------------------------------------------------- */
int pa_megengine_pushdown(const pa_trace_t *t, int64_t *offsets);

/* ---- algo_skyline.c ----------------------------------------------------- */
/* MiniMalloc's canonical greedy: repeatedly place the unplaced buffer whose lowest
 * position (on top of every placed buffer it overlaps) is lowest. */
int pa_skyline_ordered(const pa_trace_t *t, const uint32_t *order, const atomic_bool *cancel,
                       int64_t *offsets);
/* The same with the fixed buffers as obstacles a buffer steps over where it meets one in
 * time and address, not as part of the skyline: the holes between them fill. */
int pa_skyline_around(const pa_trace_t *t, const uint32_t *order, const atomic_bool *cancel,
                      int64_t *offsets);
/* The skylines' preorders: "skyline", "skyline-area", "skyline-size". */
#define PA_SKYLINE_PREORDERS 3
extern const pa_order_t pa_skyline_preorders[PA_SKYLINE_PREORDERS];
/* The skyline around fixed buffers by preorder pre: its layout into offsets, and that
 * layout as a placement order (by offset) into order, which lowest fit lays out where
 * the skyline did or lower (those before a buffer and live with it ended below it). */
int pa_skyline_as_order(const pa_trace_t *t, pa_order_t pre, uint32_t *order, int64_t *offsets);

/* ---- algo_search.c ------------------------------------------------------ */
typedef struct pa_search_s pa_search_t;
/* Its memory grows with the square of the buffer count: larger traces are not searched. */
#define PA_SEARCH_MAX_BUFFERS 2000
/* Prepares the exact search; returns NULL when the trace is too large for it. */
pa_search_t *pa_search_new(const pa_trace_t *t, size_t max_pairs);
void pa_search_free(pa_search_t *s);
/* Looks for a layout with pool <= capacity until the deadline (pa_now() seconds).
 * PA_OK and offsets filled when found; PA_EINPUT when proven infeasible; PA_ETIMEOUT. */
int pa_search_solve(pa_search_t *s, int64_t capacity, double deadline, int64_t *offsets);
/* Makes the search give up (PA_ETIMEOUT) soon after *cancel becomes true. */
void pa_search_set_cancel(pa_search_t *s, const atomic_bool *cancel);

/* ---- algo_repair.c ------------------------------------------------------ */
/* Large-neighbourhood search over the skylines for traces the exact search cannot take:
 * pins buffers that end above the bound at the lowest address free at their birth and
 * re-runs the skylines around them, while that lowers the pool, until it is <= good or
 * the deadline. offsets gets the best layout found (the skylines' own at worst). */
int pa_repair(const pa_trace_t *t, int64_t bound, int64_t good, double deadline,
              const atomic_bool *cancel, int64_t *offsets);

/* ---- algo_peak.c -------------------------------------------------------- */
/* Stacks the buffers live at max-live's instant tight in layout's order, pins them and
 * lays the rest out around them with the gap-filling greedies, until one reaches good or
 * the deadline; out gets the best of those. PA_EUNSUPPORTED when a caller's fixed
 * buffer is among them or in their way, PA_ETIMEOUT when no greedy had time to run. */
int pa_peak_tile(const pa_trace_t *t, const int64_t *layout, int64_t good, double deadline,
                 int64_t *out);

/* ---- snap.c --------------------------------------------------------------- */
/* What constrains each buffer of a valid layout from moving: its neighbours in address
 * over time, and limit above. */
typedef struct pa_snap_room_s pa_snap_room_t;
pa_snap_room_t *pa_snap_room_new(const pa_trace_t *t, const int64_t *offsets, int64_t limit);
void pa_snap_room_free(pa_snap_room_t *r);
/* out: offsets (the layout the room was found for) with buffers of a page or more moved
 * to page starts where they then span fewer pages, all up or all down (whichever saves
 * more), pages counted from base (where the layout is placed); returns the pages saved.
 * out must not be offsets. */
size_t pa_snap(const pa_snap_room_t *r, const pa_trace_t *t, const int64_t *offsets, int64_t page, int64_t base,
               int64_t *out);

/* ---- algo_best.c -------------------------------------------------------- */
int pa_best(const pa_trace_t *t, const pa_plan_opts_t *o, int64_t *offsets);
/* The greedy orders' cost, as the portfolio estimates it: nanoseconds per pair of
 * buffers live at once (measured on the IOPDDL traces, with 2x headroom). */
#define PA_GREEDY_NS_PER_OVERLAP 90.0
/* best's portfolio on this thread, in its order, each heuristic whose estimated cost still
 * fits in `seconds` with those run before it (a costly one is skipped, the cheap ones after
 * it run), until one's pool is at most `good`: PA_OK with that layout in
 * offsets and its pool in *peak, else PA_ETIMEOUT. Decided by the trace alone (no clock),
 * so the same trace gets the same layout whatever the machine's load. */
int pa_best_quick(const pa_trace_t *t, const pa_plan_opts_t *o, double seconds, int64_t good, int64_t *offsets,
                  int64_t *peak);

#endif
