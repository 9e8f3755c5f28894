/* The driver entry points planalloc wraps, exported under their ABI names and handed
 * out by dlsym and cuGetProcAddress in place of exactly the real function they stand
 * for: the real pointer is compared, never the name guessed, so every ABI version and
 * the per-thread-stream variants keep their own wrapper. */
#include "pa.h"

#include <string.h>

#define EXPORT __attribute__((visibility("default")))
#undef cuGetProcAddress
#undef cuStreamBeginCapture

#define LAUNCH_PARAMS CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, \
                      unsigned by, unsigned bz, unsigned shmem, CUstream s, void **params
#define LAUNCH_ARGS f, gx, gy, gz, bx, by, bz, shmem, s, params

EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t size, CUstream s);
EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr p, CUstream s);
EXPORT CUresult cuLaunchKernel_ptsz(LAUNCH_PARAMS, void **extra);
EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *c, CUfunction f, void **params, void **extra);
EXPORT CUresult cuLaunchCooperativeKernel_ptsz(LAUNCH_PARAMS);
EXPORT CUresult cuGetProcAddress(const char *sym, void **pfn, int ver, cuuint64_t flags);
EXPORT CUresult cuStreamBeginCapture(CUstream s);
EXPORT CUresult cuStreamBeginCapture_ptsz(CUstream s);
EXPORT CUresult cuStreamBeginCapture_v2_ptsz(CUstream s, CUstreamCaptureMode mode);
EXPORT CUresult cuStreamBeginCaptureToGraph_ptsz(CUstream s, CUgraph g, const CUgraphNode *deps,
                                                 const CUgraphEdgeData *data, size_t n, CUstreamCaptureMode mode);
EXPORT CUresult cuStreamEndCapture_ptsz(CUstream s, CUgraph *g);
EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec e, CUstream s);
EXPORT CUresult cuStreamSynchronize_ptsz(CUstream s);

#define PA_DRIVER_HOOKS(X)                                                               \
  X(cuMemAlloc_v2) X(cuMemFree_v2) X(cuMemAllocAsync) X(cuMemAllocAsync_ptsz)            \
  X(cuMemFreeAsync) X(cuMemFreeAsync_ptsz) X(cuLaunchKernel) X(cuLaunchKernel_ptsz)      \
  X(cuLaunchKernelEx) X(cuLaunchKernelEx_ptsz) X(cuLaunchCooperativeKernel)              \
  X(cuLaunchCooperativeKernel_ptsz) X(cuGetProcAddress) X(cuGetProcAddress_v2)            \
  X(cuStreamBeginCapture) X(cuStreamBeginCapture_ptsz) X(cuStreamBeginCapture_v2)        \
  X(cuStreamBeginCapture_v2_ptsz) X(cuStreamBeginCaptureToGraph)                         \
  X(cuStreamBeginCaptureToGraph_ptsz) X(cuStreamEndCapture) X(cuStreamEndCapture_ptsz)      \
  X(cuGraphLaunch) X(cuGraphLaunch_ptsz) X(cuStreamDestroy_v2) X(cuCtxSynchronize)          \
  X(cuCtxSynchronize_v2) X(cuStreamSynchronize) X(cuStreamSynchronize_ptsz) X(cuCtxEnablePeerAccess)        \
  X(cuIpcGetMemHandle)

static struct {
#define FIELD(name) __typeof__(&name) name;
  PA_DRIVER_HOOKS(FIELD)
#undef FIELD
} real;

static const struct {
  const char *name;
  void **real;
  void *hook;
} table[] = {
#define ROW(name) {#name, (void **)&real.name, (void *)name},
    PA_DRIVER_HOOKS(ROW)
#undef ROW
};

static void resolve(void) {
  for (size_t i = 0; i < sizeof table / sizeof *table; i++) *table[i].real = pa_gpu_sym(table[i].name);
  pa_copy_resolve();
}

/* Real entry points are bound once the program's driver is. */
bool pa_hooks_bound(void) {
  static atomic_bool done;
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  if (atomic_load_explicit(&done, memory_order_acquire)) return true;
  if (!pa_gpu_load()) return false;
  pthread_once(&once, resolve);
  atomic_store_explicit(&done, true, memory_order_release);
  return true;
}

void *pa_hook_for(void *fn) {
  if (!fn || !pa_enabled() || !pa_hooks_bound()) return NULL;
  for (size_t i = 0; i < sizeof table / sizeof *table; i++)
    if (*table[i].real == fn) return table[i].hook;
  return pa_copy_hook_for(fn);
}

/* The real function, for a program that reached the export first. */
#define REAL(name) (pa_hooks_bound() && real.name ? real.name : NULL)
#define FORWARD(name, ...) (REAL(name) ? real.name(__VA_ARGS__) : CUDA_ERROR_NOT_INITIALIZED)

/* ---- allocation --------------------------------------------------------------------- */

PA_TLS bool pa_driver_saw; /* for the runtime hooks: the call came down here */

/* caller: the return address into the code that called the driver (a library's own
 * allocation, or the runtime's, whose caller pa_pass_next tells of) */
static int alloc(CUdeviceptr *dptr, size_t size, CUstream s, bool async, void *caller) {
  pa_driver_saw = true;
  bool passed = pa_active() && (pa_pass_next || pa_module_passes(caller));
  pa_pass_next = false;
  if (passed) { /* counted in its device's table */
    pa_device_enter(async ? s : NULL);
    pthread_mutex_lock(&pa_mu);
    pa_stats.by_module++;
    pthread_mutex_unlock(&pa_mu);
  }
  return pa_active() && !passed && !pa_capture_forbids() ? pa_alloc(dptr, size, s, async) : PA_PASS;
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t size) {
  int rc = alloc(dptr, size, NULL, false, __builtin_return_address(0));
  return rc != PA_PASS ? (CUresult)rc : FORWARD(cuMemAlloc_v2, dptr, size);
}

EXPORT CUresult cuMemFree_v2(CUdeviceptr p) {
  int rc = pa_active() ? pa_free(p, NULL, false) : PA_PASS;
  return rc != PA_PASS ? (CUresult)rc : FORWARD(cuMemFree_v2, p);
}

/* Stream-ordered allocation on a capturing stream becomes a graph node: not ours. */
static int alloc_async(CUdeviceptr *dptr, size_t size, CUstream s, void *caller) {
  return !pa_active() || pa_stream_capturing(s) ? PA_PASS : alloc(dptr, size, s, true, caller);
}

EXPORT CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t size, CUstream s) {
  int rc = alloc_async(dptr, size, s, __builtin_return_address(0));
  return rc != PA_PASS ? (CUresult)rc : FORWARD(cuMemAllocAsync, dptr, size, s);
}

EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t size, CUstream s) {
  int rc = alloc_async(dptr, size, s ? s : CU_STREAM_PER_THREAD, __builtin_return_address(0));
  return rc != PA_PASS ? (CUresult)rc : FORWARD(cuMemAllocAsync_ptsz, dptr, size, s);
}

/* In a capture a stream-ordered free becomes a graph node that frees when the graph
 * runs: the pool cannot defer a free to then, so for its buffers the call is refused as
 * the driver refuses what it does not support (the buffer stays live). */
static int free_async(CUdeviceptr p, CUstream s) {
  if (!pa_active()) return PA_PASS;
  if (pa_pool_find(p) < 0 || !pa_stream_capturing(s)) return pa_free(p, s, true);
  static atomic_bool told;
  if (!atomic_exchange(&told, true))
    pa_warn("cudaFreeAsync of a planalloc buffer inside stream capture is not supported (CUDA_ERROR_NOT_SUPPORTED)");
  return CUDA_ERROR_NOT_SUPPORTED;
}

EXPORT CUresult cuMemFreeAsync(CUdeviceptr p, CUstream s) {
  int rc = free_async(p, s);
  return rc != PA_PASS ? (CUresult)rc : FORWARD(cuMemFreeAsync, p, s);
}

EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr p, CUstream s) {
  int rc = free_async(p, s ? s : CU_STREAM_PER_THREAD);
  return rc != PA_PASS ? (CUresult)rc : FORWARD(cuMemFreeAsync_ptsz, p, s);
}

/* ---- launches ----------------------------------------------------------------------------- */

/* The launch's buffers are seen (and, under a budget, held and brought back: s waits for
 * the copies, and for the one an earlier cudaMalloc's memory may still be in); after
 * the real call they are released. A captured launch runs nothing now: it is only
 * counted (no access, no tick of the launch clock the swap schedule follows), and the
 * graph's launch brings every buffer back (graph_seen). */
static CUresult ready(CUstream s) {
  CUresult rc = (CUresult)pa_swap_settle(s);
  return !rc && pa_budget_holding() ? (CUresult)pa_budget_ready(s) : rc;
}

static CUresult seen(CUfunction f, CUstream s, void **params, void **extra) {
  pa_driver_saw = true;
  if (pa_capture_records(s)) return pa_launch_captured(), CUDA_SUCCESS;
  CUresult rc = pa_launch_seen(f, false, s, params, extra) ? (CUresult)pa_fence_order(s) : CUDA_SUCCESS;
  return rc ? rc : ready(s);
}

static CUresult issued(CUresult rc, int timed, CUstream s) {
  pa_ktime_end(rc ? -1 : timed, s);
  uint64_t t = pa_htime_start();
  pa_budget_done();
  pa_htime_lap(PA_HT_DONE, t);
  if (!rc) pa_pace_launch(s);
  return rc;
}

/* A launch is its device's (pa_slot); under peer access another device's pool may be
 * touched too, and that pool's fence orders it first (devices.c; *rc: how that went).
 * False: a device with no planalloc of its own, or the ordering failed. */
static bool own_launch(CUstream s, CUresult *rc) {
  int prc;
  bool own = pa_device_launch(s, &prc);
  *rc = (CUresult)prc;
  if (!own || prc) pa_driver_saw = true;
  return own && !prc;
}

#define LAUNCHED(name, s, ...) \
  CUresult frc; \
  if (!own_launch(s, &frc)) return frc ? frc : FORWARD(name, __VA_ARGS__); \
  uint64_t t_ = pa_htime_start(); \
  CUresult rc = seen(f, s, params, extra); \
  int timed = rc ? -1 : pa_ktime_begin(s); \
  t_ = pa_htime_lap(PA_HT_HOOK, t_); \
  rc = rc ? rc : FORWARD(name, __VA_ARGS__); \
  pa_htime_lap(PA_HT_LAUNCH, t_); \
  return issued(rc, timed, s)

#define STREAM_OF(c) ((c) ? (c)->hStream : NULL)

/* A graph's kernels reach buffers the parameter scan never saw: its launch is work on
 * s that follows the frees like any other, and under a budget every buffer comes back
 * first and the budget is lifted (budget.c). */
static CUresult graph_seen(CUstream s) {
  CUresult frc = CUDA_SUCCESS;
  if (!pa_active() || !own_launch(s, &frc) || !pa_pool_base()) return frc;
  bool captured = pa_capture_records(s);
  pthread_mutex_lock(&pa_mu);
  bool order = !captured && pa_fence_mark(s);
  pa_budget_lift(); /* nothing without a budget, or once lifted */
  pthread_mutex_unlock(&pa_mu);
  CUresult rc = order ? (CUresult)pa_fence_order(s) : CUDA_SUCCESS;
  return rc || captured ? rc : ready(s);
}

EXPORT CUresult cuGraphLaunch(CUgraphExec e, CUstream s) {
  CUresult rc = graph_seen(s);
  return issued(rc ? rc : FORWARD(cuGraphLaunch, e, s), -1, s);
}

EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec e, CUstream s) {
  CUresult rc = graph_seen(PA_PTSZ(s));
  return issued(rc ? rc : FORWARD(cuGraphLaunch_ptsz, e, s), -1, s);
}

EXPORT CUresult cuLaunchKernel(LAUNCH_PARAMS, void **extra) { LAUNCHED(cuLaunchKernel, s, LAUNCH_ARGS, extra); }

EXPORT CUresult cuLaunchKernel_ptsz(LAUNCH_PARAMS, void **extra) {
  LAUNCHED(cuLaunchKernel_ptsz, PA_PTSZ(s), LAUNCH_ARGS, extra);
}

EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *c, CUfunction f, void **params, void **extra) {
  LAUNCHED(cuLaunchKernelEx, STREAM_OF(c), c, f, params, extra);
}

EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *c, CUfunction f, void **params, void **extra) {
  LAUNCHED(cuLaunchKernelEx_ptsz, PA_PTSZ(STREAM_OF(c)), c, f, params, extra);
}

EXPORT CUresult cuLaunchCooperativeKernel(LAUNCH_PARAMS) {
  void **extra = NULL;
  LAUNCHED(cuLaunchCooperativeKernel, s, LAUNCH_ARGS);
}

EXPORT CUresult cuLaunchCooperativeKernel_ptsz(LAUNCH_PARAMS) {
  void **extra = NULL;
  LAUNCHED(cuLaunchCooperativeKernel_ptsz, PA_PTSZ(s), LAUNCH_ARGS);
}

/* ---- stream capture: which captures are open (capture.c) ---------------------------------- */

/* The per-thread default stream's captures are told apart by thread in capture.c. */

static CUresult began(CUresult rc, CUstream s, CUstreamCaptureMode mode) {
  if (rc == CUDA_SUCCESS) pa_capture_began(s, mode);
  return rc;
}

/* Before a capture begins on s: its event after its earlier work, while one can still be
 * recorded there (fence.c). */
static void begin(CUstream s) {
  if (pa_active() && pa_device_enter(s) && pa_pool_base()) pa_fence_before_capture(s);
}

static CUresult ended(CUresult rc, CUstream s) {
  pa_capture_ended(s); /* the capture is over whatever the call returns, unless it never began */
  return rc;
}

EXPORT CUresult cuStreamBeginCapture(CUstream s) {
  return began(FORWARD(cuStreamBeginCapture, (begin(s), s)), s, CU_STREAM_CAPTURE_MODE_GLOBAL);
}

EXPORT CUresult cuStreamBeginCapture_ptsz(CUstream s) {
  return began(FORWARD(cuStreamBeginCapture_ptsz, (begin(PA_PTSZ(s)), s)), PA_PTSZ(s), CU_STREAM_CAPTURE_MODE_GLOBAL);
}

EXPORT CUresult cuStreamBeginCapture_v2(CUstream s, CUstreamCaptureMode mode) {
  return began(FORWARD(cuStreamBeginCapture_v2, (begin(s), s), mode), s, mode);
}

EXPORT CUresult cuStreamBeginCapture_v2_ptsz(CUstream s, CUstreamCaptureMode mode) {
  return began(FORWARD(cuStreamBeginCapture_v2_ptsz, (begin(PA_PTSZ(s)), s), mode), PA_PTSZ(s), mode);
}

EXPORT CUresult cuStreamBeginCaptureToGraph(CUstream s, CUgraph g, const CUgraphNode *deps,
                                            const CUgraphEdgeData *data, size_t n, CUstreamCaptureMode mode) {
  return began(FORWARD(cuStreamBeginCaptureToGraph, (begin(s), s), g, deps, data, n, mode), s, mode);
}

EXPORT CUresult cuStreamBeginCaptureToGraph_ptsz(CUstream s, CUgraph g, const CUgraphNode *deps,
                                                 const CUgraphEdgeData *data, size_t n, CUstreamCaptureMode mode) {
  return began(FORWARD(cuStreamBeginCaptureToGraph_ptsz, (begin(PA_PTSZ(s)), s), g, deps, data, n, mode), PA_PTSZ(s), mode);
}

EXPORT CUresult cuStreamEndCapture(CUstream s, CUgraph *g) { return ended(FORWARD(cuStreamEndCapture, s, g), s); }

EXPORT CUresult cuStreamEndCapture_ptsz(CUstream s, CUgraph *g) {
  return ended(FORWARD(cuStreamEndCapture_ptsz, s, g), PA_PTSZ(s));
}

/* A destroyed stream's handle may name another stream next: its lane is retired, with
 * an event after all its work, in every device's fence (under peer access it may be a
 * lane of another device's pool too; fence.c). The default streams cannot be destroyed. */
static void retire_lane(void *s) { pa_fence_retire((CUstream)s); }

static void retire(CUstream s) {
  pa_device_each_pool(retire_lane, s);
  pa_device_forget(s);
}

EXPORT CUresult cuStreamDestroy_v2(CUstream s) {
  bool named = s && s != CU_STREAM_LEGACY && s != CU_STREAM_PER_THREAD;
  if (named && pa_active()) retire(s);
  return FORWARD(cuStreamDestroy_v2, s);
}

/* ---- the program's syncs: what they waited for is done (fence.c, swap.c) ----------------- */

typedef struct synced_s {
  pa_fence_sync_t fence;
  pa_copies_t copies; /* a device sync also covers the copies queued before it */
  bool on;
} synced_t;

/* A sync speaks for its own device's pool: the work of another device on a pool is that
 * pool's fence's, and no sync of its own device teaches it anything. */
static synced_t sync_begin(CUstream s, bool all, bool ours) {
  synced_t t = {.on = ours && pa_active() && pa_device_enter(s) && pa_pool_base()};
  if (t.on) t.fence = pa_fence_sync_begin(s, all), t.copies = all ? pa_swap_queued() : (pa_copies_t){{0, 0}};
  return t;
}

static CUresult synced(const synced_t *t, CUresult rc) {
  if (rc || !t->on) return rc;
  pa_fence_sync_end(&t->fence);
  pa_swap_synced(&t->copies);
  return rc;
}

/* Another context's sync says nothing of the pool's work. */
static bool current(CUcontext ctx) {
  CUcontext now = NULL;
  return !ctx || (pa_cu.CtxGetCurrent && !pa_cu.CtxGetCurrent(&now) && now == ctx);
}

EXPORT CUresult cuCtxSynchronize(void) {
  synced_t t = sync_begin(NULL, true, true);
  return synced(&t, FORWARD(cuCtxSynchronize));
}

EXPORT CUresult cuCtxSynchronize_v2(CUcontext ctx) {
  synced_t t = sync_begin(NULL, true, current(ctx));
  return synced(&t, FORWARD(cuCtxSynchronize_v2, ctx));
}

EXPORT CUresult cuStreamSynchronize(CUstream s) {
  synced_t t = sync_begin(s, false, true);
  return synced(&t, FORWARD(cuStreamSynchronize, s));
}

EXPORT CUresult cuStreamSynchronize_ptsz(CUstream s) {
  synced_t t = sync_begin(PA_PTSZ(s), false, true);
  return synced(&t, FORWARD(cuStreamSynchronize_ptsz, s));
}

/* Peer access to a device opens its pool's pages to the current one: VMM memory is
 * reached only through cuMemSetAccess, not by enabling peer access (devices.c). */
EXPORT CUresult cuCtxEnablePeerAccess(CUcontext peer, unsigned int flags) {
  CUresult rc = FORWARD(cuCtxEnablePeerAccess, peer, flags);
  if (!rc && pa_active()) pa_device_peer(peer);
  return rc;
}

/* CUDA IPC shares cuMemAlloc memory only; the pool's is VMM memory, which the driver
 * refuses with CUDA_ERROR_INVALID_VALUE and no word. planalloc gives the same code with
 * the buffer and the fix named, and lets the driver answer for anything else. */
EXPORT CUresult cuIpcGetMemHandle(CUipcMemHandle *handle, CUdeviceptr p) {
  int slot = pa_active() ? pa_pool_find(p) : -1;
  if (slot < 0) return FORWARD(cuIpcGetMemHandle, handle, p);
  pa_slot_set(slot);
  size_t size = pa_alloc_size(p);
  char what[64] = "a pool buffer";
  if (size) snprintf(what, sizeof what, "a pool buffer of %zu bytes", size);
  pa_error("cuIpcGetMemHandle(0x%llx) on %s: CUDA IPC cannot share planalloc's pool (VMM memory); "
           "send the module that allocates it to the driver with PLANALLOC_PASS_MODULES=<library name>, "
           "or run this process with PLANALLOC_MODE=off", (unsigned long long)p, what);
  return CUDA_ERROR_INVALID_VALUE;
}

/* ---- the resolvers: the real one answers, then its answer is swapped for our wrapper ---- */

void pa_hand_out_hook(void **pfn) {
  void *hook = pfn ? pa_hook_for(*pfn) : NULL;
  if (hook) *pfn = hook;
}

EXPORT CUresult cuGetProcAddress_v2(const char *sym, void **pfn, int ver, cuuint64_t flags,
                                    CUdriverProcAddressQueryResult *status) {
  CUresult rc = FORWARD(cuGetProcAddress_v2, sym, pfn, ver, flags, status);
  if (rc == CUDA_SUCCESS) pa_hand_out_hook(pfn);
  return rc;
}

EXPORT CUresult cuGetProcAddress(const char *sym, void **pfn, int ver, cuuint64_t flags) {
  CUresult rc = FORWARD(cuGetProcAddress, sym, pfn, ver, flags);
  if (rc == CUDA_SUCCESS) pa_hand_out_hook(pfn);
  return rc;
}
