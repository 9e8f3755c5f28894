/* evict_readers: two kernels read buffer A at once, on streams a and b (each first
 * sleeps, a's longer, so both still run and a's ends last); then B is allocated under a budget that holds only one of
 * them and filled on a third stream. A's pages leave for B: their copy out, and so B's
 * fill, must wait for both readers, not only for the last stream that touched A (a
 * reader that lost the race sums B's values). Prints both sums per round. Meant for
 * PLANALLOC_BUDGET=36M (18 pages: A's or B's 17, at 256-byte offsets, and one more).
 * Usage: evict_readers ROUNDS */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PROGRAM "evict_readers"
#include "program.h"

#define N (8u << 20) /* ints: 32 MiB */

static void fill_kernel(const simcu_launch_t *l) {
  int *p, v;
  memcpy(&p, l->args[0], sizeof p), memcpy(&v, l->args[1], sizeof v);
  for (uint32_t i = 0; i < N; i++) p[i] = v + (int)(i % 7);
}

static void slow_sum_kernel(const simcu_launch_t *l) {
  const int *p;
  long long *out, sum = 0;
  int ms;
  memcpy(&p, l->args[0], sizeof p), memcpy(&out, l->args[1], sizeof out), memcpy(&ms, l->args[2], sizeof ms);
  nanosleep(&(struct timespec){0, ms * 1000000L}, NULL);
  for (uint32_t i = 0; i < N; i++) sum += p[i];
  *out = sum;
}

static void fill(int *p, int v) { (void)p, (void)v; } /* host stubs */
static void slow_sum(const int *p, long long *out, int ms) { (void)p, (void)out, (void)ms; }

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 2;
  size_t fsz[2] = {sizeof(void *), sizeof(int)}, ssz[3] = {sizeof(void *), sizeof(void *), sizeof(int)};
  CK(__cudaRegisterSimKernel((const void *)fill, "fill", fill_kernel, 2, fsz));
  CK(__cudaRegisterSimKernel((const void *)slow_sum, "slow_sum", slow_sum_kernel, 3, ssz));
  cudaStream_t s[3];
  for (int i = 0; i < 3; i++) CK(cudaStreamCreateWithFlags(&s[i], cudaStreamNonBlocking));
  long long *sums, host[2];
  int *x, *y;
  CK(cudaMalloc((void **)&sums, sizeof host));
  for (int r = 0; r < rounds; r++) {
    int va = 1 + r, vb = -1000 - r, slow = 300, quick = 20;
    long long *s0 = sums, *s1 = sums + 1;
    void *fa[2] = {&x, &va}, *fb[2] = {&y, &vb}, *ra[3] = {&x, &s0, &slow}, *rb[3] = {&x, &s1, &quick};
    CK(cudaMalloc((void **)&x, N * sizeof *x));
    launch((const void *)fill, fa, s[0]);
    CK(cudaStreamSynchronize(s[0]));
    launch((const void *)slow_sum, ra, s[0]);
    launch((const void *)slow_sum, rb, s[1]);
    CK(cudaMalloc((void **)&y, N * sizeof *y)); /* A's pages leave for B while both read */
    launch((const void *)fill, fb, s[2]);
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(host, sums, sizeof host, cudaMemcpyDeviceToHost));
    printf("round %d reader a %lld reader b %lld\n", r, host[0], host[1]);
    CK(cudaFree(y));
    CK(cudaFree(x));
  }
  CK(cudaFree(sums));
  return 0;
}
