/* owed_malloc: cudaMalloc returns memory a copy out may still read, and a kernel writes
 * it through a pointer stored in device memory. Under a budget of five pages (run with
 * PLANALLOC_BUDGET=10M and slow copies, SIMCUDA_COPY_GBPS=1): four 2 MiB buffers A0..A3
 * filled on one stream fill it, so the allocation of B sends one of them to the host
 * and B gets its physical memory while that copy still runs. planalloc no longer makes
 * the host wait there: the launches after it must. B's address goes into a device-side
 * slot, and a kernel on a second stream, whose only parameter is the slot, fills B: a
 * launch that did not wait would overwrite the victim's bytes before they were copied,
 * and its sum would change. Prints every buffer's sum.
 * Usage: owed_malloc ROUNDS */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROGRAM "owed_malloc"
#include "program.h"

#define NA 4
#define N (512u << 10) /* ints: 2 MiB */

static void fill_kernel(const simcu_launch_t *l) {
  uint32_t *p, k;
  memcpy(&p, l->args[0], sizeof p), memcpy(&k, l->args[1], sizeof k);
  for (uint32_t i = 0; i < N; i++) p[i] = k * 2654435761u + i;
}

/* The buffer it fills is known only through the slot's contents. */
static void through_kernel(const simcu_launch_t *l) {
  uint32_t **slot, k;
  memcpy(&slot, l->args[0], sizeof slot), memcpy(&k, l->args[1], sizeof k);
  for (uint32_t i = 0; i < N; i++) (*slot)[i] = k ^ (i * 40503u);
}

static void sum_kernel(const simcu_launch_t *l) { sum_words(l, N); }

static void fill(uint32_t *p, uint32_t k) { (void)p, (void)k; } /* host stubs */
static void through(uint32_t **slot, uint32_t k) { (void)slot, (void)k; }
static void sum(const uint32_t *p, uint64_t *out) { (void)p, (void)out; }

static void sums_of(uint32_t **bufs, size_t n, uint64_t *sums, cudaStream_t s) {
  uint64_t host[NA + 1];
  for (size_t i = 0; i < n; i++) {
    uint64_t *out = sums + i;
    void *args[2] = {&bufs[i], &out};
    launch((const void *)sum, args, s);
  }
  CK(cudaStreamSynchronize(s)); /* non-blocking: the copy below does not wait for it */
  CK(cudaMemcpy(host, sums, n * sizeof *host, cudaMemcpyDeviceToHost));
  for (size_t i = 0; i < n; i++) printf("buffer %zu sum %016llx\n", i, (unsigned long long)host[i]);
}

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 2;
  size_t fsz[2] = {sizeof(void *), sizeof(uint32_t)}, ssz[2] = {sizeof(void *), sizeof(void *)};
  CK(__cudaRegisterSimKernel((const void *)fill, "fill", fill_kernel, 2, fsz));
  CK(__cudaRegisterSimKernel((const void *)through, "through", through_kernel, 2, fsz));
  CK(__cudaRegisterSimKernel((const void *)sum, "sum", sum_kernel, 2, ssz));
  cudaStream_t s[2];
  for (int i = 0; i < 2; i++) CK(cudaStreamCreateWithFlags(&s[i], cudaStreamNonBlocking));
  uint32_t **slot, *buf[NA + 1];
  uint64_t *sums;
  CK(cudaMalloc((void **)&slot, sizeof *slot));
  CK(cudaMalloc((void **)&sums, (NA + 1) * sizeof *sums));
  for (int r = 0; r < rounds; r++) {
    for (uint32_t i = 0; i < NA; i++) {
      uint32_t k = (uint32_t)r * 16 + i;
      void *args[2] = {&buf[i], &k};
      CK(cudaMalloc((void **)&buf[i], N * sizeof(uint32_t)));
      launch((const void *)fill, args, s[0]);
    }
    CK(cudaMalloc((void **)&buf[NA], N * sizeof(uint32_t))); /* a victim's memory */
    CK(cudaMemcpy(slot, &buf[NA], sizeof *slot, cudaMemcpyHostToDevice));
    uint32_t k = 0x5eed0000u + (uint32_t)r;
    void *args[2] = {&slot, &k};
    launch((const void *)through, args, s[1]);
    CK(cudaDeviceSynchronize());
    sums_of(buf, NA + 1, sums, s[0]);
    for (int i = 0; i <= NA; i++) CK(cudaFree(buf[i]));
  }
  CK(cudaFree(slot));
  CK(cudaFree(sums));
  return 0;
}
