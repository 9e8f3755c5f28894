/* The iteration clock: finding the period in the recording, then following the program
 * through the plan's period event by event. Events in, decisions out: no CUDA, no lock
 * and no state of its own (the callers hold pa_mu and own the structs), so
 * tests/preload/test_clock.c runs it on bare event streams, the real programs' logs among
 * them.
 *
 * Following is by identity, not by order alone. An allocation takes the next expected
 * allocation of its size within a window ahead. A free is known by its buffer: every
 * buffer carries the period position of its allocation (its tag, taken when it was
 * made, the recording's buffers included), and the plan knows where each position's
 * buffer is freed. So the frees of buffers made before the plan served (PyTorch frees a
 * step's gradients at the next step's zero_grad, 161 at once on ResNet-50) move the
 * clock as the plan's own buffers' do; before, they matched no slot, the clock stopped,
 * and every later event was off the plan. Positions the clock skips wait a little for
 * their event, which may come late (another thread's). */
#include "pa.h"

#include <stdlib.h>
#include <string.h>
#define HASH_FUNCTION PA_HASH_WORD
#include <uthash.h>

/* ---- the finder ------------------------------------------------------------------------ */

struct pa_last_s {
  uint64_t tok, pos;
  UT_hash_handle hh;
};

#define PA_CANDIDATES 48 /* earlier occurrences of a token tried as periods */
#define HASH_BASE 0x9e3779b97f4a7c15ull

static bool finder_room(pa_finder_t *f, size_t n) {
  if (n + 2 <= f->cap) return true;
  size_t c1 = f->cap, c2 = f->cap, c3 = f->cap;
  if (!pa_grow(&f->prefix, &c1, n + 2, sizeof *f->prefix, SIZE_MAX) ||
      !pa_grow(&f->power, &c2, n + 2, sizeof *f->power, SIZE_MAX) ||
      !pa_grow(&f->prev_same, &c3, n + 2, sizeof *f->prev_same, SIZE_MAX))
    return false;
  f->cap = c1 < c2 ? c1 : c2;
  f->cap = f->cap < c3 ? f->cap : c3;
  return true;
}

/* Where tok was last seen before position n, now n (PA_NO_EVENT: never, or no memory). */
static uint64_t last_swap(pa_finder_t *f, uint64_t tok, uint64_t n) {
  struct pa_last_s *l;
  HASH_FIND(hh, f->last, &tok, sizeof tok, l);
  uint64_t prev = l ? l->pos : PA_NO_EVENT;
  if (!l && (l = calloc(1, sizeof *l))) {
    l->tok = tok;
    HASH_ADD(hh, f->last, tok, sizeof l->tok, l);
  }
  if (l) l->pos = n;
  return prev;
}

bool pa_finder_push(pa_finder_t *f, uint64_t tok) {
  size_t n = f->n;
  if (!finder_room(f, n)) return false;
  if (!n) f->power[0] = 1, f->prefix[0] = 0;
  f->power[n + 1] = f->power[n] * HASH_BASE;
  f->prefix[n + 1] = f->prefix[n] * HASH_BASE + tok;
  f->prev_same[n] = last_swap(f, tok, n);
  f->n = n + 1;
  return true;
}

void pa_finder_reset(pa_finder_t *f) {
  struct pa_last_s *l, *tmp;
  HASH_ITER(hh, f->last, l, tmp) {
    HASH_DEL(f->last, l);
    free(l);
  }
  f->n = 0;
}

void pa_finder_free(pa_finder_t *f) {
  pa_finder_reset(f);
  free(f->prefix), free(f->power), free(f->prev_same);
  memset(f, 0, sizeof *f);
}

/* Hash of events [a, b). */
static uint64_t window(const pa_finder_t *f, uint64_t a, uint64_t b) {
  return f->prefix[b] - f->prefix[a] * f->power[b - a];
}

/* The last `copies` windows of p events are equal and balanced. */
static bool repeats(const pa_finder_t *f, const pa_log_t *log, uint64_t end, uint64_t p, uint64_t copies) {
  if (copies * p > end) return false;
  uint64_t h = window(f, end - p, end);
  for (uint64_t k = 1; k < copies; k++) {
    uint64_t e = end - k * p;
    if (window(f, e - p, e) != h || log->live[e - 1] != log->live[end - 1]) return false;
  }
  return !memcmp(log->tok + end - 2 * p, log->tok + end - p, p * sizeof *log->tok);
}

static bool has_alloc(const pa_log_t *log, uint64_t end, uint64_t p) {
  for (uint64_t i = end - p; i < end; i++)
    if (log->ev_alloc[i]) return true;
  return false;
}

/* Whether event i is a better cut than event best (PA_NO_EVENT: none yet), the period
 * ending at each hashing hi and hbest: fewer bytes live, or as few and a lower hash.
 * Ties are common (each of an optimizer's scratch pairs returns to the same bytes), and
 * the first of them depended on where the log began: found again by a recording from
 * mid-step, torch_stream's shapes were a plan rotated, not the kept one. */
static bool before(const pa_log_t *log, uint64_t i, uint64_t hi, uint64_t best, uint64_t hbest) {
  if (best == PA_NO_EVENT) return true;
  if (log->live[i] != log->live[best]) return log->live[i] < log->live[best];
  return hi < hbest;
}

/* ... the period ending there hashed as its window ending at i. */
static bool lower(const pa_finder_t *f, const pa_log_t *log, uint64_t p, uint64_t i, uint64_t best) {
  return before(log, i, window(f, i + 1 - p, i + 1), best, best == PA_NO_EVENT ? 0 : window(f, best + 1 - p, best + 1));
}

/* A period of fewer than 2 * PA_CLOCK_MIN_SPAN events is a loop inside the step (an
 * optimizer's scratch pairs, one per parameter group: torch_stream's 60 layers ran 8 in
 * its first step, found, planned, and off the plan at once: a divergent period) unless
 * its copies, unbroken, span as many events as came before them, and did not run and stop
 * earlier in the log. A real iteration that short runs from near the program's start
 * (reuse_race: 4 rounds of 6 events, the whole program); one after a longer warm-up is
 * found once its copies outnumber the warm-up. */
static bool loop_inside(const pa_finder_t *f, uint64_t end, uint64_t p) {
  uint64_t w = window(f, end - p, end), run = end - p;
  while (run >= p && window(f, run - p, run) == w) run -= p; /* the copies' first */
  if (end - run < run) return true;
  uint64_t j = f->prev_same[run];
  for (int k = 0; k < PA_CANDIDATES && j != PA_NO_EVENT; k++, j = f->prev_same[j])
    if (j + p <= run && window(f, j, j + p) == w) return true;
  return false;
}

/* The loop of a few events a period of p is made of: p itself if that short, or the
 * distance q back to the last event's previous instance where the p events are copies of
 * q (24 of an optimizer's scratch pairs repeat as a period of 24 too); else 0. */
static uint64_t loop_of(const pa_finder_t *f, uint64_t end, uint64_t p) {
  if (p < 2 * PA_CLOCK_MIN_SPAN) return p;
  uint64_t j = f->prev_same[end - 1], q = j == PA_NO_EVENT ? 0 : end - 1 - j;
  if (!q || q >= 2 * PA_CLOCK_MIN_SPAN || p % q) return 0;
  return window(f, end - p, end - q) == window(f, end - p + q, end) ? q : 0;
}

/* The hash of the last p events rotated to end at event i (one of them): those after i,
 * then those up to it. Where the log repeats over 2p it is window(i + 1 - p, i + 1). */
static uint64_t rotation(const pa_finder_t *f, uint64_t end, uint64_t p, uint64_t i) {
  return window(f, i + 1, end) * f->power[i + 1 - (end - p)] + window(f, end - p, i + 1);
}

/* The cut of the last p events: the fewest bytes live, ties to the lower rotation (as
 * lower() picks, where the log repeats over 2p). */
static uint64_t lowest(const pa_finder_t *f, const pa_log_t *log, uint64_t end, uint64_t p) {
  uint64_t best = end - 1, h = rotation(f, end, p, best);
  for (uint64_t i = end - p, r; i + 1 < end; i++)
    if (before(log, i, r = rotation(f, end, p, i), best, h)) best = i, h = r;
  return best;
}

/* Events of its next copy a period's cut must be followed by, repeated, to serve before
 * that copy ends. */
static uint64_t part_of(uint64_t p) { return p / PA_CLOCK_PART > 2 * PA_CLOCK_MIN_SPAN ? p / PA_CLOCK_PART : 2 * PA_CLOCK_MIN_SPAN; }

/* What seen_cut needs that costs O(1): the last part_of(p) events repeat, as do the
 * bytes live over the last p. seen_cut costs O(p), so this passes every p /
 * PA_CLOCK_PART_TRIES events only (a plan over two iterations never passes seen_cut,
 * and would try it at every event of its second copy). */
static bool may_have_seen(const pa_finder_t *f, const pa_log_t *log, uint64_t end, uint64_t p, uint64_t copies) {
  uint64_t part = part_of(p);
  if (p < 2 * PA_CLOCK_MIN_SPAN || end < (copies - 1) * p + part + 1 || end % (1 + p / PA_CLOCK_PART_TRIES)) return false;
  return log->live[end - 1] == log->live[end - 1 - p] && window(f, end - part, end) == window(f, end - part - p, end - p);
}

/* Whether the copies - 1 windows of p ending at cut i repeat on to the log's end and
 * leave the same bytes live (a hash check; the caller compares the tokens). */
static bool repeats_from(const pa_finder_t *f, const pa_log_t *log, uint64_t end, uint64_t p, uint64_t copies, uint64_t i) {
  uint64_t from = i + 1 - (copies - 1) * p;
  for (uint64_t k = 1; k < copies; k++)
    if (log->live[i - k * p] != log->live[i]) return false;
  return window(f, from, end - p) == window(f, from + p, end);
}

/* Event j made a buffer not yet freed, or one that outlives p (a plan over two
 * iterations, which waits for two whole ones). */
static bool open_at(const pa_log_t *log, uint64_t j, uint64_t p) {
  uint64_t f = log->ev_alloc[j] ? log->free_pos[log->ev_id[j]] : 0;
  return log->ev_alloc[j] && (f == PA_NO_EVENT || f - j > p);
}

/* The most bytes live a cut of the last p events may have (PA_CLOCK_CUT_SLACK). */
static uint64_t ceiling_of(const pa_log_t *log, uint64_t end, uint64_t p) {
  uint64_t lo = UINT64_MAX, hi = 0;
  for (uint64_t i = end - p; i < end; i++) lo = log->live[i] < lo ? log->live[i] : lo, hi = log->live[i] > hi ? log->live[i] : hi;
  return lo + (hi - lo) / PA_CLOCK_CUT_SLACK;
}

/* The last copy need not end: a cut i whose copies - 1 windows of p repeat on to the end
 * of the log, part_of(p) events past i at least, with every buffer the window before i
 * made freed already, within p (their lifetimes, what the rest of the copy would tell,
 * are the plan), and no more bytes live at i than PA_CLOCK_CUT_SLACK allows; of those,
 * the fewest bytes live (ties to the lower rotation, as lowest()); PA_NO_EVENT if none.
 * The cut need not be lowest()'s: a recording beside a plan the program left begins
 * PA_BESIDE_RUN events into the new length, often just past the step's fewest bytes
 * live, whose window then reaches back before the log. */
static uint64_t seen_cut(const pa_finder_t *f, const pa_log_t *log, uint64_t end, uint64_t p, uint64_t copies) {
  uint64_t span = (copies - 1) * p, first = end - p > span ? end - p : span, best = PA_NO_EVENT, h = 0, open = 0;
  if (first + part_of(p) >= end) return PA_NO_EVENT;
  uint64_t ceiling = ceiling_of(log, end, p);
  for (uint64_t j = first + 1 - p; j <= first; j++) open += open_at(log, j, p);
  for (uint64_t i = first; i + part_of(p) < end; open += open_at(log, i + 1, p) - open_at(log, i + 1 - p, p), i++) {
    uint64_t r = rotation(f, end, p, i);
    if (!open && log->live[i] <= ceiling && before(log, i, r, best, h) && repeats_from(f, log, end, p, copies, i)) best = i, h = r;
  }
  uint64_t from = best == PA_NO_EVENT ? 0 : best + 1 - span;
  if (best == PA_NO_EVENT || memcmp(log->tok + from, log->tok + from + p, (end - from - p) * sizeof *log->tok)) return PA_NO_EVENT;
  return best;
}

/* The shortest period whose last copies repeat whole, or whose last copy repeats as far
 * as seen_cut needs. torch_stream's rows of scripts/bench-lengths.sh with a logging
 * buffer every other step (an iteration of two steps) waited for two whole iterations of
 * each new length, 4-5 of its 10 steps; stress-streams served 84.6 % of allocations from
 * the plan, 85.8 % so. */
uint64_t pa_finder_period(const pa_finder_t *f, const pa_log_t *log, uint64_t min_period, uint64_t copies, bool part,
                          uint64_t *cut) {
  uint64_t end = f->n, j = end ? end - 1 : 0;
  if (copies < 2) copies = 2;
  for (int k = 0; end && k < PA_CANDIDATES && (j = f->prev_same[j]) != PA_NO_EVENT; k++) {
    uint64_t p = end - 1 - j, need = copies * p >= PA_CLOCK_MIN_SPAN ? copies : (PA_CLOCK_MIN_SPAN + p - 1) / p;
    if (p < min_period || p < 2) continue;
    bool whole = repeats(f, log, end, p, need);
    if ((!whole && (!part || !may_have_seen(f, log, end, p, need))) || !has_alloc(log, end, p)) continue;
    uint64_t best = whole ? lowest(f, log, end, p) : seen_cut(f, log, end, p, need);
    if (best == PA_NO_EVENT) continue;
    uint64_t q = loop_of(f, end, p);
    if (q && loop_inside(f, end, q)) continue;
    *cut = best;
    return p;
  }
  return 0;
}

uint64_t pa_finder_later_cut(const pa_finder_t *f, const pa_log_t *log, uint64_t p, uint64_t cut) {
  uint64_t end = f->n, best = PA_NO_EVENT;
  for (uint64_t j = cut + 1; p && j < end; j++) {
    if (j + 1 < 2 * p || window(f, j + 1 - 2 * p, j + 1 - p) != window(f, j + 1 - p, j + 1)) continue;
    if (lower(f, log, p, j, best)) best = j;
  }
  if (best != PA_NO_EVENT && memcmp(log->tok + best + 1 - 2 * p, log->tok + best + 1 - p, p * sizeof *log->tok)) return PA_NO_EVENT;
  return best;
}

/* ---- the period as the clock follows it ---------------------------------------------- */

/* The period position of log event j, the period starting at log event s. */
static uint32_t phase_of(uint64_t j, uint64_t s, uint64_t period) {
  uint64_t back = j < s ? (s - j) % period : 0;
  return (uint32_t)(j >= s ? (j - s) % period : (period - back) % period);
}

/* The window's position whose buffer the free at j would free a period on, where the log
 * shows it: the free a period later, with the same token, of a buffer the window made. */
static uint32_t next_copy(const pa_period_t *p, const pa_log_t *log, uint64_t s, uint64_t j) {
  uint64_t k = j + p->period, id = k < log->nev ? log->ev_id[k] : 0;
  if (k >= log->nev || log->ev_alloc[k] || (id & PA_LOG_OLD) || log->tok[k] != log->tok[j]) return PA_CLOCK_OFF;
  uint64_t at = log->alloc_pos[id];
  return at >= s && at < s + p->period ? (uint32_t)(at - s) : PA_CLOCK_OFF;
}

/* ... where it does not, for logged buffer id made before the window: by rank among the
 * allocations of its token, counted back from the window's end over the window's, and
 * from the window's start over those made after it and freed (the warm-up's extra ones,
 * the optimizer's state, stay: they have no place in the period). */
static uint32_t same_back(const pa_period_t *p, const pa_log_t *log, uint64_t s, uint64_t id) {
  uint64_t at = log->alloc_pos[id], tok = log->tok[at], k = 0;
  if (at + p->period < s) return PA_CLOCK_OFF; /* it outlives the period */
  for (uint64_t j = at + 1; j < s; j++) k += log->ev_alloc[j] && log->tok[j] == tok && log->free_pos[log->ev_id[j]] != PA_NO_EVENT;
  for (uint32_t t = p->period; t-- > 0;)
    if (log->ev_alloc[s + t] && log->tok[s + t] == tok && !k--) return t;
  return PA_CLOCK_OFF;
}

/* Each free names the allocation it frees by identity: made in the window, the window's
 * own. Made before it, the free a period on shows which (next_copy), or its rank among
 * its token's (same_back): a buffer this free released may have been made in the
 * warm-up, whose steps are not the period's (PyTorch's first step makes the optimizer's
 * state between the step's own buffers), while the same free a period later releases the
 * period's own. A buffer made before the log began has no log entry: its free's id
 * carries how many allocations back it was made (PA_LOG_OLD), and no size to check. */
static void pair_frees(pa_period_t *p, const pa_log_t *log, uint64_t s, uint32_t *alloc_at) {
  uint64_t before = 0, made = 0, n = 0;
  for (uint64_t j = 0; j < s; j++) before += log->ev_alloc[j];
  for (uint32_t t = 0; t < p->period; t++)
    if (log->ev_alloc[s + t]) alloc_at[n++] = t;
  for (uint32_t t = 0; t < p->period && n; t++) {
    uint64_t j = s + t, id = log->ev_id[j], old = !log->ev_alloc[j] && (id & PA_LOG_OLD);
    uint64_t back = old ? id & ~(uint64_t)PA_LOG_OLD : before + made - id; /* made at allocation number id */
    made += log->ev_alloc[j];
    if (log->ev_alloc[j] || !back) continue;
    uint32_t a = back <= made ? alloc_at[made - back] : next_copy(p, log, s, j);
    if (a == PA_CLOCK_OFF) a = old ? alloc_at[(made + n - back % n) % n] : same_back(p, log, s, id);
    if (a == PA_CLOCK_OFF || (!old && p->size[a] != log->size[id]) || p->mate[a] != PA_CLOCK_OFF) continue; /* not made in the period */
    p->mate[t] = a, p->mate[a] = t;
  }
}

bool pa_period_build(pa_period_t *p, const pa_log_t *log, uint64_t period, uint64_t cut) {
  uint64_t s = cut + 1 - period;
  memset(p, 0, sizeof *p);
  p->period = (uint32_t)period;
  p->size = malloc(period * sizeof *p->size);
  p->mate = malloc(period * sizeof *p->mate);
  uint32_t *alloc_at = malloc(period * sizeof *alloc_at);
  if (period >= PA_CLOCK_OFF || !p->size || !p->mate || !alloc_at) return free(alloc_at), pa_period_free(p), false;
  for (uint64_t t = 0; t < period; t++) {
    uint64_t j = s + t;
    p->size[t] = log->ev_alloc[j] ? log->size[log->ev_id[j]] : 0, p->mate[t] = PA_CLOCK_OFF;
  }
  pair_frees(p, log, s, alloc_at);
  free(alloc_at);
  return true;
}

void pa_period_free(pa_period_t *p) {
  free(p->size), free(p->mate);
  p->size = NULL, p->mate = NULL;
}

uint32_t pa_period_tag(const pa_period_t *p, uint64_t ev, uint64_t start, uint64_t size) {
  if (!p->period) return PA_CLOCK_OFF;
  uint32_t t = phase_of(ev, start, p->period);
  return p->size[t] == size ? t : PA_CLOCK_OFF;
}

/* ---- following ---------------------------------------------------------------------------- */

void pa_clock_start(pa_clock_t *c, const pa_period_t *p, uint32_t pos) {
  memset(c, 0, sizeof *c);
  c->per = p, c->pos = pos < p->period ? pos : 0;
  c->partial = c->pos != 0;
}

/* Positions skipped lately, oldest first: an event may still come for them. */
static bool take_late(pa_clock_t *c, uint32_t t) {
  for (uint32_t i = 0; i < c->nlate; i++)
    if (c->late[i] == t) {
      memmove(c->late + i, c->late + i + 1, (c->nlate - i - 1) * sizeof *c->late);
      c->nlate--;
      return true;
    }
  return false;
}

static void skip(pa_clock_t *c, uint32_t t) {
  if (c->nlate == PA_CLOCK_WINDOW) memmove(c->late, c->late + 1, (--c->nlate) * sizeof *c->late);
  c->late[c->nlate++] = t;
  c->misses++;
}

/* The period ended with the clock's pass over its last position (or, off the plan for
 * a period's worth of events, without it). */
static void period_end(pa_clock_t *c, pa_tick_t *r) {
  bool bad = c->misses * 10 > c->per->period;
  r->end = bad ? PA_PERIOD_DIVERGENT : PA_PERIOD_ON_PLAN, r->misses = c->misses, r->whole = !c->partial;
  c->bad = bad ? c->bad + 1 : 0;
  c->good += !bad && !c->partial, c->periods += !c->partial, c->partial = false;
  r->retire = c->bad >= 2;
  c->misses = 0;
}

/* Moves the clock onto position t (ahead of it within the window) and past it. */
static void advance(pa_clock_t *c, uint32_t t, pa_tick_t *r) {
  uint32_t period = c->per->period;
  r->from = c->pos;
  for (; c->pos != t; c->pos = (c->pos + 1) % period, r->n++) {
    skip(c, c->pos);
    if (c->pos == period - 1) period_end(c, r);
  }
  r->at = t, r->n++;
  c->pos = (t + 1) % period;
  if (t == period - 1) period_end(c, r);
}

/* An event off the plan. A program that stopped following it never brings the clock
 * round to a period end: a period's worth of misses ends one too. */
static pa_tick_t off(pa_clock_t *c) {
  pa_tick_t r = {PA_CLOCK_OFF, c->pos, 0, 0, false, false, false, 0};
  if (++c->misses > c->per->period) c->bad += !c->bad, period_end(c, &r); /* retires at once */
  return r;
}

/* An event for a position skipped lately: on the plan after all, the clock stays. */
static pa_tick_t late(pa_clock_t *c, uint32_t t) {
  c->misses -= c->misses > 0;
  return (pa_tick_t){t, c->pos, 0, 0, false, false, true, 0};
}

static uint32_t ahead(const pa_clock_t *c, uint32_t t) { return (t + c->per->period - c->pos) % c->per->period; }

pa_tick_t pa_clock_alloc(pa_clock_t *c, uint64_t size) {
  const pa_period_t *p = c->per;
  for (uint32_t i = 0; i < c->nlate; i++)
    if (p->size[c->late[i]] == size) {
      uint32_t t = c->late[i];
      take_late(c, t);
      return late(c, t);
    }
  for (uint32_t k = 0; k < PA_CLOCK_WINDOW && k < p->period; k++) {
    uint32_t t = (c->pos + k) % p->period;
    if (p->size[t] != size) continue;
    pa_tick_t r = {PA_CLOCK_OFF, c->pos, 0, 0, false, false, false, 0};
    advance(c, t, &r);
    return r;
  }
  return off(c);
}

pa_tick_t pa_clock_free(pa_clock_t *c, uint32_t tag) {
  const pa_period_t *p = c->per;
  uint32_t t = tag < p->period ? p->mate[tag] : PA_CLOCK_OFF;
  if (t == PA_CLOCK_OFF) return off(c);
  if (ahead(c, t) < PA_CLOCK_WINDOW) {
    pa_tick_t r = {PA_CLOCK_OFF, c->pos, 0, 0, false, false, false, 0};
    advance(c, t, &r);
    return r;
  }
  if (take_late(c, t)) return late(c, t);
  return off(c);
}

uint32_t pa_clock_catch_up(const pa_period_t *p, const pa_log_t *log, uint64_t from, uint32_t *tags) {
  pa_clock_t c;
  pa_clock_start(&c, p, 0);
  for (uint64_t j = from; j < log->nev; j++) {
    uint32_t id = log->ev_id[j];
    if (log->ev_alloc[j]) {
      tags[j - from] = pa_clock_alloc(&c, log->size[id]).at;
      continue;
    }
    tags[j - from] = PA_CLOCK_OFF;
    if (id & PA_LOG_OLD) { /* made before the log: the free the period has here, if any */
      uint32_t t = (uint32_t)((j - from) % p->period);
      if (!p->size[t] && p->mate[t] != PA_CLOCK_OFF) pa_clock_free(&c, p->mate[t]);
      continue;
    }
    uint64_t a = log->alloc_pos[id];
    pa_clock_free(&c, a >= from && a < j ? tags[a - from] : pa_period_tag(p, a, from, log->size[id]));
  }
  return c.pos;
}

/* ---- the kept plans' matcher ----------------------------------------------------------------- */

static uint64_t power_of(uint32_t len) {
  uint64_t x = 1;
  for (uint32_t i = 0; i < len; i++) x *= PA_MATCH_BASE;
  return x;
}

/* Once per length: every event rolls both windows. */
uint64_t pa_match_power(uint32_t len) {
  static uint64_t power[2]; /* PA_MATCH_LEN's, PA_MATCH_SHORT's */
  if (len != PA_MATCH_LEN && len != PA_MATCH_SHORT) return power_of(len);
  uint64_t *x = &power[len == PA_MATCH_SHORT];
  if (!*x) *x = power_of(len);
  return *x;
}

static uint64_t code_at(const pa_period_t *p, int64_t t) {
  uint32_t u = (uint32_t)(((t % p->period) + p->period) % p->period);
  return pa_event_code(p->size[u] != 0, p->size[u]);
}

typedef struct keyed_s { uint64_t key; uint32_t pos; } keyed_t;
static int by_key(const void *a, const void *b) {
  const keyed_t *x = a, *y = b;
  return (x->key > y->key) - (x->key < y->key);
}

bool pa_match_build(pa_match_t *m, const pa_period_t *p, uint32_t len) {
  memset(m, 0, sizeof *m);
  keyed_t *w = p->period ? malloc(p->period * sizeof *w) : NULL;
  m->key = malloc(p->period * sizeof *m->key), m->pos = malloc(p->period * sizeof *m->pos);
  if (!w || !m->key || !m->pos) return free(w), pa_match_free(m), false;
  uint64_t x = 0;
  for (int64_t t = -(int64_t)len; t < (int64_t)p->period; t++) { /* the window ending at t */
    x = pa_match_roll(x, code_at(p, t), t >= 0 ? code_at(p, t - len) : 0, len);
    if (t >= 0) w[t] = (keyed_t){x, (uint32_t)t};
  }
  qsort(w, p->period, sizeof *w, by_key);
  for (uint32_t i = 0; i < p->period; i++) m->key[i] = w[i].key, m->pos[i] = w[i].pos;
  m->n = p->period;
  free(w);
  return true;
}

uint32_t pa_match_next(const pa_match_t *m, uint64_t h, uint32_t *i) {
  if (!*i) { /* the first key not below h */
    uint32_t lo = 0, hi = m->n;
    while (lo < hi) {
      uint32_t mid = lo + (hi - lo) / 2;
      if (m->key[mid] < h) lo = mid + 1;
      else hi = mid;
    }
    *i = lo + 1; /* 1-based from here: 0 means not started */
  }
  uint32_t at = *i - 1;
  if (at >= m->n || m->key[at] != h) return PA_CLOCK_OFF;
  return ++*i, m->pos[at];
}

void pa_match_free(pa_match_t *m) {
  free(m->key), free(m->pos);
  memset(m, 0, sizeof *m);
}
