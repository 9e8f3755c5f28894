/* The iteration clock (preload/clock.c) on bare event streams, no CUDA: a model of the
 * preload's front logs each event as record.c does, asks the finder for the period after
 * each one, then follows the rest with the clock, every buffer tagged with its
 * allocation's position as alloc.c tags them (the recording's buffers by their event).
 * Streams: built here (a step's buffers freed at the next step's zero_grad in a burst
 * longer than the window, extras, swapped events, a program that changes), and the real
 * programs' logs in ../shared/data/gpu-events when their paths are given. */
#include "../harness.h"
#include "pa.h"

#include <stdlib.h>

PA_TLS int pa_slot; /* init.c's: one device here */

#define MAXB 200000

typedef struct model_s {
  pa_log_t log;
  pa_finder_t finder;
  pa_period_t per;
  pa_clock_t clock;
  uint64_t live, events, start; /* start: the event the period's position 0 fell on */
  uint64_t bsize[MAXB], bborn[MAXB];
  uint32_t btag[MAXB], bid[MAXB];
  bool found, blive[MAXB], blogged[MAXB];
  /* the log begins at event log_from (a recording beside a plan the program left); the
   * frees of buffers made before it are logged by their count back (old_frees), as
   * alloc.c's, or not at all */
  uint64_t log_from, allocs, nth[MAXB];
  bool old_frees;
  /* a plan laid out on the planner's thread: the log goes on for `delay` events after the
   * cut before the clock starts, caught up (pa_clock_catch_up) or by the cut's count */
  uint64_t delay, cut;
  bool pending, by_count;
  /* what the clock said, after it started */
  uint64_t on, off, periods, divergent, retired, off_after_first; /* off_after_first: off the plan once a period ended */
  uint64_t extras; /* logging buffers made while the plan was followed */
} model_t;

static void grow_log(pa_log_t *l) {
  if (l->nev + 1 >= l->cap_ev) {
    size_t c = l->cap_ev ? 2 * l->cap_ev : 4096;
    l->tok = realloc(l->tok, c * sizeof *l->tok), l->live = realloc(l->live, c * sizeof *l->live);
    l->ev_id = realloc(l->ev_id, c * sizeof *l->ev_id), l->ev_alloc = realloc(l->ev_alloc, c);
    l->cap_ev = c;
  }
  if (l->nalloc + 1 >= l->cap_alloc) {
    size_t c = l->cap_alloc ? 2 * l->cap_alloc : 4096;
    l->size = realloc(l->size, c * sizeof *l->size), l->alloc_pos = realloc(l->alloc_pos, c * sizeof *l->alloc_pos);
    l->free_pos = realloc(l->free_pos, c * sizeof *l->free_pos);
    l->cap_alloc = c;
  }
}

/* The recording: record.c's tokens (no callsites: a replay's all come from one place). */
static void log_event(model_t *m, bool alloc, uint32_t id, uint64_t dead) {
  pa_log_t *l = &m->log;
  grow_log(l);
  size_t n = l->nev++;
  uint64_t tok = alloc ? pa_mix64(l->size[id] * 2 + 1) : pa_log_free_token(dead);
  l->tok[n] = tok, l->live[n] = m->live, l->ev_id[n] = id, l->ev_alloc[n] = alloc;
  if (alloc) l->alloc_pos[id] = n;
  else l->free_pos[id] = n;
  CHECK(pa_finder_push(&m->finder, tok));
}

static void tick(model_t *m, pa_tick_t t) {
  if (t.at == PA_CLOCK_OFF) m->off++, m->off_after_first += m->periods > 0;
  else m->on++;
  if (t.end) m->periods++, m->divergent += t.end == PA_PERIOD_DIVERGENT;
  m->retired += t.retire;
}

/* The clock `delay` events after the cut: where following the log since puts it, every
 * live buffer made since tagged with the position it took there (alloc.c's caught_up and
 * live_tag); or where the cut's count puts it (every event since taken for the period's). */
static void start_late(model_t *m) {
  uint64_t since = m->log.nev - 1 - m->cut, p = m->per.period;
  uint32_t *tags = malloc((since + 1) * sizeof *tags);
  CHECK(tags != NULL);
  uint32_t pos = pa_clock_catch_up(&m->per, &m->log, m->cut + 1, tags);
  if (m->by_count) pos = (uint32_t)(since % p);
  pa_clock_start(&m->clock, &m->per, pos);
  for (uint32_t b = 0; b < MAXB; b++) {
    uint64_t j = m->log.alloc_pos[m->bid[b]]; /* the log is every event here: j is b's birth */
    if (m->blive[b]) m->btag[b] = j > m->cut && !m->by_count ? tags[j - m->cut - 1] : pa_period_tag(&m->per, j, m->cut + 1, m->bsize[b]);
  }
  m->pending = false, m->found = true;
  free(tags);
}

/* Once found: the period from the log, the clock at the next event, every live buffer
 * tagged by its allocation event. */
static void detect(model_t *m) {
  uint64_t cut, p = m->pending ? 0 : pa_finder_period(&m->finder, &m->log, 0, 2, true, &cut);
  if (m->pending && m->log.nev - 1 - m->cut >= m->delay) return start_late(m);
  if (!p) return;
  CHECK(pa_period_build(&m->per, &m->log, p, cut));
  if (m->delay) return (void)(m->pending = true, m->cut = cut);
  m->found = true, m->start = m->events - (m->log.nev - 1 - cut) + 1 - p;
  pa_clock_start(&m->clock, &m->per, (uint32_t)((m->events + 1 - m->start) % p));
  for (uint32_t b = 0; b < MAXB; b++)
    if (m->blive[b]) m->btag[b] = pa_period_tag(&m->per, m->bborn[b], m->start, m->bsize[b]);
}

#define EXTRA 900 /* train_step's logging buffer */
static void alloc_ev(model_t *m, uint32_t b, uint64_t size) {
  CHECK(b < MAXB && !m->blive[b]);
  size = (size + 255) / 256 * 256;
  m->blive[b] = true, m->bsize[b] = size, m->bborn[b] = m->events, m->btag[b] = PA_CLOCK_OFF;
  m->nth[b] = m->allocs++, m->blogged[b] = !m->found && m->events >= m->log_from;
  pa_dead_born(m->nth[b]);
  m->live += size; /* the log's bytes live are the program's, buffers older than it too */
  m->extras += m->found && b == EXTRA;
  if (m->found) {
    pa_tick_t t = pa_clock_alloc(&m->clock, size);
    m->btag[b] = t.at;
    tick(m, t);
  } else if (m->blogged[b]) {
    grow_log(&m->log);
    uint32_t id = (uint32_t)m->log.nalloc++;
    m->log.size[id] = size, m->log.free_pos[id] = PA_NO_EVENT, m->bid[b] = id;
    log_event(m, true, id, 0);
    detect(m);
  }
  m->events++;
}

static void free_ev(model_t *m, uint32_t b) {
  CHECK(b < MAXB && m->blive[b]);
  m->blive[b] = false;
  m->live -= m->bsize[b];
  uint64_t dead = pa_dead_count(m->nth[b], m->allocs);
  pa_dead_gone(m->nth[b], m->allocs);
  if (m->found) {
    tick(m, pa_clock_free(&m->clock, m->btag[b]));
  } else if (m->blogged[b]) {
    log_event(m, false, m->bid[b], dead);
    detect(m);
  } else if (m->events >= m->log_from && m->old_frees) {
    pa_log_t *l = &m->log;
    grow_log(l);
    size_t n = l->nev++;
    uint64_t back = m->allocs - m->nth[b];
    l->tok[n] = pa_log_free_token(dead), l->live[n] = m->live, l->ev_id[n] = PA_LOG_OLD | (uint32_t)back, l->ev_alloc[n] = 0;
    CHECK(pa_finder_push(&m->finder, l->tok[n]));
    detect(m);
  }
  m->events++;
}

/* dead.c's ring is the process's: each model's allocations number on from the last's,
 * so that the buffers a model left live are older than the next one's. */
static uint64_t allocs_so_far;

static model_t *model_new(void) {
  model_t *m = calloc(1, sizeof(model_t));
  if (m) m->allocs = allocs_so_far;
  return m;
}

static void model_free(model_t *m) {
  allocs_so_far = m->allocs;
  pa_log_t *l = &m->log;
  free(l->tok), free(l->live), free(l->ev_id), free(l->ev_alloc), free(l->size), free(l->alloc_pos), free(l->free_pos);
  pa_finder_free(&m->finder);
  pa_period_free(&m->per);
  free(m);
}

/* dead.c against a count by hand: three rings' worth of allocations, each followed at
 * random by the free of a live buffer up to two rings back; a buffer older than the ring
 * counts by its distance back past it (every 40th free compared: the count by hand is
 * O(ring)). */
static void dead_counts(void) {
  enum { N = 3 * PA_DEAD_RING };
  uint64_t base = allocs_so_far, x = 7, checked = 0, old = 0;
  uint8_t *live = calloc(N, 1);
  CHECK(live != NULL);
  for (uint64_t i = 0; live && i < N; i++) {
    pa_dead_born(base + i), live[i] = 1;
    x = x * 6364136223846793005ull + 1442695040888963407ull;
    uint64_t span = i < 2 * PA_DEAD_RING ? i : 2 * PA_DEAD_RING, j = span ? i - 1 - (x >> 33) % span : i;
    if (j == i || !live[j] || (x >> 20) % 3) continue;
    uint64_t allocs = base + i + 1, got = pa_dead_count(base + j, allocs), want = 0;
    bool past = i - j >= PA_DEAD_RING, by_hand = !past && checked++ % 40 == 0;
    if (past) want = PA_DEAD_RING + i + 1 - j, old++;
    for (uint64_t k = j + 1; by_hand && k <= i; k++) want += !live[k];
    if (past || by_hand) CHECK_EQ_I64(got, want);
    pa_dead_gone(base + j, allocs), live[j] = 0;
  }
  CHECK(old > 0); /* the ring's wrap was crossed */
  allocs_so_far = base + N;
  free(live);
}

/* ---- built streams ------------------------------------------------------------------------- */

/* A training step: forward makes activations (kept for backward) and temporaries, backward
 * frees the activations and makes one gradient per parameter, which live until the next
 * step's zero_grad frees them all at once (`grads` of them: more than the window). */
typedef struct step_s {
  int layers, grads;
  bool extra;  /* an extra buffer (logging) made and freed mid-step */
  bool swap;   /* two adjacent events in the other order (another thread got there first) */
  bool batch;  /* the input batch made first, the last step's freed after it */
  bool optim;  /* the optimizer's step: a scratch buffer a gradient */
  bool state;  /* ... which makes its state first: a buffer a gradient, kept (PyTorch's lazy state) */
} step_t;

static void train_step(model_t *m, int k, step_t s) {
  uint32_t act = 1000, tmp = 5000, grad0 = 10000 + (uint32_t)(k % 2) * 1000, gradp = 10000 + (uint32_t)((k + 1) % 2) * 1000;
  if (s.batch) alloc_ev(m, 950 + (uint32_t)(k % 2), 65536);
  if (s.batch && k > 0) free_ev(m, 950 + (uint32_t)((k + 1) % 2));
  if (k > 0)
    for (int g = 0; g < s.grads; g++) free_ev(m, gradp + (uint32_t)g); /* zero_grad: last step's gradients */
  for (int l = 0; l < s.layers; l++) {
    alloc_ev(m, act + (uint32_t)l, 4096u * (uint32_t)(l % 7 + 1));
    alloc_ev(m, tmp, 512);
    if (s.swap && l == 3) {
      alloc_ev(m, tmp + 1, 768);
      free_ev(m, tmp);
    } else {
      free_ev(m, tmp);
      alloc_ev(m, tmp + 1, 768);
    }
    free_ev(m, tmp + 1);
    if (s.extra && l == s.layers / 2) alloc_ev(m, EXTRA, 100000), free_ev(m, EXTRA);
  }
  for (int l = s.layers - 1; l >= 0; l--) {
    alloc_ev(m, tmp + 2, 1024);
    free_ev(m, act + (uint32_t)l);
    free_ev(m, tmp + 2);
  }
  for (int g = 0; g < s.grads; g++) alloc_ev(m, grad0 + (uint32_t)g, 256u * (uint32_t)(g % 5 + 1));
  for (int g = 0; s.optim && g < s.grads; g++) {
    if (s.state) alloc_ev(m, 20000 + (uint32_t)g, 256u * (uint32_t)(g % 5 + 1));
    alloc_ev(m, tmp + 3, 512), free_ev(m, tmp + 3);
  }
}

/* The failure found on PyTorch's logs: 40 gradients freed at once, after the plan serves,
 * were made before it (in the recording): every one of them and every event after is on
 * the plan, and no period diverges. */
/* A plan over two iterations needs the two periods before its cut to repeat. Five
 * warm-up events, then a period of six twice and half a third: the fewest bytes live in
 * the last period fall at event 15, whose two periods back reach into the warm-up; the
 * later cuts 16-19 are clear of it, and of them 18 leaves the fewest live. */
static void later_cut(void) {
  model_t *m = model_new();
  pa_log_t *l = &m->log;
  const uint64_t live[6] = {50, 20, 30, 35, 5, 60};
  for (uint64_t i = 0; i < 20; i++) {
    grow_log(l);
    size_t n = l->nev++;
    l->tok[n] = pa_mix64(i < 5 ? 100 + i : 1 + (i - 5) % 6), l->live[n] = i < 5 ? 100 : live[(i - 5) % 6], l->ev_alloc[n] = 1;
    CHECK(pa_finder_push(&m->finder, l->tok[n]));
  }
  uint64_t cut = 0;
  CHECK_EQ_I64(pa_finder_period(&m->finder, l, 0, 2, true, &cut), 6);
  CHECK_EQ_I64(cut, 15);
  CHECK_EQ_I64(pa_finder_later_cut(&m->finder, l, 6, cut), 18);
  CHECK_EQ_I64(pa_finder_later_cut(&m->finder, l, 6, 19), PA_NO_EVENT); /* none after the last */
  l->tok[17] ^= 1; /* as a hash collision would leave it: the hashes match, the tokens not */
  CHECK_EQ_I64(pa_finder_later_cut(&m->finder, l, 6, cut), PA_NO_EVENT);
  model_free(m);
}

/* Two events as low in live bytes a period (an optimizer's scratch pairs each return to
 * them): the cut falls on the same one of them wherever the log began. The first of the
 * window's did not: a recording begun mid-step cut the period elsewhere, and its kept
 * plan was not known again. */
static void cut_ties(void) {
  const uint64_t live[6] = {50, 5, 30, 5, 60, 40};
  uint64_t phase = PA_NO_EVENT;
  for (uint64_t d = 0; d < 6; d++) {
    model_t *m = model_new();
    pa_log_t *l = &m->log;
    for (uint64_t i = 0; i < 14 + d; i++) {
      grow_log(l);
      size_t n = l->nev++;
      l->tok[n] = pa_mix64(1 + (i + d) % 6), l->live[n] = live[(i + d) % 6], l->ev_alloc[n] = 1;
      CHECK(pa_finder_push(&m->finder, l->tok[n]));
    }
    uint64_t cut = 0;
    CHECK_EQ_I64(pa_finder_period(&m->finder, l, 0, 2, true, &cut), 6);
    uint64_t at = (cut + d) % 6; /* the period's own phase of the cut */
    CHECK(at == 1 || at == 3);
    if (phase == PA_NO_EVENT) phase = at;
    CHECK_EQ_I64(at, phase);
    model_free(m);
  }
}

/* A loop of a few events inside a longer step (an optimizer's 8 scratch pairs after 600
 * other events) is not the iteration: no period while it runs. The same loop from the
 * program's start is (found at its second copy, 12 events), and after a warm-up once its
 * copies span as many events as came before them. */
static uint64_t period_after(const uint64_t *tok, size_t n) {
  model_t *m = model_new();
  pa_log_t *l = &m->log;
  uint64_t p = 0, cut;
  for (size_t i = 0; i < n; i++) {
    grow_log(l);
    size_t e = l->nev++;
    l->tok[e] = tok[i], l->live[e] = (tok[i] & 1) ? 100 : 0, l->ev_alloc[e] = tok[i] & 1;
    l->ev_id[e] = (tok[i] & 1) ? (uint32_t)l->nalloc : PA_LOG_OLD | 1; /* a free frees the last allocation */
    if (tok[i] & 1) l->alloc_pos[l->nalloc] = e, l->free_pos[l->nalloc++] = PA_NO_EVENT;
    else if (l->nalloc && l->free_pos[l->nalloc - 1] == PA_NO_EVENT) l->free_pos[l->nalloc - 1] = e;
    CHECK(pa_finder_push(&m->finder, l->tok[e]));
    if (!p) p = pa_finder_period(&m->finder, l, 0, 2, true, &cut) ? n - i : 0; /* how early: events left */
  }
  model_free(m);
  return p;
}

static void loops(void) {
  enum { WARM = 600 };
  uint64_t tok[WARM + 2 * WARM + 2];
  for (size_t i = 0; i < WARM; i++) tok[i] = 2 * (i + 1000); /* distinct frees, nothing repeats */
  for (size_t i = 0; i < 16; i++) tok[WARM + i] = i % 2 ? 2 : 7; /* 8 pairs: alloc 7, free 2 */
  CHECK_EQ_I64(period_after(tok, WARM + 16), 0);
  CHECK_EQ_I64(period_after(tok + WARM, 16), 16 - 12 + 1); /* from the start: at its 12th event */
  for (size_t i = 0; i < 2 * WARM + 2; i++) tok[WARM + i] = i % 2 ? 2 : 7;
  uint64_t left = period_after(tok, WARM + 2 * WARM + 2);
  CHECK(left > 0 && left <= WARM + 4); /* once the copies span the warm-up's 600 */
}

/* The kept plans' matcher: a stream of a period's events, begun anywhere, is found at its
 * position once PA_MATCH_LEN of them came (every hash hit checked against the stream);
 * another period's stream is not. */
static uint64_t code_of(const pa_period_t *p, uint64_t t) {
  uint32_t u = (uint32_t)(t % p->period);
  return pa_event_code(p->size[u] != 0, p->size[u]);
}

static void matcher_of(uint32_t len) {
  enum { N = 300 };
  uint64_t size[N], other[N];
  uint32_t mate[N];
  for (uint32_t t = 0; t < N; t++)
    size[t] = t % 3 == 2 ? 0 : 256u * (1 + (t * 7919u) % 13), other[t] = size[t] ? size[t] + 256 : 0, mate[t] = PA_CLOCK_OFF;
  pa_period_t p = {N, size, mate}, q = {N, other, mate};
  pa_match_t m;
  CHECK(pa_match_build(&m, &p, len));
  CHECK_EQ_I64(m.n, N);
  const uint64_t power = pa_match_power(len);
  for (uint64_t start = 0; start < N; start += 37) {
    uint64_t h = 0, hq = 0, found = 0, wrong = 0;
    for (uint64_t j = 0; j < 2 * N; j++) {
      h = h * PA_MATCH_BASE + code_of(&p, start + j) - (j >= len ? code_of(&p, start + j - len) * power : 0);
      hq = hq * PA_MATCH_BASE + code_of(&q, start + j) - (j >= len ? code_of(&q, start + j - len) * power : 0);
      if (j + 1 < len) continue;
      uint32_t it = 0, r, hit = 0;
      while ((r = pa_match_next(&m, h, &it)) != PA_CLOCK_OFF) hit += r == (start + j) % N;
      found += hit == 1;
      it = 0;
      wrong += pa_match_next(&m, hq, &it) != PA_CLOCK_OFF;
    }
    CHECK_EQ_I64(found, 2 * N - len + 1);
    CHECK_EQ_I64(wrong, 0);
  }
  pa_match_free(&m);
}

/* The long stretch and the short one alike; their powers are those of the rolling hash
 * (the matcher's view rolls both with every event). */
static void matcher(void) {
  matcher_of(PA_MATCH_LEN);
  matcher_of(PA_MATCH_SHORT);
  uint64_t x = 1;
  for (int i = 0; i < PA_MATCH_SHORT; i++) x *= PA_MATCH_BASE;
  CHECK_EQ_I64(pa_match_power(PA_MATCH_SHORT), x);
  CHECK(pa_match_power(PA_MATCH_SHORT) != pa_match_power(PA_MATCH_LEN));
}

static void zero_grad_burst(void) {
  model_t *m = model_new();
  step_t s = {8, 40, false, false, false, false, false};
  for (int k = 0; k < 20; k++) train_step(m, k, s);
  CHECK(m->found);
  CHECK_EQ_I64(m->per.period, 8 * 5 + 8 * 3 + 2 * 40);
  CHECK_EQ_I64(m->off, 0);
  CHECK(m->on > 15 * m->per.period);
  CHECK_EQ_I64(m->divergent, 0);
  CHECK(m->periods >= 15);
  model_free(m);
}

/* A log begun mid-step (a recording beside a plan the program left): the next step frees
 * the batch made before it. Logged by its count back, that step repeats the one after and
 * the period is found within two steps, then followed with nothing off the plan (the old
 * free in the period paired by its count); left out, the first whole step is an event
 * short of the next and the period comes a step later: a length held for 3 steps got no
 * plan so (stress-streams #20). */
static void begun_mid_step(bool old) {
  model_t *m = model_new();
  step_t s = {8, 40, false, false, true, false, false};
  m->old_frees = old, m->log_from = UINT64_MAX;
  int k = 0;
  for (; k < 3; k++) train_step(m, k, s);
  m->log_from = m->events + 60; /* in step 3's zero_grad, after its batch */
  for (; k < 20 && !m->found; k++) train_step(m, k, s);
  CHECK_EQ_I64(k, old ? 6 : 7); /* found during step 5 (old) or step 6 */
  for (; k < 20; k++) train_step(m, k, s);
  CHECK_EQ_I64(m->off, 0);
  CHECK_EQ_I64(m->divergent, 0);
  model_free(m);
}

/* An extra allocation and free every 5th step: 2 events off the plan there, none after. */
static void extras(void) {
  model_t *m = model_new();
  for (int k = 0; k < 30; k++) train_step(m, k, (step_t){8, 40, k > 6 && k % 5 == 0, false, false, false, false});
  CHECK(m->found);
  CHECK_EQ_I64(m->divergent, 0);
  CHECK_EQ_I64(m->off, 2 * 4); /* steps 10, 15, 20, 25 */
  model_free(m);
}

/* A logging buffer every other step: no two whole copies of a step repeat, and those of
 * two steps (1-4) end with step 4. The last copy need not end (clock.c's seen_cut): once
 * the buffers of a period's window are all freed and half a period more repeats it,
 * it is found, during step 2 (a step and the logging buffer, whose slot the clock passes
 * by in the steps without it). Followed from there: no event off the plan. */
static void every_other(void) {
  model_t *m = model_new();
  int k = 0;
  for (; k < 8 && !m->found; k++) train_step(m, k, (step_t){8, 40, k % 2 == 1, false, false, false, false});
  CHECK(m->found);
  CHECK(k <= 3); /* found during step k - 1 */
  for (; k < 30; k++) train_step(m, k, (step_t){8, 40, k % 2 == 1, false, false, false, false});
  CHECK_EQ_I64(m->off, 0);
  CHECK_EQ_I64(m->divergent, 0);
  model_free(m);
}

/* The optimizer's state made in the first step, a buffer a parameter between the step's
 * scratch buffers, kept: step 1's zero_grad frees the gradients step 0 made before it.
 * Named by how many allocations back their buffers were made, those frees counted over
 * the state's allocations, step 2's did not, and the period was found in step 3 (k = 4).
 * By their dead count (dead.c), the allocations since that are freed, step 1 is a copy of
 * step 2: found during step 2, and followed from there with nothing off the plan (the
 * frees of step 0's gradients in the period paired by their next copy, clock.c). */
static void lazy_state(void) {
  model_t *m = model_new();
  int k = 0;
  for (; k < 8 && !m->found; k++) train_step(m, k, (step_t){8, 40, false, false, false, true, k == 0});
  CHECK(m->found);
  CHECK(k <= 3); /* found during step k - 1 */
  for (; k < 30; k++) train_step(m, k, (step_t){8, 40, false, false, false, true, false});
  CHECK_EQ_I64(m->off, 0);
  CHECK_EQ_I64(m->divergent, 0);
  model_free(m);
}

/* The warm-up's buffers freed at once late in the next step (a cache the first step made),
 * in a model whose steps are alike layer for layer: a period of two steps and 64 events,
 * from the warm-up's third event to step 2's 43rd, repeats as far as a quarter of it, its
 * bytes live too. Planned, its burst of 32 allocations and frees, longer than the clock's
 * window, held the clock in every period (6 divergent, 2,416 events off the plan at
 * PA_CLOCK_PART 4). Half of it does not repeat: the find waits for the step. */
static void warm_cache(void) {
  model_t *m = model_new();
  step_t s = {8, 40, false, false, false, false, false};
  for (int k = 0; k < 20; k++) {
    train_step(m, k, s);
    for (uint32_t b = 0; b < 2 * PA_CLOCK_WINDOW && k < 2; b++) k ? free_ev(m, 700 + b) : alloc_ev(m, 700 + b, 4096);
  }
  CHECK(m->found);
  CHECK_EQ_I64(m->divergent, 0);
  CHECK_EQ_I64(m->off, 0);
  model_free(m);
}

/* A plan that comes 5 steps after its cut, logging buffers made from the cut on (every
 * 3rd step): followed from the cut, the clock is where the program is and only the extras
 * after it are off the plan; by the cut's count, it is 2 events a logging buffer ahead
 * (torch_stream seed 245: three of them, 1 divergent period). */
static void late_plan(bool by_count) {
  model_t *m = model_new();
  step_t s = {8, 40, false, false, false, false, false};
  m->delay = 5 * (8 * 5 + 8 * 3 + 2 * 40), m->by_count = by_count;
  for (int k = 0; k < 40; k++) {
    s.extra = (m->pending || m->found) && k % 3 == 0;
    train_step(m, k, s);
  }
  uint64_t extras_after = m->extras;
  CHECK(m->found);
  CHECK(extras_after >= 8);
  if (!by_count) {
    CHECK_EQ_I64(m->off, 2 * extras_after);
    CHECK_EQ_I64(m->divergent, 0);
  } else {
    CHECK(m->off > 2 * extras_after || m->divergent > 0); /* the failure it fixes */
  }
  model_free(m);
}

/* Two events in the other order in some steps (threads racing): on the plan all the same. */
static void swapped(void) {
  model_t *m = model_new();
  for (int k = 0; k < 30; k++) train_step(m, k, (step_t){8, 40, false, k > 6 && k % 3 == 0, false, false, false});
  CHECK(m->found);
  CHECK_EQ_I64(m->divergent, 0);
  CHECK_EQ_I64(m->off, 0);
  model_free(m);
}

/* A program that changes its step for good: two divergent periods, then retirement. */
static void changed(void) {
  model_t *m = model_new();
  for (int k = 0; k < 10; k++) train_step(m, k, (step_t){8, 40, false, false, false, false, false});
  CHECK(m->found);
  for (int k = 10; k < 20; k++) train_step(m, k, (step_t){13, 40, false, false, false, false, false});
  CHECK(m->divergent >= 2);
  CHECK(m->retired >= 1);
  model_free(m);
}

/* The clock alone: windows, late events, a period's worth off the plan. */
static void clock_rules(void) {
  pa_period_t p = {6, (uint64_t[]){256, 512, 0, 256, 0, 0}, (uint32_t[]){2, 4, 0, 5, 1, 3}};
  pa_clock_t c;
  pa_clock_start(&c, &p, 0);
  pa_tick_t t = pa_clock_alloc(&c, 512);
  CHECK_EQ_I64(t.at, 1);                          /* position 0 skipped */
  CHECK(!t.late);
  CHECK_EQ_I64(c.misses, 1);
  t = pa_clock_alloc(&c, 256);
  CHECK_EQ_I64(t.at, 0);                          /* ... and came late: on the plan, its slot's time gone */
  CHECK(t.late);
  CHECK_EQ_I64(c.misses, 0);
  CHECK_EQ_I64(pa_clock_free(&c, 0).at, 2);       /* the buffer made at 0 */
  CHECK_EQ_I64(pa_clock_free(&c, 1).at, 4);       /* made at 1: 3 skipped */
  CHECK_EQ_I64(pa_clock_free(&c, PA_CLOCK_OFF).at, PA_CLOCK_OFF); /* nothing the plan made */
  CHECK_EQ_I64(pa_clock_alloc(&c, 256).at, 3);    /* late */
  t = pa_clock_free(&c, 3);
  CHECK_EQ_I64(t.at, 5);
  CHECK_EQ_I64(t.end, PA_PERIOD_DIVERGENT);       /* 1 of 6 off: more than a tenth */
  CHECK_EQ_I64(t.misses, 1);
  CHECK_EQ_I64(c.pos, 0);
  for (int i = 0; i < 6; i++) t = pa_clock_alloc(&c, 4096); /* nothing of the kind: off */
  CHECK_EQ_I64(t.end, PA_PERIOD_NONE);
  t = pa_clock_alloc(&c, 4096);                   /* a period's worth and one: divergent, retired */
  CHECK_EQ_I64(t.end, PA_PERIOD_DIVERGENT);
  CHECK(t.retire);
}

/* ---- the real programs' logs ------------------------------------------------------------------ */

/* gpu-events' format through xz: every event after the first period the plan served is
 * on it, up to the program's exit (its last allocation: the frees after it are the exit's). */
static char **read_lines(const char *path, size_t *n) {
  char cmd[4200], line[256];
  snprintf(cmd, sizeof cmd, "xz -dc '%s'", path);
  FILE *f = popen(cmd, "r");
  char **v = NULL;
  size_t cap = 0;
  *n = 0;
  while (f && fgets(line, sizeof line, f)) {
    if (*n == cap) v = realloc(v, (cap = cap ? 2 * cap : 4096) * sizeof *v);
    v[(*n)++] = strdup(line);
  }
  CHECK(f && pclose(f) == 0);
  return v;
}

static void real_log(const char *path) {
  size_t n, last = 0;
  char **lines = read_lines(path, &n);
  for (size_t i = 0; i < n; i++)
    if (lines[i][0] == 'a') last = i;
  model_t *m = model_new();
  static unsigned long long ptr[MAXB];
  uint32_t next = 0;
  for (size_t i = 0; i <= last && next < MAXB; i++) {
    char kind, p[64];
    long long a, b;
    int k = sscanf(lines[i], " %c %63s %lld %lld", &kind, p, &a, &b);
    unsigned long long v = strtoull(p, NULL, 16);
    if (kind == 'a' && k == 4 && v) ptr[next] = v, alloc_ev(m, next++, (uint64_t)a);
    else if (kind == 'f')
      for (uint32_t j = next; j-- > 0;) /* the live buffer at that address */
        if (ptr[j] == v && m->blive[j]) {
          free_ev(m, j);
          break;
        }
  }
  for (size_t i = 0; i < n; i++) free(lines[i]);
  free(lines);
  CHECK(m->found);
  printf("%s: period %u, %llu events followed on the plan, %llu off, %llu periods, %llu divergent\n", path,
         m->per.period, (unsigned long long)m->on, (unsigned long long)m->off, (unsigned long long)m->periods,
         (unsigned long long)m->divergent);
  CHECK(m->periods >= 5);
  CHECK_EQ_I64(m->divergent, 0);
  CHECK_EQ_I64(m->off, 0);
  model_free(m);
}

int main(int argc, char **argv) {
  dead_counts();
  clock_rules();
  later_cut();
  cut_ties();
  loops();
  matcher();
  zero_grad_burst();
  extras();
  every_other();
  warm_cache();
  lazy_state();
  begun_mid_step(true);
  begun_mid_step(false);
  swapped();
  late_plan(false);
  late_plan(true);
  changed();
  for (int i = 1; i < argc; i++) real_log(argv[i]);
  return test_report("test_clock");
}
