/* The runtime's entry points, exported for programs bound to libcudart (PyTorch's wheels
 * reference cudaMalloc@libcudart.so.13; unversioned exports bind those). The runtime does
 * its work through the driver, where planalloc acts, so these forward to the real runtime
 * and only note a call that never came down (a path planalloc cannot see): an allocation
 * or launch is counted once, at the driver. The entry-point queries hand out our driver
 * wrappers as cuGetProcAddress does. */
#include "pa.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>

/* cudaGetDriverEntryPoint is deprecated in CUDA 13 and still called: it is wrapped. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

#define EXPORT __attribute__((visibility("default")))

static atomic_ulong unseen_allocs, unseen_launches, runtime_calls;

#undef cudaLaunchKernel
#undef cudaLaunchKernelExC
#undef cudaGetDriverEntryPoint
#undef cudaGetDriverEntryPointByVersion
#undef cudaMallocAsync
#undef cudaFreeAsync

#define DECLARE_PTSZ(ret, name, params) EXPORT ret name##_ptsz params;
#define RUNTIME_PTSZ(X)                                                                         \
  X(cudaError_t, cudaMallocAsync, (void **p, size_t n, cudaStream_t s))                        \
  X(cudaError_t, cudaFreeAsync, (void *p, cudaStream_t s))                                     \
  X(cudaError_t, cudaLaunchKernel, (const void *f, dim3 g, dim3 b, void **a, size_t sm, cudaStream_t s)) \
  X(cudaError_t, cudaLaunchKernelExC, (const cudaLaunchConfig_t *c, const void *f, void **a))  \
  X(cudaError_t, __cudaLaunchKernel, (cudaKernel_t k, dim3 g, dim3 b, void **a, size_t sm, cudaStream_t s)) \
  X(cudaError_t, cudaGetDriverEntryPoint, (const char *sym, void **fp, unsigned long long fl, enum cudaDriverEntryPointQueryResult *st)) \
  X(cudaError_t, cudaGetDriverEntryPointByVersion, (const char *sym, void **fp, unsigned int v, unsigned long long fl, enum cudaDriverEntryPointQueryResult *st))
RUNTIME_PTSZ(DECLARE_PTSZ)
EXPORT cudaError_t __cudaLaunchKernel(cudaKernel_t k, dim3 g, dim3 b, void **a, size_t sm, cudaStream_t s);

/* The next definition after planalloc: the real runtime's. */
#define NEXT(name) ((__typeof__(&name))pa_real_dlsym()(RTLD_NEXT, #name))
#define CALL_NEXT(name, ...)                                                       \
  do {                                                                             \
    static __typeof__(&name) fn;                                                   \
    if (!fn) fn = NEXT(name);                                                      \
    if (!fn) return cudaErrorInitializationError;                                  \
    rc = fn(__VA_ARGS__);                                                          \
  } while (0)

#define FORWARDED(name, ...)                                                       \
  cudaError_t rc;                                                                  \
  CALL_NEXT(name, __VA_ARGS__);                                                    \
  return rc

/* An entry-point query, its answer swapped for our wrapper as cuGetProcAddress does. */
#define SWAPPED(name, fp, ...)                                                     \
  cudaError_t rc;                                                                  \
  CALL_NEXT(name, __VA_ARGS__);                                                    \
  if (rc == cudaSuccess) pa_hand_out_hook(fp);                                     \
  return rc

/* Runs a forwarded call and counts it when it never reached the driver hooks. A pass
 * the call asked for (ALLOCATED) is over with it, consumed by the driver hook or not. */
#define WATCHED(counter, name, ...)                                                \
  cudaError_t rc;                                                                  \
  runtime_calls++;                                                                 \
  bool outer = !pa_driver_saw;                                                     \
  pa_driver_saw = false;                                                           \
  CALL_NEXT(name, __VA_ARGS__);                                                    \
  pa_pass_next = false;                                                            \
  if (!pa_driver_saw && rc == cudaSuccess && pa_enabled()) counter++;              \
  pa_driver_saw = !outer;                                                          \
  return rc

/* The program's or a library's allocation through the runtime: the driver call it
 * makes passes where the caller's library is listed (modules.c). */
#define ALLOCATED(...)                                                             \
  pa_pass_next = pa_enabled() && pa_module_passes(__builtin_return_address(0));    \
  WATCHED(unseen_allocs, __VA_ARGS__)

EXPORT cudaError_t cudaMalloc(void **p, size_t n) {
  if (!n && pa_enabled() && pa_events_on()) pa_events_zero(); /* the runtime answers these itself */
  ALLOCATED(cudaMalloc, p, n);
}
EXPORT cudaError_t cudaFree(void *p) { FORWARDED(cudaFree, p); }
EXPORT cudaError_t cudaMallocAsync(void **p, size_t n, cudaStream_t s) { ALLOCATED(cudaMallocAsync, p, n, s); }
EXPORT cudaError_t cudaMallocAsync_ptsz(void **p, size_t n, cudaStream_t s) { ALLOCATED(cudaMallocAsync_ptsz, p, n, s); }
EXPORT cudaError_t cudaFreeAsync(void *p, cudaStream_t s) { FORWARDED(cudaFreeAsync, p, s); }
EXPORT cudaError_t cudaFreeAsync_ptsz(void *p, cudaStream_t s) { FORWARDED(cudaFreeAsync_ptsz, p, s); }

EXPORT cudaError_t cudaLaunchKernel(const void *f, dim3 g, dim3 b, void **a, size_t sm, cudaStream_t s) {
  WATCHED(unseen_launches, cudaLaunchKernel, f, g, b, a, sm, s);
}
EXPORT cudaError_t cudaLaunchKernel_ptsz(const void *f, dim3 g, dim3 b, void **a, size_t sm, cudaStream_t s) {
  WATCHED(unseen_launches, cudaLaunchKernel_ptsz, f, g, b, a, sm, s);
}
EXPORT cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t *c, const void *f, void **a) {
  WATCHED(unseen_launches, cudaLaunchKernelExC, c, f, a);
}
EXPORT cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t *c, const void *f, void **a) {
  WATCHED(unseen_launches, cudaLaunchKernelExC_ptsz, c, f, a);
}
EXPORT cudaError_t __cudaLaunchKernel(cudaKernel_t k, dim3 g, dim3 b, void **a, size_t sm, cudaStream_t s) {
  WATCHED(unseen_launches, __cudaLaunchKernel, k, g, b, a, sm, s);
}
EXPORT cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t k, dim3 g, dim3 b, void **a, size_t sm, cudaStream_t s) {
  WATCHED(unseen_launches, __cudaLaunchKernel_ptsz, k, g, b, a, sm, s);
}

EXPORT cudaError_t cudaGetDriverEntryPoint(const char *sym, void **fp, unsigned long long fl,
                                           enum cudaDriverEntryPointQueryResult *st) {
  SWAPPED(cudaGetDriverEntryPoint, fp, sym, fp, fl, st);
}
EXPORT cudaError_t cudaGetDriverEntryPoint_ptsz(const char *sym, void **fp, unsigned long long fl,
                                                enum cudaDriverEntryPointQueryResult *st) {
  SWAPPED(cudaGetDriverEntryPoint_ptsz, fp, sym, fp, fl, st);
}
EXPORT cudaError_t cudaGetDriverEntryPointByVersion(const char *sym, void **fp, unsigned int v,
                                                    unsigned long long fl,
                                                    enum cudaDriverEntryPointQueryResult *st) {
  SWAPPED(cudaGetDriverEntryPointByVersion, fp, sym, fp, v, fl, st);
}
EXPORT cudaError_t cudaGetDriverEntryPointByVersion_ptsz(const char *sym, void **fp, unsigned int v,
                                                         unsigned long long fl,
                                                         enum cudaDriverEntryPointQueryResult *st) {
  SWAPPED(cudaGetDriverEntryPointByVersion_ptsz, fp, sym, fp, v, fl, st);
}

unsigned long pa_runtime_unseen_allocs(void) { return unseen_allocs; }
unsigned long pa_runtime_unseen_launches(void) { return unseen_launches; }
unsigned long pa_runtime_calls(void) { return runtime_calls; }
