/* The simulated CUDA runtime, libcudart.so.13. Like cudart 12/13 it does not link the
 * driver: it dlopens libcuda.so.1, takes cuGetProcAddress_v2 with dlsym, and resolves
 * every driver entry point through it, with CUDA version 13000 and the legacy or the
 * per-thread-stream flag (for the _ptsz/_ptds entry points). Exports are versioned
 * under the node libcudart.so.13 (cudart.map), as the real library's are. */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simcudart.h"

#define RT_EXPORT __attribute__((visibility("default")))
#define RT_VERSION 13000 /* CUDART_VERSION of the runtime this stands in for */

/* ---- the driver, reached only through cuGetProcAddress_v2 ---------------------- */

typedef struct driver_s {
  PFN_cuInit_v2000 init;
  PFN_cuDevicePrimaryCtxRetain_v7000 retain;
  PFN_cuCtxSetCurrent_v4000 set_current;
  PFN_cuCtxSynchronize_v2000 ctx_sync;
  PFN_cuDriverGetVersion_v2020 driver_version;
  PFN_cuMemAlloc_v3020 alloc;
  PFN_cuMemFree_v3020 free;
  PFN_cuMemGetInfo_v3020 info;
  PFN_cuMemHostAlloc_v2020 host_alloc;
  PFN_cuMemFreeHost_v2000 host_free;
  PFN_cuMemAllocAsync_v11020 alloc_async;
  PFN_cuMemFreeAsync_v11020 free_async;
  PFN_cuMemcpy_v4000 copy;
  PFN_cuMemcpyAsync_v4000 copy_async;
  PFN_cuMemsetD8_v3020 set;
  PFN_cuMemsetD8Async_v3020 set_async;
  PFN_cuStreamCreate_v2000 stream_create;
  PFN_cuStreamDestroy_v4000 stream_destroy;
  PFN_cuStreamSynchronize_v2000 stream_sync;
  PFN_cuStreamQuery_v2000 stream_query;
  PFN_cuStreamWaitEvent_v3020 stream_wait;
  PFN_cuStreamIsCapturing_v10000 is_capturing;
  PFN_cuEventCreate_v2000 event_create;
  PFN_cuEventDestroy_v4000 event_destroy;
  PFN_cuEventRecord_v2000 event_record;
  PFN_cuEventSynchronize_v2000 event_sync;
  PFN_cuEventQuery_v2000 event_query;
  PFN_cuEventElapsedTime_v2000 elapsed;
  PFN_cuLaunchKernel_v4000 launch;
  PFN_cuLaunchKernelEx_v11060 launch_ex;
  PFN_cuGetProcAddress_v12000 get_proc;
  PFN_cuMemAllocManaged_v6000 alloc_managed;
  PFN_cuStreamBeginCapture_v10010 begin_capture;
  PFN_cuStreamEndCapture_v10000 end_capture;
  PFN_cuGraphInstantiateWithFlags_v11040 instantiate;
  PFN_cuGraphLaunch_v10000 graph_launch;
  PFN_cuGraphExecDestroy_v10000 exec_destroy;
  PFN_cuGraphDestroy_v10000 graph_destroy;
  PFN_simcuRegisterKernel register_kernel;
  PFN_cuDeviceGetCount_v2000 device_count;
  PFN_cuDeviceCanAccessPeer_v4000 can_access_peer;
  PFN_cuCtxEnablePeerAccess_v4000 enable_peer;
  PFN_cuCtxDisablePeerAccess_v4000 disable_peer;
  PFN_cuPointerGetAttributes_v7000 pointer_attributes;
  PFN_cuMemcpyPeer_v4000 copy_peer;
  PFN_cuMemcpyPeerAsync_v4000 copy_peer_async;
  PFN_cuIpcGetMemHandle_v4010 ipc_get;
  PFN_cuIpcOpenMemHandle_v11000 ipc_open;
  PFN_cuIpcCloseMemHandle_v4010 ipc_close;
} driver_t;

static driver_t legacy_api, per_thread_api; /* resolved with the two stream flags */
static CUcontext primary[8]; /* each device's, retained at its first use (device 0 at init) */
static pthread_mutex_t primary_mu = PTHREAD_MUTEX_INITIALIZER;
static __thread int thread_device; /* cudaSetDevice's, this thread's */
static cudaError_t init_error = cudaSuccess;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static __thread bool thread_ready;
static __thread cudaError_t last_error;

static bool resolve(PFN_cuGetProcAddress_v12000 gpa, cuuint64_t flags, driver_t *d) {
  static const struct { const char *name; int version; size_t offset; } want[] = {
#define W(n, v, f) {n, v, offsetof(driver_t, f)}
      W("cuInit", 2000, init), W("cuDevicePrimaryCtxRetain", 7000, retain),
      W("cuCtxSetCurrent", 4000, set_current), W("cuCtxSynchronize", 2000, ctx_sync),
      W("cuDriverGetVersion", 2020, driver_version), W("cuMemAlloc", 3020, alloc),
      W("cuMemFree", 3020, free), W("cuMemGetInfo", 3020, info),
      W("cuMemHostAlloc", 2020, host_alloc), W("cuMemFreeHost", 2000, host_free),
      W("cuMemAllocAsync", 11020, alloc_async), W("cuMemFreeAsync", 11020, free_async),
      W("cuMemcpy", 4000, copy), W("cuMemcpyAsync", 4000, copy_async),
      W("cuMemsetD8", 3020, set), W("cuMemsetD8Async", 3020, set_async),
      W("cuStreamCreate", 2000, stream_create), W("cuStreamDestroy", 4000, stream_destroy),
      W("cuStreamSynchronize", 2000, stream_sync), W("cuStreamQuery", 2000, stream_query),
      W("cuStreamWaitEvent", 3020, stream_wait), W("cuStreamIsCapturing", 10000, is_capturing),
      W("cuEventCreate", 2000, event_create), W("cuEventDestroy", 4000, event_destroy),
      W("cuEventRecord", 2000, event_record), W("cuEventSynchronize", 2000, event_sync),
      W("cuEventQuery", 2000, event_query), W("cuEventElapsedTime", 2000, elapsed),
      W("cuLaunchKernel", 4000, launch), W("cuLaunchKernelEx", 11060, launch_ex),
      W("cuGetProcAddress", 12000, get_proc), W("simcuRegisterKernel", 2000, register_kernel),
      W("cuMemAllocManaged", 6000, alloc_managed), W("cuStreamBeginCapture", 10010, begin_capture),
      W("cuStreamEndCapture", 10000, end_capture),
      W("cuGraphInstantiateWithFlags", 11040, instantiate), W("cuGraphLaunch", 10000, graph_launch),
      W("cuGraphExecDestroy", 10000, exec_destroy), W("cuGraphDestroy", 10000, graph_destroy),
      W("cuDeviceGetCount", 2000, device_count), W("cuDeviceCanAccessPeer", 4000, can_access_peer),
      W("cuCtxEnablePeerAccess", 4000, enable_peer), W("cuCtxDisablePeerAccess", 4000, disable_peer),
      W("cuPointerGetAttributes", 7000, pointer_attributes), W("cuMemcpyPeer", 4000, copy_peer),
      W("cuMemcpyPeerAsync", 4000, copy_peer_async), W("cuIpcGetMemHandle", 4010, ipc_get),
      W("cuIpcOpenMemHandle", 11000, ipc_open), W("cuIpcCloseMemHandle", 4010, ipc_close),
#undef W
  };
  for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
    void *fn = NULL;
    CUdriverProcAddressQueryResult st;
    /* ask for the exact ABI each pointer is declared with (the newest would change
     * signatures, e.g. cuCtxSynchronize_v2 in 13.0), but at least 7.0, where the
     * per-thread-stream variants begin */
    int version = want[i].version < 7000 ? 7000 : want[i].version;
    if (gpa(want[i].name, &fn, version, flags, &st) || !fn) return false;
    memcpy((char *)d + want[i].offset, &fn, sizeof fn);
  }
  return true;
}

static void init_once(void) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  PFN_cuGetProcAddress_v12000 gpa = h ? (PFN_cuGetProcAddress_v12000)dlsym(h, "cuGetProcAddress_v2") : NULL;
  if (!gpa) {
    init_error = cudaErrorInsufficientDriver;
    return;
  }
  if (!resolve(gpa, CU_GET_PROC_ADDRESS_LEGACY_STREAM, &legacy_api) ||
      !resolve(gpa, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &per_thread_api)) {
    init_error = cudaErrorInsufficientDriver;
    return;
  }
  CUdevice dev = 0;
  if (legacy_api.init(0) || legacy_api.retain(&primary[0], dev)) init_error = cudaErrorNoDevice;
}

static cudaError_t to_rt(CUresult r) {
  switch (r) {
  case CUDA_SUCCESS: return cudaSuccess;
  case CUDA_ERROR_INVALID_VALUE: return cudaErrorInvalidValue;
  case CUDA_ERROR_OUT_OF_MEMORY: return cudaErrorMemoryAllocation;
  case CUDA_ERROR_NOT_INITIALIZED: return cudaErrorInitializationError;
  case CUDA_ERROR_INVALID_DEVICE: return cudaErrorInvalidDevice;
  case CUDA_ERROR_INVALID_CONTEXT: return cudaErrorDeviceUninitialized;
  case CUDA_ERROR_INVALID_HANDLE: return cudaErrorInvalidResourceHandle;
  case CUDA_ERROR_NOT_READY: return cudaErrorNotReady;
  case CUDA_ERROR_NOT_FOUND: return cudaErrorSymbolNotFound;
  case CUDA_ERROR_NOT_SUPPORTED: return cudaErrorNotSupported;
  case CUDA_ERROR_ILLEGAL_STATE: return cudaErrorIllegalState;
  case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED: return cudaErrorStreamCaptureUnsupported;
  case CUDA_ERROR_STREAM_CAPTURE_INVALIDATED: return cudaErrorStreamCaptureInvalidated;
  case CUDA_ERROR_STREAM_CAPTURE_ISOLATION: return cudaErrorStreamCaptureIsolation;
  case CUDA_ERROR_STREAM_CAPTURE_UNJOINED: return cudaErrorStreamCaptureUnjoined;
  case CUDA_ERROR_STREAM_CAPTURE_UNMATCHED: return cudaErrorStreamCaptureUnmatched;
  case CUDA_ERROR_STREAM_CAPTURE_IMPLICIT: return cudaErrorStreamCaptureImplicit;
  case CUDA_ERROR_CAPTURED_EVENT: return cudaErrorCapturedEvent;
  case CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED: return cudaErrorPeerAccessAlreadyEnabled;
  case CUDA_ERROR_PEER_ACCESS_NOT_ENABLED: return cudaErrorPeerAccessNotEnabled;
  case CUDA_ERROR_MAP_FAILED: return cudaErrorMapBufferObjectFailed;
  default: return cudaErrorUnknown;
  }
}

/* Records the error as the thread's last one (not cudaErrorNotReady, as cudart does). */
static cudaError_t ret(cudaError_t e) {
  if (e != cudaSuccess && e != cudaErrorNotReady) last_error = e;
  return e;
}

/* Initialises the runtime once and makes the primary context current on this thread. */
static const driver_t *api(bool ptsz) {
  pthread_once(&once, init_once);
  if (init_error) return NULL;
  if (!thread_ready && legacy_api.set_current(primary[thread_device])) return NULL;
  thread_ready = true;
  return ptsz ? &per_thread_api : &legacy_api;
}

#define DRIVER(ptsz)                                                 \
  const driver_t *d = api(ptsz);                                     \
  if (!d) return ret(init_error ? init_error : cudaErrorUnknown)

/* ---- kernels registered by programs built with gcc (see simcuda.h) ---------------- */

typedef struct kreg_s {
  const void *host;
  CUfunction func;
  CUkernel kernel;
  struct kreg_s *next;
} kreg_t;

static kreg_t *kernels;
static pthread_mutex_t kernels_mu = PTHREAD_MUTEX_INITIALIZER;

/* What nvcc's __cudaRegisterFunction does for a real module: binds a host stub to a
 * device function. Here the device function is a host function run by the simulator. */
RT_EXPORT cudaError_t __cudaRegisterSimKernel(const void *host, const char *name, simcu_kernel_fn fn,
                                              unsigned nparams, const size_t *sizes) {
  DRIVER(false);
  kreg_t *k = calloc(1, sizeof *k);
  if (!host || !k) return free(k), ret(cudaErrorInvalidValue);
  CUresult r = d->register_kernel(&k->func, &k->kernel, name, fn, nparams, sizes);
  if (r) return free(k), ret(to_rt(r));
  k->host = host;
  pthread_mutex_lock(&kernels_mu);
  k->next = kernels, kernels = k;
  pthread_mutex_unlock(&kernels_mu);
  return cudaSuccess;
}

static const kreg_t *find_kernel(const void *host) {
  pthread_mutex_lock(&kernels_mu);
  const kreg_t *k = kernels;
  while (k && k->host != host) k = k->next;
  pthread_mutex_unlock(&kernels_mu);
  return k;
}

static cudaError_t launch(const void *fn_handle, dim3 g, dim3 b, void **args, size_t shared,
                          cudaStream_t s, bool ptsz) {
  DRIVER(ptsz);
  return ret(to_rt(d->launch((CUfunction)(uintptr_t)fn_handle, g.x, g.y, g.z, b.x, b.y, b.z,
                             (unsigned)shared, (CUstream)s, args, NULL)));
}

static cudaError_t launch_host(const void *func, dim3 g, dim3 b, void **args, size_t shared,
                               cudaStream_t s, bool ptsz) {
  DRIVER(ptsz);
  const kreg_t *k = find_kernel(func);
  if (!k) return ret(cudaErrorInvalidDeviceFunction);
  return launch(k->func, g, b, args, shared, s, ptsz);
}

RT_EXPORT cudaError_t cudaLaunchKernel(const void *func, dim3 g, dim3 b, void **args,
                                       size_t shared, cudaStream_t s) {
  return launch_host(func, g, b, args, shared, s, false);
}
RT_EXPORT cudaError_t cudaLaunchKernel_ptsz(const void *func, dim3 g, dim3 b, void **args,
                                            size_t shared, cudaStream_t s) {
  return launch_host(func, g, b, args, shared, s, true);
}

/* nvcc 13's <<<>>> stub: __cudaGetKernel, then __cudaLaunchKernel with the handle. */
RT_EXPORT cudaError_t __cudaGetKernel(cudaKernel_t *kernel, const void *host) {
  DRIVER(false);
  const kreg_t *k = find_kernel(host);
  if (!kernel) return ret(cudaErrorInvalidValue);
  if (!k) return ret(cudaErrorInvalidDeviceFunction);
  *kernel = (cudaKernel_t)k->kernel;
  return cudaSuccess;
}
RT_EXPORT cudaError_t cudaGetKernel(cudaKernel_t *kernel, const void *host) {
  return __cudaGetKernel(kernel, host);
}
RT_EXPORT cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3 g, dim3 b, void **args,
                                         size_t shared, cudaStream_t s) {
  return launch(kernel, g, b, args, shared, s, false);
}
RT_EXPORT cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3 g, dim3 b, void **args,
                                              size_t shared, cudaStream_t s) {
  return launch(kernel, g, b, args, shared, s, true);
}

RT_EXPORT cudaError_t cudaGetFuncBySymbol(cudaFunction_t *f, const void *host) {
  DRIVER(false);
  const kreg_t *k = find_kernel(host);
  if (!f) return ret(cudaErrorInvalidValue);
  if (!k) return ret(cudaErrorInvalidDeviceFunction);
  *f = (cudaFunction_t)k->func;
  return cudaSuccess;
}

static cudaError_t launch_ex(const cudaLaunchConfig_t *c, const void *func, void **args, bool ptsz) {
  DRIVER(ptsz);
  const kreg_t *k = find_kernel(func);
  if (!c) return ret(cudaErrorInvalidValue);
  if (!k) return ret(cudaErrorInvalidDeviceFunction);
  CUlaunchConfig cu = {c->gridDim.x, c->gridDim.y, c->gridDim.z, c->blockDim.x, c->blockDim.y,
                       c->blockDim.z, (unsigned)c->dynamicSmemBytes, (CUstream)c->stream, NULL, 0};
  return ret(to_rt(d->launch_ex(&cu, k->func, args, NULL)));
}
RT_EXPORT cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t *c, const void *func, void **args) {
  return launch_ex(c, func, args, false);
}
RT_EXPORT cudaError_t cudaLaunchKernelExC_ptsz(const cudaLaunchConfig_t *c, const void *func, void **args) {
  return launch_ex(c, func, args, true);
}

/* ---- memory ------------------------------------------------------------------------ */

RT_EXPORT cudaError_t cudaMalloc(void **p, size_t size) {
  DRIVER(false);
  if (!p) return ret(cudaErrorInvalidValue);
  if (!size) return *p = NULL, cudaSuccess; /* cudart allows 0 bytes */
  CUdeviceptr dp;
  CUresult r = d->alloc(&dp, size);
  if (!r) *p = (void *)(uintptr_t)dp;
  return ret(to_rt(r));
}

RT_EXPORT cudaError_t cudaFree(void *p) {
  DRIVER(false);
  if (!p) return cudaSuccess;
  return ret(to_rt(d->free((CUdeviceptr)(uintptr_t)p)));
}

static cudaError_t malloc_async(void **p, size_t size, cudaStream_t s, bool ptsz) {
  DRIVER(ptsz);
  if (!p) return ret(cudaErrorInvalidValue);
  CUdeviceptr dp;
  CUresult r = d->alloc_async(&dp, size, (CUstream)s);
  if (!r) *p = (void *)(uintptr_t)dp;
  return ret(to_rt(r));
}

static cudaError_t free_async(void *p, cudaStream_t s, bool ptsz) {
  DRIVER(ptsz);
  return ret(to_rt(d->free_async((CUdeviceptr)(uintptr_t)p, (CUstream)s)));
}

RT_EXPORT cudaError_t cudaMallocAsync(void **p, size_t size, cudaStream_t s) { return malloc_async(p, size, s, false); }
RT_EXPORT cudaError_t cudaMallocAsync_ptsz(void **p, size_t size, cudaStream_t s) { return malloc_async(p, size, s, true); }
RT_EXPORT cudaError_t cudaFreeAsync(void *p, cudaStream_t s) { return free_async(p, s, false); }
RT_EXPORT cudaError_t cudaFreeAsync_ptsz(void *p, cudaStream_t s) { return free_async(p, s, true); }

RT_EXPORT cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total) {
  DRIVER(false);
  return ret(to_rt(d->info(free_bytes, total)));
}

RT_EXPORT cudaError_t cudaHostAlloc(void **p, size_t size, unsigned int flags) {
  DRIVER(false);
  return ret(to_rt(d->host_alloc(p, size, flags)));
}
RT_EXPORT cudaError_t cudaMallocHost(void **p, size_t size) { return cudaHostAlloc(p, size, 0); }
RT_EXPORT cudaError_t cudaFreeHost(void *p) {
  DRIVER(false);
  return ret(to_rt(d->host_free(p)));
}

/* Unified addressing: the driver finds the direction from the pointers; the kind is
 * only checked, as cudart does for the values it knows. */
static cudaError_t memcpy_rt(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind,
                             cudaStream_t s, bool async, bool ptsz) {
  DRIVER(ptsz);
  if ((unsigned)kind > cudaMemcpyDefault) return ret(cudaErrorInvalidMemcpyDirection);
  CUdeviceptr dd = (CUdeviceptr)(uintptr_t)dst, ss = (CUdeviceptr)(uintptr_t)src;
  return ret(to_rt(async ? d->copy_async(dd, ss, n, (CUstream)s) : d->copy(dd, ss, n)));
}

RT_EXPORT cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind) {
  return memcpy_rt(dst, src, n, kind, NULL, false, false);
}
RT_EXPORT cudaError_t cudaMemcpy_ptds(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind) {
  return memcpy_rt(dst, src, n, kind, NULL, false, true);
}
RT_EXPORT cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind,
                                      cudaStream_t s) {
  return memcpy_rt(dst, src, n, kind, s, true, false);
}
RT_EXPORT cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t n,
                                           enum cudaMemcpyKind kind, cudaStream_t s) {
  return memcpy_rt(dst, src, n, kind, s, true, true);
}

static cudaError_t memset_rt(void *p, int value, size_t n, cudaStream_t s, bool async, bool ptsz) {
  DRIVER(ptsz);
  CUdeviceptr dp = (CUdeviceptr)(uintptr_t)p;
  unsigned char v = (unsigned char)value;
  return ret(to_rt(async ? d->set_async(dp, v, n, (CUstream)s) : d->set(dp, v, n)));
}

RT_EXPORT cudaError_t cudaMemset(void *p, int value, size_t n) { return memset_rt(p, value, n, NULL, false, false); }
RT_EXPORT cudaError_t cudaMemset_ptds(void *p, int value, size_t n) { return memset_rt(p, value, n, NULL, false, true); }
RT_EXPORT cudaError_t cudaMemsetAsync(void *p, int value, size_t n, cudaStream_t s) {
  return memset_rt(p, value, n, s, true, false);
}
RT_EXPORT cudaError_t cudaMemsetAsync_ptsz(void *p, int value, size_t n, cudaStream_t s) {
  return memset_rt(p, value, n, s, true, true);
}

/* ---- streams and events ------------------------------------------------------------ */

RT_EXPORT cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned int flags) {
  DRIVER(false);
  return ret(to_rt(d->stream_create((CUstream *)s, flags)));
}
RT_EXPORT cudaError_t cudaStreamCreate(cudaStream_t *s) { return cudaStreamCreateWithFlags(s, 0); }
RT_EXPORT cudaError_t cudaStreamDestroy(cudaStream_t s) {
  DRIVER(false);
  return ret(to_rt(d->stream_destroy((CUstream)s)));
}

#define STREAM_CALL(rt_name, field)                                                      \
  RT_EXPORT cudaError_t rt_name(cudaStream_t s) {                                        \
    DRIVER(false);                                                                       \
    return ret(to_rt(d->field((CUstream)s)));                                            \
  }                                                                                      \
  RT_EXPORT cudaError_t rt_name##_ptsz(cudaStream_t s) {                                 \
    DRIVER(true);                                                                        \
    return ret(to_rt(d->field((CUstream)s)));                                            \
  }
STREAM_CALL(cudaStreamSynchronize, stream_sync)
STREAM_CALL(cudaStreamQuery, stream_query)
#undef STREAM_CALL

static cudaError_t wait_event(cudaStream_t s, cudaEvent_t e, unsigned flags, bool ptsz) {
  DRIVER(ptsz);
  return ret(to_rt(d->stream_wait((CUstream)s, (CUevent)e, flags)));
}
RT_EXPORT cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned int flags) {
  return wait_event(s, e, flags, false);
}
RT_EXPORT cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t s, cudaEvent_t e, unsigned int flags) {
  return wait_event(s, e, flags, true);
}

static cudaError_t is_capturing(cudaStream_t s, enum cudaStreamCaptureStatus *st, bool ptsz) {
  DRIVER(ptsz);
  CUstreamCaptureStatus cs;
  CUresult r = d->is_capturing((CUstream)s, &cs);
  if (!r && st) *st = (enum cudaStreamCaptureStatus)cs;
  return ret(st ? to_rt(r) : cudaErrorInvalidValue);
}
RT_EXPORT cudaError_t cudaStreamIsCapturing(cudaStream_t s, enum cudaStreamCaptureStatus *st) {
  return is_capturing(s, st, false);
}
RT_EXPORT cudaError_t cudaStreamIsCapturing_ptsz(cudaStream_t s, enum cudaStreamCaptureStatus *st) {
  return is_capturing(s, st, true);
}

RT_EXPORT cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned int flags) {
  DRIVER(false);
  return ret(to_rt(d->event_create((CUevent *)e, flags)));
}
RT_EXPORT cudaError_t cudaEventCreate(cudaEvent_t *e) { return cudaEventCreateWithFlags(e, 0); }
RT_EXPORT cudaError_t cudaEventDestroy(cudaEvent_t e) {
  DRIVER(false);
  return ret(to_rt(d->event_destroy((CUevent)e)));
}
static cudaError_t record(cudaEvent_t e, cudaStream_t s, bool ptsz) {
  DRIVER(ptsz);
  return ret(to_rt(d->event_record((CUevent)e, (CUstream)s)));
}
RT_EXPORT cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) { return record(e, s, false); }
RT_EXPORT cudaError_t cudaEventRecord_ptsz(cudaEvent_t e, cudaStream_t s) { return record(e, s, true); }
RT_EXPORT cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  DRIVER(false);
  return ret(to_rt(d->event_sync((CUevent)e)));
}
RT_EXPORT cudaError_t cudaEventQuery(cudaEvent_t e) {
  DRIVER(false);
  return ret(to_rt(d->event_query((CUevent)e)));
}
RT_EXPORT cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b) {
  DRIVER(false);
  return ret(to_rt(d->elapsed(ms, (CUevent)a, (CUevent)b)));
}

/* ---- device, versions, errors -------------------------------------------------------- */

RT_EXPORT cudaError_t cudaDeviceSynchronize(void) {
  DRIVER(false);
  return ret(to_rt(d->ctx_sync()));
}
RT_EXPORT cudaError_t cudaGetDeviceCount(int *n) {
  DRIVER(false);
  return ret(to_rt(d->device_count(n)));
}

/* Device dev's primary context, retained once; NULL for no such device. */
static CUcontext context_of(const driver_t *d, int dev) {
  int n = 0;
  if (dev < 0 || dev >= 8 || d->device_count(&n) || dev >= n) return NULL;
  pthread_mutex_lock(&primary_mu);
  if (!primary[dev] && d->retain(&primary[dev], dev)) primary[dev] = NULL;
  CUcontext c = primary[dev];
  pthread_mutex_unlock(&primary_mu);
  return c;
}

RT_EXPORT cudaError_t cudaSetDevice(int device) {
  DRIVER(false);
  CUcontext c = context_of(d, device);
  if (!c) return ret(cudaErrorInvalidDevice);
  if (d->set_current(c)) return ret(cudaErrorInvalidDevice);
  thread_device = device;
  return cudaSuccess;
}
RT_EXPORT cudaError_t cudaGetDevice(int *device) {
  DRIVER(false);
  if (!device) return ret(cudaErrorInvalidValue);
  *device = thread_device;
  return cudaSuccess;
}
RT_EXPORT cudaError_t cudaDeviceCanAccessPeer(int *can, int device, int peer) {
  DRIVER(false);
  return ret(to_rt(d->can_access_peer(can, device, peer)));
}
RT_EXPORT cudaError_t cudaDeviceEnablePeerAccess(int peer, unsigned int flags) {
  DRIVER(false);
  CUcontext c = context_of(d, peer);
  return ret(c ? to_rt(d->enable_peer(c, flags)) : cudaErrorInvalidDevice);
}
RT_EXPORT cudaError_t cudaDeviceDisablePeerAccess(int peer) {
  DRIVER(false);
  CUcontext c = context_of(d, peer);
  return ret(c ? to_rt(d->disable_peer(c)) : cudaErrorInvalidDevice);
}
RT_EXPORT cudaError_t cudaMemcpyPeer(void *dst, int dst_dev, const void *src, int src_dev, size_t n) {
  DRIVER(false);
  CUcontext a = context_of(d, dst_dev), b = context_of(d, src_dev);
  if (!a || !b) return ret(cudaErrorInvalidDevice);
  return ret(to_rt(d->copy_peer((CUdeviceptr)(uintptr_t)dst, a, (CUdeviceptr)(uintptr_t)src, b, n)));
}
RT_EXPORT cudaError_t cudaMemcpyPeerAsync(void *dst, int dst_dev, const void *src, int src_dev, size_t n, cudaStream_t s) {
  DRIVER(false);
  CUcontext a = context_of(d, dst_dev), b = context_of(d, src_dev);
  if (!a || !b) return ret(cudaErrorInvalidDevice);
  return ret(to_rt(d->copy_peer_async((CUdeviceptr)(uintptr_t)dst, a, (CUdeviceptr)(uintptr_t)src, b, n, (CUstream)s)));
}

RT_EXPORT cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t *handle, void *p) {
  DRIVER(false);
  return ret(to_rt(d->ipc_get((CUipcMemHandle *)handle, (CUdeviceptr)(uintptr_t)p)));
}
RT_EXPORT cudaError_t cudaIpcOpenMemHandle(void **p, cudaIpcMemHandle_t handle, unsigned int flags) {
  DRIVER(false);
  CUipcMemHandle h;
  memcpy(&h, &handle, sizeof h);
  return ret(to_rt(d->ipc_open((CUdeviceptr *)p, h, flags)));
}
RT_EXPORT cudaError_t cudaIpcCloseMemHandle(void *p) {
  DRIVER(false);
  return ret(to_rt(d->ipc_close((CUdeviceptr)(uintptr_t)p)));
}

/* Device memory (cuMemAlloc or VMM), pinned host memory, or memory CUDA does not know
 * (cudaMemoryTypeUnregistered, device -2), as CUDA 11 and later report it. */
RT_EXPORT cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *attr, const void *ptr) {
  DRIVER(false);
  if (!attr) return ret(cudaErrorInvalidValue);
  unsigned type = 0;
  int device = -2;
  CUdeviceptr dp = 0;
  CUpointer_attribute what[] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
                                CU_POINTER_ATTRIBUTE_DEVICE_POINTER};
  void *out[] = {&type, &device, &dp};
  CUresult rc = d->pointer_attributes(3, what, out, (CUdeviceptr)(uintptr_t)ptr);
  if (rc) return ret(to_rt(rc));
  memset(attr, 0, sizeof *attr);
  attr->type = type == CU_MEMORYTYPE_DEVICE ? cudaMemoryTypeDevice : type == CU_MEMORYTYPE_HOST ? cudaMemoryTypeHost
                                                                                               : cudaMemoryTypeUnregistered;
  attr->device = device;
  attr->devicePointer = attr->type == cudaMemoryTypeDevice ? (void *)(uintptr_t)dp : NULL;
  attr->hostPointer = attr->type == cudaMemoryTypeDevice ? NULL : (void *)ptr;
  return cudaSuccess;
}
RT_EXPORT cudaError_t cudaDriverGetVersion(int *v) {
  DRIVER(false);
  return ret(to_rt(d->driver_version(v)));
}
RT_EXPORT cudaError_t cudaRuntimeGetVersion(int *v) {
  if (!v) return ret(cudaErrorInvalidValue);
  *v = RT_VERSION;
  return cudaSuccess;
}

RT_EXPORT cudaError_t cudaGetLastError(void) {
  cudaError_t e = last_error;
  last_error = cudaSuccess;
  return e;
}
RT_EXPORT cudaError_t cudaPeekAtLastError(void) { return last_error; }

static const struct {
  cudaError_t code;
  const char *name, *text;
} rt_errors[] = {
    {cudaSuccess, "cudaSuccess", "no error"},
    {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
    {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
    {cudaErrorInitializationError, "cudaErrorInitializationError", "initialization error"},
    {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
    {cudaErrorDeviceUninitialized, "cudaErrorDeviceUninitialized", "invalid device context"},
    {cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
    {cudaErrorNotReady, "cudaErrorNotReady", "device not ready"},
    {cudaErrorInvalidDeviceFunction, "cudaErrorInvalidDeviceFunction", "invalid device function"},
    {cudaErrorInvalidMemcpyDirection, "cudaErrorInvalidMemcpyDirection", "invalid copy direction for memcpy"},
    {cudaErrorInsufficientDriver, "cudaErrorInsufficientDriver", "CUDA driver version is insufficient for CUDA runtime version"},
    {cudaErrorNoDevice, "cudaErrorNoDevice", "no CUDA-capable device is detected"},
    {cudaErrorSymbolNotFound, "cudaErrorSymbolNotFound", "named symbol not found"},
    {cudaErrorNotSupported, "cudaErrorNotSupported", "operation not supported"},
    {cudaErrorIllegalState, "cudaErrorIllegalState", "the operation cannot be performed in the present state"},
    {cudaErrorStreamCaptureUnsupported, "cudaErrorStreamCaptureUnsupported", "operation not permitted when stream is capturing"},
    {cudaErrorStreamCaptureInvalidated, "cudaErrorStreamCaptureInvalidated", "operation failed due to a previous error during capture"},
};

RT_EXPORT const char *cudaGetErrorString(cudaError_t e) {
  for (size_t i = 0; i < sizeof rt_errors / sizeof *rt_errors; i++)
    if (rt_errors[i].code == e) return rt_errors[i].text;
  return "unrecognized error code";
}
RT_EXPORT const char *cudaGetErrorName(cudaError_t e) {
  for (size_t i = 0; i < sizeof rt_errors / sizeof *rt_errors; i++)
    if (rt_errors[i].code == e) return rt_errors[i].name;
  return "cudaErrorUnknown";
}

/* ---- driver entry points: through the driver's own resolver ---------------------------- */

static cudaError_t entry_point(const char *symbol, void **fn, unsigned version,
                               unsigned long long flags, enum cudaDriverEntryPointQueryResult *st,
                               bool ptsz) {
  DRIVER(false);
  if (!symbol || !fn || flags > (cudaEnableLegacyStream | cudaEnablePerThreadDefaultStream))
    return ret(cudaErrorInvalidValue);
  cuuint64_t cu = flags == cudaEnableDefault ? (ptsz ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
                                                     : CU_GET_PROC_ADDRESS_LEGACY_STREAM)
                                             : flags;
  CUdriverProcAddressQueryResult cst = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  CUresult r = d->get_proc(symbol, fn, (int)version, cu, &cst);
  if (st) *st = (enum cudaDriverEntryPointQueryResult)cst;
  if (!r && cst != CU_GET_PROC_ADDRESS_SUCCESS)
    return ret(cst == CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT ? cudaErrorInvalidValue
                                                                 : cudaErrorSymbolNotFound);
  return ret(to_rt(r));
}

RT_EXPORT cudaError_t cudaGetDriverEntryPoint(const char *symbol, void **fn, unsigned long long flags,
                                              enum cudaDriverEntryPointQueryResult *st) {
  return entry_point(symbol, fn, RT_VERSION, flags, st, false);
}
RT_EXPORT cudaError_t cudaGetDriverEntryPoint_ptsz(const char *symbol, void **fn,
                                                   unsigned long long flags,
                                                   enum cudaDriverEntryPointQueryResult *st) {
  return entry_point(symbol, fn, RT_VERSION, flags, st, true);
}
RT_EXPORT cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **fn,
                                                       unsigned int version,
                                                       unsigned long long flags,
                                                       enum cudaDriverEntryPointQueryResult *st) {
  return entry_point(symbol, fn, version, flags, st, false);
}
RT_EXPORT cudaError_t cudaGetDriverEntryPointByVersion_ptsz(const char *symbol, void **fn,
                                                            unsigned int version,
                                                            unsigned long long flags,
                                                            enum cudaDriverEntryPointQueryResult *st) {
  return entry_point(symbol, fn, version, flags, st, true);
}

/* ---- managed memory, stream capture and graphs -------------------------------------- */

RT_EXPORT cudaError_t cudaMallocManaged(void **p, size_t size, unsigned int flags) {
  DRIVER(false);
  if (!p) return ret(cudaErrorInvalidValue);
  CUdeviceptr dp;
  CUresult r = d->alloc_managed(&dp, size, flags);
  if (!r) *p = (void *)(uintptr_t)dp;
  return ret(to_rt(r));
}

static cudaError_t begin_capture(cudaStream_t s, enum cudaStreamCaptureMode mode, bool ptsz) {
  DRIVER(ptsz);
  return ret(to_rt(d->begin_capture((CUstream)s, (CUstreamCaptureMode)mode)));
}
RT_EXPORT cudaError_t cudaStreamBeginCapture(cudaStream_t s, enum cudaStreamCaptureMode mode) {
  return begin_capture(s, mode, false);
}
RT_EXPORT cudaError_t cudaStreamBeginCapture_ptsz(cudaStream_t s, enum cudaStreamCaptureMode mode) {
  return begin_capture(s, mode, true);
}

static cudaError_t end_capture(cudaStream_t s, cudaGraph_t *g, bool ptsz) {
  DRIVER(ptsz);
  return ret(to_rt(d->end_capture((CUstream)s, (CUgraph *)g)));
}
RT_EXPORT cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *g) { return end_capture(s, g, false); }
RT_EXPORT cudaError_t cudaStreamEndCapture_ptsz(cudaStream_t s, cudaGraph_t *g) { return end_capture(s, g, true); }

RT_EXPORT cudaError_t cudaGraphInstantiate(cudaGraphExec_t *e, cudaGraph_t g, unsigned long long flags) {
  DRIVER(false);
  return ret(to_rt(d->instantiate((CUgraphExec *)e, (CUgraph)g, flags)));
}

static cudaError_t graph_launch(cudaGraphExec_t e, cudaStream_t s, bool ptsz) {
  DRIVER(ptsz);
  return ret(to_rt(d->graph_launch((CUgraphExec)e, (CUstream)s)));
}
RT_EXPORT cudaError_t cudaGraphLaunch(cudaGraphExec_t e, cudaStream_t s) { return graph_launch(e, s, false); }
RT_EXPORT cudaError_t cudaGraphLaunch_ptsz(cudaGraphExec_t e, cudaStream_t s) { return graph_launch(e, s, true); }

RT_EXPORT cudaError_t cudaGraphExecDestroy(cudaGraphExec_t e) {
  DRIVER(false);
  return ret(to_rt(d->exec_destroy((CUgraphExec)e)));
}
RT_EXPORT cudaError_t cudaGraphDestroy(cudaGraph_t g) {
  DRIVER(false);
  return ret(to_rt(d->graph_destroy((CUgraph)g)));
}
