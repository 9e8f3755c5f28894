/* Repair: a large-neighbourhood search for traces too large for the exact search. The
 * skyline stacks every buffer on the highest thing under it over its whole life, so a
 * short buffer born just after a big one died can find that space taken by a longer
 * buffer born a moment later and end up above everything (pangu_2.6B: two 20 MB
 * buffers, 0.76 % over max-live). A move gives such a culprit the lowest address that
 * was free when it was born, pushes the buffers born during its life that sit there up
 * out of its way, pins those as fixed offsets and runs the skylines again around them;
 * a move is kept if the pool (then the bytes above the bound) shrinks. The skyline
 * never places under a fixed buffer, so moves only pin buffers low in the pool, where
 * the stack the skyline builds anyway starts. */
#include "planner.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_CULPRITS 16 /* tried per round, lowest first */
#define MAX_PUSHED 64   /* a move that shifts more buffers than this is not local */

static const pa_order_t orders[] = {PA_ORDER_AREA, PA_ORDER_TOTAL, PA_ORDER_SIZE};
#define NORDERS (sizeof orders / sizeof *orders)

typedef struct repair_s {
  pa_trace_t t;            /* the caller's, with a private bufs array whose pins change */
  const pa_trace_t *orig;  /* fixed offsets the caller asked for never move */
  uint32_t *order[NORDERS];
  double deadline, eval_seconds; /* one evaluation, measured: none starts that would end late */
  int64_t bound, *cur, *next, *scratch, *saved_fix, peak, over;
  uint32_t *culprit, *pushed;
  uint8_t *moved;
  struct gap_s { int64_t lo, hi; } *busy;
  const atomic_bool *outer; /* the caller's cancel */
  atomic_bool cancel, done; /* cancel: set at the deadline by the watchdog, or by outer */
} repair_t;

static bool overlap(const pa_buf_t *a, const pa_buf_t *b) {
  return a->lower < b->upper && b->lower < a->upper;
}

static bool movable(const repair_t *r, size_t i) { return r->orig->bufs[i].fixed == PA_NO_OFFSET; }

/* Bytes of the layout above the bound: the secondary objective that lets a move which
 * does not lower the pool yet still count as progress. */
static int64_t over_bound(const repair_t *r, const int64_t *off) {
  int64_t over = 0;
  for (size_t i = 0; i < r->t.n; i++) {
    int64_t top = off[i] + r->t.bufs[i].size, bottom = off[i] > r->bound ? off[i] : r->bound;
    if (top > r->bound) over += top - bottom;
  }
  return over;
}

/* The best of the skylines around the current pins, into out. */
static int evaluate(repair_t *r, int64_t *out, int64_t *peak, int64_t *over) {
  *peak = INT64_MAX;
  for (size_t k = 0; k < NORDERS; k++) {
    int rc = pa_skyline_ordered(&r->t, r->order[k], &r->cancel, r->scratch);
    if (rc) return rc;
    int64_t p = pa_layout_peak(&r->t, r->scratch), v = over_bound(r, r->scratch);
    if (p < *peak || (p == *peak && v < *over)) {
      *peak = p, *over = v;
      memcpy(out, r->scratch, r->t.n * sizeof *out);
    }
  }
  return PA_OK;
}

static int gap_cmp(const void *a, const void *b) {
  const struct gap_s *x = a, *y = b;
  return (x->lo > y->lo) - (x->lo < y->lo);
}

/* The lowest offset where c fits among the buffers of its life born no later than it. */
static int64_t lowest_at_birth(repair_t *r, size_t c) {
  const pa_buf_t *cb = &r->t.bufs[c];
  size_t n = 0;
  for (size_t b = 0; b < r->t.n; b++)
    if (b != c && r->t.bufs[b].lower <= cb->lower && overlap(&r->t.bufs[b], cb))
      r->busy[n++] = (struct gap_s){r->cur[b], r->cur[b] + r->t.bufs[b].size};
  qsort(r->busy, n, sizeof *r->busy, gap_cmp);
  int64_t x = 0;
  for (size_t j = 0; j < n && r->busy[j].lo < x + cb->size; j++)
    if (r->busy[j].hi > x) x = pa_align_up(r->busy[j].hi, cb->align);
  return x;
}

/* Lifts b above every already-placed buffer of pushed[0..np) it collides with. */
static int64_t lift(const repair_t *r, size_t b, size_t np) {
  const pa_buf_t *bb = &r->t.bufs[b];
  int64_t at = r->cur[b];
  for (bool again = true; again;) {
    again = false;
    for (size_t j = 0; j < np; j++) {
      size_t p = r->pushed[j];
      int64_t lo = r->next[p], hi = lo + r->t.bufs[p].size;
      if (!overlap(bb, &r->t.bufs[p]) || at >= hi || at + bb->size <= lo) continue;
      at = pa_align_up(hi, bb->align), again = true;
    }
  }
  return at;
}

/* c at x; the buffers born during c's life, lowest first, pushed up out of the way of
 * c and of each other. Returns how many moved (r->moved marks them), or -1 if too many. */
static int push_up(repair_t *r, size_t c, int64_t x) {
  const pa_buf_t *cb = &r->t.bufs[c];
  size_t np = 0;
  for (size_t b = 0; b < r->t.n; b++)
    if (b != c && movable(r, b) && r->t.bufs[b].lower > cb->lower && r->t.bufs[b].lower < cb->upper)
      r->pushed[1 + np++] = (uint32_t)b;
  qsort_r(r->pushed + 1, np, sizeof *r->pushed, pa_cmp_offset, r->cur);
  memcpy(r->next, r->cur, r->t.n * sizeof *r->next);
  memset(r->moved, 0, r->t.n);
  r->pushed[0] = (uint32_t)c, r->next[c] = x, r->moved[c] = 1;
  int moves = 0;
  for (size_t i = 1; i <= np && moves <= MAX_PUSHED; i++) {
    size_t b = r->pushed[i];
    r->next[b] = lift(r, b, i);
    if (r->next[b] != r->cur[b]) r->moved[b] = 1, moves++;
  }
  return moves <= MAX_PUSHED ? moves : -1;
}

/* Pins the moved buffers (only those outliving c, or all), runs the skylines, keeps the
 * result if better. false when the pins collide with older ones or it is no better. */
static bool time_for_one(const repair_t *r) { return pa_now() + r->eval_seconds < r->deadline; }

static bool try_pins(repair_t *r, size_t c, bool all) {
  if (!time_for_one(r)) return false;
  for (size_t b = 0; b < r->t.n; b++) r->saved_fix[b] = r->t.bufs[b].fixed;
  for (size_t b = 0; b < r->t.n; b++)
    if (r->moved[b] && (all || b == c || r->t.bufs[b].upper > r->t.bufs[c].upper))
      r->t.bufs[b].fixed = r->next[b];
  char why[8];
  int64_t peak, over = 0;
  bool better = !pa_validate_fixed(&r->t, why, sizeof why) && !evaluate(r, r->next, &peak, &over) &&
                (peak < r->peak || (peak == r->peak && over < r->over));
  if (better) {
    r->peak = peak, r->over = over;
    memcpy(r->cur, r->next, r->t.n * sizeof *r->cur);
  } else {
    for (size_t b = 0; b < r->t.n; b++) r->t.bufs[b].fixed = r->saved_fix[b];
  }
  return better;
}

static bool try_culprit(repair_t *r, size_t c) {
  int64_t x = lowest_at_birth(r, c);
  if (x >= r->cur[c] || push_up(r, c, x) < 0) return false;
  return try_pins(r, c, false) || (push_up(r, c, x) >= 0 && try_pins(r, c, true));
}

/* The movable buffers reaching above the bound, lowest first. */
static size_t culprits(repair_t *r) {
  size_t n = 0;
  for (size_t i = 0; i < r->t.n; i++)
    if (movable(r, i) && r->cur[i] + r->t.bufs[i].size > r->bound) r->culprit[n++] = (uint32_t)i;
  qsort_r(r->culprit, n, sizeof *r->culprit, pa_cmp_offset, r->cur);
  return n;
}

static bool round_improves(repair_t *r) {
  size_t n = culprits(r);
  for (size_t k = 0; k < n && k < MAX_CULPRITS && time_for_one(r); k++)
    if (try_culprit(r, r->culprit[k])) return true;
  return false;
}

static void release(repair_t *r) {
  for (size_t k = 0; k < NORDERS; k++) free(r->order[k]);
  free(r->t.bufs), free(r->cur), free(r->next), free(r->scratch), free(r->saved_fix);
  free(r->culprit), free(r->pushed), free(r->moved), free(r->busy);
}

static int prepare(repair_t *r, const pa_trace_t *t) {
  size_t n = t->n + 1;
  r->t = *t, r->orig = t;
  r->t.bufs = malloc(n * sizeof *r->t.bufs);
  r->cur = malloc(n * sizeof *r->cur), r->next = malloc(n * sizeof *r->next);
  r->scratch = malloc(n * sizeof *r->scratch), r->saved_fix = malloc(n * sizeof *r->saved_fix);
  r->culprit = malloc(n * sizeof *r->culprit), r->pushed = malloc(n * sizeof *r->pushed);
  r->moved = malloc(n), r->busy = malloc(n * sizeof *r->busy);
  bool ok = r->t.bufs && r->cur && r->next && r->scratch && r->saved_fix && r->culprit &&
            r->pushed && r->moved && r->busy;
  for (size_t k = 0; k < NORDERS && ok; k++)
    ok = (r->order[k] = malloc(n * sizeof *r->order[k])) && !pa_order_make(t, orders[k], r->order[k]);
  if (!ok) return PA_ENOMEM;
  memcpy(r->t.bufs, t->bufs, t->n * sizeof *t->bufs);
  return PA_OK;
}

/* A skyline over a large trace takes seconds: the watchdog cancels the one running at
 * the deadline, so the repair never outlives it by more than a few milliseconds. */
static void *watchdog(void *arg) {
  repair_t *r = arg;
  struct timespec tick = {0, 2000000};
  while (!atomic_load(&r->done) && pa_now() < r->deadline && !(r->outer && atomic_load(r->outer)))
    nanosleep(&tick, NULL);
  atomic_store(&r->cancel, true);
  return NULL;
}

int pa_repair(const pa_trace_t *t, int64_t bound, int64_t good, double deadline,
              const atomic_bool *cancel, int64_t *offsets) {
  repair_t r = {.bound = bound, .deadline = deadline, .outer = cancel};
  pthread_t th;
  int rc = prepare(&r, t);
  bool watched = rc == PA_OK && !pthread_create(&th, NULL, watchdog, &r);
  double start = pa_now();
  if (rc == PA_OK) rc = evaluate(&r, r.cur, &r.peak, &r.over);
  r.eval_seconds = pa_now() - start;
  while (rc == PA_OK && r.peak > good && !atomic_load(&r.cancel) && round_improves(&r)) {
  }
  atomic_store(&r.done, true);
  if (watched) pthread_join(th, NULL);
  if (rc == PA_OK) memcpy(offsets, r.cur, t->n * sizeof *offsets);
  release(&r);
  return rc;
}
