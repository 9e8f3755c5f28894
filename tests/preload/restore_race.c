/* restore_race: under a budget that holds one of two 32 MiB buffers, A is sent to host
 * memory when B is filled, and comes back for a launch on stream a; at once a kernel on
 * stream b reads A back to front (the restore copies it front to back, page by page).
 * The launch on b finds A's pages mapped already: it must still wait for the copy that
 * is filling them. Each reader's sum is printed per round; a reader that ran before the
 * copy was done sees B's values (or nothing) and prints another sum (it did, before the
 * pages' restores were numbered and waited for by whoever touches them). Meant for
 * PLANALLOC_BUDGET=36M (18 pages: A's or B's 17, at 256-byte offsets, and one more).
 * Usage: restore_race ROUNDS */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROGRAM "restore_race"
#include "program.h"

#define N (8u << 20) /* ints: 32 MiB */

static void fill_kernel(const simcu_launch_t *l) {
  int *p, v;
  memcpy(&p, l->args[0], sizeof p), memcpy(&v, l->args[1], sizeof v);
  for (uint32_t i = 0; i < N; i++) p[i] = v + (int)(i % 7);
}

static void sum_back_kernel(const simcu_launch_t *l) {
  const int *p;
  long long *out, sum = 0;
  memcpy(&p, l->args[0], sizeof p), memcpy(&out, l->args[1], sizeof out);
  for (uint32_t i = N; i-- > 0;) sum += p[i];
  *out = sum;
}

static void fill(int *p, int v) { (void)p, (void)v; } /* host stubs */
static void sum_back(const int *p, long long *out) { (void)p, (void)out; }

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 3;
  size_t fsz[2] = {sizeof(void *), sizeof(int)}, ssz[2] = {sizeof(void *), sizeof(void *)};
  CK(__cudaRegisterSimKernel((const void *)fill, "fill", fill_kernel, 2, fsz));
  CK(__cudaRegisterSimKernel((const void *)sum_back, "sum_back", sum_back_kernel, 2, ssz));
  cudaStream_t a, b;
  CK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  long long *sums, host[2];
  int *x, *y;
  CK(cudaMalloc((void **)&sums, sizeof host));
  for (int r = 0; r < rounds; r++) {
    int va = 1 + r, vb = -1000 - r;
    long long *s0 = sums, *s1 = sums + 1;
    void *fa[2] = {&x, &va}, *fb[2] = {&y, &vb}, *ra[2] = {&x, &s0}, *rb[2] = {&x, &s1};
    CK(cudaMalloc((void **)&x, N * sizeof *x));
    launch((const void *)fill, fa, a);
    CK(cudaStreamSynchronize(a));
    CK(cudaMalloc((void **)&y, N * sizeof *y)); /* A's pages leave for B's */
    launch((const void *)fill, fb, a);
    launch((const void *)sum_back, ra, a); /* A comes back, B leaves */
    launch((const void *)sum_back, rb, b); /* A's pages are mapped: is its copy done? */
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(host, sums, sizeof host, cudaMemcpyDeviceToHost));
    printf("round %d stream a %lld stream b %lld\n", r, host[0], host[1]);
    CK(cudaFree(y));
    CK(cudaFree(x));
  }
  CK(cudaFree(sums));
  return 0;
}
