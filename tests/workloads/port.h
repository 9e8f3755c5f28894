/* One workload source, two builds. With nvcc a KERNEL_n is a __global__ kernel launched
 * with <<<>>>. With gcc it is a host function registered with the simulated runtime and
 * launched the way nvcc 13 lowers <<<>>>: __cudaGetKernel, then __cudaLaunchKernel.
 * Kernel bodies iterate with DEVICE_LOOP, a grid-stride loop on a GPU and a plain loop in
 * the simulator, so both builds compute the same thing.
 *
 *   KERNEL_2(scale, float *, x, int, n) { DEVICE_LOOP(i, n) x[i] *= 2; }
 *   CHECK_CUDA(scale_launch(grid(n), block(), stream, x, n));
 */
#ifndef WORKLOAD_PORT_H
#define WORKLOAD_PORT_H

#include <stdio.h>
#include <stdlib.h>

#ifdef __CUDACC__
#include <cuda_runtime.h>

#define DEVICE_LOOP(i, n) \
  for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < (long)(n); i += (long)gridDim.x * blockDim.x)
#define SERIAL_SECTION if (blockIdx.x == 0 && threadIdx.x == 0)

#define PORT_KERNEL(name, params, call_args, n, ...)                                  \
  __global__ void name params;                                                       \
  __attribute__((unused)) static cudaError_t name##_launch(dim3 port_g_, dim3 port_b_,  \
                                                           cudaStream_t port_s_,      \
                                   PORT_UNPAREN params) {                            \
    name<<<port_g_, port_b_, 0, port_s_>>> call_args;                                \
    return cudaGetLastError();                                                       \
  }                                                                                  \
  __global__ void name params

#else /* the simulator */
#include <cuda_runtime_api.h>

#include "simcudart.h"

#define DEVICE_LOOP(i, n) for (long i = 0; i < (long)(n); i++)
#define SERIAL_SECTION

static inline cudaError_t port_launch(const void *host, dim3 g, dim3 b, void **args, cudaStream_t s) {
  cudaKernel_t k;
  cudaError_t e = __cudaGetKernel(&k, host);
  return e ? e : __cudaLaunchKernel(k, g, b, args, 0, s);
}

static inline void port_register(const void *host, const char *name, simcu_kernel_fn fn,
                                 unsigned n, const size_t *sizes) {
  cudaError_t e = __cudaRegisterSimKernel(host, name, fn, n, sizes);
  if (e) {
    fprintf(stderr, "workload: cannot register kernel %s: %s\n", name, cudaGetErrorString(e));
    exit(1);
  }
}

/* A kernel body touches only simulated device memory, which is mmap'd pages that ASan
 * never poisons, so instrumenting its loops checks nothing and made the sanitizer
 * suite's workloads 10-30x slower than Release (transformer_train: 55 s a run). */
#define PORT_UNCHECKED __attribute__((no_sanitize("address", "undefined")))

#define PORT_KERNEL(name, params, call_args, n, ...)                                  \
  PORT_UNCHECKED static void name##_body params;                                     \
  static void name(void) {}                                                          \
  static void name##_sim(const simcu_launch_t *port_l_) {                            \
    name##_body(PORT_UNPACK_##n(__VA_ARGS__));                                       \
  }                                                                                  \
  __attribute__((constructor)) static void name##_register(void) {                   \
    size_t port_sizes_[] = {PORT_SIZES_##n(__VA_ARGS__)};                            \
    port_register((const void *)name, #name, name##_sim, n, port_sizes_);            \
  }                                                                                  \
  __attribute__((unused)) static cudaError_t name##_launch(dim3 port_g_, dim3 port_b_,  \
                                                           cudaStream_t port_s_,      \
                                   PORT_UNPAREN params) {                            \
    void *port_args_[] = {PORT_ADDRS call_args};                                     \
    return port_launch((const void *)name, port_g_, port_b_, port_args_, port_s_);   \
  }                                                                                  \
  PORT_UNCHECKED static void name##_body params

#define PORT_ARG(i, t) *(t *)port_l_->args[i]
#define PORT_UNPACK_1(t0) PORT_ARG(0, t0)
#define PORT_UNPACK_2(t0, t1) PORT_UNPACK_1(t0), PORT_ARG(1, t1)
#define PORT_UNPACK_3(t0, t1, t2) PORT_UNPACK_2(t0, t1), PORT_ARG(2, t2)
#define PORT_UNPACK_4(t0, t1, t2, t3) PORT_UNPACK_3(t0, t1, t2), PORT_ARG(3, t3)
#define PORT_UNPACK_5(t0, t1, t2, t3, t4) PORT_UNPACK_4(t0, t1, t2, t3), PORT_ARG(4, t4)
#define PORT_UNPACK_6(t0, t1, t2, t3, t4, t5) PORT_UNPACK_5(t0, t1, t2, t3, t4), PORT_ARG(5, t5)
#define PORT_SIZES_1(t0) sizeof(t0)
#define PORT_SIZES_2(t0, t1) PORT_SIZES_1(t0), sizeof(t1)
#define PORT_SIZES_3(t0, t1, t2) PORT_SIZES_2(t0, t1), sizeof(t2)
#define PORT_SIZES_4(t0, t1, t2, t3) PORT_SIZES_3(t0, t1, t2), sizeof(t3)
#define PORT_SIZES_5(t0, t1, t2, t3, t4) PORT_SIZES_4(t0, t1, t2, t3), sizeof(t4)
#define PORT_SIZES_6(t0, t1, t2, t3, t4, t5) PORT_SIZES_5(t0, t1, t2, t3, t4), sizeof(t5)
#define PORT_ADDRS(...) PORT_ADDRS_N(__VA_ARGS__, 6, 5, 4, 3, 2, 1)(__VA_ARGS__)
#define PORT_ADDRS_N(a, b, c, d, e, f, n, ...) PORT_ADDRS_##n
#define PORT_ADDRS_1(a) &a
#define PORT_ADDRS_2(a, b) &a, &b
#define PORT_ADDRS_3(a, b, c) &a, &b, &c
#define PORT_ADDRS_4(a, b, c, d) &a, &b, &c, &d
#define PORT_ADDRS_5(a, b, c, d, e) &a, &b, &c, &d, &e
#define PORT_ADDRS_6(a, b, c, d, e, f) &a, &b, &c, &d, &e, &f
#endif

#define PORT_UNPAREN(...) __VA_ARGS__

#define KERNEL_1(name, t0, a0) PORT_KERNEL(name, (t0 a0), (a0), 1, t0)
#define KERNEL_2(name, t0, a0, t1, a1) PORT_KERNEL(name, (t0 a0, t1 a1), (a0, a1), 2, t0, t1)
#define KERNEL_3(name, t0, a0, t1, a1, t2, a2) \
  PORT_KERNEL(name, (t0 a0, t1 a1, t2 a2), (a0, a1, a2), 3, t0, t1, t2)
#define KERNEL_4(name, t0, a0, t1, a1, t2, a2, t3, a3) \
  PORT_KERNEL(name, (t0 a0, t1 a1, t2 a2, t3 a3), (a0, a1, a2, a3), 4, t0, t1, t2, t3)
#define KERNEL_5(name, t0, a0, t1, a1, t2, a2, t3, a3, t4, a4)                  \
  PORT_KERNEL(name, (t0 a0, t1 a1, t2 a2, t3 a3, t4 a4), (a0, a1, a2, a3, a4), 5, \
              t0, t1, t2, t3, t4)
#define KERNEL_6(name, t0, a0, t1, a1, t2, a2, t3, a3, t4, a4, t5, a5)                       \
  PORT_KERNEL(name, (t0 a0, t1 a1, t2 a2, t3 a3, t4 a4, t5 a5), (a0, a1, a2, a3, a4, a5), 6, \
              t0, t1, t2, t3, t4, t5)

#define CHECK_CUDA(call)                                                                \
  do {                                                                                  \
    cudaError_t e_ = (call);                                                            \
    if (e_ != cudaSuccess) {                                                            \
      fprintf(stderr, "workload: %s:%d: %s: %s\n", __FILE__, __LINE__, #call,             \
              cudaGetErrorString(e_));                                                  \
      exit(1);                                                                          \
    }                                                                                   \
  } while (0)

static inline dim3 port_dim(unsigned x) {
  dim3 d;
  d.x = x, d.y = 1, d.z = 1;
  return d;
}
static inline dim3 grid_for(long n) { return port_dim((unsigned)((n + 255) / 256 > 4096 ? 4096 : (n + 255) / 256)); }
static inline dim3 block256(void) { return port_dim(256); }
static inline dim3 one(void) { return port_dim(1); }

/* n floats of device memory; the workload stops on failure. */
static inline float *port_dalloc(long n) {
  float *d;
  CHECK_CUDA(cudaMalloc((void **)&d, (size_t)n * sizeof *d));
  return d;
}

/* FNV-1a over bytes: the checksums the workloads print. */
#define PORT_HASH_SEED 14695981039346656037ull
static inline unsigned long long port_hash(unsigned long long h, const void *p, size_t n) {
  for (size_t i = 0; i < n; i++) h = (h ^ ((const unsigned char *)p)[i]) * 1099511628211ull;
  return h;
}

/* Deterministic data: the same bits in both builds. */
static inline float port_rand(unsigned long long *s) {
  *s = *s * 6364136223846793005ull + 1442695040888963407ull;
  return (float)((*s >> 40) & 0xffffff) / (float)0x1000000 - 0.5f;
}

#endif
