#include "gpu.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>

pa_cu_t pa_cu;

pa_dlsym_fn pa_real_dlsym(void) {
  static pa_dlsym_fn fn;
  if (!fn) fn = (pa_dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
  if (!fn) fn = (pa_dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
  return fn;
}

void *pa_gpu_sym(const char *name) {
  return pa_gpu_load() ? pa_real_dlsym()(pa_cu.lib, name) : NULL;
}

const char *pa_gpu_error_name(int rc) {
  const char *name = NULL;
  if (pa_cu.GetErrorName && pa_cu.GetErrorName((CUresult)rc, &name)) name = NULL;
  return name ? name : "an unknown CUresult";
}

#define RESOLVE(field, name) pa_cu.field = (__typeof__(pa_cu.field))ds(lib, name)

/* Only a driver the program loaded itself: planalloc never brings libcuda into a process
 * (a "cu..." dlsym may come from anything, curl included). */
static void load(void) {
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  pa_dlsym_fn ds = pa_real_dlsym();
  if (!lib || !ds) return;
  RESOLVE(CtxGetDevice, "cuCtxGetDevice");
  RESOLVE(CtxSynchronize, "cuCtxSynchronize");
  RESOLVE(CtxGetCurrent, "cuCtxGetCurrent");
  RESOLVE(CtxSetCurrent, "cuCtxSetCurrent");
  RESOLVE(CtxSynchronize_v2, "cuCtxSynchronize_v2");
  RESOLVE(DeviceGetCount, "cuDeviceGetCount");
  RESOLVE(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  RESOLVE(StreamGetDevice, "cuStreamGetDevice");
  RESOLVE(PointerGetAttribute, "cuPointerGetAttribute");
  RESOLVE(DeviceTotalMem, "cuDeviceTotalMem_v2");
  RESOLVE(MemAddressReserve, "cuMemAddressReserve");
  RESOLVE(MemAddressFree, "cuMemAddressFree");
  RESOLVE(MemCreate, "cuMemCreate");
  RESOLVE(MemRelease, "cuMemRelease");
  RESOLVE(MemMap, "cuMemMap");
  RESOLVE(MemUnmap, "cuMemUnmap");
  RESOLVE(MemSetAccess, "cuMemSetAccess");
  RESOLVE(MemGetAllocationGranularity, "cuMemGetAllocationGranularity");
  RESOLVE(FuncGetParamInfo, "cuFuncGetParamInfo");
  RESOLVE(KernelGetParamInfo, "cuKernelGetParamInfo");
  RESOLVE(StreamIsCapturing, "cuStreamIsCapturing");
  RESOLVE(StreamSynchronize, "cuStreamSynchronize");
  RESOLVE(EventCreate, "cuEventCreate");
  RESOLVE(EventRecord, "cuEventRecord");
  RESOLVE(EventQuery, "cuEventQuery");
  RESOLVE(EventElapsedTime, "cuEventElapsedTime");
  RESOLVE(EventSynchronize, "cuEventSynchronize");
  RESOLVE(EventDestroy, "cuEventDestroy_v2");
  RESOLVE(StreamWaitEvent, "cuStreamWaitEvent");
  RESOLVE(StreamCreate, "cuStreamCreate");
  RESOLVE(MemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
  RESOLVE(MemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
  RESOLVE(MemsetD8Async, "cuMemsetD8Async");
  RESOLVE(MemHostAlloc, "cuMemHostAlloc");
  RESOLVE(GetErrorName, "cuGetErrorName");
  pa_cu.lib = lib;
}


bool pa_gpu_load(void) {
  static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  static atomic_bool loaded;
  if (atomic_load_explicit(&loaded, memory_order_acquire)) return true;
  pthread_mutex_lock(&mu);
  if (!pa_cu.lib) load();
  if (pa_cu.lib) atomic_store_explicit(&loaded, true, memory_order_release);
  pthread_mutex_unlock(&mu);
  return pa_cu.lib != NULL;
}
