/* The served phase's swap schedule, in pages. The budget maps, copies out and brings back
 * pages, not buffers: a buffer's first and last pages are shared with its neighbours,
 * and a page leaves only with every buffer on it. A schedule planned over buffers
 * (dtr/served.c given the plan's slots) sent out buffers whose pages a neighbour needed
 * at the next launch: on the demo at 50 %, 431 pages were taken back while leaving and
 * 2.29 GB went out against the reactive victims' 1.63 GB. So the turn handed to dtr/ is
 * one of pages: a page lives over the union of its buffers' lives (one item per
 * stretch), is touched by every launch touching one of them, and by a birth on it (an
 * allocation maps it), and never leaves if one of its buffers is never touched in the
 * iteration (it may be reached through a pointer in device memory; the reactive victims
 * skip such pages too). Built once per served plan, pa_mu held. */
#include "dtr.h"
#include "pa.h"
#include "planner.h"

#include <stdlib.h>

#define NONE UINT32_MAX

struct pa_pageplan_s {
  uint32_t nop;
  uint32_t *out_at, *back_at; /* per position, and one past */
  pa_run_t *outs, *backs;
  size_t nswaps;
  /* the turn it was planned over, for the dump (planalloc-sim --cycle replans it) */
  uint32_t nitems, nslots, *page_of, *born, *gone, *op_first, *used;
  uint8_t *pinned;
  uint64_t page, budget;
  double ns, bytes_per_ns, lead_ns, map_ns;
  uint32_t over;
  pa_hues_t hues; /* hues.c: the pages' handle colours */
};

typedef struct pair_s {
  uint32_t page, ident;
} pair_t;

typedef struct piece_s {
  uint32_t lo, hi; /* positions [lo, hi) */
} piece_t;

typedef struct build_s {
  const pa_sched_t *s;
  const pa_plan_slots_t *p;
  uint64_t base, page;
  uint32_t nop, nident;
  pair_t *pairs;      /* (page, ident) for every page of every ident, by page */
  size_t npairs;
  uint32_t *page_of;  /* per item */
  uint32_t *born, *gone;
  uint8_t *pinned, *whole;
  size_t nitems, cap_items;
  uint32_t *items_of; /* per pair run (page): its items [items_at[g], items_at[g + 1]) */
  uint32_t *items_at, npages;
  uint32_t *page_first; /* per page index g: its pool page */
  uint32_t *op_first, *used; /* the cycle's uses */
  size_t nused, cap_used;
} build_t;

/* Ident i's pool pages [*lo, *hi]; false for an empty one. */
static bool ident_pages(const build_t *b, uint32_t i, uint32_t *lo, uint32_t *hi) {
  uint64_t off, size;
  if (i < pa_sched_slots(b->s)) off = b->base + (uint64_t)b->p->off[i], size = (uint64_t)b->p->bufs[i].size;
  else if (!pa_sched_fixed_range(b->s, i, &off, &size)) return false;
  if (!size) return false;
  *lo = (uint32_t)(off / b->page), *hi = (uint32_t)((off + size - 1) / b->page);
  return true;
}

static int by_page(const void *x, const void *y) {
  const pair_t *a = x, *b = y;
  if (a->page != b->page) return (a->page > b->page) - (a->page < b->page);
  return (a->ident > b->ident) - (a->ident < b->ident);
}

static bool gather_pairs(build_t *b) {
  size_t n = 0;
  uint32_t lo, hi;
  for (uint32_t i = 0; i < b->nident; i++)
    if (ident_pages(b, i, &lo, &hi)) n += (size_t)hi - lo + 1;
  if (!(b->pairs = malloc((n + 1) * sizeof *b->pairs))) return false;
  for (uint32_t i = 0; i < b->nident; i++)
    if (ident_pages(b, i, &lo, &hi))
      for (uint32_t g = lo; g <= hi; g++) b->pairs[b->npairs++] = (pair_t){g, i};
  qsort(b->pairs, b->npairs, sizeof *b->pairs, by_page);
  return true;
}

static bool add_item(build_t *b, uint32_t page, uint32_t born, uint32_t gone, bool whole, bool pinned) {
  void **arrs[] = {(void **)&b->page_of, (void **)&b->born, (void **)&b->gone, (void **)&b->pinned, (void **)&b->whole};
  const size_t elem[] = {sizeof *b->page_of, sizeof *b->born, sizeof *b->gone, 1, 1};
  if (!pa_grow_arrays(arrs, elem, 5, &b->cap_items, b->nitems + 1)) return false;
  size_t k = b->nitems++;
  b->page_of[k] = page, b->born[k] = born, b->gone[k] = gone, b->whole[k] = whole, b->pinned[k] = pinned;
  return true;
}

static int by_lo(const void *x, const void *y) {
  const piece_t *a = x, *b = y;
  return (a->lo > b->lo) - (a->lo < b->lo);
}

/* The slot pieces of the pairs [from, to) (one page), merged where they meet: *n of them. */
static void merge(piece_t *pc, size_t *n) {
  qsort(pc, *n, sizeof *pc, by_lo);
  size_t w = 0;
  for (size_t i = 0; i < *n; i++) {
    if (w && pc[i].lo <= pc[w - 1].hi) pc[w - 1].hi = pc[i].hi > pc[w - 1].hi ? pc[i].hi : pc[w - 1].hi;
    else pc[w++] = pc[i];
  }
  *n = w;
}

/* One page's items: the stretches it lives, one wrapping round the turn's end where its
 * first starts at 0 and its last ends at the turn's end. */
static bool page_items(build_t *b, size_t from, size_t to, piece_t *pc) {
  uint32_t page = b->pairs[from].page, nslots = pa_sched_slots(b->s);
  bool whole = false, pinned = false;
  size_t n = 0;
  for (size_t k = from; k < to; k++) {
    uint32_t i = b->pairs[k].ident, born, gone;
    pinned |= !pa_sched_uses(b->s, i);
    if (i >= nslots) { whole = true; continue; }
    pa_sched_life(b->s, i, &born, &gone);
    if (born < gone) pc[n++] = (piece_t){born, gone};
    else if (gone < born) pc[n++] = (piece_t){born, b->nop}, pc[n++] = (piece_t){0, gone};
  }
  merge(pc, &n);
  if (whole || (n == 1 && pc[0].lo == 0 && pc[0].hi == b->nop)) return add_item(b, page, 0, 0, true, pinned);
  bool wrap = n > 1 && pc[0].lo == 0 && pc[n - 1].hi == b->nop;
  if (wrap && !add_item(b, page, pc[n - 1].lo, pc[0].hi, false, pinned)) return false;
  for (size_t k = wrap; k < n - wrap; k++)
    if (!add_item(b, page, pc[k].lo, pc[k].hi, false, pinned)) return false;
  return true;
}

/* Items by page: the cycle wants its slots first, so the whole ones are numbered after
 * (renumber keeps the pages' lists in step). */
static bool items(build_t *b) {
  piece_t *pc = malloc((2 * b->npairs + 1) * sizeof *pc);
  b->items_at = malloc((b->npairs + 2) * sizeof *b->items_at);
  b->page_first = malloc((b->npairs + 1) * sizeof *b->page_first);
  bool ok = pc && b->items_at && b->page_first;
  for (size_t from = 0, to; ok && from < b->npairs; from = to) {
    for (to = from + 1; to < b->npairs && b->pairs[to].page == b->pairs[from].page; to++) continue;
    b->page_first[b->npages] = b->pairs[from].page, b->items_at[b->npages++] = (uint32_t)b->nitems;
    ok = page_items(b, from, to, pc);
  }
  if (ok) b->items_at[b->npages] = (uint32_t)b->nitems;
  free(pc);
  return ok;
}

/* Slot items first, whole ones after; *nslots of the former. items_of: old -> new. */
static bool renumber(build_t *b, uint32_t *nslots) {
  size_t n = b->nitems;
  uint32_t *to = malloc((n + 1) * sizeof *to), *page = malloc((n + 1) * sizeof *page), *born = malloc((n + 1) * sizeof *born),
           *gone = malloc((n + 1) * sizeof *gone);
  uint8_t *pinned = malloc(n + 1);
  bool ok = to && page && born && gone && pinned;
  uint32_t k = 0;
  for (int pass = 0; ok && pass < 2; pass++) {
    for (size_t i = 0; i < n; i++) {
      if (b->whole[i] != (pass == 1)) continue;
      to[i] = k, page[k] = b->page_of[i], born[k] = b->born[i], gone[k] = b->gone[i], pinned[k] = b->pinned[i], k++;
    }
    if (!pass) *nslots = k;
  }
  if (ok) free(b->page_of), free(b->born), free(b->gone), free(b->pinned), b->page_of = page, b->born = born, b->gone = gone, b->pinned = pinned;
  else free(page), free(born), free(gone), free(pinned);
  if (ok && !(b->items_of = malloc((n + 1) * sizeof *b->items_of))) ok = false;
  for (size_t i = 0; ok && i < n; i++) b->items_of[i] = to[i];
  free(to);
  return ok;
}

static bool lives_at(const build_t *b, uint32_t k, uint32_t nslots, uint32_t q) {
  if (k >= nslots) return true;
  return b->born[k] < b->gone[k] ? q >= b->born[k] && q < b->gone[k] : q >= b->born[k] || q < b->gone[k];
}

/* Position q uses ident i: each of its pages' item living then, once (stamp). */
static bool use(build_t *b, uint32_t i, uint32_t q, uint32_t nslots, uint32_t *stamp) {
  uint32_t lo, hi;
  if (!ident_pages(b, i, &lo, &hi)) return true;
  for (uint32_t g = pa_lower_u32(b->page_first, 0, b->npages, lo); g < b->npages && b->page_first[g] <= hi; g++)
    for (uint32_t j = b->items_at[g]; j < b->items_at[g + 1]; j++) {
      uint32_t k = b->items_of[j];
      if (!lives_at(b, k, nslots, q) || stamp[k] == q + 1) continue;
      if (!pa_grow(&b->used, &b->cap_used, b->nused + 1, sizeof *b->used, NONE / 2)) return false;
      stamp[k] = q + 1, b->used[b->nused++] = k;
    }
  return true;
}

/* The plan's slots by the position of their birth: births[at[q] .. at[q + 1]). */
static bool index_births(const build_t *b, uint32_t **at, uint32_t **births) {
  uint32_t nslot = pa_sched_slots(b->s), born, gone;
  *at = calloc(b->nop + 2, sizeof **at), *births = malloc((nslot + 1) * sizeof **births);
  if (!*at || !*births) return false;
  for (uint32_t k = 0; k < nslot; k++) {
    pa_sched_life(b->s, k, &born, &gone);
    if (born < b->nop && born != gone) (*at)[born + 2]++;
  }
  for (uint32_t q = 0; q < b->nop; q++) (*at)[q + 2] += (*at)[q + 1];
  for (uint32_t k = 0; k < nslot; k++) {
    pa_sched_life(b->s, k, &born, &gone);
    if (born < b->nop && born != gone) (*births)[(*at)[born + 1]++] = k;
  }
  return true;
}

/* The uses by position: the launches' idents and the slots born there. */
static bool uses(build_t *b, uint32_t nslots) {
  uint32_t *stamp = calloc(b->nitems + 1, sizeof *stamp), *born_at = NULL, *births = NULL;
  b->op_first = malloc((b->nop + 1) * sizeof *b->op_first);
  bool ok = stamp && b->op_first && index_births(b, &born_at, &births);
  for (uint32_t q = 0; ok && q < b->nop; q++) {
    b->op_first[q] = (uint32_t)b->nused;
    const uint32_t *ids = NULL;
    uint32_t n = pa_sched_used_at(b->s, q, &ids);
    for (uint32_t k = 0; ok && k < n; k++) ok = use(b, ids[k], q, nslots, stamp);
    for (uint32_t k = born_at[q]; ok && k < born_at[q + 1]; k++) ok = use(b, births[k], q, nslots, stamp);
  }
  if (ok) b->op_first[b->nop] = (uint32_t)b->nused;
  free(stamp), free(born_at), free(births);
  return ok;
}

static void build_free(build_t *b) {
  free(b->pairs), free(b->page_of), free(b->born), free(b->gone), free(b->pinned), free(b->whole);
  free(b->items_of), free(b->items_at), free(b->page_first), free(b->op_first), free(b->used);
}

/* ---- the plan, as runs of pages by position ---------------------------------------------- */

static int by_first(const void *x, const void *y) {
  const pa_run_t *a = x, *b = y;
  return (a->first > b->first) - (a->first < b->first);
}

/* One position's items as runs of consecutive pages, in place over runs[0 .. n). */
static uint32_t coalesce(pa_run_t *runs, uint32_t n) {
  qsort(runs, n, sizeof *runs, by_first);
  uint32_t w = 0;
  for (uint32_t i = 0; i < n; i++) {
    if (w && runs[w - 1].first + runs[w - 1].n == runs[i].first) runs[w - 1].n++;
    else if (!w || runs[w - 1].first + runs[w - 1].n <= runs[i].first) runs[w++] = runs[i];
  }
  return w;
}

static bool to_runs(const uint32_t *at, const uint32_t *ids, uint32_t nop, const uint32_t *page_of, uint32_t **run_at,
                    pa_run_t **runs) {
  *run_at = malloc((nop + 1) * sizeof **run_at), *runs = malloc((at[nop] + 1) * sizeof **runs);
  if (!*run_at || !*runs) return false;
  uint32_t w = 0;
  for (uint32_t q = 0; q < nop; q++) {
    (*run_at)[q] = w;
    for (uint32_t k = at[q]; k < at[q + 1]; k++) (*runs)[w + k - at[q]] = (pa_run_t){page_of[ids[k]], 1};
    w += coalesce(*runs + w, at[q + 1] - at[q]);
  }
  (*run_at)[nop] = w;
  return true;
}

void pa_pageplan_free(pa_pageplan_t *pp) {
  if (!pp) return;
  free(pp->out_at), free(pp->back_at), free(pp->outs), free(pp->backs);
  free(pp->page_of), free(pp->born), free(pp->gone), free(pp->op_first), free(pp->used), free(pp->pinned);
  pa_hues_free(&pp->hues), free(pp);
}

/* The turn moves from the build into the plan (the build frees what is left). */
static void keep_turn(pa_pageplan_t *pp, build_t *b, uint32_t nslots, const pa_cycle_t *c, uint64_t budget) {
  pp->nitems = (uint32_t)b->nitems, pp->nslots = nslots, pp->page = b->page, pp->budget = budget;
  pp->ns = c->ns, pp->bytes_per_ns = 0;
  pp->page_of = b->page_of, pp->born = b->born, pp->gone = b->gone, pp->op_first = b->op_first, pp->used = b->used,
  pp->pinned = b->pinned;
  b->page_of = b->born = b->gone = b->op_first = b->used = NULL, b->pinned = NULL;
}

/* The turn and its parameters, for planalloc-sim --cycle (dtr/cycle_read.c reads it):
 * "launches,N,page,P,budget,B,kernel_ns,K,link_bytes_per_ns,L,latency_ns,T,lead_ns,D,map_ns,M", then per
 * item "i,POOL_PAGE,BORN,GONE,SLOT,PINNED" (SLOT 0: it lives the whole turn), then per
 * position with uses "u,Q,ITEM ITEM ...". */
void pa_pageplan_dump(const pa_pageplan_t *pp, FILE *f) {
  fprintf(f, "# planalloc cycle 1\nlaunches,%u,page,%llu,budget,%llu,kernel_ns,%.1f,link_bytes_per_ns,%.3f,latency_ns,%.1f,lead_ns,%.1f,"
          "map_ns,%.1f\n", pp->nop, (unsigned long long)pp->page, (unsigned long long)pp->budget, pp->ns, pp->bytes_per_ns,
          PA_COPY_LATENCY_NS, pp->lead_ns, pp->map_ns);
  for (uint32_t k = 0; k < pp->nitems; k++)
    fprintf(f, "i,%u,%u,%u,%d,%d\n", pp->page_of[k], pp->born[k], pp->gone[k], k < pp->nslots, pp->pinned[k]);
  for (uint32_t q = 0; q < pp->nop; q++) {
    if (pp->op_first[q] == pp->op_first[q + 1]) continue;
    fprintf(f, "u,%u,", q);
    for (uint32_t k = pp->op_first[q]; k < pp->op_first[q + 1]; k++) fprintf(f, "%s%u", k > pp->op_first[q] ? " " : "", pp->used[k]);
    fputc('\n', f);
  }
}

static pa_pageplan_t *runs_of(const pa_cycle_plan_t *cp, const uint32_t *page_of) {
  pa_pageplan_t *pp = cp->nswaps ? calloc(1, sizeof *pp) : NULL;
  if (!pp) return NULL;
  pp->nop = cp->nop, pp->lead_ns = cp->lead_ns, pp->over = cp->over;
  if (!to_runs(cp->out_at, cp->outs, cp->nop, page_of, &pp->out_at, &pp->outs) ||
      !to_runs(cp->back_at, cp->backs, cp->nop, page_of, &pp->back_at, &pp->backs))
    return pa_pageplan_free(pp), NULL;
  pp->nswaps = pp->out_at[pp->nop];
  return pp;
}

/* The most pages one launch needs on the device at once: those it touches, and the
 * pinned ones alive then (a budget below it cannot run that launch). */
static uint32_t floor_pages(const pa_cycle_t *c) {
  uint32_t most = 0;
  for (uint32_t q = 0; q < c->nop; q++) {
    uint32_t n = c->op_first[q + 1] - c->op_first[q];
    for (uint32_t k = 0; k < c->nbuf; k++) n += c->pinned && c->pinned[k] && pa_cycle_alive(c, k, q);
    for (uint32_t u = c->op_first[q]; u < c->op_first[q + 1]; u++) n -= c->pinned && c->pinned[c->used[u]]; /* counted once */
    if (n > most) most = n;
  }
  return most;
}

/* What the schedule will cost, before it runs: the model's turn (dtr/cycle.c, the replay
 * planalloc-sim --cycle makes of the dump: victims at need where the swaps leave a
 * launch over budget), its fourth turn, in the steady state; with no swap planned, the
 * victims at need alone. */
static void forecast(const build_t *b, const pa_cycle_t *c, const pa_cycle_plan_t *cp, const pa_cycle_replay_t *r,
                     pa_forecast_t *fc) {
  fc->floor = (uint64_t)floor_pages(c) * b->page, fc->compute_ns = c->nop * c->ns;
  fc->turn_ns = r->turn_ns, fc->bytes_out = r->bytes_out, fc->bytes_in = r->bytes_in, fc->over = cp->over;
  fc->map_ns = r->map_ns;
}

pa_pageplan_t *pa_pageplan_new(const pa_sched_t *s, const pa_plan_slots_t *p, uint64_t base, uint64_t page,
                               uint64_t budget, double ns_per_launch, pa_link_t link, double lead_ns, pa_forecast_t *fc) {
  uint64_t nop = s && page ? pa_sched_launches(s) : 0;
  *fc = (pa_forecast_t){0};
  if (!nop || nop >= NONE / 2 || (base + p->pool) / page >= NONE || ns_per_launch <= 0) return NULL;
  build_t b = {.s = s, .p = p, .base = base, .page = page, .nop = (uint32_t)nop, .nident = pa_sched_idents(s)};
  uint32_t nslots = 0;
  pa_cycle_plan_t cp = {0};
  pa_pageplan_t *pp = NULL;
  if (gather_pairs(&b) && items(&b) && renumber(&b, &nslots) && uses(&b, nslots)) {
    uint64_t *size = malloc((b.nitems + 1) * sizeof *size);
    for (size_t k = 0; size && k < b.nitems; k++) size[k] = page;
    pa_cycle_t c = {.nop = b.nop, .nbuf = (uint32_t)b.nitems, .nslots = nslots, .size = size, .born = b.born,
                    .gone = b.gone, .op_first = b.op_first, .used = b.used, .ns = ns_per_launch, .lead_ns = lead_ns,
                    .pinned = b.pinned};
    pa_cycle_file_t f = {.c = c, .page = page, .budget = budget, .kernel_ns = ns_per_launch, .bytes_per_ns = link.bytes_per_ns,
                         .latency_ns = PA_COPY_LATENCY_NS, .map_ns = link.map_ns, .op_first = b.op_first, .used = b.used};
    pa_cycle_replay_t r;
    if (size && !pa_cycle_plan_best(&f, &cp, &r, &fc->stretch)) {
      forecast(&b, &c, &cp, &r, fc);
      pp = runs_of(&cp, b.page_of);
    }
    if (pp) (void)pa_hues_colour(&c, &cp, b.page_of, (uint32_t)(budget / page), &pp->hues);
    if (pp) keep_turn(pp, &b, nslots, &c, budget), pp->bytes_per_ns = link.bytes_per_ns, pp->map_ns = link.map_ns;
    pa_cycle_plan_free(&cp);
    free(size);
  }
  build_free(&b);
  return pp;
}

size_t pa_pageplan_swaps(const pa_pageplan_t *pp) { return pp ? pp->nswaps : 0; }

uint64_t pa_pageplan_lead(const pa_pageplan_t *pp) { return pp ? (uint64_t)(pp->lead_ns / pp->ns + 0.5) : 0; }
uint32_t pa_pageplan_over(const pa_pageplan_t *pp) { return pp ? pp->over : 0; }

static uint32_t runs_at(const uint32_t *at, const pa_run_t *runs, uint64_t q, const pa_run_t **out) {
  *out = runs + at[q];
  return at[q + 1] - at[q];
}

uint32_t pa_pageplan_outs(const pa_pageplan_t *pp, uint64_t at, const pa_run_t **runs) {
  return pp ? runs_at(pp->out_at, pp->outs, at % pp->nop, runs) : 0;
}

uint32_t pa_pageplan_backs(const pa_pageplan_t *pp, uint64_t at, const pa_run_t **runs) {
  return pp ? runs_at(pp->back_at, pp->backs, at % pp->nop, runs) : 0;
}

const pa_hues_t *pa_pageplan_hues(const pa_pageplan_t *pp) { return pp && pp->hues.n ? &pp->hues : NULL; }
