/* hues.c's colouring of a turn's pages with the budget's handles: at every position, the
 * pages on the device hold distinct colours, below the budget; pages that never meet
 * share one where the budget leaves no other; a page away on the host frees its colour.
 * A page holds its colour one position past each stay (a buffer freed at q, in the events
 * before q's launch, meets those born there: the program may allocate before it frees;
 * a copy out after q - 1's launch may leave after q's births). */
#include "../harness.h"
#include "dtr.h"
#include "pa.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define NOP 24
#define MOST_ITEMS 40

typedef struct turn_s {
  uint32_t n, nslots, page_of[MOST_ITEMS], born[MOST_ITEMS], gone[MOST_ITEMS];
  uint32_t out_at[NOP + 1], outs[MOST_ITEMS * NOP], back_at[NOP + 1], backs[MOST_ITEMS * NOP];
  uint8_t away[MOST_ITEMS][NOP];
} turn_t;

static bool alive(const turn_t *t, uint32_t k, uint32_t q) {
  bool wraps = t->gone[k] < t->born[k];
  return k >= t->nslots || (wraps ? q >= t->born[k] || q < t->gone[k] : q >= t->born[k] && q < t->gone[k]);
}

/* Item k holding its page's colour at q: alive, and not between a copy out and its copy
 * back, at q or just before it. */
static bool on_device(const turn_t *t, uint32_t k, uint32_t q) {
  uint32_t b = (q + NOP - 1) % NOP;
  return (alive(t, k, q) && !t->away[k][q]) || (alive(t, k, b) && !t->away[k][b]);
}

/* Sends item k out after position lo and back at hi (lo < hi, no wrap). */
static void swap(turn_t *t, uint32_t k, uint32_t lo, uint32_t hi, uint32_t *outs_at, uint32_t *backs_at) {
  t->outs[lo * MOST_ITEMS + outs_at[lo]++] = k, t->backs[hi * MOST_ITEMS + backs_at[hi]++] = k;
  for (uint32_t q = lo + 1; q < hi; q++) t->away[k][q] = 1;
}

/* The swaps as pa_cycle_plan_t wants them: packed by position. */
static void pack(turn_t *t, const uint32_t *outs_at, const uint32_t *backs_at) {
  uint32_t o = 0, b = 0;
  uint32_t outs[MOST_ITEMS * NOP], backs[MOST_ITEMS * NOP];
  for (uint32_t q = 0; q < NOP; q++) {
    t->out_at[q] = o, t->back_at[q] = b;
    for (uint32_t i = 0; i < outs_at[q]; i++) outs[o++] = t->outs[q * MOST_ITEMS + i];
    for (uint32_t i = 0; i < backs_at[q]; i++) backs[b++] = t->backs[q * MOST_ITEMS + i];
  }
  t->out_at[NOP] = o, t->back_at[NOP] = b;
  memcpy(t->outs, outs, o * sizeof *outs), memcpy(t->backs, backs, b * sizeof *backs);
}

static size_t run(const turn_t *t, uint32_t most, pa_hue_t **out) {
  pa_hues_t hs;
  pa_cycle_t c = {.nop = NOP, .nbuf = t->n, .nslots = t->nslots, .born = t->born, .gone = t->gone};
  pa_cycle_plan_t cp = {.nop = NOP, .out_at = (uint32_t *)t->out_at, .outs = (uint32_t *)t->outs,
                        .back_at = (uint32_t *)t->back_at, .backs = (uint32_t *)t->backs};
  size_t n = pa_hues_colour(&c, &cp, t->page_of, most, &hs);
  *out = hs.hues;
  return n;
}

/* Page pg's colour at q: its whole turn's, or the stretch holding q; UINT32_MAX: none. */
static uint32_t hue_at(const pa_hue_t *h, size_t n, uint32_t pg, uint32_t q) {
  for (size_t i = 0; i < n; i++) {
    if (h[i].page != pg) continue;
    bool in = h[i].lo == h[i].hi || (h[i].lo < h[i].hi ? q >= h[i].lo && q < h[i].hi : q >= h[i].lo || q < h[i].hi);
    if (in) return h[i].hue;
  }
  return UINT32_MAX;
}

/* At each position the pages on the device hold distinct colours below most, and a
 * stretch lies where its page is on the device. */
static void check(const turn_t *t, const pa_hue_t *h, size_t n, uint32_t most) {
  for (size_t i = 1; i < n; i++) CHECK(h[i - 1].page < h[i].page || (h[i - 1].page == h[i].page && h[i - 1].lo < h[i].lo));
  for (size_t i = 0; i < n; i++) CHECK(h[i].hue < most);
  for (uint32_t q = 0; q < NOP; q++)
    for (uint32_t k = 0; k < t->n; k++) {
      uint32_t c = on_device(t, k, q) ? hue_at(h, n, t->page_of[k], q) : UINT32_MAX;
      for (uint32_t j = 0; j < k && c != UINT32_MAX; j++) /* another page on the device in the same colour */
        CHECK(!(on_device(t, j, q) && t->page_of[j] != t->page_of[k] && hue_at(h, n, t->page_of[j], q) == c));
    }
  for (size_t i = 0; i < n; i++)
    for (uint32_t q = h[i].lo; h[i].lo != h[i].hi && q != h[i].hi; q = (q + 1) % NOP) {
      bool on = false;
      for (uint32_t k = 0; k < t->n; k++) on |= t->page_of[k] == h[i].page && on_device(t, k, q);
      CHECK(on);
    }
}

static uint64_t next(uint64_t *x) { /* xorshift64 */
  *x ^= *x << 13, *x ^= *x >> 7, *x ^= *x << 17;
  return *x;
}

static void item(turn_t *t, uint32_t page, uint32_t born, uint32_t gone) {
  t->page_of[t->n] = page, t->born[t->n] = born, t->gone[t->n] = gone, t->n++, t->nslots = t->n;
}

/* A buffer that lives the whole turn: after every slot. */
static void whole(turn_t *t, uint32_t page) { t->page_of[t->n++] = page; }

/* Pages 10 and 11 never meet (10 freed at 11, 11 born at 12 and freed at 23); 12 lives
 * throughout, 13 meets both: three colours, and 10 and 11 must share one. */
static void shared(void) {
  static turn_t t;
  uint32_t none[NOP] = {0};
  memset(&t, 0, sizeof t);
  item(&t, 10, 0, 11), item(&t, 11, 12, 23), item(&t, 13, 6, 18), whole(&t, 12);
  pack(&t, none, none);
  pa_hue_t *h = NULL;
  size_t n = run(&t, 3, &h);
  CHECK(n == 4);
  check(&t, h, n, 3);
  if (n == 4) CHECK(h[0].lo == h[0].hi && h[1].lo == h[1].hi && h[0].hue == h[1].hue && h[2].hue != h[3].hue && h[0].hue != h[2].hue);
  free(h);
}

/* One colour: page 20 lives throughout but is on the host over [5, 15), where page 21
 * lives: they share it. Without the swap, 21 gets none. */
static void away_frees(void) {
  static turn_t t;
  uint32_t outs_at[NOP] = {0}, backs_at[NOP] = {0};
  memset(&t, 0, sizeof t);
  item(&t, 20, 1, 0), item(&t, 21, 6, 14); /* 20: a slot that wraps round all but 0 */
  swap(&t, 0, 4, 15, outs_at, backs_at);
  pack(&t, outs_at, backs_at);
  pa_hue_t *h = NULL;
  size_t n = run(&t, 1, &h);
  CHECK(n == 2);
  check(&t, h, n, 1);
  free(h);
  static turn_t u;
  memset(&u, 0, sizeof u);
  item(&u, 20, 1, 0), item(&u, 21, 6, 14);
  uint32_t none[NOP] = {0};
  pack(&u, none, none);
  n = run(&u, 1, &h);
  CHECK(n == 1);
  check(&u, h, n, 1);
  free(h);
}

/* Random turns, budgets of 1 to 8 colours: the invariants hold, and with as many colours
 * as pages every page gets its own whole turn. */
static void random_turns(void) {
  static turn_t t;
  uint64_t rng = 0x9e3779b97f4a7c15ull;
  for (int round = 0; round < 300 && !test_failures; round++) {
    memset(&t, 0, sizeof t);
    uint32_t outs_at[NOP] = {0}, backs_at[NOP] = {0}, pages = 2 + (uint32_t)(next(&rng) % 10);
    uint32_t items = 2 + (uint32_t)(next(&rng) % 16);
    for (uint32_t k = 0; k < items; k++) {
      uint32_t born = (uint32_t)(next(&rng) % NOP), len = 1 + (uint32_t)(next(&rng) % (NOP - 1));
      item(&t, 100 + (uint32_t)(next(&rng) % pages), born, (born + len) % NOP);
      if (born + 3 < NOP && next(&rng) % 3 == 0) swap(&t, k, born + 1, NOP - 1, outs_at, backs_at);
    }
    pack(&t, outs_at, backs_at);
    uint32_t most = 1 + (uint32_t)(next(&rng) % 8);
    pa_hue_t *h = NULL;
    size_t n = run(&t, most, &h);
    check(&t, h, n, most);
    free(h);
    n = run(&t, MOST_ITEMS, &h);
    CHECK(n > 0);
    for (size_t i = 0; i < n; i++) CHECK(h[i].lo == h[i].hi);
    free(h);
  }
}

/* 5000 pages on the device throughout each take a colour of their own, outside the
 * conflict graph (quadratic, so it holds only the pages that leave): the two pages that
 * never meet share the one colour left. */
static void resident_many(void) {
  enum { FULL = 5000 };
  uint32_t *page_of = malloc((FULL + 2) * sizeof *page_of), born[2] = {0, 12}, gone[2] = {11, 23};
  uint32_t none[NOP + 1] = {0};
  CHECK(page_of != NULL);
  if (!page_of) return;
  page_of[0] = FULL, page_of[1] = FULL + 1;
  for (uint32_t k = 0; k < FULL; k++) page_of[2 + k] = k;
  pa_cycle_t c = {.nop = NOP, .nbuf = FULL + 2, .nslots = 2, .born = born, .gone = gone};
  pa_cycle_plan_t cp = {.nop = NOP, .out_at = none, .outs = none, .back_at = none, .backs = none};
  pa_hues_t hs;
  size_t n = pa_hues_colour(&c, &cp, page_of, FULL + 1, &hs);
  CHECK(n == FULL + 2);
  if (n == FULL + 2) {
    CHECK(hs.hues[FULL].page == FULL && hs.hues[FULL + 1].page == FULL + 1 && hs.hues[FULL].hue == hs.hues[FULL + 1].hue);
    uint8_t *seen = calloc(FULL + 1, 1);
    for (uint32_t k = 0; seen && k < FULL; k++) {
      CHECK(hs.hues[k].hue <= FULL && !seen[hs.hues[k].hue]);
      seen[hs.hues[k].hue <= FULL ? hs.hues[k].hue : 0] = 1;
    }
    CHECK(seen && !seen[hs.hues[FULL].hue]);
    free(seen);
  }
  pa_hues_free(&hs), free(page_of);
}

/* 6000 pages that leave (past the 4096 the colouring once stopped at: GPT's served turn
 * at half its peak has 4181, and each came back to a handle taken, a remap every time):
 * the first half on the device over [0, 12), the second over [12, 24) (each freed at its
 * end, before the other is born), with 3000
 * colours: each colour is one page of each half. */
static void moving_many(void) {
  enum { HALF = 3000 };
  uint32_t *page_of = malloc(2 * HALF * sizeof *page_of), *born = malloc(2 * HALF * sizeof *born), *gone = malloc(2 * HALF * sizeof *gone);
  uint32_t none[NOP + 1] = {0}, *users = calloc(HALF, 2 * sizeof *users);
  CHECK(page_of && born && gone && users);
  if (!page_of || !born || !gone || !users) return free(page_of), free(born), free(gone), free(users);
  for (uint32_t k = 0; k < 2 * HALF; k++) page_of[k] = k, born[k] = k < HALF ? 0 : 12, gone[k] = k < HALF ? 11 : 23;
  pa_cycle_t c = {.nop = NOP, .nbuf = 2 * HALF, .nslots = 2 * HALF, .born = born, .gone = gone};
  pa_cycle_plan_t cp = {.nop = NOP, .out_at = none, .outs = none, .back_at = none, .backs = none};
  pa_hues_t hs;
  size_t n = pa_hues_colour(&c, &cp, page_of, HALF, &hs);
  CHECK(n == 2 * HALF && hs.nwhole == 2 * HALF && hs.nsplit == 0);
  for (size_t i = 0; i < n; i++) {
    CHECK(hs.hues[i].hue < HALF && hs.hues[i].lo == hs.hues[i].hi);
    if (hs.hues[i].hue < HALF) users[2 * hs.hues[i].hue + (hs.hues[i].page >= HALF)]++;
  }
  for (uint32_t h = 0; h < HALF && n; h++) CHECK(users[2 * h] == 1 && users[2 * h + 1] == 1);
  pa_hues_free(&hs), free(page_of), free(born), free(gone), free(users);
}

/* Two pages' turn coloured with two colours: the invariants, and distinct colours
 * where they meet, one shared where they do not. */
static void two_pages(const turn_t *t, bool meet) {
  pa_hue_t *h = NULL;
  size_t n = run(t, 2, &h);
  CHECK(n == 2);
  check(t, h, n, 2);
  if (n == 2) CHECK(meet ? h[0].hue != h[1].hue : h[0].hue == h[1].hue);
  free(h);
}

/* Page 30's buffer is freed at 12, where page 31's is born: the program may make 31's
 * before it frees 30's, so they meet and take two colours (sharing one, 31 found 30 in
 * its handle every period and took another colour's). Freed at 11, they share. */
static void freed_where_born(void) {
  static turn_t t;
  uint32_t none[NOP] = {0};
  for (uint32_t end = 12; end >= 11; end--) {
    memset(&t, 0, sizeof t);
    item(&t, 30, 0, end), item(&t, 31, 12, 23);
    pack(&t, none, none);
    two_pages(&t, end == 12);
  }
}

/* Page 40 lives throughout but leaves after position 5 for [6, 20); page 41 is born at
 * 6: the copy out, posted to the mover, may go after 41's birth, so they meet. Born at
 * 7, 41 shares 40's colour. */
static void sent_where_born(void) {
  static turn_t t;
  for (uint32_t born = 6; born <= 7; born++) {
    uint32_t outs_at[NOP] = {0}, backs_at[NOP] = {0};
    memset(&t, 0, sizeof t);
    item(&t, 40, 1, 0), item(&t, 41, born, 19);
    swap(&t, 0, 5, 20, outs_at, backs_at);
    pack(&t, outs_at, backs_at);
    two_pages(&t, born == 6);
  }
}

int main(void) {
  shared(), away_frees(), random_turns(), resident_many(), moving_many(), freed_where_born(), sent_where_born();
  return test_report("test_hues");
}
