/* async_reuse: a buffer freed stream-ordered while a kernel still reads it, its range
 * reused at once: by an allocation on the same stream, on another stream, and by
 * cudaMalloc. The reader sums the buffer after a delay; every new owner overwrites its
 * buffer at once. A reuse that does not wait for the reader changes the sums, which are
 * printed per iteration so that runs with and without the preload can be compared.
 * Usage: async_reuse ITERATIONS */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PROGRAM "async_reuse"
#include "program.h"

#define N 4096

static void slow_sum_kernel(const simcu_launch_t *l) {
  const int *p;
  long long *out;
  memcpy(&p, l->args[0], sizeof p), memcpy(&out, l->args[1], sizeof out);
  nanosleep(&(struct timespec){0, 3 * 1000 * 1000}, NULL); /* still reading when the free returns */
  long long sum = 0;
  for (int i = 0; i < N; i++) sum += p[i];
  *out += sum;
}

static void fill_kernel(const simcu_launch_t *l) {
  int *p;
  memcpy(&p, l->args[0], sizeof p);
  for (int i = 0; i < N; i++) p[i] = -1000000;
}

static void slow_sum(const int *p, long long *out) { (void)p, (void)out; } /* host stubs */
static void fill(int *p) { (void)p; }

/* One reader and one reuse; mode 0: same stream, 1: another stream, 2: cudaMalloc. */
static void round_of(int mode, const int *pattern, long long *sum, cudaStream_t a, cudaStream_t b) {
  int *x, *y;
  void *rargs[2] = {&x, &sum}, *wargs[1] = {&y};
  CK(cudaMallocAsync((void **)&x, N * sizeof *x, a));
  CK(cudaMemcpyAsync(x, pattern, N * sizeof *x, cudaMemcpyHostToDevice, a));
  launch((const void *)slow_sum, rargs, a);
  CK(cudaFreeAsync(x, a));
  cudaStream_t s = mode == 0 ? a : b;
  if (mode < 2) CK(cudaMallocAsync((void **)&y, N * sizeof *y, s));
  else CK(cudaMalloc((void **)&y, N * sizeof *y));
  launch((const void *)fill, wargs, s);
  if (mode < 2) {
    CK(cudaFreeAsync(y, s));
  } else {
    CK(cudaStreamSynchronize(s));
    CK(cudaFree(y));
  }
}

int main(int argc, char **argv) {
  int iters = argc > 1 ? atoi(argv[1]) : 10, pattern[N];
  size_t rsz[2] = {sizeof(void *), sizeof(void *)}, wsz[1] = {sizeof(void *)};
  CK(__cudaRegisterSimKernel((const void *)slow_sum, "slow_sum", slow_sum_kernel, 2, rsz));
  CK(__cudaRegisterSimKernel((const void *)fill, "fill", fill_kernel, 1, wsz));
  cudaStream_t a, b;
  CK(cudaStreamCreateWithFlags(&a, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&b, cudaStreamNonBlocking));
  long long *sums, host[3];
  CK(cudaMalloc((void **)&sums, sizeof host));
  for (int i = 0; i < N; i++) pattern[i] = i % 1000;
  for (int it = 0; it < iters; it++) {
    CK(cudaMemset(sums, 0, sizeof host));
    for (int mode = 0; mode < 3; mode++) round_of(mode, pattern, sums + mode, a, b);
    CK(cudaDeviceSynchronize());
    CK(cudaMemcpy(host, sums, sizeof host, cudaMemcpyDeviceToHost));
    printf("iter %d same-stream %lld other-stream %lld cudaMalloc %lld\n", it, host[0], host[1], host[2]);
  }
  CK(cudaFree(sums));
  return 0;
}
