/* A static index over all occupancy intervals of a trace, answering "which placed buffers
 * overlap this buffer in time" in O(log n + k log(n/k)): spans sorted by lower, a max-tree
 * of the upper ends of placed spans over that order. */
#ifndef PLANALLOC_ITREE_H
#define PLANALLOC_ITREE_H

#include "planner.h"

typedef struct pa_range_s {
  int64_t lo, hi; /* an occupied address range [lo, hi) */
} pa_range_t;

typedef struct pa_itree_s {
  const pa_trace_t *t;
  size_t leaves;     /* power of two >= nspans */
  int64_t *maxup;    /* 2 * leaves: max upper of placed spans below each node */
  int64_t *lower;    /* span lower, in sorted order */
  uint32_t *buf;     /* owning buffer, in sorted order */
  uint32_t *pos;     /* sorted position of each span */
  uint32_t *stamp;   /* per buffer: last query that reported it */
  uint32_t query;
  const int64_t *offsets;
  pa_range_t *out;   /* query results, capacity n */
  size_t nout;
} pa_itree_t;

int pa_itree_init(pa_itree_t *x, const pa_trace_t *t, const int64_t *offsets);
void pa_itree_free(pa_itree_t *x);
/* Marks buffer b as placed (its offset must already be in offsets[b]). */
void pa_itree_place(pa_itree_t *x, uint32_t b);
/* Fills x->out with the address ranges of placed buffers that overlap b in time,
 * sorted by address. */
void pa_itree_conflicts(pa_itree_t *x, uint32_t b);
void pa_range_sort(pa_range_t *r, size_t n);

#endif
