/* The time-ordered event list shared by the simulations (online best fit, MegEngine):
 * at equal times frees come first, so a buffer freed at t and one allocated at t may
 * share space; allocations at one time come largest first. A buffer with gaps is
 * simulated over its whole lifespan (conservative). */
#include "planner.h"

#include <stdlib.h>

static int ev_cmp(const void *a, const void *b) {
  const pa_event_t *x = a, *y = b;
  if (x->time != y->time) return x->time < y->time ? -1 : 1;
  if (x->alloc != y->alloc) return x->alloc - y->alloc;
  if (x->rank != y->rank) return x->rank < y->rank ? -1 : 1;
  return 0;
}

pa_event_t *pa_events_make(const pa_trace_t *t, size_t *count) {
  uint32_t *order = malloc((t->n + 1) * sizeof *order);
  pa_event_t *ev = malloc((2 * t->n + 1) * sizeof *ev);
  if (!order || !ev || pa_order_make(t, PA_ORDER_START, order)) {
    free(order), free(ev);
    return NULL;
  }
  for (uint32_t k = 0; k < t->n; k++) {
    const pa_buf_t *b = &t->bufs[order[k]];
    ev[2 * k] = (pa_event_t){b->lower, order[k], k, 1};
    ev[2 * k + 1] = (pa_event_t){b->upper, order[k], k, 0};
  }
  free(order);
  qsort(ev, 2 * t->n, sizeof *ev, ev_cmp);
  *count = 2 * t->n;
  return ev;
}

static int span_ev_cmp(const void *a, const void *b) {
  const pa_span_event_t *x = a, *y = b;
  if (x->time != y->time) return x->time < y->time ? -1 : 1;
  if (x->enter != y->enter) return x->enter - y->enter;
  return (x->buf > y->buf) - (x->buf < y->buf);
}

pa_span_event_t *pa_span_events(const pa_trace_t *t, const int64_t *offsets, size_t *count) {
  pa_span_event_t *ev = malloc((2 * t->nspans + 1) * sizeof *ev);
  size_t k = 0;
  for (uint32_t i = 0; ev && i < t->n; i++) {
    if (offsets && offsets[i] == PA_NO_OFFSET) continue;
    for (uint32_t s = 0; s < t->bufs[i].nspans; s++) {
      ev[k++] = (pa_span_event_t){t->spans[t->bufs[i].span0 + s].lower, i, 1};
      ev[k++] = (pa_span_event_t){t->spans[t->bufs[i].span0 + s].upper, i, 0};
    }
  }
  if (ev) qsort(ev, k, sizeof *ev, span_ev_cmp);
  *count = k;
  return ev;
}
