/* The simulated driver against its contract: return codes, out-parameters, asynchrony,
 * ordering, VMM remapping and entry-point resolution. Run with SIMCUDA_MEMORY=64MiB.
 * With --bad-launch it instead launches a kernel on freed memory and exits 0: the
 * simulator's exit report must then fail the process under SIMCUDA_STRICT=1. With
 * --device-time (run with SIMCUDA_KERNEL_US=50000) it checks kernels that take device
 * time; with --calls it makes a known number of host waits (SIMCUDA_CALLS_FILE); with
 * --link, copies timed by SIMCUDA_COPY_GBPS. */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../harness.h"
#include "simcuda.h"

CUresult simcuRegisterKernel(CUfunction *func, CUkernel *kernel, const char *name,
                             simcu_kernel_fn fn, unsigned nparams, const size_t *sizes);

#define OK(call) CHECK_EQ_I64((call), CUDA_SUCCESS)

/* kernels: (int *p, int value, int sleep_ms) and (const int *src, int *dst) */
static void k_sleep_write(const simcu_launch_t *l) {
  int *p = *(int **)l->args[0], v = *(int *)l->args[1], ms = *(int *)l->args[2];
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
  *p = v;
}

/* (int *p, int value, int cpu_ms): computes for that long on its thread's CPU, then writes */
static void k_spin_write(const simcu_launch_t *l) {
  int *p = *(int **)l->args[0], v = *(int *)l->args[1], ms = *(int *)l->args[2];
  struct timespec t0, t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
  do clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < ms);
  *p = v;
}

static void k_copy_int(const simcu_launch_t *l) {
  **(int **)l->args[1] = **(int **)l->args[0];
}

static void k_add(const simcu_launch_t *l) { **(int **)l->args[0] += *(int *)l->args[1]; }

static CUfunction f_write, f_spin, f_copy, f_add;
static CUkernel k_write;

static void setup(void) {
  CUdeviceptr p;
  CUcontext ctx;
  CUdevice dev;
  CHECK_EQ_I64(cuMemAlloc_v2(&p, 16), CUDA_ERROR_NOT_INITIALIZED);
  CHECK_EQ_I64(cuInit(1), CUDA_ERROR_INVALID_VALUE);
  OK(cuInit(0));
  CHECK_EQ_I64(cuMemAlloc_v2(&p, 16), CUDA_ERROR_INVALID_CONTEXT);
  OK(cuDeviceGet(&dev, 0));
  CHECK_EQ_I64(cuDeviceGet(&dev, 1), CUDA_ERROR_INVALID_DEVICE);
  OK(cuDevicePrimaryCtxRetain(&ctx, dev));
  OK(cuCtxSetCurrent(ctx));
  size_t w[3] = {8, 4, 4}, c[2] = {8, 8};
  OK(simcuRegisterKernel(&f_write, &k_write, "sleep_write", k_sleep_write, 3, w));
  OK(simcuRegisterKernel(&f_spin, NULL, "spin_write", k_spin_write, 3, w));
  OK(simcuRegisterKernel(&f_copy, NULL, "copy_int", k_copy_int, 2, c));
  size_t a[2] = {8, 4};
  OK(simcuRegisterKernel(&f_add, NULL, "add_int", k_add, 2, a));
}

static void test_alloc(void) {
  CUdeviceptr a = 7, b, c;
  size_t free0, free1, total;
  CHECK_EQ_I64(cuMemAlloc_v2(NULL, 16), CUDA_ERROR_INVALID_VALUE);
  CHECK_EQ_I64(cuMemAlloc_v2(&a, 0), CUDA_ERROR_INVALID_VALUE);
  CHECK_EQ_I64(a, 7); /* out-parameter untouched on failure */
  OK(cuMemGetInfo_v2(&free0, &total));
  CHECK_EQ_I64(total, 64 << 20);
  OK(cuMemAlloc_v2(&a, 1));
  OK(cuMemAlloc_v2(&b, 1000));
  CHECK_EQ_I64(a % 256, 0);
  CHECK_EQ_I64(b - a, 512);
  OK(cuMemGetInfo_v2(&free1, &total));
  CHECK_EQ_I64(free0 - free1, 512 + 1024);
  OK(cuMemsetD32_v2(b, 0x01020304u, 250));
  OK(cuMemFree_v2(b));
  CHECK_EQ_I64(*(unsigned char *)b, 0xff); /* poisoned */
  CHECK_EQ_I64(cuMemFree_v2(b), CUDA_ERROR_INVALID_VALUE);
  CHECK_EQ_I64(cuMemFree_v2(0), CUDA_ERROR_INVALID_VALUE);
  CHECK_EQ_I64(cuMemFree_v2(a + 256), CUDA_ERROR_INVALID_VALUE);
  /* out of memory at capacity, and memory comes back */
  OK(cuMemAlloc_v2(&b, 48 << 20));
  CHECK_EQ_I64(cuMemAlloc_v2(&c, 16 << 20), CUDA_ERROR_OUT_OF_MEMORY);
  OK(cuMemFree_v2(b));
  OK(cuMemAlloc_v2(&c, 16 << 20));
  OK(cuMemFree_v2(c));
  OK(cuMemFree_v2(a));
  OK(cuMemGetInfo_v2(&free1, &total));
  CHECK_EQ_I64(free1, free0);
}

static void test_copies(void) {
  CUdeviceptr d, e;
  int in[64], out[64];
  for (int i = 0; i < 64; i++) in[i] = i * 7 - 3;
  OK(cuMemAlloc_v2(&d, sizeof in));
  OK(cuMemAlloc_v2(&e, sizeof in));
  OK(cuMemcpyHtoD_v2(d, in, sizeof in));
  OK(cuMemcpyDtoD_v2(e, d, sizeof in));
  OK(cuMemcpyDtoH_v2(out, e, sizeof out));
  CHECK(!memcmp(in, out, sizeof in));
  OK(cuMemsetD8_v2(e, 0xab, 3));
  OK(cuMemcpy((CUdeviceptr)(uintptr_t)out, e, 4)); /* unified: direction from the pointers */
  CHECK_EQ_I64(out[0] & 0xffffff, 0xababab);
  CHECK_EQ_I64(cuMemcpyHtoD_v2(d + sizeof in, in, 4), CUDA_ERROR_INVALID_VALUE); /* past the end */
  CHECK_EQ_I64(cuMemcpyDtoH_v2(out, 0x1234, 4), CUDA_ERROR_INVALID_VALUE);
  CHECK_EQ_I64(cuMemsetD32_v2(d + 2, 0, 1), CUDA_ERROR_INVALID_VALUE); /* misaligned */
  OK(cuMemFree_v2(d));
  OK(cuMemFree_v2(e));
}

static CUresult launch_write(CUfunction f, CUstream s, CUdeviceptr p, int v, int ms) {
  void *args[] = {&p, &v, &ms};
  return cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, args, NULL);
}

static CUresult launch_copy(CUstream s, CUdeviceptr src, CUdeviceptr dst) {
  void *args[] = {&src, &dst};
  return cuLaunchKernel(f_copy, 1, 1, 1, 1, 1, 1, 0, s, args, NULL);
}

static int read_int(CUdeviceptr p) {
  int v = -1;
  OK(cuMemcpyDtoH_v2(&v, p, sizeof v));
  return v;
}

/* The writer sleeps on stream a; b copies the value after waiting on an event. */
static void test_async_order(void) {
  CUstream a, b;
  CUevent e;
  CUdeviceptr x, y;
  OK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
  OK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
  CHECK_EQ_I64(cuStreamCreate(&b, 0x80), CUDA_ERROR_INVALID_VALUE);
  OK(cuEventCreate(&e, 0));
  OK(cuMemAlloc_v2(&x, 4));
  OK(cuMemAlloc_v2(&y, 4));
  OK(cuMemsetD32_v2(x, 0, 1));
  OK(launch_write(f_write, a, x, 42, 200));
  CHECK_EQ_I64(cuStreamQuery(a), CUDA_ERROR_NOT_READY); /* really asynchronous */
  OK(cuEventRecord(e, a));
  OK(cuStreamWaitEvent(b, e, 0));
  OK(launch_copy(b, x, y));
  OK(cuStreamSynchronize(b));
  CHECK_EQ_I64(read_int(y), 42);
  CHECK_EQ_I64(cuStreamQuery(a), CUDA_SUCCESS);
  /* the legacy default stream waits for a blocking stream's earlier work */
  CUstream blocking;
  OK(cuStreamCreate(&blocking, 0));
  OK(launch_write(f_write, blocking, x, 43, 100));
  CHECK_EQ_I64(read_int(x), 43);
  /* a CUkernel launches too, and the per-thread default stream is its own */
  OK(launch_write((CUfunction)(void *)k_write, CU_STREAM_PER_THREAD, x, 44, 50));
  OK(cuStreamSynchronize_ptsz(NULL));
  CHECK_EQ_I64(read_int(x), 44);
  OK(cuStreamDestroy_v2(a));
  CHECK_EQ_I64(cuStreamSynchronize(a), CUDA_ERROR_INVALID_HANDLE);
  CHECK_EQ_I64(cuStreamDestroy_v2(NULL), CUDA_ERROR_INVALID_HANDLE);
  OK(cuMemFree_v2(x));
  OK(cuMemFree_v2(y));
}

static void test_events(void) {
  CUevent s, t, n;
  float ms = -1;
  OK(cuEventCreate(&s, 0));
  OK(cuEventCreate(&t, 0));
  OK(cuEventCreate(&n, CU_EVENT_DISABLE_TIMING));
  CHECK_EQ_I64(cuEventElapsedTime_v2(&ms, s, t), CUDA_ERROR_INVALID_HANDLE); /* unrecorded */
  CHECK_EQ_I64(cuEventQuery(s), CUDA_SUCCESS);
  CUdeviceptr x;
  OK(cuMemAlloc_v2(&x, 4));
  OK(cuEventRecord(s, NULL));
  OK(launch_write(f_write, NULL, x, 1, 100));
  OK(cuEventRecord(t, NULL));
  CHECK_EQ_I64(cuEventElapsedTime_v2(&ms, s, t), CUDA_ERROR_NOT_READY);
  OK(cuEventSynchronize(t));
  OK(cuEventElapsedTime_v2(&ms, s, t));
  CHECK(ms >= 95 && ms < 5000);
  OK(cuEventRecord(n, NULL));
  OK(cuEventSynchronize(n));
  CHECK_EQ_I64(cuEventElapsedTime_v2(&ms, s, n), CUDA_ERROR_INVALID_HANDLE);
  OK(cuEventDestroy_v2(n));
  CHECK_EQ_I64(cuEventQuery(n), CUDA_ERROR_INVALID_HANDLE);
  OK(cuMemFree_v2(x));
}

/* A wait is for the record made before it, even when the event is recorded again on
 * another stream that gets there first (planalloc recycles its events that way). */
static void test_event_rerecord(void) {
  CUstream a, b, c;
  CUevent e;
  CUdeviceptr x, y;
  OK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
  OK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
  OK(cuStreamCreate(&c, CU_STREAM_NON_BLOCKING));
  OK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
  OK(cuMemAlloc_v2(&x, 4));
  OK(cuMemAlloc_v2(&y, 4));
  OK(cuMemsetD32_v2(x, 0, 1));
  OK(launch_write(f_write, a, x, 42, 200));
  OK(cuEventRecord(e, a));
  OK(cuStreamWaitEvent(b, e, 0));
  OK(cuEventRecord(e, c)); /* c is idle: this record completes at once */
  OK(cuStreamSynchronize(c));
  CHECK_EQ_I64(cuEventQuery(e), CUDA_SUCCESS); /* the query is of the latest record */
  CHECK_EQ_I64(cuStreamQuery(a), CUDA_ERROR_NOT_READY);
  OK(launch_copy(b, x, y));
  OK(cuStreamSynchronize(b));
  CHECK_EQ_I64(read_int(y), 42); /* b waited for a's record, not c's */
  OK(cuStreamSynchronize(a));
  OK(cuMemFree_v2(x));
  OK(cuMemFree_v2(y));
}

static void test_launch_args(void) {
  size_t off, size;
  CUfunction f;
  CUkernel k;
  size_t sizes[4] = {8, 4, 8, 8}; /* (int *, int, float *, double) */
  OK(simcuRegisterKernel(&f, &k, "mixed", k_copy_int, 4, sizes));
  OK(cuFuncGetParamInfo(f, 1, &off, &size));
  CHECK_EQ_I64(off, 8);
  CHECK_EQ_I64(size, 4);
  OK(cuFuncGetParamInfo(f, 2, &off, NULL));
  CHECK_EQ_I64(off, 16);
  OK(cuKernelGetParamInfo(k, 3, &off, &size));
  CHECK_EQ_I64(off, 24);
  CHECK_EQ_I64(cuFuncGetParamInfo(f, 4, &off, &size), CUDA_ERROR_INVALID_VALUE);
  CHECK_EQ_I64(cuFuncGetParamInfo((CUfunction)(void *)k, 0, &off, &size), CUDA_ERROR_INVALID_HANDLE);
  const char *name = NULL;
  OK(cuFuncGetName(&name, f));
  CHECK_STR(name ? name : "", "mixed");
  /* arguments are captured at launch: changing the host copy later changes nothing */
  CUdeviceptr x;
  int v = 7, ms = 100;
  OK(cuMemAlloc_v2(&x, 4));
  void *args[] = {&x, &v, &ms};
  OK(cuLaunchKernel(f_write, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL));
  v = 8;
  CHECK_EQ_I64(read_int(x), 7);
  /* the same through extra, and through cuLaunchKernelEx */
  struct { CUdeviceptr p; int v, ms; } packed = {x, 9, 0};
  size_t psize = sizeof packed;
  void *extra[] = {CU_LAUNCH_PARAM_BUFFER_POINTER, &packed, CU_LAUNCH_PARAM_BUFFER_SIZE, &psize,
                   CU_LAUNCH_PARAM_END};
  CUlaunchConfig cfg = {.gridDimX = 1, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 32,
                        .blockDimY = 1, .blockDimZ = 1, .hStream = NULL};
  OK(cuLaunchKernelEx(&cfg, f_write, NULL, extra));
  CHECK_EQ_I64(read_int(x), 9);
  CHECK_EQ_I64(cuLaunchKernelEx(&cfg, f_write, args, extra), CUDA_ERROR_INVALID_VALUE);
  CHECK_EQ_I64(cuLaunchKernel(f_write, 0, 1, 1, 1, 1, 1, 0, NULL, args, NULL), CUDA_ERROR_INVALID_VALUE);
  CHECK_EQ_I64(cuLaunchKernel(f_write, 1, 1, 1, 2048, 1, 1, 0, NULL, args, NULL), CUDA_ERROR_INVALID_VALUE);
  CHECK_EQ_I64(cuLaunchKernel(NULL, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL), CUDA_ERROR_INVALID_HANDLE);
  OK(cuMemFree_v2(x));
}

/* Data follows the physical handle; an address can be backed by other memory. */
/* Pages of [va, va + size) in memory (filled), by mincore. */
static size_t resident(CUdeviceptr va, size_t size) {
  size_t pg = (size_t)sysconf(_SC_PAGESIZE), n = 0;
  unsigned char vec[1024];
  CHECK(size / pg <= sizeof vec && !mincore((void *)va, size, vec));
  for (size_t i = 0; i < size / pg && i < sizeof vec; i++) n += vec[i] & 1;
  return n;
}

static void test_vmm(void) {
  CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                              .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
  CUmemAccessDesc rw = {.location = prop.location, .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
  size_t g, G = 2 << 20, free0, free1, total;
  OK(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
  CHECK_EQ_I64(g, G);
  CUdeviceptr va;
  CUmemGenericAllocationHandle h1, h2;
  CHECK_EQ_I64(cuMemAddressReserve(&va, G + 1, 0, 0, 0), CUDA_ERROR_INVALID_VALUE);
  OK(cuMemAddressReserve(&va, 4 * G, 0, 0, 0));
  OK(cuMemGetInfo_v2(&free0, &total));
  OK(cuMemCreate(&h1, G, &prop, 0));
  OK(cuMemCreate(&h2, G, &prop, 0));
  OK(cuMemGetInfo_v2(&free1, &total));
  CHECK_EQ_I64(free0 - free1, 2 * G);
  CHECK_EQ_I64(cuMemCreate(&h2, G + 4096, &prop, 0), CUDA_ERROR_INVALID_VALUE);
  OK(cuMemMap(va, G, 0, h1, 0));
  CHECK_EQ_I64(cuMemMap(va, G, 0, h2, 0), CUDA_ERROR_INVALID_VALUE); /* already mapped */
  int pattern = 0x5eed, got = 0;
  CHECK_EQ_I64(cuMemcpyHtoD_v2(va, &pattern, 4), CUDA_ERROR_INVALID_VALUE); /* no access yet */
  OK(cuMemSetAccess(va, G, &rw, 1));
  OK(cuMemcpyHtoD_v2(va + 100, &pattern, 4));
  OK(cuMemUnmap(va, G));
  OK(cuMemMap(va + 2 * G, G, 0, h1, 0)); /* h1 elsewhere: its data comes along */
  OK(cuMemSetAccess(va + 2 * G, G, &rw, 1));
  OK(cuMemcpyDtoH_v2(&got, va + 2 * G + 100, 4));
  CHECK_EQ_I64(got, 0x5eed);
  OK(cuMemMap(va, G, 0, h2, 0)); /* the old address backed by fresh memory */
  OK(cuMemSetAccess(va, G, &rw, 1));
  /* without a link, filled at its first touch as cuMemAlloc's memory: a VMM allocator
   * pays no fault a caching allocator's untouched memory does not */
  CHECK_EQ_I64(resident(va, G), 0);
  OK(cuMemcpyDtoH_v2(&got, va + 100, 4));
  CHECK_EQ_I64(got, 0);
  /* A copy may span two mappings side by side, never a hole. */
  CHECK_EQ_I64(cuMemcpyHtoD_v2(va + G - 2, &pattern, 4), CUDA_ERROR_INVALID_VALUE);
  CUmemGenericAllocationHandle h3;
  OK(cuMemCreate(&h3, G, &prop, 0));
  OK(cuMemMap(va + G, G, 0, h3, 0));
  OK(cuMemSetAccess(va + G, G, &rw, 1));
  OK(cuMemcpyHtoD_v2(va + G - 2, &pattern, 4));
  OK(cuMemcpyDtoH_v2(&got, va + G - 2, 4));
  CHECK_EQ_I64(got, 0x5eed);
  OK(cuMemcpyHtoD_v2(va + 2 * G - 2, &pattern, 4)); /* h3 into h1 */
  OK(cuMemUnmap(va + G, G));
  OK(cuMemRelease(h3));
  OK(cuMemRelease(h1)); /* still mapped: the memory stays until unmapped */
  OK(cuMemGetInfo_v2(&free1, &total));
  CHECK_EQ_I64(free0 - free1, 2 * G);
  CHECK_EQ_I64(cuMemAddressFree(va, 4 * G), CUDA_ERROR_INVALID_VALUE); /* mappings inside */
  OK(cuMemUnmap(va + 2 * G, G));
  OK(cuMemGetInfo_v2(&free1, &total));
  CHECK_EQ_I64(free0 - free1, G);
  OK(cuMemUnmap(va, G));
  OK(cuMemRelease(h2));
  CHECK_EQ_I64(cuMemRelease(h2), CUDA_ERROR_INVALID_VALUE);
  OK(cuMemAddressFree(va, 4 * G));
  OK(cuMemGetInfo_v2(&free1, &total));
  CHECK_EQ_I64(free1, free0);
  /* One unmap may cover adjacent mappings, as one cuMemSetAccess may; never a hole. */
  OK(cuMemAddressReserve(&va, 4 * G, 0, 0, 0));
  OK(cuMemCreate(&h1, G, &prop, 0));
  OK(cuMemCreate(&h2, G, &prop, 0));
  OK(cuMemMap(va, G, 0, h1, 0));
  OK(cuMemMap(va + G, G, 0, h2, 0));
  OK(cuMemSetAccess(va, 2 * G, &rw, 1));
  CHECK_EQ_I64(cuMemSetAccess(va, 3 * G, &rw, 1), CUDA_ERROR_INVALID_VALUE);
  CHECK_EQ_I64(cuMemUnmap(va, 3 * G), CUDA_ERROR_INVALID_VALUE);
  CHECK_EQ_I64(cuMemUnmap(va + G, 2 * G), CUDA_ERROR_INVALID_VALUE);
  OK(cuMemUnmap(va, 2 * G));
  CHECK_EQ_I64(cuMemUnmap(va, G), CUDA_ERROR_INVALID_VALUE);
  OK(cuMemRelease(h1));
  OK(cuMemRelease(h2));
  OK(cuMemAddressFree(va, 4 * G));
}

static void *lookup(const char *name, int version, cuuint64_t flags, int *status) {
  void *fn = (void *)1;
  CUdriverProcAddressQueryResult st = 99;
  CHECK_EQ_I64(cuGetProcAddress_v2(name, &fn, version, flags, &st), CUDA_SUCCESS);
  *status = (int)st;
  return fn;
}

static void test_proc_address(void) {
  int st;
  const cuuint64_t PT = CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
  CHECK(lookup("cuMemAlloc", 13000, 0, &st) == (void *)cuMemAlloc_v2 && st == 0);
  CHECK(lookup("cuLaunchKernel", 13000, 0, &st) == (void *)cuLaunchKernel);
  CHECK(lookup("cuLaunchKernel", 13000, PT, &st) == (void *)cuLaunchKernel_ptsz);
  CHECK(lookup("cuMemcpyHtoD", 12000, PT, &st) == (void *)cuMemcpyHtoD_v2_ptds);
  CHECK(lookup("cuMemAlloc", 13000, PT, &st) == (void *)cuMemAlloc_v2); /* no ptsz twin */
  CHECK(lookup("cuCtxSynchronize", 12090, 0, &st) == (void *)cuCtxSynchronize);
  CHECK(lookup("cuCtxSynchronize", 13000, 0, &st) == (void *)cuCtxSynchronize_v2);
  CHECK(lookup("cuEventElapsedTime", 12000, 0, &st) == (void *)cuEventElapsedTime);
  CHECK(lookup("cuGetProcAddress", 12000, 0, &st) == (void *)cuGetProcAddress_v2);
  CHECK(lookup("cuFuncGetParamInfo", 12000, 0, &st) == NULL);
  CHECK_EQ_I64(st, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
  CHECK(lookup("cuNoSuchThing", 13000, 0, &st) == NULL);
  CHECK_EQ_I64(st, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
  void *fn;
  CHECK_EQ_I64(cuGetProcAddress_v2("cuMemAlloc", &fn, 13010, 0, NULL), CUDA_ERROR_INVALID_VALUE);
  CHECK_EQ_I64(cuGetProcAddress_v2("cuMemAlloc", NULL, 13000, 0, NULL), CUDA_ERROR_INVALID_VALUE);
  CHECK_EQ_I64(cuGetProcAddress("cuMemFree", &fn, 11030, 0), CUDA_SUCCESS);
  CHECK(fn == (void *)cuMemFree_v2);
}

static CUresult launch_add(CUstream s, CUdeviceptr p, int v) {
  void *args[] = {&p, &v};
  return cuLaunchKernel(f_add, 1, 1, 1, 1, 1, 1, 0, s, args, NULL);
}

/* Captured work is recorded, not run; each graph launch replays it afresh. Allocation
 * during a global-mode capture fails and invalidates the capture. */
static void test_capture(void) {
  CUstream s;
  CUgraph g = (CUgraph)1;
  CUgraphExec e;
  CUdeviceptr x, y;
  CUstreamCaptureStatus st;
  OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  OK(cuMemAlloc_v2(&x, 4));
  OK(cuMemsetD32_v2(x, 10, 1));
  CHECK_EQ_I64(cuStreamBeginCapture_v2(NULL, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  CHECK_EQ_I64(cuStreamEndCapture(s, &g), CUDA_ERROR_ILLEGAL_STATE);
  OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CHECK_EQ_I64(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_ERROR_ILLEGAL_STATE);
  OK(cuStreamIsCapturing(s, &st));
  CHECK_EQ_I64(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
  OK(launch_add(s, x, 1));
  OK(launch_add(s, x, 2));
  CHECK_EQ_I64(cuMemAllocAsync(&y, 64, s), CUDA_ERROR_NOT_SUPPORTED);
  OK(cuStreamEndCapture(s, &g));
  CHECK_EQ_I64(read_int(x), 10); /* recorded, not run */
  OK(cuGraphInstantiateWithFlags(&e, g, 0));
  OK(cuGraphLaunch(e, s));
  OK(cuGraphLaunch(e, s));
  OK(cuStreamSynchronize(s));
  CHECK_EQ_I64(read_int(x), 16);
  OK(cuGraphExecDestroy(e));
  CHECK_EQ_I64(cuGraphLaunch(e, s), CUDA_ERROR_INVALID_HANDLE);
  CHECK_EQ_I64(cuGraphExecDestroy(e), CUDA_ERROR_INVALID_VALUE);
  OK(cuGraphDestroy(g));
  /* allocation during a global capture: refused, and the capture is invalidated */
  OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  CHECK_EQ_I64(cuMemAlloc_v2(&y, 64), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  OK(cuStreamIsCapturing(s, &st));
  CHECK_EQ_I64(st, CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  CHECK_EQ_I64(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  CHECK(g == NULL);
  /* relaxed mode allows it */
  OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_RELAXED));
  OK(cuMemAlloc_v2(&y, 64));
  OK(cuStreamEndCapture(s, &g));
  OK(cuStreamIsCapturing(s, &st));
  CHECK_EQ_I64(st, CU_STREAM_CAPTURE_STATUS_NONE);
  OK(cuMemFree_v2(y));
  OK(cuMemFree_v2(x));
  OK(cuStreamDestroy_v2(s));
}

/* A capture waits only for its own records: a wait on an event recorded outside it fails
 * with the isolation error and invalidates the capture (an external wait is allowed);
 * an event recorded inside it cannot be queried or synchronised with, and a stream that
 * waits for it joins the capture. */
static void test_capture_events(void) {
  CUstream s, t;
  CUevent outside, inside;
  CUgraph g;
  CUstreamCaptureStatus st;
  OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  OK(cuStreamCreate(&t, CU_STREAM_NON_BLOCKING));
  OK(cuEventCreate(&outside, CU_EVENT_DISABLE_TIMING));
  OK(cuEventCreate(&inside, CU_EVENT_DISABLE_TIMING));
  OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_RELAXED));
  OK(cuStreamWaitEvent(s, outside, 0)); /* never recorded: nothing to wait for */
  OK(cuEventRecord(outside, t));
  OK(cuStreamWaitEvent(s, outside, CU_EVENT_WAIT_EXTERNAL));
  OK(cuEventRecord(inside, s));
  OK(cuStreamWaitEvent(s, inside, 0));
  CHECK_EQ_I64(cuEventQuery(inside), CUDA_ERROR_CAPTURED_EVENT);
  CHECK_EQ_I64(cuEventSynchronize(inside), CUDA_ERROR_CAPTURED_EVENT);
  OK(cuStreamWaitEvent(t, inside, 0)); /* t joins s's capture */
  OK(cuStreamIsCapturing(t, &st));
  CHECK_EQ_I64(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
  OK(cuStreamIsCapturing(s, &st));
  CHECK_EQ_I64(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
  CHECK_EQ_I64(cuStreamWaitEvent(s, outside, 0), CUDA_ERROR_STREAM_CAPTURE_ISOLATION);
  OK(cuStreamIsCapturing(s, &st));
  CHECK_EQ_I64(st, CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  OK(cuStreamIsCapturing(t, &st)); /* one capture: the joined stream's too */
  CHECK_EQ_I64(st, CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  CHECK_EQ_I64(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  OK(cuStreamIsCapturing(t, &st)); /* the end releases every member */
  CHECK_EQ_I64(st, CU_STREAM_CAPTURE_STATUS_NONE);
  OK(cuEventRecord(inside, t)); /* recorded outside again: usable everywhere */
  OK(cuEventSynchronize(inside));
  OK(cuStreamWaitEvent(s, inside, 0));
  OK(cuStreamSynchronize(s));
  OK(cuEventDestroy_v2(outside));
  OK(cuEventDestroy_v2(inside));
  OK(cuStreamDestroy_v2(t));
  OK(cuStreamDestroy_v2(s));
}

/* Fork and join: a capture spans the streams that wait for its events; it ends on the
 * stream that began it, once that stream waited for the others' work (transitively), and
 * the graph replays every member's work. */
static void fork_join(CUstream s, CUstream t, CUstream u, CUevent e[4], CUdeviceptr x, CUdeviceptr y) {
  OK(launch_add(s, x, 1));
  OK(cuEventRecord(e[0], s));
  OK(cuStreamWaitEvent(t, e[0], 0));
  OK(launch_add(t, y, 2));
  OK(cuEventRecord(e[1], t));
  OK(cuStreamWaitEvent(u, e[1], 0)); /* u joins through t */
  OK(launch_add(u, x, 4));
  OK(cuEventRecord(e[2], u));
  OK(cuStreamWaitEvent(t, e[2], 0));
  OK(cuEventRecord(e[3], t)); /* after u's work too */
}

static void test_capture_fork_join(void) {
  CUstream s, t, u;
  CUevent e[4];
  CUgraph g;
  CUgraphExec ge;
  CUdeviceptr x, y;
  CUstreamCaptureStatus st;
  OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  OK(cuStreamCreate(&t, CU_STREAM_NON_BLOCKING));
  OK(cuStreamCreate(&u, CU_STREAM_NON_BLOCKING));
  for (int i = 0; i < 4; i++) OK(cuEventCreate(&e[i], CU_EVENT_DISABLE_TIMING));
  OK(cuMemAlloc_v2(&x, 4));
  OK(cuMemAlloc_v2(&y, 4));
  OK(cuMemsetD32_v2(x, 0, 1));
  OK(cuMemsetD32_v2(y, 0, 1));
  /* joined back through t's last event: the capture ends, nothing ran yet */
  OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  fork_join(s, t, u, e, x, y);
  OK(cuStreamIsCapturing(u, &st));
  CHECK_EQ_I64(st, CU_STREAM_CAPTURE_STATUS_ACTIVE);
  CHECK_EQ_I64(cuStreamEndCapture(t, &g), CUDA_ERROR_STREAM_CAPTURE_UNMATCHED); /* not where it began */
  OK(cuStreamIsCapturing(s, &st));
  CHECK_EQ_I64(st, CU_STREAM_CAPTURE_STATUS_INVALIDATED);
  CHECK_EQ_I64(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  fork_join(s, t, u, e, x, y);
  OK(cuStreamWaitEvent(s, e[3], 0));
  OK(cuStreamEndCapture(s, &g));
  for (CUstream m[] = {s, t, u}, *p = m; p < m + 3; p++) {
    OK(cuStreamIsCapturing(*p, &st));
    CHECK_EQ_I64(st, CU_STREAM_CAPTURE_STATUS_NONE);
  }
  CHECK_EQ_I64(read_int(x) + read_int(y), 0);
  OK(cuGraphInstantiateWithFlags(&ge, g, 0));
  OK(cuGraphLaunch(ge, s));
  OK(cuStreamSynchronize(s));
  CHECK_EQ_I64(read_int(x), 5);
  CHECK_EQ_I64(read_int(y), 2);
  OK(cuGraphExecDestroy(ge));
  OK(cuGraphDestroy(g));
  /* u's work not joined back (s waits only for t's first event): the capture fails */
  OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  fork_join(s, t, u, e, x, y);
  OK(cuStreamWaitEvent(s, e[1], 0));
  CHECK_EQ_I64(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_UNJOINED);
  CHECK(g == NULL);
  OK(cuStreamIsCapturing(u, &st));
  CHECK_EQ_I64(st, CU_STREAM_CAPTURE_STATUS_NONE);
  /* a stream that joined and captured nothing need not be joined back */
  OK(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
  OK(cuEventRecord(e[0], s));
  OK(cuStreamWaitEvent(t, e[0], 0));
  OK(launch_add(s, x, 1));
  OK(cuStreamEndCapture(s, &g));
  OK(cuGraphDestroy(g));
  CHECK_EQ_I64(read_int(x), 5);
  for (int i = 0; i < 4; i++) OK(cuEventDestroy_v2(e[i]));
  OK(cuMemFree_v2(x));
  OK(cuMemFree_v2(y));
  OK(cuStreamDestroy_v2(u));
  OK(cuStreamDestroy_v2(t));
  OK(cuStreamDestroy_v2(s));
}

static void test_managed(void) {
  CUdeviceptr m;
  CHECK_EQ_I64(cuMemAllocManaged(&m, 64, 0), CUDA_ERROR_INVALID_VALUE);
  OK(cuMemAllocManaged(&m, 64, CU_MEM_ATTACH_GLOBAL));
  *(int *)(uintptr_t)m = 5; /* host access, as managed memory allows */
  OK(launch_add(NULL, m, 2));
  OK(cuCtxSynchronize());
  CHECK_EQ_I64(*(int *)(uintptr_t)m, 7);
  OK(cuMemFree_v2(m));
}

/* A child forked while a kernel runs: it cannot use the driver (as on CUDA), does not
 * deadlock, and the parent carries on. */
static void test_fork(void) {
  CUdeviceptr x;
  OK(cuMemAlloc_v2(&x, 4));
  OK(launch_write(f_write, NULL, x, 3, 100));
  pid_t pid = fork();
  if (pid == 0) {
    CUdeviceptr y;
    int code = cuMemAlloc_v2(&y, 4) == CUDA_ERROR_NOT_INITIALIZED && cuInit(0) == CUDA_ERROR_NOT_INITIALIZED ? 0 : 1;
    _exit(code);
  }
  int status = -1;
  CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  CHECK_EQ_I64(read_int(x), 3);
  OK(cuMemFree_v2(x));
}

/* Many short threads on their per-thread default streams: each result lands, and the
 * workers end with their threads (the process does not accumulate threads). */
static void *short_thread(void *arg) {
  CUcontext ctx;
  CUdeviceptr x = (CUdeviceptr)(uintptr_t)arg;
  if (cuDevicePrimaryCtxRetain(&ctx, 0) || cuCtxSetCurrent(ctx)) return (void *)1;
  if (launch_add(CU_STREAM_PER_THREAD, x, 1)) return (void *)1;
  return (void *)(uintptr_t)cuStreamSynchronize_ptsz(NULL);
}

static int count_threads(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  int n = -1;
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, "Threads:", 8)) n = atoi(line + 8);
  if (f) fclose(f);
  return n;
}

static void test_thread_streams(void) {
  CUdeviceptr x;
  OK(cuMemAlloc_v2(&x, 4));
  OK(cuMemsetD32_v2(x, 0, 1));
  int before = count_threads();
  for (int round = 0; round < 50; round++) {
    pthread_t th;
    void *rc = (void *)1;
    CHECK(pthread_create(&th, NULL, short_thread, (void *)(uintptr_t)x) == 0 && pthread_join(th, &rc) == 0);
    CHECK(rc == NULL);
  }
  CHECK_EQ_I64(read_int(x), 50);
  struct timespec ts = {0, 50000000};
  nanosleep(&ts, NULL); /* retired workers finish exiting */
  CHECK(count_threads() <= before + 2);
  OK(cuMemFree_v2(x));
}

static int bad_launch(void) {
  CUdeviceptr x;
  OK(cuMemAlloc_v2(&x, 64));
  OK(cuMemFree_v2(x));
  OK(launch_copy(NULL, x, x)); /* a use after free: the launch itself succeeds */
  OK(cuCtxSynchronize());
  return test_failures;
}

/* A kernel still queued on a mapping when it is unmapped: the real driver would fault it. */
static int bad_unmap(void) {
  CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                              .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
  CUmemAccessDesc rw = {.location = prop.location, .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
  size_t G = 2 << 20;
  CUdeviceptr va;
  CUmemGenericAllocationHandle h;
  CUstream s;
  OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  OK(cuMemAddressReserve(&va, 2 * G, 0, 0, 0));
  OK(cuMemCreate(&h, G, &prop, 0));
  OK(cuMemMap(va + G, G, 0, h, 0));
  OK(cuMemSetAccess(va + G, G, &rw, 1));
  OK(launch_write(f_write, s, va + G + 64, 7, 100));
  OK(cuMemUnmap(va + G, G)); /* succeeds, as on the device; the kernel would fault there */
  OK(cuMemRelease(h));
  return test_failures;
}

static double seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* SIMCUDA_KERNEL_US=50000: every kernel holds its stream 50 ms, then runs its body. The
 * host is not held (up to SIMCUDA_QUEUE_DEPTH=4 operations a stream); the time adds up
 * on a stream; and a write from another stream while a reader "runs" is what the reader
 * sees, every time, unless an event orders them. */
static int device_time(void) {
  CUstream a, b;
  CUevent e;
  CUdeviceptr x, y;
  OK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
  OK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
  OK(cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
  OK(cuMemAlloc_v2(&x, 4));
  OK(cuMemAlloc_v2(&y, 4));
  for (int ordered = 0; ordered < 2; ordered++) {
    OK(cuMemsetD32_v2(x, 1, 1));
    OK(launch_copy(a, x, y)); /* reads x when its 50 ms end */
    OK(cuEventRecord(e, a));
    if (ordered) OK(cuStreamWaitEvent(b, e, 0));
    OK(cuMemsetD32Async(x, 2, 1, b)); /* without the wait: while the reader runs */
    OK(cuCtxSynchronize());
    CHECK_EQ_I64(read_int(y), ordered ? 1 : 2);
  }
  /* A body that computes longer than the hold (150 ms of CPU against 50) is the device's
   * time: the four kernels after it on its stream hold their 50 ms each after it, 350 ms
   * in all at least, whatever the machine's load (before, their holds ran beside the
   * body: 250 ms). A body that sleeps computes nothing: the hold is its time. */
  for (int round = 0; round < 2; round++) { /* the body's time unknown, then known */
    double t = seconds();
    OK(launch_write(f_spin, a, x, 3, 150));
    for (int i = 0; i < 4; i++) OK(launch_copy(a, x, y));
    OK(cuStreamSynchronize(a));
    CHECK(seconds() - t >= 0.349);
  }
  double t0 = seconds();
  for (int i = 0; i < 4; i++) OK(launch_copy(a, x, y));
  CHECK_EQ_I64(cuStreamQuery(a), CUDA_ERROR_NOT_READY); /* the launches returned at once */
  OK(cuStreamSynchronize(a));
  CHECK(seconds() - t0 >= 4 * 0.050); /* one after the other on their stream */
  /* SIMCUDA_QUEUE_DEPTH=4: with four operations queued, the next waits for one to end.
   * The sixth here returns only once two have: the first kernel and the event after it. */
  OK(launch_copy(a, x, y));
  OK(cuEventRecord(e, a));
  for (int i = 0; i < 4; i++) OK(launch_copy(a, x, y));
  CHECK_EQ_I64(cuEventQuery(e), CUDA_SUCCESS);
  /* An unmap that no queued work touches returns at once, device busy or not. */
  CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                              .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
  CUdeviceptr va;
  CUmemGenericAllocationHandle h;
  OK(cuMemAddressReserve(&va, 2 << 20, 0, 0, 0));
  OK(cuMemCreate(&h, 2 << 20, &prop, 0));
  OK(cuMemMap(va, 2 << 20, 0, h, 0));
  OK(cuMemUnmap(va, 2 << 20));
  CHECK_EQ_I64(cuStreamQuery(a), CUDA_ERROR_NOT_READY);
  OK(cuStreamSynchronize(a));
  OK(cuMemRelease(h));
  OK(cuMemAddressFree(va, 2 << 20));
  return test_failures;
}

/* SIMCUDA_COPY_GBPS=1: a 64 MiB copy holds its stream 67 ms and reads its source at the
 * end (a write the copy was not ordered after is what it delivers: the window is long
 * enough that a loaded machine does not deschedule the host past it, as 2 ms was not);
 * eight 2 MiB copies take at least eight times 2.1 ms; at 1 GB/s, the lanes. The exit report says whether the
 * host kept up (ctest runs this at 1 GB/s, which it does, and at 10000, which it cannot). */
/* One lane each way: copies the same way on two streams take their sum; a copy to the
 * host finishes while a long one to the device is still on the other lane. */
static void lanes(CUstream a, CUdeviceptr d, void *h) {
  enum { N = 4, SZ = 2 << 20, BIG = 64 << 20 };
  CUstream b;
  OK(cuStreamCreate(&b, CU_STREAM_NON_BLOCKING));
  double t0 = seconds();
  for (int i = 0; i < N; i++) {
    OK(cuMemcpyHtoDAsync_v2(d, h, SZ, a));
    OK(cuMemcpyHtoDAsync_v2(d + SZ, (char *)h + SZ, SZ, b));
  }
  OK(cuStreamSynchronize(a));
  OK(cuStreamSynchronize(b));
  CHECK(seconds() - t0 >= 2 * N * SZ / 1e9);
  void *back;
  OK(cuMemHostAlloc(&back, SZ, 0));
  OK(cuMemcpyHtoDAsync_v2(d, h, BIG, a));
  OK(cuMemcpyDtoHAsync_v2(back, d + BIG - SZ, SZ, b));
  OK(cuStreamSynchronize(b));
  CHECK_EQ_I64(cuStreamQuery(a), CUDA_ERROR_NOT_READY);
  OK(cuStreamSynchronize(a));
  OK(cuMemFreeHost(back));
  OK(cuStreamDestroy_v2(b));
}

static int link_time(void) {
  enum { N = 8, SZ = 2 << 20, BIG = 64 << 20 };
  CUstream a;
  CUdeviceptr d;
  void *h;
  OK(cuStreamCreate(&a, CU_STREAM_NON_BLOCKING));
  OK(cuMemAlloc_v2(&d, BIG));
  OK(cuMemHostAlloc(&h, BIG, 0));
  OK(cuMemsetD8_v2(d, 0, BIG)); /* its first touch faults (cuMemAlloc's memory is not populated): not in a copy */
  memset(h, 1, BIG);
  OK(cuMemcpyHtoDAsync_v2(d, h, BIG, a));
  ((unsigned char *)h)[BIG - 1] = 2; /* while the copy is on the link */
  OK(cuStreamSynchronize(a));
  unsigned char back = 0;
  OK(cuMemcpyDtoH_v2(&back, d + BIG - 1, 1));
  char *g = getenv("SIMCUDA_COPY_GBPS");
  double gbps = atof(g ? g : "1");
  if (gbps <= 1) CHECK_EQ_I64(back, 2); /* 67 ms on the link; at 10000 GB/s it may be done first */
  double t0 = seconds();
  for (int i = 0; i < N; i++) OK(cuMemcpyHtoDAsync_v2(d, h, SZ, a));
  OK(cuStreamSynchronize(a));
  CHECK(seconds() - t0 >= N * SZ / (gbps * 1e9));
  if (gbps <= 1) lanes(a, d, h);
  OK(cuMemFreeHost(h));
  OK(cuMemFree_v2(d));
  /* with a link, a mapping's pages are filled before a copy into it runs its memmove (on
   * the simulator's helper thread as its access is set, or by the copy, within its link
   * time), so that the memmove runs at the link's speed; not on the caller's thread
   * (an H200's cuMemSetAccess takes 21.9 us a page; filling 2 MiB takes 0.2-1.5 ms here) */
  CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED, .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}};
  CUmemAccessDesc rw = {.location = prop.location, .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
  CUdeviceptr va;
  CUmemGenericAllocationHandle m;
  OK(cuMemAddressReserve(&va, SZ, 0, 0, 0));
  OK(cuMemCreate(&m, SZ, &prop, 0));
  OK(cuMemMap(va, SZ, 0, m, 0));
  OK(cuMemSetAccess(va, SZ, &rw, 1));
  void *src;
  OK(cuMemHostAlloc(&src, SZ, 0));
  memset(src, 3, SZ);
  OK(cuMemcpyHtoD_v2(va, src, SZ));
  CHECK_EQ_I64(resident(va, SZ), SZ / sysconf(_SC_PAGESIZE));
  OK(cuMemFreeHost(src));
  OK(cuMemUnmap(va, SZ));
  OK(cuMemRelease(m));
  OK(cuMemAddressFree(va, SZ));
  return test_failures;
}

/* Known host waits for SIMCUDA_CALLS_FILE: 3 cuCtxSynchronize, 2 cuStreamSynchronize, 1
 * cuEventSynchronize (and setup's calls). */
static int calls(void) {
  CUevent e;
  OK(cuEventCreate(&e, 0));
  OK(cuEventRecord(e, NULL));
  for (int i = 0; i < 3; i++) OK(cuCtxSynchronize());
  for (int i = 0; i < 2; i++) OK(cuStreamSynchronize(NULL));
  OK(cuEventSynchronize(e));
  return test_failures;
}

int main(int argc, char **argv) {
  setup();
  if (argc > 1 && !strcmp(argv[1], "--device-time")) return device_time();
  if (argc > 1 && !strcmp(argv[1], "--calls")) return calls();
  if (argc > 1 && !strcmp(argv[1], "--link")) return link_time();
  if (argc > 1 && !strcmp(argv[1], "--bad-launch")) return bad_launch();
  if (argc > 1 && !strcmp(argv[1], "--bad-unmap")) return bad_unmap();
  test_alloc();
  test_copies();
  test_async_order();
  test_events();
  test_event_rerecord();
  test_launch_args();
  test_vmm();
  test_proc_address();
  test_capture();
  test_capture_events();
  test_capture_fork_join();
  test_managed();
  test_fork();
  test_thread_streams();
  return test_report("test_driver");
}
