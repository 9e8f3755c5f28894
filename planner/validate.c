/* The independent layout checker. It shares nothing with the algorithms but the trace:
 * a sweep over time keeps the occupied ranges in an address-ordered set and checks each
 * newcomer against its two address neighbours. */
#include "planner.h"
#include "treap.h"

#include <stdlib.h>

typedef struct vevent_s {
  int64_t time;
  uint32_t buf;
  int32_t enter; /* 0 = leaves, 1 = enters: leaves sort first at equal times */
} vevent_t;

static int vevent_cmp(const void *a, const void *b) {
  const vevent_t *x = a, *y = b;
  if (x->time != y->time) return x->time < y->time ? -1 : 1;
  if (x->enter != y->enter) return x->enter - y->enter;
  return (x->buf > y->buf) - (x->buf < y->buf);
}

static int check_static(const pa_trace_t *t, const int64_t *off, bool partial, char *err,
                        size_t errlen) {
  for (size_t i = 0; i < t->n; i++) {
    const pa_buf_t *b = &t->bufs[i];
    if (partial && off[i] == PA_NO_OFFSET) continue;
    if (off[i] < 0 || off[i] > PA_VALUE_LIMIT) {
      snprintf(err, errlen, "buffer %s has offset %lld", t->ids[i], (long long)off[i]);
      return PA_EINTERNAL;
    }
    if (off[i] % b->align) {
      snprintf(err, errlen, "buffer %s at offset %lld breaks its alignment %lld", t->ids[i],
               (long long)off[i], (long long)b->align);
      return PA_EINTERNAL;
    }
    if (b->fixed != PA_NO_OFFSET && off[i] != b->fixed) {
      snprintf(err, errlen, "buffer %s moved from its fixed offset %lld to %lld", t->ids[i],
               (long long)b->fixed, (long long)off[i]);
      return PA_EINTERNAL;
    }
  }
  return PA_OK;
}

static int overlap_error(const pa_trace_t *t, const int64_t *off, uint32_t a, uint32_t b,
                         int64_t time, char *err, size_t errlen) {
  snprintf(err, errlen,
           "buffers %s [%lld, %lld) and %s [%lld, %lld) overlap in address at time %lld",
           t->ids[a], (long long)off[a], (long long)(off[a] + t->bufs[a].size), t->ids[b],
           (long long)off[b], (long long)(off[b] + t->bufs[b].size), (long long)time);
  return PA_EINTERNAL;
}

static vevent_t *make_events(const pa_trace_t *t, const int64_t *off, size_t *count) {
  vevent_t *ev = malloc((2 * t->nspans + 1) * sizeof *ev);
  if (!ev) return NULL;
  size_t k = 0;
  for (size_t i = 0; i < t->n; i++) {
    if (off[i] == PA_NO_OFFSET) continue;
    const pa_buf_t *b = &t->bufs[i];
    for (uint32_t s = 0; s < b->nspans; s++) {
      ev[k++] = (vevent_t){t->spans[b->span0 + s].lower, (uint32_t)i, 1};
      ev[k++] = (vevent_t){t->spans[b->span0 + s].upper, (uint32_t)i, 0};
    }
  }
  qsort(ev, k, sizeof *ev, vevent_cmp);
  *count = k;
  return ev;
}

static int sweep(const pa_trace_t *t, const int64_t *off, pa_treap_t *set, char *err,
                 size_t errlen) {
  size_t k;
  vevent_t *ev = make_events(t, off, &k);
  if (!ev) return PA_ENOMEM;
  int rc = PA_OK;
  for (size_t i = 0; i < k && rc == PA_OK; i++) {
    uint32_t x = ev[i].buf;
    if (!ev[i].enter) {
      pa_treap_erase(set, x);
      continue;
    }
    pa_treap_insert(set, x, off[x]);
    uint32_t p = pa_treap_prev(set, x), q = pa_treap_next(set, x);
    if (p != PA_NIL && off[p] + t->bufs[p].size > off[x])
      rc = overlap_error(t, off, p, x, ev[i].time, err, errlen);
    else if (q != PA_NIL && off[x] + t->bufs[x].size > off[q])
      rc = overlap_error(t, off, x, q, ev[i].time, err, errlen);
  }
  free(ev);
  return rc;
}

static int validate(const pa_trace_t *t, const int64_t *off, bool partial, char *err,
                    size_t errlen) {
  int rc = check_static(t, off, partial, err, errlen);
  if (rc) return rc;
  pa_treap_t set;
  if (pa_treap_init(&set, t->n, 7)) return PA_ENOMEM;
  rc = sweep(t, off, &set, err, errlen);
  pa_treap_free(&set);
  return rc;
}

int pa_cmp_offset(const void *a, const void *b, void *offsets) {
  const int64_t *off = offsets;
  int64_t x = off[*(const uint32_t *)a], y = off[*(const uint32_t *)b];
  return (x > y) - (x < y);
}

int64_t pa_layout_peak(const pa_trace_t *t, const int64_t *offsets) {
  int64_t peak = 0;
  for (size_t i = 0; i < t->n; i++)
    if (offsets[i] != PA_NO_OFFSET && offsets[i] + t->bufs[i].size > peak)
      peak = offsets[i] + t->bufs[i].size;
  return peak;
}

int pa_validate(const pa_trace_t *t, const int64_t *offsets, int64_t *peak, char *err,
                size_t errlen) {
  for (size_t i = 0; i < t->n; i++) {
    if (offsets[i] == PA_NO_OFFSET) {
      snprintf(err, errlen, "buffer %s has no offset", t->ids[i]);
      return PA_EINTERNAL;
    }
  }
  int rc = validate(t, offsets, false, err, errlen);
  if (peak) *peak = pa_layout_peak(t, offsets);
  return rc;
}

int pa_validate_fixed(const pa_trace_t *t, char *err, size_t errlen) {
  int64_t *off = malloc((t->n + 1) * sizeof *off);
  if (!off) return PA_ENOMEM;
  for (size_t i = 0; i < t->n; i++) off[i] = t->bufs[i].fixed;
  int rc = validate(t, off, true, err, errlen);
  free(off);
  return rc == PA_EINTERNAL ? PA_EINPUT : rc;
}
