/* MiniMalloc's canonical greedy, i.e. its search's first dive without backtracking:
 * every buffer sits on top of the placed buffers it overlaps (no holes below it), and
 * the next buffer placed is the one whose position is lowest, ties broken by a static
 * preorder. Positions only rise, so a lazy heap re-checks a popped buffer's position
 * against the skyline (a max-tree over time) and pushes it back if it rose. */
#include "planner.h"
#include "timeline.h"

#include <stdlib.h>

typedef struct hitem_s {
  int64_t key;
  uint32_t rank, buf;
} hitem_t;

static bool hless(hitem_t a, hitem_t b) {
  return a.key < b.key || (a.key == b.key && a.rank < b.rank);
}

static void hpush(hitem_t *h, size_t *n, hitem_t v) {
  size_t i = (*n)++;
  for (; i && hless(v, h[(i - 1) / 2]); i = (i - 1) / 2) h[i] = h[(i - 1) / 2];
  h[i] = v;
}

static hitem_t hpop(hitem_t *h, size_t *n) {
  hitem_t top = h[0], v = h[--*n];
  size_t i = 0;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= *n) break;
    if (c + 1 < *n && hless(h[c + 1], h[c])) c++;
    if (!hless(h[c], v)) break;
    h[i] = h[c], i = c;
  }
  h[i] = v;
  return top;
}

static int64_t align_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

typedef struct sky_s {
  const pa_trace_t *t;
  pa_timeline_t tl;
  pa_maxtree_t tree;
} sky_t;

static int64_t lowest(const sky_t *s, uint32_t b) {
  const pa_buf_t *buf = &s->t->bufs[b];
  int64_t top = 0;
  for (uint32_t k = 0; k < buf->nspans; k++) {
    const pa_span_t *sp = &s->t->spans[buf->span0 + k];
    int64_t v = pa_maxtree_max(&s->tree, pa_timeline_index(&s->tl, sp->lower),
                               pa_timeline_index(&s->tl, sp->upper));
    if (v > top) top = v;
  }
  return align_up(top, buf->align);
}

static void put(sky_t *s, uint32_t b, int64_t offset) {
  const pa_buf_t *buf = &s->t->bufs[b];
  for (uint32_t k = 0; k < buf->nspans; k++) {
    const pa_span_t *sp = &s->t->spans[buf->span0 + k];
    pa_maxtree_raise(&s->tree, pa_timeline_index(&s->tl, sp->lower),
                     pa_timeline_index(&s->tl, sp->upper), offset + buf->size);
  }
}

static void run(sky_t *s, const uint32_t *order, hitem_t *heap, int64_t *off) {
  size_t n = 0;
  for (size_t k = 0; k < s->t->n; k++) {
    uint32_t b = order[k];
    off[b] = s->t->bufs[b].fixed;
    if (off[b] != PA_NO_OFFSET) put(s, b, off[b]);
    else hpush(heap, &n, (hitem_t){0, (uint32_t)k, b});
  }
  while (n) {
    hitem_t it = hpop(heap, &n);
    int64_t at = lowest(s, it.buf);
    if (at > it.key) {
      it.key = at;
      hpush(heap, &n, it);
      continue;
    }
    off[it.buf] = at;
    put(s, it.buf, at);
  }
}

int pa_skyline_ordered(const pa_trace_t *t, const uint32_t *order, int64_t *off) {
  sky_t s = {.t = t};
  hitem_t *heap = malloc((t->n + 1) * sizeof *heap);
  if (!heap || pa_timeline_init(&s.tl, t)) {
    free(heap);
    return PA_ENOMEM;
  }
  int rc = pa_maxtree_init(&s.tree, s.tl.ncoord + 1);
  if (rc == PA_OK) run(&s, order, heap, off);
  pa_maxtree_free(&s.tree);
  pa_timeline_free(&s.tl);
  free(heap);
  return rc;
}

int pa_skyline(const pa_trace_t *t, int64_t *off) {
  uint32_t *order = malloc((t->n + 1) * sizeof *order);
  int rc = order ? pa_order_make(t, PA_ORDER_TOTAL, order) : PA_ENOMEM;
  if (rc == PA_OK) rc = pa_skyline_ordered(t, order, off);
  free(order);
  return rc;
}
