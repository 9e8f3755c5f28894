/* sync_known: the program's own sync tells planalloc that the work before it is done.
 * Each round fills a buffer x (one page) on stream a, syncs (by mode), frees x, queues
 * long work on a (twenty kernels: any event recorded on a from then on ends 100 ms
 * later at 5 ms a kernel), and allocates y, two pages, behind a page that stays (so y
 * cannot take x's address and needs x's physical page). Under a budget that page is
 * taken from x's idle page:
 *   none      no sync: x's freed work is unknown, the page's memory moves behind the
 *             copy stream (a drain: "pages recycled under work")
 *   stream    cudaStreamSynchronize(a) before the free: known done, no drain
 *   device    cudaDeviceSynchronize() before the free: the same
 * Prints a sum of y per round (y is filled on a and summed there).
 * Usage: sync_known none|stream|device [ROUNDS] */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROGRAM "sync_known"
#include "program.h"

#define PAGE_WORDS (512 * 1024) /* 2 MiB: one of planalloc's pages */
#define N 4096

static void fill_kernel(const simcu_launch_t *l) {
  uint32_t *p, v;
  memcpy(&p, l->args[0], sizeof p), memcpy(&v, l->args[1], sizeof v);
  for (int i = 0; i < N; i++) p[i] = v + (uint32_t)i;
}

static void sum_kernel(const simcu_launch_t *l) { sum_words(l, N); }

static void fill(uint32_t *p, uint32_t v) { (void)p, (void)v; } /* host stubs */
static void sum(const uint32_t *p, uint64_t *out) { (void)p, (void)out; }

static void fill_on(cudaStream_t s, uint32_t *p, uint32_t v) {
  void *args[2] = {&p, &v};
  launch((const void *)fill, args, s);
}

static void round_of(const char *mode, cudaStream_t a, uint32_t *scratch, uint64_t *out) {
  uint32_t *x, *wall, *y;
  CK(cudaMalloc((void **)&x, PAGE_WORDS * sizeof *x));
  CK(cudaMalloc((void **)&wall, PAGE_WORDS * sizeof *wall)); /* best fit puts it right after x */
  fill_on(a, x, 7);
  if (!strcmp(mode, "stream")) CK(cudaStreamSynchronize(a));
  if (!strcmp(mode, "device")) CK(cudaDeviceSynchronize());
  CK(cudaFree(x));
  for (int k = 0; k < 20; k++) fill_on(a, scratch, (uint32_t)k);
  CK(cudaMalloc((void **)&y, 2 * PAGE_WORDS * sizeof *y));
  uint32_t *tail = y + PAGE_WORDS;
  fill_on(a, tail, 3);
  void *args[2] = {&tail, &out};
  launch((const void *)sum, args, a);
  CK(cudaStreamSynchronize(a));
  CK(cudaFree(y));
  CK(cudaFree(wall));
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "none";
  int rounds = argc > 2 ? atoi(argv[2]) : 2;
  if ((strcmp(mode, "none") && strcmp(mode, "stream") && strcmp(mode, "device")) || rounds <= 0)
    fprintf(stderr, "usage: sync_known none|stream|device [ROUNDS]\n"), exit(2);
  size_t fsz[2] = {sizeof(void *), sizeof(uint32_t)}, two[2] = {sizeof(void *), sizeof(void *)};
  CK(__cudaRegisterSimKernel((const void *)fill, "fill", fill_kernel, 2, fsz));
  CK(__cudaRegisterSimKernel((const void *)sum, "sum", sum_kernel, 2, two));
  cudaStream_t a;
  CK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  uint32_t *scratch;
  uint64_t *sums, host;
  CK(cudaMalloc((void **)&scratch, N * sizeof *scratch));
  CK(cudaMalloc((void **)&sums, (size_t)rounds * sizeof *sums));
  for (int r = 0; r < rounds; r++) {
    round_of(mode, a, scratch, sums + r);
    CK(cudaMemcpyAsync(&host, sums + r, sizeof host, cudaMemcpyDeviceToHost, a));
    CK(cudaStreamSynchronize(a));
    printf("%s round %d sum %016llx\n", mode, r, (unsigned long long)host);
  }
  CK(cudaFree(sums));
  CK(cudaFree(scratch));
  return 0;
}
