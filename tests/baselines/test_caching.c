/* The caching baseline (libcaching.so, preloaded) against the behaviour it models, on the
 * simulated runtime with SIMCUDA_MEMORY=64MiB and SIMCUDA_KERNEL_US=20000. The exit
 * stats are checked by ctest: peak reserved 54 MiB, two host waits (the out-of-memory
 * path that frees every cached segment, taken twice). */
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <string.h>

#include "../harness.h"
#include "simcudart.h"

#define MIB ((size_t)1 << 20)
#define OK(call) CHECK_EQ_I64((call), cudaSuccess)

static void *take(size_t n, cudaStream_t s) {
  void *p = NULL;
  OK(s ? cudaMallocAsync(&p, n, s) : cudaMalloc(&p, n));
  return p;
}

static void read_kernel(const simcu_launch_t *l) { (void)l; } /* takes its 20 ms on the stream */
static void reader(const void *p) { (void)p; }

int main(void) {
  size_t one = sizeof(void *);
  OK(__cudaRegisterSimKernel((const void *)reader, "reader", read_kernel, 1, &one));
  /* pools and segment sizes: 2 MiB small, 20 MiB for 1-10 MiB, else the size in 2 MiB */
  char *a = take(1000, NULL), *a2 = take(1000, NULL);
  CHECK(a2 == a + 1024); /* rounded to 512 bytes, split from the same small segment */
  char *b = take(3 * MIB, NULL), *c = take(12 * MIB, NULL);
  CHECK(c == b + 3 * MIB); /* the rest of b's 20 MiB segment fits: no new segment */
  char *e = take(16 * MIB, NULL); /* nothing cached fits: a segment of its own */
  OK(cudaFree(b));
  char *d = take(5 * MIB, NULL);
  CHECK(d == c + 12 * MIB); /* best fit: the 5 MiB left after c, not b's 3 MiB */
  OK(cudaFree(a2));
  CHECK(take(600, NULL) == a2); /* freed, reusable at once on its stream */
  /* cross-stream: freed on s2 while s2's kernel reads it, reusable on s1 only after */
  cudaStream_t s1, s2;
  OK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  OK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  char *f = take(1000, s1);
  void *args[1] = {&f};
  OK(cudaLaunchKernel((const void *)reader, (dim3){1, 1, 1}, (dim3){1, 1, 1}, args, 0, s2));
  OK(cudaFreeAsync(f, s2));
  char *g = take(1000, s1);
  CHECK(g != f); /* the event on s2 has not completed */
  OK(cudaStreamSynchronize(s2));
  OK(cudaFreeAsync(g, s1));
  CHECK(take(1000, s1) == f); /* completed: back in s1's pool, merged with its neighbours */
  /* out of memory: 40 MiB reserved, 36 of it cached once c, d and e go (b's segment whole) */
  OK(cudaFree(c));
  OK(cudaFree(d));
  OK(cudaFree(e));
  char *x = take(30 * MIB, NULL); /* no one cached segment is enough: all go, the device drains */
  CHECK(x != NULL);
  char *y = take(20 * MIB, NULL); /* 54 MiB reserved: the peak */
  CHECK(y != NULL);
  OK(cudaFree(x));
  CHECK(take(24 * MIB, NULL) != NULL); /* x's cached segment is enough: it alone goes */
  void *huge = NULL; /* nothing cached is enough, and nothing is cached: out of memory */
  CHECK_EQ_I64(cudaMalloc(&huge, 60 * MIB), cudaErrorMemoryAllocation);
  return test_report("test_caching");
}
