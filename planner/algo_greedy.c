/* Greedy placement (TFLite's greedy-by-size, XLA's heap simulator): buffers in a fixed
 * order, each into a gap that is free over its whole occupancy. The interval index
 * keeps one pass near n log n plus the overlaps actually placed. */
#include "itree.h"
#include "planner.h"
#include "timeline.h"

#include <stdlib.h>

const char *const pa_order_names[PA_ORDER_COUNT] = {"size", "duration", "area", "start",
                                                    "total"};
const char *const pa_fit_names[PA_FIT_COUNT] = {"best", "lowest"};

/* Chooses an offset for buffer b among the gaps between the placed ranges r[0..n). */
static int64_t choose(const pa_range_t *r, size_t n, int64_t size, int64_t align, pa_fit_t fit) {
  int64_t cur = 0, best = -1, best_gap = INT64_MAX;
  for (size_t i = 0; i < n; i++) {
    if (r[i].lo > cur) {
      int64_t at = pa_align_up(cur, align), gap = r[i].lo - cur;
      if (at + size <= r[i].lo && gap < best_gap) {
        best = at, best_gap = gap;
        if (fit == PA_FIT_LOWEST) return best;
      }
    }
    if (r[i].hi > cur) cur = r[i].hi;
  }
  return best >= 0 ? best : pa_align_up(cur, align);
}

typedef struct okey_s {
  int64_t k1, k2, k3;
  uint32_t i;
} okey_t;

static int okey_cmp(const void *a, const void *b) {
  const okey_t *x = a, *y = b;
  if (x->k1 != y->k1) return x->k1 > y->k1 ? -1 : 1; /* descending */
  if (x->k2 != y->k2) return x->k2 > y->k2 ? -1 : 1;
  if (x->k3 != y->k3) return x->k3 > y->k3 ? -1 : 1;
  return (x->i > y->i) - (x->i < y->i);
}

static int64_t occupancy(const pa_trace_t *t, const pa_buf_t *b) {
  int64_t d = 0;
  for (uint32_t s = 0; s < b->nspans; s++)
    d += t->spans[b->span0 + s].upper - t->spans[b->span0 + s].lower;
  return d;
}

static okey_t order_key(const pa_trace_t *t, uint32_t i, pa_order_t order,
                        const int64_t *peak) {
  const pa_buf_t *b = &t->bufs[i];
  int64_t dur = occupancy(t, b);
  /* area can pass 2^63 for huge traces: computed in long double, held at INT64_MAX past
   * it (the conversion of a larger value is undefined: UBSan, on a fuzzed trace) */
  long double a = (long double)b->size * dur / 4.0L;
  int64_t area = a < (long double)INT64_MAX ? (int64_t)a : INT64_MAX;
  switch (order) {
  case PA_ORDER_SIZE: return (okey_t){b->size, dur, -b->lower, i};
  case PA_ORDER_DURATION: return (okey_t){dur, b->size, -b->lower, i};
  case PA_ORDER_AREA: return (okey_t){area, b->size, -b->lower, i};
  case PA_ORDER_TOTAL: return (okey_t){peak[i], dur, area, i};
  default: return (okey_t){-b->lower, b->size, dur, i};
  }
}

static int section_peaks(const pa_trace_t *t, int64_t **peak) {
  pa_timeline_t tl;
  int64_t *live = NULL;
  if (pa_timeline_init(&tl, t)) return PA_ENOMEM;
  int rc = pa_timeline_live(&tl, t, &live, peak);
  free(live);
  pa_timeline_free(&tl);
  return rc;
}

int pa_order_make(const pa_trace_t *t, pa_order_t order, uint32_t *out) {
  int64_t *peak = NULL;
  okey_t *keys = malloc((t->n + 1) * sizeof *keys);
  if (!keys || (order == PA_ORDER_TOTAL && section_peaks(t, &peak))) {
    free(keys);
    return PA_ENOMEM;
  }
  for (size_t i = 0; i < t->n; i++) keys[i] = order_key(t, (uint32_t)i, order, peak);
  qsort(keys, t->n, sizeof *keys, okey_cmp);
  for (size_t i = 0; i < t->n; i++) out[i] = keys[i].i;
  free(keys), free(peak);
  return PA_OK;
}

int pa_order_by_offset(const pa_trace_t *t, const int64_t *off, uint32_t *out) {
  okey_t *keys = malloc((t->n + 1) * sizeof *keys);
  if (!keys) return PA_ENOMEM;
  for (size_t i = 0; i < t->n; i++) keys[i] = (okey_t){-off[i], t->bufs[i].size, -t->bufs[i].lower, (uint32_t)i};
  qsort(keys, t->n, sizeof *keys, okey_cmp);
  for (size_t i = 0; i < t->n; i++) out[i] = keys[i].i;
  free(keys);
  return PA_OK;
}

static void place_fixed(pa_itree_t *x, const pa_trace_t *t, int64_t *off) {
  for (size_t i = 0; i < t->n; i++) {
    off[i] = t->bufs[i].fixed;
    if (off[i] != PA_NO_OFFSET) pa_itree_place(x, (uint32_t)i);
  }
}

int pa_greedy_ordered(const pa_trace_t *t, const uint32_t *order, pa_fit_t fit,
                      int64_t *off) {
  pa_itree_t x;
  if (pa_itree_init(&x, t, off)) return PA_ENOMEM;
  place_fixed(&x, t, off);
  for (size_t k = 0; k < t->n; k++) {
    uint32_t b = order[k];
    if (off[b] != PA_NO_OFFSET) continue;
    pa_itree_conflicts(&x, b);
    off[b] = choose(x.out, x.nout, t->bufs[b].size, t->bufs[b].align, fit);
    pa_itree_place(&x, b);
  }
  pa_itree_free(&x);
  return PA_OK;
}

int pa_greedy(const pa_trace_t *t, pa_order_t order, pa_fit_t fit, int64_t *off) {
  uint32_t *perm = malloc((t->n + 1) * sizeof *perm);
  if (!perm) return PA_ENOMEM;
  int rc = pa_order_make(t, order, perm);
  if (!rc) rc = pa_greedy_ordered(t, perm, fit, off);
  free(perm);
  return rc;
}

/* ---- settling fixed buffers into a layout -------------------------------------------------- */

/* Whether buffer i, at off[i], meets in address one of the buffers placed in x that it
 * meets in time. */
static bool meets_placed(pa_itree_t *x, const int64_t *off, uint32_t i) {
  pa_itree_conflicts(x, i);
  for (size_t k = 0; k < x->nout; k++)
    if (x->out[k].lo < off[i] + x->t->bufs[i].size && off[i] < x->out[k].hi) return true;
  return false;
}

/* The buffers not fixed that meet one of the fixed ones f[0..nf) (placed at off), into
 * moved: *n of them. */
static int meeting(const pa_trace_t *t, const int64_t *off, const uint32_t *f, size_t nf, uint32_t *moved, size_t *n) {
  pa_itree_t x;
  if (!nf) return PA_OK;
  if (pa_itree_init(&x, t, off)) return PA_ENOMEM;
  for (size_t k = 0; k < nf; k++) pa_itree_place(&x, f[k]);
  for (size_t i = 0; i < t->n; i++)
    if (t->bufs[i].fixed == PA_NO_OFFSET && meets_placed(&x, off, (uint32_t)i)) moved[(*n)++] = (uint32_t)i;
  pa_itree_free(&x);
  return PA_OK;
}

static int size_desc(const void *a, const void *b, void *arg) {
  const pa_trace_t *t = arg;
  int64_t x = t->bufs[*(const uint32_t *)a].size, y = t->bufs[*(const uint32_t *)b].size;
  return (x < y) - (x > y);
}

/* The buffers moved[0..n), largest first, each at the lowest gap free over its whole
 * occupancy among all the others, placed where off says. */
static int place_moved(const pa_trace_t *t, int64_t *off, uint32_t *moved, size_t n) {
  pa_itree_t x;
  if (pa_itree_init(&x, t, off)) return PA_ENOMEM;
  for (size_t k = 0; k < n; k++) off[moved[k]] = PA_NO_OFFSET;
  for (size_t i = 0; i < t->n; i++)
    if (off[i] != PA_NO_OFFSET) pa_itree_place(&x, (uint32_t)i);
  qsort_r(moved, n, sizeof *moved, size_desc, (void *)t);
  for (size_t k = 0; k < n; k++) {
    pa_itree_conflicts(&x, moved[k]);
    off[moved[k]] = choose(x.out, x.nout, t->bufs[moved[k]].size, t->bufs[moved[k]].align, PA_FIT_LOWEST);
    pa_itree_place(&x, moved[k]);
  }
  pa_itree_free(&x);
  return PA_OK;
}

int pa_greedy_settle(const pa_trace_t *t, const int64_t *was, int64_t *off, size_t *moved_out) {
  uint32_t *f = malloc((t->n + 1) * sizeof *f), *moved = malloc((t->n + 1) * sizeof *moved);
  size_t nf = 0, n = 0;
  int rc = f && moved ? PA_OK : PA_ENOMEM;
  for (size_t i = 0; !rc && i < t->n; i++) {
    off[i] = t->bufs[i].fixed != PA_NO_OFFSET ? t->bufs[i].fixed : was[i];
    if (t->bufs[i].fixed != PA_NO_OFFSET && t->bufs[i].fixed != was[i]) f[nf++] = (uint32_t)i;
  }
  if (!rc) rc = meeting(t, off, f, nf, moved, &n);
  if (!rc && n) rc = place_moved(t, off, moved, n);
  if (moved_out) *moved_out = n;
  free(f), free(moved);
  return rc;
}
