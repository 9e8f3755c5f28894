/* MegEngine's static planner in its production mode, PUSHDOWN.
 * Phase 1 replays the trace over a list of blocks with best fit, but when no free block
 * is large enough it grows the largest free block instead of the pool: addresses are
 * never fixed, only the order of blocks matters. Each allocation remembers the live
 * buffers directly below and above it. Phase 2 gives every buffer the lowest address
 * that all buffers below it allow (gravity), in topological order. */
#include "planner.h"
#include "treap.h"

#include <stdlib.h>

typedef struct list_s {
  int64_t *size;           /* free blocks only */
  uint32_t *buf;           /* PA_NIL for a free block */
  uint32_t *prev, *next, first, last;
  uint32_t *spare, nspare;
  uint32_t *node_of;       /* per buffer */
  uint32_t *edge_lo, *edge_hi; /* "edge_lo lies directly below edge_hi", <= 2 per alloc */
  size_t nedges;
  pa_treap_t by_size;
} list_t;

static int list_init(list_t *l, size_t n) {
  size_t cap = 2 * n + 2;
  *l = (list_t){.first = PA_NIL, .last = PA_NIL};
  l->size = malloc(cap * sizeof *l->size), l->buf = malloc(cap * sizeof *l->buf);
  l->prev = malloc(cap * sizeof *l->prev), l->next = malloc(cap * sizeof *l->next);
  l->spare = malloc(cap * sizeof *l->spare), l->node_of = malloc((n + 1) * sizeof *l->node_of);
  l->edge_lo = malloc(cap * sizeof *l->edge_lo), l->edge_hi = malloc(cap * sizeof *l->edge_hi);
  if (!l->size || !l->buf || !l->prev || !l->next || !l->spare || !l->node_of ||
      !l->edge_lo || !l->edge_hi || pa_treap_init(&l->by_size, cap, 5))
    return PA_ENOMEM;
  for (size_t i = 0; i < cap; i++) l->spare[i] = (uint32_t)(cap - 1 - i);
  l->nspare = (uint32_t)cap;
  return PA_OK;
}

static void list_free(list_t *l) {
  free(l->size), free(l->buf), free(l->prev), free(l->next), free(l->spare);
  free(l->node_of), free(l->edge_lo), free(l->edge_hi);
  pa_treap_free(&l->by_size);
}

static uint32_t node_new(list_t *l, uint32_t after, uint32_t buf, int64_t size) {
  uint32_t x = l->spare[--l->nspare];
  l->buf[x] = buf, l->size[x] = size, l->prev[x] = after;
  l->next[x] = after == PA_NIL ? l->first : l->next[after];
  if (after != PA_NIL) l->next[after] = x;
  else l->first = x;
  if (l->next[x] != PA_NIL) l->prev[l->next[x]] = x;
  else l->last = x;
  if (buf == PA_NIL) pa_treap_insert(&l->by_size, x, size);
  return x;
}

static void node_drop(list_t *l, uint32_t x) {
  if (l->buf[x] == PA_NIL) pa_treap_erase(&l->by_size, x);
  if (l->prev[x] != PA_NIL) l->next[l->prev[x]] = l->next[x];
  else l->first = l->next[x];
  if (l->next[x] != PA_NIL) l->prev[l->next[x]] = l->prev[x];
  else l->last = l->prev[x];
  l->spare[l->nspare++] = x;
}

/* Inserts free space after node `after`, merged with free neighbours. */
static void free_space(list_t *l, uint32_t after, int64_t size) {
  uint32_t q = after == PA_NIL ? l->first : l->next[after];
  if (q != PA_NIL && l->buf[q] == PA_NIL) size += l->size[q], node_drop(l, q);
  if (after != PA_NIL && l->buf[after] == PA_NIL) {
    uint32_t p = l->prev[after];
    size += l->size[after];
    node_drop(l, after);
    after = p;
  }
  if (size > 0) node_new(l, after, PA_NIL, size);
}

/* The nearest allocated block in direction `dir` (prev or next), skipping one free. */
static uint32_t neighbour(const list_t *l, uint32_t x, const uint32_t *dir) {
  uint32_t p = dir[x];
  if (p != PA_NIL && l->buf[p] == PA_NIL) p = dir[p];
  return p == PA_NIL ? PA_NIL : l->buf[p];
}

static void alloc(list_t *l, uint32_t buf, int64_t size) {
  uint32_t x = PA_NIL;
  if (l->by_size.root == PA_NIL) {
    x = node_new(l, l->last, buf, 0);
  } else {
    x = pa_treap_ceil(&l->by_size, size);
    if (x == PA_NIL) x = pa_treap_last(&l->by_size), l->size[x] = size; /* grow largest */
    int64_t rest = l->size[x] - size;
    pa_treap_erase(&l->by_size, x);
    l->buf[x] = buf;
    free_space(l, x, rest);
  }
  l->node_of[buf] = x;
  uint32_t p = neighbour(l, x, l->prev), q = neighbour(l, x, l->next);
  if (p != PA_NIL) l->edge_lo[l->nedges] = p, l->edge_hi[l->nedges++] = buf;
  if (q != PA_NIL) l->edge_lo[l->nedges] = buf, l->edge_hi[l->nedges++] = q;
}

static void release(list_t *l, uint32_t buf, int64_t size) {
  uint32_t x = l->node_of[buf], p = l->prev[x];
  node_drop(l, x);
  free_space(l, p, size);
}

static void phase1(list_t *l, const pa_trace_t *t, const pa_event_t *ev, size_t k) {
  for (size_t i = 0; i < k; i++) {
    if (ev[i].alloc) alloc(l, ev[i].buf, t->bufs[ev[i].buf].size);
    else release(l, ev[i].buf, t->bufs[ev[i].buf].size);
  }
}

/* Kahn's order over the below-edges; each buffer lands on the highest end below it. */
static int pushdown(const list_t *l, const pa_trace_t *t, int64_t *off) {
  size_t n = t->n, m = l->nedges, head = 0, tail = 0;
  uint32_t *start = calloc(n + 1, sizeof *start), *adj = malloc((m + 1) * sizeof *adj);
  uint32_t *indeg = calloc(n + 1, sizeof *indeg), *queue = malloc((n + 1) * sizeof *queue);
  int rc = start && adj && indeg && queue ? PA_OK : PA_ENOMEM;
  if (rc == PA_OK) {
    for (size_t e = 0; e < m; e++) start[l->edge_lo[e]]++, indeg[l->edge_hi[e]]++;
    for (size_t i = 0, sum = 0; i <= n; i++) sum += start[i], start[i] = (uint32_t)(sum - start[i]);
    for (size_t e = 0; e < m; e++) adj[start[l->edge_lo[e]]++] = l->edge_hi[e];
    for (size_t i = n; i > 0; i--) start[i] = start[i - 1]; /* back to row starts */
    start[0] = 0;
    for (size_t i = 0; i < n; i++) {
      off[i] = 0;
      if (!indeg[i]) queue[tail++] = (uint32_t)i;
    }
    while (head < tail) {
      uint32_t b = queue[head++];
      off[b] = pa_align_up(off[b], t->bufs[b].align);
      for (uint32_t e = start[b]; e < start[b + 1]; e++) {
        uint32_t c = adj[e];
        if (off[b] + t->bufs[b].size > off[c]) off[c] = off[b] + t->bufs[b].size;
        if (!--indeg[c]) queue[tail++] = c;
      }
    }
    if (tail != n) rc = PA_EINTERNAL; /* a cycle: phase 1 orders were inconsistent */
  }
  free(start), free(adj), free(indeg), free(queue);
  return rc;
}

int pa_megengine_pushdown(const pa_trace_t *t, int64_t *off) {
  if (pa_trace_has_fixed(t)) return PA_EUNSUPPORTED;
  size_t k;
  list_t l;
  pa_event_t *ev = pa_events_make(t, &k);
  int rc = ev && !list_init(&l, t->n) ? PA_OK : PA_ENOMEM;
  if (rc == PA_OK) {
    phase1(&l, t, ev, k);
    rc = pushdown(&l, t, off);
  }
  if (ev) list_free(&l);
  free(ev);
  return rc;
}
