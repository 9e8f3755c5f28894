/* Init, the one device, its primary context, and error strings. Like the real driver,
 * calls before cuInit fail with CUDA_ERROR_NOT_INITIALIZED and calls that need a
 * context fail with CUDA_ERROR_INVALID_CONTEXT when none is current. */
#include "sim.h"

#include <string.h>

struct CUctx_st {
  uint32_t magic;
  int retained;
};
#define SIM_CTX_MAGIC 0x43545854u

static struct CUctx_st primary = {SIM_CTX_MAGIC, 0};
static __thread CUcontext current;

CUresult sim_ctx_check(void) {
  if (!sim.initialized || sim.forked) return CUDA_ERROR_NOT_INITIALIZED;
  return current ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

SIM_EXPORT CUresult cuInit(unsigned int flags) {
  SIM_CALLED();
  if (flags) return CUDA_ERROR_INVALID_VALUE;
  if (sim.forked) return CUDA_ERROR_NOT_INITIALIZED;
  sim_lazy_init();
  sim.initialized = true;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDriverGetVersion(int *version) {
  SIM_CALLED();
  if (!version) return CUDA_ERROR_INVALID_VALUE;
  *version = SIM_DRIVER_VERSION;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDeviceGetCount(int *count) {
  SIM_CALLED();
  if (!sim.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!count) return CUDA_ERROR_INVALID_VALUE;
  *count = 1;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDeviceGet(CUdevice *device, int ordinal) {
  SIM_CALLED();
  if (!sim.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  if (ordinal != 0) return CUDA_ERROR_INVALID_DEVICE;
  *device = 0;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice dev) {
  SIM_CALLED();
  if (!sim.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (dev != 0) return CUDA_ERROR_INVALID_DEVICE;
  snprintf(name, (size_t)len, "simcuda (simulated sm_90)");
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev) {
  SIM_CALLED();
  if (!sim.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!bytes) return CUDA_ERROR_INVALID_VALUE;
  if (dev != 0) return CUDA_ERROR_INVALID_DEVICE;
  *bytes = sim.capacity;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDeviceGetAttribute(int *value, CUdevice_attribute attrib, CUdevice dev) {
  SIM_CALLED();
  if (!sim.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!value) return CUDA_ERROR_INVALID_VALUE;
  if (dev != 0) return CUDA_ERROR_INVALID_DEVICE;
  switch (attrib) {
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *value = 9; break;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *value = 0; break;
  case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *value = 132; break;
  case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *value = 1024; break;
  case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *value = 32; break;
  case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: *value = 1; break;
  case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: *value = 1; break;
  case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: *value = 1; break;
  default: return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) {
  SIM_CALLED();
  if (!sim.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  if (dev != 0) return CUDA_ERROR_INVALID_DEVICE;
  pthread_mutex_lock(&sim.mu);
  primary.retained++;
  pthread_mutex_unlock(&sim.mu);
  *pctx = &primary;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  SIM_CALLED();
  if (!sim.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (dev != 0) return CUDA_ERROR_INVALID_DEVICE;
  pthread_mutex_lock(&sim.mu);
  if (primary.retained > 0) primary.retained--;
  pthread_mutex_unlock(&sim.mu);
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxSetCurrent(CUcontext ctx) {
  SIM_CALLED();
  if (!sim.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (ctx && ctx->magic != SIM_CTX_MAGIC) return CUDA_ERROR_INVALID_CONTEXT;
  current = ctx;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxGetCurrent(CUcontext *pctx) {
  SIM_CALLED();
  if (!sim.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!pctx) return CUDA_ERROR_INVALID_VALUE;
  *pctx = current;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxGetDevice(CUdevice *device) {
  SIM_CALLED();
  CUresult rc = sim_ctx_check();
  if (rc) return rc;
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  *device = 0;
  return CUDA_SUCCESS;
}

/* CUDA 13's form takes the context explicitly (NULL: the current one). */
SIM_EXPORT CUresult cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx) {
  SIM_CALLED();
  if (!sim.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!ctx && !current) return CUDA_ERROR_INVALID_CONTEXT;
  if (ctx && ctx->magic != SIM_CTX_MAGIC) return CUDA_ERROR_INVALID_CONTEXT;
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  *device = 0;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxSynchronize(void) {
  SIM_CALLED();
  CUresult rc = sim_ctx_check();
  if (rc) return rc;
  if (sim_capture_forbids()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  sim_device_sync();
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxSynchronize_v2(CUcontext ctx) {
  SIM_CALLED();
  if (!sim.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if ((!ctx && !current) || (ctx && ctx->magic != SIM_CTX_MAGIC)) return CUDA_ERROR_INVALID_CONTEXT;
  sim_device_sync();
  return CUDA_SUCCESS;
}

static const struct {
  CUresult code;
  const char *name, *text;
} errors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
    {CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
};

SIM_EXPORT CUresult cuGetErrorString(CUresult error, const char **str) {
  SIM_CALLED();
  if (!str) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < sizeof errors / sizeof *errors; i++)
    if (errors[i].code == error) return *str = errors[i].text, CUDA_SUCCESS;
  *str = NULL;
  return CUDA_ERROR_INVALID_VALUE;
}

SIM_EXPORT CUresult cuGetErrorName(CUresult error, const char **str) {
  SIM_CALLED();
  if (!str) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < sizeof errors / sizeof *errors; i++)
    if (errors[i].code == error) return *str = errors[i].name, CUDA_SUCCESS;
  *str = NULL;
  return CUDA_ERROR_INVALID_VALUE;
}
