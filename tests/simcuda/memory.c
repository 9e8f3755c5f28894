/* cuMemAlloc and friends. Allocations are first fit in the lower half of the device
 * range, 256-byte aligned with sizes rounded to 512 (as the real allocator behaves),
 * counted against the capacity, and poisoned when freed so that a use after free
 * changes results. cuMemFree waits for the whole device first, as the real one does. */
#include "sim.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

typedef struct block_s {
  uintptr_t addr;
  size_t size;      /* rounded: what it occupies and counts against the capacity */
  size_t requested; /* what the program may touch */
  int device;       /* whose memory: the context's current at allocation */
  bool shareable;   /* by IPC: cuMemAlloc's, not a stream-ordered pool's */
} block_t;

static block_t *blocks; /* live allocations, sorted by address; guarded by sim.mu */
static size_t nblocks, capblocks;
static bool region_ready;
static void **hosts; /* pinned host allocations */
static size_t *host_sizes, nhosts, caphosts;

#define POISON 0xff /* all-ones floats are NaN: a read after free shows in a checksum */

static size_t find(uintptr_t p) { /* first block with addr > p */
  size_t lo = 0, hi = nblocks;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (blocks[mid].addr <= p) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* The block holding all of [p, p+len), or nblocks. */
static size_t holding(uintptr_t p, size_t len) {
  size_t i = find(p);
  return i > 0 && p + len <= blocks[i - 1].addr + blocks[i - 1].requested ? i - 1 : nblocks;
}

static bool imported(uintptr_t p, size_t len) {
  uintptr_t start;
  size_t size;
  int device;
  return sim_ipc_range(p, len, &start, &size, &device);
}

bool sim_mem_live(uintptr_t p, size_t len) {
  return holding(p, len) != nblocks || sim_vmm_live(p, len) || imported(p, len);
}

bool sim_mem_reachable(uintptr_t p, size_t len, int device) {
  size_t i = holding(p, len);
  if (i == nblocks) return sim_vmm_reachable(p, len, device) || imported(p, len); /* lazily peer-enabled */
  return blocks[i].device == device || sim.peer[device][blocks[i].device];
}

bool sim_mem_range(uintptr_t p, uintptr_t *start, size_t *size, int *device) {
  size_t i = holding(p, 1);
  if (i == nblocks) return sim_vmm_range(p, start, size, device) || sim_ipc_range(p, 1, start, size, device);
  *start = blocks[i].addr, *size = blocks[i].requested, *device = blocks[i].device;
  return true;
}

/* The allocations' half is one memfd, shared: another process opens a block's pages
 * through /proc/PID/fd (IPC, ipc.c), as a GPU's other processes map its memory. */
static int region_fd = -1;

static bool make_region(void) {
  if (region_ready) return true;
  size_t len = sim.vmm_base - sim.base;
  int fd = memfd_create("simcuda-device", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, (off_t)len) ||
      mmap((void *)sim.base, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED) {
    if (fd >= 0) close(fd);
    return false;
  }
  region_fd = fd;
  return region_ready = true;
}

bool sim_mem_ipc_source(uintptr_t p, int *fd, uint64_t *offset, size_t *size, int *device) {
  size_t i = holding(p, 1);
  if (i == nblocks || !blocks[i].shareable) return false;
  *fd = region_fd, *offset = blocks[i].addr - sim.base, *size = blocks[i].requested, *device = blocks[i].device;
  return true;
}

/* First fit over the gaps between live blocks. */
static uintptr_t place(size_t size, size_t *at) {
  uintptr_t cur = sim.base;
  for (size_t i = 0; i < nblocks; i++) {
    if (blocks[i].addr >= cur + size) return *at = i, cur;
    cur = blocks[i].addr + blocks[i].size;
  }
  *at = nblocks;
  return cur + size <= sim.vmm_base ? cur : 0;
}

static CUresult insert(uintptr_t p, size_t size, size_t requested, size_t at, int device, bool shareable) {
  if (nblocks == capblocks) {
    size_t cap = capblocks ? 2 * capblocks : 1024;
    block_t *b = realloc(blocks, cap * sizeof *b);
    if (!b) return CUDA_ERROR_OUT_OF_MEMORY;
    blocks = b, capblocks = cap;
  }
  memmove(blocks + at + 1, blocks + at, (nblocks - at) * sizeof *blocks);
  blocks[at] = (block_t){p, size, requested, device, shareable};
  nblocks++;
  return CUDA_SUCCESS;
}

static CUresult alloc_locked(CUdeviceptr *dptr, size_t bytesize, bool shareable) {
  size_t size = (bytesize + SIM_ROUND - 1) / SIM_ROUND * SIM_ROUND, at;
  int dev = sim_device();
  if (size < bytesize || sim.in_use[dev] + size > sim.capacity) return CUDA_ERROR_OUT_OF_MEMORY;
  if (!make_region()) return CUDA_ERROR_OUT_OF_MEMORY;
  uintptr_t p = place(size, &at);
  if (!p || insert(p, size, bytesize, at, dev, shareable)) return CUDA_ERROR_OUT_OF_MEMORY;
  sim_account(dev, (int64_t)size);
  *dptr = (CUdeviceptr)p;
  return CUDA_SUCCESS;
}

static CUresult alloc(CUdeviceptr *dptr, size_t bytesize) {
  uint64_t t0 = sim_now_ns();
  CUresult rc = sim_ctx_check();
  if (rc) return rc;
  if (!dptr || !bytesize) return CUDA_ERROR_INVALID_VALUE;
  if (sim_capture_forbids()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  if ((rc = sim_fault("cuMemAlloc"))) return rc;
  pthread_mutex_lock(&sim.mu);
  rc = alloc_locked(dptr, bytesize, true);
  pthread_mutex_unlock(&sim.mu);
  if (!rc) sim_charge(SIM_COST_ALLOC, 1, t0);
  return rc;
}

/* The block that starts exactly at p, or nblocks. */
static size_t exact(uintptr_t p) {
  size_t i = find(p);
  return i > 0 && blocks[i - 1].addr == p ? i - 1 : nblocks;
}

void sim_mem_release_now(uintptr_t p) {
  size_t i = exact(p);
  if (i == nblocks) return;
  memset((void *)blocks[i].addr, POISON, blocks[i].size);
  sim_account(blocks[i].device, -(int64_t)blocks[i].size);
  memmove(blocks + i, blocks + i + 1, (nblocks - i - 1) * sizeof *blocks);
  nblocks--;
}

static bool is_block(uintptr_t p) {
  pthread_mutex_lock(&sim.mu);
  bool ok = exact(p) != nblocks;
  pthread_mutex_unlock(&sim.mu);
  return ok;
}

SIM_EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize) { SIM_CALLED(); return alloc(dptr, bytesize); }

/* Managed memory is host-accessible anyway in the simulator; it counts like device
 * memory (no oversubscription). */
SIM_EXPORT CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags) {
  SIM_CALLED();
  if (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST) return CUDA_ERROR_INVALID_VALUE;
  return alloc(dptr, bytesize);
}

SIM_EXPORT CUresult cuMemFree_v2(CUdeviceptr dptr) {
  SIM_CALLED();
  CUresult rc = sim_ctx_check();
  if (rc) return rc;
  if (!dptr || !is_block((uintptr_t)dptr)) return CUDA_ERROR_INVALID_VALUE;
  if (sim_capture_forbids()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  sim_device_sync(); /* the buffer may still be in use by queued work, on any device */
  uint64_t t0 = sim_now_ns(); /* the call's own cost, after its wait */
  pthread_mutex_lock(&sim.mu);
  sim_mem_release_now((uintptr_t)dptr);
  pthread_mutex_unlock(&sim.mu);
  sim_charge(SIM_COST_FREE, 1, t0);
  return CUDA_SUCCESS;
}

/* Stream-ordered allocation is not recorded into graphs by the simulator: it is
 * refused on a capturing stream rather than done wrong. */
static CUresult alloc_async(CUdeviceptr *dptr, size_t bytesize, CUstream stream, bool ptsz) {
  CUresult rc = sim_ctx_check();
  if (rc) return rc;
  if (!sim_stream_valid(stream)) return CUDA_ERROR_INVALID_HANDLE;
  if (!dptr || !bytesize) return CUDA_ERROR_INVALID_VALUE;
  if (sim_stream(stream, ptsz)->capturing) return CUDA_ERROR_NOT_SUPPORTED;
  if ((rc = sim_fault("cuMemAllocAsync"))) return rc;
  pthread_mutex_lock(&sim.mu); /* usable by work queued on the stream after this call */
  rc = alloc_locked(dptr, bytesize, false);
  pthread_mutex_unlock(&sim.mu);
  return rc;
}

static CUresult free_async(CUdeviceptr dptr, CUstream stream, bool ptsz) {
  CUresult rc = sim_ctx_check();
  if (rc) return rc;
  if (!sim_stream_valid(stream)) return CUDA_ERROR_INVALID_HANDLE;
  if (!dptr || !is_block((uintptr_t)dptr)) return CUDA_ERROR_INVALID_VALUE;
  if (sim_stream(stream, ptsz)->capturing) return CUDA_ERROR_NOT_SUPPORTED;
  sim_op_t *op = sim_op_new(OP_FREE);
  if (!op) return CUDA_ERROR_OUT_OF_MEMORY;
  op->u.free.p = (uintptr_t)dptr;
  sim_enqueue(sim_stream(stream, ptsz), op); /* freed when the stream gets there */
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream s) {
  SIM_CALLED();
  return alloc_async(dptr, bytesize, s, false);
}
SIM_EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream s) {
  SIM_CALLED();
  return alloc_async(dptr, bytesize, s, true);
}
SIM_EXPORT CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream s) { SIM_CALLED(); return free_async(dptr, s, false); }
SIM_EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream s) { SIM_CALLED(); return free_async(dptr, s, true); }

SIM_EXPORT CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total) {
  SIM_CALLED();
  CUresult rc = sim_ctx_check();
  if (rc) return rc;
  if (!free_bytes || !total) return CUDA_ERROR_INVALID_VALUE;
  pthread_mutex_lock(&sim.mu);
  *free_bytes = sim.capacity - sim.in_use[sim_device()], *total = sim.capacity;
  pthread_mutex_unlock(&sim.mu);
  return CUDA_SUCCESS;
}

/* ---- pinned host memory ----------------------------------------------------- */

static CUresult host_alloc(void **pp, size_t bytesize) {
  CUresult rc = sim_ctx_check();
  if (rc) return rc;
  if (!pp || !bytesize) return CUDA_ERROR_INVALID_VALUE;
  if ((rc = sim_fault("cuMemHostAlloc"))) return rc;
  void *p = NULL;
  if (posix_memalign(&p, 4096, bytesize)) return CUDA_ERROR_OUT_OF_MEMORY;
  memset(p, 0, bytesize); /* page-locked memory is resident: no fault at a copy's first touch */
  pthread_mutex_lock(&sim.mu);
  if (nhosts == caphosts) {
    size_t cap = caphosts ? 2 * caphosts : 64;
    void **h = realloc(hosts, cap * sizeof *h);
    size_t *z = h ? realloc(host_sizes, cap * sizeof *z) : NULL;
    if (h) hosts = h;
    if (z) host_sizes = z, caphosts = cap;
    else rc = CUDA_ERROR_OUT_OF_MEMORY;
  }
  if (!rc) hosts[nhosts] = p, host_sizes[nhosts++] = bytesize;
  pthread_mutex_unlock(&sim.mu);
  if (rc) free(p);
  else *pp = p;
  return rc;
}

SIM_EXPORT CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int flags) {
  SIM_CALLED();
  if (flags & ~(unsigned)(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP |
                          CU_MEMHOSTALLOC_WRITECOMBINED))
    return CUDA_ERROR_INVALID_VALUE;
  return host_alloc(pp, bytesize);
}

SIM_EXPORT CUresult cuMemAllocHost_v2(void **pp, size_t bytesize) { SIM_CALLED(); return host_alloc(pp, bytesize); }

SIM_EXPORT CUresult cuMemFreeHost(void *p) {
  SIM_CALLED();
  CUresult rc = sim_ctx_check();
  if (rc) return rc;
  bool found = false;
  pthread_mutex_lock(&sim.mu);
  for (size_t i = 0; p && i < nhosts && !found; i++)
    if (hosts[i] == p) nhosts--, hosts[i] = hosts[nhosts], host_sizes[i] = host_sizes[nhosts], found = true;
  pthread_mutex_unlock(&sim.mu);
  if (!found) return CUDA_ERROR_INVALID_VALUE;
  free(p);
  return CUDA_SUCCESS;
}

bool sim_host_pinned(const void *p, size_t len) {
  uintptr_t a = (uintptr_t)p;
  bool pinned = false;
  pthread_mutex_lock(&sim.mu);
  for (size_t i = 0; i < nhosts && !pinned; i++)
    pinned = a >= (uintptr_t)hosts[i] && a + len <= (uintptr_t)hosts[i] + host_sizes[i];
  pthread_mutex_unlock(&sim.mu);
  return pinned;
}
