/* event_replay: replays a program's logged allocation stream through cudaMalloc/cudaFree,
 * each logged thread on a thread of its own, in logged order. Two formats:
 *   ../shared/data/gpu-events:  "a <ptr> <size> <tid>" / "f <ptr> <tid>" ((nil): 0 bytes)
 *   planalloc's events dump:    "# planalloc events N", then CSV with columns
 *                               kind (a/f; other rows skipped), thread, ptr, size
 *   planalloc's trace dump:     "# planalloc trace 1" (id,lower,upper,size), with --access
 *                               ACCESS.csv beside it ("# planalloc access 2": launch,
 *                               stream,buffer,event): the recording's allocations and
 *                               frees in order, and its launches, each touching the
 *                               buffers it touched (a kernel that reads them, up to 4 a
 *                               launch: more are split), on one thread
 * A name ending in .xz is read through xz -dc. Each buffer gets a pattern of its own when
 * it is made and is verified before its free (pattern.h): a mismatch means two live
 * buffers shared memory. With --kernels 0 no kernel runs: the allocator's host cost alone.
 * --steps N repeats the log's steady period: the replay is the log's warm-up, N periods,
 * then its last events (a free follows its buffer: in a period by how many allocations
 * back it was made, as the period was found; after it, by the buffer itself).
 * --host-us U: the host busy U us before each replayed launch, as PyTorch's is.
 * Usage: event_replay LOG [--access ACCESS.csv [--host-us U]] [--steps N] [--kernels 0|1] [--scale F] [--sample 0|1] */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "pattern.h"

/* A replayed launch: reads the first word of each buffer it touches (a use planalloc's
 * launch hook sees, and one that faults on a page left away), into a sink. */
KERNEL_5(touch, const unsigned *, a, const unsigned *, b, const unsigned *, c, const unsigned *, d, unsigned *, sink) {
  DEVICE_LOOP(i, 1) *sink += (a ? a[0] : 0) + (b ? b[0] : 0) + (c ? c[0] : 0) + (d ? d[0] : 0);
}

#define USES 4 /* buffers a replayed launch touches, at most */

typedef struct ev_s {
  long long size; /* bytes, 0 for a zero-byte request */
  long id;        /* an allocation's number (-1: zero bytes); a free's: the one it frees */
  int thread;
  char kind;      /* 'a', 'f' or 'l' (a launch) */
  int nuse;       /* a launch's buffers: use[0 .. nuse), allocation numbers */
  long use[USES];
} ev_t;

typedef struct log_s {
  ev_t *ev;
  long n, cap, nalloc;
  int nthreads;
  long long tids[64];
} log_t;

static void die(const char *what, const char *path) {
  fprintf(stderr, "event_replay: %s: %s\n", path, what);
  exit(2);
}

static void push(log_t *l, ev_t e) {
  if (l->n == l->cap) {
    l->cap = l->cap ? 2 * l->cap : 4096;
    l->ev = (ev_t *)realloc(l->ev, (size_t)l->cap * sizeof *l->ev);
    if (!l->ev) die("out of memory", "log");
  }
  l->ev[l->n++] = e;
}

static int thread_of(log_t *l, long long tid, const char *path) {
  for (int i = 0; i < l->nthreads; i++)
    if (l->tids[i] == tid) return i;
  if (l->nthreads == 64) die("more than 64 threads", path);
  l->tids[l->nthreads] = tid;
  return l->nthreads++;
}

/* Live logged pointers and their allocation numbers: an open-addressing table. */
typedef struct live_s {
  unsigned long long *key;
  long *id;
  size_t cap, n;
} live_t;

static size_t slot_of(const live_t *t, unsigned long long k) {
  size_t i = (size_t)((k * 0x9e3779b97f4a7c15ull) >> 20) & (t->cap - 1);
  while (t->key[i] && t->key[i] != k) i = (i + 1) & (t->cap - 1);
  return i;
}

static void live_put(live_t *t, unsigned long long k, long id) {
  if (2 * (t->n + 1) > t->cap) {
    live_t g = {(unsigned long long *)calloc(t->cap ? 2 * t->cap : 1024, sizeof *g.key), NULL,
                t->cap ? 2 * t->cap : 1024, 0};
    g.id = (long *)calloc(g.cap, sizeof *g.id);
    if (!g.key || !g.id) die("out of memory", "log");
    for (size_t i = 0; i < t->cap; i++)
      if (t->key[i]) live_put(&g, t->key[i], t->id[i]);
    free(t->key), free(t->id), *t = g;
  }
  size_t i = slot_of(t, k);
  t->n += !t->key[i];
  t->key[i] = k, t->id[i] = id;
}

/* Removes k; its allocation number, or -1 if it is not live. */
static long live_take(live_t *t, unsigned long long k) {
  if (!t->cap) return -1;
  size_t i = slot_of(t, k);
  if (!t->key[i]) return -1;
  long id = t->id[i];
  t->key[i] = 0, t->n--;
  for (size_t j = (i + 1) & (t->cap - 1); t->key[j]; j = (j + 1) & (t->cap - 1)) { /* re-seat the run */
    unsigned long long kk = t->key[j];
    long v = t->id[j];
    t->key[j] = 0, t->n--;
    live_put(t, kk, v);
  }
  return id;
}

typedef struct row_s {
  char kind;
  unsigned long long ptr;
  long long size, tid;
} row_t;

/* planalloc's CSV: the columns by name. */
static int csv_cols[4] = {-1, -1, -1, -1}; /* kind, thread, ptr, size */

static void csv_header(char *line, const char *path) {
  static const char *const names[4] = {"kind", "thread", "ptr", "size"};
  int k = 0;
  for (char *tok = strtok(line, ",\r\n"); tok; tok = strtok(NULL, ",\r\n"), k++)
    for (int c = 0; c < 4; c++)
      if (!strcmp(tok, names[c])) csv_cols[c] = k;
  for (int c = 0; c < 4; c++)
    if (csv_cols[c] < 0) die("the events header lacks kind, thread, ptr or size", path);
}

static bool csv_row(char *line, row_t *r) {
  char *field[16];
  int k = 0;
  for (char *p = line, *tok; k < 16 && (tok = strsep(&p, ",\r\n")); k++) field[k] = tok;
  for (int c = 0; c < 4; c++)
    if (csv_cols[c] >= k) return false;
  r->kind = field[csv_cols[0]][0];
  r->tid = strtoll(field[csv_cols[1]], NULL, 0);
  r->ptr = strtoull(field[csv_cols[2]], NULL, 16);
  r->size = strtoll(field[csv_cols[3]], NULL, 10);
  return r->kind == 'a' || r->kind == 'f';
}

static bool gpu_row(const char *line, row_t *r) {
  char kind, ptr[64];
  long long a, b;
  int n = sscanf(line, " %c %63s %lld %lld", &kind, ptr, &a, &b);
  if (n < 3 || (kind != 'a' && kind != 'f')) return false;
  r->kind = kind, r->ptr = strcmp(ptr, "(nil)") ? strtoull(ptr, NULL, 16) : 0;
  if (kind == 'a') {
    r->size = a, r->tid = b;
    return n == 4;
  }
  r->size = 0, r->tid = a;
  return true;
}

static FILE *open_log(const char *path, bool *piped) {
  size_t n = strlen(path);
  *piped = n > 3 && !strcmp(path + n - 3, ".xz");
  if (!*piped) return fopen(path, "r");
  char cmd[4200];
  if (strchr(path, '\'') || n > 4000) die("a name xz cannot be given", path);
  snprintf(cmd, sizeof cmd, "xz -dc '%s'", path);
  return popen(cmd, "r");
}

static void load(const char *path, log_t *l, double scale) {
  bool piped, csv = false;
  FILE *f = open_log(path, &piped);
  if (!f) die("cannot read", path);
  live_t live = {NULL, NULL, 0, 0};
  char line[4096];
  row_t r;
  for (long no = 1; fgets(line, sizeof line, f); no++) {
    if (no == 1 && !strncmp(line, "# planalloc events ", 19)) {
      int v = atoi(line + 19); /* 2 added time_us: the columns are read by name */
      if (v != 1 && v != 2) die("an events dump of a version this replayer does not read", path);
      csv = true;
      if (!fgets(line, sizeof line, f)) die("no header", path);
      csv_header(line, path);
      continue;
    }
    if (line[0] == '#' || !(csv ? csv_row(line, &r) : gpu_row(line, &r))) continue;
    ev_t e = {0, -1, thread_of(l, r.tid, path), r.kind, 0, {0}};
    if (r.kind == 'a' && r.ptr && r.size > 0) {
      double s = (double)r.size / scale;
      e.size = s < 1 ? 1 : (long long)(s + 0.5), e.id = l->nalloc++;
      live_put(&live, r.ptr, e.id);
    } else if (r.kind == 'f' && (e.id = live_take(&live, r.ptr)) < 0)
      continue; /* a free of nothing the log made (or of NULL) */
    push(l, e);
  }
  if (piped ? pclose(f) != 0 : fclose(f) != 0) die("read failed", path);
  free(live.key), free(live.id);
  if (!l->n) die("no events", path);
  long long *size = (long long *)malloc((size_t)(l->nalloc + 1) * sizeof *size);
  if (!size) die("out of memory", path);
  for (long i = 0; i < l->n; i++) /* a free carries its buffer's size */
    if (l->ev[i].kind == 'a' && l->ev[i].id >= 0) size[l->ev[i].id] = l->ev[i].size;
    else if (l->ev[i].kind == 'f') l->ev[i].size = size[l->ev[i].id];
  free(size);
}

typedef struct shape_s {
  long start, period, periods, rest; /* events [start, start + period * periods + rest) repeat */
} shape_t;

/* ---- planalloc's trace and access dumps ------------------------------------------------ */

typedef struct use_s {
  long launch, event, buffer;
} use_t;

static int by_launch(const void *x, const void *y) {
  const use_t *a = (const use_t *)x, *b = (const use_t *)y;
  if (a->launch != b->launch) return (a->launch > b->launch) - (a->launch < b->launch);
  return (a->buffer > b->buffer) - (a->buffer < b->buffer);
}

/* The access dump's rows (launch, event, buffer), sorted by launch; their count. */
static long read_uses(const char *path, use_t **out) {
  bool piped;
  FILE *f = open_log(path, &piped);
  char line[512];
  if (!f || !fgets(line, sizeof line, f) || strncmp(line, "# planalloc access ", 19)) die("not an access dump", path);
  long n = 0, cap = 0;
  *out = NULL;
  while (fgets(line, sizeof line, f)) {
    long launch, stream, buffer, event;
    if (sscanf(line, "%ld,%ld,%ld,%ld", &launch, &stream, &buffer, &event) != 4 || buffer < 0 || event < 0) continue;
    if (n == cap && !(*out = (use_t *)realloc(*out, (size_t)(cap = cap ? 2 * cap : 4096) * sizeof **out))) die("out of memory", path);
    (*out)[n++] = (use_t){launch, event, buffer};
  }
  if (piped ? pclose(f) != 0 : fclose(f) != 0) die("read failed", path);
  qsort(*out, (size_t)n, sizeof **out, by_launch);
  return n;
}

typedef struct tbuf_s {
  long long lower, upper, size;
  long id; /* its allocation number once made */
} tbuf_t;

/* The trace dump's buffers, indexed by their number (b<k>); their count (k + 1). */
static long read_trace(const char *path, tbuf_t **out, double scale) {
  bool piped;
  FILE *f = open_log(path, &piped);
  char line[512];
  if (!f || !fgets(line, sizeof line, f) || strncmp(line, "# planalloc trace ", 18)) die("not a trace dump", path);
  long n = 0;
  *out = NULL;
  while (fgets(line, sizeof line, f)) {
    long k;
    long long lo, up, size;
    if (sscanf(line, "b%ld,%lld,%lld,%lld", &k, &lo, &up, &size) != 4 || k < 0 || k > 100000000 || lo < 0 || up < lo) continue;
    if (k >= n) {
      if (!(*out = (tbuf_t *)realloc(*out, (size_t)(k + 1) * sizeof **out))) die("out of memory", path);
      for (long j = n; j <= k; j++) (*out)[j] = (tbuf_t){-1, -1, 0, -1};
      n = k + 1;
    }
    double s = (double)size / scale;
    (*out)[k] = (tbuf_t){lo, up, size > 0 ? (s < 1 ? 1 : (long long)(s + 0.5)) : 0, -1};
  }
  if (piped ? pclose(f) != 0 : fclose(f) != 0) die("read failed", path);
  return n;
}

/* Event position e's allocation or free (at: the buffer there, or -1). */
static void trace_event(log_t *l, tbuf_t *b, const long *at, long e, bool freeing) {
  long k = at[e];
  if (k < 0) return;
  if (!freeing && b[k].size > 0) {
    b[k].id = l->nalloc++;
    push(l, (ev_t){b[k].size, b[k].id, 0, 'a', 0, {0}});
  } else if (freeing && b[k].id >= 0)
    push(l, (ev_t){b[k].size, b[k].id, 0, 'f', 0, {0}});
}

/* The launches made before event position e (from u[i] on), each as launches of at
 * most USES buffers; the next row. */
static long trace_launches(log_t *l, const tbuf_t *b, long nb, const use_t *u, long nu, long i, long e) {
  while (i < nu && u[i].event == e) {
    long launch = u[i].launch;
    ev_t ev = {0, -1, 0, 'l', 0, {0}};
    for (; i < nu && u[i].launch == launch; i++) {
      if (u[i].buffer >= nb || b[u[i].buffer].id < 0) continue; /* made before the trace, or zero bytes */
      ev.use[ev.nuse++] = b[u[i].buffer].id;
      if (ev.nuse == USES) push(l, ev), ev.nuse = 0;
    }
    if (ev.nuse) push(l, ev);
  }
  return i;
}

/* Position e's event, for comparing steps: an allocation by its size, a free by its
 * size and by how many allocations back its buffer was made. */
static bool same_at(const tbuf_t *b, const long *alloc_at, const long *free_at, const long *made, long e, long f) {
  long x = alloc_at[e] >= 0 ? alloc_at[e] : free_at[e], y = alloc_at[f] >= 0 ? alloc_at[f] : free_at[f];
  if (x < 0 || y < 0 || (alloc_at[e] >= 0) != (alloc_at[f] >= 0) || b[x].size != b[y].size) return x < 0 && y < 0;
  return alloc_at[e] >= 0 || made[e] - made[b[x].lower] == made[f] - made[b[y].lower];
}

/* The shortest period of positions over which the recording's last two match (it ends
 * once planalloc saw two periods alike, after a warm-up that may be longer); 0: none. */
static long dump_period(const tbuf_t *b, const long *alloc_at, const long *free_at, const long *made, long end) {
  for (long p = 1; 2 * p <= end; p++) {
    long e = end - p;
    while (e < end && same_at(b, alloc_at, free_at, made, e, e - p)) e++;
    if (e == end) return p;
  }
  return 0;
}

/* A recording as planalloc dumped it: each event position one allocation or one free,
 * the launches between them, up to the last launch the access dump holds; the buffers
 * live at the dump's moment (their upper) are not freed. *s: the first of its last two
 * periods, to repeat (the second may lack its last launches). */
static void load_dump(const char *trace, const char *access, log_t *l, double scale, shape_t *s) {
  tbuf_t *b;
  use_t *u;
  long nb = read_trace(trace, &b, scale), nu = read_uses(access, &u), end = 0, last = 0;
  for (long k = 0; k < nb; k++) end = b[k].upper > end ? b[k].upper : end;
  for (long i = 0; i < nu; i++) last = u[i].event > last ? u[i].event : last;
  long *alloc_at = (long *)malloc((size_t)(end + 1) * sizeof *alloc_at), *free_at = (long *)malloc((size_t)(end + 1) * sizeof *free_at);
  long *made = (long *)calloc((size_t)end + 2, sizeof *made);
  if (!alloc_at || !free_at || !made) die("out of memory", trace);
  for (long e = 0; e <= end; e++) alloc_at[e] = free_at[e] = -1;
  for (long k = 0; k < nb; k++) {
    if (b[k].lower < 0) continue;
    if (alloc_at[b[k].lower] >= 0 || (b[k].upper < end && free_at[b[k].upper] >= 0)) die("two events at one position", trace);
    alloc_at[b[k].lower] = k;
    if (b[k].upper < end) free_at[b[k].upper] = k;
  }
  for (long e = 0; e <= end; e++) made[e + 1] = made[e] + (alloc_at[e] >= 0);
  long p = dump_period(b, alloc_at, free_at, made, end), from = end - 2 * p;
  *s = (shape_t){0, 0, 0, 0};
  l->nthreads = 1, l->tids[0] = 0;
  for (long e = 0, i = 0; e <= end && e <= last; e++) { /* the access dump may stop before the trace */
    if (p && e == from) s->start = l->n;
    if (p && e == from + p) s->period = l->n - s->start, s->periods = 1;
    i = trace_launches(l, b, nb, u, nu, i, e);
    trace_event(l, b, free_at, e, true);
    trace_event(l, b, alloc_at, e, false);
  }
  free(alloc_at), free(free_at), free(made), free(b), free(u);
  if (!l->n) die("no events", trace);
}

/* ---- the steady period ---------------------------------------------------------------- */

/* A free's distance: allocations made since the one it frees. Events i and j are the
 * same step's when kind, thread, size and distance agree. */
static long *distances(const log_t *l) {
  long *d = (long *)malloc((size_t)l->n * sizeof *d), made = 0;
  if (!d) die("out of memory", "log");
  for (long i = 0; i < l->n; i++) {
    const ev_t *e = &l->ev[i];
    d[i] = e->kind == 'f' ? made - e->id : e->kind == 'l' ? made : 0; /* a launch: made so far */
    made += e->kind == 'a' && e->id >= 0;
  }
  return d;
}

static bool same(const log_t *l, const long *d, long i, long j) {
  const ev_t *a = &l->ev[i], *b = &l->ev[j];
  return a->kind == b->kind && a->thread == b->thread && a->size == b->size && d[i] == d[j] &&
         (a->id < 0) == (b->id < 0);
}

/* The stretch around the log's middle that repeats with period p, or none shorter
 * than 2p. */
static shape_t stretch(const log_t *l, const long *d, long p) {
  shape_t s = {l->n, 0, 0, 0};
  long mid = l->n / 2, k = 0;
  while (k < 64 && mid + k < l->n && same(l, d, mid + k - p, mid + k)) k++;
  if (k < 64 && mid + k < l->n) return s;
  long lo = mid - p, hi = mid; /* [lo, hi): events equal to the one p later */
  while (lo > 0 && same(l, d, lo - 1, lo - 1 + p)) lo--;
  while (hi + p < l->n && same(l, d, hi, hi + p)) hi++;
  long len = hi - lo + p;
  if (len >= 2 * p) s.start = lo, s.period = p, s.periods = len / p, s.rest = len % p;
  return s;
}

/* The steady period: the shortest p whose stretch is at least half the longest any p
 * repeats (a loop inside the step repeats too, over a short stretch; multiples of the
 * step repeat over as long a one, or longer where the warm-up resembles a step). */
static shape_t find_period(const log_t *l, const long *d) {
  shape_t best = {l->n, 0, 0, 0};
  long most = 0;
  for (long p = 1; p <= l->n / 2; p++) {
    shape_t s = stretch(l, d, p);
    long len = s.period * s.periods + s.rest;
    if (len > most) most = len;
  }
  for (long p = 1; p <= l->n / 2 && most; p++) {
    shape_t s = stretch(l, d, p);
    if (s.period && 2 * (s.period * s.periods + s.rest) >= most) return s;
  }
  return best;
}

static bool makes(const ev_t *e) { return e->kind == 'a' && e->id >= 0; }

/* The log with its steady period repeated `steps` times: the warm-up as logged, the
 * period's events with their frees by distance, then the last events, whose frees of
 * the period's buffers move by the allocations the replay's periods made beyond the
 * log's. */
static log_t extend(const log_t *l, const long *d, shape_t s, long steps) {
  log_t x = *l;
  x.ev = NULL, x.n = x.cap = x.nalloc = 0;
  long end = s.start + s.period * s.periods + s.rest, first = l->nalloc, logged = 0;
  for (long i = s.start; i < end; i++)
    if (makes(&l->ev[i])) logged++, first = first < l->ev[i].id ? first : l->ev[i].id;
  for (long i = 0; i < s.start; i++) push(&x, l->ev[i]), x.nalloc += makes(&l->ev[i]);
  long before = x.nalloc;
  for (long j = 0; j < steps * s.period + s.rest; j++) {
    long i = s.start + j % s.period;
    ev_t e = l->ev[i];
    if (makes(&e)) e.id = x.nalloc++;
    else if (e.kind == 'f') e.id = x.nalloc - d[i];
    for (int k = 0; k < e.nuse; k++) /* the period's own buffers by distance, older ones themselves */
      e.use[k] = e.use[k] < first ? e.use[k] : x.nalloc - (d[i] - e.use[k]);
    push(&x, e);
  }
  long shift = x.nalloc - before - logged;
  for (long i = end; i < l->n; i++) {
    ev_t e = l->ev[i];
    if (makes(&e)) e.id = x.nalloc++;
    else if (e.kind == 'f' && e.id >= first) e.id += shift;
    for (int k = 0; k < e.nuse; k++) e.use[k] += e.use[k] >= first ? shift : 0;
    push(&x, e);
  }
  return x;
}

/* ---- the replay ------------------------------------------------------------------------ */

static struct {
  const log_t *log;
  shape_t shape;
  void **ptr;         /* per allocation */
  long **mine, *nmine; /* per thread: its events, in order */
  long next;          /* the event whose turn it is */
  pthread_mutex_t mu;
  pthread_cond_t *turn; /* per thread */
  unsigned long long *bad, nbad;
  unsigned *sink; /* the replayed launches' reads */
  int kernels, sample;
  double host_ns; /* --host-us: the program's own host time before each launch */
} rp;

static long words(long long size) { return (long)(size / 4); }
static unsigned seed(long id) { return (unsigned)id * 40503u + 17u; }

/* At each period start (and at the end): what the device counted so far. */
static void step_line(long i) {
  shape_t s = rp.shape;
  if (!s.period || i < s.start || (i - s.start) % s.period || (i - s.start) / s.period >= s.periods) return;
  if (rp.kernels) CHECK_CUDA(cudaMemcpy(&rp.nbad, rp.bad, sizeof rp.nbad, cudaMemcpyDeviceToHost));
  printf("iter %ld mismatches %llu\n", (i - s.start) / s.period, rp.nbad);
}

/* The host busy for ns, as a framework is between its launches (PyTorch's eager loop:
 * tens of microseconds a kernel). */
static void spin(double ns) {
  struct timespec a, b;
  clock_gettime(CLOCK_MONOTONIC, &a);
  do clock_gettime(CLOCK_MONOTONIC, &b);
  while (ns > 0 && (double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec) < ns);
}

/* A launch's buffers, read on the device (one freed meanwhile, which a distance may name
 * where PyTorch made it elsewhere in a later step, is left out). */
static void touch_uses(const ev_t *e) {
  const unsigned *p[USES] = {NULL, NULL, NULL, NULL};
  for (int k = 0; k < e->nuse; k++) p[k] = e->use[k] >= 0 ? (const unsigned *)rp.ptr[e->use[k]] : NULL;
  CHECK_CUDA(touch_launch(port_dim(1), port_dim(1), 0, p[0], p[1], p[2], p[3], rp.sink));
}

static void run_event(long i) {
  const ev_t *e = &rp.log->ev[i];
  step_line(i);
  if (e->kind == 'l') {
    spin(rp.host_ns);
    if (rp.kernels) touch_uses(e);
  } else if (e->kind == 'a' && e->id < 0) {
    void *p = &rp;
    CHECK_CUDA(cudaMalloc(&p, 0));
    if (p) fprintf(stderr, "event_replay: a zero-byte cudaMalloc gave %p, not NULL\n", p), exit(1);
  } else if (e->kind == 'a') {
    CHECK_CUDA(cudaMalloc(&rp.ptr[e->id], (size_t)e->size));
    if (rp.kernels && words(e->size)) pattern_fill((unsigned *)rp.ptr[e->id], words(e->size), seed(e->id), rp.sample, 0);
  } else {
    if (rp.kernels && rp.ptr[e->id] && words(e->size))
      pattern_verify((const unsigned *)rp.ptr[e->id], words(e->size), seed(e->id), rp.sample, rp.bad, 0);
    CHECK_CUDA(cudaFree(rp.ptr[e->id]));
    rp.ptr[e->id] = NULL;
  }
}

static void *replay_thread(void *arg) {
  int me = (int)(intptr_t)arg;
  for (long k = 0; k < rp.nmine[me]; k++) {
    long i = rp.mine[me][k];
    pthread_mutex_lock(&rp.mu);
    while (rp.next != i) pthread_cond_wait(&rp.turn[me], &rp.mu);
    pthread_mutex_unlock(&rp.mu);
    run_event(i);
    pthread_mutex_lock(&rp.mu);
    rp.next = i + 1;
    if (rp.next < rp.log->n) pthread_cond_signal(&rp.turn[rp.log->ev[rp.next].thread]);
    pthread_mutex_unlock(&rp.mu);
  }
  return NULL;
}

static void replay(const log_t *l) {
  rp.log = l;
  rp.ptr = (void **)calloc((size_t)l->nalloc + 1, sizeof *rp.ptr);
  rp.mine = (long **)calloc((size_t)l->nthreads, sizeof *rp.mine);
  rp.nmine = (long *)calloc((size_t)l->nthreads, sizeof *rp.nmine);
  rp.turn = (pthread_cond_t *)calloc((size_t)l->nthreads, sizeof *rp.turn);
  if (!rp.ptr || !rp.mine || !rp.nmine || !rp.turn) die("out of memory", "replay");
  for (long i = 0; i < l->n; i++) rp.nmine[l->ev[i].thread]++;
  for (int t = 0; t < l->nthreads; t++) {
    rp.mine[t] = (long *)malloc((size_t)rp.nmine[t] * sizeof **rp.mine), rp.nmine[t] = 0;
    if (!rp.mine[t]) die("out of memory", "replay");
    pthread_cond_init(&rp.turn[t], NULL);
  }
  for (long i = 0; i < l->n; i++) rp.mine[l->ev[i].thread][rp.nmine[l->ev[i].thread]++] = i;
  pthread_mutex_init(&rp.mu, NULL);
  pthread_t *th = (pthread_t *)malloc((size_t)l->nthreads * sizeof *th);
  for (int t = 0; t < l->nthreads; t++)
    if (pthread_create(&th[t], NULL, replay_thread, (void *)(intptr_t)t)) die("cannot start a thread", "replay");
  for (int t = 0; t < l->nthreads; t++) pthread_join(th[t], NULL);
  free(th);
}

int main(int argc, char **argv) {
  if (argc < 2 || argv[1][0] == '-')
    fprintf(stderr, "usage: event_replay LOG [--access ACCESS.csv [--host-us U]] [--steps N] [--kernels 0|1] [--scale F] [--sample 0|1]\n"), exit(2);
  long steps = 0;
  double scale = 1;
  const char *access = NULL;
  rp.kernels = 1, rp.sample = 1;
  for (int i = 2; i < argc; i += 2) {
    if (i + 1 >= argc) fprintf(stderr, "event_replay: %s wants a value\n", argv[i]), exit(2);
    if (!strcmp(argv[i], "--steps")) steps = atol(argv[i + 1]);
    else if (!strcmp(argv[i], "--access")) access = argv[i + 1];
    else if (!strcmp(argv[i], "--host-us")) rp.host_ns = 1e3 * atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--kernels")) rp.kernels = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--scale")) scale = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--sample")) rp.sample = atoi(argv[i + 1]);
    else fprintf(stderr, "event_replay: unknown option %s\n", argv[i]), exit(2);
  }
  if (steps < 0 || !(scale >= 1)) fprintf(stderr, "event_replay: bad --steps or --scale\n"), exit(2);
  log_t l;
  memset(&l, 0, sizeof l);
  shape_t s = {0, 0, 0, 0};
  if (access) load_dump(argv[1], access, &l, scale, &s);
  else load(argv[1], &l, scale);
  long *d = distances(&l);
  if (!access) s = find_period(&l, d);
  fprintf(stderr, "event_replay: %s: %ld events, %ld allocations, %d threads; ", argv[1], l.n, l.nalloc, l.nthreads);
  if (s.period)
    fprintf(stderr, "warm-up %ld events, then a period of %ld x %ld + %ld, then %ld more\n", s.start, s.period, s.periods,
            s.rest, l.n - s.start - s.period * s.periods - s.rest);
  else
    fprintf(stderr, "no steady period\n");
  if (steps && !s.period) fprintf(stderr, "event_replay: --steps: the log has no steady period to repeat\n"), exit(2);
  log_t x = l;
  if (steps) x = extend(&l, d, s, steps), s.periods = steps;
  rp.shape = s;
  if (rp.kernels) {
    CHECK_CUDA(cudaMalloc((void **)&rp.bad, sizeof *rp.bad));
    CHECK_CUDA(cudaMemset(rp.bad, 0, sizeof *rp.bad));
    if (access) CHECK_CUDA(cudaMalloc((void **)&rp.sink, sizeof *rp.sink)); /* only where launches are replayed */
  }
  replay(&x);
  if (rp.kernels) {
    CHECK_CUDA(cudaMemcpy(&rp.nbad, rp.bad, sizeof rp.nbad, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaFree(rp.bad));
    if (rp.sink) CHECK_CUDA(cudaFree(rp.sink));
  }
  printf("final event_replay events %ld allocations %ld threads %d mismatches %llu\n", x.n, x.nalloc, x.nthreads, rp.nbad);
  for (int t = 0; t < x.nthreads; t++) free(rp.mine[t]), pthread_cond_destroy(&rp.turn[t]);
  free(rp.mine), free(rp.nmine), free(rp.turn), free(rp.ptr), free(d);
  if (x.ev != l.ev) free(x.ev);
  free(l.ev);
  return rp.nbad ? 1 : 0;
}
