/* planalloc's own dumps as an access trace: the recording (planalloc.*.trace.csv: id
 * "b<N>", lower/upper on the allocation-event clock, size) and the access trace
 * (planalloc.*.access.csv: launch, stream, buffer = the recording's N, event = how many
 * allocation events preceded the launch). Each launch is an op; the dumps carry no
 * kernel times, so every op gets ns_per_op. */
#include "dtr.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stdarg.h>

/* Writes the message into err; -1. */
static int failf(char *err, size_t len, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, len, fmt, ap);
  va_end(ap);
  return -1;
}

typedef struct rec_buf_s {
  uint64_t lower, upper, size;
} rec_buf_t;

static int read_trace(const char *path, rec_buf_t **out, size_t *n, char *err, size_t errlen) {
  FILE *f = fopen(path, "r");
  if (!f) return snprintf(err, errlen, "cannot open %s", path), -1;
  char line[512];
  size_t cap = 0;
  *out = NULL, *n = 0;
  while (fgets(line, sizeof line, f)) {
    unsigned long long id, lo, hi, size;
    if (sscanf(line, "b%llu,%llu,%llu,%llu", &id, &lo, &hi, &size) != 4) continue; /* header, comments */
    if (id != *n || hi < lo) return fclose(f), snprintf(err, errlen, "%s: buffer b%llu out of order", path, id), -1;
    if (*n == cap) {
      rec_buf_t *q = realloc(*out, (cap = cap ? 2 * cap : 1024) * sizeof *q);
      if (!q) return fclose(f), snprintf(err, errlen, "out of memory"), -1;
      *out = q;
    }
    (*out)[(*n)++] = (rec_buf_t){lo, hi, size};
  }
  fclose(f);
  return *n ? 0 : (snprintf(err, errlen, "%s: no buffers", path), -1);
}

/* The launches, each an op touching its buffers; *events: per op, the allocation
 * events before it (nondecreasing). A buffer is alive at a launch when its allocation
 * event came before it and its free event did not. */
static int read_access(const char *path, pa_atrace_t *t, const rec_buf_t *b, size_t nb, double ns, uint64_t **events,
                       char *err, size_t errlen) {
  FILE *f = fopen(path, "r");
  if (!f) return snprintf(err, errlen, "cannot open %s", path), -1;
  char line[512];
  unsigned long long last_launch = ~0ull;
  size_t cap = 0;
  int rc = 0;
  *events = NULL;
  while (!rc && fgets(line, sizeof line, f)) {
    unsigned long long launch, stream, buf, event;
    if (sscanf(line, "%llu,%llx,%llu,%llu", &launch, &stream, &buf, &event) != 4) continue;
    if (buf >= nb || event <= b[buf].lower || event > b[buf].upper) {
      rc = failf(err, errlen, "%s: launch %llu touches b%llu outside its life", path, launch, buf);
      break;
    }
    if (launch != last_launch) {
      if (t->nop == cap) {
        uint64_t *q = realloc(*events, (cap = cap ? 2 * cap : 1024) * sizeof *q);
        if (!q) { rc = -1; break; }
        *events = q;
      }
      (*events)[t->nop] = event;
      if (pa_atrace_op(t, ns)) rc = -1;
    }
    last_launch = launch;
    if (!rc && pa_atrace_touch(t, (uint32_t)buf)) rc = -1;
  }
  fclose(f);
  if (rc < 0 && !err[0]) snprintf(err, errlen, "out of memory");
  return rc;
}

/* The first op whose event count is above x (nop if none). */
static uint32_t first_after(const uint64_t *ev, size_t nop, uint64_t x) {
  size_t a = 0, z = nop;
  while (a < z) {
    size_t m = (a + z) / 2;
    if (ev[m] > x) z = m;
    else a = m + 1;
  }
  return (uint32_t)a;
}

int pa_planalloc_dump_read(const char *trace, const char *access, double ns_per_op, pa_atrace_t *t, char *err,
                           size_t errlen) {
  rec_buf_t *b;
  size_t nb;
  uint64_t *ev = NULL;
  err[0] = 0;
  if (read_trace(trace, &b, &nb, err, errlen)) return -1;
  int rc = 0;
  for (size_t i = 0; !rc && i < nb; i++)
    if (pa_atrace_buffer(t, b[i].size, false) == UINT32_MAX) rc = failf(err, errlen, "out of memory");
  if (!rc) rc = read_access(access, t, b, nb, ns_per_op, &ev, err, errlen);
  if (!rc && !t->nop) rc = failf(err, errlen, "%s: no launch touches planalloc's buffers", access);
  for (size_t i = 0; !rc && i < nb; i++) { /* the event clock onto the op clock */
    uint32_t born = first_after(ev, t->nop, b[i].lower), after = first_after(ev, t->nop, b[i].upper);
    if (after <= born) /* allocated and freed between two launches: never resident */
      t->born[i] = after + 1, t->last[i] = after;
    else t->born[i] = born, t->last[i] = after == t->nop ? UINT32_MAX : after - 1;
  }
  free(b), free(ev);
  return rc;
}
