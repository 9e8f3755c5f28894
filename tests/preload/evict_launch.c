/* evict_launch: eight 2 MiB buffers, each updated in turn by a kernel on one of two
 * streams, round after round, under a budget of a few pages (PLANALLOC_BUDGET=10M: 5
 * pages), rounds in alternate order (0..7, 7..0, ...). After the first round (the
 * allocations) half the launches bring their buffer back and send the one used longest
 * ago away (needed again the next round only): every eviction there is made for a
 * launch, and planalloc must not make the host wait for it (each round ends with the
 * program's own device-wide wait, so no copy of an earlier round still runs): the stats'
 * "host waits for copies" stays at what the first round's allocations cost. The results must be
 * exact: each copy out waits for the stream that last wrote the buffer, each restore
 * lands after the copy out of the page it reuses (slow copies, SIMCUDA_COPY_GBPS, and
 * PLANALLOC_POISON=1 make a missing wait show). Prints each buffer's sum.
 * With "cyclic": every round in the same order, no wait between rounds: each launch
 * wants back the buffer evicted four launches before, whose copy out may still run
 * (the host then waits for it: the slow path, timed by the stats).
 * Usage: evict_launch ROUNDS [cyclic] */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROGRAM "evict_launch"
#include "program.h"

#define NBUF 8
#define N (512u << 10) /* ints: 2 MiB */

static void step_kernel(const simcu_launch_t *l) {
  uint32_t *p, k;
  memcpy(&p, l->args[0], sizeof p), memcpy(&k, l->args[1], sizeof k);
  for (uint32_t i = 0; i < N; i++) p[i] = p[i] * 2654435761u + k + i;
}

static void sum_kernel(const simcu_launch_t *l) { sum_words(l, N); }

static void step(uint32_t *p, uint32_t k) { (void)p, (void)k; } /* host stubs */
static void sum(const uint32_t *p, uint64_t *out) { (void)p, (void)out; }

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 4;
  bool cyclic = argc > 2 && !strcmp(argv[2], "cyclic");
  size_t psz[2] = {sizeof(void *), sizeof(uint32_t)}, ssz[2] = {sizeof(void *), sizeof(void *)};
  CK(__cudaRegisterSimKernel((const void *)step, "step", step_kernel, 2, psz));
  CK(__cudaRegisterSimKernel((const void *)sum, "sum", sum_kernel, 2, ssz));
  cudaStream_t s[2];
  for (int i = 0; i < 2; i++) CK(cudaStreamCreateWithFlags(&s[i], cudaStreamNonBlocking));
  uint32_t *buf[NBUF];
  uint64_t *sums, host[NBUF];
  CK(cudaMalloc((void **)&sums, sizeof host));
  for (int r = 0; r < rounds; r++)
    for (uint32_t i = 0; i < NBUF; i++) {
      uint32_t b = r % 2 && !cyclic ? NBUF - 1 - i : i;
      if (!r) {
        CK(cudaMalloc((void **)&buf[b], N * sizeof(uint32_t)));
        CK(cudaMemsetAsync(buf[b], (int)b, N * sizeof(uint32_t), s[b % 2]));
      }
      uint32_t k = (uint32_t)r * NBUF + b;
      void *args[2] = {&buf[b], &k};
      launch((const void *)step, args, s[b % 2]);
      if (i == NBUF - 1 && !cyclic) CK(cudaDeviceSynchronize());
    }
  for (uint32_t b = 0; b < NBUF; b++) {
    uint64_t *out = sums + b;
    void *args[2] = {&buf[b], &out};
    launch((const void *)sum, args, s[b % 2]);
  }
  CK(cudaDeviceSynchronize());
  CK(cudaMemcpy(host, sums, sizeof host, cudaMemcpyDeviceToHost));
  for (int b = 0; b < NBUF; b++) printf("buffer %d sum %016llx\n", b, (unsigned long long)host[b]);
  for (int b = 0; b < NBUF; b++) CK(cudaFree(buf[b]));
  CK(cudaFree(sums));
  return 0;
}
