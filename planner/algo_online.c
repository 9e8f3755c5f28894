/* Online best fit: replay allocations and frees in time order over an address-ordered
 * block list with a size-ordered set of free blocks. This is what a caching allocator
 * that knew sizes would do, and the equivalent of greedy start-order + best fit. */
#include "planner.h"
#include "treap.h"

#include <stdlib.h>

typedef struct heap_s {
  int64_t *addr, *size;
  uint32_t *prev, *next;
  bool *used;
  uint32_t first, last, nfree_nodes, *free_nodes;
  uint32_t *block_of; /* per buffer */
  int64_t top;
  pa_treap_t by_size; /* free blocks; a free last block is skipped: it is unbounded */
} heap_t;

static int heap_init(heap_t *h, size_t n) {
  size_t cap = 3 * n + 2;
  *h = (heap_t){.first = PA_NIL, .last = PA_NIL};
  h->addr = malloc(cap * sizeof *h->addr), h->size = malloc(cap * sizeof *h->size);
  h->prev = malloc(cap * sizeof *h->prev), h->next = malloc(cap * sizeof *h->next);
  h->used = malloc(cap * sizeof *h->used), h->free_nodes = malloc(cap * sizeof *h->free_nodes);
  h->block_of = malloc((n + 1) * sizeof *h->block_of);
  if (!h->addr || !h->size || !h->prev || !h->next || !h->used || !h->free_nodes ||
      !h->block_of || pa_treap_init(&h->by_size, cap, 11))
    return PA_ENOMEM;
  for (size_t i = 0; i < cap; i++) h->free_nodes[i] = (uint32_t)(cap - 1 - i);
  h->nfree_nodes = (uint32_t)cap;
  return PA_OK;
}

static void heap_free(heap_t *h) {
  free(h->addr), free(h->size), free(h->prev), free(h->next), free(h->used);
  free(h->free_nodes), free(h->block_of);
  pa_treap_free(&h->by_size);
}

/* A new block [addr, addr+size) linked after `after` (PA_NIL: at the bottom). */
static uint32_t block_new(heap_t *h, uint32_t after, int64_t addr, int64_t size, bool used) {
  uint32_t x = h->free_nodes[--h->nfree_nodes];
  h->addr[x] = addr, h->size[x] = size, h->used[x] = used;
  h->prev[x] = after;
  h->next[x] = after == PA_NIL ? h->first : h->next[after];
  if (after != PA_NIL) h->next[after] = x;
  else h->first = x;
  if (h->next[x] != PA_NIL) h->prev[h->next[x]] = x;
  else h->last = x;
  if (!used) pa_treap_insert(&h->by_size, x, size);
  return x;
}

static void block_drop(heap_t *h, uint32_t x) {
  if (!h->used[x]) pa_treap_erase(&h->by_size, x);
  if (h->prev[x] != PA_NIL) h->next[h->prev[x]] = h->next[x];
  else h->first = h->next[x];
  if (h->next[x] != PA_NIL) h->prev[h->next[x]] = h->prev[x];
  else h->last = h->prev[x];
  h->free_nodes[h->nfree_nodes++] = x;
}

/* Carves [at, at+size) out of free block x, leaving free head and tail pieces. */
static uint32_t carve(heap_t *h, uint32_t x, int64_t at, int64_t size) {
  int64_t end = h->addr[x] + h->size[x];
  int64_t start = h->addr[x];
  uint32_t before = h->prev[x];
  block_drop(h, x);
  if (at > start) before = block_new(h, before, start, at - start, false);
  uint32_t b = block_new(h, before, at, size, true);
  if (end > at + size) block_new(h, b, at + size, end - at - size, false);
  return b;
}

static uint32_t fit(heap_t *h, int64_t size, int64_t align) {
  for (uint32_t x = pa_treap_ceil(&h->by_size, size); x != PA_NIL;
       x = pa_treap_next(&h->by_size, x))
    if (x != h->last && pa_align_up(h->addr[x], align) + size <= h->addr[x] + h->size[x]) return x;
  return PA_NIL;
}

static int64_t heap_alloc(heap_t *h, uint32_t buf, int64_t size, int64_t align) {
  uint32_t x = fit(h, size, align);
  if (x == PA_NIL && h->last != PA_NIL && !h->used[h->last]) x = h->last; /* unbounded top */
  if (x == PA_NIL) x = block_new(h, h->last, h->top, 0, false);
  int64_t at = pa_align_up(h->addr[x], align);
  h->block_of[buf] = carve(h, x, at, size);
  if (at + size > h->top) h->top = at + size;
  return at;
}

static void heap_release(heap_t *h, uint32_t buf) {
  uint32_t x = h->block_of[buf];
  int64_t addr = h->addr[x], end = addr + h->size[x];
  uint32_t p = h->prev[x], q = h->next[x];
  block_drop(h, x);
  if (q != PA_NIL && !h->used[q]) end = h->addr[q] + h->size[q], block_drop(h, q);
  if (p != PA_NIL && !h->used[p]) {
    uint32_t below = h->prev[p];
    addr = h->addr[p];
    block_drop(h, p);
    p = below;
  }
  block_new(h, p, addr, end - addr, false);
}

int pa_online_bestfit(const pa_trace_t *t, int64_t *off) {
  if (pa_trace_has_fixed(t)) return PA_EUNSUPPORTED;
  size_t k;
  heap_t h;
  pa_event_t *ev = pa_events_make(t, &k);
  int rc = ev && !heap_init(&h, t->n) ? PA_OK : PA_ENOMEM;
  for (size_t i = 0; i < k && rc == PA_OK; i++) {
    const pa_buf_t *b = &t->bufs[ev[i].buf];
    if (ev[i].alloc) off[ev[i].buf] = heap_alloc(&h, ev[i].buf, b->size, b->align);
    else heap_release(&h, ev[i].buf);
  }
  if (ev) heap_free(&h);
  free(ev);
  return rc;
}
