/* Init, the devices (SIMCUDA_DEVICES, each of SIMCUDA_MEMORY), their primary contexts,
 * and error strings. Like the real driver, calls before cuInit fail with
 * CUDA_ERROR_NOT_INITIALIZED, calls that need a context fail with
 * CUDA_ERROR_INVALID_CONTEXT when none is current, and a device ordinal past the last
 * with CUDA_ERROR_INVALID_DEVICE. */
#include "sim.h"

#include <string.h>

struct CUctx_st {
  int retained, device;
};

#define P(d) {0, d}
static struct CUctx_st primary[SIM_MAX_DEVICES] = {P(0), P(1), P(2), P(3), P(4), P(5), P(6), P(7)};
#undef P
static __thread CUcontext current;

CUresult sim_ctx_check(void) {
  if (!sim.initialized || sim.forked) return CUDA_ERROR_NOT_INITIALIZED;
  return current ? CUDA_SUCCESS : CUDA_ERROR_INVALID_CONTEXT;
}

int sim_device(void) { return current ? current->device : 0; }

CUcontext sim_primary(int device) { return &primary[device]; }

/* Only the primary contexts exist: a handle is valid when it is one of them. */
bool sim_ctx_valid(CUcontext c, int *device) {
  for (int d = 0; d < sim.ndevices; d++)
    if (c == &primary[d]) return *device = d, true;
  return false;
}

static bool bad_device(CUdevice dev) { return dev < 0 || dev >= sim.ndevices; }

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
  *count = sim.ndevices;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDeviceGet(CUdevice *device, int ordinal) {
  SIM_CALLED();
  if (!sim.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  if (bad_device(ordinal)) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice dev) {
  SIM_CALLED();
  if (!sim.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
  if (bad_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  snprintf(name, (size_t)len, "simcuda (simulated sm_90)");
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev) {
  SIM_CALLED();
  if (!sim.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!bytes) return CUDA_ERROR_INVALID_VALUE;
  if (bad_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  *bytes = sim.capacity;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDeviceGetAttribute(int *value, CUdevice_attribute attrib, CUdevice dev) {
  SIM_CALLED();
  if (!sim.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!value) return CUDA_ERROR_INVALID_VALUE;
  if (bad_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
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
  if (bad_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  pthread_mutex_lock(&sim.mu);
  primary[dev].retained++;
  pthread_mutex_unlock(&sim.mu);
  *pctx = &primary[dev];
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev) {
  SIM_CALLED();
  if (!sim.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (bad_device(dev)) return CUDA_ERROR_INVALID_DEVICE;
  pthread_mutex_lock(&sim.mu);
  if (primary[dev].retained > 0) primary[dev].retained--;
  pthread_mutex_unlock(&sim.mu);
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxSetCurrent(CUcontext ctx) {
  SIM_CALLED();
  if (!sim.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  int d;
  if (ctx && !sim_ctx_valid(ctx, &d)) return CUDA_ERROR_INVALID_CONTEXT;
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
  *device = current->device;
  return CUDA_SUCCESS;
}

/* CUDA 13's form takes the context explicitly (NULL: the current one). */
SIM_EXPORT CUresult cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx) {
  SIM_CALLED();
  if (!sim.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  int d = current ? current->device : 0;
  if ((!ctx && !current) || (ctx && !sim_ctx_valid(ctx, &d))) return CUDA_ERROR_INVALID_CONTEXT;
  if (!device) return CUDA_ERROR_INVALID_VALUE;
  *device = d;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxSynchronize(void) {
  SIM_CALLED();
  CUresult rc = sim_ctx_check();
  if (rc) return rc;
  if (sim_capture_forbids()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  sim_ctx_sync(current->device);
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxSynchronize_v2(CUcontext ctx) {
  SIM_CALLED();
  if (!sim.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  int d;
  if ((!ctx && !current) || (ctx && !sim_ctx_valid(ctx, &d))) return CUDA_ERROR_INVALID_CONTEXT;
  sim_ctx_sync(ctx ? d : current->device);
  return CUDA_SUCCESS;
}

/* ---- peer access: per device pair (only primary contexts exist) -------------------- */

SIM_EXPORT CUresult cuDeviceCanAccessPeer(int *can, CUdevice dev, CUdevice peer) {
  SIM_CALLED();
  if (!sim.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!can) return CUDA_ERROR_INVALID_VALUE;
  if (bad_device(dev) || bad_device(peer)) return CUDA_ERROR_INVALID_DEVICE;
  *can = dev != peer;
  return CUDA_SUCCESS;
}

/* The current context's device may use peer's cuMemAlloc memory from now on (VMM memory
 * is opened by cuMemSetAccess only, as on the real driver). */
static CUresult set_peer(CUcontext peer, bool on) {
  CUresult rc = sim_ctx_check();
  int d;
  if (rc) return rc;
  if (!sim_ctx_valid(peer, &d)) return CUDA_ERROR_INVALID_CONTEXT;
  if (d == current->device) return on ? CUDA_ERROR_INVALID_DEVICE : CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
  pthread_mutex_lock(&sim.mu);
  bool *p = &sim.peer[current->device][d];
  rc = *p == on ? (on ? CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED : CUDA_ERROR_PEER_ACCESS_NOT_ENABLED) : CUDA_SUCCESS;
  *p = on;
  pthread_mutex_unlock(&sim.mu);
  return rc;
}

SIM_EXPORT CUresult cuCtxEnablePeerAccess(CUcontext peer, unsigned int flags) {
  SIM_CALLED();
  return flags ? CUDA_ERROR_INVALID_VALUE : set_peer(peer, true);
}

SIM_EXPORT CUresult cuCtxDisablePeerAccess(CUcontext peer) {
  SIM_CALLED();
  return set_peer(peer, false);
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
    {CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED, "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED",
     "peer access is already enabled"},
    {CUDA_ERROR_PEER_ACCESS_NOT_ENABLED, "CUDA_ERROR_PEER_ACCESS_NOT_ENABLED", "peer access has not been enabled"},
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
