#include "timeline.h"

#include <stdlib.h>

static int i64_cmp(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

int pa_timeline_init(pa_timeline_t *tl, const pa_trace_t *t) {
  tl->coord = malloc((2 * t->nspans + 1) * sizeof *tl->coord);
  if (!tl->coord) return PA_ENOMEM;
  size_t k = 0;
  for (size_t s = 0; s < t->nspans; s++)
    tl->coord[k++] = t->spans[s].lower, tl->coord[k++] = t->spans[s].upper;
  qsort(tl->coord, k, sizeof *tl->coord, i64_cmp);
  size_t u = 0;
  for (size_t i = 0; i < k; i++)
    if (!u || tl->coord[u - 1] != tl->coord[i]) tl->coord[u++] = tl->coord[i];
  tl->ncoord = u;
  return PA_OK;
}

void pa_timeline_free(pa_timeline_t *tl) {
  free(tl->coord);
  tl->coord = NULL;
}

size_t pa_lower_bound(const int64_t *sorted, size_t n, int64_t v) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (sorted[mid] < v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

size_t pa_timeline_index(const pa_timeline_t *tl, int64_t time) {
  return pa_lower_bound(tl->coord, tl->ncoord, time);
}

int pa_timeline_live(const pa_timeline_t *tl, const pa_trace_t *t, int64_t **live_out,
                     int64_t **peak_out) {
  size_t nseg = tl->ncoord ? tl->ncoord - 1 : 0;
  int64_t *live = calloc(nseg + 1, sizeof *live), *peak = malloc((t->n + 1) * sizeof *peak);
  pa_maxtree_t m = {0};
  if (!live || !peak || pa_maxtree_init(&m, nseg + 1)) {
    free(live), free(peak);
    return PA_ENOMEM;
  }
  for (size_t i = 0; i < t->n; i++)
    for (uint32_t s = 0; s < t->bufs[i].nspans; s++) {
      const pa_span_t *sp = &t->spans[t->bufs[i].span0 + s];
      live[pa_timeline_index(tl, sp->lower)] += t->bufs[i].size;
      live[pa_timeline_index(tl, sp->upper)] -= t->bufs[i].size;
    }
  for (size_t k = 1; k <= nseg; k++) live[k] += live[k - 1];
  for (size_t k = 0; k < nseg; k++) pa_maxtree_raise(&m, k, k + 1, live[k]);
  for (size_t i = 0; i < t->n; i++) {
    peak[i] = 0;
    for (uint32_t s = 0; s < t->bufs[i].nspans; s++) {
      const pa_span_t *sp = &t->spans[t->bufs[i].span0 + s];
      int64_t v = pa_maxtree_max(&m, pa_timeline_index(tl, sp->lower),
                                 pa_timeline_index(tl, sp->upper));
      if (v > peak[i]) peak[i] = v;
    }
  }
  pa_maxtree_free(&m);
  *live_out = live, *peak_out = peak;
  return PA_OK;
}

int pa_maxtree_init(pa_maxtree_t *m, size_t n) {
  m->leaves = 1;
  while (m->leaves < n) m->leaves *= 2;
  m->node = calloc(2 * m->leaves, sizeof *m->node);
  return m->node ? PA_OK : PA_ENOMEM;
}

void pa_maxtree_free(pa_maxtree_t *m) {
  free(m->node);
  m->node = NULL;
}

static int64_t max2(int64_t a, int64_t b) { return a > b ? a : b; }

/* tag[x]: a raise covering all of x's range; mx[x]: the max of x's range, not counting
 * the tags of x's ancestors. */
static void raise_rec(pa_maxtree_t *m, size_t x, size_t nl, size_t nr, size_t lo, size_t hi,
                      int64_t v) {
  if (hi <= nl || nr <= lo) return;
  if (lo <= nl && nr <= hi) {
    m->node[x].tag = max2(m->node[x].tag, v), m->node[x].mx = max2(m->node[x].mx, v);
    return;
  }
  size_t mid = (nl + nr) / 2;
  raise_rec(m, 2 * x, nl, mid, lo, hi, v);
  raise_rec(m, 2 * x + 1, mid, nr, lo, hi, v);
  m->node[x].mx = max2(m->node[x].tag, max2(m->node[2 * x].mx, m->node[2 * x + 1].mx));
}

void pa_maxtree_raise(pa_maxtree_t *m, size_t lo, size_t hi, int64_t v) {
  if (lo < hi) raise_rec(m, 1, 0, m->leaves, lo, hi, v);
}

/* Bottom-up: the canonical nodes of [lo, hi) give their mx; a raise stored as a tag on
 * an ancestor covers a canonical node too, and every such ancestor lies on the path of
 * leaf lo or leaf hi-1 to the root. */
int64_t pa_maxtree_max(const pa_maxtree_t *m, size_t lo, size_t hi) {
  if (lo >= hi) return INT64_MIN;
  int64_t best = INT64_MIN;
  size_t l = lo + m->leaves, r = hi + m->leaves;
  for (size_t a = l / 2, b = (r - 1) / 2; a; a /= 2, b /= 2)
    best = max2(best, max2(m->node[a].tag, m->node[b].tag));
  for (; l < r; l /= 2, r /= 2) {
    if (l & 1) best = max2(best, m->node[l++].mx);
    if (r & 1) best = max2(best, m->node[--r].mx);
  }
  return best;
}
