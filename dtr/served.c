/* The served phase's swap schedule: the preload serves the recorded iteration over and
 * over, so its launches are a cycle, and the swap schedule of the whole trace
 * (swapplan.c) is planned once over one turn of it and followed every period. The
 * preload describes the turn (pa_cycle_t: launch positions, what each touches, when each
 * buffer lives); this file turns it into an access trace, plans, and indexes the swaps
 * by position: which buffers leave once a launch is issued, which come back before one.
 * A buffer that lives across the period's end (a slot allocated late, freed early in
 * the next period) is two pieces in the trace, its tail and its head: each may leave
 * and come back on its own. */
#include "dtr.h"

#include <stdlib.h>

/* A slot lives over [born, gone) on the cycle, wrapped round the end when gone < born;
 * the buffers after the slots live the whole turn. */
static bool whole(const pa_cycle_t *c, uint32_t b) { return b >= c->nslots; }
static bool wraps(const pa_cycle_t *c, uint32_t b) { return !whole(c, b) && c->gone[b] < c->born[b]; }

bool pa_cycle_alive(const pa_cycle_t *c, uint32_t b, uint32_t q) {
  if (whole(c, b)) return true;
  return wraps(c, b) ? q >= c->born[b] || q < c->gone[b] : q >= c->born[b] && q < c->gone[b];
}

/* The trace is two turns: the first turn's swaps are followed, and the second gives them
 * the future (a buffer used at the start of the period, idle at its end, comes back for
 * the next period's start). Positions Q in [0, 2 nop); q = Q mod nop. */
typedef struct build_s {
  const pa_cycle_t *c;
  pa_atrace_t *t;
  uint32_t *cur, *end;      /* per buffer: its piece alive now (UINT32_MAX: none), and where it ends */
  uint32_t *of;             /* per piece: the cycle's buffer */
  uint32_t *die_head, *die_next; /* per position: the pieces ending there (a list through die_next) */
  uint32_t *born_head, *born_next; /* per position: the slots born there (a list through born_next) */
  uint32_t *pinned, npinned;       /* the buffers touched at every position they live */
} build_t;

static bool born(build_t *b, uint32_t x, uint32_t Q, uint32_t end) {
  const pa_cycle_t *c = b->c;
  if (end <= Q) return true; /* alive at no launch */
  uint32_t id = pa_atrace_buffer(b->t, c->size[x], whole(c, x));
  if (id == UINT32_MAX) return false;
  b->of[id] = x, b->cur[x] = id, b->end[x] = end;
  if (end <= 2 * c->nop) b->die_next[id] = b->die_head[end - 1], b->die_head[end - 1] = id;
  return true;
}

/* The pieces born at the start, buffer by buffer: whole buffers, wrapped slots' heads,
 * and slots born at position 0. */
static bool first_births(build_t *b) {
  const pa_cycle_t *c = b->c;
  for (uint32_t x = 0; x < c->nbuf; x++) {
    bool ok = whole(c, x) ? born(b, x, 0, UINT32_MAX) : !wraps(c, x) || born(b, x, 0, c->gone[x]);
    if (ok && !whole(c, x) && c->born[x] == 0) ok = born(b, x, 0, (wraps(c, x) ? c->nop : 0) + c->gone[x]);
    if (!ok) return false;
  }
  return true;
}

/* The slots born at Q's position after the start, a wrapped one until its death in the
 * next turn. */
static bool births(build_t *b, uint32_t Q) {
  const pa_cycle_t *c = b->c;
  uint32_t q = Q % c->nop, turn = Q - q;
  if (Q == 0) return first_births(b);
  for (uint32_t x = b->born_head[q]; x != UINT32_MAX; x = b->born_next[x])
    if (!born(b, x, Q, turn + (wraps(c, x) ? c->nop : 0) + c->gone[x])) return false;
  return true;
}

/* The lists of slots by birth position (none born past the turn's last launch). */
static void index_births(build_t *b) {
  const pa_cycle_t *c = b->c;
  for (uint32_t x = c->nslots; x-- > 0;)
    if (c->born[x] < c->nop) b->born_next[x] = b->born_head[c->born[x]], b->born_head[c->born[x]] = x;
}

static void deaths(build_t *b, uint32_t Q) {
  for (uint32_t id = b->die_head[Q]; id != UINT32_MAX; id = b->die_next[id]) {
    pa_atrace_release(b->t, id);
    if (b->cur[b->of[id]] == id) b->cur[b->of[id]] = UINT32_MAX;
  }
}

/* A pinned buffer is in use wherever it lives: no idle stretch, no candidate. */
static bool touch_pinned(build_t *b) {
  for (uint32_t i = 0; i < b->npinned; i++)
    if (b->cur[b->pinned[i]] != UINT32_MAX && pa_atrace_touch(b->t, b->cur[b->pinned[i]])) return false;
  return true;
}

static bool build(build_t *b) {
  const pa_cycle_t *c = b->c;
  index_births(b);
  for (uint32_t x = 0; c->pinned && x < c->nbuf; x++)
    if (c->pinned[x]) b->pinned[b->npinned++] = x;
  for (uint32_t Q = 0; Q < 2 * c->nop; Q++) {
    uint32_t q = Q % c->nop;
    if (!births(b, Q) || pa_atrace_op(b->t, c->ns) || !touch_pinned(b)) return false;
    for (uint32_t k = c->op_first[q]; k < c->op_first[q + 1]; k++) {
      uint32_t x = c->used[k], id = x < c->nbuf ? b->cur[x] : UINT32_MAX;
      if (id != UINT32_MAX && pa_atrace_touch(b->t, id)) return false;
    }
    deaths(b, Q);
  }
  return true;
}

/* CSR by position of the swaps' buffers: at[q] .. at[q + 1]. */
static bool index_by(pa_cycle_plan_t *p, const pa_swap_t *w, size_t n, const uint32_t *of, bool out) {
  uint32_t *at = calloc(p->nop + 2, sizeof *at), *ids = malloc((n + 1) * sizeof *ids);
  if (!at || !ids) return free(at), free(ids), false;
  for (size_t i = 0; i < n; i++) {
    uint32_t q = out ? w[i].out_after : w[i].back_at;
    if (q < p->nop) at[q + 2]++;
  }
  for (uint32_t q = 0; q < p->nop; q++) at[q + 2] += at[q + 1];
  for (size_t i = 0; i < n; i++) {
    uint32_t q = out ? w[i].out_after : w[i].back_at;
    if (q < p->nop) ids[at[q + 1]++] = of[w[i].buf];
  }
  if (out) p->out_at = at, p->outs = ids;
  else p->back_at = at, p->backs = ids;
  return true;
}

void pa_cycle_plan_free(pa_cycle_plan_t *p) {
  free(p->out_at), free(p->outs), free(p->back_at), free(p->backs);
  *p = (pa_cycle_plan_t){0};
}

static uint32_t *fill(size_t n, uint32_t v) {
  uint32_t *a = malloc((n + 1) * sizeof *a);
  for (size_t i = 0; a && i <= n; i++) a[i] = v;
  return a;
}

/* The first turn's swaps, positions taken modulo the turn: restores due in the second
 * turn are issued in the next period. */
static size_t first_turn(pa_swap_t *w, size_t n, uint32_t nop) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++) {
    if (w[i].out_after >= nop) continue;
    w[k] = w[i];
    if (w[k].back_at != UINT32_MAX) w[k].back_at = w[k].back_at % nop;
    k++;
  }
  return k;
}

static bool used_at(const pa_cycle_t *c, uint32_t q, uint32_t x) {
  for (uint32_t k = c->op_first[q]; k < c->op_first[q + 1]; k++)
    if (c->used[k] == x) return true;
  return false;
}

/* An idle stretch that starts at position 0 of the first turn only because the trace
 * starts there (a buffer living throughout, or a wrapped slot's head, unused at 0): no
 * such stretch exists period after period (the previous period's tail covers it). */
static bool trace_start(const build_t *b, const pa_swap_t *w) {
  const pa_cycle_t *c = b->c;
  uint32_t x = b->of[w->buf];
  return w->out_after == 0 && b->t->born[w->buf] == 0 && (whole(c, x) || c->born[x] != 0) && !used_at(c, 0, x);
}

static void relieve(int64_t *delta, uint32_t lo, uint32_t hi, uint32_t end, int64_t bytes) {
  if (lo > hi || lo >= end) return;
  delta[lo] += bytes, delta[hi + 1 < end ? hi + 1 : end] -= bytes;
}

/* Positions over budget period after period: the second turn's live bytes (live: the
 * trace's, pa_atrace_live) less what the first turn's swaps relieve there, as they are
 * followed every period (each also a turn later). UINT32_MAX without memory. */
static uint32_t steady_over(const build_t *b, const int64_t *live, const pa_swap_t *w, size_t n, uint64_t budget) {
  uint32_t nop = b->c->nop, over = 0;
  int64_t *delta = calloc(2 * (size_t)nop + 1, sizeof *delta), saved = 0;
  if (!delta) return UINT32_MAX;
  for (size_t i = 0; i < n; i++) {
    if (w[i].out_after >= nop) continue;
    int64_t bytes = (int64_t)b->t->size[w[i].buf];
    relieve(delta, w[i].lo, w[i].hi, 2 * nop, bytes);
    if (!trace_start(b, &w[i])) relieve(delta, w[i].lo + nop, w[i].hi + nop, 2 * nop, bytes);
  }
  for (uint32_t Q = 0; Q < 2 * nop; Q++) saved += delta[Q], over += Q >= nop && live[Q] - saved > (int64_t)budget;
  free(delta);
  return over;
}

/* The schedule for a host lead_ns ahead, into p (its over counted). */
static bool plan_at(build_t *b, const int64_t *live, uint64_t budget, double bytes_per_ns, double latency_ns, double lead_ns,
                    pa_cycle_plan_t *p) {
  uint32_t nop = b->c->nop;
  pa_swap_t *w = NULL;
  size_t n = 0;
  bool ok = !pa_swap_plan(b->t, budget, bytes_per_ns, latency_ns, lead_ns, &w, &n);
  uint32_t over = ok ? steady_over(b, live, w, n, budget) : UINT32_MAX;
  *p = (pa_cycle_plan_t){.nop = nop, .lead_ns = lead_ns, .over = over};
  if (ok) n = first_turn(w, n, nop);
  ok = ok && over != UINT32_MAX && index_by(p, w, n, b->of, true) && index_by(p, w, n, b->of, false);
  p->nswaps = ok ? n : 0;
  if (!ok) pa_cycle_plan_free(p);
  free(w);
  return ok;
}

/* Halving the lead until no position is over: a host held closer to the device sees a
 * copy out done sooner, so more pages may leave and come back within a period
 * (mlp_train, 16 layers, at 50 %: 21 served-phase host waits at a lead of 32 launches,
 * none at the 8 this finds). */
static bool plan_leads(build_t *b, uint64_t budget, double bytes_per_ns, double latency_ns, pa_cycle_plan_t *p) {
  const pa_cycle_t *c = b->c;
  int64_t *live = pa_atrace_live(b->t); /* the same at every lead */
  bool ok = live && plan_at(b, live, budget, bytes_per_ns, latency_ns, c->lead_ns, p);
  for (double lead = c->lead_ns / 2; ok && p->over && lead >= c->ns; lead /= 2) {
    pa_cycle_plan_t q;
    if (!(ok = plan_at(b, live, budget, bytes_per_ns, latency_ns, lead, &q))) pa_cycle_plan_free(p);
    else if (q.over < p->over) pa_cycle_plan_free(p), *p = q;
    else pa_cycle_plan_free(&q);
  }
  free(live);
  return ok;
}

int pa_cycle_plan(const pa_cycle_t *c, uint64_t budget, double bytes_per_ns, double latency_ns, pa_cycle_plan_t *p) {
  *p = (pa_cycle_plan_t){.nop = c->nop};
  pa_atrace_t t;
  pa_atrace_init(&t);
  size_t pieces = 3 * (size_t)c->nbuf, ops = 2 * (size_t)c->nop;
  build_t b = {c, &t, fill(c->nbuf, UINT32_MAX), fill(c->nbuf, 0), fill(pieces, 0), fill(ops, UINT32_MAX),
               fill(pieces, UINT32_MAX), fill(c->nop, UINT32_MAX), fill(c->nslots, UINT32_MAX), fill(c->nbuf, 0), 0};
  bool ok = c->nop && b.cur && b.end && b.of && b.die_head && b.die_next && b.born_head && b.born_next && b.pinned &&
            build(&b) && plan_leads(&b, budget, bytes_per_ns, latency_ns, p);
  free(b.cur), free(b.end), free(b.of), free(b.die_head), free(b.die_next), free(b.born_head), free(b.born_next), free(b.pinned);
  pa_atrace_free(&t);
  return ok ? 0 : -1;
}
