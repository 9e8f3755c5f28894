/* Page snapping: buffers of a page or more moved, where the layout leaves room, to
 * start on a page. A 4 MiB buffer at a 256-byte offset spans three 2 MiB pages, on a
 * page start two; the preload maps pages, not bytes, so where a plan holds only some of
 * its slots (the program off the plan, the plan's idle pages given back) the pages its
 * live slots span are what the device holds (Maphsge4's off-plan stretch: five 4 MiB
 * slots on 15 pages). Where the pages fall depends on where the plan is placed in the
 * pool, known only then, so what constrains each buffer is found once (pa_snap_room_new)
 * and the moves made at each placement (pa_snap), in O(n).
 *
 * A sweep over time keeps the live buffers in address order and notes each buffer's
 * neighbours when it enters: every buffer above another that shares its time is above
 * it through a chain of such pairs, so keeping each pair in order keeps the layout
 * valid. Every buffer then moves the same way, up (the highest
 * first, each below the new places of its pairs above) or down (the lowest first); the
 * way that saves more pages is taken. The planners pack downwards, so a stack of 4 MiB
 * slots moves up together, the top one first. */
#include "planner.h"
#include "treap.h"

#include <stdlib.h>
#include <string.h>

struct pa_snap_room_s {
  size_t n;
  int64_t limit;
  uint32_t *order;                 /* buffers by offset, lowest first */
  uint32_t *above_at, *above;      /* per buffer [above_at[k], above_at[k+1]): its pairs above */
  uint32_t *below_at, *below;      /* and below */
};

typedef struct pair_s {
  uint32_t lo, hi;
} pair_t;

static void note(pair_t *pairs, size_t *n, uint32_t lo, uint32_t hi) {
  if (lo != PA_NIL && hi != PA_NIL) pairs[(*n)++] = (pair_t){lo, hi};
}

/* The pairs adjacent in address when one of them enters: at most two per span. Two that
 * become adjacent when the one between them leaves need no pair of their own: each was
 * paired with it, or with one in a chain to it, while it lived. */
static size_t adjacent_pairs(const int64_t *off, const pa_span_event_t *ev, size_t nev, pa_treap_t *set, pair_t *pairs) {
  size_t n = 0;
  for (size_t i = 0; i < nev; i++) {
    uint32_t x = ev[i].buf;
    if (!ev[i].enter) {
      pa_treap_erase(set, x);
      continue;
    }
    pa_treap_insert(set, x, off[x]);
    note(pairs, &n, pa_treap_prev(set, x), x), note(pairs, &n, x, pa_treap_next(set, x));
  }
  return n;
}

/* at[k]..at[k+1]: the pairs whose key (lo or hi) is k, listing the other end */
static bool index_pairs(const pair_t *pairs, size_t np, size_t n, bool by_lo, uint32_t **at, uint32_t **other) {
  *at = calloc(n + 1, sizeof **at), *other = malloc((np + 1) * sizeof **other);
  if (!*at || !*other) return false;
  for (size_t i = 0; i < np; i++) (*at)[(by_lo ? pairs[i].lo : pairs[i].hi) + 1]++;
  for (size_t k = 0; k < n; k++) (*at)[k + 1] += (*at)[k];
  for (size_t i = 0; i < np; i++) {
    uint32_t key = by_lo ? pairs[i].lo : pairs[i].hi;
    (*other)[(*at)[key]++] = by_lo ? pairs[i].hi : pairs[i].lo;
  }
  for (size_t k = n; k > 0; k--) (*at)[k] = (*at)[k - 1]; /* the fill moved each start to the next */
  (*at)[0] = 0;
  return true;
}

void pa_snap_room_free(pa_snap_room_t *r) {
  if (!r) return;
  free(r->order), free(r->above_at), free(r->above), free(r->below_at), free(r->below);
  free(r);
}

static bool find_pairs(pa_snap_room_t *r, const pa_trace_t *t, const int64_t *offsets) {
  size_t nev, np = 0;
  pa_span_event_t *ev = pa_span_events(t, NULL, &nev);
  pair_t *pairs = malloc((2 * t->nspans + 1) * sizeof *pairs);
  pa_treap_t set;
  bool ok = ev && pairs && !pa_treap_init(&set, t->n, 11);
  if (ok) np = adjacent_pairs(offsets, ev, nev, &set, pairs), pa_treap_free(&set);
  ok = ok && index_pairs(pairs, np, t->n, true, &r->above_at, &r->above) &&
       index_pairs(pairs, np, t->n, false, &r->below_at, &r->below);
  free(ev), free(pairs);
  return ok;
}

pa_snap_room_t *pa_snap_room_new(const pa_trace_t *t, const int64_t *offsets, int64_t limit) {
  pa_snap_room_t *r = calloc(1, sizeof *r);
  if (!r) return NULL;
  r->n = t->n, r->limit = limit;
  r->order = malloc((t->n + 1) * sizeof *r->order);
  if (!r->order || !find_pairs(r, t, offsets)) return pa_snap_room_free(r), NULL;
  for (uint32_t k = 0; k < t->n; k++) r->order[k] = k;
  qsort_r(r->order, t->n, sizeof *r->order, pa_cmp_offset, (void *)offsets);
  return r;
}

static int64_t pages_spanned(int64_t at, int64_t size, int64_t page) {
  return (at + size + page - 1) / page - at / page;
}

/* The room buffer k has, its pairs beyond it placed already: [lo, hi) */
static void room_of(const pa_snap_room_t *r, const pa_trace_t *t, uint32_t k, const int64_t *out, int64_t *lo,
                    int64_t *hi) {
  *lo = 0, *hi = r->limit;
  for (uint32_t i = r->above_at[k]; i < r->above_at[k + 1]; i++)
    if (out[r->above[i]] < *hi) *hi = out[r->above[i]];
  for (uint32_t i = r->below_at[k]; i < r->below_at[k + 1]; i++) {
    uint32_t b = r->below[i];
    if (out[b] + t->bufs[b].size > *lo) *lo = out[b] + t->bufs[b].size;
  }
}

/* Where buffer k goes, moving to the page start above (or below) it within its room,
 * when that saves a page. */
static int64_t snapped(const pa_trace_t *t, uint32_t k, int64_t at, int64_t lo, int64_t hi, int64_t page,
                       int64_t base, bool up) {
  const pa_buf_t *b = &t->bufs[k];
  int64_t into = (base + at) % page, move = up ? page - into : -into;
  if (!into || b->size < page || b->fixed != PA_NO_OFFSET || move % b->align) return at;
  if (at + move < lo || at + move + b->size > hi) return at;
  return pages_spanned(base + at + move, b->size, page) < pages_spanned(base + at, b->size, page) ? at + move : at;
}

/* One way: buffers placed in order from the far end, each within the room its already
 * placed pairs leave (the unplaced ones are at their own offsets, which is on the
 * near side of where they will be). Returns the pages saved. */
static size_t snap_way(const pa_snap_room_t *r, const pa_trace_t *t, const int64_t *offsets, int64_t page,
                       int64_t base, bool up, int64_t *out) {
  memcpy(out, offsets, r->n * sizeof *out);
  size_t saved = 0;
  for (size_t i = 0; i < r->n; i++) {
    uint32_t k = r->order[up ? r->n - 1 - i : i];
    int64_t lo, hi;
    room_of(r, t, k, out, &lo, &hi);
    out[k] = snapped(t, k, offsets[k], lo, hi, page, base, up);
    saved += (size_t)(pages_spanned(base + offsets[k], t->bufs[k].size, page) -
                      pages_spanned(base + out[k], t->bufs[k].size, page));
  }
  return saved;
}

size_t pa_snap(const pa_snap_room_t *r, const pa_trace_t *t, const int64_t *offsets, int64_t page, int64_t base,
               int64_t *out) {
  if (page <= 0 || r->n != t->n) return memcpy(out, offsets, t->n * sizeof *out), 0;
  size_t down = snap_way(r, t, offsets, page, base, false, out);
  size_t up = snap_way(r, t, offsets, page, base, true, out);
  return up >= down ? up : snap_way(r, t, offsets, page, base, false, out);
}
