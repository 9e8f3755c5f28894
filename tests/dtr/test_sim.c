/* The DTR log reader and the budget simulator on a six-op log whose every figure is
 * worked out by hand (tests/dtr/tiny.log): storages, views and copies, peak, the victim
 * each policy picks, bytes moved, the modelled time, OOMs; and a malformed log. Then the
 * swap schedule on a ten-op trace built in code, also worked out by hand; the shared
 * victim choice (policy.c); the served phase's schedule over a cycle (served.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../harness.h"
#include "dtr.h"

static pa_sim_result_t run_lat(const pa_atrace_t *t, pa_policy_t p, uint64_t budget, double latency) {
  pa_sim_opts_t o = {.budget = budget, .bytes_per_ns = 1, .latency_ns = latency, .policy = p};
  pa_sim_result_t r;
  CHECK(pa_simulate(t, &o, &r) == 0);
  return r;
}

static pa_sim_result_t run(const pa_atrace_t *t, pa_policy_t p, uint64_t budget) { return run_lat(t, p, budget, 0); }

/* Ten ops of 1 us. P (1000 B, a parameter) is used by ops 0 and 9, Q (500 B) by every op,
 * Y (100 B) lives through op 1 only, X (1000 B) through op 5 only: op 5 holds 2500 B. */
static void ten_ops(pa_atrace_t *t, uint32_t *p) {
  pa_atrace_init(t);
  *p = pa_atrace_buffer(t, 1000, true);
  uint32_t q = pa_atrace_buffer(t, 500, true), y = 0, x = 0;
  for (uint32_t op = 0; op < 10; op++) {
    if (op == 1) y = pa_atrace_buffer(t, 100, false);
    if (op == 5) x = pa_atrace_buffer(t, 1000, false);
    CHECK(pa_atrace_op(t, 1000) == 0);
    CHECK(pa_atrace_touch(t, q) == 0);
    if (op == 0 || op == 9) CHECK(pa_atrace_touch(t, *p) == 0);
    if (op == 1 || op == 5) {
      CHECK(pa_atrace_touch(t, op == 1 ? y : x) == 0);
      pa_atrace_release(t, op == 1 ? y : x);
    }
  }
}

/* The swap schedule: op 5 is 500 B over a 2000 B budget; P's idle stretch between ops 0
 * and 9 is the only one that covers it. At 1 B/ns its copy-out after op 0 is done by
 * 2 us (op 2 on), its restore must start by 8 us (op 8): P leaves after op 0 and is
 * issued back as op 8 starts. Replayed, nothing waits: not Y's allocation at op 1 for
 * P's copy-out still running (there is room beside it), not op 9 for P (back by 9 us);
 * LRU takes P at op 5 and brings it back when op 9 is due. */
static void swap_schedule(void) {
  pa_atrace_t t;
  uint32_t p;
  ten_ops(&t, &p);
  CHECK_EQ_I64(pa_atrace_peak(&t), 2500);
  pa_swap_t *w;
  size_t n;
  CHECK(pa_swap_plan(&t, 2000, 1, 0, 0, &w, &n) == 0);
  CHECK_EQ_I64(n, 1);
  CHECK_EQ_I64(w[0].buf, p);
  CHECK_EQ_I64(w[0].out_after, 0);
  CHECK_EQ_I64(w[0].back_at, 8);
  free(w);
  CHECK(pa_swap_plan(&t, 2500, 1, 0, 0, &w, &n) == 0); /* the peak fits: no swap */
  CHECK_EQ_I64(n, 0);
  free(w);
  /* P's memory serves others from op 2 (its copy out done) however far the host leads;
   * the host sees that copy done lead_ns later, and only then may it issue P's restore:
   * 6 us ahead, from op 8, just in time; 7 us ahead, from op 9: too late, no swap */
  CHECK(pa_swap_plan(&t, 2000, 1, 0, 6000, &w, &n) == 0);
  CHECK_EQ_I64(n, 1);
  CHECK_EQ_I64(w[0].lo, 2);
  CHECK_EQ_I64(w[0].hi, 7);
  CHECK_EQ_I64(w[0].back_at, 8);
  free(w);
  CHECK(pa_swap_plan(&t, 2000, 1, 0, 7000, &w, &n) == 0);
  CHECK_EQ_I64(n, 0);
  free(w);
  pa_sim_result_t r = run(&t, PA_POL_PLANNED, 2000);
  CHECK_EQ_I64(r.bytes_out, 1000);
  CHECK_EQ_I64(r.bytes_in, 1000);
  CHECK(r.total_ns == 10000);
  r = run(&t, PA_POL_LRU, 2000);
  CHECK_EQ_I64(r.bytes_out, 1000);
  CHECK(r.total_ns == 11000);
  pa_atrace_free(&t);
}

/* Candidate scores for pa_victim_pick: sizes[i] bytes, score[i] (INFINITY: not one). */
typedef struct cands_s {
  const double *score, *size;
} cands_t;

static double cand_score(void *ctx, size_t i, double min_size) {
  const cands_t *c = ctx;
  return c->size[i] < min_size ? INFINITY : c->score[i];
}

/* The shared victim choice (dtr/policy.c): DTR's score, Belady's, and the pick's passes. */
static void victim_policy(void) {
  pa_victim_t v = {.cost = 1000, .gain = 500, .idle = 3, .evictions = 0};
  CHECK(pa_dtr_score(&v, 0.1) == 0.5); /* 1000 / (500 x 4) */
  v.evictions = 2;
  CHECK(fabs(pa_dtr_score(&v, 0.1) - 0.6) < 1e-12); /* each earlier eviction +10 % */
  v.gain = 1000; /* whole pages freed: twice the gain, half the score */
  CHECK(fabs(pa_dtr_score(&v, 0.1) - 0.3) < 1e-12);
  CHECK(pa_belady_score(1000, 500, 9) == 0.2); /* used again 9 ahead: 1000 / (500 x 10) */
  CHECK(pa_belady_score(1000, 500, 0) > pa_belady_score(1000, 500, 1));

  double score[100], size[100];
  cands_t c = {score, size};
  for (int i = 0; i < 3; i++) size[i] = 1000;
  score[0] = 5, score[1] = 2, score[2] = INFINITY;
  CHECK_EQ_I64(pa_victim_pick(3, 1000, NULL, cand_score, &c), 1);
  score[1] = INFINITY, score[0] = INFINITY;
  CHECK(pa_victim_pick(3, 1000, NULL, cand_score, &c) == SIZE_MAX); /* none can go */
  CHECK(pa_victim_pick(0, 0, NULL, cand_score, &c) == SIZE_MAX);
  /* under 1 % of the mean: passed over while a larger one can go, taken when none can */
  score[0] = 1, size[0] = 1000, score[1] = 0.5, size[1] = 1;
  CHECK_EQ_I64(pa_victim_pick(2, 500.5, NULL, cand_score, &c), 0);
  score[0] = INFINITY;
  CHECK_EQ_I64(pa_victim_pick(2, 500.5, NULL, cand_score, &c), 1);
  /* sampled (over 64): a sample that draws none of the candidates falls back to all */
  for (int i = 0; i < 100; i++) score[i] = INFINITY, size[i] = 1000;
  score[77] = 3;
  uint64_t rng = 0x2545f4914f6cdd1dull;
  CHECK_EQ_I64(pa_victim_pick(100, 1000, &rng, cand_score, &c), 77);
  /* all can go (the higher the index, the better): the best of 32 draws, max(32, sqrt(100)),
   * by the same xorshift the preload's budget uses */
  for (int i = 0; i < 100; i++) score[i] = 100 - i;
  uint64_t r = rng;
  size_t want = 0;
  for (int d = 0; d < 32; d++) {
    r ^= r << 13, r ^= r >> 7, r ^= r << 17;
    if (r % 100 > want) want = r % 100;
  }
  CHECK_EQ_I64(pa_victim_pick(100, 1000, &rng, cand_score, &c), want);
  CHECK(want < 99); /* with this seed a sample, not every candidate (99 is the best of all) */
}

/* Whether position q of plan p copies out (out) or brings back buffer x. */
static bool swaps_at(const pa_cycle_plan_t *p, uint32_t q, uint32_t x, bool out) {
  const uint32_t *at = out ? p->out_at : p->back_at, *ids = out ? p->outs : p->backs;
  for (uint32_t k = at[q]; k < at[q + 1]; k++)
    if (ids[k] == x) return true;
  return false;
}

static size_t swaps_total(const pa_cycle_plan_t *p, bool out) { return (out ? p->out_at : p->back_at)[p->nop]; }

/* The served phase's schedule over a cycle (served.c). The ten ops above as a turn of the
 * cycle: the same single swap, P out after op 0 and back as op 8 is issued. Then a slot
 * wrapped round the period's end and a buffer whose next use is in the next period. */
static void cycle_schedule(void) {
  uint64_t size[] = {100, 1000, 1000, 500}; /* slots Y, X; P and Q live throughout */
  uint32_t born[] = {1, 5}, gone[] = {2, 6}, first[11], used[40], n = 0;
  for (uint32_t q = 0; q < 10; q++) {
    first[q] = n, used[n++] = 3;
    if (q == 0 || q == 9) used[n++] = 2;
    if (q == 1 || q == 5) used[n++] = q == 1 ? 0 : 1;
  }
  first[10] = n;
  pa_cycle_t c = {.nop = 10, .nbuf = 4, .nslots = 2, .size = size, .born = born, .gone = gone, .op_first = first, .used = used,
                  .ns = 1000};
  pa_cycle_plan_t p;
  CHECK(pa_cycle_plan(&c, 2000, 1, 0, &p) == 0);
  CHECK_EQ_I64(p.nswaps, 1);
  CHECK(swaps_at(&p, 0, 2, true) && swaps_at(&p, 8, 2, false));
  pa_cycle_plan_free(&p);
  CHECK(pa_cycle_plan(&c, 2500, 1, 0, &p) == 0); /* the peak fits */
  CHECK_EQ_I64(p.nswaps + swaps_total(&p, true), 0);
  pa_cycle_plan_free(&p);
  /* a host 8 us ahead would see P's copy out (done at 2 us) only at op 10, after P is due
   * back: op 5 stays over period after period; held to 4 us, P comes back at 8 again */
  c.lead_ns = 8000;
  CHECK(pa_cycle_plan(&c, 2000, 1, 0, &p) == 0);
  CHECK(p.lead_ns == 4000);
  CHECK_EQ_I64(p.over, 0);
  CHECK(swaps_at(&p, 0, 2, true) && swaps_at(&p, 8, 2, false));
  pa_cycle_plan_free(&p);
  CHECK(pa_cycle_plan(&c, 2500, 1, 0, &p) == 0); /* nothing to move: the lead stays */
  CHECK(p.lead_ns == 8000 && p.over == 0);
  pa_cycle_plan_free(&p);
  CHECK(pa_cycle_plan(&c, 1400, 1, 0, &p) == 0); /* Q (500) and P's 1000 fit nowhere under 1400 */
  CHECK(p.over > 0);
  pa_cycle_plan_free(&p);
  c.lead_ns = 0;
  /* P pinned (a buffer on its page never seen touched): the only swap that helped is
   * gone, and nothing else is sent out in its place that cannot relieve the peak */
  uint8_t pinned[] = {0, 0, 1, 0};
  c.pinned = pinned;
  CHECK(pa_cycle_plan(&c, 2000, 1, 0, &p) == 0);
  for (uint32_t q = 0; q < 10; q++) CHECK(!swaps_at(&p, q, 2, true) && !swaps_at(&p, q, 2, false));
  pa_cycle_plan_free(&p);
  c.pinned = NULL;
  /* six ops of 1 us at 1 B/ns, 1000 B each: slot W lives [3, 6) and [0, 2), used at 3 and
   * 1; G throughout, used at 5. At 1000 B only one fits: W leaves after 3 and is back for
   * the next period's 1 (issued at 0: 6 mod 6); G leaves after its use at 5 and comes back
   * for the next period's 5, issued at 4. */
  uint64_t s2[] = {1000, 1000};
  uint32_t b2[] = {3}, g2[] = {2}, f2[] = {0, 0, 1, 1, 2, 2, 3}, u2[] = {0, 0, 1};
  pa_cycle_t w = {.nop = 6, .nbuf = 2, .nslots = 1, .size = s2, .born = b2, .gone = g2, .op_first = f2, .used = u2,
                  .ns = 1000};
  CHECK(pa_cycle_plan(&w, 1000, 1, 0, &p) == 0);
  CHECK(swaps_at(&p, 3, 0, true) && swaps_at(&p, 0, 0, false));
  CHECK(swaps_at(&p, 5, 1, true) && swaps_at(&p, 4, 1, false));
  CHECK(!swaps_at(&p, 3, 1, true) && !swaps_at(&p, 5, 0, true)); /* nothing leaves in use */
  pa_cycle_plan_free(&p);
  /* slots S and T, 1000 B each, live [2, 4) and busy there; G, 1000 B, used at 5 only.
   * Under 1000 B, positions 2 and 3 are over every period, G gone or not. The first
   * turn's G also leaves after position 0 (the trace's start, no use): period after
   * period that stretch is the previous period's, counted once */
  uint64_t s3[] = {1000, 1000, 1000};
  uint32_t b3[] = {2, 2}, g3[] = {4, 4}, f3[] = {0, 0, 0, 2, 4, 4, 5}, u3[] = {0, 1, 0, 1, 2};
  pa_cycle_t v = {.nop = 6, .nbuf = 3, .nslots = 2, .size = s3, .born = b3, .gone = g3, .op_first = f3, .used = u3,
                  .ns = 1000};
  CHECK(pa_cycle_plan(&v, 1000, 1, 0, &p) == 0);
  CHECK_EQ_I64(p.over, 2);
  CHECK(swaps_at(&p, 5, 2, true));
  pa_cycle_plan_free(&p);
}

/* A cycle dump (preload/pageplan.c's cycle.csv) read back: text into a temp file, read. */
static int read_text(const char *text, pa_cycle_file_t *f, char *err, size_t len) {
  char path[] = "/tmp/planalloc-cycle-XXXXXX";
  int fd = mkstemp(path);
  FILE *out = fd >= 0 ? fdopen(fd, "w") : NULL;
  CHECK(out != NULL);
  if (!out) return -2;
  fputs(text, out);
  fclose(out);
  int rc = pa_cycle_read(path, f, err, len);
  unlink(path);
  return rc;
}

#define CYCLE_HEAD "# planalloc cycle 1\nlaunches,6,page,1000,budget,1000,kernel_ns,1000,link_bytes_per_ns,1,latency_ns,0\n"

/* The second turn of cycle_schedule as a dump: slot W (wrapping) and G (whole), one
 * page each. Planned again, the same two swaps; replayed, each goes out and back once a
 * turn, and no launch finds its page away. Hostile files: an error with the line, nothing
 * kept. */
static void cycle_dump(void) {
  pa_cycle_file_t f;
  pa_cycle_plan_t p;
  pa_cycle_replay_t r;
  char err[256];
  CHECK(read_text(CYCLE_HEAD "i,7,3,2,1,0\ni,9,0,0,0,0\nu,1,0\nu,3,0\nu,5,1\n", &f, err, sizeof err) == 0);
  CHECK(f.c.lead_ns == 0); /* a dump from before the lead: planned for none */
  CHECK_EQ_I64(f.c.nbuf, 2);
  CHECK_EQ_I64(f.c.nslots, 1);
  CHECK_EQ_I64(f.page_of[1], 9);
  CHECK(pa_cycle_plan(&f.c, f.budget, f.bytes_per_ns, f.latency_ns, &p) == 0);
  CHECK(swaps_at(&p, 3, 0, true) && swaps_at(&p, 0, 0, false));
  CHECK(swaps_at(&p, 5, 1, true) && swaps_at(&p, 4, 1, false));
  CHECK(pa_cycle_replay(&f, &p, 4, &r) == 0);
  CHECK_EQ_I64(r.bytes_out, 2000);
  CHECK_EQ_I64(r.bytes_in, 2000);
  CHECK_EQ_I64(r.misses, 0);
  CHECK(r.compute_ns == 6000);
  CHECK_EQ_I64((long long)r.turn_ns, 6000); /* one copy each way at a time: no launch waits */
  CHECK(r.map_ns == 0); /* a dump from before the mapping calls' cost: none charged */
  pa_cycle_plan_free(&p);
  pa_cycle_file_free(&f);
  /* the host's mapping calls, 5 us a page moved: 4 pages a turn outlast its 6 us of kernels */
  const char *mapped = "# planalloc cycle 1\nlaunches,6,page,1000,budget,1000,kernel_ns,1000,link_bytes_per_ns,1,latency_ns,0,"
                       "lead_ns,0,map_ns,5000\ni,7,3,2,1,0\ni,9,0,0,0,0\nu,1,0\nu,3,0\nu,5,1\n";
  CHECK(read_text(mapped, &f, err, sizeof err) == 0);
  CHECK(f.map_ns == 5000);
  CHECK(pa_cycle_plan_best(&f, &p, &r, &(double){0}) == 0);
  CHECK_EQ_I64(r.bytes_out + r.bytes_in, 4000);
  CHECK_EQ_I64((long long)r.map_ns, 20000);
  CHECK_EQ_I64((long long)r.turn_ns, 20000);
  pa_cycle_plan_free(&p);
  pa_cycle_file_free(&f);
  const char *bad[] = {
      "# planalloc cycle 2\n",                                        /* another version */
      "# planalloc cycle 1\nlaunches,0,page,1000,budget,1,kernel_ns,1,link_bytes_per_ns,1,latency_ns,0\n",
      "# planalloc cycle 1\nlaunches,6,page,1000,budget,1000,kernel_ns,1000,link_bytes_per_ns,1,latency_ns,0,lead_ns,-1\n",
      "# planalloc cycle 1\nlaunches,6,page,1000,budget,1000,kernel_ns,1000,link_bytes_per_ns,1,latency_ns,0,lead_ns,nan\n",
      "# planalloc cycle 1\nlaunches,6,page,1000,budget,1000,kernel_ns,1000,link_bytes_per_ns,1,latency_ns,0,lead_ns,0,map_ns,-1\n",
      CYCLE_HEAD "i,9,0,0,0,0\ni,7,3,2,1,0\n",                      /* a slot after a whole one */
      CYCLE_HEAD "i,7,3,9,1,0\n",                                    /* gone past the turn */
      CYCLE_HEAD "i,7,3,2,1,0\nu,1,1\n",                             /* an item that is not there */
      CYCLE_HEAD "i,7,3,2,1,0\nu,3,0\nu,1,0\n",                      /* positions out of order */
      CYCLE_HEAD "i,7,3,2,1,0\nx\n",
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    err[0] = 0;
    CHECK(read_text(bad[i], &f, err, sizeof err) == -1);
    CHECK(!strncmp(err, "line ", 5));
    CHECK(f.c.nbuf == 0 && f.used == NULL);
  }
}

/* The served phase's model (cycle.c) where the schedule leaves positions over budget:
 * victims at need, as the product picks them. Three pages live throughout, two fit; each
 * position uses two (0 and 1, then 1 and 2, then 2 and 0), so each sends the third out
 * and brings back the one it sent out before: a page each way a position. */
static void cycle_victims(void) {
  uint64_t size[] = {1 << 20, 1 << 20, 1 << 20};
  uint32_t first[] = {0, 2, 4, 6}, used[] = {0, 1, 1, 2, 2, 0}, none[4] = {0};
  pa_cycle_file_t f = {.c = {.nop = 3, .nbuf = 3, .size = size, .op_first = first, .used = used, .ns = 1000},
                       .page = 1 << 20, .budget = 2u << 20, .kernel_ns = 1000, .bytes_per_ns = 1024, .op_first = first, .used = used};
  pa_cycle_plan_t p = {.nop = 3, .out_at = none, .back_at = none, .over = 3}; /* no swaps */
  pa_cycle_replay_t r;
  CHECK(pa_cycle_replay(&f, &p, 4, &r) == 0);
  CHECK_EQ_I64(r.bytes_out, 3u << 20);
  CHECK_EQ_I64(r.bytes_in, 3u << 20);
  CHECK_EQ_I64(r.misses, 3);
  CHECK(r.turn_ns > 3 * r.compute_ns); /* each kernel waits for a copy out, then one back */
  p.over = 0; /* the schedule said none is over: nothing moves */
  CHECK(pa_cycle_replay(&f, &p, 4, &r) == 0);
  CHECK_EQ_I64(r.bytes_out + r.bytes_in, 0);
}

/* A link too slow for the kernels' time (ResNet-50 at half its peak on an H200): four
 * pages live throughout, two fit, ops 2p and 2p + 1 use page p; a copy takes 2.5 ops.
 * Planned at the ops' own time a page's copy out is done too late to save anything
 * before it is due back, so no swap is planned and victims at need move pages with
 * each kernel waiting. Planned as if the ops took longer (cycle.c's
 * pa_cycle_plan_best), each page leaves after its uses and is back for the next turn's:
 * none over, no restore at need, within the link's bound. */
static void cycle_stretch(void) {
  uint64_t size[] = {1 << 20, 1 << 20, 1 << 20, 1 << 20};
  uint32_t first[9], used[8];
  for (uint32_t q = 0; q < 8; q++) first[q] = q, used[q] = q / 2;
  first[8] = 8;
  pa_cycle_file_t f = {.c = {.nop = 8, .nbuf = 4, .size = size, .op_first = first, .used = used, .ns = 1000},
                       .page = 1 << 20, .budget = 2u << 20, .kernel_ns = 1000, .bytes_per_ns = (1 << 20) / 2500.0,
                       .op_first = first, .used = used};
  pa_cycle_plan_t p;
  pa_cycle_replay_t at_need, best;
  CHECK(pa_cycle_plan(&f.c, f.budget, f.bytes_per_ns, 0, &p) == 0);
  CHECK_EQ_I64(p.nswaps, 0);
  CHECK(p.over > 0);
  CHECK(pa_cycle_replay(&f, &p, 4, &at_need) == 0);
  CHECK(at_need.misses > 0);
  pa_cycle_plan_free(&p);
  double stretch = 0;
  CHECK(pa_cycle_plan_best(&f, &p, &best, &stretch) == 0);
  CHECK(stretch > 1);
  CHECK(p.nswaps > 0);
  CHECK_EQ_I64(best.misses, 0);
  CHECK(best.turn_ns >= 4 * 2500); /* no faster than the link */
  CHECK(best.turn_ns < at_need.turn_ns);
  CHECK(best.turn_ns <= 1.10 * 4 * 2500); /* the link's bound: 4 pages each way a turn */
  pa_cycle_plan_free(&p);
  f.budget = 4u << 20; /* everything fits: planned once, at the ops' own time */
  CHECK(pa_cycle_plan_best(&f, &p, &best, &stretch) == 0);
  CHECK(stretch == 1 && p.nswaps == 0 && best.bytes_out == 0 && best.turn_ns == best.compute_ns);
  pa_cycle_plan_free(&p);
}

int main(int argc, char **argv) {
  const char *dir = argc > 1 ? argv[1] : "tests/dtr";
  char path[512], err[256];
  pa_atrace_t t;
  pa_atrace_init(&t);
  cycle_victims();
  cycle_stretch();
  snprintf(path, sizeof path, "%s/tiny.log", dir);
  CHECK(pa_dtr_log_read(path, &t, err, sizeof err) == 0);
  /* w, a (with its view av and copy a2), b, gb, ga */
  CHECK_EQ_I64(t.nbuf, 5);
  CHECK_EQ_I64(t.nop, 6);
  CHECK_EQ_I64(t.size[1], 4000);
  CHECK_EQ_I64(t.last[1], 5); /* dies with a2, its last reference */
  CHECK_EQ_I64(t.born[2], 2);
  CHECK_EQ_I64(t.last[2], 3);
  CHECK_EQ_I64(pa_atrace_peak(&t), 10000);
  CHECK(pa_atrace_compute_ns(&t) == 4510);

  pa_sim_result_t r;
  for (int p = 0; p < PA_POL_COUNT; p++) { /* the peak fits: nothing moves, whatever the policy */
    r = run(&t, (pa_policy_t)p, 10000);
    CHECK_EQ_I64(r.bytes_out + r.evictions + r.ooms, 0);
    CHECK(r.total_ns == 4510);
  }
  r = run(&t, PA_POL_LRU, 9000); /* op 3 needs 1000 more: w and a were last used at op 2, w first */
  CHECK_EQ_I64(r.bytes_out, 1000);
  CHECK_EQ_I64(r.bytes_in, 1000); /* w comes back for op 5 */
  CHECK_EQ_I64(r.evictions, 1);
  CHECK_EQ_I64(r.ooms, 0);
  CHECK_EQ_I64(r.peak, 9000);
  /* op 3 waits for w's copy-out [2010, 3010); op 5 for its copy back, on demand when op 4
   * ends: [5010, 6010), then runs 500 */
  CHECK(r.total_ns == 6510);
  uint64_t out_by_buf[5] = {0};
  pa_sim_opts_t per = {.budget = 9000, .bytes_per_ns = 1, .policy = PA_POL_LRU, .out_by_buf = out_by_buf};
  CHECK(pa_simulate(&t, &per, &r) == 0); /* w (buffer 0) sent its 1000 bytes, nobody else */
  CHECK_EQ_I64(out_by_buf[0], 1000);
  CHECK_EQ_I64(out_by_buf[1] + out_by_buf[2] + out_by_buf[3] + out_by_buf[4], 0);
  uint32_t uses[5], idle[5];
  pa_atrace_uses(&t, uses, idle);
  CHECK_EQ_I64(uses[0], 3); /* w: ops 0, 2 and 5 */
  CHECK_EQ_I64(idle[0], 3); /* from op 2 to op 5 */
  r = run(&t, PA_POL_LARGEST, 9000); /* a goes instead, and comes back for op 4 */
  CHECK_EQ_I64(r.bytes_out, 4000);
  CHECK_EQ_I64(r.bytes_in, 4000);
  r = run_lat(&t, PA_POL_DTR, 9000, 100); /* equal staleness: with a cost per copy, the larger is cheaper per byte */
  CHECK_EQ_I64(r.evictions, 1);
  CHECK_EQ_I64(r.bytes_out, 4000);
  r = run(&t, PA_POL_DTR, 9000); /* without one, a tie: the first resident (w) */
  CHECK_EQ_I64(r.bytes_out, 1000);
  /* planned: w goes (used again at op 5, after a at op 4) and comes back while op 4 runs:
   * [4010, 5010), so op 5 does not wait */
  r = run(&t, PA_POL_PLANNED, 9000);
  CHECK_EQ_I64(r.bytes_out, 1000);
  CHECK_EQ_I64(r.bytes_in, 1000);
  CHECK(r.total_ns == 5510);
  /* at 0.5 B/ns no swap the schedule could plan finishes in time: w goes reactively at op
   * 3 (Belady), whose gb waits for w's copy-out [2010, 4010) and runs to 5010; op 4 frees
   * b and prefetches w over [5010, 7010); op 5 waits for it to arrive, not just to start */
  pa_sim_opts_t half = {.budget = 9000, .bytes_per_ns = 0.5, .policy = PA_POL_PLANNED};
  CHECK(pa_simulate(&t, &half, &r) == 0);
  CHECK(r.total_ns == 7510);
  CHECK(r.wait_in_ns == 1000);
  CHECK(r.wait_out_ns == 2000);
  r = run(&t, PA_POL_LRU, 7000); /* op 2 alone needs 8000 */
  CHECK(r.ooms > 0);
  pa_atrace_free(&t);

  snprintf(path, sizeof path, "%s/bad.log", dir);
  CHECK(pa_dtr_log_read(path, &t, err, sizeof err) != 0);
  CHECK(strstr(err, "line 2: release of an unknown tensor nobody") != NULL);
  pa_atrace_free(&t);
  swap_schedule();
  victim_policy();
  cycle_schedule();
  cycle_dump();
  return test_report("test_sim");
}
