/* trace_replay: replays a planner-format trace (id,lower,upper,size in any column order,
 * or the legacy buffer,start,end,size with inclusive end) as N training iterations
 * through the runtime: at each time step the buffers that end are verified on the device
 * and freed, then the buffers that start are allocated and filled with a pattern of
 * their own. Sizes are divided by --scale (at least 4 bytes). Any overlap between live
 * buffers shows up as mismatches, printed per iteration. --sample 1 fills and verifies
 * only each buffer's first and last 256 bytes (big traces: the footprint is what is
 * measured, and the preload's shadow checker proves no overlap); same output.
 * Usage: trace_replay FILE.csv [--iterations N] [--scale F] [--sample 0|1] */
#include <stdint.h>
#include <string.h>

#include "pattern.h"

typedef struct buf_s {
  long long lower, upper, size;
  void *ptr;
} buf_t;

typedef struct trace_s {
  buf_t *b;
  long n, cap;
} trace_t;

static int column(char *header, const char *const names[4], int idx[4]) {
  int k = 0;
  for (char *tok = strtok(header, ",\r\n"); tok; tok = strtok(NULL, ",\r\n"), k++)
    for (int c = 0; c < 4; c++)
      if (!strcmp(tok, names[c])) idx[c] = k;
  return k;
}

static void load(const char *path, trace_t *t) {
  FILE *f = fopen(path, "r");
  char line[4096];
  if (!f || !fgets(line, sizeof line, f)) fprintf(stderr, "trace_replay: cannot read %s\n", path), exit(2);
  static const char *const modern[4] = {"id", "lower", "upper", "size"};
  static const char *const legacy[4] = {"buffer", "start", "end", "size"};
  char copy[4096];
  int idx[4] = {-1, -1, -1, -1}, inclusive = 0;
  memcpy(copy, line, sizeof line);
  column(copy, modern, idx);
  if (idx[1] < 0) inclusive = 1, column(line, legacy, idx);
  if (idx[1] < 0 || idx[2] < 0 || idx[3] < 0) fprintf(stderr, "trace_replay: %s: bad header\n", path), exit(2);
  while (fgets(line, sizeof line, f)) {
    long long v[16];
    int k = 0;
    for (char *tok = strtok(line, ",\r\n"); tok && k < 16; tok = strtok(NULL, ",\r\n")) v[k++] = atoll(tok);
    if (k <= idx[1] || k <= idx[2] || k <= idx[3]) continue;
    if (t->n == t->cap) t->cap = t->cap ? 2 * t->cap : 1024, t->b = (buf_t *)realloc(t->b, (size_t)t->cap * sizeof *t->b);
    t->b[t->n++] = (buf_t){v[idx[1]], v[idx[2]] + inclusive, v[idx[3]], NULL};
  }
  fclose(f);
  if (!t->n) fprintf(stderr, "trace_replay: %s: no buffers\n", path), exit(2);
}

typedef struct ev_s {
  long long time;
  int alloc; /* frees (0) before allocations (1) at one time */
  long buf;
} ev_t;

static int ev_cmp(const void *a, const void *b) {
  const ev_t *x = (const ev_t *)a, *y = (const ev_t *)b;
  if (x->time != y->time) return x->time < y->time ? -1 : 1;
  if (x->alloc != y->alloc) return x->alloc - y->alloc;
  return (x->buf > y->buf) - (x->buf < y->buf);
}

static long words_of(const buf_t *b, double scale) {
  double bytes = (double)b->size / scale;
  long w = (long)((bytes + 3) / 4);
  return w < 1 ? 1 : w;
}

int main(int argc, char **argv) {
  if (argc < 2) fprintf(stderr, "usage: trace_replay FILE.csv [--iterations N] [--scale F] [--sample 0|1]\n"), exit(2);
  int iters = 3, sample = 0;
  double scale = 1;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--iterations")) iters = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--scale")) scale = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--sample")) sample = atoi(argv[i + 1]);
    else fprintf(stderr, "trace_replay: unknown option %s\n", argv[i]), exit(2);
  }
  if (iters <= 0 || !(scale >= 1)) fprintf(stderr, "trace_replay: bad --iterations or --scale\n"), exit(2);
  trace_t t = {0};
  load(argv[1], &t);
  ev_t *ev = (ev_t *)malloc((size_t)t.n * 2 * sizeof *ev);
  for (long i = 0; i < t.n; i++)
    ev[2 * i] = (ev_t){t.b[i].lower, 1, i}, ev[2 * i + 1] = (ev_t){t.b[i].upper, 0, i};
  qsort(ev, (size_t)t.n * 2, sizeof *ev, ev_cmp);
  unsigned long long *bad, nbad = 0;
  CHECK_CUDA(cudaMalloc((void **)&bad, sizeof *bad));
  for (int it = 0; it < iters; it++) {
    CHECK_CUDA(cudaMemset(bad, 0, sizeof *bad));
    long long bytes = 0;
    for (long e = 0; e < 2 * t.n; e++) {
      buf_t *b = &t.b[ev[e].buf];
      long w = words_of(b, scale);
      unsigned seed = (unsigned)(ev[e].buf * 40503u) ^ (unsigned)it;
      if (ev[e].alloc) {
        CHECK_CUDA(cudaMalloc(&b->ptr, (size_t)w * 4));
        pattern_fill((unsigned *)b->ptr, w, seed, sample, 0);
        bytes += w * 4;
      } else {
        pattern_verify((const unsigned *)b->ptr, w, seed, sample, bad, 0);
        CHECK_CUDA(cudaFree(b->ptr));
      }
    }
    CHECK_CUDA(cudaMemcpy(&nbad, bad, sizeof nbad, cudaMemcpyDeviceToHost));
    printf("iter %d buffers %ld bytes %lld mismatches %llu\n", it, t.n, bytes, nbad);
  }
  printf("final trace_replay iterations %d buffers %ld mismatches %llu\n", iters, t.n, nbad);
  CHECK_CUDA(cudaFree(bad));
  free(ev), free(t.b);
  return nbad ? 1 : 0;
}
