/* Best fit over the pool's address space, the allocator of the recording iterations and
 * of anything the plan does not cover. Blocks tile the space; every block is in an
 * address-ordered treap (neighbours, and the lookup of a launch's pointers), free ones
 * also in a size-ordered one (best fit). pa_mu held throughout. */
#include "pa.h"
#include "treap.h"

#include <stdlib.h>

static struct {
  pa_treap_t by_addr, by_size;
  uint64_t *off, *size;
  uint8_t *used;
  uint32_t *next_free; /* node free list */
  uint32_t free_head;
  size_t cap;
  bool ready;
} on;

static bool grow(void) {
  size_t cap = on.cap ? 2 * on.cap : 1024;
  uint64_t *off = realloc(on.off, cap * sizeof *off), *size = off ? realloc(on.size, cap * sizeof *size) : NULL;
  if (off) on.off = off;
  if (size) on.size = size;
  uint8_t *used = size ? realloc(on.used, cap) : NULL;
  if (used) on.used = used;
  uint32_t *nf = used ? realloc(on.next_free, cap * sizeof *nf) : NULL;
  if (nf) on.next_free = nf;
  bool first = !on.cap;
  if (!nf || (first ? pa_treap_init(&on.by_addr, cap, 7) || pa_treap_init(&on.by_size, cap, 11)
                    : pa_treap_grow(&on.by_addr, on.cap, cap) || pa_treap_grow(&on.by_size, on.cap, cap)))
    return false;
  for (size_t k = cap; k-- > on.cap;) on.next_free[k] = on.free_head, on.free_head = (uint32_t)k;
  on.cap = cap;
  return true;
}

static uint32_t new_node(uint64_t off, uint64_t size, bool used) {
  if (on.free_head == PA_NIL && !grow()) return PA_NIL;
  uint32_t x = on.free_head;
  on.free_head = on.next_free[x];
  on.off[x] = off, on.size[x] = size, on.used[x] = used;
  pa_treap_insert(&on.by_addr, x, (int64_t)off);
  if (!used) pa_treap_insert(&on.by_size, x, (int64_t)size);
  return x;
}

static bool ready(void) {
  if (!on.ready) {
    on.free_head = PA_NIL;
    on.ready = grow() && new_node(0, pa_pool_size(), false) != PA_NIL;
  }
  return on.ready;
}

uint32_t pa_online_alloc(uint64_t size, uint64_t *off) {
  if (!ready()) return PA_NIL;
  uint32_t x = pa_treap_ceil(&on.by_size, (int64_t)size);
  if (x == PA_NIL) return PA_NIL;
  if (on.size[x] > size && new_node(on.off[x] + size, on.size[x] - size, false) == PA_NIL) return PA_NIL;
  pa_treap_erase(&on.by_size, x);
  on.size[x] = size, on.used[x] = 1;
  *off = on.off[x];
  return x;
}

static void release_node(uint32_t x) { on.next_free[x] = on.free_head, on.free_head = x; }

/* Coalesces with free neighbours: blocks never sit free side by side. */
void pa_online_free(uint32_t x) {
  uint32_t p = pa_treap_prev(&on.by_addr, x), n = pa_treap_next(&on.by_addr, x);
  on.used[x] = 0;
  if (n != PA_NIL && !on.used[n]) {
    on.size[x] += on.size[n];
    pa_treap_erase(&on.by_size, n), pa_treap_erase(&on.by_addr, n), release_node(n);
  }
  if (p != PA_NIL && !on.used[p]) {
    pa_treap_erase(&on.by_size, p);
    on.size[p] += on.size[x];
    pa_treap_erase(&on.by_addr, x), release_node(x);
    x = p;
  }
  pa_treap_insert(&on.by_size, x, (int64_t)on.size[x]);
}

uint32_t pa_online_find(uint64_t x) {
  if (!on.ready) return PA_NIL;
  uint32_t b = pa_treap_floor(&on.by_addr, (int64_t)x);
  return b != PA_NIL && on.used[b] && x < on.off[b] + on.size[b] ? b : PA_NIL;
}
