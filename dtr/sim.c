/* Replays an access trace under a device-memory budget, as planalloc's reactive eviction
 * would run it: before each op the buffers it touches (and those born there) must be
 * resident; when they do not fit, victims chosen by the policy are copied out to host
 * memory, and evicted buffers the op touches are copied back. Copies run on one D2H and
 * one H2D queue beside compute: a copy-out starts once its buffer's last use has run and
 * its space is free when it completes (bytes still being copied out count against the
 * budget; an allocation or restore that needs them waits for those copies, not for the
 * whole queue); a restore starts no earlier than the op is due (reactive: on demand) and
 * the op starts when its restores are done. */
#include "dtr.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *const pa_policy_names[PA_POL_COUNT] = {"lru", "largest", "dtr", "planned"};

typedef struct sim_s {
  const pa_atrace_t *t;
  const pa_sim_opts_t *o;
  pa_sim_result_t *r;
  uint8_t *resident, *evicted;
  uint32_t *pin;             /* op index + 1 that needs it resident */
  uint32_t *counted;         /* planned: op index + 1 whose coming demand counted it */
  uint32_t *last_op, *times_out;
  double *last_end;          /* when its last use finished */
  double *arrive;            /* when its last restore completes (an op touching it waits) */
  uint32_t *res, *pos;       /* resident buffers and each one's index in res */
  uint32_t *next_use;        /* planned: the next op touching it, UINT32_MAX if none */
  uint32_t *next_touch;      /* per touch (ids[k]): the next op touching the same buffer */
  pa_swap_t *swaps;          /* planned: the schedule */
  uint32_t *out_start, *outs; /* the swaps leaving after each op (CSR of indices) */
  uint32_t *back_start, *backs; /* and those coming back as each op starts */
  uint32_t *held;            /* per buffer: the op before which the schedule keeps it out */
  size_t nres;
  uint64_t used;             /* resident bytes */
  double *out_done;          /* copy-outs in queue order: when each completes (nondecreasing) */
  uint64_t *out_cum;         /* and the bytes of it and all before it */
  size_t nout, capout;
  bool nomem;
  double now, d2h, h2d;
  uint64_t rng;
  uint32_t op;               /* the op victims make room for */
} sim_t;

static void add_resident(sim_t *s, uint32_t b) {
  s->resident[b] = 1, s->pos[b] = (uint32_t)s->nres, s->res[s->nres++] = b;
  s->used += s->t->size[b];
  if (s->used > s->r->peak) s->r->peak = s->used;
}

static void drop_resident(sim_t *s, uint32_t b) {
  uint32_t k = s->pos[b], other = s->res[--s->nres];
  s->res[k] = other, s->pos[other] = k, s->resident[b] = 0;
  s->used -= s->t->size[b];
}

static double copy_ns(const sim_t *s, uint64_t bytes) { return s->o->latency_ns + (double)bytes / s->o->bytes_per_ns; }

/* The policies' scores, lower the better victim (pa_victim_pick): a buffer the op
 * being made room for needs is none. */
static double score(void *ctx, size_t i, double min_size) {
  const sim_t *s = ctx;
  uint32_t b = s->res[i];
  uint64_t size = s->t->size[b];
  if (s->pin[b] == s->op + 1) return INFINITY;
  switch (s->o->policy) {
  case PA_POL_LRU: return s->last_op[b];
  case PA_POL_LARGEST: return -(double)size;
  case PA_POL_PLANNED: return -(double)s->next_use[b];
  default:
    if ((double)size < min_size) return INFINITY;
    pa_victim_t v = {copy_ns(s, size), (double)size, (double)(s->op - s->last_op[b]), s->times_out[b]};
    return pa_dtr_score(&v, 1);
  }
}

/* The victim among the unpinned residents, DTR's sampled; UINT32_MAX if none. */
static uint32_t victim(sim_t *s, uint32_t op) {
  s->op = op;
  double mean = s->nres ? (double)s->used / (double)s->nres : 0;
  size_t k = pa_victim_pick(s->nres, mean, s->o->policy == PA_POL_DTR ? &s->rng : NULL, score, s);
  return k == SIZE_MAX ? UINT32_MAX : s->res[k];
}

static void queue_out(sim_t *s, double done, uint64_t bytes) {
  void **arrs[] = {(void **)&s->out_done, (void **)&s->out_cum};
  const size_t elem[] = {sizeof *s->out_done, sizeof *s->out_cum};
  if (!pa_grow_arrays(arrs, elem, 2, &s->capout, s->nout + 1)) {
    s->nomem = true;
    return;
  }
  s->out_done[s->nout] = done;
  s->out_cum[s->nout] = bytes + (s->nout ? s->out_cum[s->nout - 1] : 0);
  s->nout++;
}

/* Bytes of copy-outs still running at time t: the queue is FIFO, so those after the last
 * one done by t. */
static uint64_t pending_at(const sim_t *s, double t) {
  size_t lo = 0, hi = s->nout; /* first copy-out not done by t */
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (s->out_done[mid] <= t) lo = mid + 1;
    else hi = mid;
  }
  uint64_t done = lo ? s->out_cum[lo - 1] : 0;
  return s->nout ? s->out_cum[s->nout - 1] - done : 0;
}

/* The earliest time from t on when bytes more fit beside the residents and the copy-outs
 * still running. */
static double room_at(const sim_t *s, double t, uint64_t bytes) {
  if (s->used + bytes + pending_at(s, t) <= s->o->budget) return t;
  size_t lo = 0, hi = s->nout;
  while (lo < hi) { /* the first completion after which it fits */
    size_t mid = (lo + hi) / 2;
    if (s->used + bytes + (s->out_cum[s->nout - 1] - s->out_cum[mid]) <= s->o->budget) hi = mid;
    else lo = mid + 1;
  }
  double at = lo < s->nout ? s->out_done[lo] : t;
  return at > t ? at : t;
}

static void evict(sim_t *s, uint32_t b) {
  double start = s->d2h > s->last_end[b] ? s->d2h : s->last_end[b];
  if (start < s->arrive[b]) start = s->arrive[b]; /* still coming back */
  s->d2h = start + copy_ns(s, s->t->size[b]);
  queue_out(s, s->d2h, s->t->size[b]);
  drop_resident(s, b);
  s->evicted[b] = 1, s->times_out[b]++;
  s->r->bytes_out += s->t->size[b], s->r->evictions++;
  if (s->o->out_by_buf) s->o->out_by_buf[b] += s->t->size[b];
}

/* Room for need more bytes at op; false (an OOM) when the unpinned residents do not give it. */
static bool make_room(sim_t *s, uint64_t need, uint32_t op) {
  while (s->used + need > s->o->budget) {
    uint32_t v = victim(s, op);
    if (v == UINT32_MAX) return false;
    evict(s, v);
  }
  return true;
}

/* Brings b in: allocated if new, copied back if evicted, the copy starting no earlier
 * than floor; returns when it is there. */
static double bring(sim_t *s, uint32_t b, double floor) {
  double ready = room_at(s, floor, s->t->size[b]);
  if (s->evicted[b]) {
    double start = s->h2d > ready ? s->h2d : ready;
    s->h2d = ready = s->arrive[b] = start + copy_ns(s, s->t->size[b]);
    s->evicted[b] = 0, s->r->bytes_in += s->t->size[b];
  }
  add_resident(s, b);
  return ready;
}

/* Born and released between two ops: never resident. */
static bool stillborn(const pa_atrace_t *t, uint32_t b, uint32_t op) { return t->last[b] != UINT32_MAX && t->last[b] < op; }

/* Needs allocating at op (born there, not yet anywhere). */
static bool to_allocate(const sim_t *s, uint32_t b, uint32_t op) {
  return !s->resident[b] && !s->evicted[b] && !stillborn(s->t, b, op);
}

/* Planned: while op runs (from start), bring back the evicted buffers the next ops
 * touch, soonest first, evicting only residents used later than the one coming back. */
#define EARLY 2 /* planned: ops ahead whose demand is made room for by early copy-outs */

/* Planned: the bytes the next ops within the window will need brought in or allocated,
 * less what the residents that die before them give back (0 if that is more). */
static uint64_t demand(const sim_t *s, uint32_t op, uint32_t window) {
  const pa_atrace_t *t = s->t;
  uint64_t need = 0, freed = 0;
  uint32_t end = op + window < t->nop ? op + window : (uint32_t)t->nop - 1;
  for (uint32_t j = op + 1; j <= end; j++)
    for (uint32_t k = t->first[j]; k < t->first[j + 1]; k++) {
      uint32_t b = t->ids[k];
      if (!s->resident[b] && s->counted[b] != op + 1) need += t->size[b], s->counted[b] = op + 1;
    }
  for (size_t k = 0; k < s->nres; k++)
    if (t->last[s->res[k]] < end) freed += t->size[s->res[k]];
  return need > freed ? need - freed : 0;
}

/* Planned: copy out now what the window's demand will need room for, choosing buffers
 * not used within it, used again last first: the copy-out runs behind compute instead
 * of delaying the op that needs the space. */
static void evict_early(sim_t *s, uint32_t op, uint32_t window, uint32_t keep) {
  uint64_t need = demand(s, op, window);
  while (s->used + need > s->o->budget) {
    uint32_t v = victim(s, op);
    if (v == UINT32_MAX || s->next_use[v] <= op + keep) return; /* prefetched for soon: stays */
    evict(s, v);
  }
}

static void prefetch(sim_t *s, uint32_t op, double start) {
  const pa_atrace_t *t = s->t;
  uint32_t ahead = s->o->lookahead ? s->o->lookahead : 16;
  evict_early(s, op, EARLY, ahead);
  for (uint32_t j = op + 1; j < t->nop && j <= op + ahead; j++)
    for (uint32_t k = t->first[j]; k < t->first[j + 1]; k++) {
      uint32_t b = t->ids[k];
      if (!s->evicted[b] || s->held[b] > op + 1) continue; /* the schedule brings it later */
      while (s->used + t->size[b] > s->o->budget) {
        uint32_t v = victim(s, op);
        if (v == UINT32_MAX || s->next_use[v] <= j) return; /* nothing used later to displace */
        evict(s, v);
      }
      bring(s, b, start);
      s->pin[b] = op + 1; /* not displaced again by the next prefetch of this op */
    }
}

/* Planned: the schedule's restores due as op starts, where they fit (else the op's own
 * demand brings them, reactively). */
static void scheduled_restores(sim_t *s, uint32_t op) {
  for (uint32_t k = s->back_start[op]; k < s->back_start[op + 1]; k++) {
    uint32_t b = s->swaps[s->backs[k]].buf;
    s->held[b] = 0;
    if (s->evicted[b] && s->used + s->t->size[b] <= s->o->budget) bring(s, b, s->now);
  }
}

static void scheduled_evictions(sim_t *s, uint32_t op) {
  for (uint32_t k = s->out_start[op]; k < s->out_start[op + 1]; k++) {
    const pa_swap_t *w = &s->swaps[s->outs[k]];
    if (s->resident[w->buf]) evict(s, w->buf), s->held[w->buf] = w->back_at;
  }
}

static bool touched_now(const pa_atrace_t *t, uint32_t b, uint32_t op) {
  for (uint32_t k = t->first[op]; k < t->first[op + 1]; k++)
    if (t->ids[k] == b) return true;
  return false;
}

static void run_op(sim_t *s, uint32_t op, const uint32_t *born, size_t nborn) {
  const pa_atrace_t *t = s->t;
  uint64_t need = 0;
  for (uint32_t k = t->first[op]; k < t->first[op + 1]; k++) s->pin[t->ids[k]] = op + 1;
  for (size_t k = 0; k < nborn; k++) s->pin[born[k]] = op + 1;
  for (uint32_t k = t->first[op]; k < t->first[op + 1]; k++)
    if (!s->resident[t->ids[k]]) need += t->size[t->ids[k]];
  for (size_t k = 0; k < nborn; k++)
    if (to_allocate(s, born[k], op) && !touched_now(t, born[k], op)) need += t->size[born[k]];
  if (!make_room(s, need, op)) s->r->ooms++;
  double for_space = s->now, for_restore = s->now; /* when the op's new buffers / restores are there */
  for (uint32_t k = t->first[op]; k < t->first[op + 1]; k++) {
    uint32_t b = t->ids[k];
    bool restored = s->evicted[b] || s->resident[b]; /* now, or by a prefetch (arrive) */
    double at = s->resident[b] ? s->arrive[b] : bring(s, b, s->now); /* on demand: when the op is due */
    double *w = restored ? &for_restore : &for_space;
    if (at > *w) *w = at;
  }
  double ready = for_space > for_restore ? for_space : for_restore;
  if (for_restore >= for_space) s->r->wait_in_ns += ready - s->now;
  else s->r->wait_out_ns += ready - s->now;
  for (size_t k = 0; k < nborn; k++)
    if (to_allocate(s, born[k], op)) bring(s, born[k], s->now), s->last_end[born[k]] = s->now;
  s->now = ready + t->ns[op];
  for (uint32_t k = t->first[op]; k < t->first[op + 1]; k++) {
    uint32_t b = t->ids[k];
    s->last_op[b] = op, s->last_end[b] = s->now;
    if (s->next_use) s->next_use[b] = s->next_touch[k];
  }
  if (s->o->policy == PA_POL_PLANNED) scheduled_evictions(s, op), prefetch(s, op, ready);
}

static int by_born(const void *a, const void *b, void *t) {
  const pa_atrace_t *x = t;
  uint32_t p = x->born[*(const uint32_t *)a], q = x->born[*(const uint32_t *)b];
  return (p > q) - (p < q);
}

static int by_last(const void *a, const void *b, void *t) {
  const pa_atrace_t *x = t;
  uint32_t p = x->last[*(const uint32_t *)a], q = x->last[*(const uint32_t *)b];
  return (p > q) - (p < q);
}

static void release_dead(sim_t *s, const uint32_t *order, size_t *next, uint32_t op) {
  const pa_atrace_t *t = s->t;
  for (; *next < t->nbuf && t->last[order[*next]] < op; (*next)++) {
    uint32_t b = order[*next];
    if (s->resident[b]) drop_resident(s, b);
    s->evicted[b] = 0;
  }
}

static uint32_t swap_op(const pa_swap_t *w, bool back) { return back ? w->back_at : w->out_after; }

/* Per op: the swaps whose field (out_after or back_at) names it, as CSR lists of their
 * indices. */
static bool by_op(const pa_atrace_t *t, const pa_swap_t *w, size_t n, bool back, uint32_t **start, uint32_t **list) {
  *start = calloc(t->nop + 2, sizeof **start), *list = malloc((n + 1) * sizeof **list);
  if (!*start || !*list) return false;
  for (size_t i = 0; i < n; i++)
    if (swap_op(&w[i], back) < t->nop) (*start)[swap_op(&w[i], back) + 1]++;
  for (size_t j = 0; j < t->nop; j++) (*start)[j + 1] += (*start)[j];
  (*start)[t->nop + 1] = (*start)[t->nop];
  uint32_t *fill = calloc(t->nop + 1, sizeof *fill);
  if (!fill) return false;
  for (size_t i = 0; i < n; i++) {
    uint32_t op = swap_op(&w[i], back);
    if (op < t->nop) (*list)[(*start)[op] + fill[op]++] = (uint32_t)i;
  }
  free(fill);
  return true;
}

static bool plan_swaps(sim_t *s) {
  size_t n;
  if (pa_swap_plan(s->t, s->o->budget, s->o->bytes_per_ns, s->o->latency_ns, 0, &s->swaps, &n)) return false;
  s->held = calloc(s->t->nbuf + 1, sizeof *s->held);
  return s->held && by_op(s->t, s->swaps, n, false, &s->out_start, &s->outs) &&
         by_op(s->t, s->swaps, n, true, &s->back_start, &s->backs);
}

/* Planned: each touch's next touch of the same buffer, and each buffer's first. */
static bool plan_uses(sim_t *s) {
  const pa_atrace_t *t = s->t;
  s->next_use = malloc((t->nbuf + 1) * sizeof *s->next_use);
  s->next_touch = malloc((t->nids + 1) * sizeof *s->next_touch);
  if (!s->next_use || !s->next_touch) return false;
  for (size_t b = 0; b < t->nbuf; b++) s->next_use[b] = UINT32_MAX;
  for (uint32_t op = (uint32_t)t->nop; op-- > 0;)
    for (uint32_t k = t->first[op]; k < t->first[op + 1]; k++)
      s->next_touch[k] = s->next_use[t->ids[k]], s->next_use[t->ids[k]] = op;
  return true;
}

int pa_simulate(const pa_atrace_t *t, const pa_sim_opts_t *o, pa_sim_result_t *r) {
  size_t n = t->nbuf ? t->nbuf : 1;
  sim_t s = {.t = t, .o = o, .r = r, .rng = 0x9e3779b97f4a7c15ull};
  memset(r, 0, sizeof *r);
  s.resident = calloc(n, 1), s.evicted = calloc(n, 1);
  s.pin = calloc(n, sizeof *s.pin), s.counted = calloc(n, sizeof *s.counted), s.last_op = calloc(n, sizeof *s.last_op), s.times_out = calloc(n, sizeof *s.times_out);
  s.last_end = calloc(n, sizeof *s.last_end), s.arrive = calloc(n, sizeof *s.arrive), s.res = malloc(n * sizeof *s.res), s.pos = malloc(n * sizeof *s.pos);
  uint32_t *born = malloc(n * sizeof *born), *dying = malloc(n * sizeof *dying);
  bool uses = o->policy != PA_POL_PLANNED || (plan_uses(&s) && plan_swaps(&s));
  int rc = uses && s.resident && s.evicted && s.pin && s.counted && s.last_op && s.times_out && s.last_end && s.arrive && s.res && s.pos && born && dying ? 0 : -1;
  for (uint32_t b = 0; !rc && b < t->nbuf; b++) born[b] = dying[b] = b;
  if (!rc) qsort_r(born, t->nbuf, sizeof *born, by_born, (void *)t), qsort_r(dying, t->nbuf, sizeof *dying, by_last, (void *)t);
  size_t nb = 0, nd = 0;
  for (uint32_t op = 0; !rc && op < t->nop; op++) {
    release_dead(&s, dying, &nd, op);
    size_t first = nb;
    while (nb < t->nbuf && t->born[born[nb]] <= op) nb++;
    if (o->policy == PA_POL_PLANNED) scheduled_restores(&s, op);
    run_op(&s, op, born + first, nb - first);
  }
  if (s.nomem) rc = -1;
  r->compute_ns = pa_atrace_compute_ns(t), r->total_ns = s.now;
  free(s.resident), free(s.evicted), free(s.pin), free(s.counted), free(s.last_op), free(s.times_out), free(s.last_end), free(s.arrive);
  free(s.res), free(s.pos), free(born), free(dying), free(s.next_use), free(s.next_touch);
  free(s.out_done), free(s.out_cum), free(s.out_start), free(s.outs), free(s.back_start), free(s.backs);
  free(s.swaps), free(s.held);
  return rc;
}
