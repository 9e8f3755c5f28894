/* The only code that talks to the real CUDA driver: libcuda.so.1 is dlopened once and
 * its entry points resolved by their exported ABI names with the real dlsym, so calls
 * made from here never pass through planalloc's own hooks. */
#ifndef PLANALLOC_GPU_H
#define PLANALLOC_GPU_H

#include <cuda.h>
#include <cudaTypedefs.h>
#include <stdbool.h>
#include <stddef.h>

typedef void *(*pa_dlsym_fn)(void *, const char *);

/* The real entry points planalloc itself uses (exported names in comments). */
typedef struct pa_cu_s {
  void *lib;
  PFN_cuCtxGetDevice_v2000 CtxGetDevice;               /* cuCtxGetDevice */
  PFN_cuCtxSynchronize_v2000 CtxSynchronize;           /* cuCtxSynchronize */
  PFN_cuCtxGetCurrent_v4000 CtxGetCurrent;
  PFN_cuCtxSetCurrent_v4000 CtxSetCurrent;
  PFN_cuCtxSynchronize_v13000 CtxSynchronize_v2;       /* a named context's (CUDA 13), or NULL */
  PFN_cuDeviceGetCount_v2000 DeviceGetCount;
  PFN_cuDevicePrimaryCtxRetain_v7000 DevicePrimaryCtxRetain;
  PFN_cuStreamGetDevice_v12080 StreamGetDevice;        /* CUDA 12.8, or NULL */
  PFN_cuPointerGetAttribute_v4000 PointerGetAttribute;
  PFN_cuDeviceTotalMem_v3020 DeviceTotalMem;           /* cuDeviceTotalMem_v2 */
  PFN_cuMemAddressReserve_v10020 MemAddressReserve;
  PFN_cuMemAddressFree_v10020 MemAddressFree;
  PFN_cuMemCreate_v10020 MemCreate;
  PFN_cuMemRelease_v10020 MemRelease;
  PFN_cuMemMap_v10020 MemMap;
  PFN_cuMemUnmap_v10020 MemUnmap;
  PFN_cuMemSetAccess_v10020 MemSetAccess;
  PFN_cuMemGetAllocationGranularity_v10020 MemGetAllocationGranularity;
  PFN_cuFuncGetParamInfo_v12040 FuncGetParamInfo;
  PFN_cuKernelGetParamInfo_v12040 KernelGetParamInfo;
  PFN_cuStreamIsCapturing_v10000 StreamIsCapturing;    /* legacy-stream ABI */
  PFN_cuStreamSynchronize_v2000 StreamSynchronize;
  PFN_cuEventCreate_v2000 EventCreate;
  PFN_cuEventRecord_v2000 EventRecord;
  PFN_cuEventQuery_v2000 EventQuery;
  PFN_cuEventElapsedTime_v2000 EventElapsedTime;
  PFN_cuEventSynchronize_v2000 EventSynchronize;
  PFN_cuEventDestroy_v4000 EventDestroy;               /* cuEventDestroy_v2 */
  PFN_cuStreamWaitEvent_v3020 StreamWaitEvent;
  /* the budget's swap path */
  PFN_cuStreamCreate_v2000 StreamCreate;
  PFN_cuMemcpyDtoHAsync_v3020 MemcpyDtoHAsync;         /* cuMemcpyDtoHAsync_v2 */
  PFN_cuMemcpyHtoDAsync_v3020 MemcpyHtoDAsync;         /* cuMemcpyHtoDAsync_v2 */
  PFN_cuMemsetD8Async_v3020 MemsetD8Async;             /* poison, on the copy stream */
  PFN_cuMemHostAlloc_v2020 MemHostAlloc;
  PFN_cuGetErrorName_v6000 GetErrorName;               /* messages */
} pa_cu_t;

extern pa_cu_t pa_cu;

/* The C library's dlsym, never planalloc's. */
pa_dlsym_fn pa_real_dlsym(void);
/* Binds the driver the program loaded, once; false (try again later) while it has not
 * loaded one. Thread-safe; one atomic load once bound. */
bool pa_gpu_load(void);
/* The real driver's exported symbol, NULL if absent or no driver. */
void *pa_gpu_sym(const char *name);
/* The driver's name for rc (CUDA_ERROR_OUT_OF_MEMORY), for messages; never NULL. */
const char *pa_gpu_error_name(int rc);

#endif
