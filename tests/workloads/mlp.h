/* The two-layer MLP the MLP-shaped workloads share (mlp_train, multi_device, ddp_train):
 * its kernels, and the host side of a batch from a random linear teacher. One program
 * includes it once. */
#ifndef WORKLOAD_MLP_H
#define WORKLOAD_MLP_H

#include "linalg.h"

KERNEL_2(relu, float *, x, long, n) {
  DEVICE_LOOP(i, n) x[i] = x[i] > 0 ? x[i] : 0;
}

KERNEL_3(relu_backward, float *, dx, const float *, y, long, n) {
  DEVICE_LOOP(i, n) dx[i] = y[i] > 0 ? dx[i] : 0;
}

KERNEL_5(mse_grad, const float *, y, const float *, t, float *, dy, long, n, float, scale) {
  DEVICE_LOOP(i, n) dy[i] = scale * (y[i] - t[i]);
}

/* one thread sums in a fixed order: the same bits on every run */
KERNEL_4(mse_loss, const float *, y, const float *, t, float *, out, long, n) {
  SERIAL_SECTION {
    double s = 0;
    for (long i = 0; i < n; i++) s += (double)(y[i] - t[i]) * (y[i] - t[i]);
    out[0] = (float)(s / (double)n);
  }
}

static inline float *upload(const float *h, size_t n) {
  float *d = port_dalloc((long)n);
  CHECK_CUDA(cudaMemcpy(d, h, n * sizeof *d, cudaMemcpyHostToDevice));
  return d;
}

static inline float *random_host(size_t n, unsigned long long *seed, float scale) {
  float *h = (float *)malloc(n * sizeof *h);
  for (size_t i = 0; i < n; i++) h[i] = scale * port_rand(seed);
  return h;
}

/* One batch of b rows: x random, t = x * teacher (in x out), computed on the host. */
static inline void make_batch(int b, int in, int out, const float *teacher, unsigned long long *seed, float *x, float *t) {
  for (long i = 0; i < (long)b * in; i++) x[i] = port_rand(seed);
  for (int r = 0; r < b; r++)
    for (int o = 0; o < out; o++) {
      float acc = 0;
      for (int p = 0; p < in; p++) acc += x[(long)r * in + p] * teacher[(long)p * out + o];
      t[(long)r * out + o] = acc;
    }
}

#endif
