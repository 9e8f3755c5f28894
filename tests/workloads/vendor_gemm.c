/* vendor_gemm: matrix products through a vendor library (simblas on the simulator,
 * cuBLAS on a GPU), whose driver-level launches the runtime never sees, mixed with the
 * program's own kernels. Each iteration: a fresh input, two GEMMs, a nonlinearity, a
 * small weight update; temporaries freed in program order.
 * Usage: vendor_gemm [--iters N] [--dim D] */
#include <stdint.h>
#include <string.h>

#include "port.h"

#ifdef __CUDACC__
#include <cublas_v2.h>
static cublasHandle_t blas;
/* row-major C = A B is column-major C^T = B^T A^T */
static void gemm(int m, int n, int k, const float *A, const float *B, float *C) {
  const float one_f = 1, zero_f = 0;
  if (cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &one_f, B, n, A, k, &zero_f, C, n))
    fprintf(stderr, "vendor_gemm: cublasSgemm failed\n"), exit(1);
}
static void gemm_init(void) {
  if (cublasCreate(&blas)) fprintf(stderr, "vendor_gemm: cublasCreate failed\n"), exit(1);
}
#else
#include "simblas.h"
static void gemm(int m, int n, int k, const float *A, const float *B, float *C) {
  if (simblasSgemm(m, n, k, 1.0f, A, B, 0.0f, C, NULL))
    fprintf(stderr, "vendor_gemm: simblasSgemm failed\n"), exit(1);
}
static void gemm_init(void) {}
#endif

KERNEL_2(soft_clip, float *, x, long, n) {
  DEVICE_LOOP(i, n) x[i] = x[i] / (1.0f + (x[i] > 0 ? x[i] : -x[i]));
}

KERNEL_4(nudge, float *, w, const float *, g, float, rate, long, n) {
  DEVICE_LOOP(i, n) w[i] -= rate * g[i];
}

int main(int argc, char **argv) {
  int iters = 20, d = 64;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--iters")) iters = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--dim")) d = atoi(argv[i + 1]);
    else fprintf(stderr, "vendor_gemm: unknown option %s\n", argv[i]), exit(2);
  }
  if (iters <= 0 || d <= 0) fprintf(stderr, "vendor_gemm: bad sizes\n"), exit(2);
  gemm_init();
  size_t bytes = (size_t)d * d * sizeof(float);
  float *hx = (float *)malloc(bytes), *w1, *w2;
  unsigned long long seed = 3;
  CHECK_CUDA(cudaMalloc((void **)&w1, bytes));
  CHECK_CUDA(cudaMalloc((void **)&w2, bytes));
  for (int k = 0; k < 2; k++) {
    for (long i = 0; i < (long)d * d; i++) hx[i] = 0.1f * port_rand(&seed);
    CHECK_CUDA(cudaMemcpy(k ? w2 : w1, hx, bytes, cudaMemcpyHostToDevice));
  }
  uint64_t h = 0;
  for (int it = 0; it < iters; it++) {
    float *x, *y, *z;
    for (long i = 0; i < (long)d * d; i++) hx[i] = port_rand(&seed);
    CHECK_CUDA(cudaMalloc((void **)&x, bytes));
    CHECK_CUDA(cudaMemcpy(x, hx, bytes, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMalloc((void **)&y, bytes));
    gemm(d, d, d, x, w1, y);
    CHECK_CUDA(soft_clip_launch(grid_for((long)d * d), block256(), 0, y, (long)d * d));
    CHECK_CUDA(cudaMalloc((void **)&z, bytes));
    gemm(d, d, d, y, w2, z);
    CHECK_CUDA(nudge_launch(grid_for((long)d * d), block256(), 0, w2, z, 0.001f, (long)d * d));
    CHECK_CUDA(cudaMemcpy(hx, z, bytes, cudaMemcpyDeviceToHost));
    h = port_hash(PORT_HASH_SEED, hx, bytes);
    printf("iter %d z[0] %.9g checksum %016llx\n", it, hx[0], (unsigned long long)h);
    CHECK_CUDA(cudaFree(z));
    CHECK_CUDA(cudaFree(y));
    CHECK_CUDA(cudaFree(x));
  }
  printf("final vendor_gemm iterations %d checksum %016llx\n", iters, (unsigned long long)h);
  CHECK_CUDA(cudaFree(w1));
  CHECK_CUDA(cudaFree(w2));
  free(hx);
  return 0;
}
