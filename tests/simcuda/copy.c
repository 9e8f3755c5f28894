/* Copies and memsets. Synchronous forms queue on the default stream (legacy, or this
 * thread's for _ptds) and wait. Asynchronous copies from pageable host memory are staged
 * at the call, and those to pageable memory wait for completion, as the real driver
 * does; only pinned memory is read or written later by the stream. */
#include "sim.h"

#include <stdlib.h>
#include <string.h>

typedef enum { HOST, DEVICE } side_t;

static bool side_ok(side_t side, const void *p, size_t n) {
  if (side == HOST) return p != NULL;
  pthread_mutex_lock(&sim.mu);
  bool ok = sim_mem_live((uintptr_t)p, n ? n : 1);
  pthread_mutex_unlock(&sim.mu);
  return ok;
}

static side_t side_of(const void *p) { return sim_in_device_range((uintptr_t)p) ? DEVICE : HOST; }

/* Queues dst <- src on s; waits when the call is synchronous or the host side is
 * pageable and written by the device. */
static CUresult copy(void *dst, side_t dside, const void *src, side_t sside, size_t n,
                     CUstream stream, bool ptsz, bool sync) {
  CUresult rc = sim_ctx_check();
  if (rc) return rc;
  if (!sim_stream_valid(stream)) return CUDA_ERROR_INVALID_HANDLE;
  if (!side_ok(dside, dst, n) || !side_ok(sside, src, n)) return CUDA_ERROR_INVALID_VALUE;
  if (sync && sim_capture_forbids()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  if (!n) return CUDA_SUCCESS;
  if ((rc = sim_fault(sync ? "cuMemcpy" : "cuMemcpyAsync"))) return rc;
  sim_op_t *op = sim_op_new(OP_COPY);
  if (!op) return CUDA_ERROR_OUT_OF_MEMORY;
  op->u.copy.dst = dst, op->u.copy.src = src, op->u.copy.n = n;
  if (!sync && sside == HOST && !sim_host_pinned(src, n)) {
    if (!(op->u.copy.staging = malloc(n))) return free(op), CUDA_ERROR_OUT_OF_MEMORY;
    memcpy(op->u.copy.staging, src, n);
    op->u.copy.src = op->u.copy.staging;
  }
  struct CUstream_st *s = sim_stream(stream, ptsz);
  sim_enqueue(s, op);
  if (sync || (dside == HOST && !sim_host_pinned(dst, n))) sim_stream_sync(s);
  return CUDA_SUCCESS;
}

static CUresult set(CUdeviceptr dst, uint32_t value, unsigned width, size_t count,
                    CUstream stream, bool ptsz, bool sync) {
  CUresult rc = sim_ctx_check();
  if (rc) return rc;
  if (!sim_stream_valid(stream)) return CUDA_ERROR_INVALID_HANDLE;
  if ((dst % width) || !side_ok(DEVICE, (void *)dst, count * width)) return CUDA_ERROR_INVALID_VALUE;
  if (sync && sim_capture_forbids()) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  if (!count) return CUDA_SUCCESS;
  sim_op_t *op = sim_op_new(OP_SET);
  if (!op) return CUDA_ERROR_OUT_OF_MEMORY;
  op->u.set.dst = (void *)dst, op->u.set.value = value, op->u.set.width = width;
  op->u.set.count = count;
  struct CUstream_st *s = sim_stream(stream, ptsz);
  sim_enqueue(s, op);
  if (sync) sim_stream_sync(s);
  return CUDA_SUCCESS;
}

#define D(p) ((void *)(uintptr_t)(p))

SIM_EXPORT CUresult cuMemcpyHtoD_v2(CUdeviceptr d, const void *h, size_t n) {
  SIM_CALLED();
  return copy(D(d), DEVICE, h, HOST, n, NULL, false, true);
}
SIM_EXPORT CUresult cuMemcpyHtoD_v2_ptds(CUdeviceptr d, const void *h, size_t n) {
  SIM_CALLED();
  return copy(D(d), DEVICE, h, HOST, n, NULL, true, true);
}
SIM_EXPORT CUresult cuMemcpyDtoH_v2(void *h, CUdeviceptr d, size_t n) {
  SIM_CALLED();
  return copy(h, HOST, D(d), DEVICE, n, NULL, false, true);
}
SIM_EXPORT CUresult cuMemcpyDtoH_v2_ptds(void *h, CUdeviceptr d, size_t n) {
  SIM_CALLED();
  return copy(h, HOST, D(d), DEVICE, n, NULL, true, true);
}
SIM_EXPORT CUresult cuMemcpyDtoD_v2(CUdeviceptr d, CUdeviceptr s, size_t n) {
  SIM_CALLED();
  return copy(D(d), DEVICE, D(s), DEVICE, n, NULL, false, true);
}
SIM_EXPORT CUresult cuMemcpyDtoD_v2_ptds(CUdeviceptr d, CUdeviceptr s, size_t n) {
  SIM_CALLED();
  return copy(D(d), DEVICE, D(s), DEVICE, n, NULL, true, true);
}
SIM_EXPORT CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr d, const void *h, size_t n, CUstream s) {
  SIM_CALLED();
  return copy(D(d), DEVICE, h, HOST, n, s, false, false);
}
SIM_EXPORT CUresult cuMemcpyHtoDAsync_v2_ptsz(CUdeviceptr d, const void *h, size_t n, CUstream s) {
  SIM_CALLED();
  return copy(D(d), DEVICE, h, HOST, n, s, true, false);
}
SIM_EXPORT CUresult cuMemcpyDtoHAsync_v2(void *h, CUdeviceptr d, size_t n, CUstream s) {
  SIM_CALLED();
  return copy(h, HOST, D(d), DEVICE, n, s, false, false);
}
SIM_EXPORT CUresult cuMemcpyDtoHAsync_v2_ptsz(void *h, CUdeviceptr d, size_t n, CUstream s) {
  SIM_CALLED();
  return copy(h, HOST, D(d), DEVICE, n, s, true, false);
}
SIM_EXPORT CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr d, CUdeviceptr src, size_t n, CUstream s) {
  SIM_CALLED();
  return copy(D(d), DEVICE, D(src), DEVICE, n, s, false, false);
}
SIM_EXPORT CUresult cuMemcpyDtoDAsync_v2_ptsz(CUdeviceptr d, CUdeviceptr src, size_t n, CUstream s) {
  SIM_CALLED();
  return copy(D(d), DEVICE, D(src), DEVICE, n, s, true, false);
}
/* Unified addressing: the direction follows from where the pointers are. */
SIM_EXPORT CUresult cuMemcpy(CUdeviceptr d, CUdeviceptr s, size_t n) {
  SIM_CALLED();
  return copy(D(d), side_of(D(d)), D(s), side_of(D(s)), n, NULL, false, true);
}
SIM_EXPORT CUresult cuMemcpy_ptds(CUdeviceptr d, CUdeviceptr s, size_t n) {
  SIM_CALLED();
  return copy(D(d), side_of(D(d)), D(s), side_of(D(s)), n, NULL, true, true);
}
SIM_EXPORT CUresult cuMemcpyAsync(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st) {
  SIM_CALLED();
  return copy(D(d), side_of(D(d)), D(s), side_of(D(s)), n, st, false, false);
}
SIM_EXPORT CUresult cuMemcpyAsync_ptsz(CUdeviceptr d, CUdeviceptr s, size_t n, CUstream st) {
  SIM_CALLED();
  return copy(D(d), side_of(D(d)), D(s), side_of(D(s)), n, st, true, false);
}

SIM_EXPORT CUresult cuMemsetD8_v2(CUdeviceptr d, unsigned char v, size_t n) {
  SIM_CALLED();
  return set(d, v, 1, n, NULL, false, true);
}
SIM_EXPORT CUresult cuMemsetD8_v2_ptds(CUdeviceptr d, unsigned char v, size_t n) {
  SIM_CALLED();
  return set(d, v, 1, n, NULL, true, true);
}
SIM_EXPORT CUresult cuMemsetD32_v2(CUdeviceptr d, unsigned int v, size_t n) {
  SIM_CALLED();
  return set(d, v, 4, n, NULL, false, true);
}
SIM_EXPORT CUresult cuMemsetD32_v2_ptds(CUdeviceptr d, unsigned int v, size_t n) {
  SIM_CALLED();
  return set(d, v, 4, n, NULL, true, true);
}
SIM_EXPORT CUresult cuMemsetD8Async(CUdeviceptr d, unsigned char v, size_t n, CUstream s) {
  SIM_CALLED();
  return set(d, v, 1, n, s, false, false);
}
SIM_EXPORT CUresult cuMemsetD8Async_ptsz(CUdeviceptr d, unsigned char v, size_t n, CUstream s) {
  SIM_CALLED();
  return set(d, v, 1, n, s, true, false);
}
SIM_EXPORT CUresult cuMemsetD32Async(CUdeviceptr d, unsigned int v, size_t n, CUstream s) {
  SIM_CALLED();
  return set(d, v, 4, n, s, false, false);
}
SIM_EXPORT CUresult cuMemsetD32Async_ptsz(CUdeviceptr d, unsigned int v, size_t n, CUstream s) {
  SIM_CALLED();
  return set(d, v, 4, n, s, true, false);
}

/* Between devices: each context must be one of the driver's. The synchronous copy is
 * serialised with the work pending on both devices, as documented; the asynchronous one
 * only follows its stream. */
static CUresult peer_copy(CUdeviceptr d, CUcontext dctx, CUdeviceptr s, CUcontext sctx, size_t n, CUstream st, bool sync) {
  int a, b;
  if (!sim.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!sim_ctx_valid(dctx, &a) || !sim_ctx_valid(sctx, &b)) return CUDA_ERROR_INVALID_CONTEXT;
  if (sync) sim_ctx_sync(a), sim_ctx_sync(b);
  return copy(D(d), DEVICE, D(s), DEVICE, n, st, false, sync);
}
SIM_EXPORT CUresult cuMemcpyPeer(CUdeviceptr d, CUcontext dctx, CUdeviceptr s, CUcontext sctx, size_t n) {
  SIM_CALLED();
  return peer_copy(d, dctx, s, sctx, n, NULL, true);
}
SIM_EXPORT CUresult cuMemcpyPeerAsync(CUdeviceptr d, CUcontext dctx, CUdeviceptr s, CUcontext sctx, size_t n, CUstream st) {
  SIM_CALLED();
  return peer_copy(d, dctx, s, sctx, n, st, false);
}
