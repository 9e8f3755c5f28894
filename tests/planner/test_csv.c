/* The CSV reader and writer: accepted forms, and every rejection with its exact text. */
#include "../harness.h"
#include "planner.h"

#include <stdlib.h>

static int read_str(const char *text, pa_trace_t *t, char *err) {
  return pa_csv_read_buf(text, strlen(text), t, err, 256);
}

/* Reading must fail with PA_EINPUT and exactly this message. */
static void rejects_n(const char *text, size_t len, const char *message) {
  pa_trace_t t;
  char err[256] = "";
  CHECK_EQ_I64(pa_csv_read_buf(text, len, &t, err, sizeof err), PA_EINPUT);
  CHECK_STR(err, message);
}

static void rejects(const char *text, const char *message) {
  rejects_n(text, strlen(text), message);
}

static void test_rejections(void) {
  rejects("", "1: empty file (no header)");
  rejects("\n\n", "3: empty file (no header)");
  rejects("id,lower,upper,size\n", "2: no buffers after the header");
  rejects("id,lower,size\nb,0,4\n", "1: missing column 'upper' in header");
  rejects("id,lower,upper,size,colour\n", "1: unknown column 'colour' (known: id, lower, "
          "upper, size, alignment, gaps, offset, hint, site, placed)");
  rejects("id,lower,upper,size,site,site\nb,0,2,4,ab,ab\n", "1: column 'site' appears twice");
  rejects("id,lower,upper,size,size\n", "1: column 'size' appears twice");
  rejects("id,lower,upper,size\nb,0,x,4\n", "2: upper 'x' is not an integer");
  rejects("id,lower,upper,size\nb,0,2,4k\n", "2: size '4k' is not an integer");
  rejects("id,lower,upper,size\nb,0,2,-4\n", "2: size -4 is not positive");
  rejects("id,lower,upper,size\nb,0,2,0\n", "2: size 0 is not positive");
  rejects("id,lower,upper,size\nb,3,3,4\n", "2: upper 3 <= lower 3");
  rejects("id,lower,upper,size\nb,5,2,4\n", "2: upper 2 <= lower 5");
  rejects("id,lower,upper,size\nb,-1,2,4\n", "2: lower -1 is negative");
  rejects("id,lower,upper,size\nb,0,2,99999999999999999999\n",
          "2: size '99999999999999999999' is out of range (limit 2^62)");
  rejects("id,lower,upper,size\nb,0,2,4611686018427387905\n",
          "2: size '4611686018427387905' is out of range (limit 2^62)");
  rejects("id,lower,upper,size\nb,0,2,4611686018427387904\nc,0,2,4611686018427387904\n",
          "3: sizes, offsets and alignments add up past the limit of 2^62");
  rejects("id,lower,upper,size\nb,0,2\n", "2: 3 fields, the header has 4");
  rejects("id,lower,upper,size\nb,0,2,4\nb,1,3,4\n", "3: duplicate id 'b' (first on line 2)");
  rejects("id,lower,upper,size\n,0,2,4\n", "2: empty id");
  rejects("id,lower,upper,size\nb,,2,4\n", "2: empty lower");
  rejects("id,lower,upper,size,alignment\nb,0,2,4,0\n", "2: alignment 0 is not positive");
  rejects("id,lower,upper,size,alignment,offset\nb,0,2,4,8,4\n",
          "2: offset 4 is not a multiple of alignment 8");
  rejects("id,lower,upper,size,gaps\nb,0,10,4,3-2\n", "2: gap 3-2 is empty");
  rejects("id,lower,upper,size,gaps\nb,0,10,4,8-12\n",
          "2: gap 8-12 overlaps another gap or leaves [0, 10)");
  rejects("id,lower,upper,size,gaps\nb,0,10,4,1-5 3-6\n",
          "2: gap 3-6 overlaps another gap or leaves [0, 10)");
  rejects("id,lower,upper,size,gaps\nb,0,10,4,0-10\n", "2: gaps cover the whole lifetime");
  rejects("id,lower,upper,size,gaps\nb,0,10,4,1-2@0:2\n",
          "2: partial gaps ('1-2@0:2') are not supported");
  rejects("id,lower,upper,size,gaps\nb,0,10,4,12\n", "2: gap '12' is not of the form a-b");
  rejects_n("id,lower,upper,size\nb,0,2,4\x00\n", 28, "2: binary data (byte 0x00 at column 8)");
  rejects("\x7f" "ELF\x02\x01\x01", "1: binary data (byte 0x7f at column 1)");
}

static void test_forms(void) {
  pa_trace_t t;
  char err[256] = "";
  /* columns in any order, CRLF, spaces, string ids */
  CHECK_EQ_I64(read_str("size, upper ,id,lower\r\n4,3,b1,0\r\n\r\n8,9,b2,3\r\n", &t, err), PA_OK);
  CHECK_EQ_I64(t.n, 2);
  CHECK_STR(t.ids[1], "b2");
  CHECK_EQ_I64(t.bufs[1].size, 8);
  CHECK_EQ_I64(t.bufs[1].lower, 3);
  CHECK_EQ_I64(t.bufs[1].upper, 9);
  pa_trace_free(&t);
  /* legacy header: end is inclusive */
  CHECK_EQ_I64(read_str("buffer,start,end,size\nx,0,2,4\n", &t, err), PA_OK);
  CHECK_EQ_I64(t.bufs[0].upper, 3);
  CHECK(t.cols & PA_COL_LEGACY);
  pa_trace_free(&t);
  /* gaps carve occupancy; adjacent pieces stay separate only around a gap */
  CHECK_EQ_I64(read_str("id,lower,upper,size,gaps,alignment,offset,hint\n"
                        "a,0,10,4,6-8 2-3,4,8,-1\nb,0,10,4,,,,\n", &t, err), PA_OK);
  CHECK_EQ_I64(t.bufs[0].nspans, 3);
  CHECK_EQ_I64(pa_buf_spans(&t, &t.bufs[0])[1].lower, 3);
  CHECK_EQ_I64(pa_buf_spans(&t, &t.bufs[0])[1].upper, 6);
  CHECK_EQ_I64(t.bufs[0].align, 4);
  CHECK_EQ_I64(t.bufs[0].fixed, 8);
  CHECK_EQ_I64(t.bufs[1].nspans, 1);
  CHECK_EQ_I64(t.bufs[1].fixed, PA_NO_OFFSET);
  pa_trace_free(&t);
  /* an empty gaps column before any gap was read (UBSan: qsort of no array) */
  CHECK_EQ_I64(read_str("id,lower,upper,size,gaps\nb,0,4,8,\n", &t, err), PA_OK);
  CHECK_EQ_I64(t.bufs[0].nspans, 1);
  pa_trace_free(&t);
  /* a planalloc trace dump: site and placed are read and ignored (placed is no offset) */
  CHECK_EQ_I64(read_str("# planalloc trace 1\nid,lower,upper,size,site,placed\nb0,0,4,256,00ab,512\n", &t, err), PA_OK);
  CHECK_EQ_I64(t.n, 1);
  CHECK_EQ_I64(t.bufs[0].size, 256);
  CHECK_EQ_I64(t.bufs[0].fixed, PA_NO_OFFSET);
  pa_trace_free(&t);
}

static char *write_str(const pa_trace_t *t, const int64_t *off) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  pa_csv_write(f, t, off);
  fclose(f);
  return buf;
}

static void test_roundtrip(void) {
  const char *in = "id,lower,upper,size,alignment,gaps\na,0,10,4,4,2-3 6-8\nb,1,5,8,1,\n";
  pa_trace_t t, u;
  char err[256];
  CHECK_EQ_I64(read_str(in, &t, err), PA_OK);
  int64_t off[2] = {0, 4};
  char *out = write_str(&t, off);
  CHECK_STR(out, "id,lower,upper,size,alignment,gaps,offset\na,0,10,4,4,2-3 6-8,0\n"
                 "b,1,5,8,1,,4\n");
  CHECK_EQ_I64(read_str(out, &u, err), PA_OK); /* the output is valid input, offsets fixed */
  CHECK_EQ_I64(u.bufs[1].fixed, 4);
  CHECK_EQ_I64(u.nspans, t.nspans);
  free(out);
  pa_trace_free(&u);
  pa_trace_free(&t);
  CHECK_EQ_I64(read_str("buffer,start,end,size\nx,0,2,4\n", &t, err), PA_OK);
  int64_t zero = 0;
  out = write_str(&t, &zero);
  CHECK_STR(out, "buffer,start,end,size,offset\nx,0,2,4,0\n");
  free(out);
  pa_trace_free(&t);
}

static void test_large(void) {
  size_t n = 1000000, cap = n * 40 + 64, len = 0;
  char *text = malloc(cap);
  len += (size_t)snprintf(text, cap, "id,lower,upper,size\n");
  for (size_t i = 0; i < n; i++)
    len += (size_t)snprintf(text + len, cap - len, "%zu,%zu,%zu,%zu\n", i, i, i + 7, 256 + i % 9);
  pa_trace_t t;
  char err[256];
  CHECK_EQ_I64(pa_csv_read_buf(text, len, &t, err, sizeof err), PA_OK);
  CHECK_EQ_I64(t.n, n);
  pa_trace_free(&t);
  free(text);
}

int main(void) {
  test_rejections();
  test_forms();
  test_roundtrip();
  test_large();
  return test_report("test_csv");
}
