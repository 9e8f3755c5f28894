/* Writes a trace back in the columns it came with, plus the layout's offsets: the form
 * MiniMalloc's solver writes, so either tool reads the other's output. */
#include "planner.h"

static void write_header(FILE *f, const pa_trace_t *t, bool with_offset) {
  if (t->cols & PA_COL_LEGACY) {
    fputs("buffer,start,end,size", f);
  } else {
    fputs("id,lower,upper,size", f);
    if (t->cols & PA_COL_ALIGNMENT) fputs(",alignment", f);
    if (t->cols & PA_COL_GAPS) fputs(",gaps", f);
  }
  fputs(with_offset ? ",offset\n" : "\n", f);
}

static void write_gaps(FILE *f, const pa_trace_t *t, const pa_buf_t *b) {
  const pa_span_t *s = pa_buf_spans(t, b);
  fputc(',', f);
  for (uint32_t i = 1; i < b->nspans; i++)
    fprintf(f, "%s%lld-%lld", i > 1 ? " " : "", (long long)s[i - 1].upper,
            (long long)s[i].lower);
}

static void write_row(FILE *f, const pa_trace_t *t, size_t i, int64_t offset, bool with_off) {
  const pa_buf_t *b = &t->bufs[i];
  bool legacy = t->cols & PA_COL_LEGACY;
  fprintf(f, "%s,%lld,%lld,%lld", t->ids[i], (long long)b->lower,
          (long long)(legacy ? b->upper - 1 : b->upper), (long long)b->size);
  if (!legacy && (t->cols & PA_COL_ALIGNMENT)) fprintf(f, ",%lld", (long long)b->align);
  if (!legacy && (t->cols & PA_COL_GAPS)) write_gaps(f, t, b);
  if (with_off && offset != PA_NO_OFFSET) fprintf(f, ",%lld", (long long)offset);
  else if (with_off) fputc(',', f);
  fputc('\n', f);
}

int pa_csv_write(FILE *f, const pa_trace_t *t, const int64_t *offsets) {
  bool with_off = offsets || (t->cols & PA_COL_OFFSET);
  write_header(f, t, with_off);
  for (size_t i = 0; i < t->n; i++)
    write_row(f, t, i, offsets ? offsets[i] : t->bufs[i].fixed, with_off);
  return ferror(f) ? PA_EINPUT : PA_OK;
}
