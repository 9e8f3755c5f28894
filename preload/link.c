/* The link's speed, from planalloc's own copies (a leaf: swap.c brackets the copies,
 * ktime.c reads the pairs with the kernels', budget.c plans by the result).
 * PLANALLOC_LINK_GBPS defaulted to 25 GB/s (PCIe 4.0 x16); the H100s and H200s this runs
 * on copy at 55 (gpu/BENCHMARKS.md), and the swap schedule and its forecast timed every
 * copy at twice its length. Every 4th batch of copies out is bracketed by two events on
 * the out stream, after its waits; the median pair's bytes over its time is the link's
 * speed, unless the option was set. Only the first RING pairs are taken: the
 * recording's, since under a budget the copies begin there. */
#include "pa.h"

#include <stdlib.h>

#define COPY_EVERY 4
#define RING 64

static struct {
  pthread_mutex_t mu;
  CUevent start[RING], end[RING];
  uint64_t bytes[RING]; /* 0: not closed */
  uint64_t n, copies;
  int ready;
  double gbps; /* the median measured last */
} PA_PER_DEVICE(lt) = {[0 ... PA_SLOTS - 1] = {.mu = PTHREAD_MUTEX_INITIALIZER}};
PA_BIND(lt)
#define lt PA_THIS(lt)

int pa_link_begin(CUstream s) {
  if (pa_opt.v[PA_OPT_LINK_GBPS].from_env) return -1;
  pthread_mutex_lock(&lt.mu);
  int slot = lt.copies++ % COPY_EVERY == 0 && lt.n < RING && pa_pairs_ready(lt.start, lt.end, RING, &lt.ready) ? (int)lt.n : -1;
  if (slot >= 0 && pa_cu.EventRecord(lt.start[slot], s)) slot = -1;
  if (slot >= 0) lt.bytes[slot] = 0, lt.n++;
  pthread_mutex_unlock(&lt.mu);
  return slot;
}

void pa_link_end(int slot, CUstream s, uint64_t bytes) {
  if (slot < 0) return;
  pthread_mutex_lock(&lt.mu);
  lt.bytes[slot] = bytes && !pa_cu.EventRecord(lt.end[slot], s) ? bytes : 0;
  pthread_mutex_unlock(&lt.mu);
}

static int by_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

void pa_link_measure(void) {
  double gbps[RING];
  size_t k = 0;
  float ms;
  pthread_mutex_lock(&lt.mu);
  for (size_t i = 0; lt.ready == 1 && i < lt.n; i++)
    if (lt.bytes[i] && pa_pair_ms(lt.start[i], lt.end[i], &ms) && ms > 0)
      gbps[k++] = (double)lt.bytes[i] / ((double)ms * 1e6);
  if (k) qsort(gbps, k, sizeof *gbps, by_double);
  lt.gbps = k ? gbps[k / 2] : 0;
  pthread_mutex_unlock(&lt.mu);
}

double pa_link_gbps(void) {
  pthread_mutex_lock(&lt.mu);
  double g = lt.gbps;
  pthread_mutex_unlock(&lt.mu);
  return g;
}
