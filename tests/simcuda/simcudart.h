/* Runtime entry points the plain C headers do not declare: the per-thread-stream forms
 * (what CUDA_API_PER_THREAD_DEFAULT_STREAM maps to), nvcc 13's launch hooks, and
 * simcuda's kernel registration, the stand-in for nvcc's __cudaRegisterFunction. */
#ifndef SIMCUDART_H
#define SIMCUDART_H

#include <cuda_runtime_api.h>

#include "simcuda.h"

cudaError_t __cudaRegisterSimKernel(const void *host, const char *name, simcu_kernel_fn fn,
                                    unsigned nparams, const size_t *sizes);
cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *host);
cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 g, dim3 b, void **args, size_t shared,
                               cudaStream_t s);
cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 g, dim3 b, void **args,
                                    size_t shared, cudaStream_t s);
cudaError_t cudaLaunchKernel_ptsz(const void *func, dim3 g, dim3 b, void **args, size_t shared,
                                  cudaStream_t s);
cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t *c, const void *func, void **args);
cudaError_t cudaMallocAsync_ptsz(void **p, size_t size, cudaStream_t s);
cudaError_t cudaFreeAsync_ptsz(void *p, cudaStream_t s);
cudaError_t cudaMemcpy_ptds(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind,
                                 cudaStream_t s);
cudaError_t cudaMemset_ptds(void *p, int value, size_t n);
cudaError_t cudaMemsetAsync_ptsz(void *p, int value, size_t n, cudaStream_t s);
cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t s);
cudaError_t cudaStreamQuery_ptsz(cudaStream_t s);
cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t s, cudaEvent_t e, unsigned int flags);
cudaError_t cudaStreamIsCapturing_ptsz(cudaStream_t s, enum cudaStreamCaptureStatus *st);
cudaError_t cudaEventRecord_ptsz(cudaEvent_t e, cudaStream_t s);
cudaError_t cudaGetDriverEntryPoint_ptsz(const char *symbol, void **fn, unsigned long long flags,
                                         enum cudaDriverEntryPointQueryResult *st);
cudaError_t cudaGetDriverEntryPointByVersion_ptsz(const char *symbol, void **fn,
                                                  unsigned int version, unsigned long long flags,
                                                  enum cudaDriverEntryPointQueryResult *st);

cudaError_t cudaStreamBeginCapture_ptsz(cudaStream_t s, enum cudaStreamCaptureMode mode);
cudaError_t cudaStreamEndCapture_ptsz(cudaStream_t s, cudaGraph_t *g);
cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t e, cudaStream_t s);

#endif
