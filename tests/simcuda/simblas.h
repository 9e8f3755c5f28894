/* simblas: a stand-in "vendor library" (like cuBLAS): its own driver loading, its own
 * kernels, launches with cuLaunchKernelEx that the runtime never sees. */
#ifndef SIMBLAS_H
#define SIMBLAS_H

#include <cuda.h>

/* C[m x n] = alpha * A[m x k] * B[k x n] + beta * C, row-major floats in device memory. */
CUresult simblasSgemm(int m, int n, int k, float alpha, const float *A, const float *B,
                      float beta, float *C, CUstream stream);

#endif
