/* best: run the heuristics, keep the smallest layout, then search toward max-live. */
#include "planner.h"

#include <stdlib.h>
#include <string.h>

static int64_t gcd64(int64_t a, int64_t b) {
  while (b) {
    int64_t r = a % b;
    a = b, b = r;
  }
  return a;
}

/* Canonical layouts put buffers at sums of sizes rounded up to alignments, so every
 * pool size they reach is a multiple of this: capacities step by it. */
static int64_t grain(const pa_trace_t *t) {
  int64_t g = 0;
  for (size_t i = 0; i < t->n && g != 1; i++) {
    g = gcd64(g, t->bufs[i].size);
    if (t->bufs[i].align > 1) g = gcd64(g, t->bufs[i].align);
  }
  return g > 0 ? g : 1;
}

typedef struct best_s {
  const pa_trace_t *t;
  const pa_plan_opts_t *o;
  int64_t *best, *tmp, peak, bound, step;
  double start, deadline;
} best_t;

static void keep(best_t *b, const char *name) {
  int64_t peak = pa_layout_peak(b->t, b->tmp);
  if (b->o->verbose)
    fprintf(stderr, "planalloc: best: %-16s pool %lld (%.4fx)\n", name, (long long)peak,
            b->bound ? (double)peak / (double)b->bound : 1.0);
  if (peak < b->peak) {
    b->peak = peak;
    memcpy(b->best, b->tmp, b->t->n * sizeof *b->tmp);
  }
}

static bool good_enough(const best_t *b) {
  return b->peak <= b->bound || (double)(b->peak - b->bound) <= (double)b->bound * b->o->gap;
}

/* The portfolio, cheapest and most often best first. Cost is nanoseconds per pair of
 * buffers live at once (the overlap-driven heuristics' work), measured on the IOPDDL
 * traces with 2x headroom; a heuristic runs only if it is expected to end in time. */
static const struct {
  const char *name;
  double ns_per_overlap;
} portfolio[] = {
    {"start-best", 0}, {"megengine", 0}, {"skyline-area", 30}, {"skyline", 30},
    {"skyline-size", 30}, {"size-best", 90}, {"duration-best", 90}, {"size-lowest", 90},
    {"area-best", 90}, {"duration-lowest", 90}, {"area-lowest", 90}, {"start-lowest", 90},
};

static void heuristics(best_t *b) {
  double overlaps = pa_trace_overlaps(b->t);
  for (size_t i = 0; i < sizeof portfolio / sizeof *portfolio && !good_enough(b); i++) {
    double cost = overlaps * portfolio[i].ns_per_overlap * 1e-9;
    if (i > 1 && pa_now() + cost > b->deadline) continue;
    const pa_algo_t *a = pa_algo_find(portfolio[i].name);
    for (size_t k = 0; k < b->t->n; k++) b->tmp[k] = PA_NO_OFFSET;
    if (a->run(b->t, b->o, b->tmp) == PA_OK) keep(b, portfolio[i].name);
  }
}

static int probe(best_t *b, pa_search_t *s, int64_t cap, double budget) {
  double end = pa_now() + budget;
  int rc = pa_search_solve(s, cap, end < b->deadline ? end : b->deadline, b->tmp);
  if (b->o->verbose)
    fprintf(stderr, "planalloc: best: search at %lld (%.2f s): %s\n", (long long)cap, budget,
            rc == PA_OK ? "found" : rc == PA_EINPUT ? "infeasible" : "gave up");
  if (rc == PA_OK) keep(b, "search");
  return rc;
}

/* The search's running time at a capacity is heavy-tailed and erratic (a capacity may
 * time out while a smaller one succeeds in a tenth of a second), so: one probe at the
 * bound with a fifth of the time (constructed and most real instances reach it), then
 * bisection between the bound and the best pool, each probe with a third of the time
 * left; a probe that gives up counts as infeasible. Simulated on measured probe times
 * for MiniMalloc's D and J, this beat descending sweeps and restarted bisection. */
static void refine(best_t *b, pa_search_t *s) {
  int64_t lo = (b->bound + b->step - 1) / b->step * b->step;
  if (lo >= b->peak) return;
  int rc = probe(b, s, lo, (b->deadline - pa_now()) * 0.2);
  if (rc == PA_OK || rc == PA_ENOMEM) return;
  lo += b->step;
  while (lo < b->peak && !good_enough(b) && pa_now() < b->deadline) {
    int64_t cap = lo + (b->peak - lo) / b->step / 2 * b->step;
    rc = probe(b, s, cap, (b->deadline - pa_now()) / 3);
    if (rc == PA_ENOMEM) return;
    if (rc != PA_OK) lo = cap + b->step;
  }
}

int pa_best(const pa_trace_t *t, const pa_plan_opts_t *o, int64_t *off) {
  best_t b = {.t = t, .o = o, .best = off, .peak = INT64_MAX, .step = grain(t)};
  b.tmp = malloc((t->n + 1) * sizeof *b.tmp);
  b.bound = pa_trace_bound(t);
  if (!b.tmp || b.bound < 0) return free(b.tmp), PA_ENOMEM;
  b.start = pa_now();
  b.deadline = b.start + (o->time_limit > 0 ? o->time_limit : 10.0);
  heuristics(&b);
  if (!good_enough(&b) && pa_now() < b.deadline) {
    pa_search_t *s = pa_search_new(t, 20u << 20);
    if (s) refine(&b, s);
    pa_search_free(s);
  }
  free(b.tmp);
  return b.peak == INT64_MAX ? PA_ENOMEM : PA_OK;
}
