/* Matrix kernels shared by the workloads (row-major floats). One thread per output
 * element, summing in a fixed order: the same bits on every run. */
#ifndef WORKLOAD_LINALG_H
#define WORKLOAD_LINALG_H

#include "port.h"

/* C[m x n] = A[m x k] B[k x n], or with A stored transposed (k x m), or B transposed (n x k) */
KERNEL_6(matmul, const float *, A, const float *, B, float *, C, int, m, int, n, int, k) {
  DEVICE_LOOP(idx, (long)m * n) {
    long i = idx / n, j = idx % n;
    float acc = 0;
    for (int p = 0; p < k; p++) acc += A[i * k + p] * B[p * (long)n + j];
    C[idx] = acc;
  }
}

KERNEL_6(matmul_at, const float *, A, const float *, B, float *, C, int, m, int, n, int, k) {
  DEVICE_LOOP(idx, (long)m * n) {
    long i = idx / n, j = idx % n;
    float acc = 0;
    for (int p = 0; p < k; p++) acc += A[p * (long)m + i] * B[p * (long)n + j];
    C[idx] = acc;
  }
}

KERNEL_6(matmul_bt, const float *, A, const float *, B, float *, C, int, m, int, n, int, k) {
  DEVICE_LOOP(idx, (long)m * n) {
    long i = idx / n, j = idx % n;
    float acc = 0;
    for (int p = 0; p < k; p++) acc += A[i * k + p] * B[j * (long)k + p];
    C[idx] = acc;
  }
}

KERNEL_4(sgd, float *, w, const float *, dw, float, lr, long, n) {
  DEVICE_LOOP(i, n) w[i] -= lr * dw[i];
}

#endif
