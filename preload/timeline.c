/* The memory timeline of the dumps (PLANALLOC_DUMP set): after allocation and free
 * events, the live bytes, the device memory planalloc holds and the bytes moved to and
 * from the host; and the phase changes (a recording starts, a plan serves, the program
 * leaves it). Rows sit in one fixed array: when it fills, every other row goes and only
 * every 2nd event is sampled from then on, so a run of any length costs ROWS rows, and
 * each row keeps the peaks of the events it stands for, so no peak is lost. Phase marks
 * are rows of their own, never thinned. pa_mu held throughout; nothing allocates after
 * the first event. */
#include "pa.h"

#include <stdarg.h>
#include <stdlib.h>
#include <time.h>

#define ROWS 8192
#define MARKS 256

typedef struct row_s {
  uint64_t event, us, live, live_max, mapped, mapped_max, out, in;
} row_t;

typedef struct mark_s {
  row_t at;
  char what[96];
} mark_t;

static struct {
  row_t *row;
  mark_t *mark;
  size_t nrow, nmark, marks_dropped;
  uint64_t stride, live_max, mapped_max; /* the maxima since the last row */
  bool failed;
} PA_PER_DEVICE(tl) = {[0 ... PA_SLOTS - 1] = {.stride = 1}};
PA_BIND(tl)
#define tl PA_THIS(tl)

/* The timeline's and the event log's clock: one, so that their times line up. */
uint64_t pa_run_us(void) {
  static _Atomic uint64_t start;
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  uint64_t us = (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u, none = 0;
  atomic_compare_exchange_strong(&start, &none, us);
  return us - atomic_load(&start);
}

static bool ready(void) {
  if (tl.row) return true;
  if (tl.failed || !pa_opt.v[PA_OPT_DUMP].text[0]) return false;
  tl.row = malloc(ROWS * sizeof *tl.row);
  tl.mark = malloc(MARKS * sizeof *tl.mark);
  if (tl.row && tl.mark) return true;
  free(tl.row), free(tl.mark);
  tl.row = NULL, tl.mark = NULL, tl.failed = true;
  pa_warn("no memory for the timeline dump: it is left out");
  return false;
}

/* Counts the state now into the peaks since the last row. */
static void observe(void) {
  uint64_t mapped = pa_pool_mapped();
  if (mapped > tl.mapped_max) tl.mapped_max = mapped;
  if (pa_stats.live > tl.live_max) tl.live_max = pa_stats.live;
}

static row_t sample(void) {
  uint64_t out, in;
  pa_swap_moved(&out, &in);
  return (row_t){pa_stats.allocs + pa_stats.frees, pa_run_us(), pa_stats.live, tl.live_max, pa_pool_mapped(),
                 tl.mapped_max, out, in};
}

/* Keeps the rows at multiples of twice the stride, each taking its dropped
 * predecessor's peaks. */
static void thin(void) {
  size_t k = 0;
  uint64_t lmax = 0, mmax = 0;
  for (size_t i = 0; i < tl.nrow; i++) {
    row_t r = tl.row[i];
    lmax = r.live_max > lmax ? r.live_max : lmax, mmax = r.mapped_max > mmax ? r.mapped_max : mmax;
    if (r.event % (2 * tl.stride)) continue;
    r.live_max = lmax, r.mapped_max = mmax, lmax = mmax = 0;
    tl.row[k++] = r;
  }
  tl.nrow = k, tl.stride *= 2;
}

void pa_timeline_event(void) {
  uint64_t event = pa_stats.allocs + pa_stats.frees;
  if (!ready()) return;
  observe();
  if (event % tl.stride) return;
  if (tl.nrow == ROWS) thin();
  if (event % tl.stride) return;
  tl.row[tl.nrow++] = sample();
  tl.live_max = tl.mapped_max = 0;
}

void pa_timeline_mark(const char *fmt, ...) {
  if (!ready()) return;
  if (tl.nmark == MARKS) {
    tl.marks_dropped++;
    return;
  }
  mark_t *m = &tl.mark[tl.nmark++];
  observe(); /* the peaks carry on into the next row: a mark is no sample */
  m->at = sample();
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(m->what, sizeof m->what, fmt, ap);
  va_end(ap);
}

static void write_row(FILE *f, const row_t *r, const char *mark) {
  fprintf(f, "%llu,%llu,%llu,%llu,%llu,%llu,%llu,%llu,%s\n", (unsigned long long)r->event,
          (unsigned long long)r->us, (unsigned long long)r->live, (unsigned long long)r->live_max,
          (unsigned long long)r->mapped, (unsigned long long)r->mapped_max, (unsigned long long)r->out,
          (unsigned long long)r->in, mark);
}

/* Rows and marks merged in event order (a mark after the row of its event: marks come
 * from the bookkeeping after the event was counted), then the state at exit. */
void pa_timeline_dump(FILE *f) {
  fprintf(f, "# planalloc timeline 1\nevent,time_us,live,live_max,mapped,mapped_max,bytes_out,bytes_in,mark\n");
  if (!ready()) return;
  size_t i = 0, j = 0;
  while (i < tl.nrow || j < tl.nmark) {
    if (j < tl.nmark && (i == tl.nrow || tl.mark[j].at.event < tl.row[i].event)) write_row(f, &tl.mark[j].at, tl.mark[j].what), j++;
    else write_row(f, &tl.row[i++], "");
  }
  observe();
  row_t end = sample();
  write_row(f, &end, "exit");
  if (tl.marks_dropped) fprintf(f, "# %zu more marks were left out\n", tl.marks_dropped);
}
