/* The reactive victim choice, one copy for the preload (pages of its pool) and the
 * simulator (buffers of a trace): each describes its candidates, this file scores and
 * picks. The score is MegEngine DTR's for a swap: what bringing the victim back costs,
 * over what its leaving frees and how long it has been idle, raised for each time it
 * left already (a buffer that keeps coming back is in use). Where the future is known
 * (the served phase repeats the recorded iteration), Belady's distance replaces the
 * staleness. The pick samples, as the DTR prototype does: with many candidates, the best
 * of about sqrt(n) drawn at random, ignoring those under 1 % of the mean size (moving
 * them frees little); if that finds none, every candidate; then even the small ones. */
#include "dtr.h"

#include <math.h>

double pa_dtr_score(const pa_victim_t *v, double repeat) {
  return v->cost * (1 + repeat * v->evictions) / (v->gain * (v->idle + 1));
}

double pa_belady_score(double cost, double freed, double next_use) { return cost / (freed * (next_use + 1)); }

static uint64_t next_rng(uint64_t *rng) {
  *rng ^= *rng << 13, *rng ^= *rng >> 7, *rng ^= *rng << 17;
  return *rng;
}

/* The lowest-scoring of k candidates (drawn at random, or the first k in order). */
static size_t best_of(size_t n, size_t k, uint64_t *rng, double min_size, pa_score_fn *score, void *ctx) {
  size_t best = SIZE_MAX;
  double best_score = INFINITY;
  for (size_t i = 0; i < k; i++) {
    size_t c = rng ? next_rng(rng) % n : i;
    double sc = score(ctx, c, min_size);
    if (sc < best_score) best_score = sc, best = c;
  }
  return best;
}

#define SAMPLE_ABOVE 64
#define SAMPLE_MIN 32

size_t pa_victim_pick(size_t n, double mean_size, uint64_t *rng, pa_score_fn *score, void *ctx) {
  size_t k = (size_t)ceil(sqrt((double)n)), best = SIZE_MAX;
  if (rng && n > SAMPLE_ABOVE) best = best_of(n, k < SAMPLE_MIN ? SAMPLE_MIN : k, rng, mean_size / 100, score, ctx);
  if (best == SIZE_MAX) best = best_of(n, n, NULL, mean_size / 100, score, ctx);
  if (best == SIZE_MAX) best = best_of(n, n, NULL, 0, score, ctx);
  return best;
}
