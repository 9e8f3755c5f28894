/* Copies and memsets that touch the pool: work on their stream like a launch, which
 * follows the latest frees first (fence.c); under a budget the device ranges they touch
 * must also be resident while they are issued, as a launch's buffers are. Copies of
 * other memory only forward. Every form makes its stream wait for a restore: the
 * synchronous ones run on the default stream (legacy, or the thread's for _ptds) like
 * the others, so the host never waits for planalloc's copy beyond what the call itself
 * waits (an HtoD, DtoD or memset returns before the device runs it; a DtoH after).
 * The access trace has launches only, so the served phase's schedule does not bring
 * back ahead what only a copy uses: counted as uses of the launch after it, copies made
 * launches look as if they needed more pages at once than they do, and mlp_train at its
 * floor (4 pages) failed. 2D/3D copies and memsets are not
 * wrapped: see the README's notes. */
#include "pa.h"

#include <string.h>

#define EXPORT __attribute__((visibility("default")))

#define D CUdeviceptr
#define PA_COPY_HOOKS(X)                                                                    \
  X(cuMemcpyHtoD_v2, (D d, const void *h, size_t n), (d, h, n), d, n, 0, 0, NULL)     \
  X(cuMemcpyHtoD_v2_ptds, (D d, const void *h, size_t n), (d, h, n), d, n, 0, 0, CU_STREAM_PER_THREAD) \
  X(cuMemcpyDtoH_v2, (void *h, D d, size_t n), (h, d, n), d, n, 0, 0, NULL)           \
  X(cuMemcpyDtoH_v2_ptds, (void *h, D d, size_t n), (h, d, n), d, n, 0, 0, CU_STREAM_PER_THREAD)      \
  X(cuMemcpyDtoD_v2, (D d, D s, size_t n), (d, s, n), d, n, s, n, NULL)               \
  X(cuMemcpyDtoD_v2_ptds, (D d, D s, size_t n), (d, s, n), d, n, s, n, CU_STREAM_PER_THREAD)          \
  X(cuMemcpy, (D d, D s, size_t n), (d, s, n), d, n, s, n, NULL)                      \
  X(cuMemcpy_ptds, (D d, D s, size_t n), (d, s, n), d, n, s, n, CU_STREAM_PER_THREAD)                 \
  X(cuMemcpyHtoDAsync_v2, (D d, const void *h, size_t n, CUstream st), (d, h, n, st), d, n, 0, 0, st) \
  X(cuMemcpyHtoDAsync_v2_ptsz, (D d, const void *h, size_t n, CUstream st), (d, h, n, st), d, n, 0, 0, PA_PTSZ(st)) \
  X(cuMemcpyDtoHAsync_v2, (void *h, D d, size_t n, CUstream st), (h, d, n, st), d, n, 0, 0, st) \
  X(cuMemcpyDtoHAsync_v2_ptsz, (void *h, D d, size_t n, CUstream st), (h, d, n, st), d, n, 0, 0, PA_PTSZ(st)) \
  X(cuMemcpyDtoDAsync_v2, (D d, D s, size_t n, CUstream st), (d, s, n, st), d, n, s, n, st) \
  X(cuMemcpyDtoDAsync_v2_ptsz, (D d, D s, size_t n, CUstream st), (d, s, n, st), d, n, s, n, PA_PTSZ(st)) \
  X(cuMemcpyAsync, (D d, D s, size_t n, CUstream st), (d, s, n, st), d, n, s, n, st)  \
  X(cuMemcpyAsync_ptsz, (D d, D s, size_t n, CUstream st), (d, s, n, st), d, n, s, n, PA_PTSZ(st)) \
  X(cuMemcpyPeer, (D d, CUcontext dc, D s, CUcontext sc, size_t n), (d, dc, s, sc, n), d, n, s, n, NULL) \
  X(cuMemcpyPeerAsync, (D d, CUcontext dc, D s, CUcontext sc, size_t n, CUstream st), (d, dc, s, sc, n, st), d, n, s, n, st) \
  X(cuMemsetD8_v2, (D d, unsigned char v, size_t n), (d, v, n), d, n, 0, 0, NULL)     \
  X(cuMemsetD8_v2_ptds, (D d, unsigned char v, size_t n), (d, v, n), d, n, 0, 0, CU_STREAM_PER_THREAD) \
  X(cuMemsetD16_v2, (D d, unsigned short v, size_t n), (d, v, n), d, 2 * n, 0, 0, NULL) \
  X(cuMemsetD16_v2_ptds, (D d, unsigned short v, size_t n), (d, v, n), d, 2 * n, 0, 0, CU_STREAM_PER_THREAD) \
  X(cuMemsetD32_v2, (D d, unsigned int v, size_t n), (d, v, n), d, 4 * n, 0, 0, NULL) \
  X(cuMemsetD32_v2_ptds, (D d, unsigned int v, size_t n), (d, v, n), d, 4 * n, 0, 0, CU_STREAM_PER_THREAD) \
  X(cuMemsetD8Async, (D d, unsigned char v, size_t n, CUstream st), (d, v, n, st), d, n, 0, 0, st) \
  X(cuMemsetD8Async_ptsz, (D d, unsigned char v, size_t n, CUstream st), (d, v, n, st), d, n, 0, 0, PA_PTSZ(st)) \
  X(cuMemsetD16Async, (D d, unsigned short v, size_t n, CUstream st), (d, v, n, st), d, 2 * n, 0, 0, st) \
  X(cuMemsetD16Async_ptsz, (D d, unsigned short v, size_t n, CUstream st), (d, v, n, st), d, 2 * n, 0, 0, PA_PTSZ(st)) \
  X(cuMemsetD32Async, (D d, unsigned int v, size_t n, CUstream st), (d, v, n, st), d, 4 * n, 0, 0, st) \
  X(cuMemsetD32Async_ptsz, (D d, unsigned int v, size_t n, CUstream st), (d, v, n, st), d, 4 * n, 0, 0, PA_PTSZ(st))


/* Declared here: cuda.h names only one of each per-thread pair. */
#define DECLARE(name, params, args, a, na, b, nb, stream) EXPORT CUresult name params;
PA_COPY_HOOKS(DECLARE)
#undef DECLARE

static struct {
#define FIELD(name, params, args, a, na, b, nb, stream) CUresult (*name) params;
  PA_COPY_HOOKS(FIELD)
#undef FIELD
} real;

void pa_copy_resolve(void) {
#define RESOLVE(name, params, args, a, na, b, nb, stream) *(void **)&real.name = pa_gpu_sym(#name);
  PA_COPY_HOOKS(RESOLVE)
#undef RESOLVE
}

void *pa_copy_hook_for(void *fn) {
#define MATCH(name, params, args, a, na, b, nb, stream) \
  if (fn == (void *)real.name) return (void *)name;
  PA_COPY_HOOKS(MATCH)
#undef MATCH
  return NULL;
}

static bool in_pool(CUdeviceptr p, size_t n) {
  CUdeviceptr base = pa_pool_base(), end = base + pa_pool_size();
  return n && p < end && p + n > base;
}

/* The device whose pool [p, p+n) touches (at its start or end), or -1. */
static int pool_of(CUdeviceptr p, size_t n) {
  if (!p || !n) return -1;
  int d = pa_pool_find(p);
  return d >= 0 ? d : pa_pool_find(p + n - 1);
}

/* The part of [p, p+n) in the pool, held resident (pa_mu held, under a budget). */
static void touch(CUdeviceptr p, size_t n, CUstream s) {
  if (!in_pool(p, n)) return;
  CUdeviceptr base = pa_pool_base(), end = base + pa_pool_size();
  CUdeviceptr lo = p > base ? p : base, hi = p + n < end ? p + n : end;
  pa_budget_touch_range(lo - base, hi - lo, s);
}

/* Memory CUDA does not call device memory: pageable or pinned host memory. */
static bool host_memory(CUdeviceptr p) {
  unsigned type = 0;
  return !pa_cu.PointerGetAttribute || pa_cu.PointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p) ||
         type == CU_MEMORYTYPE_HOST;
}

/* The forms that return after the copy ran (into host memory), or that CUDA serialises
 * with later work (cuMemcpyPeer); cuMemcpy's unified form when its destination is the
 * host's (asked of the driver: only another device's copy of pool memory gets here). */
#define SETTLED(n, dst)                                                                        \
  (!strcmp(n, "cuMemcpyDtoH_v2") || !strcmp(n, "cuMemcpyDtoH_v2_ptds") || !strcmp(n, "cuMemcpyPeer") || \
   ((!strcmp(n, "cuMemcpy") || !strcmp(n, "cuMemcpy_ptds")) && host_memory(dst)))

/* Another device's pool p touched by a copy on s: p's fence orders it, unless the copy is
 * settled when it returns (SETTLED: nothing a reuse must wait for); under a budget p's
 * buffers come back first, either way. */
static CUresult peer(int p, CUstream s, const char *name, CUdeviceptr dst) {
  return p < 0 || p == pa_slot ? CUDA_SUCCESS : (CUresult)pa_device_copy(s, p, SETTLED(name, dst));
}

/* A copy on its device's own pool: work on s like a launch, and under a budget what it
 * touches stays resident while it is issued. */
static CUresult own_copy(CUdeviceptr a, size_t na, CUdeviceptr b, size_t nb, CUstream s) {
  bool budget = pa_limit_on();
  pthread_mutex_lock(&pa_mu);
  bool order = pa_fence_mark(s);
  if (budget) pa_budget_tick(false), touch(a, na, s), touch(b, b ? nb : 0, s);
  pthread_mutex_unlock(&pa_mu);
  CUresult rc = order ? (CUresult)pa_fence_order(s) : CUDA_SUCCESS;
  if (!rc) rc = (CUresult)pa_swap_settle(s); /* a cudaMalloc's memory a wait still holds */
  /* a synchronous form runs on its default stream too: that stream waits for the
   * restores, and the host only as long as the call itself makes it (a DtoH), not more */
  return rc || !budget ? rc : (CUresult)pa_budget_ready(s);
}

/* name: the wrapped entry point. *mine: the copy touches its own device's pool, and
 * after() finishes it there. */
static CUresult before(CUdeviceptr a, size_t na, CUdeviceptr b, size_t nb, CUstream s, const char *name, bool *mine) {
  *mine = false;
  if (!pa_active()) return CUDA_SUCCESS;
  bool own = pa_device_enter(s);
  int pa = pool_of(a, na), pb = b ? pool_of(b, nb) : -1;
  if ((pa < 0 && pb < 0) || pa_capture_records(s)) return CUDA_SUCCESS;
  CUresult rc = peer(pa, s, name, a);
  if (!rc && pb != pa) rc = peer(pb, s, name, a);
  if (rc || !own || (pa != pa_slot && pb != pa_slot)) return rc;
  *mine = true;
  return own_copy(a, na, b, nb, s);
}

static CUresult after(CUresult rc, bool mine) {
  if (mine) pa_budget_done();
  return rc;
}

#define WRAP(name, params, args, a, na, b, nb, stream)                            \
  EXPORT CUresult name params {                                                           \
    if (!pa_hooks_bound() || !real.name) return CUDA_ERROR_NOT_INITIALIZED;               \
    bool mine;                                                                            \
    CUresult rc = before(a, na, b, nb, stream, #name, &mine);                             \
    return after(rc ? rc : real.name args, mine);                                         \
  }
PA_COPY_HOOKS(WRAP)
#undef WRAP
