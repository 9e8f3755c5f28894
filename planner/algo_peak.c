/* Peak tiling: a layout at the bound leaves no hole at the instant of max-live, so the
 * buffers live then lie stacked without space between them, in some order. Taking that
 * order from a good layout, stacking them tight and pinning them there splits the rest
 * of the trace in two (buffers that die before the instant, buffers born after it) that
 * the gap-filling greedies solve around the pins (pa_skyline_ordered stacks on them:
 * nothing goes under a pin). On pangu_2.6B the repair's layout (17.3 MB of hole under
 * one long buffer at the peak) becomes a layout at max-live this way. */
#include "planner.h"

#include <stdlib.h>
#include <string.h>

/* Gap-filling greedies that use the room under and between pins; the first two are the
 * ones that reached the bound from pinned real traces. */
static const struct {
  pa_order_t order;
  pa_fit_t fit;
} tries[] = {{PA_ORDER_START, PA_FIT_LOWEST}, {PA_ORDER_DURATION, PA_FIT_BEST},
             {PA_ORDER_AREA, PA_FIT_BEST}, {PA_ORDER_DURATION, PA_FIT_LOWEST}};

#define NS_PER_OVERLAP 90 /* the greedies' cost, as best's portfolio measures it */

static bool live_at(const pa_trace_t *t, const pa_buf_t *b, int64_t when) {
  const pa_span_t *s = pa_buf_spans(t, b);
  for (uint32_t k = 0; k < b->nspans; k++)
    if (s[k].lower <= when && when < s[k].upper) return true;
  return false;
}

/* Pins the buffers live at the peak, stacked in layout's order; false if the caller
 * fixed one of them (its offset is not ours to choose). The stack may still collide with
 * a caller's fixed buffer live at another time: the caller checks. */
static bool pin_peak(pa_trace_t *t, const int64_t *layout, uint32_t *stack) {
  int64_t when = pa_trace_peak_time(t), top = 0;
  size_t n = 0;
  for (size_t i = 0; i < t->n; i++)
    if (live_at(t, &t->bufs[i], when)) {
      if (t->bufs[i].fixed != PA_NO_OFFSET) return false;
      stack[n++] = (uint32_t)i;
    }
  qsort_r(stack, n, sizeof *stack, pa_cmp_offset, (void *)layout);
  for (size_t k = 0; k < n; k++) {
    pa_buf_t *b = &t->bufs[stack[k]];
    b->fixed = pa_align_up(top, b->align);
    top = b->fixed + b->size;
  }
  return n > 0;
}

static int64_t best_greedy(const pa_trace_t *t, int64_t good, double deadline, int64_t *scratch,
                           int64_t *out) {
  double cost = pa_trace_overlaps(t) * NS_PER_OVERLAP * 1e-9;
  int64_t best = INT64_MAX;
  for (size_t k = 0; k < sizeof tries / sizeof *tries && best > good && pa_now() + cost < deadline;
       k++) {
    if (pa_greedy(t, tries[k].order, tries[k].fit, scratch)) break;
    int64_t peak = pa_layout_peak(t, scratch);
    if (peak < best) best = peak, memcpy(out, scratch, t->n * sizeof *out);
  }
  return best;
}

int pa_peak_tile(const pa_trace_t *t, const int64_t *layout, int64_t good, double deadline,
                 int64_t *out) {
  pa_trace_t pinned = *t;
  size_t n = t->n + 1;
  pinned.bufs = malloc(n * sizeof *pinned.bufs);
  uint32_t *stack = malloc(n * sizeof *stack);
  int64_t *scratch = malloc(n * sizeof *scratch);
  int rc = pinned.bufs && stack && scratch ? PA_OK : PA_ENOMEM;
  if (!rc) {
    memcpy(pinned.bufs, t->bufs, t->n * sizeof *t->bufs);
    char why[8];
    rc = pin_peak(&pinned, layout, stack) && !pa_validate_fixed(&pinned, why, sizeof why)
             ? PA_OK : PA_EUNSUPPORTED;
  }
  if (!rc && best_greedy(&pinned, good, deadline, scratch, out) == INT64_MAX) rc = PA_ETIMEOUT;
  free(pinned.bufs), free(stack), free(scratch);
  return rc;
}
