#include "itree.h"
#include "timeline.h"

#include <stdlib.h>

typedef struct key_s {
  int64_t lower;
  uint32_t span;
} key_t_;

static int key_cmp(const void *a, const void *b) {
  const key_t_ *x = a, *y = b;
  if (x->lower != y->lower) return x->lower < y->lower ? -1 : 1;
  return (x->span > y->span) - (x->span < y->span);
}

static int alloc_arrays(pa_itree_t *x, const pa_trace_t *t) {
  x->leaves = 1;
  while (x->leaves < t->nspans) x->leaves *= 2;
  x->maxup = malloc(2 * x->leaves * sizeof *x->maxup);
  x->lower = malloc(x->leaves * sizeof *x->lower);
  x->buf = malloc(x->leaves * sizeof *x->buf);
  x->pos = malloc((t->nspans + 1) * sizeof *x->pos);
  x->stamp = calloc(t->n + 1, sizeof *x->stamp);
  x->out = malloc((t->n + 1) * sizeof *x->out);
  if (x->maxup && x->lower && x->buf && x->pos && x->stamp && x->out) return PA_OK;
  pa_itree_free(x);
  return PA_ENOMEM;
}

static void fill_sorted(pa_itree_t *x, const pa_trace_t *t, key_t_ *keys) {
  for (size_t i = 0; i < t->n; i++)
    for (uint32_t s = 0; s < t->bufs[i].nspans; s++) {
      uint32_t sp = t->bufs[i].span0 + s;
      keys[sp] = (key_t_){t->spans[sp].lower, sp};
      x->buf[sp] = (uint32_t)i; /* temporarily indexed by span */
    }
  qsort(keys, t->nspans, sizeof *keys, key_cmp);
  uint32_t *owner = x->pos; /* reuse: owner by span, then overwritten below */
  for (size_t sp = 0; sp < t->nspans; sp++) owner[sp] = x->buf[sp];
  for (size_t k = 0; k < t->nspans; k++) {
    x->lower[k] = keys[k].lower;
    x->buf[k] = owner[keys[k].span];
  }
  for (size_t k = 0; k < t->nspans; k++) x->pos[keys[k].span] = (uint32_t)k;
  for (size_t k = t->nspans; k < x->leaves; k++) x->lower[k] = INT64_MAX;
}

int pa_itree_init(pa_itree_t *x, const pa_trace_t *t, const int64_t *offsets) {
  *x = (pa_itree_t){.t = t, .offsets = offsets};
  if (alloc_arrays(x, t)) return PA_ENOMEM;
  key_t_ *keys = malloc((t->nspans + 1) * sizeof *keys);
  if (!keys) {
    pa_itree_free(x);
    return PA_ENOMEM;
  }
  fill_sorted(x, t, keys);
  free(keys);
  for (size_t i = 0; i < 2 * x->leaves; i++) x->maxup[i] = INT64_MIN;
  return PA_OK;
}

void pa_itree_free(pa_itree_t *x) {
  free(x->maxup), free(x->lower), free(x->buf), free(x->pos), free(x->stamp), free(x->out);
  x->maxup = x->lower = NULL;
  x->buf = x->pos = x->stamp = NULL;
  x->out = NULL;
}

void pa_itree_place(pa_itree_t *x, uint32_t b) {
  const pa_buf_t *buf = &x->t->bufs[b];
  for (uint32_t s = 0; s < buf->nspans; s++) {
    int64_t up = x->t->spans[buf->span0 + s].upper;
    for (size_t k = x->pos[buf->span0 + s] + x->leaves; k >= 1 && x->maxup[k] < up; k /= 2)
      x->maxup[k] = up;
  }
}

/* Reports placed spans at sorted positions < limit whose upper > l. */
static void collect(pa_itree_t *x, size_t node, size_t nl, size_t nr, size_t limit, int64_t l) {
  if (nl >= limit || x->maxup[node] <= l) return;
  if (node >= x->leaves) {
    uint32_t b = x->buf[node - x->leaves];
    if (x->stamp[b] == x->query) return;
    x->stamp[b] = x->query;
    int64_t off = x->offsets[b];
    x->out[x->nout++] = (pa_range_t){off, off + x->t->bufs[b].size};
    return;
  }
  size_t mid = (nl + nr) / 2;
  collect(x, 2 * node, nl, mid, limit, l);
  collect(x, 2 * node + 1, mid, nr, limit, l);
}

void pa_itree_conflicts(pa_itree_t *x, uint32_t b) {
  const pa_buf_t *buf = &x->t->bufs[b];
  x->nout = 0;
  if (++x->query == 0) { /* wrapped: old stamps could alias */
    for (size_t i = 0; i < x->t->n; i++) x->stamp[i] = 0;
    x->query = 1;
  }
  x->stamp[b] = x->query;
  for (uint32_t s = 0; s < buf->nspans; s++) {
    const pa_span_t *sp = &x->t->spans[buf->span0 + s];
    collect(x, 1, 0, x->leaves, pa_lower_bound(x->lower, x->leaves, sp->upper), sp->lower);
  }
  pa_range_sort(x->out, x->nout);
}

static void insertion_sort(pa_range_t *r, size_t n) {
  for (size_t i = 1; i < n; i++) {
    pa_range_t v = r[i];
    size_t j = i;
    for (; j > 0 && r[j - 1].lo > v.lo; j--) r[j] = r[j - 1];
    r[j] = v;
  }
}

/* Quicksort by lo with median-of-three; recursion on the smaller half only. */
void pa_range_sort(pa_range_t *r, size_t n) {
  while (n > 24) {
    int64_t a = r[0].lo, b = r[n / 2].lo, c = r[n - 1].lo;
    int64_t p = a < b ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b));
    size_t i = 0, j = n - 1;
    for (;;) {
      while (r[i].lo < p) i++;
      while (r[j].lo > p) j--;
      if (i >= j) break;
      pa_range_t tmp = r[i];
      r[i++] = r[j], r[j--] = tmp;
    }
    size_t left = j + 1;
    if (left < n - left) {
      pa_range_sort(r, left);
      r += left, n -= left;
    } else {
      pa_range_sort(r + left, n - left);
      n = left;
    }
  }
  insertion_sort(r, n);
}
