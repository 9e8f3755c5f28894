/* The swap schedule's pages coloured with the budget's handles. Under a budget a page
 * that leaves keeps its address mapped to its handle (pool.c), and it comes back with no
 * mapping call only if that handle is free again. Handed out as they came, the handles
 * rotated: each period the pages came back to find theirs held by a page that took it
 * meanwhile, and each of those is an unmap, a map and an access grant (trace_replay at
 * 50 %: 1.71 mapping calls a page moved in the served phase). The schedule says when
 * each page holds a handle over the turn (its buffers' lives, less the stretches it
 * spends on the host), so pages whose stays never meet may share one handle period
 * after period: a colouring of the pages' conflict graph (DSatur, Brélaz 1979) with the
 * budget's pages as colours. Where that needs more (transformer_train at 50 %: 11
 * colours for 10 handles), a page left over takes a colour for each of its stretches,
 * the other colours' pages moved to make room (bounded Kempe chains), whole pages first,
 * else the fewest pages split: a page whose stretches take two colours changes handles
 * twice a period, still fewer calls than the chain of takers it replaces. Built once per
 * served plan, with the plan: up to 16384 pages that leave (their conflict graph is
 * quadratic; the pages on the device throughout each take a colour of their own, outside
 * it). */
#include "dtr.h"
#include "pa.h"

#include <stdlib.h>
#include <string.h>

#define NO_HUE UINT32_MAX
#define MOST_PAGES (1u << 16) /* pages at all (128 GiB of 2 MiB pages) */

typedef struct hues_s {
  uint32_t nop, words;   /* positions; 64-bit words per page's residency */
  uint32_t npages, *page; /* the pool pages, sorted */
  uint32_t nmoving, *moving; /* the indexes of those off the device somewhere in the turn */
  uint64_t *held;         /* per page: the positions it holds a handle at */
  uint8_t *away;          /* per position, scratch: the item is on the host */
} hues_t;

/* The distinct pages of the items, sorted; false without memory or past MOST_PAGES. */
static bool pages(hues_t *h, const pa_cycle_t *c, const uint32_t *page_of) {
  if (!(h->page = malloc((c->nbuf + 1) * sizeof *h->page))) return false;
  memcpy(h->page, page_of, c->nbuf * sizeof *h->page);
  qsort(h->page, c->nbuf, sizeof *h->page, pa_cmp_u32);
  for (uint32_t i = 0; i < c->nbuf; i++)
    if (!h->npages || h->page[h->npages - 1] != h->page[i]) h->page[h->npages++] = h->page[i];
  return h->npages <= MOST_PAGES;
}

/* Item k's stretches on the host: from the position after each copy out to the next
 * copy back (wrapping round the turn), marked in h->away. */
static void mark_away(hues_t *h, const pa_cycle_plan_t *cp, uint32_t k) {
  memset(h->away, 0, h->nop);
  for (uint32_t q = 0; q < h->nop; q++)
    for (uint32_t i = cp->out_at[q]; i < cp->out_at[q + 1]; i++) {
      if (cp->outs[i] != k) continue;
      for (uint32_t n = 1, r = (q + 1) % h->nop; n < h->nop; n++, r = (r + 1) % h->nop) {
        bool back = false;
        for (uint32_t j = cp->back_at[r]; j < cp->back_at[r + 1] && !back; j++) back = cp->backs[j] == k;
        if (back) break;
        h->away[r] = 1;
      }
    }
}

/* Each page's positions on the device: any of its items alive there and not away, and
 * the position after each stay, where at run time its handle may still be held. A
 * position is the events before its launch, and a program allocates there before it
 * frees (an output made before the inputs go); a copy out after a launch is posted to
 * the mover, which may send it after the next position's births. A page born at q met
 * one whose stay ended at q, took another colour's handle, whose page then took a
 * third's, every period: transformer_train at 50 %, 5 GB/s, 120 mapping calls in the
 * served phase, 1.76 a page moved; 84 and 1.24 so (mlp_train_deep 0.81 -> 0.70). Only
 * deaths, not copies out: 1.76. The prefetch's early restores (PLANALLOC_PREFETCH
 * launches before a use) modelled too: mlp_train_deep 1.04. */
static void residency(hues_t *h, const pa_cycle_t *c, const pa_cycle_plan_t *cp, const uint32_t *page_of) {
  for (uint32_t k = 0; k < c->nbuf; k++) {
    uint64_t *row = h->held + (size_t)pa_lower_u32(h->page, 0, h->npages, page_of[k]) * h->words;
    mark_away(h, cp, k);
    bool before = h->nop && pa_cycle_alive(c, k, h->nop - 1) && !h->away[h->nop - 1];
    for (uint32_t q = 0; q < h->nop; q++) {
      bool here = pa_cycle_alive(c, k, q) && !h->away[q];
      if (here || before) row[q / 64] |= 1ull << (q % 64);
      before = here;
    }
  }
}

/* The pages that leave somewhere in the turn; false past PA_HUES_MOST_MOVING or
 * without memory. The others hold a handle throughout: each its own colour, met by
 * every page, so they stay out of the graph. */
static bool moving(hues_t *h) {
  if (!(h->moving = malloc((h->npages + 1) * sizeof *h->moving))) return false;
  for (uint32_t v = 0; v < h->npages; v++) {
    const uint64_t *row = h->held + (size_t)v * h->words;
    bool full = true;
    for (uint32_t q = 0; q < h->nop && full; q++) full = row[q / 64] >> (q % 64) & 1;
    if (!full) h->moving[h->nmoving++] = v;
  }
  return h->nmoving <= PA_HUES_MOST_MOVING;
}

/* Pages a and b both on the device somewhere: only words where both have bits, between
 * each one's first and last (span), are looked at. */
static bool overlap(const hues_t *h, const uint32_t *span, uint32_t a, uint32_t b) {
  const uint64_t *x = h->held + (size_t)a * h->words, *y = h->held + (size_t)b * h->words;
  uint32_t lo = span[2 * a] > span[2 * b] ? span[2 * a] : span[2 * b], hi = span[2 * a + 1] < span[2 * b + 1] ? span[2 * a + 1] : span[2 * b + 1];
  for (uint32_t w = lo; w < hi; w++)
    if (x[w] & y[w]) return true;
  return false;
}

/* Each page's words with bits: [span[2v], span[2v + 1]). */
static void spans(const hues_t *h, uint32_t *span) {
  for (uint32_t v = 0; v < h->npages; v++) {
    const uint64_t *row = h->held + (size_t)v * h->words;
    uint32_t lo = 0, hi = h->words;
    while (lo < hi && !row[lo]) lo++;
    while (hi > lo && !row[hi - 1]) hi--;
    span[2 * v] = lo, span[2 * v + 1] = hi;
  }
}

/* Which moving pages meet: a bit matrix over their indexes in h->moving. */
static bool conflicts(const hues_t *h, uint64_t **adj) {
  uint32_t n = h->nmoving, rw = (n + 63) / 64, *span = malloc(((size_t)h->npages * 2 + 1) * sizeof *span);
  if (!span || !(*adj = calloc((size_t)n * rw + 1, sizeof **adj))) return free(span), false;
  spans(h, span);
  for (uint32_t a = 0; a < n; a++)
    for (uint32_t b = a + 1; b < n; b++)
      if (overlap(h, span, h->moving[a], h->moving[b]))
        (*adj)[(size_t)a * rw + b / 64] |= 1ull << (b % 64), (*adj)[(size_t)b * rw + a / 64] |= 1ull << (a % 64);
  free(span);
  return true;
}

/* The uncoloured moving page with the most distinct colours among its neighbours (ties:
 * the most neighbours); NO_HUE when every one is done. */
static uint32_t most_saturated(uint32_t n, const uint8_t *done, const uint32_t *sat, const uint32_t *degree) {
  uint32_t pick = NO_HUE;
  for (uint32_t v = 0; v < n; v++) {
    if (done[v]) continue;
    if (pick == NO_HUE || sat[v] > sat[pick] || (sat[v] == sat[pick] && degree[v] > degree[pick])) pick = v;
  }
  return pick;
}

/* The pages on the device throughout take colours 0, 1, ..., each its own; then DSatur
 * over the moving pages' graph with the colours left, below most: sat[v] counts the
 * colours seen among v's neighbours, a bit each in seen's row v (a moving page's colour
 * is the least its neighbours leave, so below first + n: n bits a row). Without memory,
 * the moving pages get none. */
static void colour(const hues_t *h, const uint64_t *adj, uint32_t most, uint32_t *hue) {
  uint32_t n = h->nmoving, rw = (n + 63) / 64, first = 0, *sat = calloc(n + 1, sizeof *sat), *degree = calloc(n + 1, sizeof *degree);
  uint8_t *done = calloc(n + 1, 1);
  uint64_t *seen = calloc((size_t)n * rw + 1, sizeof *seen);
  for (uint32_t v = 0, m = 0; v < h->npages; v++) {
    bool moves = m < n && h->moving[m] == v;
    m += moves;
    hue[v] = moves ? NO_HUE : first < most ? first++ : NO_HUE;
  }
  for (uint32_t v = 0; sat && degree && done && seen && v < n; v++)
    for (uint32_t w = 0; w < rw; w++) degree[v] += (uint32_t)__builtin_popcountll(adj[(size_t)v * rw + w]);
  for (uint32_t v; sat && degree && done && seen && (v = most_saturated(n, done, sat, degree)) != NO_HUE;) {
    const uint64_t *row = seen + (size_t)v * rw;
    uint32_t c = 0;
    while (c < n && first + c < most && (row[c / 64] >> (c % 64) & 1)) c++;
    bool got = c < n && first + c < most;
    done[v] = 1, hue[h->moving[v]] = got ? first + c : NO_HUE;
    for (uint32_t u = 0; got && u < n; u++) {
      uint64_t *bit = seen + (size_t)u * rw + c / 64;
      if ((adj[(size_t)v * rw + u / 64] >> (u % 64) & 1) && !(*bit >> (c % 64) & 1)) *bit |= 1ull << (c % 64), sat[u]++;
    }
  }
  free(sat), free(degree), free(done), free(seen);
}

/* ---- stretches: a page's runs of positions on the device, each of one colour ---------- */

typedef struct stretch_s {
  uint32_t v, lo, len, hue; /* page index; positions [lo, lo + len) wrapping */
} stretch_t;

#define REPAIR_WORK 50000000ull /* positions looked at in repairs, at most */

static bool on(const uint64_t *row, uint32_t q) { return row[q / 64] >> (q % 64) & 1; }

/* Page v's stretches into st (its colour each; NULL: counted only); their count. A page
 * on the device throughout has one, of the whole turn. */
static size_t page_stretches(const hues_t *h, uint32_t v, uint32_t hue, stretch_t *st) {
  const uint64_t *row = h->held + (size_t)v * h->words;
  uint32_t n = h->nop, start = 0;
  size_t k = 0;
  while (start < n && on(row, start)) start++; /* a position it is off, if any */
  if (start == n) return st ? st[0] = (stretch_t){v, 0, n, hue}, 1 : 1;
  for (uint32_t i = 1, q = (start + 1) % n; i <= n; i++, q = (q + 1) % n) {
    if (!on(row, q)) continue;
    uint32_t lo = q, len = 0;
    while (len < n && on(row, q)) len++, i++, q = (q + 1) % n;
    if (st) st[k] = (stretch_t){v, lo, len, hue};
    k++;
  }
  return k;
}

/* Whether stretch s fits colour c's positions (occ), and marking it there (set) or not. */
static bool fits(const hues_t *h, const uint64_t *occ, uint32_t c, const stretch_t *s) {
  for (uint32_t j = 0, r = s->lo; j < s->len; j++, r = (r + 1) % h->nop)
    if (on(occ + (size_t)c * h->words, r)) return false;
  return true;
}

static void mark(const hues_t *h, uint64_t *occ, const stretch_t *s, bool set) {
  uint64_t *row = occ + (size_t)s->hue * h->words;
  for (uint32_t j = 0, r = s->lo; j < s->len; j++, r = (r + 1) % h->nop)
    row[r / 64] = set ? row[r / 64] | 1ull << (r % 64) : row[r / 64] & ~(1ull << (r % 64));
}

static bool meet(const hues_t *h, const stretch_t *a, const stretch_t *b) {
  uint32_t d = (b->lo + h->nop - a->lo) % h->nop; /* b's start, from a's */
  return d < a->len || (h->nop - d) % h->nop < b->len;
}

/* A repair in progress: the stretches and colours, and a copy of both for each depth of
 * the search to go back to. */
typedef struct repair_s {
  const hues_t *h;
  stretch_t *st;
  size_t nst;
  uint64_t *occ;
  uint32_t most;
  uint64_t work;
  bool split; /* a page's stretches may move apart */
  uint32_t *hues_was[3]; /* DEPTH + 1 */
  uint64_t *occ_was[3];
} repair_t;

#define DEPTH 2

static void save(repair_t *r, int level) {
  for (size_t i = 0; i < r->nst; i++) r->hues_was[level][i] = r->st[i].hue;
  memcpy(r->occ_was[level], r->occ, (size_t)r->most * r->h->words * sizeof *r->occ);
  r->work += r->nst + (size_t)r->most * r->h->words;
}

static void restore(repair_t *r, int level) {
  for (size_t i = 0; i < r->nst; i++) r->st[i].hue = r->hues_was[level][i];
  memcpy(r->occ, r->occ_was[level], (size_t)r->most * r->h->words * sizeof *r->occ);
}

static bool move_off(repair_t *r, uint32_t c, const stretch_t *s, int depth);

#define MOVING (NO_HUE - 1) /* a stretch between colours */

/* The stretches of b's page that move with it: [*lo, *hi) of st, those of its page (they
 * are in page order), or b alone where pages may split (a page whose stretches take two
 * colours changes handles twice a period). */
static void group(const repair_t *r, size_t b, size_t *lo, size_t *hi) {
  *lo = b, *hi = b + 1;
  while (!r->split && *lo > 0 && r->st[*lo - 1].v == r->st[b].v) --*lo;
  while (!r->split && *hi < r->nst && r->st[*hi].v == r->st[b].v) ++*hi;
}

static bool group_fits(const repair_t *r, size_t lo, size_t hi, uint32_t d) {
  bool ok = true;
  for (size_t i = lo; i < hi && ok; i++) ok = r->st[i].hue != MOVING || fits(r->h, r->occ, d, &r->st[i]);
  return ok;
}

static void land(repair_t *r, size_t lo, size_t hi, uint32_t d) {
  for (size_t i = lo; i < hi; i++)
    if (r->st[i].hue == MOVING) r->st[i].hue = d, mark(r->h, r->occ, &r->st[i], true);
}

/* The moving stretches of [lo, hi) go over colour d, whose stretches meeting them move
 * off (false: as it was, from the copy at level depth). */
static bool move_over(repair_t *r, size_t lo, size_t hi, uint32_t d, int depth) {
  save(r, depth);
  bool ok = true;
  uint8_t moved[64] = {0}; /* move_off moves at most 64 at once */
  for (size_t i = lo; i < hi; i++) moved[i - lo] = r->st[i].hue == MOVING;
  land(r, lo, hi, d);
  for (size_t i = lo; i < hi && ok; i++) ok = !moved[i - lo] || move_off(r, d, &r->st[i], depth - 1);
  if (!ok) restore(r, depth);
  return ok;
}

/* The stretches of colour c meeting s (s itself already there) move to other colours,
 * with the rest of their page's in c (group): to one they fit, or, depth left, to one
 * whose own stretches meeting them move on in turn (Kempe's chains, bounded); at most
 * 3 such moves. false: some could not (the caller restores what moved). */
static bool move_off(repair_t *r, uint32_t c, const stretch_t *s, int depth) {
  size_t nmoved = 0;
  for (size_t i = 0; i < r->nst; i++) {
    stretch_t *b = &r->st[i];
    if (b == s || b->hue != c || !meet(r->h, b, s)) continue;
    if (++nmoved > 3 || r->work > REPAIR_WORK) return false;
    size_t lo, hi;
    group(r, i, &lo, &hi);
    if (hi - lo > 64) return false;
    for (size_t j = lo; j < hi; j++)
      if (r->st[j].hue == c) mark(r->h, r->occ, &r->st[j], false), r->st[j].hue = MOVING;
    mark(r->h, r->occ, s, true); /* b overlapped s there: s keeps its bits */
    uint32_t to = r->most;
    for (uint32_t d = 0; d < r->most && to == r->most; d++, r->work += b->len * (hi - lo))
      if (d != c && group_fits(r, lo, hi, d)) to = d;
    if (to < r->most) {
      land(r, lo, hi, to);
      continue;
    }
    for (uint32_t d = 0; depth > 0 && d < r->most && to == r->most; d++)
      if (d != c && move_over(r, lo, hi, d, depth)) to = d;
    if (to == r->most) return false;
  }
  return true;
}

/* Colour c made room for stretch s, s there on success; else everything as it was. A
 * page so moved changes handles once a period (one map): a page left without a colour
 * took its handles from under the pages that came back, and they from others, a chain
 * of 7 maps a period on transformer_train at 50 %. */
static bool make_room(repair_t *r, uint32_t c, stretch_t *s) {
  save(r, 0);
  s->hue = c, mark(r->h, r->occ, s, true);
  if (move_off(r, c, s, DEPTH)) return true;
  restore(r, 0);
  return false;
}

/* The colour of another stretch of stretch i's page, or NO_HUE. */
static uint32_t kin(const repair_t *r, size_t i) {
  for (size_t j = i; j-- > 0 && r->st[j].v == r->st[i].v;)
    if (r->st[j].hue < r->most) return r->st[j].hue;
  for (size_t j = i + 1; j < r->nst && r->st[j].v == r->st[i].v; j++)
    if (r->st[j].hue < r->most) return r->st[j].hue;
  return NO_HUE;
}

/* Pages whose stretches took more than one colour: each changes handles at each of its
 * stretches, a period. */
static size_t splits(const repair_t *r) {
  size_t n = 0;
  for (size_t i = 0, j; i < r->nst; i = j) {
    uint32_t first = NO_HUE;
    bool split = false;
    for (j = i; j < r->nst && r->st[j].v == r->st[i].v; j++) {
      if (r->st[j].hue >= r->most) continue;
      split |= first != NO_HUE && r->st[j].hue != first;
      if (first == NO_HUE) first = r->st[j].hue;
    }
    n += split;
  }
  return n;
}

/* s gets the colour whose room costs the fewest pages split (tried each, then made). */
static void room_fewest_splits(repair_t *r, stretch_t *s) {
  uint32_t best = NO_HUE;
  size_t fewest = SIZE_MAX;
  for (uint32_t c = 0; c < r->most && r->work < REPAIR_WORK; c++) {
    if (!make_room(r, c, s)) continue;
    size_t n = splits(r);
    if (n < fewest) fewest = n, best = c;
    restore(r, 0);
  }
  if (best != NO_HUE) (void)make_room(r, best, s);
}

/* Each stretch without a colour takes one free over it (its page's first), else one
 * another colour's stretches make room in: first moving whole pages' colours, then
 * stretches apart. */
static void place(const hues_t *h, stretch_t *st, size_t nst, uint64_t *occ, uint32_t most) {
  repair_t r = {.h = h, .st = st, .nst = nst, .occ = occ, .most = most};
  bool ok = true;
  for (int l = 0; l <= DEPTH; l++) {
    r.hues_was[l] = malloc((nst + 1) * sizeof *r.hues_was[l]);
    r.occ_was[l] = malloc(((size_t)most * h->words + 1) * sizeof *r.occ_was[l]);
    ok &= r.hues_was[l] && r.occ_was[l];
  }
  for (int pass = 0; pass < 2; pass++) {
    r.split = pass == 1;
    for (size_t i = 0; i < nst; i++) {
      stretch_t *s = &st[i];
      if (s->hue != NO_HUE) continue;
      uint32_t mine = kin(&r, i); /* the colour its page's other stretches took, first */
      if (mine != NO_HUE && fits(h, occ, mine, s)) s->hue = mine, mark(h, occ, s, true);
      if (ok && mine != NO_HUE && s->hue == NO_HUE) (void)make_room(&r, mine, s);
      for (uint32_t c = 0; c < most && s->hue == NO_HUE; c++, r.work += s->len)
        if (fits(h, occ, c, s)) s->hue = c, mark(h, occ, s, true);
      if (ok && s->hue == NO_HUE) room_fewest_splits(&r, s);
    }
  }
  for (int l = 0; l <= DEPTH; l++) free(r.hues_was[l]), free(r.occ_was[l]);
}

/* The colours as entries: one whole turn for a page whose stretches share one, else one
 * per stretch coloured; their count. */
static size_t entries(const hues_t *h, const stretch_t *st, size_t nst, pa_hue_t *out) {
  size_t k = 0;
  for (size_t i = 0, j; i < nst; i = j) {
    bool one = st[i].hue != NO_HUE;
    for (j = i + 1; j < nst && st[j].v == st[i].v; j++) one &= st[j].hue == st[i].hue;
    if (one) out[k++] = (pa_hue_t){h->page[st[i].v], 0, 0, st[i].hue};
    for (size_t m = i; !one && m < j; m++)
      if (st[m].hue != NO_HUE) out[k++] = (pa_hue_t){h->page[st[m].v], st[m].lo, (st[m].lo + st[m].len) % h->nop, st[m].hue};
  }
  return k;
}

/* The pages' colours as stretches, placed: *out (malloc'd), their count; 0 without
 * memory. */
static size_t as_stretches(const hues_t *h, const uint32_t *hue, uint32_t most, pa_hue_t **out, uint64_t *occ) {
  size_t nst = 0, k = 0;
  for (uint32_t v = 0; v < h->npages; v++) nst += page_stretches(h, v, hue[v], NULL);
  stretch_t *st = malloc((nst + 1) * sizeof *st);
  if (!(*out = malloc((nst + 1) * sizeof **out))) free(st), st = NULL;
  nst = 0;
  for (uint32_t v = 0; st && v < h->npages; v++) nst += page_stretches(h, v, hue[v], st + nst);
  for (size_t i = 0; st && i < nst; i++)
    if (st[i].hue != NO_HUE) mark(h, occ, &st[i], true);
  if (st) place(h, st, nst, occ, most), k = entries(h, st, nst, *out);
  free(st);
  return k;
}

static int by_page_lo(const void *x, const void *y) {
  const pa_hue_t *a = x, *b = y;
  if (a->page != b->page) return (a->page > b->page) - (a->page < b->page);
  return (a->lo > b->lo) - (a->lo < b->lo);
}

size_t pa_hues_colour(const pa_cycle_t *c, const pa_cycle_plan_t *cp, const uint32_t *page_of, uint32_t most,
                      pa_hues_t *out) {
  hues_t h = {.nop = c->nop, .words = (c->nop + 63) / 64};
  uint64_t *adj = NULL, *occ = NULL;
  uint32_t *hue = NULL;
  size_t n = 0;
  *out = (pa_hues_t){0};
  bool ok = most && c->nop && pages(&h, c, page_of) && (h.away = malloc(h.nop)) &&
            (h.held = calloc((size_t)h.npages * h.words + 1, sizeof *h.held));
  if (ok) residency(&h, c, cp, page_of);
  most = ok && most > h.npages ? h.npages : most; /* no more colours than pages */
  if (ok && moving(&h) && conflicts(&h, &adj) && (hue = malloc((h.npages + 1) * sizeof *hue)) &&
      (occ = calloc((size_t)most * h.words + 1, sizeof *occ))) {
    colour(&h, adj, most, hue);
    n = as_stretches(&h, hue, most, &out->hues, occ);
    if (n) qsort(out->hues, n, sizeof *out->hues, by_page_lo);
  }
  free(adj), free(occ), free(hue), free(h.page), free(h.held), free(h.away), free(h.moving);
  if (!n) return pa_hues_free(out), 0;
  out->n = n, out->ncolours = most;
  for (size_t i = 0, j; i < n; i = j) {
    for (j = i + 1; j < n && out->hues[j].page == out->hues[i].page; j++) continue;
    bool whole = out->hues[i].lo == out->hues[i].hi, split = false;
    for (size_t k = i + 1; k < j; k++) split |= out->hues[k].hue != out->hues[i].hue;
    out->npages++, out->nwhole += whole, out->nsplit += split;
  }
  return n;
}

void pa_hues_free(pa_hues_t *hs) {
  free(hs->hues);
  *hs = (pa_hues_t){0};
}
