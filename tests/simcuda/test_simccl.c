/* libsimccl's ranks in one process (simcclCommInitAll), run with SIMCUDA_DEVICES=4
 * SIMCUDA_STRICT=1: four threads, each on its own device, all-reduce vectors of
 * rank-dependent values several times and at two sizes; every rank must get exactly
 * the sum in rank order that simcclSumInOrder computes on the host. */
#include <cuda.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../harness.h"
#include "simccl.h"

#define RANKS 4
static simcclComm_t comms[RANKS];
static CUcontext ctx[RANKS];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

static float value(int rank, size_t i, int round) { return (float)(rank + 1) * 0.1f + (float)i * 1e-3f + (float)round; }

static void *rank_main(void *arg) {
  int r = (int)(intptr_t)arg, bad = 0;
  cuCtxSetCurrent(ctx[r]);
  for (int round = 0; round < 3; round++) {
    size_t n = round == 2 ? 5000 : 1000; /* a larger buffer re-stages */
    float *h = malloc(n * sizeof *h), *want = malloc(n * sizeof *want), *parts[RANKS];
    for (int k = 0; k < RANKS; k++) {
      parts[k] = malloc(n * sizeof *parts[k]);
      for (size_t i = 0; i < n; i++) parts[k][i] = value(k, i, round);
    }
    simcclSumInOrder(want, (const float *const *)parts, RANKS, n);
    CUdeviceptr d;
    bad |= cuMemAlloc_v2(&d, n * sizeof(float)) != CUDA_SUCCESS;
    bad |= cuMemcpyHtoD_v2(d, parts[r], n * sizeof(float)) != CUDA_SUCCESS;
    bad |= simcclAllReduceSum(comms[r], (const float *)d, (float *)d, n, NULL) != CUDA_SUCCESS;
    bad |= cuMemcpyDtoH_v2(h, d, n * sizeof(float)) != CUDA_SUCCESS;
    bad |= memcmp(h, want, n * sizeof *h) != 0;
    cuMemFree_v2(d);
    for (int k = 0; k < RANKS; k++) free(parts[k]);
    free(h), free(want);
  }
  bad |= simcclCommDestroy(comms[r]) != CUDA_SUCCESS;
  pthread_mutex_lock(&mu);
  CHECK_EQ_I64(bad, 0);
  pthread_mutex_unlock(&mu);
  return NULL;
}

int main(void) {
  int n = 0;
  CHECK_EQ_I64(cuInit(0), CUDA_SUCCESS);
  CHECK_EQ_I64(cuDeviceGetCount(&n), CUDA_SUCCESS);
  CHECK_EQ_I64(n, RANKS);
  for (int r = 0; r < RANKS; r++) CHECK_EQ_I64(cuDevicePrimaryCtxRetain(&ctx[r], r), CUDA_SUCCESS);
  CHECK_EQ_I64(simcclCommInitAll(NULL, RANKS), CUDA_ERROR_INVALID_VALUE);
  CHECK_EQ_I64(simcclCommInitAll(comms, RANKS), CUDA_SUCCESS);
  CHECK_EQ_I64(simcclRank(comms[2]), 2);
  CHECK_EQ_I64(simcclSize(comms[2]), RANKS);
  pthread_t th[RANKS];
  for (int r = 0; r < RANKS; r++) pthread_create(&th[r], NULL, rank_main, (void *)(intptr_t)r);
  for (int r = 0; r < RANKS; r++) pthread_join(th[r], NULL);
  return test_report("test_simccl");
}
