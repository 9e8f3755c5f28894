/* Algorithms and the validator: exact cases, random properties, and the exact search
 * against brute force on tiny traces. */
#include "../harness.h"
#include "planner.h"

#include <stdlib.h>

static uint64_t rng = 88172645463325252ull;
static uint64_t rnd(uint64_t n) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return rng % n;
}

static void load(const char *text, pa_trace_t *t) {
  char err[256];
  int rc = pa_csv_read_buf(text, strlen(text), t, err, sizeof err);
  if (rc) fprintf(stderr, "bad test trace: %s\n", err);
  CHECK_EQ_I64(rc, PA_OK);
}

static int64_t plan_with(const char *algo, const pa_trace_t *t, int64_t *off, int *rc_out) {
  /* best must beat every heuristic whatever its search achieves: a short limit keeps
   * random traces whose bound cannot be settled quickly from dominating the run */
  pa_plan_opts_t o = {.time_limit = 0.1};
  char err[512] = "";
  int64_t peak = -1;
  int rc = pa_plan(pa_algo_find(algo), t, &o, off, &peak, err, sizeof err);
  if (rc && rc != PA_EUNSUPPORTED) fprintf(stderr, "%s: %s\n", algo, err);
  if (rc_out) *rc_out = rc;
  return rc ? -1 : peak;
}

static void test_validator(void) {
  pa_trace_t t;
  char err[512];
  int64_t peak;
  load("id,lower,upper,size,alignment,offset\na,0,4,8,1,\nb,2,6,8,8,\nc,4,9,8,1,16\n", &t);
  int64_t good[3] = {0, 8, 16}, overlap[3] = {0, 4, 16}, misaligned[3] = {0, 12, 16};
  int64_t moved[3] = {0, 8, 0}, reuse[3] = {0, 8, 16};
  CHECK_EQ_I64(pa_validate(&t, good, &peak, err, sizeof err), PA_OK);
  CHECK_EQ_I64(peak, 24);
  CHECK_EQ_I64(pa_validate(&t, overlap, &peak, err, sizeof err), PA_EINTERNAL);
  CHECK_STR(err, "buffer b at offset 4 breaks its alignment 8");
  CHECK_EQ_I64(pa_validate(&t, misaligned, &peak, err, sizeof err), PA_EINTERNAL);
  CHECK_STR(err, "buffer b at offset 12 breaks its alignment 8");
  CHECK_EQ_I64(pa_validate(&t, moved, &peak, err, sizeof err), PA_EINTERNAL);
  CHECK_STR(err, "buffer c moved from its fixed offset 16 to 0");
  CHECK_EQ_I64(pa_validate(&t, reuse, &peak, err, sizeof err), PA_OK);
  pa_trace_free(&t);
  /* a frees at 4 and c starts at 4: same address is fine; b still overlaps c at 4..6 */
  load("id,lower,upper,size\na,0,4,8\nb,2,6,8\nc,4,9,8\n", &t);
  int64_t share[3] = {0, 8, 0}, clash[3] = {0, 8, 12}, above[3] = {0, 4, 20},
          below[3] = {8, 4, 20};
  CHECK_EQ_I64(pa_validate(&t, above, &peak, err, sizeof err), PA_EINTERNAL);
  CHECK_STR(err, "buffers a [0, 8) and b [4, 12) overlap in address at time 2");
  /* the newcomer b lands under a: only its upper neighbour shows the overlap */
  CHECK_EQ_I64(pa_validate(&t, below, &peak, err, sizeof err), PA_EINTERNAL);
  CHECK_STR(err, "buffers b [4, 12) and a [8, 16) overlap in address at time 2");
  CHECK_EQ_I64(pa_validate(&t, share, &peak, err, sizeof err), PA_OK);
  CHECK_EQ_I64(pa_validate(&t, clash, &peak, err, sizeof err), PA_EINTERNAL);
  CHECK_STR(err, "buffers b [8, 16) and c [12, 20) overlap in address at time 4");
  pa_trace_free(&t);
}

static void test_input12(void) {
  pa_trace_t t;
  load("id,lower,upper,size\nb1,0,3,4\nb2,3,9,4\nb3,0,9,4\nb4,9,21,4\nb5,0,21,4\n", &t);
  int64_t off[5];
  CHECK_EQ_I64(pa_trace_maxlive(&t), 12);
  CHECK_EQ_I64(plan_with("best", &t, off, NULL), 12);
  pa_trace_free(&t);
}

/* Buffers as large and long-lived as the limits allow: size x duration passes 2^63,
 * which the area orders held in an int64 (a conversion UBSan stops at: a fuzzed trace).
 * Every algorithm lays them out, the two at once stacked. */
static void test_huge_area(void) {
  pa_trace_t t;
  load("id,lower,upper,size\nb1,0,1152921504606846976,1152921504606846976\n"
       "b2,1,1152921504606846976,1152921504606846975\nb3,0,1,1\n", &t);
  size_t n = 0;
  const pa_algo_t *a = pa_algo_list(&n);
  for (size_t i = 0; i < n; i++) {
    int64_t off[3];
    CHECK_EQ_I64(plan_with(a[i].name, &t, off, NULL), INT64_C(2305843009213693951));
  }
  pa_trace_free(&t);
}

/* The quick portfolio on a trace whose overlaps rule out the skylines in 10 ms (900
 * buffers live at once: 404,550 pairs, 12 ms at their 30 ns a pair): the heuristics that
 * cost nothing still run and stack them at max-live (it stopped at the first ruled out,
 * PA_ETIMEOUT: the plan went to the planner's thread). */
static void test_quick_cheap(void) {
  pa_trace_t t;
  pa_trace_init(&t);
  pa_span_t sp = {0, 10};
  for (int i = 0; i < 900; i++) CHECK_EQ_I64(pa_trace_add(&t, NULL, 256 * (1 + i % 7), 1, PA_NO_OFFSET, &sp, 1), PA_OK);
  int64_t *off = malloc(t.n * sizeof *off), peak = -1;
  pa_plan_opts_t o = {.time_limit = 0.01};
  CHECK(pa_trace_overlaps(&t) > 0.01 / 30e-9);
  CHECK_EQ_I64(pa_best_quick(&t, &o, 0.01, pa_trace_maxlive(&t), off, &peak), PA_OK);
  CHECK_EQ_I64(peak, pa_trace_maxlive(&t));
  free(off);
  pa_trace_free(&t);
}

/* Truncated, a trace is the one its first buffers made: spans, max-live, and a buffer
 * added after lands where one added then would (the anchored plans drop their fixed
 * buffers so; ASan sees their ids freed). */
static void test_truncate(void) {
  pa_trace_t t, u;
  pa_trace_init(&t), pa_trace_init(&u);
  pa_span_t two[2] = {{0, 4}, {6, 9}}, one = {2, 7};
  CHECK_EQ_I64(pa_trace_add(&t, "a", 64, 8, PA_NO_OFFSET, two, 2), PA_OK);
  CHECK_EQ_I64(pa_trace_add(&u, "a", 64, 8, PA_NO_OFFSET, two, 2), PA_OK);
  CHECK_EQ_I64(pa_trace_add(&t, "f", 4096, 8, 512, &one, 1), PA_OK);
  CHECK_EQ_I64(pa_trace_add(&t, "g", 100, 4, PA_NO_OFFSET, two, 2), PA_OK);
  pa_trace_truncate(&t, 1);
  CHECK_EQ_I64((int64_t)t.n, 1);
  CHECK_EQ_I64((int64_t)t.nspans, 2);
  CHECK_EQ_I64(t.sum_padded, u.sum_padded);
  CHECK_EQ_I64(pa_trace_maxlive(&t), 64);
  CHECK(!pa_trace_has_fixed(&t));
  CHECK_EQ_I64(pa_trace_add(&t, "b", 32, 8, PA_NO_OFFSET, &one, 1), PA_OK);
  CHECK_EQ_I64(pa_trace_add(&u, "b", 32, 8, PA_NO_OFFSET, &one, 1), PA_OK);
  CHECK_EQ_I64((int64_t)t.bufs[1].span0, (int64_t)u.bufs[1].span0);
  CHECK_EQ_I64(pa_trace_maxlive(&t), pa_trace_maxlive(&u));
  pa_trace_truncate(&t, 5); /* no more than it holds: nothing */
  CHECK_EQ_I64((int64_t)t.n, 2);
  pa_trace_free(&t), pa_trace_free(&u);
}

/* MegEngine's own unit test: a chain of intervals reaches the lower bound. */
static void test_chain(void) {
  pa_trace_t t;
  load("id,lower,upper,size\na,0,2,10\nb,1,3,20\nc,2,4,30\nd,3,5,40\ne,4,6,50\n", &t);
  int64_t off[5];
  CHECK_EQ_I64(pa_trace_maxlive(&t), 90);
  CHECK_EQ_I64(plan_with("megengine", &t, off, NULL), 90);
  CHECK_EQ_I64(plan_with("best", &t, off, NULL), 90);
  pa_trace_free(&t);
}

/* b lives inside a's gap: they can share an address only if gaps are honoured. */
static void test_gaps(void) {
  pa_trace_t t;
  load("id,lower,upper,size,gaps\na,0,10,100,3-7\nb,3,7,60,\nc,0,2,10,\n", &t);
  int64_t off[3];
  CHECK_EQ_I64(pa_trace_maxlive(&t), 110);
  CHECK_EQ_I64(plan_with("best", &t, off, NULL), 110);
  CHECK_EQ_I64(plan_with("size-best", &t, off, NULL), 110);
  CHECK_EQ_I64(off[0], off[1]);
  pa_trace_free(&t);
}

static void test_fixed(void) {
  pa_trace_t t;
  int rc;
  load("id,lower,upper,size,offset\na,0,10,8,100\nb,0,10,8,\nc,5,12,16,\n", &t);
  int64_t off[3];
  CHECK(plan_with("best", &t, off, NULL) >= 108);
  CHECK_EQ_I64(off[0], 100);
  plan_with("megengine", &t, off, &rc);
  CHECK_EQ_I64(rc, PA_EUNSUPPORTED);
  pa_trace_free(&t);
  char err[512];
  load("id,lower,upper,size,offset\na,0,10,8,0\nb,5,12,8,4\n", &t);
  pa_plan_opts_t o = {0};
  int64_t peak;
  CHECK_EQ_I64(pa_plan(pa_algo_find("best"), &t, &o, off, &peak, err, sizeof err), PA_EINPUT);
  CHECK_STR(err, "buffers a [0, 8) and b [4, 12) overlap in address at time 5");
  pa_trace_free(&t);
}

/* Online best fit reuses a freed block: c takes a's place once a is freed at 2. */
static void test_online(void) {
  pa_trace_t t;
  load("id,lower,upper,size\na,0,2,8\nb,0,4,4\nc,2,4,8\n", &t);
  int64_t off[3];
  CHECK_EQ_I64(plan_with("start-best", &t, off, NULL), 12);
  CHECK_EQ_I64(off[0], 0);
  CHECK_EQ_I64(off[1], 8);
  CHECK_EQ_I64(off[2], 0);
  pa_trace_free(&t);
}

/* Fixed buffers leave gaps [4,10) and [12,14): best fit takes the tight one, lowest fit
 * the low one. */
static void test_fit_rules(void) {
  pa_trace_t t;
  load("id,lower,upper,size,offset\nf1,0,10,4,0\nf2,0,10,2,10\nf3,0,10,10,14\nq,0,10,2,\n", &t);
  int64_t off[4];
  plan_with("size-best", &t, off, NULL);
  CHECK_EQ_I64(off[3], 12);
  plan_with("size-lowest", &t, off, NULL);
  CHECK_EQ_I64(off[3], 4);
  pa_trace_free(&t);
}

/* The skyline places the buffer that can sit lowest first: after a, b still fits at 0
 * beside it, and c, which overlaps both, goes on top of a. */
static void test_skyline(void) {
  pa_trace_t t;
  load("id,lower,upper,size\na,0,4,10\nb,4,8,6\nc,2,6,3\n", &t);
  int64_t off[3];
  CHECK_EQ_I64(plan_with("skyline-size", &t, off, NULL), 13);
  CHECK_EQ_I64(off[0], 0);
  CHECK_EQ_I64(off[1], 0);
  CHECK_EQ_I64(off[2], 10);
  pa_trace_free(&t);
}

/* Around fixed buffers the skylines fill the holes. a, fixed at [4, 8) throughout, splits
 * the range into strips [0, 4) and [8, ...): b (3 bytes) lies under it, c (5) does not
 * fit there and lies over it. e, fixed at [13, 15) until 5, is in the way of f, live
 * with it (f steps over it to 15), not of d, live after it (d at 13). Max-live 16, top
 * 17. With a and e in the skyline (pa_skyline_ordered), nothing lies under them: 25. */
static void test_skyline_around(void) {
  pa_trace_t t;
  load("id,lower,upper,size,offset\na,0,10,4,4\nb,0,10,3,\nc,0,10,5,\nd,5,10,4,\ne,0,5,2,13\nf,0,5,2,\n", &t);
  int64_t off[6];
  uint32_t order[6];
  const int64_t want[6] = {4, 0, 8, 13, 13, 15};
  CHECK_EQ_I64(plan_with("skyline", &t, off, NULL), 17);
  for (int i = 0; i < 6; i++) CHECK_EQ_I64(off[i], want[i]);
  CHECK_EQ_I64(pa_order_make(&t, PA_ORDER_TOTAL, order), PA_OK);
  CHECK_EQ_I64(pa_skyline_ordered(&t, order, NULL, off), PA_OK);
  CHECK_EQ_I64(pa_layout_peak(&t, off), 25);
  pa_trace_free(&t);
}

static void random_trace(pa_trace_t *t, size_t n, int64_t horizon, bool extras) {
  pa_trace_init(t);
  for (size_t i = 0; i < n; i++) {
    int64_t lo = (int64_t)rnd((uint64_t)horizon), len = 1 + (int64_t)rnd((uint64_t)horizon / 2 + 1);
    pa_span_t sp[3] = {{lo, lo + len}};
    uint32_t ns = 1;
    if (extras && len >= 4 && rnd(4) == 0) { /* a gap in the middle */
      int64_t a = lo + 1 + (int64_t)rnd((uint64_t)len - 3);
      sp[0] = (pa_span_t){lo, a}, sp[1] = (pa_span_t){a + 1 + (int64_t)rnd((uint64_t)(lo + len - a - 1)), lo + len};
      ns = sp[1].lower < sp[1].upper ? 2 : 1;
    }
    int64_t align = extras && rnd(3) == 0 ? (int64_t)1 << rnd(4) : 1;
    int rc = pa_trace_add(t, NULL, 1 + (int64_t)rnd(64), align, PA_NO_OFFSET, sp, ns);
    CHECK_EQ_I64(rc, PA_OK);
  }
}

static const char *const heuristic_names[] = {
    "megengine", "size-best", "size-lowest", "duration-best", "duration-lowest", "area-best",
    "area-lowest", "start-best", "start-lowest", "skyline", "skyline-area", "skyline-size"};

static void check_properties(const pa_trace_t *t, int64_t *off) {
  int64_t maxlive = pa_trace_maxlive(t), best = plan_with("best", t, off, NULL);
  CHECK(best >= maxlive);
  for (size_t h = 0; h < sizeof heuristic_names / sizeof *heuristic_names; h++) {
    int rc;
    int64_t peak = plan_with(heuristic_names[h], t, off, &rc);
    if (rc == PA_EUNSUPPORTED) continue;
    CHECK_EQ_I64(rc, PA_OK); /* pa_plan validated the layout */
    CHECK(peak >= maxlive);
    if (best > peak) fprintf(stderr, "best %lld > %s %lld\n", (long long)best, heuristic_names[h], (long long)peak);
    CHECK(best <= peak);
  }
}

/* Fixes a random third of the buffers where a valid layout put them. */
static void fix_some(pa_trace_t *t, const int64_t *off) {
  for (size_t i = 0; i < t->n; i++)
    if (rnd(3) == 0) t->bufs[i].fixed = off[i];
}

static void test_random_properties(void) {
  int64_t off[80];
  for (int round = 0; round < 300; round++) {
    pa_trace_t t;
    random_trace(&t, 1 + rnd(60), 4 + (int64_t)rnd(60), round % 2);
    check_properties(&t, off);
    if (round % 3 == 0) {
      plan_with("size-best", &t, off, NULL);
      fix_some(&t, off);
      check_properties(&t, off);
    }
    pa_trace_free(&t);
  }
}

/* The placed buffers' top (the fixed ones may lie above). */
static int64_t placed_top(const pa_trace_t *t, const int64_t *off) {
  int64_t top = 0;
  for (size_t i = 0; i < t->n; i++)
    if (t->bufs[i].fixed == PA_NO_OFFSET && off[i] + t->bufs[i].size > top) top = off[i] + t->bufs[i].size;
  return top;
}

/* The lowest placed top of every greedy order and fit, its order and fit. */
static int64_t best_greedy(const pa_trace_t *t, uint32_t *won, pa_fit_t *fit) {
  uint32_t order[80];
  int64_t off[80], best = INT64_MAX;
  for (int k = 0; k < PA_ORDER_COUNT * PA_FIT_COUNT; k++) {
    CHECK_EQ_I64(pa_order_make(t, (pa_order_t)(k / PA_FIT_COUNT), order), PA_OK);
    CHECK_EQ_I64(pa_greedy_ordered(t, order, (pa_fit_t)(k % PA_FIT_COUNT), off), PA_OK);
    if (placed_top(t, off) >= best) continue;
    best = placed_top(t, off), *fit = (pa_fit_t)(k % PA_FIT_COUNT);
    memcpy(won, order, t->n * sizeof *order);
  }
  return best;
}

/* Around a buffer fixed at [3, 5) the best greedy order ends at 11; the polish moves a
 * top buffer earlier and ends at 9 (max-live 8: a, b and e at 8). */
static void test_polish(void) {
  pa_trace_t t;
  load("id,lower,upper,size,offset\na,0,9,2,3\nb,5,9,2,\nc,3,7,1,\nd,1,8,3,\ne,8,9,4,\n", &t);
  uint32_t order[5];
  int64_t off[5], peak;
  pa_fit_t fit = PA_FIT_LOWEST;
  char err[256];
  CHECK_EQ_I64(best_greedy(&t, order, &fit), 11);
  CHECK_EQ_I64(pa_greedy_polish(&t, order, fit, 100, 100, 0, off), PA_OK);
  CHECK_EQ_I64(pa_validate(&t, off, &peak, err, sizeof err), PA_OK);
  CHECK_EQ_I64(placed_top(&t, off), 9);
  CHECK_EQ_I64(off[0], 3);
  CHECK_EQ_I64(plan_with("polish", &t, off, NULL), 9);
  pa_trace_free(&t);
}

/* On random traces, a third of them with a third of the buffers fixed: the polished
 * layout is valid, keeps the fixed offsets, and ends no higher than the order it started
 * from; with no tries, or a deadline passed, it is that order's layout. */
static void test_polish_random(void) {
  uint32_t order[80];
  int64_t off[80], peak;
  char err[256];
  for (int round = 0; round < 300; round++) {
    pa_trace_t t;
    random_trace(&t, 1 + rnd(60), 4 + (int64_t)rnd(60), round % 2);
    if (round % 3 == 0) plan_with("size-best", &t, off, NULL), fix_some(&t, off);
    pa_fit_t fit = PA_FIT_LOWEST;
    int64_t greedy = best_greedy(&t, order, &fit);
    CHECK_EQ_I64(pa_greedy_polish(&t, order, fit, round % 4 ? 64 : 0, 16, round % 8 == 1 ? pa_now() - 1 : 0, off), PA_OK);
    CHECK_EQ_I64(pa_validate(&t, off, &peak, err, sizeof err), PA_OK);
    if (round % 4 && round % 8 != 1) CHECK(placed_top(&t, off) <= greedy);
    else CHECK_EQ_I64(placed_top(&t, off), greedy); /* no tries, or past its deadline */
    for (size_t i = 0; i < t.n; i++)
      if (t.bufs[i].fixed != PA_NO_OFFSET) CHECK_EQ_I64(off[i], t.bufs[i].fixed);
    pa_trace_free(&t);
  }
}

/* Settling: c fixed at 0 meets a over [5,10) and moves it above b (the gap [2,4) below is
 * too small); b, which c does not meet, stays. */
static void test_settle(void) {
  pa_trace_t t;
  load("id,lower,upper,size\na,0,10,4\nb,0,10,4\nc,5,10,2\n", &t);
  int64_t was[3] = {0, 4, 8}, off[3];
  size_t moved = 0;
  t.bufs[2].fixed = 0;
  CHECK_EQ_I64(pa_greedy_settle(&t, was, off, &moved), PA_OK);
  CHECK_EQ_I64((int64_t)moved, 1);
  CHECK_EQ_I64(off[0], 8);
  CHECK_EQ_I64(off[1], 4);
  CHECK_EQ_I64(off[2], 0);
  pa_trace_free(&t);
}

/* A valid layout with some buffers fixed where a second valid layout has them: the
 * settled layout is valid and keeps them there; without any fixed, nothing moves. */
static void test_settle_random(void) {
  int64_t was[80], other[80], off[80], peak;
  char err[256];
  for (int round = 0; round < 300; round++) {
    pa_trace_t t;
    random_trace(&t, 1 + rnd(60), 4 + (int64_t)rnd(60), round % 2);
    plan_with("size-lowest", &t, was, NULL);
    plan_with(round % 3 ? "size-best" : "start-best", &t, other, NULL);
    size_t moved = 0, fixed = 0;
    if (round % 5) fix_some(&t, other);
    CHECK_EQ_I64(pa_greedy_settle(&t, was, off, &moved), PA_OK);
    CHECK_EQ_I64(pa_validate(&t, off, &peak, err, sizeof err), PA_OK);
    for (size_t i = 0; i < t.n; i++) {
      fixed += t.bufs[i].fixed != PA_NO_OFFSET;
      if (t.bufs[i].fixed != PA_NO_OFFSET) CHECK_EQ_I64(off[i], t.bufs[i].fixed);
    }
    if (!fixed) CHECK_EQ_I64((int64_t)moved, 0);
    pa_trace_free(&t);
  }
}

/* The canonical greedy by its definition, in O(n^2): the unplaced buffer that would sit
 * lowest on the buffers placed so far goes next, ties by rank. */
static bool overlap(const pa_trace_t *t, uint32_t a, uint32_t b) {
  const pa_buf_t *x = &t->bufs[a], *y = &t->bufs[b];
  for (uint32_t i = 0; i < x->nspans; i++)
    for (uint32_t j = 0; j < y->nspans; j++) {
      const pa_span_t *p = &t->spans[x->span0 + i], *q = &t->spans[y->span0 + j];
      if (p->lower < q->upper && q->lower < p->upper) return true;
    }
  return false;
}

static void reference_skyline(const pa_trace_t *t, const uint32_t *order, int64_t *off) {
  for (size_t i = 0; i < t->n; i++) off[i] = t->bufs[i].fixed;
  for (;;) {
    int64_t best_at = INT64_MAX;
    uint32_t best = UINT32_MAX;
    for (size_t k = 0; k < t->n; k++) {
      uint32_t b = order[k];
      if (off[b] != PA_NO_OFFSET) continue;
      int64_t at = 0;
      for (size_t j = 0; j < t->n; j++)
        if (off[j] != PA_NO_OFFSET && overlap(t, b, (uint32_t)j) && off[j] + t->bufs[j].size > at)
          at = off[j] + t->bufs[j].size;
      at = pa_align_up(at, t->bufs[b].align);
      if (at < best_at) best_at = at, best = b;
    }
    if (best == UINT32_MAX) return;
    off[best] = best_at;
  }
}

/* The skyline's shortcuts (lazy re-checks, one heap entry per stack of buffers over the
 * same interval) must not change its result: many buffers here share an interval. */
static void test_skyline_reference(void) {
  int64_t off[120], ref[120];
  uint32_t order[120];
  for (int round = 0; round < 200; round++) {
    pa_trace_t t;
    pa_trace_init(&t);
    size_t n = 2 + rnd(118);
    int64_t horizon = 2 + (int64_t)rnd(20);
    for (size_t i = 0; i < n; i++) {
      int64_t lo = (int64_t)rnd((uint64_t)horizon), len = 1 + (int64_t)rnd(rnd(2) ? 2 : (uint64_t)horizon);
      pa_span_t sp[2] = {{lo, lo + len}, {lo + len + 1, lo + len + 3}};
      int64_t align = rnd(4) == 0 ? 4 : 1;
      CHECK_EQ_I64(pa_trace_add(&t, NULL, 1 + (int64_t)rnd(9), align, rnd(30) ? PA_NO_OFFSET : 1000 + 12 * (int64_t)i, sp, rnd(8) ? 1 : 2), PA_OK);
    }
    for (uint32_t i = 0; i < n; i++) order[i] = i;
    for (uint32_t i = (uint32_t)n - 1; i > 0; i--) {
      uint32_t j = (uint32_t)rnd(i + 1), tmp = order[i];
      order[i] = order[j], order[j] = tmp;
    }
    reference_skyline(&t, order, ref);
    CHECK_EQ_I64(pa_skyline_ordered(&t, order, NULL, off), PA_OK);
    for (size_t i = 0; i < n; i++) CHECK_EQ_I64(off[i], ref[i]);
    pa_trace_free(&t);
  }
}

/* The optimum of a tiny trace: placing buffers in the order of their offsets in an
 * optimal layout, each at its lowest fitting offset, reproduces the optimum, so the
 * minimum over all orders with lowest fit is exact. */
static int64_t brute_force(const pa_trace_t *t, uint32_t *perm, size_t k, int64_t *off) {
  if (k == t->n) {
    pa_greedy_ordered(t, perm, PA_FIT_LOWEST, off);
    return pa_layout_peak(t, off);
  }
  int64_t best = INT64_MAX;
  for (size_t i = k; i < t->n; i++) {
    uint32_t tmp = perm[k];
    perm[k] = perm[i], perm[i] = tmp;
    int64_t v = brute_force(t, perm, k + 1, off);
    if (v < best) best = v;
    perm[i] = perm[k], perm[k] = tmp;
  }
  return best;
}

static void test_search_exact(void) {
  int64_t off[8];
  uint32_t perm[8];
  for (int round = 0; round < 150; round++) {
    pa_trace_t t;
    random_trace(&t, 2 + rnd(6), 3 + (int64_t)rnd(12), round % 2);
    for (uint32_t i = 0; i < t.n; i++) perm[i] = i;
    int64_t opt = brute_force(&t, perm, 0, off);
    pa_search_t *s = pa_search_new(&t, 1 << 20);
    CHECK(s != NULL);
    if (!s) continue;
    char err[256];
    CHECK_EQ_I64(pa_search_solve(s, opt, pa_now() + 5, off), PA_OK);
    CHECK_EQ_I64(pa_validate(&t, off, NULL, err, sizeof err), PA_OK);
    CHECK(pa_layout_peak(&t, off) <= opt);
    CHECK_EQ_I64(pa_search_solve(s, opt - 1, pa_now() + 5, off), PA_EINPUT);
    pa_search_free(s);
    CHECK_EQ_I64(plan_with("best", &t, off, NULL), opt);
    pa_trace_free(&t);
  }
}

/* The lowest of the skylines the repair runs: fixed buffers (its pins) in the skyline. */
static int64_t best_skyline(const pa_trace_t *t, int64_t *off) {
  int64_t best = INT64_MAX;
  const pa_order_t orders[] = {PA_ORDER_AREA, PA_ORDER_TOTAL, PA_ORDER_SIZE};
  uint32_t order[80];
  for (size_t k = 0; k < 3; k++) {
    CHECK_EQ_I64(pa_order_make(t, orders[k], order), PA_OK);
    CHECK_EQ_I64(pa_skyline_ordered(t, order, NULL, off), PA_OK);
    int64_t p = pa_layout_peak(t, off);
    if (p < best) best = p;
  }
  return best;
}

/* pangu_2.6B's overflow in four buffers: every skyline stacks the big long buffer d where
 * b died and puts c, born just before d, on top of everything (33); the repair pins c
 * where b was and lifts d over it (32, max-live). */
static void test_repair(void) {
  pa_trace_t t;
  load("id,lower,upper,size\na,4,9,16\nb,6,10,16\nc,9,16,1\nd,10,20,20\n", &t);
  int64_t off[4], peak;
  char err[256];
  CHECK_EQ_I64(best_skyline(&t, off), 33);
  CHECK_EQ_I64(pa_repair(&t, pa_trace_bound(&t), pa_trace_bound(&t), pa_now() + 5, NULL, off), PA_OK);
  CHECK_EQ_I64(pa_validate(&t, off, &peak, err, sizeof err), PA_OK);
  CHECK_EQ_I64(peak, 32);
  CHECK_EQ_I64(off[2], 0);
  CHECK_EQ_I64(off[3], 1);
  for (size_t i = 0; i < t.n; i++) CHECK_EQ_I64(t.bufs[i].fixed, PA_NO_OFFSET); /* pins are its own */
  pa_trace_free(&t);
  /* never worse than the skylines, never moves a fixed buffer, always valid */
  int64_t roff[80], soff[80];
  for (int round = 0; round < 200; round++) {
    random_trace(&t, 1 + rnd(60), 4 + (int64_t)rnd(60), round % 2);
    if (round % 3 == 0) plan_with("size-best", &t, roff, NULL), fix_some(&t, roff);
    int64_t sky = best_skyline(&t, soff);
    CHECK_EQ_I64(pa_repair(&t, pa_trace_bound(&t), pa_trace_bound(&t), pa_now() + 0.05, NULL, roff), PA_OK);
    CHECK_EQ_I64(pa_validate(&t, roff, &peak, err, sizeof err), PA_OK);
    CHECK(peak <= sky && peak >= pa_trace_maxlive(&t));
    pa_trace_free(&t);
  }
}

static int64_t peak_stack_top(const pa_trace_t *t, const int64_t *off, int64_t *sum) {
  int64_t when = pa_trace_peak_time(t), top = 0;
  *sum = 0;
  for (size_t i = 0; i < t->n; i++) {
    const pa_span_t *s = pa_buf_spans(t, &t->bufs[i]);
    for (uint32_t k = 0; k < t->bufs[i].nspans; k++)
      if (s[k].lower <= when && when < s[k].upper) {
        *sum += t->bufs[i].size;
        if (off[i] + t->bufs[i].size > top) top = off[i] + t->bufs[i].size;
      }
  }
  return top;
}

/* A hole at the peak (c lifted 2 over a): stacking a, c, b tight there and laying d and e
 * out around them reaches max-live; the order at the peak is the layout's. */
static void test_peak_tile(void) {
  pa_trace_t t;
  char err[256];
  int64_t peak, sum, off[5];
  load("id,lower,upper,size\na,0,10,10\nb,5,6,5\nc,2,8,3\nd,0,2,7\ne,8,10,8\n", &t);
  int64_t holey[5] = {0, 15, 12, 10, 10}, b_under_c[5] = {0, 10, 15, 10, 10};
  CHECK_EQ_I64(pa_validate(&t, holey, &peak, err, sizeof err), PA_OK);
  CHECK_EQ_I64(peak, 20);
  CHECK_EQ_I64(pa_trace_peak_time(&t), 5);
  CHECK_EQ_I64(pa_peak_tile(&t, holey, 18, pa_now() + 5, off), PA_OK);
  CHECK_EQ_I64(pa_validate(&t, off, &peak, err, sizeof err), PA_OK);
  CHECK_EQ_I64(peak, 18);
  CHECK_EQ_I64(off[0], 0);
  CHECK_EQ_I64(off[2], 10);
  CHECK_EQ_I64(off[1], 13);
  CHECK_EQ_I64(pa_peak_tile(&t, b_under_c, 18, pa_now() + 5, off), PA_OK);
  CHECK_EQ_I64(off[1], 10);
  CHECK_EQ_I64(off[2], 15);
  CHECK_EQ_I64(pa_peak_tile(&t, holey, 18, pa_now() - 1, off), PA_ETIMEOUT);
  t.bufs[2].fixed = 12; /* the caller's pin at the peak is not the tiling's to move */
  CHECK_EQ_I64(pa_peak_tile(&t, holey, 18, pa_now() + 5, off), PA_EUNSUPPORTED);
  pa_trace_free(&t);
  /* random traces: valid, fixed offsets kept, the peak's buffers stacked without holes */
  int64_t start[80], tiled[80];
  for (int round = 0; round < 200; round++) {
    random_trace(&t, 1 + rnd(60), 4 + (int64_t)rnd(60), false);
    plan_with("size-best", &t, start, NULL);
    if (round % 3 == 0) fix_some(&t, start);
    int rc = pa_peak_tile(&t, start, 0, pa_now() + 5, tiled);
    if (rc == PA_EUNSUPPORTED) {
      CHECK(pa_trace_has_fixed(&t));
    } else {
      CHECK_EQ_I64(rc, PA_OK);
      CHECK_EQ_I64(pa_validate(&t, tiled, &peak, err, sizeof err), PA_OK);
      CHECK(peak >= pa_trace_maxlive(&t));
      CHECK_EQ_I64(peak_stack_top(&t, tiled, &sum), sum);
    }
    pa_trace_free(&t);
  }
}

static int64_t spanned(int64_t at, int64_t size, int64_t page) { return (at + size + page - 1) / page - at / page; }

/* Three 8-byte buffers stacked at 2, 10, 18 with pages of 8: each spans two pages. Up to
 * 32 they all move up a page start (the top one first, making room for the next); with
 * 28 above them the top one cannot, so they all move down instead. Placed at 6, they are
 * on page starts already. */
static void test_snap_stack(void) {
  pa_trace_t t;
  load("id,lower,upper,size\na,0,9,8\nb,0,9,8\nc,0,9,8\n", &t);
  int64_t off[3] = {2, 10, 18}, out[3];
  pa_snap_room_t *r = pa_snap_room_new(&t, off, 32);
  CHECK(r != NULL);
  CHECK_EQ_I64(pa_snap(r, &t, off, 8, 0, out), 3);
  CHECK_EQ_I64(out[0], 8);
  CHECK_EQ_I64(out[1], 16);
  CHECK_EQ_I64(out[2], 24);
  CHECK_EQ_I64(pa_snap(r, &t, off, 8, 6, out), 0);
  CHECK_EQ_I64(out[0], 2);
  CHECK_EQ_I64(out[2], 18);
  CHECK_EQ_I64(pa_snap(r, &t, off, 64, 0, out), 0); /* smaller than a page: stays */
  CHECK_EQ_I64(out[1], 10);
  pa_snap_room_free(r);
  r = pa_snap_room_new(&t, off, 28);
  CHECK_EQ_I64(pa_snap(r, &t, off, 8, 0, out), 3);
  CHECK_EQ_I64(out[0], 0);
  CHECK_EQ_I64(out[1], 8);
  CHECK_EQ_I64(out[2], 16);
  t.bufs[0].fixed = 2; /* a fixed buffer stays, and holds the others up */
  CHECK_EQ_I64(pa_snap(r, &t, off, 8, 0, out), 0);
  CHECK_EQ_I64(out[0], 2);
  CHECK_EQ_I64(out[1], 10);
  pa_snap_room_free(r);
  pa_trace_free(&t);
}

/* Random traces and layouts, placed anywhere: the snapped layout is valid within the
 * layout's own peak, no buffer spans more pages, what moved is a page or more and not
 * fixed, and the pages saved are what the call says. */
static void test_snap_random(void) {
  int64_t off[80], out[80], peak;
  char err[256];
  size_t moved_rounds = 0;
  for (int round = 0; round < 400; round++) {
    pa_trace_t t;
    random_trace(&t, 1 + rnd(60), 4 + (int64_t)rnd(60), round % 2);
    int64_t limit = plan_with(round % 4 ? "size-best" : "start-lowest", &t, off, NULL);
    if (round % 3 == 0) fix_some(&t, off);
    int64_t page = 8 << rnd(3), base = (int64_t)rnd(64);
    pa_snap_room_t *r = pa_snap_room_new(&t, off, limit + (int64_t)rnd(3) * page);
    CHECK(r != NULL);
    if (!r) break;
    int64_t saved = (int64_t)pa_snap(r, &t, off, page, base, out), counted = 0;
    CHECK_EQ_I64(pa_validate(&t, out, &peak, err, sizeof err), PA_OK);
    for (size_t k = 0; k < t.n; k++) {
      int64_t was = spanned(base + off[k], t.bufs[k].size, page), now = spanned(base + out[k], t.bufs[k].size, page);
      CHECK(now <= was);
      if (out[k] != off[k]) CHECK(t.bufs[k].size >= page && t.bufs[k].fixed == PA_NO_OFFSET && now < was);
      counted += was - now;
    }
    CHECK_EQ_I64(saved, counted);
    moved_rounds += saved > 0;
    pa_snap_room_free(r);
    pa_trace_free(&t);
  }
  CHECK(moved_rounds > 40); /* the random layouts give it something to do */
}

int main(void) {
  test_validator();
  test_input12();
  test_huge_area();
  test_quick_cheap();
  test_truncate();
  test_chain();
  test_gaps();
  test_fixed();
  test_online();
  test_fit_rules();
  test_skyline();
  test_skyline_around();
  test_skyline_reference();
  test_random_properties();
  test_settle();
  test_polish();
  test_polish_random();
  test_settle_random();
  test_search_exact();
  test_repair();
  test_peak_tile();
  test_snap_stack();
  test_snap_random();
  return test_report("test_plan");
}
