/* The vendor library. Like cuBLAS 13 it has no NEEDED on libcuda or cudart: it dlopens
 * libcuda.so.1 and resolves what it needs through cuGetProcAddress_v2. */
#include "simblas.h"

#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "simcuda.h"

#define BLAS_EXPORT __attribute__((visibility("default")))

static PFN_cuLaunchKernelEx_v11060 launch_ex;
static CUfunction gemm;
static CUresult init_rc = CUDA_ERROR_NOT_INITIALIZED;
static pthread_once_t once = PTHREAD_ONCE_INIT;

enum { COL_BLOCK = 256, DEPTH_BLOCK = 128 };

typedef struct {
  int m, n, k;
  float alpha, beta;
  const float *A, *B;
  float *C;
} gemm_args_t;

/* Adds A[:, p0..p1) B[p0..p1, j0..j0+width) into acc (m rows of COL_BLOCK): the inner loop
 * walks a row of a B tile that stays in cache across all m rows, and vectorises. */
static void gemm_tile(const gemm_args_t *g, float *acc, int j0, int width, int p0, int p1) {
  for (int i = 0; i < g->m; i++) {
    float *row = acc + (size_t)i * COL_BLOCK;
    for (int p = p0; p < p1; p++) {
      float a = g->A[(size_t)i * g->k + p];
      const float *b = g->B + (size_t)p * g->n + j0;
      for (int j = 0; j < width; j++) row[j] += a * b[j];
    }
  }
}

/* One column block of C. Each element still sums p ascending from 0, as a naive dot
 * product does, so the blocking changes speed, not results. */
static void gemm_col_block(const gemm_args_t *g, float *acc, int j0) {
  int width = g->n - j0 < COL_BLOCK ? g->n - j0 : COL_BLOCK;
  memset(acc, 0, (size_t)g->m * COL_BLOCK * sizeof *acc);
  for (int p0 = 0; p0 < g->k; p0 += DEPTH_BLOCK)
    gemm_tile(g, acc, j0, width, p0, g->k - p0 < DEPTH_BLOCK ? g->k : p0 + DEPTH_BLOCK);
  for (int i = 0; i < g->m; i++) {
    float *c = g->C + (size_t)i * g->n + j0, *row = acc + (size_t)i * COL_BLOCK;
    for (int j = 0; j < width; j++) c[j] = g->alpha * row[j] + (g->beta == 0 ? 0 : g->beta * c[j]);
  }
}

/* (int m, int n, int k, float alpha, const float *A, const float *B, float beta, float *C) */
static void gemm_kernel(const simcu_launch_t *l) {
  gemm_args_t g = {*(int *)l->args[0], *(int *)l->args[1], *(int *)l->args[2],
                   *(float *)l->args[3], *(float *)l->args[6], *(const float **)l->args[4],
                   *(const float **)l->args[5], *(float **)l->args[7]};
  float *acc = malloc((size_t)g.m * COL_BLOCK * sizeof *acc), one_row[COL_BLOCK];
  for (int j0 = 0; j0 < g.n; j0 += COL_BLOCK) {
    if (acc) gemm_col_block(&g, acc, j0);
    else /* no host memory for the tile rows: the same sums one row at a time */
      for (int i = 0; i < g.m; i++) gemm_col_block(&(gemm_args_t){1, g.n, g.k, g.alpha, g.beta,
          g.A + (size_t)i * g.k, g.B, g.C + (size_t)i * g.n}, one_row, j0);
  }
  free(acc);
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
