/* cuGetProcAddress(_v2): resolves (symbol, cudaVersion, flags) to the exact ABI, as the
 * CUDA 13 driver documents: the newest variant introduced at or before cudaVersion, the
 * per-thread-stream variant when the flags ask for it, NULL with a status when none. */
#include "sim.h"

#include <string.h>

CUresult cuStreamBeginCapture_v2_ptsz(CUstream s, CUstreamCaptureMode mode);
CUresult cuStreamEndCapture_ptsz(CUstream s, CUgraph *graph);
CUresult cuGraphLaunch_ptsz(CUgraphExec exec, CUstream s);

typedef struct entry_s {
  const char *name;
  int version; /* the CUDA version that introduced this ABI */
  void *fn, *per_thread;
} entry_t;

#define E(name, version, fn) {name, version, (void *)(fn), NULL}
#define P(name, version, fn, pt) {name, version, (void *)(fn), (void *)(pt)}

static const entry_t table[] = {
    E("cuInit", 2000, cuInit), E("cuDriverGetVersion", 2020, cuDriverGetVersion),
    E("cuDeviceGet", 2000, cuDeviceGet), E("cuDeviceGetCount", 2000, cuDeviceGetCount),
    E("cuDeviceGetName", 2000, cuDeviceGetName), E("cuDeviceTotalMem", 3020, cuDeviceTotalMem_v2),
    E("cuDeviceGetAttribute", 2000, cuDeviceGetAttribute),
    E("cuDevicePrimaryCtxRetain", 7000, cuDevicePrimaryCtxRetain),
    E("cuDevicePrimaryCtxRelease", 11000, cuDevicePrimaryCtxRelease_v2),
    E("cuCtxSetCurrent", 4000, cuCtxSetCurrent), E("cuCtxGetCurrent", 4000, cuCtxGetCurrent),
    E("cuCtxGetDevice", 2000, cuCtxGetDevice), E("cuCtxGetDevice", 13000, cuCtxGetDevice_v2),
    E("cuCtxSynchronize", 2000, cuCtxSynchronize), E("cuCtxSynchronize", 13000, cuCtxSynchronize_v2),
    E("cuDeviceCanAccessPeer", 4000, cuDeviceCanAccessPeer), E("cuCtxEnablePeerAccess", 4000, cuCtxEnablePeerAccess),
    E("cuCtxDisablePeerAccess", 4000, cuCtxDisablePeerAccess),
    E("cuPointerGetAttribute", 4000, cuPointerGetAttribute), E("cuPointerGetAttributes", 7000, cuPointerGetAttributes),
    E("cuMemcpyPeer", 4000, cuMemcpyPeer), E("cuMemcpyPeerAsync", 4000, cuMemcpyPeerAsync),
    E("cuIpcGetMemHandle", 4010, cuIpcGetMemHandle), E("cuIpcOpenMemHandle", 4010, cuIpcOpenMemHandle),
    E("cuIpcOpenMemHandle", 11000, cuIpcOpenMemHandle_v2),
    E("cuIpcCloseMemHandle", 4010, cuIpcCloseMemHandle),
    E("cuIpcGetEventHandle", 4010, cuIpcGetEventHandle), E("cuIpcOpenEventHandle", 4010, cuIpcOpenEventHandle),
    E("cuMemExportToShareableHandle", 10020, cuMemExportToShareableHandle),
    E("cuMemImportFromShareableHandle", 10020, cuMemImportFromShareableHandle),
    E("cuGetErrorString", 6000, cuGetErrorString), E("cuGetErrorName", 6000, cuGetErrorName),
    E("cuMemAlloc", 3020, cuMemAlloc_v2), E("cuMemFree", 3020, cuMemFree_v2),
    E("cuMemGetInfo", 3020, cuMemGetInfo_v2),
    P("cuMemAllocAsync", 11020, cuMemAllocAsync, cuMemAllocAsync_ptsz),
    P("cuMemFreeAsync", 11020, cuMemFreeAsync, cuMemFreeAsync_ptsz),
    E("cuMemHostAlloc", 2020, cuMemHostAlloc), E("cuMemAllocHost", 3020, cuMemAllocHost_v2),
    E("cuMemFreeHost", 2000, cuMemFreeHost),
    P("cuMemcpyHtoD", 3020, cuMemcpyHtoD_v2, cuMemcpyHtoD_v2_ptds),
    P("cuMemcpyDtoH", 3020, cuMemcpyDtoH_v2, cuMemcpyDtoH_v2_ptds),
    P("cuMemcpyDtoD", 3020, cuMemcpyDtoD_v2, cuMemcpyDtoD_v2_ptds),
    P("cuMemcpyHtoDAsync", 3020, cuMemcpyHtoDAsync_v2, cuMemcpyHtoDAsync_v2_ptsz),
    P("cuMemcpyDtoHAsync", 3020, cuMemcpyDtoHAsync_v2, cuMemcpyDtoHAsync_v2_ptsz),
    P("cuMemcpyDtoDAsync", 3020, cuMemcpyDtoDAsync_v2, cuMemcpyDtoDAsync_v2_ptsz),
    P("cuMemcpy", 4000, cuMemcpy, cuMemcpy_ptds),
    P("cuMemcpyAsync", 4000, cuMemcpyAsync, cuMemcpyAsync_ptsz),
    P("cuMemsetD8", 3020, cuMemsetD8_v2, cuMemsetD8_v2_ptds),
    P("cuMemsetD32", 3020, cuMemsetD32_v2, cuMemsetD32_v2_ptds),
    P("cuMemsetD8Async", 3020, cuMemsetD8Async, cuMemsetD8Async_ptsz),
    P("cuMemsetD32Async", 3020, cuMemsetD32Async, cuMemsetD32Async_ptsz),
    E("cuStreamCreate", 2000, cuStreamCreate),
    E("cuStreamCreateWithPriority", 5050, cuStreamCreateWithPriority),
    E("cuStreamGetDevice", 12080, cuStreamGetDevice),
    E("cuStreamDestroy", 4000, cuStreamDestroy_v2),
    P("cuStreamSynchronize", 2000, cuStreamSynchronize, cuStreamSynchronize_ptsz),
    P("cuStreamQuery", 2000, cuStreamQuery, cuStreamQuery_ptsz),
    P("cuStreamWaitEvent", 3020, cuStreamWaitEvent, cuStreamWaitEvent_ptsz),
    P("cuStreamIsCapturing", 10000, cuStreamIsCapturing, cuStreamIsCapturing_ptsz),
    E("cuEventCreate", 2000, cuEventCreate), E("cuEventDestroy", 4000, cuEventDestroy_v2),
    P("cuEventRecord", 2000, cuEventRecord, cuEventRecord_ptsz),
    E("cuEventSynchronize", 2000, cuEventSynchronize), E("cuEventQuery", 2000, cuEventQuery),
    E("cuEventElapsedTime", 2000, cuEventElapsedTime),
    E("cuEventElapsedTime", 12080, cuEventElapsedTime_v2),
    P("cuLaunchKernel", 4000, cuLaunchKernel, cuLaunchKernel_ptsz),
    P("cuLaunchKernelEx", 11060, cuLaunchKernelEx, cuLaunchKernelEx_ptsz),
    P("cuLaunchCooperativeKernel", 9000, cuLaunchCooperativeKernel, cuLaunchCooperativeKernel_ptsz),
    E("cuFuncGetParamInfo", 12040, cuFuncGetParamInfo),
    E("cuKernelGetParamInfo", 12040, cuKernelGetParamInfo),
    E("cuFuncGetName", 12030, cuFuncGetName), E("cuKernelGetFunction", 12000, cuKernelGetFunction),
    E("cuMemAddressReserve", 10020, cuMemAddressReserve),
    E("cuMemAddressFree", 10020, cuMemAddressFree), E("cuMemCreate", 10020, cuMemCreate),
    E("cuMemRelease", 10020, cuMemRelease), E("cuMemMap", 10020, cuMemMap),
    E("cuMemUnmap", 10020, cuMemUnmap), E("cuMemSetAccess", 10020, cuMemSetAccess),
    E("cuMemGetAllocationGranularity", 10020, cuMemGetAllocationGranularity),
    E("cuGetProcAddress", 11030, cuGetProcAddress), E("cuGetProcAddress", 12000, cuGetProcAddress_v2),
    E("cuMemAllocManaged", 6000, cuMemAllocManaged),
    P("cuStreamBeginCapture", 10000, cuStreamBeginCapture, cuStreamBeginCapture_ptsz),
    P("cuStreamBeginCapture", 10010, cuStreamBeginCapture_v2, cuStreamBeginCapture_v2_ptsz),
    P("cuStreamEndCapture", 10000, cuStreamEndCapture, cuStreamEndCapture_ptsz),
    E("cuGraphInstantiateWithFlags", 11040, cuGraphInstantiateWithFlags),
    P("cuGraphLaunch", 10000, cuGraphLaunch, cuGraphLaunch_ptsz),
    E("cuGraphExecDestroy", 10000, cuGraphExecDestroy), E("cuGraphDestroy", 10000, cuGraphDestroy),
    E("simcuRegisterKernel", 2000, simcuRegisterKernel),
};

#undef E
#undef P

static CUresult resolve(const char *symbol, void **pfn, int version, cuuint64_t flags,
                        CUdriverProcAddressQueryResult *status) {
  const cuuint64_t known = CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
  if (!symbol || !pfn || (flags & ~known)) return CUDA_ERROR_INVALID_VALUE;
  if (version > SIM_DRIVER_VERSION) return CUDA_ERROR_INVALID_VALUE;
  const entry_t *best = NULL;
  bool named = false;
  for (size_t i = 0; i < sizeof table / sizeof *table; i++) {
    if (strcmp(table[i].name, symbol)) continue;
    named = true;
    if (table[i].version <= version && (!best || table[i].version > best->version)) best = &table[i];
  }
  *pfn = NULL;
  if (!best) {
    if (status) *status = named ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return CUDA_SUCCESS;
  }
  bool per_thread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) && version >= 7000;
  *pfn = per_thread && best->per_thread ? best->per_thread : best->fn;
  if (status) *status = CU_GET_PROC_ADDRESS_SUCCESS;
  return CUDA_SUCCESS;
}

/* cudart 12 and 13 call this before cuInit, so it needs no initialisation. */
SIM_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                        cuuint64_t flags, CUdriverProcAddressQueryResult *status) {
  SIM_CALLED();
  return resolve(symbol, pfn, cudaVersion, flags, status);
}

SIM_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                     cuuint64_t flags) {
  SIM_CALLED();
  return resolve(symbol, pfn, cudaVersion, flags, NULL);
}
