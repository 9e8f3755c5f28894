/* A swap schedule planned over the whole trace: which buffer leaves after which use and
 * comes back at which op, so that every op's resident bytes fit the budget.
 *
 * Every idle stretch of a buffer (between two uses, after its last use, or between its
 * birth and first use) is a candidate. Leaving right after the use that opens it, the
 * copy-out runs behind compute and frees the bytes from the first op that starts after
 * it is done (its memory serves another buffer at once, whose work waits for the copy
 * on the device); the restore is issued at the start of the latest op that still lets
 * it finish before the next use starts. The ops in between are what the candidate
 * saves. The host runs lead_ns ahead of the device, and the buffer's own address can
 * take new memory only once the host has seen its copy out done: a stretch whose
 * restore comes sooner is no candidate (the host would wait for the device).
 * A sweep in op order then covers each op's excess with the candidates that cover it,
 * the one saving furthest ahead first (interval covering's greedy: each swap serves as
 * many of the coming overloaded ops as it can, so few swaps move few bytes).
 *
 * The first sweep takes every copy at full link speed; but copies queue (one D2H, one
 * H2D queue), so the chosen ones are then retimed on their queues (copy-outs as soon as
 * the queue takes them, restores as late as their deadlines and the restores after them
 * allow, scheduled backwards), which shortens what they save, and the sweep runs again
 * with them kept, adding swaps where ops went over. A few rounds settle it. */
#include "dtr.h"

#include <stdlib.h>

typedef struct cand_s {
  uint32_t buf, out_after, back_at; /* back_at: UINT32_MAX when it never returns */
  uint32_t to;                      /* the next use it must be back for (UINT32_MAX: none) */
  uint32_t lo, hi;                  /* the ops it saves: [lo, hi]; lo > hi: none */
  uint32_t back_min;                /* the first op the host may issue its restore at */
  double copy;                      /* ns per copy at full speed */
} cand_t;

typedef struct plan_s {
  const pa_atrace_t *t;
  double *start; /* nop + 1: when each op starts at full speed */
  double bytes_per_ns, latency_ns, lead_ns;
  cand_t *cand;
  size_t ncand, capcand;
} plan_t;

static uint32_t end_op(const pa_atrace_t *t, uint32_t b) {
  return t->last[b] == UINT32_MAX ? (uint32_t)t->nop - 1 : t->last[b];
}

static bool stillborn(const pa_atrace_t *t, uint32_t b) { return t->last[b] != UINT32_MAX && t->last[b] < t->born[b]; }

/* The first op that starts at or after time x (nop if none). */
static uint32_t first_op_from(const plan_t *p, double x) {
  uint32_t lo = 0, hi = (uint32_t)p->t->nop;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (p->start[mid] >= x) hi = mid;
    else lo = mid + 1;
  }
  return lo;
}

/* The last op at or before q that starts by time x (UINT32_MAX if none). */
static uint32_t last_op_by(const plan_t *p, uint32_t q, double x) {
  uint32_t lo = 0, hi = q + 1; /* the first op in [0, q] starting after x */
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (p->start[mid] > x) hi = mid;
    else lo = mid + 1;
  }
  return lo ? lo - 1 : UINT32_MAX;
}

static bool push(plan_t *p, cand_t c) {
  void **arrs[] = {(void **)&p->cand};
  const size_t elem[] = {sizeof *p->cand};
  if (!pa_grow_arrays(arrs, elem, 1, &p->capcand, p->ncand + 1)) return false;
  p->cand[p->ncand++] = c;
  return true;
}

/* Out at time `done` (its copy finished on the device): its bytes are free from the
 * first op after, and its address, for the host, lead_ns later. */
static void out_done(const plan_t *p, cand_t *c, double done) {
  c->lo = first_op_from(p, done), c->back_min = first_op_from(p, done + p->lead_ns);
}

/* Back at back_at (UINT32_MAX or 0: not in time for its use): it saves the ops before;
 * none when the host would issue the restore before it saw the copy out done. */
static void back(cand_t *c, uint32_t back_at) {
  c->back_at = back_at;
  if (back_at == UINT32_MAX || back_at == 0 || back_at < c->back_min) c->lo = 1, c->hi = 0;
  else c->hi = back_at - 1;
}

/* The idle stretch of b after op from (a use, or its birth) up to op to (its next use;
 * UINT32_MAX: none before it dies). */
static bool candidate(plan_t *p, uint32_t b, uint32_t from, uint32_t to) {
  const pa_atrace_t *t = p->t;
  double copy = p->latency_ns + (double)t->size[b] / p->bytes_per_ns;
  cand_t c = {.buf = b, .out_after = from, .back_at = UINT32_MAX, .to = to, .copy = copy, .hi = end_op(t, b)};
  out_done(p, &c, p->start[from + 1] + copy);
  if (to != UINT32_MAX) back(&c, last_op_by(p, to, p->start[to] - copy));
  return c.lo > c.hi || push(p, c);
}

/* Per buffer, its uses in op order: the candidates between consecutive ones. */
static bool candidates(plan_t *p) {
  const pa_atrace_t *t = p->t;
  uint32_t *prev = malloc((t->nbuf + 1) * sizeof *prev);
  if (!prev) return false;
  for (size_t b = 0; b < t->nbuf; b++) prev[b] = t->born[b];
  bool ok = true;
  for (uint32_t op = 0; ok && op < t->nop; op++)
    for (uint32_t k = t->first[op]; ok && k < t->first[op + 1]; k++) {
      uint32_t b = t->ids[k];
      if (stillborn(t, b)) continue;
      if (op > prev[b] + 1) ok = candidate(p, b, prev[b], op);
      if (op > prev[b] || op == t->born[b]) prev[b] = op;
    }
  for (uint32_t b = 0; ok && b < t->nbuf; b++)
    if (!stillborn(t, b) && prev[b] < end_op(t, b)) ok = candidate(p, b, prev[b], UINT32_MAX);
  free(prev);
  return ok;
}

/* A max-heap of candidate indices by hi (ties: the smaller buffer, fewer bytes moved). */
typedef struct heap_s {
  uint32_t *v;
  size_t n;
  const plan_t *p;
} heap_t;

static bool above(const heap_t *h, uint32_t a, uint32_t b) {
  const cand_t *x = &h->p->cand[a], *y = &h->p->cand[b];
  if (x->hi != y->hi) return x->hi > y->hi;
  return h->p->t->size[x->buf] < h->p->t->size[y->buf];
}

static void heap_push(heap_t *h, uint32_t c) {
  size_t i = h->n++;
  for (; i && above(h, c, h->v[(i - 1) / 2]); i = (i - 1) / 2) h->v[i] = h->v[(i - 1) / 2];
  h->v[i] = c;
}

static uint32_t heap_pop(heap_t *h) {
  uint32_t top = h->v[0], last = h->v[--h->n];
  size_t i = 0;
  for (size_t k; (k = 2 * i + 1) < h->n; i = k) {
    if (k + 1 < h->n && above(h, h->v[k + 1], h->v[k])) k++;
    if (!above(h, h->v[k], last)) break;
    h->v[i] = h->v[k];
  }
  if (h->n) h->v[i] = last;
  return top;
}

static int by_lo(const void *a, const void *b) {
  const cand_t *x = a, *y = b;
  return (x->lo > y->lo) - (x->lo < y->lo);
}

static void save(const plan_t *p, int64_t *delta, const cand_t *c) {
  if (c->lo > c->hi) return;
  delta[c->lo] += (int64_t)p->t->size[c->buf], delta[c->hi + 1] -= (int64_t)p->t->size[c->buf];
}

/* The sweep over candidates sorted by lo: the chosen ones (chosen[i] set on entry) save
 * what they save; where an op is still over, more are chosen. Returns how many were added. */
static size_t choose(plan_t *p, const int64_t *live, uint64_t budget, uint8_t *chosen, int64_t *delta, uint32_t *heap) {
  const pa_atrace_t *t = p->t;
  heap_t h = {.v = heap, .p = p};
  int64_t saved = 0;
  size_t next = 0, added = 0;
  for (size_t j = 0; j <= t->nop; j++) delta[j] = 0;
  for (size_t i = 0; i < p->ncand; i++)
    if (chosen[i]) save(p, delta, &p->cand[i]);
  for (uint32_t op = 0; op < t->nop; op++) {
    for (; next < p->ncand && p->cand[next].lo <= op; next++)
      if (!chosen[next]) heap_push(&h, (uint32_t)next);
    saved += delta[op];
    while (live[op] - saved > (int64_t)budget && h.n) {
      uint32_t c = heap_pop(&h);
      if (p->cand[c].hi < op) continue; /* over before this op */
      chosen[c] = 1, added++;
      saved += (int64_t)t->size[p->cand[c].buf], delta[p->cand[c].hi + 1] -= (int64_t)t->size[p->cand[c].buf];
    }
  }
  return added;
}

static int by_out(const void *a, const void *b, void *arg) {
  const cand_t *c = arg, *x = &c[*(const uint32_t *)a], *y = &c[*(const uint32_t *)b];
  return (x->out_after > y->out_after) - (x->out_after < y->out_after);
}

static int by_deadline_desc(const void *a, const void *b, void *arg) {
  const cand_t *c = arg, *x = &c[*(const uint32_t *)a], *y = &c[*(const uint32_t *)b];
  return (x->to < y->to) - (x->to > y->to);
}

/* Retimes the chosen candidates (their indices in idx[0..n)) on the two queues. */
static void retime(plan_t *p, uint32_t *idx, size_t n) {
  qsort_r(idx, n, sizeof *idx, by_out, p->cand);
  double d2h = 0;
  for (size_t k = 0; k < n; k++) {
    cand_t *c = &p->cand[idx[k]];
    double at = p->start[c->out_after + 1];
    d2h = (d2h > at ? d2h : at) + c->copy;
    out_done(p, c, d2h);
  }
  qsort_r(idx, n, sizeof *idx, by_deadline_desc, p->cand);
  double h2d = 1e300; /* when the restore issued after this one starts */
  for (size_t k = 0; k < n; k++) {
    cand_t *c = &p->cand[idx[k]];
    if (c->to == UINT32_MAX) continue;
    double done = p->start[c->to] < h2d ? p->start[c->to] : h2d;
    h2d = done - c->copy;
    back(c, last_op_by(p, c->to, h2d)); /* saving nothing, it is dropped */
  }
}

#define ROUNDS 8

/* Chooses and retimes until no op is left over that another candidate could relieve;
 * keeps the chosen candidates at the front of p->cand and returns how many. */
static size_t schedule(plan_t *p, const int64_t *live, uint64_t budget) {
  const pa_atrace_t *t = p->t;
  int64_t *delta = malloc((t->nop + 2) * sizeof *delta);
  uint32_t *heap = malloc((p->ncand + 1) * sizeof *heap), *idx = malloc((p->ncand + 1) * sizeof *idx);
  uint8_t *chosen = calloc(p->ncand + 1, 1);
  size_t n = 0;
  if (delta && heap && idx && chosen) {
    if (p->ncand) qsort(p->cand, p->ncand, sizeof *p->cand, by_lo); /* none: p->cand is NULL */
    for (int round = 0; round < ROUNDS && choose(p, live, budget, chosen, delta, heap); round++) {
      n = 0;
      for (size_t i = 0; i < p->ncand; i++)
        if (chosen[i]) idx[n++] = (uint32_t)i;
      retime(p, idx, n); /* lo moves: the order by lo holds for the unchosen ones only */
    }
    n = 0;
    for (size_t i = 0; i < p->ncand; i++) /* retiming may have left some saving nothing */
      if (chosen[i] && p->cand[i].lo <= p->cand[i].hi) p->cand[n++] = p->cand[i];
  }
  free(delta), free(heap), free(idx), free(chosen);
  return n;
}

int pa_swap_plan(const pa_atrace_t *t, uint64_t budget, double bytes_per_ns, double latency_ns, double lead_ns,
                 pa_swap_t **swaps, size_t *n) {
  plan_t p = {.t = t, .bytes_per_ns = bytes_per_ns, .latency_ns = latency_ns, .lead_ns = lead_ns > 0 ? lead_ns : 0};
  *swaps = NULL, *n = 0;
  p.start = malloc((t->nop + 1) * sizeof *p.start);
  int64_t *live = pa_atrace_live(t);
  int rc = p.start && live ? 0 : -1;
  if (!rc) p.start[0] = 0;
  for (size_t j = 0; !rc && j < t->nop; j++) p.start[j + 1] = p.start[j] + t->ns[j];
  if (!rc && !candidates(&p)) rc = -1;
  size_t k = rc ? 0 : schedule(&p, live, budget);
  pa_swap_t *out = rc ? NULL : malloc((k + 1) * sizeof *out);
  if (!rc && !out) rc = -1;
  for (size_t i = 0; !rc && i < k; i++)
    out[i] = (pa_swap_t){p.cand[i].buf, p.cand[i].out_after, p.cand[i].back_at, p.cand[i].lo, p.cand[i].hi};
  if (!rc) *swaps = out, *n = k;
  free(p.start), free(live), free(p.cand);
  return rc;
}
