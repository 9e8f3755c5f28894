/* The vendor library. Like cuBLAS 13 it has no NEEDED on libcuda or cudart: it dlopens
 * libcuda.so.1 and resolves what it needs through cuGetProcAddress_v2. */
#include "simblas.h"

#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>

#include "simcuda.h"

#define BLAS_EXPORT __attribute__((visibility("default")))

static PFN_cuLaunchKernelEx_v11060 launch_ex;
static CUfunction gemm;
static CUresult init_rc = CUDA_ERROR_NOT_INITIALIZED;
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* (int m, int n, int k, float alpha, const float *A, const float *B, float beta, float *C) */
static void gemm_kernel(const simcu_launch_t *l) {
  int m = *(int *)l->args[0], n = *(int *)l->args[1], k = *(int *)l->args[2];
  float alpha = *(float *)l->args[3], beta = *(float *)l->args[6];
  const float *A = *(const float **)l->args[4], *B = *(const float **)l->args[5];
  float *C = *(float **)l->args[7];
  for (int i = 0; i < m; i++)
    for (int j = 0; j < n; j++) {
      float acc = 0;
      for (int p = 0; p < k; p++) acc += A[i * k + p] * B[p * n + j];
      C[i * n + j] = alpha * acc + (beta == 0 ? 0 : beta * C[i * n + j]);
    }
}

static void init(void) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  PFN_cuGetProcAddress_v12000 gpa = h ? (PFN_cuGetProcAddress_v12000)dlsym(h, "cuGetProcAddress_v2") : NULL;
  PFN_simcuRegisterKernel reg = NULL;
  CUdriverProcAddressQueryResult st;
  if (!gpa || gpa("cuLaunchKernelEx", (void **)&launch_ex, 12000, 0, &st) || !launch_ex ||
      gpa("simcuRegisterKernel", (void **)&reg, 12000, 0, &st) || !reg) {
    init_rc = CUDA_ERROR_NOT_FOUND;
    return;
  }
  size_t sizes[8] = {4, 4, 4, 4, 8, 8, 4, 8};
  init_rc = reg(&gemm, NULL, "simblas_sgemm", gemm_kernel, 8, sizes);
}

BLAS_EXPORT CUresult simblasSgemm(int m, int n, int k, float alpha, const float *A,
                                  const float *B, float beta, float *C, CUstream stream) {
  pthread_once(&once, init);
  if (init_rc) return init_rc;
  if (m <= 0 || n <= 0 || k <= 0 || !A || !B || !C) return CUDA_ERROR_INVALID_VALUE;
  CUlaunchConfig cfg = {(unsigned)(m + 15) / 16, (unsigned)(n + 15) / 16, 1, 16, 16, 1, 0, stream, NULL, 0};
  void *args[] = {&m, &n, &k, &alpha, &A, &B, &beta, &C};
  return launch_ex(&cfg, gemm, args, NULL);
}
