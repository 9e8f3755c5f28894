/* Pointer attributes: which device's memory an address is, and the allocation holding
 * it. cuPointerGetAttribute fails on an address that is no CUDA memory;
 * cuPointerGetAttributes fills defaults there instead (device -2, the rest 0), as
 * documented. */
#include "sim.h"

#include <string.h>

typedef struct where_s {
  bool device, host; /* device memory (cuMemAlloc or a VMM mapping); pinned host memory */
  uintptr_t start;
  size_t size;
  int ordinal;
} where_t;

static where_t locate(CUdeviceptr ptr) {
  where_t w = {0};
  pthread_mutex_lock(&sim.mu);
  w.device = sim_mem_range((uintptr_t)ptr, &w.start, &w.size, &w.ordinal);
  pthread_mutex_unlock(&sim.mu);
  w.host = !w.device && sim_host_pinned((const void *)(uintptr_t)ptr, 1);
  return w;
}

/* One attribute of the memory at ptr into data; CUDA_ERROR_INVALID_VALUE where it has none. */
static CUresult attribute(void *data, CUpointer_attribute a, CUdeviceptr ptr, const where_t *w) {
  if (!w->device && !(w->host && a == CU_POINTER_ATTRIBUTE_MEMORY_TYPE)) return CUDA_ERROR_INVALID_VALUE;
  switch (a) {
  case CU_POINTER_ATTRIBUTE_MEMORY_TYPE: *(unsigned *)data = w->device ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST; break;
  case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: *(int *)data = w->ordinal; break;
  case CU_POINTER_ATTRIBUTE_CONTEXT: *(CUcontext *)data = sim_primary(w->ordinal); break;
  case CU_POINTER_ATTRIBUTE_DEVICE_POINTER: *(CUdeviceptr *)data = ptr; break;
  case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR: *(CUdeviceptr *)data = (CUdeviceptr)w->start; break;
  case CU_POINTER_ATTRIBUTE_RANGE_SIZE: *(size_t *)data = w->size; break;
  case CU_POINTER_ATTRIBUTE_IS_MANAGED: *(bool *)data = false; break;
  default: return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuPointerGetAttribute(void *data, CUpointer_attribute a, CUdeviceptr ptr) {
  SIM_CALLED();
  if (!sim.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!data) return CUDA_ERROR_INVALID_VALUE;
  where_t w = locate(ptr);
  return attribute(data, a, ptr, &w);
}

static size_t attribute_size(CUpointer_attribute a) {
  switch (a) {
  case CU_POINTER_ATTRIBUTE_MEMORY_TYPE: return sizeof(unsigned);
  case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL: return sizeof(int);
  case CU_POINTER_ATTRIBUTE_IS_MANAGED: return sizeof(bool);
  case CU_POINTER_ATTRIBUTE_RANGE_SIZE: return sizeof(size_t);
  default: return sizeof(void *);
  }
}

SIM_EXPORT CUresult cuPointerGetAttributes(unsigned int n, CUpointer_attribute *attrs, void **data, CUdeviceptr ptr) {
  SIM_CALLED();
  if (!sim.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!n || !attrs || !data) return CUDA_ERROR_INVALID_VALUE;
  for (unsigned i = 0; i < n; i++)
    if (!data[i]) return CUDA_ERROR_INVALID_VALUE;
  where_t w = locate(ptr);
  for (unsigned i = 0; i < n; i++) {
    if (!attribute(data[i], attrs[i], ptr, &w)) continue;
    memset(data[i], 0, attribute_size(attrs[i]));
    if (attrs[i] == CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL) *(int *)data[i] = -2;
  }
  return CUDA_SUCCESS;
}
