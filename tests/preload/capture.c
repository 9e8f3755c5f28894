/* capture: what a program sees from allocations around stream capture, printed so that
 * runs with and without the preload can be compared line for line. A cudaMalloc while
 * a global-mode capture is open fails and invalidates the capture (an unsafe call); in
 * relaxed mode it succeeds, and the captured graph, replayed, computes on the buffers.
 * A stream-ordered free inside a capture is refused (the simulator has no memory nodes;
 * planalloc cannot defer a free to a graph's replay) and the buffer stays usable. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "simcudart.h"

static void add_one_kernel(const simcu_launch_t *l) {
  int *p;
  memcpy(&p, l->args[0], sizeof p);
  for (int i = 0; i < 256; i++) p[i] += 1;
}
static void add_one(int *p) { (void)p; } /* the host stub */

static cudaError_t launch(int *p, cudaStream_t s) {
  void *args[1] = {&p};
  return cudaLaunchKernel((const void *)add_one, (dim3){1, 1, 1}, (dim3){1, 1, 1}, args, 0, s);
}

/* One round: capture in mode, allocate during it, replay the graph twice. */
static void round_in(enum cudaStreamCaptureMode mode, const char *name, cudaStream_t s, int *data) {
  cudaGraph_t g = NULL;
  cudaGraphExec_t e = NULL;
  void *during = NULL;
  printf("%s: begin %d", name, (int)cudaStreamBeginCapture(s, mode));
  printf(", launch %d", (int)launch(data, s));
  cudaError_t m = cudaMalloc(&during, 4096);
  printf(", malloc during capture %d", (int)m);
  void *async = NULL; /* made before the capture; its stream-ordered free inside it */
  if (mode == cudaStreamCaptureModeRelaxed && !cudaStreamEndCapture(s, &g)) {
    cudaGraphDestroy(g), g = NULL;
    printf(", malloc before %d", (int)cudaMalloc(&async, 4096));
    printf(", begin again %d", (int)cudaStreamBeginCapture(s, mode));
    printf(", launch %d", (int)launch(data, s));
    printf(", free async during capture %d", (int)cudaFreeAsync(async, s));
  }
  cudaError_t end = cudaStreamEndCapture(s, &g);
  printf(", end %d", (int)end);
  if (m == cudaSuccess) printf(", free %d", (int)cudaFree(during));
  if (async) printf(", free after %d", (int)cudaFree(async));
  if (end == cudaSuccess) {
    printf(", instantiate %d", (int)cudaGraphInstantiate(&e, g, 0));
    for (int i = 0; i < 2; i++) printf(", replay %d", (int)cudaGraphLaunch(e, s));
    printf(", sync %d", (int)cudaStreamSynchronize(s));
    cudaGraphExecDestroy(e), cudaGraphDestroy(g);
  }
  cudaGetLastError();
  printf("\n");
}

int main(void) {
  size_t sizes[1] = {sizeof(int *)};
  int *data = NULL, host[256];
  cudaStream_t s;
  if (__cudaRegisterSimKernel((const void *)add_one, "add_one", add_one_kernel, 1, sizes)) return 1;
  printf("malloc %d\n", (int)cudaMalloc((void **)&data, sizeof host));
  printf("stream %d\n", (int)cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  memset(host, 0, sizeof host);
  printf("copy in %d\n", (int)cudaMemcpy(data, host, sizeof host, cudaMemcpyHostToDevice));
  round_in(cudaStreamCaptureModeGlobal, "global", s, data);
  round_in(cudaStreamCaptureModeThreadLocal, "thread-local", s, data);
  round_in(cudaStreamCaptureModeRelaxed, "relaxed", s, data);
  printf("copy out %d", (int)cudaMemcpy(host, data, sizeof host, cudaMemcpyDeviceToHost));
  printf(", data[0] %d data[255] %d\n", host[0], host[255]);
  printf("free %d\n", (int)cudaFree(data));
  return 0;
}
