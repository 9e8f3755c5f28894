/* MiniMalloc's canonical greedy, i.e. its search's first dive without backtracking:
 * every buffer sits on top of the placed buffers it overlaps (no holes below it), and
 * the next buffer placed is the one whose position is lowest, ties broken by a static
 * preorder. Positions only rise, so a lazy heap re-checks a popped buffer's position
 * against the skyline (a max-tree over time) and pushes it back if it rose.
 *
 * Fixed buffers are part of the skyline (pa_skyline_ordered: nothing lies under one), or,
 * around them (pa_skyline_around), obstacles: those live throughout split the address
 * range into strips with a skyline each, filled lowest first, and a buffer that meets one
 * live part of the time steps over it. An anchored plan's slots, laid out in the holes
 * between a program's weights, end 1-4 % of a page count lower so than by the greedy
 * orders on torch_stream (seed 57: 180 -> 176 pages; GPT's log: 4,403 -> 4,371). */
#include "planner.h"
#include "timeline.h"
#include "treap.h"

#include <stdlib.h>

/* A radix heap over (position, preorder rank) packed in 128 bits. The skyline's keys are
 * monotone: a buffer is only ever re-keyed above the last minimum, so each element moves
 * between 129 buckets (by the highest bit where it differs from the last minimum) instead
 * of sifting through a binary heap on every one of its many re-keys. */
typedef unsigned __int128 rkey_t;
#define RBUCKETS 129

typedef struct rheap_s {
  rkey_t last;
  rkey_t *key;       /* per buffer */
  uint32_t *next;    /* per buffer: next in its bucket */
  uint32_t head[RBUCKETS];
  size_t count;
} rheap_t;

static int bucket_of(rkey_t k, rkey_t last) {
  rkey_t x = k ^ last;
  uint64_t hi = (uint64_t)(x >> 64), lo = (uint64_t)x;
  if (hi) return 129 - __builtin_clzll(hi);
  return lo ? 65 - __builtin_clzll(lo) : 0;
}

static void rpush(rheap_t *h, uint32_t b, rkey_t k) {
  int i = bucket_of(k, h->last);
  h->key[b] = k, h->next[b] = h->head[i], h->head[i] = b;
  h->count++;
}

/* Makes bucket 0 hold the minimum and returns it (the heap must not be empty). */
static uint32_t rmin(rheap_t *h) {
  if (h->head[0] != PA_NIL) return h->head[0];
  int i = 1;
  while (h->head[i] == PA_NIL) i++;
  rkey_t m = h->key[h->head[i]];
  for (uint32_t b = h->next[h->head[i]]; b != PA_NIL; b = h->next[b])
    if (h->key[b] < m) m = h->key[b];
  uint32_t b = h->head[i];
  h->head[i] = PA_NIL, h->last = m;
  for (uint32_t nx; b != PA_NIL; b = nx) {
    nx = h->next[b];
    int j = bucket_of(h->key[b], m);
    h->next[b] = h->head[j], h->head[j] = b;
  }
  return h->head[0];
}

static void rdrop_min(rheap_t *h) {
  h->head[0] = h->next[h->head[0]];
  h->count--;
}

static rkey_t pack(int64_t pos, uint32_t rank) { return ((rkey_t)(uint64_t)pos << 32) | rank; }

typedef struct sky_s {
  const pa_trace_t *t;
  pa_timeline_t tl;
  struct strip_s {
    int64_t lo, hi;     /* the addresses between two fixed buffers live throughout */
    pa_maxtree_t tree;  /* its skyline over time */
  } * strip;
  uint32_t nstrips;
  uint32_t *seg_lo, *seg_hi; /* per span: its segments */
  struct sky_buf_s {
    uint32_t lo, hi; /* segments of a one-span buffer; hi = 0 for several spans */
    int64_t size, align;
  } * buf;
  uint32_t *rank;        /* per buffer: its place in the preorder */
  uint32_t *member;      /* unfixed buffers, grouped, each group in rank order */
  uint32_t *first, *end; /* per group: its unplaced members in member[] */
  size_t ngroups;
  uint32_t *fixed, nfixed; /* around: the fixed buffers live part of the time, by offset */
  bool sized;              /* groups of one size only (strips or obstacles) */
} sky_t;

/* Whether buffers a and b are live at one instant. */
static bool meet_in_time(const pa_trace_t *t, uint32_t a, uint32_t b) {
  const pa_buf_t *x = &t->bufs[a], *y = &t->bufs[b];
  if (x->upper <= y->lower || y->upper <= x->lower) return false;
  const pa_span_t *p = pa_buf_spans(t, x), *q = pa_buf_spans(t, y);
  for (uint32_t i = 0, j = 0; i < x->nspans && j < y->nspans;) {
    if (p[i].lower < q[j].upper && q[j].lower < p[i].upper) return true;
    p[i].upper < q[j].upper ? i++ : j++;
  }
  return false;
}

/* The lowest place from at up where b meets no fixed buffer live with it (smallest free
 * place at or above at: monotone in at, as the lazy heap needs). */
static int64_t step_over(const sky_t *s, uint32_t b, int64_t at) {
  const pa_buf_t *buf = &s->t->bufs[b];
  for (bool moved = s->nfixed > 0; moved;) {
    moved = false;
    for (uint32_t k = 0; k < s->nfixed; k++) {
      const pa_buf_t *f = &s->t->bufs[s->fixed[k]];
      if (f->fixed >= at + buf->size || f->fixed + f->size <= at || !meet_in_time(s->t, b, s->fixed[k])) continue;
      at = pa_align_up(f->fixed + f->size, buf->align), moved = true;
    }
  }
  return at;
}

/* b's place on strip j's skyline, above what is placed there over b's life. */
static int64_t stacked(const sky_t *s, uint32_t b, uint32_t j) {
  const struct sky_buf_s *c = &s->buf[b];
  const pa_maxtree_t *tree = &s->strip[j].tree;
  int64_t top = 0;
  if (c->hi) top = pa_maxtree_max(tree, c->lo, c->hi);
  const pa_buf_t *buf = &s->t->bufs[b];
  for (uint32_t k = buf->span0; !c->hi && k < buf->span0 + buf->nspans; k++) {
    int64_t v = pa_maxtree_max(tree, s->seg_lo[k], s->seg_hi[k]);
    if (v > top) top = v;
  }
  return pa_align_up(top > s->strip[j].lo ? top : s->strip[j].lo, c->align);
}

/* The lowest strip's place where b fits under its top (the last strip has none). Each
 * strip's place only rises, so their least does too. */
static int64_t lowest(const sky_t *s, uint32_t b) {
  for (uint32_t j = 0;; j++) {
    if (j + 1 < s->nstrips && s->strip[j].hi - s->strip[j].lo < s->buf[b].size) continue;
    int64_t at = step_over(s, b, stacked(s, b, j));
    if (j + 1 == s->nstrips || at + s->buf[b].size <= s->strip[j].hi) return at;
  }
}

static void put(sky_t *s, uint32_t b, int64_t offset) {
  uint32_t j = 0;
  while (j + 1 < s->nstrips && offset >= s->strip[j].hi) j++;
  pa_maxtree_t *tree = &s->strip[j].tree;
  const struct sky_buf_s *c = &s->buf[b];
  if (c->hi) return pa_maxtree_raise(tree, c->lo, c->hi, offset + c->size);
  const pa_buf_t *buf = &s->t->bufs[b];
  for (uint32_t k = buf->span0; k < buf->span0 + buf->nspans; k++)
    pa_maxtree_raise(tree, s->seg_lo[k], s->seg_hi[k], offset + buf->size);
}

static void push_group(sky_t *s, rheap_t *h, uint32_t g, int64_t at) {
  rpush(h, g, pack(at, s->rank[s->member[s->first[g]]]));
}

static int run(sky_t *s, rheap_t *h, const atomic_bool *cancel, int64_t *off) {
  for (uint32_t g = 0; g < s->ngroups; g++) push_group(s, h, g, 0);
  for (uint32_t pops = 1; h->count; pops++) {
    if (!(pops & 0xffff) && cancel && atomic_load(cancel)) return PA_ETIMEOUT;
    uint32_t g = rmin(h), b = s->member[s->first[g]];
    int64_t key = (int64_t)(h->key[g] >> 32), at = lowest(s, b);
    rdrop_min(h);
    if (at > key) { /* stale: something was placed under it since */
      push_group(s, h, g, at);
      continue;
    }
    off[b] = at;
    put(s, b, at);
    if (++s->first[g] < s->end[g]) push_group(s, h, g, lowest(s, s->member[s->first[g]]));
  }
  return PA_OK;
}

static int index_spans(sky_t *s) {
  const pa_trace_t *t = s->t;
  s->seg_lo = malloc((t->nspans + 1) * sizeof *s->seg_lo);
  s->seg_hi = malloc((t->nspans + 1) * sizeof *s->seg_hi);
  s->buf = malloc((t->n + 1) * sizeof *s->buf);
  if (!s->seg_lo || !s->seg_hi || !s->buf) return PA_ENOMEM;
  for (size_t k = 0; k < t->nspans; k++) {
    s->seg_lo[k] = (uint32_t)pa_timeline_index(&s->tl, t->spans[k].lower);
    s->seg_hi[k] = (uint32_t)pa_timeline_index(&s->tl, t->spans[k].upper);
  }
  for (size_t i = 0; i < t->n; i++) {
    const pa_buf_t *b = &t->bufs[i];
    bool one = b->nspans == 1;
    s->buf[i] = (struct sky_buf_s){one ? s->seg_lo[b->span0] : 0, one ? s->seg_hi[b->span0] : 0,
                                   b->size, b->align};
  }
  return PA_OK;
}

/* Buffers with one span over the same segments and one alignment always sit at the same
 * height, so they share a heap entry holding their lowest-ranked unplaced member: a stack
 * of k of them costs k pops instead of k^2/2 stale re-checks (6,273 such buffers at the
 * start of IOPDDL's Y_1 were 20 M of its 35 M re-checks). Around fixed buffers only those
 * of one size do: a smaller one may fit a strip or a place under an obstacle that the
 * group's first does not. */
static bool same_group(const sky_t *s, const struct sky_buf_s *x, const struct sky_buf_s *y) {
  return x->hi && x->lo == y->lo && x->hi == y->hi && x->align == y->align && (!s->sized || x->size == y->size);
}

static int group_cmp(const void *a, const void *b, void *arg) {
  const sky_t *s = arg;
  uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
  const struct sky_buf_s *x = &s->buf[i], *y = &s->buf[j];
  if (!same_group(s, x, y)) {
    if (x->lo != y->lo) return x->lo < y->lo ? -1 : 1;
    if (x->hi != y->hi) return x->hi < y->hi ? -1 : 1;
    if (x->align != y->align) return x->align < y->align ? -1 : 1;
    if (x->size != y->size) return x->size < y->size ? -1 : 1;
  }
  return (s->rank[i] > s->rank[j]) - (s->rank[i] < s->rank[j]);
}

/* Whether fixed buffer b is live over the whole trace: it bounds strips. */
static bool throughout(const pa_trace_t *t, uint32_t b, int64_t first, int64_t last) {
  const pa_buf_t *x = &t->bufs[b];
  return x->fixed != PA_NO_OFFSET && x->nspans == 1 && x->lower <= first && x->upper >= last;
}

static int by_fixed(const void *a, const void *b, void *arg) {
  const pa_trace_t *t = arg;
  int64_t x = t->bufs[*(const uint32_t *)a].fixed, y = t->bufs[*(const uint32_t *)b].fixed;
  return (x > y) - (x < y);
}

/* Whether fixed buffer b lies in no strip (it bounds them). */
static bool walled(const sky_t *s, uint32_t b) {
  int64_t at = s->t->bufs[b].fixed;
  for (uint32_t j = 0; j < s->nstrips; j++)
    if (at >= s->strip[j].lo && at < s->strip[j].hi) return false;
  return true;
}

/* The strips: around, the address ranges between the fixed buffers live throughout,
 * each with a skyline of its own, so that a buffer stepping over one of them does not
 * close the hole under it to the buffers live beside it; else one strip. */
static int make_strips(sky_t *s, bool around) {
  const pa_trace_t *t = s->t;
  size_t n = t->n, k = 0;
  int64_t first = INT64_MAX, last = INT64_MIN;
  for (size_t i = 0; i < n; i++) {
    if (t->bufs[i].lower < first) first = t->bufs[i].lower;
    if (t->bufs[i].upper > last) last = t->bufs[i].upper;
  }
  uint32_t *wall = malloc((n + 1) * sizeof *wall);
  if (!wall) return PA_ENOMEM;
  for (uint32_t i = 0; around && i < n; i++)
    if (throughout(t, i, first, last)) wall[k++] = i;
  if (!(s->strip = calloc(k + 1, sizeof *s->strip))) return free(wall), PA_ENOMEM;
  qsort_r(wall, k, sizeof *wall, by_fixed, (void *)t);
  int64_t lo = 0;
  for (size_t i = 0; i <= k; i++) {
    const pa_buf_t *w = i < k ? &t->bufs[wall[i]] : NULL;
    int64_t hi = w ? w->fixed : INT64_MAX;
    if (hi > lo) s->strip[s->nstrips++] = (struct strip_s){.lo = lo, .hi = hi};
    if (w && w->fixed + w->size > lo) lo = w->fixed + w->size;
  }
  free(wall);
  for (uint32_t j = 0; j < s->nstrips; j++)
    if (pa_maxtree_init(&s->strip[j].tree, s->tl.ncoord + 1)) return PA_ENOMEM;
  return PA_OK;
}

static int group_buffers(sky_t *s, const uint32_t *order, bool around, int64_t *off) {
  size_t n = s->t->n, m = 0;
  if (around && !(s->fixed = malloc((n + 1) * sizeof *s->fixed))) return PA_ENOMEM;
  s->rank = malloc((n + 1) * sizeof *s->rank);
  s->member = malloc((n + 1) * sizeof *s->member);
  s->first = malloc((n + 1) * sizeof *s->first);
  s->end = malloc((n + 1) * sizeof *s->end);
  if (!s->rank || !s->member || !s->first || !s->end) return PA_ENOMEM;
  for (size_t k = 0; k < n; k++) {
    uint32_t b = order[k];
    s->rank[b] = (uint32_t)k;
    off[b] = s->t->bufs[b].fixed;
    if (off[b] != PA_NO_OFFSET && around && !walled(s, b)) s->fixed[s->nfixed++] = b;
    else if (off[b] != PA_NO_OFFSET && around) continue;
    else if (off[b] != PA_NO_OFFSET) put(s, b, off[b]);
    else s->member[m++] = b;
  }
  if (around) qsort_r(s->fixed, s->nfixed, sizeof *s->fixed, by_fixed, (void *)s->t);
  s->sized = s->nstrips > 1 || s->nfixed;
  qsort_r(s->member, m, sizeof *s->member, group_cmp, s);
  for (size_t k = 0; k < m; k++) {
    bool join = k && same_group(s, &s->buf[s->member[k - 1]], &s->buf[s->member[k]]);
    if (!join) s->first[s->ngroups++] = (uint32_t)k;
    s->end[s->ngroups - 1] = (uint32_t)k + 1;
  }
  return PA_OK;
}

static int skyline(const pa_trace_t *t, const uint32_t *order, bool around, const atomic_bool *cancel,
                   int64_t *off) {
  sky_t s = {.t = t};
  rheap_t h = {.key = malloc((t->n + 1) * sizeof *h.key), .next = malloc((t->n + 1) * sizeof *h.next)};
  for (int i = 0; i < RBUCKETS; i++) h.head[i] = PA_NIL;
  int rc = h.key && h.next && !pa_timeline_init(&s.tl, t) ? PA_OK : PA_ENOMEM;
  if (rc == PA_OK) rc = index_spans(&s);
  if (rc == PA_OK) rc = make_strips(&s, around);
  if (rc == PA_OK) rc = group_buffers(&s, order, around, off);
  if (rc == PA_OK) rc = run(&s, &h, cancel, off);
  free(s.seg_lo), free(s.seg_hi), free(s.buf), free(h.key), free(h.next);
  free(s.rank), free(s.member), free(s.first), free(s.end), free(s.fixed);
  for (uint32_t j = 0; j < s.nstrips; j++) pa_maxtree_free(&s.strip[j].tree);
  free(s.strip);
  pa_timeline_free(&s.tl);
  return rc;
}

int pa_skyline_ordered(const pa_trace_t *t, const uint32_t *order, const atomic_bool *cancel,
                       int64_t *off) {
  return skyline(t, order, false, cancel, off);
}

int pa_skyline_around(const pa_trace_t *t, const uint32_t *order, const atomic_bool *cancel,
                      int64_t *off) {
  return skyline(t, order, true, cancel, off);
}

const pa_order_t pa_skyline_preorders[PA_SKYLINE_PREORDERS] = {PA_ORDER_TOTAL, PA_ORDER_AREA, PA_ORDER_SIZE};

int pa_skyline_as_order(const pa_trace_t *t, pa_order_t pre, uint32_t *order, int64_t *off) {
  int rc = pa_order_make(t, pre, order);
  if (rc == PA_OK) rc = pa_skyline_around(t, order, NULL, off);
  return rc == PA_OK ? pa_order_by_offset(t, off, order) : rc;
}
