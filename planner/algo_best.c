/* best: run the heuristics, keep the smallest layout, then search toward max-live. */
#include "planner.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Canonical layouts put buffers at sums of sizes rounded up to alignments, so every
 * pool size they reach is a multiple of this: capacities step by it. */
static int64_t grain(const pa_trace_t *t) {
  int64_t g = 0;
  for (size_t i = 0; i < t->n && g != 1; i++) {
    g = pa_gcd(g, t->bufs[i].size);
    if (t->bufs[i].align > 1) g = pa_gcd(g, t->bufs[i].align);
  }
  return g > 0 ? g : 1;
}

typedef struct best_s {
  const pa_trace_t *t;
  const pa_plan_opts_t *o;
  int64_t *best, peak, bound, step;
  double deadline;
  pthread_mutex_t lock; /* peak and best, once the search threads run */
  atomic_bool stop;     /* good enough: the others give up */
} best_t;

static void keep_from(best_t *b, const int64_t *layout, const char *name) {
  int64_t peak = pa_layout_peak(b->t, layout);
  pthread_mutex_lock(&b->lock);
  if (b->o->verbose)
    fprintf(stderr, "planalloc: best: %-16s pool %lld (%.4fx)\n", name, (long long)peak,
            b->bound ? (double)peak / (double)b->bound : 1.0);
  if (peak < b->peak) {
    b->peak = peak;
    memcpy(b->best, layout, b->t->n * sizeof *layout);
  }
  pthread_mutex_unlock(&b->lock);
}

static int64_t current_peak(best_t *b) {
  pthread_mutex_lock(&b->lock);
  int64_t p = b->peak;
  pthread_mutex_unlock(&b->lock);
  return p;
}

static bool good_enough(const best_t *b) {
  return b->peak <= b->bound || (double)(b->peak - b->bound) <= (double)b->bound * b->o->gap;
}

/* The portfolio, most often best first. Cost is nanoseconds per pair of buffers live at
 * once (the overlap-driven heuristics' work), measured on the IOPDDL traces with 2x
 * headroom; a costly heuristic runs only if it is expected to end in time. Two threads
 * take entries in turn, so the first skyline (which reaches the bound on most real
 * traces) runs beside the two cheap ones, and the one still running when the other
 * reaches the bound is cancelled. */
static const struct {
  const char *name;
  double ns_per_overlap;
} portfolio[] = {
    {"skyline-area", 30}, {"start-best", 0}, {"megengine", 0}, {"skyline", 30},
    {"skyline-size", 30}, {"size-best", PA_GREEDY_NS_PER_OVERLAP}, {"duration-best", PA_GREEDY_NS_PER_OVERLAP},
    {"size-lowest", PA_GREEDY_NS_PER_OVERLAP}, {"area-best", PA_GREEDY_NS_PER_OVERLAP},
    {"duration-lowest", PA_GREEDY_NS_PER_OVERLAP}, {"area-lowest", PA_GREEDY_NS_PER_OVERLAP},
    {"start-lowest", PA_GREEDY_NS_PER_OVERLAP},
};

int pa_best_quick(const pa_trace_t *t, const pa_plan_opts_t *o, double seconds, int64_t good, int64_t *off,
                  int64_t *peak) {
  char err[256];
  double pairs = pa_trace_overlaps(t), cost = 0;
  for (size_t i = 0; i < sizeof portfolio / sizeof *portfolio; i++) {
    double c = pairs * portfolio[i].ns_per_overlap * 1e-9;
    if (cost + c > seconds) continue; /* the cheaper ones after it still run: megengine, start-best cost nothing */
    cost += c;
    if (!pa_plan(pa_algo_find(portfolio[i].name), t, o, off, peak, err, sizeof err) && *peak <= good) return PA_OK;
  }
  return PA_ETIMEOUT;
}

typedef struct heur_s {
  best_t *b;
  double overlaps;
  atomic_size_t next;
} heur_t;

static bool good_enough_now(best_t *b) {
  pthread_mutex_lock(&b->lock);
  bool done = good_enough(b);
  pthread_mutex_unlock(&b->lock);
  return done;
}

static void *heuristic_worker(void *arg) {
  heur_t *hw = arg;
  best_t *b = hw->b;
  int64_t *layout = malloc((b->t->n + 1) * sizeof *layout);
  pa_plan_opts_t o = *b->o;
  o.cancel = &b->stop;
  for (size_t i; layout && (i = atomic_fetch_add(&hw->next, 1)) < sizeof portfolio / sizeof *portfolio;) {
    if (good_enough_now(b)) break;
    double cost = hw->overlaps * portfolio[i].ns_per_overlap * 1e-9;
    if (cost > 0 && pa_now() + cost > b->deadline) continue;
    for (size_t k = 0; k < b->t->n; k++) layout[k] = PA_NO_OFFSET;
    if (pa_algo_find(portfolio[i].name)->run(b->t, &o, layout) == PA_OK)
      keep_from(b, layout, portfolio[i].name);
    if (good_enough_now(b)) atomic_store(&b->stop, true);
  }
  free(layout);
  return NULL;
}

static void heuristics(best_t *b) {
  heur_t hw = {.b = b, .overlaps = pa_trace_overlaps(b->t)};
  pthread_t th;
  bool threaded = pthread_create(&th, NULL, heuristic_worker, &hw) == 0;
  heuristic_worker(&hw);
  if (threaded) pthread_join(th, NULL);
  atomic_store(&b->stop, false);
}

typedef struct worker_s {
  best_t *b;
  pa_search_t *s;
  int64_t *layout;
  void *(*run)(void *); /* its part: bound_worker or bisect_worker */
} worker_t;

static int probe(worker_t *w, int64_t cap, double budget) {
  best_t *b = w->b;
  double end = pa_now() + budget;
  int rc = pa_search_solve(w->s, cap, end < b->deadline ? end : b->deadline, w->layout);
  if (b->o->verbose)
    fprintf(stderr, "planalloc: best: search at %lld (%.2f s): %s\n", (long long)cap, budget,
            rc == PA_OK ? "found" : rc == PA_EINPUT ? "infeasible" : "gave up");
  if (rc == PA_OK) keep_from(b, w->layout, "search");
  return rc;
}

static int64_t bound_capacity(const best_t *b) {
  return (b->bound + b->step - 1) / b->step * b->step;
}

/* Most constructed and real instances reach the bound, so one worker first spends 40 %
 * of the time there; then it walks down one grain at a time under the best pool with
 * short probes, going on past a capacity that gives up (a smaller one often succeeds). */
static void *bound_worker(void *arg) {
  worker_t *w = arg;
  best_t *b = w->b;
  int64_t lo = bound_capacity(b);
  double total = b->deadline - pa_now(), slice = total / 20;
  int rc = probe(w, lo, total * 0.4);
  if (rc == PA_OK) atomic_store(&b->stop, true);
  if (rc == PA_OK || rc == PA_ENOMEM) return NULL;
  lo += b->step;
  for (int64_t cap = current_peak(b) - b->step; cap >= lo && !atomic_load(&b->stop) &&
                                               pa_now() < b->deadline;) {
    rc = probe(w, cap, slice);
    if (rc == PA_ENOMEM) break;
    if (rc == PA_EINPUT) break; /* proven: nothing fits at or below cap */
    int64_t peak = current_peak(b);
    cap = rc == PA_OK || cap >= peak ? peak - b->step : cap - b->step;
  }
  return NULL;
}

/* The other bisects between the bound and the best pool. The search's running time at
 * a capacity is heavy-tailed and erratic (a capacity may time out while a smaller one
 * succeeds in a tenth of a second), so each probe gets a third of the time left and a
 * probe that gives up counts as infeasible. On measured probe times for MiniMalloc's D
 * and J this beat descending sweeps and restarted bisection. */
static void *bisect_worker(void *arg) {
  worker_t *w = arg;
  best_t *b = w->b;
  int64_t floor = bound_capacity(b) + b->step, lo = floor, peak;
  while (!atomic_load(&b->stop) && pa_now() < b->deadline) {
    peak = current_peak(b);
    if (floor >= peak) { /* proven optimal: nothing fits below the best pool */
      atomic_store(&b->stop, true);
      break;
    }
    if (lo >= peak) { /* converged: look again just under the best, where probes succeed */
      int64_t window = (peak - floor) / 8 / b->step * b->step;
      lo = peak - (window > b->step ? window : b->step);
      if (lo < floor) break;
    }
    int64_t cap = lo + (peak - lo) / b->step / 2 * b->step;
    int rc = probe(w, cap, (b->deadline - pa_now()) / 3);
    if (rc == PA_ENOMEM) break;
    if (rc == PA_EINPUT) floor = cap + b->step; /* proven: nothing fits at or below cap */
    if (rc != PA_OK) lo = cap + b->step;
  }
  return NULL;
}

/* A worker's search state, built on its own thread (the two builds took 20 ms in turn
 * for 864 buffers, the whole of a 20 ms budget), then its part of the search while time
 * is left. */
static void *worker_run(void *arg) {
  worker_t *w = arg;
  w->s = pa_search_new(w->b->t, 20u << 20);
  w->layout = malloc((w->b->t->n + 1) * sizeof *w->layout);
  if (w->s) pa_search_set_cancel(w->s, &w->b->stop);
  if (w->s && w->layout && pa_now() < w->b->deadline) w->run(w);
  return NULL;
}

static void refine(best_t *b) {
  worker_t w[2] = {{b, NULL, NULL, bound_worker}, {b, NULL, NULL, bisect_worker}};
  pthread_t th;
  if (bound_capacity(b) < current_peak(b)) {
    bool threaded = pthread_create(&th, NULL, worker_run, &w[0]) == 0;
    if (!threaded) worker_run(&w[0]);
    worker_run(&w[1]);
    if (threaded) pthread_join(th, NULL);
  }
  for (int i = 0; i < 2; i++) pa_search_free(w[i].s), free(w[i].layout);
}

/* Traces too large for the exact search get the skylines' repair instead, then the
 * peak tiling of the best layout so far (it needs a good order at the peak to start). */
static void repair(best_t *b) {
  int64_t *layout = malloc((b->t->n + 1) * sizeof *layout);
  int64_t good = b->bound + (int64_t)((double)b->bound * b->o->gap);
  if (layout && pa_repair(b->t, b->bound, good, b->deadline, b->o->cancel, layout) == PA_OK)
    keep_from(b, layout, "repair");
  if (layout && !good_enough(b) && pa_peak_tile(b->t, b->best, good, b->deadline, layout) == PA_OK)
    keep_from(b, layout, "peak");
  free(layout);
}

int pa_best(const pa_trace_t *t, const pa_plan_opts_t *o, int64_t *off) {
  best_t b = {.t = t, .o = o, .best = off, .peak = INT64_MAX, .step = grain(t),
              .lock = PTHREAD_MUTEX_INITIALIZER};
  b.bound = pa_trace_bound(t);
  if (b.bound < 0) return PA_ENOMEM;
  b.deadline = pa_now() + (o->time_limit > 0 ? o->time_limit : 10.0);
  heuristics(&b);
  if (!good_enough(&b) && pa_now() < b.deadline)
    t->n > PA_SEARCH_MAX_BUFFERS ? repair(&b) : refine(&b);
  return b.peak == INT64_MAX ? PA_ENOMEM : PA_OK;
}
