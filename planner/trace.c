/* The trace model: buffers with one or more occupancy intervals at one offset. */
#include "planner.h"

#include <stdlib.h>
#include <string.h>

void pa_trace_init(pa_trace_t *t) { memset(t, 0, sizeof *t); }

void pa_trace_free(pa_trace_t *t) {
  for (size_t i = 0; i < t->n; i++) free(t->ids[i]);
  free(t->ids), free(t->bufs), free(t->spans);
  pa_trace_init(t);
}

void pa_trace_truncate(pa_trace_t *t, size_t n) {
  if (n >= t->n) return;
  for (size_t i = n; i < t->n; i++) {
    const pa_buf_t *b = &t->bufs[i];
    t->sum_padded -= b->size + b->align - 1 + (b->fixed > 0 ? b->fixed : 0);
    free(t->ids[i]);
  }
  t->nspans = n ? t->bufs[n - 1].span0 + t->bufs[n - 1].nspans : 0;
  t->n = n;
}

static int grow(void **p, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return PA_OK;
  size_t nc = *cap ? *cap * 2 : 64;
  while (nc < need) nc *= 2;
  void *q = realloc(*p, nc * elem);
  if (!q) return PA_ENOMEM;
  *p = q, *cap = nc;
  return PA_OK;
}

static int reserve(pa_trace_t *t, size_t nspans) {
  size_t cap = t->cap;
  if (grow((void **)&t->bufs, &cap, t->n + 1, sizeof *t->bufs)) return PA_ENOMEM;
  cap = t->cap;
  if (grow((void **)&t->ids, &cap, t->n + 1, sizeof *t->ids)) return PA_ENOMEM;
  t->cap = cap;
  return grow((void **)&t->spans, &t->spancap, t->nspans + nspans, sizeof *t->spans);
}

static bool spans_ok(const pa_span_t *s, uint32_t n) {
  if (n == 0) return false;
  for (uint32_t i = 0; i < n; i++) {
    if (s[i].lower < 0 || s[i].upper <= s[i].lower || s[i].upper > PA_VALUE_LIMIT) return false;
    if (i && s[i].lower < s[i - 1].upper) return false;
  }
  return true;
}

static char *id_dup(const char *id, size_t index) {
  char tmp[32];
  if (!id) snprintf(tmp, sizeof tmp, "%zu", index), id = tmp;
  return strdup(id);
}

/* Stores the spans, joining adjacent ones so that a buffer's spans never touch. */
static uint32_t push_spans(pa_trace_t *t, const pa_span_t *s, uint32_t n) {
  uint32_t kept = 0;
  for (uint32_t i = 0; i < n; i++) {
    if (kept && t->spans[t->nspans + kept - 1].upper == s[i].lower)
      t->spans[t->nspans + kept - 1].upper = s[i].upper;
    else
      t->spans[t->nspans + kept++] = s[i];
  }
  return kept;
}

int pa_trace_add(pa_trace_t *t, const char *id, int64_t size, int64_t align, int64_t fixed,
                 const pa_span_t *spans, uint32_t nspans) {
  if (size <= 0 || size > PA_VALUE_LIMIT || align <= 0 || align > PA_VALUE_LIMIT)
    return PA_EINPUT;
  if (fixed != PA_NO_OFFSET && (fixed < 0 || fixed > PA_VALUE_LIMIT || fixed % align))
    return PA_EINPUT;
  if (!spans_ok(spans, nspans)) return PA_EINPUT;
  int64_t padded = size + align - 1 + (fixed > 0 ? fixed : 0);
  if (padded > PA_VALUE_LIMIT - t->sum_padded) return PA_EINPUT;
  if (reserve(t, nspans)) return PA_ENOMEM;
  char *copy = id_dup(id, t->n);
  if (!copy) return PA_ENOMEM;
  pa_buf_t *b = &t->bufs[t->n];
  b->size = size, b->align = align, b->fixed = fixed;
  b->span0 = (uint32_t)t->nspans;
  b->nspans = push_spans(t, spans, nspans);
  b->lower = spans[0].lower, b->upper = spans[nspans - 1].upper;
  t->nspans += b->nspans;
  t->ids[t->n++] = copy;
  t->sum_padded += padded;
  return PA_OK;
}

typedef struct event_s {
  int64_t time, delta;
} event_t;

static int event_cmp(const void *a, const void *b) {
  const event_t *x = a, *y = b;
  if (x->time != y->time) return x->time < y->time ? -1 : 1;
  return (x->delta > y->delta) - (x->delta < y->delta); /* frees (negative) first */
}

/* Max-live with every size rounded up to a multiple of pad (pad 1: the plain bound);
 * *when gets the first instant that reaches it. */
static int64_t maxlive_padded(const pa_trace_t *t, int64_t pad, int64_t *when) {
  event_t *ev = malloc(2 * t->nspans * sizeof *ev + 1);
  if (!ev) return -1;
  size_t k = 0;
  for (size_t i = 0; i < t->n; i++) {
    const pa_buf_t *b = &t->bufs[i];
    for (uint32_t s = 0; s < b->nspans; s++) {
      int64_t size = (b->size + pad - 1) / pad * pad;
      ev[k++] = (event_t){t->spans[b->span0 + s].lower, size};
      ev[k++] = (event_t){t->spans[b->span0 + s].upper, -size};
    }
  }
  qsort(ev, k, sizeof *ev, event_cmp);
  int64_t live = 0, best = 0;
  *when = k ? ev[0].time : 0;
  for (size_t i = 0; i < k; i++) {
    live += ev[i].delta;
    if (live > best) best = live, *when = ev[i].time;
  }
  free(ev);
  return best;
}

int64_t pa_trace_maxlive(const pa_trace_t *t) {
  int64_t when;
  return maxlive_padded(t, 1, &when);
}

int64_t pa_trace_peak_time(const pa_trace_t *t) {
  int64_t when;
  return maxlive_padded(t, 1, &when) < 0 ? -1 : when;
}

/* Pairs of spans live at the same time: what the overlap-driven heuristics pay for. */
double pa_trace_overlaps(const pa_trace_t *t) {
  event_t *ev = malloc(2 * t->nspans * sizeof *ev + 1);
  if (!ev) return 1e18;
  size_t k = 0;
  for (size_t s = 0; s < t->nspans; s++) {
    ev[k++] = (event_t){t->spans[s].lower, 1};
    ev[k++] = (event_t){t->spans[s].upper, -1};
  }
  qsort(ev, k, sizeof *ev, event_cmp);
  double pairs = 0, live = 0;
  for (size_t i = 0; i < k; i++) {
    if (ev[i].delta > 0) pairs += live;
    live += (double)ev[i].delta;
  }
  free(ev);
  return pairs;
}

/* When every alignment is a multiple of the smallest one, g, every buffer starts at a
 * multiple of g, so each buffer but the topmost occupies its size rounded up to g. */
int64_t pa_trace_bound(const pa_trace_t *t) {
  int64_t g = INT64_MAX, when, plain = maxlive_padded(t, 1, &when);
  for (size_t i = 0; i < t->n; i++)
    if (t->bufs[i].align < g) g = t->bufs[i].align;
  for (size_t i = 0; i < t->n; i++)
    if (t->bufs[i].align % g) return plain;
  if (g <= 1 || plain < 0) return plain;
  int64_t padded = maxlive_padded(t, g, &when);
  if (padded < 0) return -1;
  return padded - (g - 1) > plain ? padded - (g - 1) : plain;
}

bool pa_trace_has_fixed(const pa_trace_t *t) {
  for (size_t i = 0; i < t->n; i++)
    if (t->bufs[i].fixed != PA_NO_OFFSET) return true;
  return false;
}

int pa_trace_apply_alignment(pa_trace_t *t, int64_t align) {
  if (align <= 0 || align > PA_VALUE_LIMIT) return PA_EINPUT;
  int64_t sum = 0;
  for (size_t i = 0; i < t->n; i++) {
    pa_buf_t *b = &t->bufs[i];
    int64_t q = align / pa_gcd(align, b->align);
    if (b->align > PA_VALUE_LIMIT / q) return PA_EINPUT;
    int64_t lcm = b->align * q;
    if (b->fixed != PA_NO_OFFSET && b->fixed % lcm) return PA_EINPUT;
    sum += b->size + lcm - 1 + (b->fixed > 0 ? b->fixed : 0);
    if (sum > PA_VALUE_LIMIT) return PA_EINPUT;
  }
  for (size_t i = 0; i < t->n; i++) {
    pa_buf_t *b = &t->bufs[i];
    b->align = b->align * (align / pa_gcd(align, b->align));
  }
  t->sum_padded = sum;
  return PA_OK;
}
