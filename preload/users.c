/* Who uses the pool's live buffers, under a budget: every live buffer by address, the
 * streams that touched it (a copy out of its pages waits for each), when it was last
 * touched on the touch clock (one tick per launch or copy), and whether any launch or
 * copy was ever seen to touch it (one never seen may be reached only through pointers
 * stored in device memory: it must not leave). The mechanism under the budget's
 * policy: the pool asks it whom an eviction waits for (pa_users_span), budget.c walks
 * it to score victims. It calls nothing above the capture state. pa_mu held throughout. */
#include "pa.h"
#include "treap.h"

#include <stdlib.h>

static struct {
  pa_user_t *b;
  uint32_t *next_free, *order; /* node free list; live nodes, dense (sampling) */
  uint32_t free_head;
  size_t cap, n;
  uint64_t live_bytes, clock, launches;
  pa_treap_t by_addr;
} PA_PER_DEVICE(us) = {[0 ... PA_SLOTS - 1] = {.free_head = PA_NIL}};
PA_BIND(us)
#define us PA_THIS(us)

static bool grow(void) {
  size_t cap = us.cap ? 2 * us.cap : 1024;
  pa_user_t *b = realloc(us.b, cap * sizeof *b);
  if (b) us.b = b;
  uint32_t *nf = b ? realloc(us.next_free, cap * sizeof *nf) : NULL;
  if (nf) us.next_free = nf;
  uint32_t *order = nf ? realloc(us.order, cap * sizeof *order) : NULL;
  if (order) us.order = order;
  if (!order || (us.cap ? pa_treap_grow(&us.by_addr, us.cap, cap) : pa_treap_init(&us.by_addr, cap, 13))) return false;
  for (size_t k = cap; k-- > us.cap;) us.next_free[k] = us.free_head, us.free_head = (uint32_t)k;
  us.cap = cap;
  return true;
}

uint32_t pa_users_track(uint64_t off, uint64_t size) {
  if (us.free_head == PA_NIL && !grow()) return PA_NIL; /* untracked: never a victim */
  uint32_t x = us.free_head;
  us.free_head = us.next_free[x];
  us.b[x] = (pa_user_t){.off = off, .size = size, .last_use = us.clock, .born = us.launches, .pos = (uint32_t)us.n,
                        .ident = UINT32_MAX};
  us.order[us.n++] = x;
  us.live_bytes += size;
  pa_treap_insert(&us.by_addr, x, (int64_t)off);
  return x;
}

uint32_t pa_users_at(uint64_t x) {
  uint32_t n = us.cap ? pa_treap_floor(&us.by_addr, (int64_t)x) : PA_NIL;
  return n != PA_NIL && x < us.b[n].off + us.b[n].size ? n : PA_NIL;
}

uint32_t pa_users_first_over(uint64_t x) {
  uint32_t n = pa_users_at(x);
  return n != PA_NIL || !us.cap ? n : pa_treap_ceil(&us.by_addr, (int64_t)x);
}

uint32_t pa_users_next(uint32_t n) { return pa_treap_next(&us.by_addr, n); }
uint32_t pa_users_first(void) { return us.cap ? pa_treap_first(&us.by_addr) : PA_NIL; }
pa_user_t *pa_users_node(uint32_t n) { return &us.b[n]; }
size_t pa_users_count(void) { return us.n; }
uint32_t pa_users_nth(size_t i) { return us.order[i]; }
uint64_t pa_users_live_bytes(void) { return us.live_bytes; }
uint64_t pa_users_clock(void) { return us.clock; }
uint64_t pa_users_launches(void) { return us.launches; }

void pa_users_untrack(uint32_t x) {
  pa_treap_erase(&us.by_addr, x);
  uint32_t last = us.order[--us.n];
  us.order[us.b[x].pos] = last, us.b[last].pos = us.b[x].pos;
  us.live_bytes -= us.b[x].size;
  us.next_free[x] = us.free_head, us.free_head = x;
}

void pa_users_tick(bool launch) {
  us.clock++;
  us.launches += launch;
}

/* streams[0 .. n) with s too; max + 1 when that makes too many. */
static size_t add_stream(CUstream *streams, size_t n, size_t max, CUstream s) {
  for (size_t i = 0; i < n; i++)
    if (streams[i] == s) return n;
  if (n == max) return max + 1;
  streams[n] = s;
  return n + 1;
}

/* The per-thread default stream is a different stream in every thread: an event the
 * evicting thread records on it would order the wrong stream. */
void pa_users_touch(uint32_t x, CUstream s) {
  pa_user_t *b = &us.b[x];
  size_t n = s == CU_STREAM_PER_THREAD ? PA_USER_STREAMS + 1 : add_stream(b->streams, b->nstreams, PA_USER_STREAMS, s);
  if (n > PA_USER_STREAMS) b->multi = true;
  else b->nstreams = (uint8_t)n;
  b->seen = true, b->last_use = us.clock;
}

void pa_users_touch_range(uint64_t off, uint64_t size, CUstream s) {
  for (uint32_t n = pa_users_first_over(off); n != PA_NIL && us.b[n].off < off + size; n = pa_users_next(n))
    pa_users_touch(n, s);
}

bool pa_users_fresh(const pa_user_t *b) { return !b->seen && b->born == us.launches; }

/* A capturing stream would capture the event an eviction records there. */
static pa_users_t no_capturing(pa_users_t u, const CUstream *streams, size_t max) {
  bool named = streams && u.nstreams <= max;
  for (size_t i = 0; named && pa_capture_open() && i < u.nstreams; i++)
    if (pa_stream_capturing(streams[i])) u.nstreams = max + 1, named = false;
  return u;
}

/* One buffer's part of a span (lo, hi: the range asked). */
static void add_user(pa_users_t *u, const pa_user_t *b, uint64_t lo, uint64_t hi, CUstream *streams, size_t max) {
  uint64_t a = b->off > lo ? b->off : lo, e = b->off + b->size < hi ? b->off + b->size : hi;
  if (a < u->lo) u->lo = a;
  if (e > u->hi) u->hi = e;
  u->unseen |= !b->seen;
  if (!b->seen || u->nstreams > max) return;
  if (b->multi) u->nstreams = max + 1;
  for (uint8_t k = 0; k < b->nstreams && u->nstreams <= max; k++) u->nstreams = add_stream(streams, u->nstreams, max, b->streams[k]);
}

pa_users_t pa_users_span(uint64_t lo, uint64_t hi, CUstream *streams, size_t max) {
  pa_users_t u = {hi, lo, 0, false};
  for (uint32_t n = pa_users_first_over(lo); n != PA_NIL && us.b[n].off < hi; n = pa_users_next(n))
    if (!pa_users_fresh(&us.b[n])) add_user(&u, &us.b[n], lo, hi, streams, max);
  u = no_capturing(u, streams, max);
  if (u.lo >= u.hi) u.lo = u.hi = lo;
  return u;
}
