/* CUDA IPC across real processes: a handle names the exporting process, its device
 * memfd and the block's offset there; the importer opens that memfd through
 * /proc/PID/fd and maps the block's pages in its own device range, so both see the same
 * bytes (poison on the exporter's free included). As on the driver, only cuMemAlloc
 * memory has a handle: VMM mappings and stream-ordered pools' memory are refused with
 * CUDA_ERROR_INVALID_VALUE, and a process cannot open its own handle. A handle opened
 * twice maps once and counts; cuIpcCloseMemHandle unmaps at the last close. Imported
 * memory may be used by every device (CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS). */
#include "sim.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define IPC_MAGIC 0x43504953u /* "SIPC" */

typedef struct wire_s { /* the 64 bytes of a CUipcMemHandle */
  uint32_t magic;
  int32_t pid, fd, device;
  uint64_t offset, size;
} wire_t;

typedef struct import_s {
  pid_t pid;
  uint64_t offset, size;
  uintptr_t va, ptr;
  size_t len;
  int device, refs;
} import_t;

static import_t imports[64]; /* guarded by sim.mu */
static size_t nimports;

_Static_assert(sizeof(wire_t) <= CU_IPC_HANDLE_SIZE, "an IPC handle holds the wire form");

SIM_EXPORT CUresult cuIpcGetMemHandle(CUipcMemHandle *handle, CUdeviceptr dptr) {
  SIM_CALLED();
  CUresult rc = sim_ctx_check();
  if (rc) return rc;
  if (!handle) return CUDA_ERROR_INVALID_VALUE;
  wire_t w = {.magic = IPC_MAGIC, .pid = (int32_t)getpid()};
  int fd = -1, device = 0;
  pthread_mutex_lock(&sim.mu);
  bool ok = sim_mem_ipc_source((uintptr_t)dptr, &fd, &w.offset, &w.size, &device);
  pthread_mutex_unlock(&sim.mu);
  if (!ok) return CUDA_ERROR_INVALID_VALUE;
  w.fd = fd, w.device = device;
  memset(handle, 0, sizeof *handle);
  memcpy(handle->reserved, &w, sizeof w);
  return CUDA_SUCCESS;
}

static import_t *find_import(pid_t pid, uint64_t offset) {
  for (size_t i = 0; i < nimports; i++)
    if (imports[i].pid == pid && imports[i].offset == offset) return &imports[i];
  return NULL;
}

static import_t *import_at(uintptr_t ptr) {
  for (size_t i = 0; i < nimports; i++)
    if (imports[i].ptr == ptr) return &imports[i];
  return NULL;
}

/* The exporting process's descriptor fd, opened here (-1: the exporter is gone). */
static int open_exported(int32_t pid, int32_t fd) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)pid, (int)fd);
  return open(path, O_RDWR | O_CLOEXEC);
}

/* The exporter's pages mapped here, in a reservation of the device range. */
static CUresult map_import(const wire_t *w, import_t *im) {
  int fd = open_exported(w->pid, w->fd);
  if (fd < 0) return CUDA_ERROR_INVALID_HANDLE;
  uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), first = w->offset / page * page;
  im->len = (size_t)((w->offset + w->size - first + page - 1) / page * page);
  im->va = sim_vmm_reserve(im->len);
  CUresult rc = CUDA_SUCCESS;
  if (!im->va) rc = CUDA_ERROR_OUT_OF_MEMORY;
  else if (mmap((void *)im->va, im->len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, (off_t)first) == MAP_FAILED)
    sim_vmm_unreserve(im->va, im->len), rc = CUDA_ERROR_MAP_FAILED;
  close(fd);
  im->ptr = im->va + (w->offset - first);
  return rc;
}

static CUresult open_handle(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int flags) {
  CUresult rc = sim_ctx_check();
  if (rc) return rc;
  wire_t w;
  memcpy(&w, handle.reserved, sizeof w);
  if (!pdptr || flags != CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS || w.magic != IPC_MAGIC || !w.size) return CUDA_ERROR_INVALID_VALUE;
  if (w.pid == (int32_t)getpid()) return CUDA_ERROR_INVALID_CONTEXT; /* not in the exporting process */
  pthread_mutex_lock(&sim.mu);
  import_t *im = find_import(w.pid, w.offset);
  if (im) im->refs++, *pdptr = im->ptr;
  pthread_mutex_unlock(&sim.mu);
  if (im) return CUDA_SUCCESS;
  import_t fresh = {.pid = w.pid, .offset = w.offset, .size = w.size, .device = w.device, .refs = 1};
  if ((rc = map_import(&w, &fresh))) return rc;
  pthread_mutex_lock(&sim.mu);
  if (nimports < sizeof imports / sizeof *imports) imports[nimports++] = fresh;
  else rc = CUDA_ERROR_OUT_OF_MEMORY;
  pthread_mutex_unlock(&sim.mu);
  if (rc) return munmap((void *)fresh.va, fresh.len), sim_vmm_unreserve(fresh.va, fresh.len), rc;
  *pdptr = fresh.ptr;
  return CUDA_SUCCESS;
}

/* cuda.h names the CUDA 11 form (_v2); the CUDA 4.1 export stays, the same here. */
SIM_EXPORT CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int flags) {
  SIM_CALLED();
  return open_handle(pdptr, handle, flags);
}
SIM_EXPORT CUresult cuIpcOpenMemHandle(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int flags) {
  SIM_CALLED();
  return open_handle(pdptr, handle, flags);
}

SIM_EXPORT CUresult cuIpcCloseMemHandle(CUdeviceptr dptr) {
  SIM_CALLED();
  CUresult rc = sim_ctx_check();
  if (rc) return rc;
  sim_device_sync(); /* queued work may still read it */
  pthread_mutex_lock(&sim.mu);
  import_t *im = import_at((uintptr_t)dptr), gone = {0};
  if (im && !--im->refs) gone = *im, *im = imports[--nimports];
  pthread_mutex_unlock(&sim.mu);
  if (!im) return CUDA_ERROR_INVALID_VALUE;
  if (gone.va) sim_vmm_unreserve(gone.va, gone.len); /* maps PROT_NONE anonymous memory back */
  return CUDA_SUCCESS;
}

/* ---- events: the page of generations, opened through /proc/PID/fd too ------------- */

#define EVENT_MAGIC 0x45504953u /* "SIPE" */

typedef struct event_wire_s {
  uint32_t magic;
  int32_t pid, fd;
} event_wire_t;

SIM_EXPORT CUresult cuIpcGetEventHandle(CUipcEventHandle *handle, CUevent e) {
  SIM_CALLED();
  CUresult rc = sim_ctx_check();
  if (rc) return rc;
  if (!handle) return CUDA_ERROR_INVALID_VALUE;
  int fd = sim_event_page_fd(e);
  if (fd < 0) return CUDA_ERROR_INVALID_HANDLE; /* not made with CU_EVENT_INTERPROCESS */
  event_wire_t w = {EVENT_MAGIC, (int32_t)getpid(), fd};
  memset(handle, 0, sizeof *handle);
  memcpy(handle->reserved, &w, sizeof w);
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuIpcOpenEventHandle(CUevent *out, CUipcEventHandle handle) {
  SIM_CALLED();
  CUresult rc = sim_ctx_check();
  if (rc) return rc;
  event_wire_t w;
  memcpy(&w, handle.reserved, sizeof w);
  if (!out || w.magic != EVENT_MAGIC) return CUDA_ERROR_INVALID_VALUE;
  if (w.pid == (int32_t)getpid()) return CUDA_ERROR_INVALID_CONTEXT;
  int fd = open_exported(w.pid, w.fd);
  if (fd < 0) return CUDA_ERROR_INVALID_HANDLE;
  sim_shared_event_t *page = mmap(NULL, sizeof *page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (page == MAP_FAILED) return close(fd), CUDA_ERROR_MAP_FAILED;
  CUevent e = sim_event_over(page, fd);
  if (!e) return munmap(page, sizeof *page), close(fd), CUDA_ERROR_OUT_OF_MEMORY;
  *out = e;
  return CUDA_SUCCESS;
}

bool sim_ipc_range(uintptr_t p, size_t len, uintptr_t *start, size_t *size, int *device) {
  for (size_t i = 0; i < nimports; i++)
    if (p >= imports[i].ptr && p + len <= imports[i].ptr + imports[i].size)
      return *start = imports[i].ptr, *size = imports[i].size, *device = imports[i].device, true;
  return false;
}
