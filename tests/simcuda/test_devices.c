/* Several devices (issue #26), run with SIMCUDA_DEVICES=2 SIMCUDA_MEMORY=64MiB
 * SIMCUDA_STRICT=1: each device its own capacity and primary context, pointer
 * attributes naming the device, peer access for cuMemAlloc memory by
 * cuCtxEnablePeerAccess and for VMM memory by cuMemSetAccess only, peer copies. Every
 * kernel here may use what it is given, so the exit report must stay silent. With
 * --peer-fault it instead has device 0 read device 1's memory without access, once for
 * cuMemAlloc memory and once for a mapping opened to device 1 alone, and exits 0: the
 * report must then count 2 and fail the process under SIMCUDA_STRICT. */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <stdbool.h>
#include <string.h>
#include <time.h>
#include <spawn.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../harness.h"
#include "simcuda.h"

CUresult simcuRegisterKernel(CUfunction *func, CUkernel *kernel, const char *name,
                             simcu_kernel_fn fn, unsigned nparams, const size_t *sizes);

#define OK(call) CHECK_EQ_I64((call), CUDA_SUCCESS)
#define MiB (1u << 20)
#define G (2u << 20)

static void k_copy_int(const simcu_launch_t *l) { **(int **)l->args[1] = **(int **)l->args[0]; }

static void k_sleep_write(const simcu_launch_t *l) {
  int *p = *(int **)l->args[0], v = *(int *)l->args[1], ms = *(int *)l->args[2];
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
  *p = v;
}

static CUfunction f_copy, f_write;
static CUcontext ctx[2];

static void setup(void) {
  int n = 0;
  CUdevice dev;
  OK(cuInit(0));
  OK(cuDeviceGetCount(&n));
  CHECK_EQ_I64(n, 2);
  CHECK_EQ_I64(cuDeviceGet(&dev, 2), CUDA_ERROR_INVALID_DEVICE);
  CHECK_EQ_I64(cuDevicePrimaryCtxRetain(&ctx[0], 2), CUDA_ERROR_INVALID_DEVICE);
  for (int d = 0; d < 2; d++) {
    OK(cuDeviceGet(&dev, d));
    OK(cuDevicePrimaryCtxRetain(&ctx[d], dev));
  }
  CHECK(ctx[0] != ctx[1]);
  OK(cuCtxSetCurrent(ctx[0]));
  size_t c[2] = {8, 8};
  OK(simcuRegisterKernel(&f_copy, NULL, "copy_int", k_copy_int, 2, c));
  size_t w[3] = {8, 4, 4};
  OK(simcuRegisterKernel(&f_write, NULL, "sleep_write", k_sleep_write, 3, w));
}

static void on(int d) { OK(cuCtxSetCurrent(ctx[d])); }

static CUresult launch_copy(CUdeviceptr src, CUdeviceptr dst) {
  void *args[] = {&src, &dst};
  return cuLaunchKernel(f_copy, 1, 1, 1, 1, 1, 1, 0, NULL, args, NULL);
}

static void put(CUdeviceptr p, int v) { OK(cuMemcpyHtoD_v2(p, &v, sizeof v)); }

static int get(CUdeviceptr p) {
  int v = -1;
  OK(cuMemcpyDtoH_v2(&v, p, sizeof v));
  return v;
}

/* Each device holds SIMCUDA_MEMORY: device 0 full leaves device 1 empty. */
static void test_capacity(void) {
  CUdeviceptr a, b, c = 7;
  CUdevice dev;
  size_t free0, free1, total;
  on(1);
  OK(cuCtxGetDevice(&dev));
  CHECK_EQ_I64(dev, 1);
  OK(cuMemGetInfo_v2(&free1, &total));
  on(0);
  OK(cuMemAlloc_v2(&a, 48 * MiB));
  CHECK_EQ_I64(cuMemAlloc_v2(&c, 32 * MiB), CUDA_ERROR_OUT_OF_MEMORY);
  CHECK_EQ_I64(c, 7);
  OK(cuMemGetInfo_v2(&free0, &total));
  CHECK_EQ_I64(free0, 16 * MiB);
  on(1);
  OK(cuMemAlloc_v2(&b, 48 * MiB));
  OK(cuMemGetInfo_v2(&free1, &total));
  CHECK_EQ_I64(free1, 16 * MiB);
  CHECK_EQ_I64(total, 64 * MiB);
  OK(cuMemFree_v2(b));
  on(0);
  OK(cuMemFree_v2(a));
}

static void test_attributes(void) {
  CUdeviceptr a, start = 0, dp = 0;
  int ordinal = -1, local = 0;
  unsigned type = 0;
  size_t size = 0;
  CUcontext c = NULL;
  on(1);
  OK(cuMemAlloc_v2(&a, 1000));
  on(0); /* the attributes are the memory's, not the caller's */
  OK(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, a + 100));
  CHECK_EQ_I64(ordinal, 1);
  OK(cuPointerGetAttribute(&c, CU_POINTER_ATTRIBUTE_CONTEXT, a));
  CHECK(c == ctx[1]);
  OK(cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, a));
  CHECK_EQ_I64(type, CU_MEMORYTYPE_DEVICE);
  OK(cuPointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, a + 100));
  CHECK_EQ_I64(start, a);
  OK(cuPointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, a + 100));
  CHECK_EQ_I64(size, 1000);
  CHECK_EQ_I64(cuPointerGetAttribute(NULL, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, a), CUDA_ERROR_INVALID_VALUE);
  ordinal = 5;
  CHECK_EQ_I64(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, (CUdeviceptr)&local),
               CUDA_ERROR_INVALID_VALUE);
  CHECK_EQ_I64(ordinal, 5);
  /* the plural form fills defaults for memory CUDA does not know */
  CUpointer_attribute what[] = {CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, CU_POINTER_ATTRIBUTE_DEVICE_POINTER};
  void *out[] = {&ordinal, &dp};
  OK(cuPointerGetAttributes(2, what, out, (CUdeviceptr)&local));
  CHECK_EQ_I64(ordinal, -2);
  CHECK_EQ_I64(dp, 0);
  OK(cuPointerGetAttributes(2, what, out, a + 8));
  CHECK_EQ_I64(ordinal, 1);
  CHECK_EQ_I64(dp, a + 8);
  on(1);
  OK(cuMemFree_v2(a));
}

/* cuMemAlloc memory: device 0's kernels may read device 1's once peer access is on. */
static void test_peer(void) {
  int can = -1;
  CUdeviceptr a, b;
  OK(cuDeviceCanAccessPeer(&can, 0, 1));
  CHECK_EQ_I64(can, 1);
  OK(cuDeviceCanAccessPeer(&can, 1, 1));
  CHECK_EQ_I64(can, 0);
  CHECK_EQ_I64(cuDeviceCanAccessPeer(&can, 0, 2), CUDA_ERROR_INVALID_DEVICE);
  on(1);
  OK(cuMemAlloc_v2(&b, 64));
  put(b, 41);
  on(0);
  OK(cuMemAlloc_v2(&a, 64));
  CHECK_EQ_I64(cuCtxEnablePeerAccess(ctx[0], 0), CUDA_ERROR_INVALID_DEVICE);
  CHECK_EQ_I64(cuCtxEnablePeerAccess(ctx[1], 1), CUDA_ERROR_INVALID_VALUE);
  CHECK_EQ_I64(cuCtxDisablePeerAccess(ctx[1]), CUDA_ERROR_PEER_ACCESS_NOT_ENABLED);
  OK(cuCtxEnablePeerAccess(ctx[1], 0));
  CHECK_EQ_I64(cuCtxEnablePeerAccess(ctx[1], 0), CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED);
  OK(launch_copy(b, a));
  CHECK_EQ_I64(get(a), 41);
  OK(cuCtxSynchronize());
  OK(cuCtxDisablePeerAccess(ctx[1]));
  /* a peer copy needs no peer access */
  put(a, 43);
  OK(cuMemcpyPeer(b, ctx[1], a, ctx[0], sizeof(int)));
  CHECK_EQ_I64(get(b), 43);
  CHECK_EQ_I64(cuMemcpyPeer(b, (CUcontext)&can, a, ctx[0], sizeof(int)), CUDA_ERROR_INVALID_CONTEXT);
  put(a, 44);
  OK(cuMemcpyPeerAsync(b, ctx[1], a, ctx[0], sizeof(int), NULL));
  OK(cuCtxSynchronize());
  CHECK_EQ_I64(get(b), 44);
  OK(cuMemFree_v2(a));
  on(1);
  OK(cuMemFree_v2(b));
  on(0);
}

/* A mapping of device 1's memory, opened to device 1 and then to both: cuMemSetAccess
 * alone decides, and physical memory counts against the handle's device. */
static CUdeviceptr map_on_1(CUmemGenericAllocationHandle *h) {
  CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                              .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 1}};
  CUmemAccessDesc one = {.location = prop.location, .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
  CUdeviceptr va;
  OK(cuMemAddressReserve(&va, G, 0, 0, 0));
  OK(cuMemCreate(h, G, &prop, 0));
  OK(cuMemMap(va, G, 0, *h, 0));
  OK(cuMemSetAccess(va, G, &one, 1));
  return va;
}

static void unmap(CUdeviceptr va, CUmemGenericAllocationHandle h) {
  OK(cuMemUnmap(va, G));
  OK(cuMemRelease(h));
  OK(cuMemAddressFree(va, G));
}

static void test_vmm(void) {
  CUmemAllocationProp bad = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                             .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 2}};
  CUmemGenericAllocationHandle h;
  size_t free0, free1, total;
  CHECK_EQ_I64(cuMemCreate(&h, G, &bad, 0), CUDA_ERROR_INVALID_DEVICE);
  OK(cuMemGetInfo_v2(&free0, &total));
  CUdeviceptr va = map_on_1(&h), a, dp = 0;
  int ordinal = -1;
  OK(cuMemGetInfo_v2(&free1, &total));
  CHECK_EQ_I64(free1, free0); /* device 1's memory, not the current device 0's */
  OK(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, va + 64));
  CHECK_EQ_I64(ordinal, 1);
  OK(cuPointerGetAttribute(&dp, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, va + 64));
  CHECK_EQ_I64(dp, va);
  CUmemAccessDesc both[2] = {{.location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0}, .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE},
                             {.location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 1}, .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE}};
  both[1].location.id = 2;
  CHECK_EQ_I64(cuMemSetAccess(va, G, both, 2), CUDA_ERROR_INVALID_DEVICE);
  both[1].location.id = 1, both[1].flags = 2;
  CHECK_EQ_I64(cuMemSetAccess(va, G, both, 2), CUDA_ERROR_INVALID_VALUE);
  both[1].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  OK(cuMemSetAccess(va, G, both, 2));
  OK(cuMemAlloc_v2(&a, 64));
  put(va + 64, 45);
  OK(launch_copy(va + 64, a)); /* device 0, memory of device 1 opened to it */
  CHECK_EQ_I64(get(a), 45);
  OK(cuMemFree_v2(a));
  unmap(va, h);
}

static CUresult launch_write(CUstream s, CUdeviceptr p, int v, int ms) {
  void *args[] = {&p, &v, &ms};
  return cuLaunchKernel(f_write, 1, 1, 1, 1, 1, 1, 0, s, args, NULL);
}

/* Each device has its own legacy stream and its own synchronisation; an event records
 * only on its own device's streams, and any stream may wait for it. */
static void test_streams(void) {
  CUdeviceptr b, a;
  CUevent e0;
  CUstream s1;
  on(1);
  OK(cuMemAlloc_v2(&b, 64));
  put(b, 0);
  OK(cuStreamCreate(&s1, CU_STREAM_NON_BLOCKING));
  CUdevice d = -1;
  OK(cuStreamGetDevice(NULL, &d));
  CHECK_EQ_I64(d, 1);
  on(0);
  OK(cuStreamGetDevice(s1, &d));
  CHECK_EQ_I64(d, 1);
  OK(cuStreamGetDevice(CU_STREAM_PER_THREAD, &d));
  CHECK_EQ_I64(d, 0);
  OK(cuMemAlloc_v2(&a, 64));
  put(a, 0);
  OK(cuEventCreate(&e0, CU_EVENT_DISABLE_TIMING));
  CHECK_EQ_I64(cuEventRecord(e0, s1), CUDA_ERROR_INVALID_HANDLE);
  OK(launch_write(NULL, a, 8, 300));
  OK(cuEventRecord(e0, NULL));
  on(1);
  CHECK_EQ_I64(cuEventRecord(e0, NULL), CUDA_ERROR_INVALID_HANDLE); /* device 1's legacy stream */
  OK(cuCtxEnablePeerAccess(ctx[0], 0));
  OK(launch_write(NULL, b, 5, 0)); /* device 1's legacy stream: not ordered after device 0's */
  OK(cuCtxSynchronize());          /* device 1's streams only: device 0's writer still sleeps */
  CHECK_EQ_I64(*(volatile int *)b, 5);
  CHECK_EQ_I64(cuEventQuery(e0), CUDA_ERROR_NOT_READY);
  OK(cuStreamWaitEvent(s1, e0, 0));
  OK(launch_write(s1, b, 9, 0)); /* after the wait: device 0's writer is done */
  OK(cuStreamSynchronize(s1));
  CHECK_EQ_I64(*(volatile int *)a, 8);
  CHECK_EQ_I64(*(volatile int *)b, 9);
  OK(cuCtxDisablePeerAccess(ctx[0]));
  OK(cuStreamDestroy_v2(s1));
  OK(cuMemFree_v2(b));
  on(0);
  OK(cuEventDestroy_v2(e0));
  OK(cuMemFree_v2(a));
}

/* ---- IPC across processes: the test runs itself again as the importer -------------- */

extern char **environ;

/* An IPC handle (memory or event: CU_IPC_HANDLE_SIZE bytes either way) as hex, and back. */
static void hex(const void *h, char out[2 * CU_IPC_HANDLE_SIZE + 1]) {
  for (int i = 0; i < CU_IPC_HANDLE_SIZE; i++) snprintf(out + 2 * i, 3, "%02x", ((const unsigned char *)h)[i]);
}

static void unhex(const char *s, void *h) {
  memset(h, 0, CU_IPC_HANDLE_SIZE);
  for (int i = 0; i < CU_IPC_HANDLE_SIZE && s[2 * i] && s[2 * i + 1]; i++) {
    unsigned v = 0;
    sscanf(s + 2 * i, "%2x", &v);
    ((unsigned char *)h)[i] = (unsigned char)v;
  }
}

/* The importer: reads what the exporter wrote, writes back by a copy and by a kernel. */
static int ipc_child(const char *text) {
  CUipcMemHandle h;
  unhex(text, &h);
  CUdeviceptr p, q;
  int ordinal = -1;
  on(0);
  CHECK_EQ_I64(cuIpcOpenMemHandle_v2(&p, h, 0), CUDA_ERROR_INVALID_VALUE); /* the flag is required */
  OK(cuIpcOpenMemHandle_v2(&p, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
  OK(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p));
  CHECK_EQ_I64(ordinal, 1); /* the exporter's device */
  CHECK_EQ_I64(get(p + 100), 0x1234);
  put(p + 200, 0x5678);
  OK(launch_copy(p + 100, p + 300)); /* a kernel here uses the imported memory */
  OK(cuCtxSynchronize());
  OK(cuIpcOpenMemHandle_v2(&q, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
  CHECK_EQ_I64(q, p); /* opened once, counted */
  OK(cuIpcCloseMemHandle(q));
  CHECK_EQ_I64(get(p + 100), 0x1234); /* still open once */
  OK(cuIpcCloseMemHandle(p));
  CHECK_EQ_I64(cuIpcCloseMemHandle(p), CUDA_ERROR_INVALID_VALUE);
  return test_failures;
}

/* The importer of an event: its stream waits for the exporter's kernel (300 ms of sleep
 * before it writes 99), then reads what the kernel wrote; without the wait it reads 0. */
static int event_child(const char *mem_text, const char *event_text) {
  CUipcMemHandle mh;
  CUipcEventHandle eh;
  unhex(mem_text, &mh);
  unhex(event_text, &eh);
  CUdeviceptr p;
  CUevent e;
  CUstream s;
  int got = -1;
  on(0);
  OK(cuIpcOpenMemHandle_v2(&p, mh, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
  OK(cuIpcOpenEventHandle(&e, eh));
  OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  OK(cuStreamWaitEvent(s, e, 0));
  OK(cuMemcpyDtoHAsync_v2(&got, p, sizeof got, s));
  OK(cuStreamSynchronize(s));
  CHECK_EQ_I64(got, 99);
  OK(cuEventSynchronize(e));
  OK(cuEventQuery(e));
  OK(cuEventRecord(e, s)); /* either process may record it */
  OK(cuStreamSynchronize(s));
  OK(cuIpcCloseMemHandle(p));
  OK(cuEventDestroy_v2(e));
  return test_failures;
}

static void test_ipc_event(const char *self) {
  CUdeviceptr a;
  CUevent e, plain;
  CUipcMemHandle mh;
  CUipcEventHandle eh;
  CHECK_EQ_I64(cuEventCreate(&e, CU_EVENT_INTERPROCESS), CUDA_ERROR_INVALID_VALUE); /* timing must be off */
  OK(cuEventCreate(&plain, CU_EVENT_DISABLE_TIMING));
  CHECK_EQ_I64(cuIpcGetEventHandle(&eh, plain), CUDA_ERROR_INVALID_HANDLE);
  OK(cuEventCreate(&e, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING));
  on(0);
  OK(cuMemAlloc_v2(&a, 64));
  put(a, 0);
  OK(launch_write(NULL, a, 99, 300));
  OK(cuEventRecord(e, NULL));
  OK(cuIpcGetMemHandle(&mh, a));
  OK(cuIpcGetEventHandle(&eh, e));
  char mt[2 * CU_IPC_HANDLE_SIZE + 1], et[2 * CU_IPC_HANDLE_SIZE + 1];
  hex(&mh, mt);
  hex(&eh, et);
  char *argv[] = {(char *)self, "--event-child", mt, et, NULL};
  pid_t pid;
  int status = -1;
  OK(posix_spawn(&pid, self, NULL, NULL, argv, environ));
  CHECK_EQ_I64(waitpid(pid, &status, 0), pid);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  OK(cuEventSynchronize(e)); /* the child's record ran too */
  OK(cuMemFree_v2(a));
  OK(cuEventDestroy_v2(e));
  OK(cuEventDestroy_v2(plain));
}

static void test_ipc(const char *self) {
  CUdeviceptr a, b, va;
  CUipcMemHandle h;
  CUmemGenericAllocationHandle ph;
  int local = 0;
  on(1);
  OK(cuMemAlloc_v2(&a, 4096));
  put(a + 100, 0x1234);
  OK(cuIpcGetMemHandle(&h, a + 8)); /* the allocation holding the address */
  CUdeviceptr own;
  CHECK_EQ_I64(cuIpcOpenMemHandle_v2(&own, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS), CUDA_ERROR_INVALID_CONTEXT);
  CUipcMemHandle none;
  CHECK_EQ_I64(cuIpcGetMemHandle(&none, (CUdeviceptr)&local), CUDA_ERROR_INVALID_VALUE);
  va = map_on_1(&ph);
  CHECK_EQ_I64(cuIpcGetMemHandle(&none, va), CUDA_ERROR_INVALID_VALUE); /* VMM memory has none */
  unmap(va, ph);
  OK(cuMemAllocAsync(&b, 64, NULL));
  CHECK_EQ_I64(cuIpcGetMemHandle(&none, b), CUDA_ERROR_INVALID_VALUE); /* nor a stream-ordered pool's */
  OK(cuMemFreeAsync(b, NULL));
  char text[2 * CU_IPC_HANDLE_SIZE + 1];
  hex(&h, text);
  char *argv[] = {(char *)self, "--ipc-child", text, NULL};
  pid_t pid;
  int status = -1;
  OK(posix_spawn(&pid, self, NULL, NULL, argv, environ));
  CHECK_EQ_I64(waitpid(pid, &status, 0), pid);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  CHECK_EQ_I64(get(a + 200), 0x5678);
  CHECK_EQ_I64(get(a + 300), 0x1234);
  OK(cuMemFree_v2(a));
  on(0);
}

/* VMM memory is shared by POSIX file descriptors: exported from a handle made for it,
 * imported as a handle of the same bytes (here in one process: the descriptor is the
 * kernel's object, whoever holds it). */
static void test_shareable(void) {
  CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED,
                              .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 1},
                              .requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR};
  CUmemAccessDesc rw = {.location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 1}, .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
  CUmemGenericAllocationHandle h, plain, back;
  CUdeviceptr va;
  int fd = -1;
  size_t free0, free1, total;
  on(1);
  OK(cuMemCreate(&h, G, &prop, 0));
  va = map_on_1(&plain); /* created without a shareable type */
  CHECK_EQ_I64(cuMemExportToShareableHandle(&fd, plain, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0), CUDA_ERROR_NOT_PERMITTED);
  CHECK_EQ_I64(cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 1), CUDA_ERROR_INVALID_VALUE);
  OK(cuMemExportToShareableHandle(&fd, h, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
  CHECK(fd >= 0);
  OK(cuMemGetInfo_v2(&free0, &total));
  OK(cuMemImportFromShareableHandle(&back, (void *)(intptr_t)fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
  OK(cuMemGetInfo_v2(&free1, &total));
  CHECK_EQ_I64(free1, free0); /* the same memory, not more */
  CHECK_EQ_I64(cuMemImportFromShareableHandle(&back, (void *)(intptr_t)-1, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR), CUDA_ERROR_INVALID_VALUE);
  OK(cuMemUnmap(va, G)); /* map the exported memory where the plain handle was, the import beside */
  OK(cuMemRelease(plain));
  OK(cuMemMap(va, G, 0, h, 0));
  OK(cuMemSetAccess(va, G, &rw, 1));
  CUdeviceptr vb;
  OK(cuMemAddressReserve(&vb, G, 0, 0, 0));
  OK(cuMemMap(vb, G, 0, back, 0));
  OK(cuMemSetAccess(vb, G, &rw, 1));
  put(va + 4096, 0x777);
  CHECK_EQ_I64(get(vb + 4096), 0x777);
  OK(cuMemUnmap(vb, G));
  OK(cuMemRelease(back));
  OK(cuMemAddressFree(vb, G));
  unmap(va, h);
  close(fd);
  on(0);
}

static int peer_fault(void) {
  CUdeviceptr a, b;
  CUmemGenericAllocationHandle h;
  on(1);
  OK(cuMemAlloc_v2(&b, 64));
  CUdeviceptr va = map_on_1(&h);
  on(0);
  OK(cuMemAlloc_v2(&a, 64));
  OK(launch_copy(b, a));      /* no peer access */
  OK(launch_copy(va + 64, a)); /* mapped for device 1 only */
  OK(cuCtxSynchronize());
  unmap(va, h);
  return test_failures;
}

int main(int argc, char **argv) {
  setup();
  if (argc > 1 && !strcmp(argv[1], "--peer-fault")) return peer_fault();
  if (argc > 3 && !strcmp(argv[1], "--event-child")) {
    event_child(argv[2], argv[3]);
    return test_report("test_devices --event-child");
  }
  if (argc > 2 && !strcmp(argv[1], "--ipc-child")) {
    ipc_child(argv[2]);
    return test_report("test_devices --ipc-child");
  }
  test_capacity();
  test_attributes();
  test_peer();
  test_vmm();
  test_streams();
  test_ipc(argv[0]);
  test_shareable();
  test_ipc_event(argv[0]);
  return test_report("test_devices");
}
