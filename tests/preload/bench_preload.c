/* bench_preload: what the preload costs on its hot paths, timed from a program that
 * calls the driver directly (the calls reach the preload's exports when it is loaded).
 *   alloc ITERS  one iteration = 32 allocations of mixed sizes, freed in a mixed order;
 *                prints the median ns per alloc+free pair over the last half of the
 *                iterations (by then the plan is served)
 *   launch N     N launches of a kernel with 8 pointer parameters into live buffers,
 *                after 20 iterations of the above (the plan is served); prints the
 *                median ns per launch over batches of 1,000
 *   launch-record N   the same while the preload still records (no iteration yet)
 *   sync N       N cuCtxSynchronize on an idle context (what each free waits for under
 *                PLANALLOC_FREE=sync)
 * Output: one line "MODE NS". */
#include <cuda.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "simcuda.h"

#define NBUF 32
#define BATCH 1000

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, size_t n) {
  qsort(v, n, sizeof *v, cmp_double);
  return v[n / 2];
}

static void check(CUresult rc, const char *what) {
  if (rc == CUDA_SUCCESS) return;
  fprintf(stderr, "bench_preload: %s failed: %d\n", what, (int)rc);
  exit(1);
}

/* One training-like iteration: allocations of the sizes a layer stack makes, the
 * activations freed in reverse, the temporaries right away. */
static double iteration(void) {
  static const size_t sizes[8] = {4096, 1 << 20, 256 << 10, 12288, 3 << 20, 65536, 512, 786432};
  CUdeviceptr p[NBUF];
  double t0 = now_ns();
  for (int i = 0; i < NBUF; i++) {
    check(cuMemAlloc(&p[i], sizes[i % 8] + (size_t)(i / 8) * 4096), "cuMemAlloc");
    if (i % 4 == 3) check(cuMemFree(p[i]), "cuMemFree"), p[i] = 0;
  }
  for (int i = NBUF - 1; i >= 0; i--)
    if (p[i]) check(cuMemFree(p[i]), "cuMemFree");
  return (now_ns() - t0) / NBUF;
}

static void bench_alloc(long iters) {
  double *t = calloc((size_t)iters, sizeof *t);
  for (long i = 0; i < iters; i++) t[i] = iteration();
  printf("alloc %.1f\n", median(t + iters / 2, (size_t)(iters - iters / 2)));
  free(t);
}

static void nop_kernel(const simcu_launch_t *l) { (void)l; }

/* Keeps the stream's worker busy while a batch is queued, so that every timed launch is
 * the same enqueue (an idle worker would be woken by some launches and not others). */
static void hold_kernel(const simcu_launch_t *l) {
  (void)l;
  nanosleep(&(struct timespec){0, 20 * 1000 * 1000}, NULL);
}

static CUfunction register_kernel(const char *name, simcu_kernel_fn fn, unsigned nptr) {
  PFN_simcuRegisterKernel reg = NULL;
  CUdriverProcAddressQueryResult st;
  size_t sizes[8];
  CUfunction f;
  for (int i = 0; i < 8; i++) sizes[i] = sizeof(CUdeviceptr);
  check(cuGetProcAddress_v2("simcuRegisterKernel", (void **)&reg, 12000, 0, &st), "cuGetProcAddress_v2");
  check(reg(&f, NULL, name, fn, nptr, sizes), "simcuRegisterKernel");
  return f;
}

static void bench_launch(long n, bool served) {
  CUfunction f = register_kernel("nop8", nop_kernel, 8), hold = register_kernel("hold", hold_kernel, 0);
  CUdeviceptr b[8];
  void *params[8];
  CUstream s;
  long batches = n / BATCH > 0 ? n / BATCH : 1;
  double *t = calloc((size_t)batches, sizeof *t);
  check(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  for (int i = 0; i < 8; i++) check(cuMemAlloc(&b[i], 4096), "cuMemAlloc"), params[i] = &b[i];
  for (int i = 0; served && i < 20; i++) iteration(); /* found, planned, served: recording is over */
  for (long k = 0; k < batches; k++) {
    check(cuLaunchKernel(hold, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL), "cuLaunchKernel");
    double t0 = now_ns();
    for (int i = 0; i < BATCH; i++) check(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, params, NULL), "cuLaunchKernel");
    t[k] = (now_ns() - t0) / BATCH;
    check(cuStreamSynchronize(s), "cuStreamSynchronize"); /* untimed: the queue stays short */
  }
  printf("%s %.1f\n", served ? "launch" : "launch-record", median(t, (size_t)batches));
  for (int i = 0; i < 8; i++) check(cuMemFree(b[i]), "cuMemFree");
  free(t);
}

static void bench_sync(long n) {
  double t0 = now_ns();
  for (long i = 0; i < n; i++) check(cuCtxSynchronize(), "cuCtxSynchronize");
  printf("sync %.1f\n", (now_ns() - t0) / (double)n);
}

int main(int argc, char **argv) {
  CUdevice dev;
  CUcontext ctx;
  long n = argc > 2 ? atol(argv[2]) : 0;
  if (argc != 3 || n <= 0) {
    fprintf(stderr, "usage: bench_preload alloc|launch|launch-record|sync COUNT\n");
    return 2;
  }
  check(cuInit(0), "cuInit");
  check(cuDeviceGet(&dev, 0), "cuDeviceGet");
  check(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  check(cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
  if (!strcmp(argv[1], "alloc")) bench_alloc(n);
  else if (!strcmp(argv[1], "launch")) bench_launch(n, true);
  else if (!strcmp(argv[1], "launch-record")) bench_launch(n, false);
  else if (!strcmp(argv[1], "sync")) bench_sync(n);
  else return fprintf(stderr, "bench_preload: unknown mode %s\n", argv[1]), 2;
  return 0;
}
