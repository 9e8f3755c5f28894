/* The virtual memory API with real remapping: a physical handle is a memfd, mapping it
 * mmaps that file at the reserved address, so data follows the handle and an address can
 * be backed by new memory. Physical memory counts against the capacity from cuMemCreate
 * until the handle is released and no longer mapped, as on the device. */
#include "sim.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define HANDLE_MAGIC 0x504859534943414cull

typedef struct phys_s {
  uint64_t magic;
  int fd;
  size_t size;
  int maps, device; /* device: whose memory (the prop's location) */
  bool released;
  bool exportable;  /* cuMemCreate asked for POSIX file descriptors */
  bool imported;    /* another handle's memory (a shareable handle): counted there, not here */
  struct phys_s *next_dead;
} phys_t;

typedef struct range_s {
  uintptr_t addr;
  size_t size;
  phys_t *phys; /* mappings only */
  uint8_t access; /* mappings only: the devices cuMemSetAccess opened it to, a bit each */
  bool backed;    /* mappings only: the handle's memory mapped at addr on the host (at the first access) */
  size_t offset;  /* mappings only: into the handle */
} range_t;

typedef struct ranges_s {
  range_t *r;
  size_t n, cap;
} ranges_t;

static ranges_t reserved, mapped; /* guarded by sim.mu */
/* Released handle records are kept for reuse, never freed: a stale handle from a hostile
 * or buggy caller then reads a dead record (magic 0) instead of freed memory. */
static phys_t *dead;

static bool push(ranges_t *v, range_t x) {
  if (v->n == v->cap) {
    size_t cap = v->cap ? 2 * v->cap : 64;
    range_t *r = realloc(v->r, cap * sizeof *r);
    if (!r) return false;
    v->r = r, v->cap = cap;
  }
  v->r[v->n++] = x;
  return true;
}

static void drop(ranges_t *v, size_t i) { v->r[i] = v->r[--v->n]; }

/* The mappings are kept in address order (they never overlap), so that a kernel's
 * pointer finds its mapping by binary search, as cuMemAlloc's blocks do: a scan of every
 * mapping per pointer charged a preload of a thousand pages 17 % of a launch-bound run
 * (GPT's replay), a host cost no GPU has. */
static size_t mapping_after(uintptr_t at) { /* the first mapping above at */
  size_t lo = 0, hi = mapped.n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (mapped.r[mid].addr <= at) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

static bool push_mapping(range_t x) {
  size_t i = mapping_after(x.addr);
  if (!push(&mapped, x)) return false;
  memmove(mapped.r + i + 1, mapped.r + i, (mapped.n - 1 - i) * sizeof *mapped.r);
  mapped.r[i] = x;
  return true;
}

static void drop_mapping(size_t i) {
  memmove(mapped.r + i, mapped.r + i + 1, (mapped.n - i - 1) * sizeof *mapped.r);
  mapped.n--;
}


static bool inside(uintptr_t a, size_t n, const range_t *r) {
  return a >= r->addr && a + n <= r->addr + r->size;
}

/* The mapping holding address at, or mapped.n. */
static size_t mapping_at(uintptr_t at) {
  size_t i = mapping_after(at);
  return i > 0 && at < mapped.r[i - 1].addr + mapped.r[i - 1].size ? i - 1 : mapped.n;
}

/* Mappings open to a device of mask cover the range, one or several side by side: the
 * real driver copies across the boundary of two mappings as across one. */
static bool covered(uintptr_t p, size_t len, uint8_t mask) {
  for (uintptr_t at = p, end = p + len; at < end;) {
    size_t i = mapping_at(at);
    if (i == mapped.n || !(mapped.r[i].access & mask)) return false;
    at = mapped.r[i].addr + mapped.r[i].size;
  }
  return true;
}

/* Whole mappings side by side cover [at, at + size) exactly: the range cuMemUnmap and
 * cuMemSetAccess take (several adjacent mappings are one call; a hole, or a part of one
 * mapping, is refused). */
static bool whole_mappings(uintptr_t at, size_t size) {
  size_t i = mapping_at(at);
  for (uintptr_t p = at, end = at + size; p < end; p += mapped.r[i++].size)
    if (i == mapped.n || mapped.r[i].addr != p || mapped.r[i].size > end - p) return false;
  return true;
}

bool sim_vmm_live(uintptr_t p, size_t len) { return covered(p, len, 0xff); }
bool sim_vmm_reachable(uintptr_t p, size_t len, int device) { return covered(p, len, (uint8_t)(1u << device)); }

bool sim_vmm_range(uintptr_t p, uintptr_t *start, size_t *size, int *device) {
  size_t i = mapping_at(p);
  if (i == mapped.n) return false;
  *start = mapped.r[i].addr, *size = mapped.r[i].size, *device = mapped.r[i].phys->device;
  return true;
}

static phys_t *as_phys(CUmemGenericAllocationHandle h) {
  phys_t *p = (phys_t *)(uintptr_t)h;
  return p && p->magic == HANDLE_MAGIC ? p : NULL;
}

static CUresult check_prop(const CUmemAllocationProp *prop) {
  if (!prop || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
      prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
      (prop->requestedHandleTypes & ~(unsigned)CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR))
    return CUDA_ERROR_INVALID_VALUE; /* of the shareable types, only POSIX descriptors here */
  return prop->location.id >= 0 && prop->location.id < sim.ndevices ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

SIM_EXPORT CUresult cuMemGetAllocationGranularity(size_t *granularity,
                                                  const CUmemAllocationProp *prop,
                                                  CUmemAllocationGranularity_flags option) {
  SIM_CALLED();
  if (!sim.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!granularity || (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM &&
                       option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))
    return CUDA_ERROR_INVALID_VALUE;
  CUresult rc = check_prop(prop);
  if (rc) return rc;
  *granularity = SIM_GRANULARITY;
  return CUDA_SUCCESS;
}

static void phys_free_locked(phys_t *p) {
  if (!p->imported) sim_account(p->device, -(int64_t)p->size);
  sim_pager_close(p->fd); /* its memory freed off the caller's thread */
  p->magic = 0;
  p->next_dead = dead, dead = p;
}

static phys_t *phys_new(void) {
  pthread_mutex_lock(&sim.mu);
  phys_t *p = dead;
  if (p) dead = p->next_dead;
  pthread_mutex_unlock(&sim.mu);
  if (!p && !(p = malloc(sizeof *p))) return NULL;
  memset(p, 0, sizeof *p);
  return p;
}

static void phys_discard(phys_t *p) {
  pthread_mutex_lock(&sim.mu);
  p->magic = 0, p->next_dead = dead, dead = p;
  pthread_mutex_unlock(&sim.mu);
}

SIM_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                                const CUmemAllocationProp *prop, unsigned long long flags) {
  SIM_CALLED();
  uint64_t t0 = sim_now_ns();
  CUresult rc = sim_ctx_check();
  if (rc) return rc;
  if (!handle || !size || size % SIM_GRANULARITY || flags) return CUDA_ERROR_INVALID_VALUE;
  if ((rc = check_prop(prop)) || (rc = sim_fault("cuMemCreate"))) return rc;
  phys_t *p = phys_new();
  if (!p) return CUDA_ERROR_OUT_OF_MEMORY;
  p->size = size, p->device = prop->location.id;
  p->exportable = prop->requestedHandleTypes & CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
  pthread_mutex_lock(&sim.mu);
  if (sim.in_use[p->device] + size > sim.capacity) rc = CUDA_ERROR_OUT_OF_MEMORY;
  else if ((p->fd = memfd_create("simcuda-physical", MFD_CLOEXEC)) < 0) rc = CUDA_ERROR_OUT_OF_MEMORY;
  else if (ftruncate(p->fd, (off_t)size)) close(p->fd), rc = CUDA_ERROR_OUT_OF_MEMORY;
  else sim_account(p->device, (int64_t)size), p->magic = HANDLE_MAGIC;
  pthread_mutex_unlock(&sim.mu);
  if (rc) return phys_discard(p), rc;
  *handle = (CUmemGenericAllocationHandle)(uintptr_t)p;
  sim_charge(SIM_COST_CREATE, 1, t0);
  return CUDA_SUCCESS;
}

/* A POSIX file descriptor of the handle's memory (its memfd, duplicated): another
 * process that receives it (SCM_RIGHTS, inheritance) imports the same bytes. Only for a
 * handle created asking for it (CUDA_ERROR_NOT_PERMITTED otherwise). */
SIM_EXPORT CUresult cuMemExportToShareableHandle(void *out, CUmemGenericAllocationHandle handle,
                                                 CUmemAllocationHandleType type, unsigned long long flags) {
  SIM_CALLED();
  CUresult rc = sim_ctx_check();
  if (rc) return rc;
  if (!out || flags) return CUDA_ERROR_INVALID_VALUE;
  if (type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) return CUDA_ERROR_NOT_SUPPORTED;
  pthread_mutex_lock(&sim.mu);
  phys_t *p = as_phys(handle);
  int fd = p && !p->released && p->exportable ? dup(p->fd) : -1;
  rc = !p || p->released ? CUDA_ERROR_INVALID_VALUE : !p->exportable ? CUDA_ERROR_NOT_PERMITTED
                                                     : fd < 0 ? CUDA_ERROR_OUT_OF_MEMORY : CUDA_SUCCESS;
  pthread_mutex_unlock(&sim.mu);
  if (!rc) *(int *)out = fd;
  return rc;
}

/* A handle of the memory behind a descriptor cuMemExportToShareableHandle gave (here or
 * in another process); it maps and releases like any, and counts against no capacity
 * here (its exporter's does). */
SIM_EXPORT CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle, void *os,
                                                   CUmemAllocationHandleType type) {
  SIM_CALLED();
  CUresult rc = sim_ctx_check();
  if (rc) return rc;
  if (!handle) return CUDA_ERROR_INVALID_VALUE;
  if (type != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) return CUDA_ERROR_NOT_SUPPORTED;
  int given = (int)(intptr_t)os;
  off_t size = given >= 0 ? lseek(given, 0, SEEK_END) : -1;
  if (size <= 0 || size % SIM_GRANULARITY) return CUDA_ERROR_INVALID_VALUE; /* no such memory */
  phys_t *p = phys_new();
  if (!p) return CUDA_ERROR_OUT_OF_MEMORY;
  p->size = (size_t)size, p->device = sim_device(), p->imported = true, p->exportable = true;
  if ((p->fd = fcntl(given, F_DUPFD_CLOEXEC, 0)) < 0) return phys_discard(p), CUDA_ERROR_OUT_OF_MEMORY;
  pthread_mutex_lock(&sim.mu);
  p->magic = HANDLE_MAGIC;
  pthread_mutex_unlock(&sim.mu);
  *handle = (CUmemGenericAllocationHandle)(uintptr_t)p;
  return CUDA_SUCCESS;
}

/* The memory goes once the last mapping of it is gone. */
SIM_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle) {
  SIM_CALLED();
  uint64_t t0 = sim_now_ns();
  CUresult rc = sim_ctx_check();
  if (rc || (rc = sim_fault("cuMemRelease"))) return rc;
  pthread_mutex_lock(&sim.mu);
  phys_t *p = as_phys(handle);
  if (!p || p->released) rc = CUDA_ERROR_INVALID_VALUE;
  else if ((p->released = true) && !p->maps) phys_free_locked(p);
  pthread_mutex_unlock(&sim.mu);
  if (!rc) sim_charge(SIM_COST_RELEASE, 1, t0);
  return rc;
}

/* First fit in the upper half of the device range. */
static uintptr_t find_space(size_t size, size_t align, uintptr_t hint) {
  uintptr_t end = sim.base + sim.size;
  if (hint) {
    bool free_there = hint % align == 0 && hint >= sim.vmm_base && hint + size <= end;
    for (size_t i = 0; free_there && i < reserved.n; i++)
      free_there = !sim_overlaps(hint, size, reserved.r[i].addr, reserved.r[i].size);
    if (free_there) return hint;
  }
  for (uintptr_t at = sim.vmm_base; at + size <= end;) {
    bool clash = false;
    for (size_t i = 0; i < reserved.n && !clash; i++)
      if (sim_overlaps(at, size, reserved.r[i].addr, reserved.r[i].size))
        clash = true, at = (reserved.r[i].addr + reserved.r[i].size + align - 1) / align * align;
    if (!clash) return at;
  }
  return 0;
}

uintptr_t sim_vmm_reserve(size_t len) {
  size_t size = (len + SIM_GRANULARITY - 1) / SIM_GRANULARITY * SIM_GRANULARITY;
  pthread_mutex_lock(&sim.mu);
  uintptr_t at = find_space(size, SIM_GRANULARITY, 0);
  if (at && !push(&reserved, (range_t){.addr = at, .size = size})) at = 0;
  pthread_mutex_unlock(&sim.mu);
  return at;
}

void sim_vmm_unreserve(uintptr_t at, size_t len) {
  mmap((void *)at, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
  pthread_mutex_lock(&sim.mu);
  for (size_t i = 0; i < reserved.n; i++)
    if (reserved.r[i].addr == at) {
      drop(&reserved, i);
      break;
    }
  pthread_mutex_unlock(&sim.mu);
}

SIM_EXPORT CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment,
                                        CUdeviceptr addr, unsigned long long flags) {
  SIM_CALLED();
  CUresult rc = sim_ctx_check();
  if (rc) return rc;
  if (!ptr || !size || size % SIM_GRANULARITY || flags || (alignment & (alignment - 1)))
    return CUDA_ERROR_INVALID_VALUE;
  size_t align = alignment > SIM_GRANULARITY ? alignment : SIM_GRANULARITY;
  pthread_mutex_lock(&sim.mu);
  uintptr_t at = find_space(size, align, (uintptr_t)addr);
  if (!at || !push(&reserved, (range_t){.addr = at, .size = size})) rc = CUDA_ERROR_OUT_OF_MEMORY;
  pthread_mutex_unlock(&sim.mu);
  if (!rc) *ptr = (CUdeviceptr)at;
  return rc;
}

SIM_EXPORT CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size) {
  SIM_CALLED();
  CUresult rc = sim_ctx_check();
  if (rc) return rc;
  rc = CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&sim.mu);
  for (size_t i = 0; i < reserved.n; i++) {
    if (reserved.r[i].addr != (uintptr_t)ptr || reserved.r[i].size != size) continue;
    bool in_use = false;
    for (size_t k = 0; k < mapped.n; k++)
      in_use |= sim_overlaps(mapped.r[k].addr, mapped.r[k].size, (uintptr_t)ptr, size);
    if (!in_use) drop(&reserved, i), rc = CUDA_SUCCESS;
    break;
  }
  pthread_mutex_unlock(&sim.mu);
  return rc;
}

static bool map_allowed(uintptr_t at, size_t size) {
  bool in_reservation = false;
  for (size_t i = 0; i < reserved.n; i++) in_reservation |= inside(at, size, &reserved.r[i]);
  for (size_t i = 0; i < mapped.n && in_reservation; i++)
    if (sim_overlaps(at, size, mapped.r[i].addr, mapped.r[i].size)) return false;
  return in_reservation;
}

SIM_EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                             CUmemGenericAllocationHandle handle, unsigned long long flags) {
  SIM_CALLED();
  uint64_t t0 = sim_now_ns();
  CUresult rc = sim_ctx_check();
  if (rc) return rc;
  uintptr_t at = (uintptr_t)ptr;
  if (!size || flags || at % SIM_GRANULARITY || size % SIM_GRANULARITY || offset % SIM_GRANULARITY)
    return CUDA_ERROR_INVALID_VALUE;
  if ((rc = sim_fault("cuMemMap"))) return rc;
  t0 = sim_mapping_begin(t0);
  pthread_mutex_lock(&sim.mu);
  phys_t *p = as_phys(handle);
  if (!p || p->released || offset + size > p->size || !map_allowed(at, size)) rc = CUDA_ERROR_INVALID_VALUE;
  else if (!push_mapping((range_t){at, size, p, 0, false, offset})) rc = CUDA_ERROR_OUT_OF_MEMORY;
  else p->maps++;
  pthread_mutex_unlock(&sim.mu);
  sim_mapping_end(SIM_COST_MAP, rc ? 0 : size / SIM_GRANULARITY, t0);
  return rc;
}

/* The real cuMemUnmap does not wait for work in flight (PyTorch's expandable segments
 * synchronise their stream before it for that reason): queued work that still uses the
 * range would fault. Such an unmap is reported (an error at exit, status 86 under
 * SIMCUDA_STRICT); the simulator then waits for that work so that it can go on. An
 * unmap nothing queued uses returns at once, as the real one does: waiting for the
 * device there would hide the host waits a caller must not make (and time them as
 * none). */
static void check_unused(uintptr_t at, size_t size) {
  char use[200];
  pthread_mutex_lock(&sim.mu);
  bool used = sim_queued_touches(at, size, use, sizeof use);
  pthread_mutex_unlock(&sim.mu);
  if (!used) return;
  char what[256];
  snprintf(what, sizeof what, "cuMemUnmap(0x%llx, %zu) under %s", (unsigned long long)at, size, use);
  sim_note_bad_unmap(what);
  sim_device_sync();
}

SIM_EXPORT CUresult cuMemUnmap(CUdeviceptr ptr, size_t size) {
  SIM_CALLED();
  uint64_t t0 = sim_now_ns();
  CUresult rc = sim_ctx_check();
  if (rc) return rc;
  uintptr_t at = (uintptr_t)ptr;
  if (!size || at % SIM_GRANULARITY || size % SIM_GRANULARITY) return CUDA_ERROR_INVALID_VALUE;
  if ((rc = sim_fault("cuMemUnmap"))) return rc;
  t0 = sim_mapping_begin(t0);
  check_unused(at, size);
  pthread_mutex_lock(&sim.mu);
  if (!whole_mappings(at, size)) rc = CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; !rc && i < mapped.n;) {
    if (!sim_overlaps(at, size, mapped.r[i].addr, mapped.r[i].size)) { i++; continue; }
    phys_t *p = mapped.r[i].phys;
    if (mapped.r[i].backed)
      mmap((void *)mapped.r[i].addr, mapped.r[i].size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
    drop_mapping(i);
    if (!--p->maps && p->released) phys_free_locked(p);
  }
  pthread_mutex_unlock(&sim.mu);
  sim_mapping_end(SIM_COST_UNMAP, rc ? 0 : size / SIM_GRANULARITY, t0);
  return rc;
}

/* The range's mappings not yet backed on the host get their handles' memory there (sim.mu
 * held). Here, not in cuMemMap: a mapping is of no use before its access is granted, and
 * the host's mmap took 16 us a page where the real cuMemMap takes 0.5 (charging that map
 * 30 times over: 22 % of GPT's replay without kernels); it fits in the 21.9 us this call
 * charges a page. false if the host refuses. */
static bool back(uintptr_t at, size_t size) {
  for (size_t i = mapping_at(at); i < mapped.n && mapped.r[i].addr < at + size; i++) {
    range_t *m = &mapped.r[i];
    if (m->backed) continue;
    if (mmap((void *)m->addr, m->size, PROT_NONE, MAP_SHARED | MAP_FIXED, m->phys->fd, (off_t)m->offset) == MAP_FAILED) return false;
    m->backed = true;
  }
  return true;
}

SIM_EXPORT CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc,
                                   size_t count) {
  SIM_CALLED();
  uint64_t t0 = sim_now_ns();
  CUresult rc = sim_ctx_check();
  if (rc) return rc;
  uint8_t grant = 0, revoke = 0;
  bool rw = false;
  if (!desc || !count || count > (size_t)sim.ndevices) return CUDA_ERROR_INVALID_VALUE;
  for (size_t k = 0; k < count; k++) {
    if (desc[k].location.type != CU_MEM_LOCATION_TYPE_DEVICE || (desc[k].flags != CU_MEM_ACCESS_FLAGS_PROT_NONE && desc[k].flags != CU_MEM_ACCESS_FLAGS_PROT_READ &&
                                                                   desc[k].flags != CU_MEM_ACCESS_FLAGS_PROT_READWRITE))
      return CUDA_ERROR_INVALID_VALUE;
    if (desc[k].location.id < 0 || desc[k].location.id >= sim.ndevices) return CUDA_ERROR_INVALID_DEVICE;
    uint8_t bit = (uint8_t)(1u << desc[k].location.id);
    if (desc[k].flags == CU_MEM_ACCESS_FLAGS_PROT_NONE) revoke |= bit;
    else grant |= bit, rw |= desc[k].flags == CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  }
  if ((rc = sim_fault("cuMemSetAccess"))) return rc;
  t0 = sim_mapping_begin(t0);
  uintptr_t at = (uintptr_t)ptr;
  pthread_mutex_lock(&sim.mu);
  if (!whole_mappings(at, size)) rc = CUDA_ERROR_INVALID_VALUE;
  else if (grant && !back(at, size)) rc = CUDA_ERROR_OUT_OF_MEMORY;
  else if (grant && mprotect((void *)at, size, rw ? PROT_READ | PROT_WRITE : PROT_READ)) rc = CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; !rc && i < mapped.n; i++)
    if (inside(mapped.r[i].addr, mapped.r[i].size, &(range_t){.addr = at, .size = size}))
      mapped.r[i].access = (uint8_t)((mapped.r[i].access & ~revoke) | grant);
  pthread_mutex_unlock(&sim.mu);
  if (!rc && rw) sim_pager_prefill(at, size); /* outside sim.mu: a racing unmap leaves PROT_NONE, which refuses harmlessly */
  sim_mapping_end(SIM_COST_ACCESS, rc ? 0 : size / SIM_GRANULARITY, t0);
  return rc;
}
