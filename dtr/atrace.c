/* The access trace: growable arrays, and the figures every consumer needs. */
#include "dtr.h"

#include <stdlib.h>
#include <string.h>

void pa_atrace_init(pa_atrace_t *t) { memset(t, 0, sizeof *t); }

void pa_atrace_free(pa_atrace_t *t) {
  free(t->size), free(t->born), free(t->last), free(t->constant);
  free(t->ns), free(t->first), free(t->ids);
  pa_atrace_init(t);
}

bool pa_grow_arrays(void **arrs[], const size_t *elem, int n, size_t *cap, size_t need) {
  if (need <= *cap) return true;
  size_t c = *cap ? *cap : 256;
  while (c < need) c *= 2;
  for (int i = 0; i < n; i++) {
    void *q = realloc(*arrs[i], c * elem[i]);
    if (!q) return false;
    *arrs[i] = q;
  }
  *cap = c;
  return true;
}

uint32_t pa_atrace_buffer(pa_atrace_t *t, uint64_t size, bool constant) {
  void **arrs[] = {(void **)&t->size, (void **)&t->born, (void **)&t->last, (void **)&t->constant};
  const size_t elem[] = {sizeof *t->size, sizeof *t->born, sizeof *t->last, 1};
  if (t->nbuf >= UINT32_MAX - 1 || !pa_grow_arrays(arrs, elem, 4, &t->cap_buf, t->nbuf + 1)) return UINT32_MAX;
  uint32_t b = (uint32_t)t->nbuf++;
  t->size[b] = size, t->born[b] = (uint32_t)t->nop, t->last[b] = UINT32_MAX, t->constant[b] = constant;
  return b;
}

int pa_atrace_op(pa_atrace_t *t, double ns) {
  void **arrs[] = {(void **)&t->ns, (void **)&t->first};
  const size_t elem[] = {sizeof *t->ns, sizeof *t->first};
  if (!pa_grow_arrays(arrs, elem, 2, &t->cap_op, t->nop + 2)) return -1;
  if (!t->nop) t->first[0] = 0;
  t->ns[t->nop++] = ns;
  t->first[t->nop] = (uint32_t)t->nids;
  return 0;
}

int pa_atrace_touch(pa_atrace_t *t, uint32_t buf) {
  if (!t->nop || buf >= t->nbuf) return -1;
  for (uint32_t k = t->first[t->nop - 1]; k < t->nids; k++)
    if (t->ids[k] == buf) return 0;
  void **arrs[] = {(void **)&t->ids};
  const size_t elem[] = {sizeof *t->ids};
  if (!pa_grow_arrays(arrs, elem, 1, &t->cap_ids, t->nids + 1)) return -1;
  t->ids[t->nids++] = buf;
  t->first[t->nop] = (uint32_t)t->nids;
  if (t->born[buf] >= t->nop) t->born[buf] = (uint32_t)t->nop - 1; /* made by this op */
  return 0;
}

void pa_atrace_release(pa_atrace_t *t, uint32_t buf) {
  if (buf < t->nbuf && t->last[buf] == UINT32_MAX) t->last[buf] = t->nop ? (uint32_t)t->nop - 1 : 0;
}

uint64_t pa_atrace_peak(const pa_atrace_t *t) {
  int64_t *delta = calloc(t->nop + 1, sizeof *delta), live = 0, peak = 0;
  if (!delta) return 0;
  for (size_t b = 0; b < t->nbuf; b++) {
    uint32_t lo = t->born[b] < t->nop ? t->born[b] : (uint32_t)t->nop, hi = t->last[b] == UINT32_MAX ? (uint32_t)t->nop : t->last[b] + 1;
    if (lo >= hi && lo < t->nop) hi = lo + 1;
    delta[lo] += (int64_t)t->size[b], delta[hi < t->nop ? hi : t->nop] -= (int64_t)t->size[b];
  }
  for (size_t i = 0; i < t->nop; i++) {
    live += delta[i];
    if (live > peak) peak = live;
  }
  free(delta);
  return (uint64_t)peak;
}

int64_t *pa_atrace_live(const pa_atrace_t *t) {
  int64_t *live = calloc(t->nop + 1, sizeof *live);
  if (!live) return NULL;
  for (uint32_t b = 0; b < t->nbuf; b++) {
    uint32_t end = t->last[b] == UINT32_MAX ? (uint32_t)t->nop - 1 : t->last[b];
    if (end >= t->born[b] && t->born[b] < t->nop)
      live[t->born[b]] += (int64_t)t->size[b], live[end + 1] -= (int64_t)t->size[b];
  }
  for (size_t j = 1; j <= t->nop; j++) live[j] += live[j - 1];
  return live;
}

double pa_atrace_compute_ns(const pa_atrace_t *t) {
  double s = 0;
  for (size_t i = 0; i < t->nop; i++) s += t->ns[i];
  return s;
}

void pa_atrace_uses(const pa_atrace_t *t, uint32_t *uses, uint32_t *longest_idle) {
  uint32_t *prev = malloc(t->nbuf * sizeof *prev);
  for (size_t b = 0; b < t->nbuf; b++) uses[b] = longest_idle[b] = 0;
  if (!prev) return;
  for (size_t b = 0; b < t->nbuf; b++) prev[b] = t->born[b];
  for (size_t op = 0; op < t->nop; op++)
    for (uint32_t k = t->first[op]; k < t->first[op + 1]; k++) {
      uint32_t b = t->ids[k];
      if ((uint32_t)op >= prev[b] && (uint32_t)op - prev[b] > longest_idle[b]) longest_idle[b] = (uint32_t)op - prev[b];
      uses[b]++, prev[b] = (uint32_t)op;
    }
  for (size_t b = 0; b < t->nbuf; b++) {
    uint32_t end = t->last[b] == UINT32_MAX && t->nop ? (uint32_t)t->nop - 1 : t->last[b]; /* outlives the trace */
    if (end > prev[b] && end - prev[b] > longest_idle[b]) longest_idle[b] = end - prev[b];
  }
  free(prev);
}
