/* The algorithm table and the one entry point that validates every layout. */
#include "planner.h"

#include <stdlib.h>
#include <string.h>

#define GREEDY(ORDER, FIT)                                                         \
  static int run_##ORDER##_##FIT(const pa_trace_t *t, const pa_plan_opts_t *o,     \
                                 int64_t *off) {                                   \
    (void)o;                                                                       \
    return pa_greedy(t, PA_ORDER_##ORDER, PA_FIT_##FIT, off);                      \
  }
GREEDY(SIZE, BEST)
GREEDY(SIZE, LOWEST)
GREEDY(DURATION, BEST)
GREEDY(DURATION, LOWEST)
GREEDY(AREA, BEST)
GREEDY(AREA, LOWEST)
GREEDY(START, LOWEST)
#undef GREEDY

static int run_online(const pa_trace_t *t, const pa_plan_opts_t *o, int64_t *off) {
  (void)o;
  return pa_online_bestfit(t, off);
}

static int run_megengine(const pa_trace_t *t, const pa_plan_opts_t *o, int64_t *off) {
  (void)o;
  return pa_megengine_pushdown(t, off);
}

static int skyline_by(const pa_trace_t *t, const pa_plan_opts_t *o, pa_order_t order,
                      int64_t *off) {
  uint32_t *perm = malloc((t->n + 1) * sizeof *perm);
  int rc = perm ? pa_order_make(t, order, perm) : PA_ENOMEM;
  if (rc == PA_OK) rc = pa_skyline_around(t, perm, o->cancel, off);
  free(perm);
  return rc;
}

static int run_polish(const pa_trace_t *t, const pa_plan_opts_t *o, int64_t *off) {
  return pa_polish(t, pa_now() + (o->time_limit > 0 ? o->time_limit : 10.0), off);
}

static int run_skyline(const pa_trace_t *t, const pa_plan_opts_t *o, int64_t *off) {
  return skyline_by(t, o, PA_ORDER_TOTAL, off);
}

static int run_skyline_area(const pa_trace_t *t, const pa_plan_opts_t *o, int64_t *off) {
  return skyline_by(t, o, PA_ORDER_AREA, off);
}

static int run_skyline_size(const pa_trace_t *t, const pa_plan_opts_t *o, int64_t *off) {
  return skyline_by(t, o, PA_ORDER_SIZE, off);
}

static const pa_algo_t algos[] = {
    {"best", pa_best, "run the heuristics, keep the smallest, then search toward max-live"},
    {"megengine", run_megengine, "MegEngine PUSHDOWN: time-ordered best fit, then push down"},
    {"size-best", run_SIZE_BEST, "size descending, best-fitting gap (TFLite, XLA spatial)"},
    {"size-lowest", run_SIZE_LOWEST, "size descending, lowest fitting gap"},
    {"duration-best", run_DURATION_BEST, "duration descending, best-fitting gap (XLA temporal)"},
    {"duration-lowest", run_DURATION_LOWEST, "duration descending, lowest fitting gap"},
    {"area-best", run_AREA_BEST, "size x duration descending, best-fitting gap"},
    {"area-lowest", run_AREA_LOWEST, "size x duration descending, lowest fitting gap"},
    {"start-best", run_online, "start ascending, best fit: an online best-fit allocator"},
    {"start-lowest", run_START_LOWEST, "start ascending, lowest fitting gap (first fit)"},
    {"polish", run_polish, "the lowest greedy or skyline layout, a buffer at its top moved earlier in the order "
                           "while the top does not rise (iterated greedy; honours fixed offsets)"},
    {"skyline", run_skyline, "MiniMalloc's canonical greedy: lowest reachable buffer first, "
                             "ties by most live bytes, duration, area (TWA); fixed buffers are obstacles"},
    {"skyline-area", run_skyline_area, "the same, ties by area (size x duration)"},
    {"skyline-size", run_skyline_size, "the same, ties by size"},
};

const pa_algo_t *pa_algo_list(size_t *count) {
  *count = sizeof algos / sizeof *algos;
  return algos;
}

const pa_algo_t *pa_algo_find(const char *name) {
  for (size_t i = 0; i < sizeof algos / sizeof *algos; i++)
    if (!strcmp(algos[i].name, name)) return &algos[i];
  return NULL;
}

int pa_plan(const pa_algo_t *a, const pa_trace_t *t, const pa_plan_opts_t *o,
            int64_t *offsets, int64_t *peak, char *err, size_t errlen) {
  int rc = pa_validate_fixed(t, err, errlen);
  if (rc) return rc;
  for (size_t i = 0; i < t->n; i++) offsets[i] = PA_NO_OFFSET;
  rc = a->run(t, o, offsets);
  if (rc == PA_EUNSUPPORTED)
    snprintf(err, errlen, "algorithm %s cannot honour fixed offsets", a->name);
  else if (rc == PA_ENOMEM)
    snprintf(err, errlen, "out of memory in algorithm %s", a->name);
  if (rc) return rc;
  char why[256];
  rc = pa_validate(t, offsets, peak, why, sizeof why);
  if (rc) snprintf(err, errlen, "internal: %s produced an invalid layout: %s", a->name, why);
  return rc;
}
