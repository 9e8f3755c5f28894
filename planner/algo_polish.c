/* Polish: iterated greedy over a placement order. A greedy layout's top is set by the
 * few buffers that found no gap low enough when their turn came; placed earlier, they
 * take the gap and others go round them. So a move takes one buffer that ends at the top
 * to a random earlier place in the order and lays everything out again; it is kept
 * where the top does not rise (moves along a plateau too: the next one starts from
 * there). Around fixed buffers, where the exact search cannot go (a plan laid out in the
 * holes between a program's weights), the best of the greedy orders and the skylines
 * lay torch_stream's iterations 1-2 pages above where this ends (seed 13, 202 buffers:
 * 102.5 -> 101.4 pages against a max-live of 100.4, within 20 moves).
 * Deterministic: the moves come from a seed, so a trace gets the same layout each run
 * (within its deadline). */
#include "planner.h"

#include <stdlib.h>
#include <string.h>

/* The top of the buffers the layout places (fixed ones may lie above them). */
static int64_t placed_top(const pa_trace_t *t, const int64_t *off) {
  int64_t top = 0;
  for (size_t i = 0; i < t->n; i++)
    if (t->bufs[i].fixed == PA_NO_OFFSET && off[i] + t->bufs[i].size > top) top = off[i] + t->bufs[i].size;
  return top;
}

static uint64_t next(uint64_t *s) {
  *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
  return *s;
}

/* One move: a buffer of the layout off whose end is its top goes to a random earlier
 * place of order (into try_); false when none can move (all at the order's front). */
static bool move(const pa_trace_t *t, const uint32_t *order, const int64_t *off, int64_t top, uint64_t *seed,
                 uint32_t *try_) {
  size_t n = t->n, seen = 0, pick = n;
  for (size_t i = 1; i < n; i++) { /* reservoir sampling over the buffers at the top */
    uint32_t b = order[i];
    if (t->bufs[b].fixed == PA_NO_OFFSET && off[b] + t->bufs[b].size == top && next(seed) % ++seen == 0) pick = i;
  }
  if (pick == n) return false;
  size_t to = next(seed) % pick;
  memcpy(try_, order, n * sizeof *order);
  memmove(try_ + to + 1, try_ + to, (pick - to) * sizeof *order);
  try_[to] = order[pick];
  return true;
}

int pa_greedy_polish(const pa_trace_t *t, uint32_t *order, pa_fit_t fit, size_t tries, size_t patience,
                     double deadline, int64_t *off) {
  uint32_t *try_ = malloc((t->n + 1) * sizeof *try_);
  int64_t *o = malloc((t->n + 1) * sizeof *o);
  int rc = try_ && o ? pa_greedy_ordered(t, order, fit, off) : PA_ENOMEM;
  int64_t top = rc ? 0 : placed_top(t, off);
  uint64_t seed = 0x9e3779b97f4a7c15ull ^ t->n;
  for (size_t k = 0, since = 0; !rc && k < tries && since < patience; k++, since++) {
    if ((deadline > 0 && pa_now() > deadline) || !move(t, order, off, top, &seed, try_)) break;
    if ((rc = pa_greedy_ordered(t, try_, fit, o))) break;
    int64_t peak = placed_top(t, o);
    if (peak > top) continue;
    if (peak < top) since = 0;
    top = peak;
    memcpy(order, try_, t->n * sizeof *order), memcpy(off, o, t->n * sizeof *off);
  }
  free(try_), free(o);
  return rc;
}

/* Around a program's weights the skylines (as orders: pa_skyline_as_order) start lower
 * than any greedy order (torch_stream seed 123: 40.4 -> 39.2 pages, polished 38.2 against
 * 38.9 from the best greedy order). */
/* The algorithm: the lowest of the greedy orders and fits and of the skylines, polished
 * until the deadline. */
int pa_polish(const pa_trace_t *t, double deadline, int64_t *off) {
  uint32_t *order = malloc((t->n + 1) * sizeof *order), *best = malloc((t->n + 1) * sizeof *best);
  int64_t low = INT64_MAX;
  pa_fit_t fit = PA_FIT_LOWEST;
  int rc = order && best ? PA_OK : PA_ENOMEM;
  for (int k = 0; !rc && k < PA_ORDER_COUNT * PA_FIT_COUNT; k++) {
    if ((rc = pa_order_make(t, (pa_order_t)(k / PA_FIT_COUNT), order)) ||
        (rc = pa_greedy_ordered(t, order, (pa_fit_t)(k % PA_FIT_COUNT), off)))
      break;
    int64_t top = placed_top(t, off);
    if (top < low) low = top, fit = (pa_fit_t)(k % PA_FIT_COUNT), memcpy(best, order, t->n * sizeof *order);
  }
  for (size_t k = 0; !rc && k < PA_SKYLINE_PREORDERS; k++) {
    if ((rc = pa_skyline_as_order(t, pa_skyline_preorders[k], order, off)) ||
        (rc = pa_greedy_ordered(t, order, PA_FIT_LOWEST, off)))
      break;
    int64_t top = placed_top(t, off);
    if (top < low) low = top, fit = PA_FIT_LOWEST, memcpy(best, order, t->n * sizeof *order);
  }
  if (!rc) rc = pa_greedy_polish(t, best, fit, PA_POLISH_TRIES, PA_POLISH_TRIES / 4, deadline, off);
  free(order), free(best);
  return rc;
}
