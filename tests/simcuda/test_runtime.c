/* The simulated runtime end to end, as a program built against cudart sees it: memory,
 * copies, kernels through every runtime launch path, errors, and driver entry points
 * handed out by the driver's own resolver. */
#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../harness.h"
#include "simcudart.h"

#define OK(call) CHECK_EQ_I64((call), cudaSuccess)

/* scale(float *x, float a, int n): x[i] *= a over the whole grid */
static void k_scale(const simcu_launch_t *l) {
  float *x = *(float **)l->args[0], a = *(float *)l->args[1];
  int n = *(int *)l->args[2];
  for (int i = 0; i < n; i++) x[i] *= a;
}
static void scale(float *x, float a, int n) { (void)x, (void)a, (void)n; } /* the host stub */

static void test_memory(void) {
  void *p = (void *)1, *q;
  OK(cudaMalloc(&p, 0));
  CHECK(p == NULL);
  OK(cudaFree(NULL));
  CHECK_EQ_I64(cudaMalloc(&q, (size_t)1 << 40), cudaErrorMemoryAllocation);
  CHECK_EQ_I64(cudaPeekAtLastError(), cudaErrorMemoryAllocation);
  CHECK_EQ_I64(cudaGetLastError(), cudaErrorMemoryAllocation);
  CHECK_EQ_I64(cudaGetLastError(), cudaSuccess);
  CHECK_STR(cudaGetErrorName(cudaErrorMemoryAllocation), "cudaErrorMemoryAllocation");
  float h[256], back[256];
  for (int i = 0; i < 256; i++) h[i] = (float)i;
  OK(cudaMalloc(&p, sizeof h));
  OK(cudaMemcpy(p, h, sizeof h, cudaMemcpyHostToDevice));
  OK(cudaMemset((char *)p + 4, 0, 4));
  OK(cudaMemcpy(back, p, sizeof back, cudaMemcpyDeviceToHost));
  CHECK(back[0] == 0.0f && back[1] == 0.0f && back[255] == 255.0f);
  CHECK_EQ_I64(cudaMemcpy(back, p, 4, (enum cudaMemcpyKind)9), cudaErrorInvalidMemcpyDirection);
  OK(cudaFree(p));
  CHECK_EQ_I64(cudaFree(p), cudaErrorInvalidValue);
  size_t free_b, total;
  OK(cudaMemGetInfo(&free_b, &total));
  CHECK_EQ_I64(total, 64 << 20);
}

static void test_launches(void) {
  size_t sizes[3] = {sizeof(float *), sizeof(float), sizeof(int)};
  OK(__cudaRegisterSimKernel((const void *)scale, "scale", k_scale, 3, sizes));
  float h[8] = {1, 2, 3, 4, 5, 6, 7, 8}, *d, a = 2;
  int n = 8;
  OK(cudaMalloc((void **)&d, sizeof h));
  OK(cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice));
  void *args[] = {&d, &a, &n};
  dim3 one = {1, 1, 1};
  OK(cudaLaunchKernel((const void *)scale, one, one, args, 0, NULL)); /* x2 */
  cudaKernel_t k;
  OK(__cudaGetKernel(&k, (const void *)scale));                       /* nvcc 13's path */
  OK(__cudaLaunchKernel(k, one, one, args, 0, NULL));                  /* x4 */
  cudaLaunchConfig_t cfg = {.gridDim = one, .blockDim = one};
  OK(cudaLaunchKernelExC(&cfg, (const void *)scale, args));           /* x8 */
  cudaStream_t s;
  OK(cudaStreamCreate(&s));
  OK(cudaLaunchKernel_ptsz((const void *)scale, one, one, args, 0, s)); /* x16 */
  OK(cudaStreamSynchronize(s));
  OK(cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost));
  CHECK(h[0] == 16.0f && h[7] == 128.0f);
  CHECK_EQ_I64(cudaLaunchKernel((const void *)test_memory, one, one, args, 0, NULL),
               cudaErrorInvalidDeviceFunction);
  OK(cudaStreamDestroy(s));
  OK(cudaFree(d));
}

/* cudaGetDriverEntryPoint returns exactly what libcuda's resolver returns. It is
 * deprecated in CUDA 13 but still called by libraries, so it is tested as it is. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
static void test_entry_points(void) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  CHECK(h != NULL);
  if (!h) return;
  void *fn = NULL;
  enum cudaDriverEntryPointQueryResult st;
  OK(cudaGetDriverEntryPoint("cuMemAlloc", &fn, cudaEnableDefault, &st));
  CHECK(fn == dlsym(h, "cuMemAlloc_v2"));
  OK(cudaGetDriverEntryPoint_ptsz("cuLaunchKernel", &fn, cudaEnableDefault, &st));
  CHECK(fn == dlsym(h, "cuLaunchKernel_ptsz"));
  OK(cudaGetDriverEntryPointByVersion("cuCtxSynchronize", &fn, 12000, cudaEnableDefault, &st));
  CHECK(fn == dlsym(h, "cuCtxSynchronize"));
  CHECK_EQ_I64(cudaGetDriverEntryPoint("cuNothing", &fn, cudaEnableDefault, &st), cudaErrorSymbolNotFound);
  CHECK_EQ_I64(st, cudaDriverEntryPointSymbolNotFound);
  /* a function found through the runtime answers the driver's parameter queries */
  cudaFunction_t f;
  OK(cudaGetFuncBySymbol(&f, (const void *)scale));
  CUresult (*info)(CUfunction, size_t, size_t *, size_t *) = NULL;
  OK(cudaGetDriverEntryPoint("cuFuncGetParamInfo", (void **)&info, cudaEnableDefault, &st));
  size_t off = 0, size = 0;
  CHECK(info && info((CUfunction)f, 2, &off, &size) == CUDA_SUCCESS);
  CHECK_EQ_I64(off, 12);
  CHECK_EQ_I64(size, 4);
  dlclose(h);
}

static void test_events(void) {
  cudaEvent_t a, b;
  cudaStream_t s;
  float ms = -1;
  OK(cudaEventCreate(&a));
  OK(cudaEventCreate(&b));
  OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  OK(cudaEventRecord(a, s));
  OK(cudaEventRecord(b, s));
  OK(cudaStreamWaitEvent(NULL, b, 0));
  OK(cudaDeviceSynchronize());
  OK(cudaEventElapsedTime(&ms, a, b));
  CHECK(ms >= 0);
  enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusActive;
  OK(cudaStreamIsCapturing(s, &cs));
  CHECK_EQ_I64(cs, cudaStreamCaptureStatusNone);
  OK(cudaEventDestroy(a));
  CHECK_EQ_I64(cudaEventRecord(a, s), cudaErrorInvalidResourceHandle);
  OK(cudaEventDestroy(b));
  OK(cudaStreamDestroy(s));
}

static void *malloc_elsewhere(void *rc) {
  void *p = NULL;
  *(cudaError_t *)rc = cudaMalloc(&p, 64);
  if (p) cudaFree(p);
  return NULL;
}

/* The runtime's view of capture: cudaMalloc during capture fails as on CUDA; a graph
 * replays captured kernels; managed memory is reachable from the host. */
static void test_capture_and_managed(void) {
  cudaStream_t s;
  cudaGraph_t g;
  cudaGraphExec_t e;
  float *m, a = 3;
  int n = 4;
  void *q;
  OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  OK(cudaMallocManaged((void **)&m, 4 * sizeof *m, cudaMemAttachGlobal));
  for (int i = 0; i < 4; i++) m[i] = 1;
  OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  void *args[] = {&m, &a, &n};
  dim3 one = {1, 1, 1};
  OK(cudaLaunchKernel((const void *)scale, one, one, args, 0, s));
  CHECK_EQ_I64(cudaMalloc(&q, 64), cudaErrorStreamCaptureUnsupported);
  CHECK_EQ_I64(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureInvalidated);
  /* thread-local: unsafe for the capturing thread only */
  pthread_t other;
  cudaError_t other_rc = cudaErrorUnknown;
  OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  pthread_create(&other, NULL, malloc_elsewhere, &other_rc);
  pthread_join(other, NULL);
  OK(other_rc);
  CHECK_EQ_I64(cudaMalloc(&q, 64), cudaErrorStreamCaptureUnsupported);
  CHECK_EQ_I64(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureInvalidated);
  OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  OK(cudaLaunchKernel((const void *)scale, one, one, args, 0, s));
  OK(cudaStreamEndCapture(s, &g));
  OK(cudaGraphInstantiate(&e, g, 0));
  OK(cudaGraphLaunch(e, s));
  OK(cudaGraphLaunch(e, s));
  OK(cudaStreamSynchronize(s));
  CHECK(m[0] == 9.0f && m[3] == 9.0f);
  OK(cudaGraphExecDestroy(e));
  OK(cudaGraphDestroy(g));
  OK(cudaFree(m));
  OK(cudaStreamDestroy(s));
  (void)cudaGetLastError();
}

/* Run with SIMCUDA_DEVICES=2: each thread's device, its memory, peers, attributes. */
static void test_devices(void) {
  int n = 0, dev = -1, can = -1, v = 46, back = 0, local = 0;
  void *a, *b;
  struct cudaPointerAttributes at;
  OK(cudaGetDeviceCount(&n));
  CHECK_EQ_I64(n, 2);
  CHECK_EQ_I64(cudaSetDevice(2), cudaErrorInvalidDevice);
  OK(cudaGetDevice(&dev));
  CHECK_EQ_I64(dev, 0);
  OK(cudaMalloc(&a, 64));
  OK(cudaSetDevice(1));
  OK(cudaGetDevice(&dev));
  CHECK_EQ_I64(dev, 1);
  OK(cudaMalloc(&b, 64));
  OK(cudaPointerGetAttributes(&at, b));
  CHECK_EQ_I64(at.type, cudaMemoryTypeDevice);
  CHECK_EQ_I64(at.device, 1);
  CHECK(at.devicePointer == b);
  OK(cudaPointerGetAttributes(&at, &local));
  CHECK_EQ_I64(at.type, cudaMemoryTypeUnregistered);
  CHECK_EQ_I64(at.device, -2);
  OK(cudaDeviceCanAccessPeer(&can, 1, 0));
  CHECK_EQ_I64(can, 1);
  OK(cudaDeviceEnablePeerAccess(0, 0));
  CHECK_EQ_I64(cudaDeviceEnablePeerAccess(0, 0), cudaErrorPeerAccessAlreadyEnabled);
  CHECK_EQ_I64(cudaGetLastError(), cudaErrorPeerAccessAlreadyEnabled);
  OK(cudaDeviceDisablePeerAccess(0));
  OK(cudaMemcpy(a, &v, sizeof v, cudaMemcpyHostToDevice));
  OK(cudaMemcpyPeer(b, 1, a, 0, sizeof v));
  OK(cudaMemcpy(&back, b, sizeof back, cudaMemcpyDeviceToHost));
  CHECK_EQ_I64(back, 46);
  CHECK_EQ_I64(cudaMemcpyPeer(b, 1, a, 3, sizeof v), cudaErrorInvalidDevice);
  OK(cudaFree(b));
  OK(cudaSetDevice(0));
  OK(cudaFree(a));
}

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "--devices")) {
    test_devices();
    return test_report("test_runtime --devices");
  }
  test_memory();
  test_launches();
  test_entry_points();
  test_events();
  test_capture_and_managed();
  return test_report("test_runtime");
}
