/* MiniMalloc's CSV: a header naming the columns in any order (id, lower, upper, size;
 * optional alignment, gaps, offset, hint, and a planalloc dump's site and placed (the
 * callsite, the pool offset it had), which the planner ignores), or the legacy header
 * buffer,start,end,size whose end is inclusive. Every malformed input gets one message
 * with its line. */
#include "planner.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
/* uthash must never exit() inside a user's job: on OOM it skips the insert and we report. */
#define HASH_NONFATAL_OOM 1
#define uthash_nonfatal_oom(e) (oom = true)
#include <uthash.h>

enum { COL_ID, COL_LOWER, COL_UPPER, COL_SIZE, COL_ALIGN, COL_GAPS, COL_OFFSET, COL_HINT,
       COL_SITE, COL_PLACED, COL_N };

static const char *const col_names[COL_N] = {"id", "lower", "upper", "size",
                                             "alignment", "gaps", "offset", "hint",
                                             "site", "placed"};
static const char *const legacy_names[4] = {"buffer", "start", "end", "size"};

#define MAX_FIELDS 16
#define MAX_LINE (16u << 20)

typedef struct seen_s {
  const char *id; /* points into the trace's own copy */
  size_t line;
  UT_hash_handle hh;
} seen_t;

typedef struct reader_s {
  const char *p, *end;
  size_t line;
  char *err;
  size_t errlen;
  int col[COL_N]; /* field index of each column, -1 if absent */
  int nfields;
  bool legacy;
  char *field[MAX_FIELDS];
  seen_t *seen, *seen_pool;
  pa_span_t *spans;
  size_t spancap;
} reader_t;

static int fail(reader_t *r, const char *fmt, ...) {
  va_list ap;
  int k = snprintf(r->err, r->errlen, "%zu: ", r->line);
  va_start(ap, fmt);
  if (k >= 0 && (size_t)k < r->errlen) vsnprintf(r->err + k, r->errlen - (size_t)k, fmt, ap);
  va_end(ap);
  return PA_EINPUT;
}

static char *trim(char *s) {
  while (*s == ' ' || *s == '\t') s++;
  char *e = s + strlen(s);
  while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r')) *--e = 0;
  return s;
}

/* Copies the next line into buf (NUL-terminated); returns false at end of input. */
static int next_line(reader_t *r, char **buf, size_t *cap, bool *got) {
  *got = false;
  if (r->p >= r->end) return PA_OK;
  const char *nl = memchr(r->p, '\n', (size_t)(r->end - r->p));
  size_t len = (size_t)((nl ? nl : r->end) - r->p);
  r->line++;
  if (len > MAX_LINE) return fail(r, "line longer than %u bytes", MAX_LINE);
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)r->p[i];
    if ((c < 0x20 && c != '\t' && c != '\r') || c == 0x7f)
      return fail(r, "binary data (byte 0x%02x at column %zu)", c, i + 1);
  }
  if (len + 1 > *cap) {
    char *q = realloc(*buf, len + 1);
    if (!q) return PA_ENOMEM;
    *buf = q, *cap = len + 1;
  }
  memcpy(*buf, r->p, len);
  (*buf)[len] = 0;
  r->p = nl ? nl + 1 : r->end;
  *got = true;
  return PA_OK;
}

/* Returns the number of fields, or -1 (message written) when there are too many. */
static int split_fields(reader_t *r, char *line) {
  int n = 0;
  for (char *s = line;; n++) {
    if (n == MAX_FIELDS) return fail(r, "more than %d fields", MAX_FIELDS), -1;
    char *c = strchr(s, ',');
    if (c) *c = 0;
    r->field[n] = trim(s);
    if (!c) return n + 1;
    s = c + 1;
  }
}

static bool blank(const char *s) {
  while (*s == ' ' || *s == '\t' || *s == '\r') s++;
  return *s == 0;
}

static int header_legacy(reader_t *r, int n) {
  if (n != 4) return -1;
  for (int i = 0; i < 4; i++)
    if (strcmp(r->field[i], legacy_names[i])) return -1;
  r->legacy = true;
  for (int i = 0; i < 4; i++) r->col[i] = i;
  return PA_OK;
}

static int header_column(reader_t *r, int i) {
  for (int c = 0; c < COL_N; c++) {
    if (strcmp(r->field[i], col_names[c])) continue;
    if (r->col[c] >= 0) return fail(r, "column '%s' appears twice", col_names[c]);
    r->col[c] = i;
    return PA_OK;
  }
  return fail(r, "unknown column '%.64s' (known: id, lower, upper, size, alignment, gaps, "
                 "offset, hint, site, placed)", r->field[i]);
}

static int parse_header(reader_t *r, char *line) {
  int n = split_fields(r, line);
  if (n < 0) return PA_EINPUT;
  r->nfields = n;
  for (int c = 0; c < COL_N; c++) r->col[c] = -1;
  if (header_legacy(r, n) == PA_OK) return PA_OK;
  for (int i = 0; i < n; i++)
    if (header_column(r, i)) return PA_EINPUT;
  for (int c = 0; c <= COL_SIZE; c++)
    if (r->col[c] < 0) return fail(r, "missing column '%s' in header", col_names[c]);
  return PA_OK;
}

static int parse_int(reader_t *r, const char *what, const char *s, int64_t *out) {
  if (!*s) return fail(r, "empty %s", what);
  const char *q = s + (*s == '-' || *s == '+');
  for (const char *c = q; *c; c++)
    if (!isdigit((unsigned char)*c))
      return fail(r, "%s '%.32s' is not an integer", what, s);
  if (!*q) return fail(r, "%s '%.32s' is not an integer", what, s);
  errno = 0;
  long long v = strtoll(s, NULL, 10);
  if (errno == ERANGE || v > PA_VALUE_LIMIT || v < -PA_VALUE_LIMIT)
    return fail(r, "%s '%.32s' is out of range (limit 2^62)", what, s);
  *out = v;
  return PA_OK;
}

static int want_spans(reader_t *r, size_t n) {
  if (n <= r->spancap) return PA_OK;
  pa_span_t *q = realloc(r->spans, n * sizeof *q);
  if (!q) return PA_ENOMEM;
  r->spans = q, r->spancap = n;
  return PA_OK;
}

static int span_cmp(const void *a, const void *b) {
  const pa_span_t *x = a, *y = b;
  return (x->lower > y->lower) - (x->lower < y->lower);
}

static int parse_gap(reader_t *r, char *tok, pa_span_t *g) {
  if (strchr(tok, '@')) return fail(r, "partial gaps ('%.32s') are not supported", tok);
  char *dash = strchr(tok + 1, '-'); /* tok+1: a leading '-' is a sign, caught below */
  if (!dash) return fail(r, "gap '%.32s' is not of the form a-b", tok);
  *dash = 0;
  if (parse_int(r, "gap start", tok, &g->lower)) return PA_EINPUT;
  return parse_int(r, "gap end", dash + 1, &g->upper);
}

/* Parses "a-b c-d" into sorted gaps stored after index `first` of r->spans. */
static int parse_gaps(reader_t *r, char *text, size_t *count) {
  size_t n = 0;
  for (char *tok = strtok(text, " \t"); tok; tok = strtok(NULL, " \t")) {
    if (want_spans(r, n + 2)) return PA_ENOMEM;
    if (parse_gap(r, tok, &r->spans[n])) return PA_EINPUT;
    n++;
  }
  if (n > 1) qsort(r->spans, n, sizeof *r->spans, span_cmp); /* spans is NULL until a first gap */
  *count = n;
  return PA_OK;
}

/* Occupancy = [lower, upper) minus the gaps; written after the gaps in r->spans. */
static int carve(reader_t *r, int64_t lower, int64_t upper, size_t ngaps, uint32_t *nout) {
  if (want_spans(r, 2 * ngaps + 2)) return PA_ENOMEM;
  pa_span_t *out = r->spans + ngaps;
  size_t k = 0;
  int64_t cur = lower;
  for (size_t i = 0; i < ngaps; i++) {
    pa_span_t g = r->spans[i];
    if (g.upper <= g.lower) return fail(r, "gap %lld-%lld is empty", (long long)g.lower,
                                        (long long)g.upper);
    if (g.lower < cur || g.upper > upper)
      return fail(r, "gap %lld-%lld overlaps another gap or leaves [%lld, %lld)",
                  (long long)g.lower, (long long)g.upper, (long long)lower, (long long)upper);
    if (g.lower > cur) out[k++] = (pa_span_t){cur, g.lower};
    cur = g.upper;
  }
  if (cur < upper) out[k++] = (pa_span_t){cur, upper};
  if (!k) return fail(r, "gaps cover the whole lifetime");
  *nout = (uint32_t)k;
  return PA_OK;
}

typedef struct row_s {
  const char *id;
  int64_t lower, upper, size, align, offset;
} row_t;

static int parse_numbers(reader_t *r, row_t *w) {
  if (parse_int(r, "lower", r->field[r->col[COL_LOWER]], &w->lower) ||
      parse_int(r, "upper", r->field[r->col[COL_UPPER]], &w->upper) ||
      parse_int(r, "size", r->field[r->col[COL_SIZE]], &w->size))
    return PA_EINPUT;
  if (r->legacy) w->upper += 1; /* legacy end is inclusive */
  w->align = 1, w->offset = PA_NO_OFFSET;
  int ca = r->col[COL_ALIGN], co = r->col[COL_OFFSET];
  if (ca >= 0 && *r->field[ca] && parse_int(r, "alignment", r->field[ca], &w->align))
    return PA_EINPUT;
  if (co >= 0 && *r->field[co] && parse_int(r, "offset", r->field[co], &w->offset))
    return PA_EINPUT;
  return PA_OK;
}

static int check_row(reader_t *r, const row_t *w) {
  if (!*w->id) return fail(r, "empty id");
  if (w->size <= 0) return fail(r, "size %lld is not positive", (long long)w->size);
  if (w->lower < 0) return fail(r, "lower %lld is negative", (long long)w->lower);
  if (w->upper <= w->lower)
    return fail(r, "upper %lld <= lower %lld", (long long)w->upper, (long long)w->lower);
  if (w->align <= 0) return fail(r, "alignment %lld is not positive", (long long)w->align);
  if (w->offset != PA_NO_OFFSET && w->offset < 0)
    return fail(r, "offset %lld is negative", (long long)w->offset);
  if (w->offset != PA_NO_OFFSET && w->offset % w->align)
    return fail(r, "offset %lld is not a multiple of alignment %lld", (long long)w->offset,
                (long long)w->align);
  return PA_OK;
}

static int remember_id(reader_t *r, pa_trace_t *t) {
  seen_t *dup;
  bool oom = false;
  const char *id = t->ids[t->n - 1];
  HASH_FIND_STR(r->seen, id, dup);
  if (dup) return fail(r, "duplicate id '%.64s' (first on line %zu)", id, dup->line);
  seen_t *s = &r->seen_pool[t->n - 1];
  s->id = id, s->line = r->line;
  HASH_ADD_KEYPTR(hh, r->seen, s->id, strlen(s->id), s);
  return oom ? PA_ENOMEM : PA_OK;
}

static int grow_seen(reader_t *r, pa_trace_t *t) {
  if (t->n < t->cap && r->seen_pool) return PA_OK;
  /* The hash links entries by pointer, so the pool is rebuilt when it moves. */
  size_t cap = t->cap ? t->cap * 2 : 1024;
  seen_t *pool = calloc(cap, sizeof *pool);
  bool oom = false;
  if (!pool) return PA_ENOMEM;
  HASH_CLEAR(hh, r->seen);
  for (size_t i = 0; i < t->n; i++) {
    pool[i] = r->seen_pool[i];
    HASH_ADD_KEYPTR(hh, r->seen, pool[i].id, strlen(pool[i].id), &pool[i]);
  }
  free(r->seen_pool);
  r->seen_pool = pool;
  if (oom) return PA_ENOMEM;
  void *b = realloc(t->bufs, cap * sizeof *t->bufs), *d;
  if (!b) return PA_ENOMEM;
  t->bufs = b;
  if (!(d = realloc(t->ids, cap * sizeof *t->ids))) return PA_ENOMEM;
  t->ids = d, t->cap = cap;
  return PA_OK;
}

static int add_row(reader_t *r, pa_trace_t *t, const row_t *w) {
  size_t ngaps = 0;
  uint32_t nspans = 0;
  int cg = r->col[COL_GAPS];
  if (cg >= 0 && parse_gaps(r, r->field[cg], &ngaps)) return PA_EINPUT;
  if (carve(r, w->lower, w->upper, ngaps, &nspans)) return PA_EINPUT;
  if (grow_seen(r, t)) return PA_ENOMEM;
  int rc = pa_trace_add(t, w->id, w->size, w->align, w->offset, r->spans + ngaps, nspans);
  if (rc == PA_EINPUT)
    return fail(r, "sizes, offsets and alignments add up past the limit of 2^62");
  return rc ? rc : remember_id(r, t);
}

static int parse_row(reader_t *r, pa_trace_t *t, char *line) {
  int n = split_fields(r, line);
  if (n < 0) return PA_EINPUT;
  if (n != r->nfields) return fail(r, "%d fields, the header has %d", n, r->nfields);
  row_t w = {.id = r->field[r->col[COL_ID]]};
  if (parse_numbers(r, &w) || check_row(r, &w)) return PA_EINPUT;
  return add_row(r, t, &w);
}

static void note_columns(const reader_t *r, pa_trace_t *t) {
  t->cols = (r->legacy ? PA_COL_LEGACY : 0) | (r->col[COL_ALIGN] >= 0 ? PA_COL_ALIGNMENT : 0) |
            (r->col[COL_GAPS] >= 0 ? PA_COL_GAPS : 0) |
            (r->col[COL_OFFSET] >= 0 ? PA_COL_OFFSET : 0);
}

static int read_all(reader_t *r, pa_trace_t *t) {
  char *buf = NULL;
  size_t cap = 0;
  bool got, header = false;
  int rc;
  while ((rc = next_line(r, &buf, &cap, &got)) == PA_OK && got) {
    if (blank(buf) || buf[0] == '#') continue; /* comments: a dump's version line */
    rc = header ? parse_row(r, t, buf) : parse_header(r, buf);
    if (rc) break;
    header = true;
  }
  free(buf);
  if (rc) return rc;
  r->line++;
  if (!header) return fail(r, "empty file (no header)");
  if (!t->n) return fail(r, "no buffers after the header");
  note_columns(r, t);
  return PA_OK;
}

int pa_csv_read_buf(const char *data, size_t len, pa_trace_t *t, char *err, size_t errlen) {
  reader_t r = {.p = data, .end = data + len, .err = err, .errlen = errlen};
  pa_trace_init(t);
  int rc = read_all(&r, t);
  HASH_CLEAR(hh, r.seen);
  free(r.seen_pool), free(r.spans);
  if (rc == PA_ENOMEM) snprintf(err, errlen, "%zu: out of memory", r.line);
  if (rc) pa_trace_free(t);
  return rc;
}

int pa_csv_read(FILE *f, pa_trace_t *t, char *err, size_t errlen) {
  size_t cap = 1 << 16, len = 0, got;
  char *data = malloc(cap);
  while (data && (got = fread(data + len, 1, cap - len, f)) > 0) {
    len += got;
    if (len == cap) {
      char *q = realloc(data, cap *= 2);
      if (!q) free(data);
      data = q;
    }
  }
  if (!data) {
    snprintf(err, errlen, "0: out of memory reading the file");
    return PA_ENOMEM;
  }
  if (ferror(f)) {
    free(data);
    snprintf(err, errlen, "0: read error");
    return PA_EINPUT;
  }
  int rc = pa_csv_read_buf(data, len, t, err, errlen);
  free(data);
  return rc;
}
