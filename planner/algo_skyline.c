/* MiniMalloc's canonical greedy, i.e. its search's first dive without backtracking:
 * every buffer sits on top of the placed buffers it overlaps (no holes below it), and
 * the next buffer placed is the one whose position is lowest, ties broken by a static
 * preorder. Positions only rise, so a lazy heap re-checks a popped buffer's position
 * against the skyline (a max-tree over time) and pushes it back if it rose. */
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
  pa_maxtree_t tree;
  uint32_t *seg_lo, *seg_hi; /* per span: its segments */
  struct sky_buf_s {
    uint32_t lo, hi; /* segments of a one-span buffer; hi = 0 for several spans */
    int64_t size, align;
  } * buf;
  uint32_t *rank;        /* per buffer: its place in the preorder */
  uint32_t *member;      /* unfixed buffers, grouped, each group in rank order */
  uint32_t *first, *end; /* per group: its unplaced members in member[] */
  size_t ngroups;
} sky_t;

static int64_t lowest(const sky_t *s, uint32_t b) {
  const struct sky_buf_s *c = &s->buf[b];
  if (c->hi) {
    int64_t top = pa_maxtree_max(&s->tree, c->lo, c->hi);
    return pa_align_up(top > 0 ? top : 0, c->align);
  }
  const pa_buf_t *buf = &s->t->bufs[b];
  int64_t top = 0;
  for (uint32_t k = buf->span0; k < buf->span0 + buf->nspans; k++) {
    int64_t v = pa_maxtree_max(&s->tree, s->seg_lo[k], s->seg_hi[k]);
    if (v > top) top = v;
  }
  return pa_align_up(top, buf->align);
}

static void put(sky_t *s, uint32_t b, int64_t offset) {
  const struct sky_buf_s *c = &s->buf[b];
  if (c->hi) return pa_maxtree_raise(&s->tree, c->lo, c->hi, offset + c->size);
  const pa_buf_t *buf = &s->t->bufs[b];
  for (uint32_t k = buf->span0; k < buf->span0 + buf->nspans; k++)
    pa_maxtree_raise(&s->tree, s->seg_lo[k], s->seg_hi[k], offset + buf->size);
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
 * start of IOPDDL's Y_1 were 20 M of its 35 M re-checks). */
static bool same_group(const struct sky_buf_s *x, const struct sky_buf_s *y) {
  return x->hi && x->lo == y->lo && x->hi == y->hi && x->align == y->align;
}

static int group_cmp(const void *a, const void *b, void *arg) {
  const sky_t *s = arg;
  uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
  const struct sky_buf_s *x = &s->buf[i], *y = &s->buf[j];
  if (!same_group(x, y)) {
    if (x->lo != y->lo) return x->lo < y->lo ? -1 : 1;
    if (x->hi != y->hi) return x->hi < y->hi ? -1 : 1;
    if (x->align != y->align) return x->align < y->align ? -1 : 1;
  }
  return (s->rank[i] > s->rank[j]) - (s->rank[i] < s->rank[j]);
}

static int group_buffers(sky_t *s, const uint32_t *order, int64_t *off) {
  size_t n = s->t->n, m = 0;
  s->rank = malloc((n + 1) * sizeof *s->rank);
  s->member = malloc((n + 1) * sizeof *s->member);
  s->first = malloc((n + 1) * sizeof *s->first);
  s->end = malloc((n + 1) * sizeof *s->end);
  if (!s->rank || !s->member || !s->first || !s->end) return PA_ENOMEM;
  for (size_t k = 0; k < n; k++) {
    uint32_t b = order[k];
    s->rank[b] = (uint32_t)k;
    off[b] = s->t->bufs[b].fixed;
    if (off[b] != PA_NO_OFFSET) put(s, b, off[b]);
    else s->member[m++] = b;
  }
  qsort_r(s->member, m, sizeof *s->member, group_cmp, s);
  for (size_t k = 0; k < m; k++) {
    bool join = k && same_group(&s->buf[s->member[k - 1]], &s->buf[s->member[k]]);
    if (!join) s->first[s->ngroups++] = (uint32_t)k;
    s->end[s->ngroups - 1] = (uint32_t)k + 1;
  }
  return PA_OK;
}

int pa_skyline_ordered(const pa_trace_t *t, const uint32_t *order, const atomic_bool *cancel,
                       int64_t *off) {
  sky_t s = {.t = t};
  rheap_t h = {.key = malloc((t->n + 1) * sizeof *h.key), .next = malloc((t->n + 1) * sizeof *h.next)};
  for (int i = 0; i < RBUCKETS; i++) h.head[i] = PA_NIL;
  int rc = h.key && h.next && !pa_timeline_init(&s.tl, t) ? PA_OK : PA_ENOMEM;
  if (rc == PA_OK) rc = pa_maxtree_init(&s.tree, s.tl.ncoord + 1);
  if (rc == PA_OK) rc = index_spans(&s);
  if (rc == PA_OK) rc = group_buffers(&s, order, off);
  if (rc == PA_OK) rc = run(&s, &h, cancel, off);
  free(s.seg_lo), free(s.seg_hi), free(s.buf), free(h.key), free(h.next);
  free(s.rank), free(s.member), free(s.first), free(s.end);
  pa_maxtree_free(&s.tree);
  pa_timeline_free(&s.tl);
  return rc;
}

