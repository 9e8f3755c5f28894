/* Exact search for a layout within a capacity, after MiniMalloc (Moffitt, ASPLOS '23):
 * - canonical placements: a buffer sits on top of every placed buffer it overlaps, and
 *   buffers are placed in non-decreasing (offset, preorder rank), so every layout is
 *   reached once;
 * - section inference: in every section (constant live set), the floor plus the bytes
 *   still unplaced must fit under the capacity;
 * - dominance: no buffer goes at or above the lowest top any unplaced buffer could have;
 * - dynamic decomposition: when no unplaced buffer crosses a section boundary, the two
 *   sides are solved independently;
 * - restarts: three static preorders round robin under a node limit that doubles each
 *   round, with fresh tie-breaks per round, because running time is heavy-tailed: at a
 *   feasible capacity one order may need seconds where another needs milliseconds.
 *   (Luby's restart sequence was measured too: fewer capacities solved within 1.5 s.)
 * Memory is preallocated; the recursion depth is at most the number of buffers. */
#include "planner.h"
#include "timeline.h"

#include <stdlib.h>
#include <string.h>

enum { FOUND, NOTFOUND, ABORTED, TIMEDOUT, NOMEM };

typedef struct entry_s {
  int64_t offset;
  uint32_t rank, buf;
} entry_t;

typedef struct undo_s {
  int64_t old;
  uint32_t index;
  uint32_t kind; /* 0: min offset of a buffer, 1: floor of a section */
} undo_t;

typedef struct part_s {
  uint32_t *bufs, nbufs;
  uint32_t s_lo, s_hi; /* section range */
} part_t;

struct pa_search_s {
  const pa_trace_t *t;
  size_t n, nsec;
  uint32_t *ov_start, *ov;         /* overlap lists (CSR) */
  uint32_t *sec_lo, *sec_hi;       /* per span: its section range */
  uint32_t *sb_start, *sb;         /* buffers per section (CSR) */
  int64_t *floor, *total, *minoff, *assign, *solution, *sec_total0;
  int32_t *cuts;                   /* unplaced buffers crossing boundary s|s+1 */
  uint8_t *mark;
  uint32_t *affected, naffected;
  undo_t *undo;
  size_t nundo, undocap;
  uint32_t *arena_u;               /* partitions' buffer lists */
  size_t top_u, cap_u;
  entry_t *arena_e;                /* orderings, one per search depth */
  size_t top_e, cap_e;
  int heuristic;
  uint64_t salt; /* tie-break perturbation: each restart round explores another order */
  int64_t capacity, nodes_left, work;
  double deadline;
  const atomic_bool *cancel; /* another thread found what this search was for */
};

/* ---- setup -------------------------------------------------------------- */

static int build_sections(pa_search_t *s, const pa_timeline_t *tl) {
  const pa_trace_t *t = s->t;
  s->nsec = tl->ncoord - 1;
  s->sec_lo = malloc(t->nspans * sizeof *s->sec_lo);
  s->sec_hi = malloc(t->nspans * sizeof *s->sec_hi);
  s->sb_start = calloc(s->nsec + 2, sizeof *s->sb_start);
  if (!s->sec_lo || !s->sec_hi || !s->sb_start) return PA_ENOMEM;
  size_t total = 0;
  for (size_t sp = 0; sp < t->nspans; sp++) {
    s->sec_lo[sp] = (uint32_t)pa_timeline_index(tl, t->spans[sp].lower);
    s->sec_hi[sp] = (uint32_t)pa_timeline_index(tl, t->spans[sp].upper);
    for (uint32_t k = s->sec_lo[sp]; k < s->sec_hi[sp]; k++) s->sb_start[k + 1]++;
    total += s->sec_hi[sp] - s->sec_lo[sp];
  }
  for (size_t k = 0; k < s->nsec; k++) s->sb_start[k + 1] += s->sb_start[k];
  s->sb = malloc((total + 1) * sizeof *s->sb);
  uint32_t *fill = malloc((s->nsec + 1) * sizeof *fill);
  if (!s->sb || !fill) return free(fill), PA_ENOMEM;
  memcpy(fill, s->sb_start, s->nsec * sizeof *fill);
  for (size_t b = 0; b < t->n; b++)
    for (uint32_t k = 0; k < t->bufs[b].nspans; k++)
      for (uint32_t x = s->sec_lo[t->bufs[b].span0 + k]; x < s->sec_hi[t->bufs[b].span0 + k]; x++)
        s->sb[fill[x]++] = (uint32_t)b;
  free(fill);
  return PA_OK;
}

/* Writes into out the buffers sharing a section with b (each once); returns how many. */
static size_t overlaps_of(const pa_search_t *s, uint32_t b, uint32_t *seen, uint32_t *out) {
  const pa_buf_t *buf = &s->t->bufs[b];
  size_t k = 0;
  for (uint32_t sp = buf->span0; sp < buf->span0 + buf->nspans; sp++)
    for (uint32_t x = s->sec_lo[sp]; x < s->sec_hi[sp]; x++)
      for (uint32_t j = s->sb_start[x]; j < s->sb_start[x + 1]; j++) {
        uint32_t c = s->sb[j];
        if (c != b && seen[c] != b) seen[c] = b, out[k++] = c;
      }
  return k;
}

/* Overlap lists (CSR): two buffers overlap iff they share a section. */
static int build_overlaps(pa_search_t *s, size_t max_pairs) {
  size_t n = s->n, count = 0;
  uint32_t *seen = malloc(n * sizeof *seen), *tmp = malloc(n * sizeof *tmp);
  s->ov_start = calloc(n + 1, sizeof *s->ov_start);
  int rc = seen && tmp && s->ov_start ? PA_OK : PA_ENOMEM;
  for (size_t b = 0; rc == PA_OK && b < n; b++) seen[b] = UINT32_MAX;
  for (uint32_t b = 0; rc == PA_OK && b < n; b++) {
    s->ov_start[b + 1] = s->ov_start[b] + (uint32_t)overlaps_of(s, b, seen, tmp);
    if (s->ov_start[b + 1] > 2 * max_pairs) rc = PA_EUNSUPPORTED;
  }
  if (rc == PA_OK) count = s->ov_start[n];
  if (rc == PA_OK && !(s->ov = malloc((count + 1) * sizeof *s->ov))) rc = PA_ENOMEM;
  for (size_t b = 0; rc == PA_OK && b < n; b++) seen[b] = UINT32_MAX;
  for (uint32_t b = 0; rc == PA_OK && b < n; b++) overlaps_of(s, b, seen, s->ov + s->ov_start[b]);
  free(seen), free(tmp);
  return rc;
}

static int alloc_state(pa_search_t *s) {
  size_t n = s->n, ns = s->nsec + 1;
  s->floor = calloc(ns, sizeof *s->floor), s->total = calloc(ns, sizeof *s->total);
  s->sec_total0 = calloc(ns, sizeof *s->sec_total0), s->cuts = calloc(ns, sizeof *s->cuts);
  s->mark = calloc(ns, 1), s->affected = malloc(ns * sizeof *s->affected);
  s->minoff = malloc(n * sizeof *s->minoff), s->assign = malloc(n * sizeof *s->assign);
  s->solution = malloc(n * sizeof *s->solution);
  /* A decomposition keeps its parent's ordering while the pieces build theirs, so a
   * path can hold up to about n^2 entries; untouched pages are never committed. */
  s->cap_u = n * (n + 1) + 6 * n + 16, s->cap_e = n * (n + 1) + 16;
  s->arena_u = malloc(s->cap_u * sizeof *s->arena_u);
  s->arena_e = malloc(s->cap_e * sizeof *s->arena_e);
  s->undocap = 1024, s->undo = malloc(s->undocap * sizeof *s->undo);
  bool ok = s->floor && s->total && s->sec_total0 && s->cuts && s->mark && s->affected &&
            s->minoff && s->assign && s->solution && s->arena_u && s->arena_e &&
            s->undo;
  return ok ? PA_OK : PA_ENOMEM;
}

static void init_sections(pa_search_t *s) {
  const pa_trace_t *t = s->t;
  for (size_t b = 0; b < s->n; b++) {
    const pa_buf_t *buf = &t->bufs[b];
    for (uint32_t sp = buf->span0; sp < buf->span0 + buf->nspans; sp++)
      for (uint32_t x = s->sec_lo[sp]; x < s->sec_hi[sp]; x++) s->sec_total0[x] += buf->size;
    uint32_t first = s->sec_lo[buf->span0], last = s->sec_hi[buf->span0 + buf->nspans - 1];
    for (uint32_t x = first; x + 1 < last; x++) s->cuts[x]++;
  }
}

pa_search_t *pa_search_new(const pa_trace_t *t, size_t max_pairs) {
  if (pa_trace_has_fixed(t) || t->n < 1 || t->n > PA_SEARCH_MAX_BUFFERS) return NULL;
  pa_search_t *s = calloc(1, sizeof *s);
  pa_timeline_t tl;
  if (!s || pa_timeline_init(&tl, t)) return free(s), NULL;
  s->t = t, s->n = t->n;
  int rc = build_sections(s, &tl);
  pa_timeline_free(&tl);
  if (!rc) rc = build_overlaps(s, max_pairs);
  if (!rc) rc = alloc_state(s);
  if (rc) return pa_search_free(s), NULL;
  init_sections(s);
  return s;
}

void pa_search_free(pa_search_t *s) {
  if (!s) return;
  free(s->ov_start), free(s->ov), free(s->sec_lo), free(s->sec_hi), free(s->sb_start);
  free(s->sb), free(s->floor), free(s->total), free(s->minoff), free(s->assign);
  free(s->solution), free(s->sec_total0), free(s->cuts), free(s->mark), free(s->affected);
  free(s->undo), free(s->arena_u), free(s->arena_e);
  free(s);
}

/* ---- undo log ------------------------------------------------------------ */

static bool log_old(pa_search_t *s, uint32_t kind, uint32_t index, int64_t old) {
  if (s->nundo == s->undocap) {
    undo_t *u = realloc(s->undo, 2 * s->undocap * sizeof *u);
    if (!u) return false;
    s->undo = u, s->undocap *= 2;
  }
  s->undo[s->nundo++] = (undo_t){old, index, kind};
  return true;
}

static void rollback(pa_search_t *s, size_t mark) {
  while (s->nundo > mark) {
    undo_t u = s->undo[--s->nundo];
    if (u.kind) s->floor[u.index] = u.old;
    else s->minoff[u.index] = u.old;
  }
}

/* ---- placing one buffer --------------------------------------------------- */

/* A section's floor can only rise to the lowest position of its unplaced buffers, which
 * is at most c's: sections whose floor is already there need no rescan. */
static void mark_sections(pa_search_t *s, uint32_t c) {
  const pa_buf_t *buf = &s->t->bufs[c];
  for (uint32_t sp = buf->span0; sp < buf->span0 + buf->nspans; sp++)
    for (uint32_t x = s->sec_lo[sp]; x < s->sec_hi[sp]; x++)
      if (!s->mark[x] && s->floor[x] < s->minoff[c]) s->mark[x] = 1, s->affected[s->naffected++] = x;
}

/* Raises the lowest position of every unplaced buffer that b now lies under. */
static bool raise_neighbours(pa_search_t *s, uint32_t b) {
  int64_t height = s->assign[b] + s->t->bufs[b].size;
  for (uint32_t j = s->ov_start[b]; j < s->ov_start[b + 1]; j++) {
    uint32_t c = s->ov[j];
    if (s->assign[c] != PA_NO_OFFSET || s->minoff[c] >= height) continue;
    if (!log_old(s, 0, c, s->minoff[c])) return false;
    s->minoff[c] = pa_align_up(height, s->t->bufs[c].align);
    mark_sections(s, c);
  }
  return true;
}

static bool set_floor(pa_search_t *s, uint32_t x, int64_t v) {
  if (!log_old(s, 1, x, s->floor[x])) return false;
  s->floor[x] = v;
  return true;
}

static void add_total(pa_search_t *s, uint32_t b, int64_t delta) {
  const pa_buf_t *buf = &s->t->bufs[b];
  for (uint32_t sp = buf->span0; sp < buf->span0 + buf->nspans; sp++)
    for (uint32_t x = s->sec_lo[sp]; x < s->sec_hi[sp]; x++) s->total[x] += delta;
}

/* Sections under b get b's top as floor; a section's floor is also at least the lowest
 * position of any unplaced buffer in it. */
static bool update_sections(pa_search_t *s, uint32_t b) {
  const pa_buf_t *buf = &s->t->bufs[b];
  int64_t height = s->assign[b] + buf->size;
  for (uint32_t sp = buf->span0; sp < buf->span0 + buf->nspans; sp++)
    for (uint32_t x = s->sec_lo[sp]; x < s->sec_hi[sp]; x++)
      if (!set_floor(s, x, height)) return false;
  add_total(s, b, -buf->size);
  for (uint32_t i = 0; i < s->naffected; i++) {
    uint32_t x = s->affected[i];
    int64_t low = INT64_MAX, floor = s->floor[x];
    s->mark[x] = 0;
    for (uint32_t j = s->sb_start[x]; j < s->sb_start[x + 1] && low > floor; j++)
      if (s->assign[s->sb[j]] == PA_NO_OFFSET && s->minoff[s->sb[j]] < low) low = s->minoff[s->sb[j]];
    if (low != INT64_MAX && floor < low && !set_floor(s, x, low)) return false;
  }
  s->naffected = 0;
  return true;
}

static bool section_fits(const pa_search_t *s, uint32_t x, int64_t offset) {
  int64_t f = s->floor[x] > offset ? s->floor[x] : offset;
  return f + s->total[x] <= s->capacity;
}

/* Section inference. The parent passed it at level `level`; if this placement stays at
 * that level, only the sections whose floor changed here (logged since `mark`; they
 * include every section whose total fell) can fail now. */
static bool fits(const pa_search_t *s, const part_t *p, int64_t offset, int64_t level,
                 size_t mark) {
  if (offset > level) {
    for (uint32_t x = p->s_lo; x < p->s_hi; x++)
      if (!section_fits(s, x, offset)) return false;
    return true;
  }
  for (size_t u = mark; u < s->nundo; u++)
    if (s->undo[u].kind && !section_fits(s, s->undo[u].index, offset)) return false;
  return true;
}

/* ---- orderings -------------------------------------------------------------- */

static bool entry_less(entry_t a, entry_t b) {
  return a.offset < b.offset || (a.offset == b.offset && a.rank < b.rank);
}

/* The parent's ordering minus placed buffers, re-keyed and re-sorted. Keys only rise,
 * so the array stays nearly sorted and insertion sort is cheap. */
static entry_t *order_children(pa_search_t *s, const entry_t *parent, uint32_t n, uint32_t *count) {
  if (s->top_e + n > s->cap_e) return NULL;
  entry_t *e = s->arena_e + s->top_e;
  uint32_t k = 0;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t b = parent[i].buf;
    if (s->assign[b] != PA_NO_OFFSET) continue;
    entry_t v = {s->minoff[b], parent[i].rank, b};
    uint32_t j = k++;
    for (; j > 0 && entry_less(v, e[j - 1]); j--) e[j] = e[j - 1];
    e[j] = v;
  }
  s->top_e += k;
  *count = k;
  return e;
}

static int64_t min_height(const pa_search_t *s, const entry_t *e, uint32_t n) {
  int64_t h = INT64_MAX;
  for (uint32_t i = 0; i < n; i++)
    if (e[i].offset + s->t->bufs[e[i].buf].size < h) h = e[i].offset + s->t->bufs[e[i].buf].size;
  return h;
}

/* ---- the depth-first search -------------------------------------------------- */

static int subsolve(pa_search_t *s, const part_t *p, int64_t level);

/* The clock is read by work done, not by nodes: a node re-sorts its parent's n entries
 * and places each child across the sections it spans, so on a trace of a thousand long
 * buffers 1,024 nodes took seconds and a 60 ms search ran 4.8 s (torch_stream seed 370:
 * its plan came after the replay's end). PA_CHECK_WORK entries are a few microseconds. */
#define PA_CHECK_WORK 4096
static int tick(pa_search_t *s, uint32_t n) {
  if (s->nodes_left-- <= 0) return ABORTED;
  if ((s->work += n + 1) >= PA_CHECK_WORK) {
    s->work = 0;
    if (pa_now() > s->deadline || (s->cancel && atomic_load_explicit(s->cancel, memory_order_relaxed)))
      return TIMEDOUT;
  }
  return NOTFOUND;
}

/* After b is placed: split at boundaries no unplaced buffer crosses any more. */
static int decompose(pa_search_t *s, const part_t *p, uint32_t b, const entry_t *order,
                     uint32_t n, int64_t offset, uint32_t rank);

static int search(pa_search_t *s, const part_t *p, const entry_t *parent, uint32_t np,
                  int64_t min_offset, uint32_t min_rank, int64_t level) {
  int st = tick(s, np);
  if (st != NOTFOUND) return st;
  size_t top_e = s->top_e;
  uint32_t n;
  entry_t *e = order_children(s, parent, np, &n);
  if (!e) return NOMEM;
  if (n == 0) {
    for (uint32_t i = 0; i < p->nbufs; i++) s->solution[p->bufs[i]] = s->assign[p->bufs[i]];
    s->top_e = top_e;
    return FOUND;
  }
  int64_t ceiling = min_height(s, e, n);
  for (uint32_t i = 0; i < n && st == NOTFOUND; i++) {
    if (e[i].offset >= ceiling) break; /* dominance: it would leave a removable hole */
    if (e[i].offset < min_offset || (e[i].offset == min_offset && e[i].rank < min_rank))
      continue; /* canonical order: reached in a sibling branch */
    uint32_t b = e[i].buf;
    size_t mark = s->nundo;
    s->assign[b] = e[i].offset;
    if (!raise_neighbours(s, b) || !update_sections(s, b)) st = NOMEM;
    else if (fits(s, p, e[i].offset, level, mark)) st = decompose(s, p, b, e, n, e[i].offset, e[i].rank);
    rollback(s, mark);
    add_total(s, b, s->t->bufs[b].size);
    s->assign[b] = PA_NO_OFFSET;
  }
  s->top_e = top_e;
  return st;
}

static uint32_t first_sec(const pa_search_t *s, uint32_t b) { return s->sec_lo[s->t->bufs[b].span0]; }
static uint32_t end_sec(const pa_search_t *s, uint32_t b) {
  return s->sec_hi[s->t->bufs[b].span0 + s->t->bufs[b].nspans - 1];
}

/* Solves the pieces of p between cut points one after another. */
static int solve_pieces(pa_search_t *s, const part_t *p, const uint32_t *cut, uint32_t ncut,
                        int64_t level) {
  int st = FOUND;
  for (uint32_t c = 0; c + 1 < ncut && st == FOUND; c++) {
    if (s->top_u + p->nbufs > s->cap_u) return NOMEM;
    part_t q = {s->arena_u + s->top_u, 0, cut[c], cut[c + 1]};
    for (uint32_t i = 0; i < p->nbufs; i++) {
      uint32_t b = p->bufs[i];
      if (s->assign[b] == PA_NO_OFFSET && first_sec(s, b) < q.s_hi && end_sec(s, b) > q.s_lo)
        q.bufs[q.nbufs++] = b;
    }
    if (!q.nbufs) continue;
    s->top_u += q.nbufs;
    st = subsolve(s, &q, level);
    s->top_u -= q.nbufs;
  }
  return st;
}

static int decompose(pa_search_t *s, const part_t *p, uint32_t b, const entry_t *order,
                     uint32_t n, int64_t offset, uint32_t rank) {
  s->solution[b] = s->assign[b];
  uint32_t lo = first_sec(s, b), hi = end_sec(s, b);
  if (s->top_u + p->nbufs + (hi - lo) + 2 > s->cap_u) return NOMEM;
  uint32_t *cut = s->arena_u + s->top_u, ncut = 1;
  cut[0] = p->s_lo;
  for (uint32_t x = lo; x + 1 < hi; x++)
    if (--s->cuts[x] == 0) cut[ncut++] = x + 1;
  int st;
  if (ncut == 1) {
    st = search(s, p, order, n, offset, rank, offset);
  } else {
    cut[ncut++] = p->s_hi;
    s->top_u += ncut;
    st = solve_pieces(s, p, cut, ncut, offset);
    s->top_u -= ncut;
  }
  for (uint32_t x = lo; x + 1 < hi; x++) s->cuts[x]++;
  return st;
}

/* ---- preorders and the driver ---------------------------------------------- */

/* MiniMalloc's static preorders: T = most live bytes in any section the buffer spans,
 * W = width (duration), A = area; tried round robin as WAT, TAW, TWA. */
static const char *const heuristics[] = {"WAT", "TAW", "TWA"};

typedef struct pkey_s {
  int64_t t, w, a;
  uint32_t buf;
} pkey_t;

static int64_t pkey_get(const pkey_t *k, char c) { return c == 'T' ? k->t : c == 'W' ? k->w : k->a; }

static uint64_t mix(uint64_t x) {
  x ^= x >> 33, x *= 0xff51afd7ed558ccdull, x ^= x >> 33, x *= 0xc4ceb9fe1a85ec53ull;
  return x ^ (x >> 33);
}

static int pkey_cmp_with(const pkey_t *x, const pkey_t *y, const char *h, uint64_t salt) {
  for (; *h; h++) {
    int64_t a = pkey_get(x, *h), b = pkey_get(y, *h);
    if (a != b) return a > b ? -1 : 1;
  }
  uint64_t p = salt ? mix(x->buf ^ salt) : x->buf, q = salt ? mix(y->buf ^ salt) : y->buf;
  return (p > q) - (p < q);
}

static void sort_pkeys(pkey_t *k, uint32_t n, const char *h, uint64_t salt) {
  for (uint32_t i = 1; i < n; i++) { /* binary insertion would do; n is small here */
    pkey_t v = k[i];
    uint32_t j = i;
    for (; j > 0 && pkey_cmp_with(&v, &k[j - 1], h, salt) < 0; j--) k[j] = k[j - 1];
    k[j] = v;
  }
}

static pkey_t make_pkey(const pa_search_t *s, uint32_t b) {
  const pa_buf_t *buf = &s->t->bufs[b];
  pkey_t k = {0, buf->upper - buf->lower, 0, b};
  long double a = (long double)buf->size * (long double)k.w / 4.0L; /* held at INT64_MAX past it, as greedy's */
  k.a = a < (long double)INT64_MAX ? (int64_t)a : INT64_MAX;
  for (uint32_t sp = buf->span0; sp < buf->span0 + buf->nspans; sp++)
    for (uint32_t x = s->sec_lo[sp]; x < s->sec_hi[sp]; x++)
      if (s->total[x] > k.t) k.t = s->total[x];
  return k;
}

/* level: the placement level at which every section was last checked (-1: never). */
static int subsolve(pa_search_t *s, const part_t *p, int64_t level) {
  size_t need = p->nbufs * (sizeof(pkey_t) / sizeof(entry_t) + 2);
  if (s->top_e + need > s->cap_e) return NOMEM;
  pkey_t *keys = (pkey_t *)(void *)(s->arena_e + s->top_e);
  for (uint32_t i = 0; i < p->nbufs; i++) keys[i] = make_pkey(s, p->bufs[i]);
  sort_pkeys(keys, p->nbufs, heuristics[s->heuristic], s->salt);
  entry_t *e = s->arena_e + s->top_e; /* overwrite keys in place, front to back */
  for (uint32_t i = 0; i < p->nbufs; i++) {
    uint32_t b = keys[i].buf;
    e[i] = (entry_t){s->minoff[b], i, b};
  }
  s->top_e += p->nbufs;
  int st = search(s, p, e, p->nbufs, 0, 0, level);
  s->top_e -= p->nbufs;
  return st;
}

static void reset(pa_search_t *s) {
  for (size_t b = 0; b < s->n; b++) s->assign[b] = PA_NO_OFFSET, s->minoff[b] = 0;
  for (size_t x = 0; x < s->nsec; x++) s->floor[x] = 0, s->total[x] = s->sec_total0[x];
  s->nundo = s->top_e = s->top_u = 0;
}

/* One attempt with one preorder over the independent pieces of the whole trace. */
static int attempt(pa_search_t *s) {
  reset(s);
  part_t all = {s->arena_u, (uint32_t)s->n, 0, (uint32_t)s->nsec};
  for (uint32_t b = 0; b < s->n; b++) all.bufs[b] = b;
  s->top_u = s->n;
  uint32_t *cut = s->arena_u + s->top_u, ncut = 0;
  cut[ncut++] = 0;
  for (uint32_t x = 0; x + 1 < s->nsec; x++)
    if (s->cuts[x] == 0) cut[ncut++] = x + 1;
  cut[ncut++] = (uint32_t)s->nsec;
  s->top_u += ncut;
  return solve_pieces(s, &all, cut, ncut, -1);
}

void pa_search_set_cancel(pa_search_t *s, const atomic_bool *cancel) { s->cancel = cancel; }

int pa_search_solve(pa_search_t *s, int64_t capacity, double deadline, int64_t *offsets) {
  s->capacity = capacity, s->deadline = deadline, s->work = 0;
  s->salt = 0;
  for (int64_t limit = (int64_t)s->n;; limit *= 2, s->salt = mix(s->salt + 1)) {
    for (s->heuristic = 0; s->heuristic < 3; s->heuristic++) {
      s->nodes_left = limit;
      int st = attempt(s);
      if (st == FOUND) {
        memcpy(offsets, s->solution, s->n * sizeof *offsets);
        return PA_OK;
      }
      if (st == NOTFOUND) return PA_EINPUT; /* the whole tree was explored */
      if (st == TIMEDOUT) return PA_ETIMEOUT;
      if (st == NOMEM) return PA_ENOMEM;
    }
    if (limit > INT64_MAX / 4) return PA_ETIMEOUT;
  }
}
