/* Best fit over the pool's address space (on its mapped pages first), the allocator of
 * the recording iterations and of anything the plan does not cover. Blocks tile the
 * space; every block is in an address-ordered treap (neighbours, and the lookup of a
 * launch's pointers), free ones also in a size-ordered one (best fit). A plan's range is
 * claimed: its free blocks leave best fit at once, and the blocks still in use there (the
 * recording's last buffers, the intruders) join the claim when they are freed, so the
 * plan can start on the pages the recording used. pa_mu held throughout. */
#include "pa.h"
#include "treap.h"

#include <stdlib.h>

static struct {
  pa_treap_t by_addr, by_size;
  uint64_t *off, *size;
  uint8_t *used;      /* FREE, USED or CLAIMED */
  uint8_t *doomed;    /* a USED block inside a claim: the claim's when freed */
  size_t intruders;   /* doomed blocks */
  struct claim_s { uint64_t lo, hi; } claims[PA_MAX_CLAIMS];
  size_t nclaims;
  uint32_t *next_free; /* node free list */
  uint32_t free_head;
  size_t cap;
  bool ready;
} PA_PER_DEVICE(on);
PA_BIND(on)
#define on PA_THIS(on)

enum { FREE, USED, CLAIMED };

static bool grow(void) {
  size_t cap = on.cap ? 2 * on.cap : 1024;
  uint64_t *off = realloc(on.off, cap * sizeof *off), *size = off ? realloc(on.size, cap * sizeof *size) : NULL;
  if (off) on.off = off;
  if (size) on.size = size;
  uint8_t *used = size ? realloc(on.used, cap) : NULL;
  if (used) on.used = used;
  uint8_t *doomed = used ? realloc(on.doomed, cap) : NULL;
  if (doomed) on.doomed = doomed;
  uint32_t *nf = doomed ? realloc(on.next_free, cap * sizeof *nf) : NULL;
  if (nf) on.next_free = nf;
  bool first = !on.cap;
  if (!nf || (first ? pa_treap_init(&on.by_addr, cap, 7) || pa_treap_init(&on.by_size, cap, 11)
                    : pa_treap_grow(&on.by_addr, on.cap, cap) || pa_treap_grow(&on.by_size, on.cap, cap)))
    return false;
  for (size_t k = cap; k-- > on.cap;) on.next_free[k] = on.free_head, on.free_head = (uint32_t)k;
  on.cap = cap;
  return true;
}

static uint32_t new_node(uint64_t off, uint64_t size, uint8_t state) {
  if (on.free_head == PA_NIL && !grow()) return PA_NIL;
  uint32_t x = on.free_head;
  on.free_head = on.next_free[x];
  on.off[x] = off, on.size[x] = size, on.used[x] = state, on.doomed[x] = 0;
  pa_treap_insert(&on.by_addr, x, (int64_t)off);
  if (state == FREE) pa_treap_insert(&on.by_size, x, (int64_t)size);
  return x;
}

static bool ready(void) {
  if (!on.ready) {
    on.free_head = PA_NIL;
    on.ready = grow() && new_node(0, pa_pool_size(), FREE) != PA_NIL;
  }
  return on.ready;
}

static bool split_front(uint32_t x, uint64_t at, uint8_t state);

/* Whether free block x holds size bytes from its first multiple of align (in *at). */
static bool fits(uint32_t x, uint64_t size, uint64_t align, uint64_t *at) {
  *at = (on.off[x] + align - 1) / align * align;
  return *at + size <= on.off[x] + on.size[x];
}

static uint64_t span(uint64_t at, uint64_t size, uint64_t page) { return (at + size - 1) / page - at / page + 1; }

#define FIT_TRIES 8

/* Best fit at a multiple of align: the smallest free blocks first, then one large enough
 * for any start (size + align - grain bytes): O(log n) whatever the free list. */
static uint32_t aligned_fit(uint64_t size, uint64_t align, uint64_t *at) {
  uint32_t x = pa_treap_ceil(&on.by_size, (int64_t)size);
  for (int k = 0; x != PA_NIL && k < FIT_TRIES; k++, x = pa_treap_next(&on.by_size, x))
    if (fits(x, size, align, at)) return x;
  x = align > PA_GRAIN ? pa_treap_ceil(&on.by_size, (int64_t)(size + align - PA_GRAIN)) : PA_NIL;
  return x != PA_NIL && fits(x, size, align, at) ? x : PA_NIL;
}

/* Best fit, unless (page: a budget's pages) a buffer of a page or more would span more
 * pages there than it must: then best fit from a page start. Not smaller ones: moved
 * to page starts, they scatter over more pages (trace_replay moved 2x the bytes). Where
 * mapped_fit found no start among the smallest blocks. */
static uint32_t fit(uint64_t size, uint64_t page, uint64_t *at) {
  uint32_t x = aligned_fit(size, PA_GRAIN, at);
  if (x == PA_NIL || !page || size < page || span(*at, size, page) == span(0, size, page)) return x;
  uint64_t start;
  uint32_t y = aligned_fit(size, page, &start);
  return y == PA_NIL ? x : (*at = start, y);
}

/* The starts in block x that size may take (at most 3; 0 if none): its first, its last
 * (the end of the space's last block never: no buffer at the top of the reserve) and,
 * under a budget (page) for a buffer of a page or more, its first page start. */
static size_t starts(uint32_t x, uint64_t size, uint64_t page, uint64_t *cand) {
  uint64_t lo, at, end = on.off[x] + on.size[x], hi = (end - size) / PA_GRAIN * PA_GRAIN;
  if (!fits(x, size, PA_GRAIN, &lo)) return 0;
  size_t n = 0;
  cand[n++] = lo;
  if (end < pa_pool_size() && hi > lo) cand[n++] = hi;
  if (page && size >= page && fits(x, size, page, &at) && at != lo) cand[n++] = at;
  return n;
}

/* Best fit on the pages mapped already: of the smallest free blocks that hold size, the
 * start that needs the fewest pages mapped anew; under a budget (page), first the start
 * that spans the fewest pages (what an eviction moves). Best fit alone moved through
 * the address space faster than the pool's pages: a new page took an idle one's handle
 * (an unmap, a map and an access grant) while the next buffers landed where pages stayed
 * idle. Without a budget, GPT's replay at 1/4, recording modelled: 2,071 maps and 975
 * unmaps; these 1,607 and 506, the peak 1.018 x live, was 1.0135. Under half its peak,
 * ResNet-50's GPU stream (12 steps at 1/4): 5,200-5,400 mapping calls outside the
 * served phase, 4,300-4,600 so, and 46-72 host waits in the run, 29-42 so. */
static uint32_t mapped_fit(uint64_t size, uint64_t page, uint64_t *at) {
  uint32_t best = PA_NIL;
  uint64_t cost = UINT64_MAX, least = page ? span(0, size, page) << 32 : 0, cand[3];
  uint32_t x = pa_treap_ceil(&on.by_size, (int64_t)size);
  for (int k = 0; x != PA_NIL && k < FIT_TRIES && cost > least; k++, x = pa_treap_next(&on.by_size, x))
    for (size_t c = 0, n = starts(x, size, page, cand); c < n && cost > least; c++) {
      uint64_t pages = page ? span(cand[c], size, page) : 0, fresh = pa_pool_unmapped(cand[c], size);
      if ((pages << 32 | fresh) < cost) cost = pages << 32 | fresh, best = x, *at = cand[c];
    }
  return best;
}

/* [at, at + size) of free block x as a block in use: x, or PA_NIL without memory. */
static uint32_t carve(uint32_t x, uint64_t at, uint64_t size) {
  if (!split_front(x, at, FREE)) return PA_NIL; /* the bytes below at stay free */
  if (on.size[x] > size && new_node(on.off[x] + size, on.size[x] - size, FREE) == PA_NIL) return PA_NIL;
  pa_treap_erase(&on.by_size, x);
  on.size[x] = size, on.used[x] = USED;
  return x;
}

uint32_t pa_online_alloc(uint64_t size, uint64_t page, uint64_t *off) {
  uint64_t at;
  uint32_t x = !ready() ? PA_NIL : mapped_fit(size, page, &at);
  if (x == PA_NIL && ready()) x = fit(size, page, &at); /* only a block past FIT_TRIES holds it */
  if (x == PA_NIL || carve(x, at, size) == PA_NIL) return PA_NIL;
  *off = at;
  return x;
}

uint32_t pa_online_reserve(uint64_t lo, uint64_t size) {
  uint32_t x = ready() && size ? pa_treap_floor(&on.by_addr, (int64_t)lo) : PA_NIL;
  if (x == PA_NIL || on.used[x] != FREE || lo + size > on.off[x] + on.size[x]) return PA_NIL;
  return carve(x, lo, size);
}

static void release_node(uint32_t x) { on.next_free[x] = on.free_head, on.free_head = x; }

/* Coalesces with free neighbours: blocks never sit free side by side. */
static void release_block(uint32_t x) {
  uint32_t p = pa_treap_prev(&on.by_addr, x), n = pa_treap_next(&on.by_addr, x);
  on.used[x] = FREE, on.doomed[x] = 0;
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
  return b != PA_NIL && on.used[b] == USED && x < on.off[b] + on.size[b] ? b : PA_NIL;
}

/* ---- claims ------------------------------------------------------------------------- */

/* Cuts [off, at) off block x as a block of its own in state; x keeps the rest. false
 * without memory (x unchanged). */
static bool split_front(uint32_t x, uint64_t at, uint8_t state) {
  if (at <= on.off[x] || at >= on.off[x] + on.size[x]) return true;
  uint64_t off = on.off[x];
  bool indexed = on.used[x] == FREE;
  if (indexed) pa_treap_erase(&on.by_size, x);
  pa_treap_erase(&on.by_addr, x);
  on.size[x] -= at - off, on.off[x] = at;
  pa_treap_insert(&on.by_addr, x, (int64_t)at);
  if (indexed) pa_treap_insert(&on.by_size, x, (int64_t)on.size[x]);
  if (new_node(off, at - off, state) != PA_NIL) return true;
  if (indexed) pa_treap_erase(&on.by_size, x); /* undo: x spans the whole again */
  pa_treap_erase(&on.by_addr, x);
  on.size[x] += at - off, on.off[x] = off;
  pa_treap_insert(&on.by_addr, x, (int64_t)off);
  if (indexed) pa_treap_insert(&on.by_size, x, (int64_t)on.size[x]);
  return false;
}

static void claim_block(uint32_t x) {
  if (on.used[x] == FREE) pa_treap_erase(&on.by_size, x);
  on.used[x] = CLAIMED, on.doomed[x] = 0;
}

/* Turns the free space of [lo, hi) into claimed blocks and marks the used ones doomed.
 * false (nothing changed but harmless splits) when the range holds a claim already or
 * memory runs out. */
bool pa_online_claim(uint64_t lo, uint64_t hi) {
  if (!ready() || on.nclaims == PA_MAX_CLAIMS || hi > pa_pool_size() || lo >= hi) return false;
  for (uint64_t at = lo; at < hi;) { /* check first: a claim never half happens */
    uint32_t x = pa_treap_floor(&on.by_addr, (int64_t)at);
    if (on.used[x] == CLAIMED) return false;
    at = on.off[x] + on.size[x];
  }
  uint32_t first = pa_treap_floor(&on.by_addr, (int64_t)lo), last = pa_treap_floor(&on.by_addr, (int64_t)hi - 1);
  if ((on.used[first] == FREE && !split_front(first, lo, FREE)) ||
      (on.used[last] == FREE && !split_front(last, hi, FREE)))
    return false;
  for (uint64_t at = lo; at < hi;) {
    uint32_t x = pa_treap_floor(&on.by_addr, (int64_t)at);
    if (on.used[x] == FREE) claim_block(x);
    else if (!on.doomed[x]) on.doomed[x] = 1, on.intruders++;
    at = on.off[x] + on.size[x];
  }
  on.claims[on.nclaims++] = (struct claim_s){lo, hi};
  return true;
}

static bool claim_of(uint32_t x, struct claim_s *c) {
  for (size_t i = 0; i < on.nclaims; i++)
    if (on.claims[i].lo < on.off[x] + on.size[x] && on.off[x] < on.claims[i].hi) return *c = on.claims[i], true;
  return false;
}

/* A doomed block is freed: its part inside the claim joins it; the rest is free space
 * (all of it claimed, if memory for the split runs out: the claim only grows). */
static void free_doomed(uint32_t x) {
  struct claim_s c = {0, 0};
  on.doomed[x] = 0, on.intruders--;
  if (!claim_of(x, &c)) return release_block(x);
  uint64_t end = on.off[x] + on.size[x];
  /* parts outside the claim are cut off as blocks of their own and freed (coalescing) */
  if (on.off[x] < c.lo && split_front(x, c.lo, CLAIMED)) release_block(pa_treap_prev(&on.by_addr, x));
  if (end > c.hi && split_front(x, c.hi, CLAIMED)) return release_block(x); /* the inside is the cut */
  claim_block(x);
}

void pa_online_free(uint32_t x) {
  if (on.doomed[x]) return free_doomed(x);
  release_block(x);
}

/* Gives a claim's space back: its claimed blocks become free, its intruders ordinary. */
void pa_online_unclaim(uint64_t lo, uint64_t hi) {
  size_t i = 0;
  while (i < on.nclaims && (on.claims[i].lo != lo || on.claims[i].hi != hi)) i++;
  if (i == on.nclaims) return;
  on.claims[i] = on.claims[--on.nclaims];
  for (uint64_t at = lo; at < hi;) {
    uint32_t x = pa_treap_floor(&on.by_addr, (int64_t)at);
    uint64_t end = on.off[x] + on.size[x];
    if (on.used[x] == CLAIMED) release_block(x);
    else if (on.used[x] == USED && on.doomed[x]) on.doomed[x] = 0, on.intruders--;
    at = end;
  }
}

size_t pa_online_intruders(void) { return on.intruders; }

/* Whether a block still in use lies in [lo, hi) (a claim's range: only its intruders can). */
bool pa_online_intrudes(uint64_t lo, uint64_t hi) {
  for (uint64_t at = lo; at < hi;) {
    uint32_t x = pa_treap_floor(&on.by_addr, (int64_t)at);
    if (x == PA_NIL) return false;
    if (on.used[x] == USED) return true;
    at = on.off[x] + on.size[x];
  }
  return false;
}

/* Joins into claimed block x the claimed blocks after it up to hi: a freed intruder's
 * space joins its claim as a block of its own, and a buffer of the plan may span several
 * (all in one claim: none crosses a claim's bounds). false if one there is not claimed. */
static bool join_claimed(uint32_t x, uint64_t hi) {
  while (on.off[x] + on.size[x] < hi) {
    uint32_t n = pa_treap_next(&on.by_addr, x);
    if (n == PA_NIL || on.used[n] != CLAIMED) return false;
    on.size[x] += on.size[n];
    pa_treap_erase(&on.by_addr, n), release_node(n);
  }
  return true;
}

uint32_t pa_online_take(uint64_t lo, uint64_t size) {
  uint32_t x = on.ready && size ? pa_treap_floor(&on.by_addr, (int64_t)lo) : PA_NIL;
  if (x == PA_NIL || on.used[x] != CLAIMED || !join_claimed(x, lo + size) || !split_front(x, lo, CLAIMED))
    return PA_NIL;
  if (on.size[x] > size && new_node(lo + size, on.size[x] - size, CLAIMED) == PA_NIL) return PA_NIL;
  on.size[x] = size, on.used[x] = USED, on.doomed[x] = 1, on.intruders++;
  return x;
}
