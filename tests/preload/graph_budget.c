/* graph_budget: a CUDA graph reads a buffer that left the device. Under a budget that
 * holds one of two 32 MiB buffers, A is filled, a graph that sums A is captured, then B
 * is filled (A goes to host memory) and the graph launched: its kernel is no launch the
 * preload scans, so A must be back before it runs. Prints the graph's sum; without
 * planalloc the same. With "captured", A has left before the capture: the captured
 * launch runs nothing then, and must neither bring A back nor order the capturing
 * stream after planalloc's copies (CUDA refuses a capture's wait on outside work and
 * invalidates the capture); the graph's launch brings it back. With "relaxed", B is
 * allocated inside a relaxed-mode capture: A leaves then, and its copy out must follow
 * the fill queued before the capture without an event on the capturing stream (one
 * recorded there would be captured). "forked" is "captured" with the sum launched on a
 * second stream that joined the capture through an event (fork/join, as frameworks
 * capture side streams). Meant for PLANALLOC_BUDGET=36M.
 * Usage: graph_budget [captured|relaxed|forked] */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROGRAM "graph_budget"
#include "program.h"

#define N (8u << 20) /* ints: 32 MiB */

static void fill_kernel(const simcu_launch_t *l) {
  int *p, v;
  memcpy(&p, l->args[0], sizeof p), memcpy(&v, l->args[1], sizeof v);
  for (uint32_t i = 0; i < N; i++) p[i] = v + (int)(i % 7);
}

static void sum_kernel(const simcu_launch_t *l) {
  const int *p;
  long long *out, sum = 0;
  memcpy(&p, l->args[0], sizeof p), memcpy(&out, l->args[1], sizeof out);
  for (uint32_t i = 0; i < N; i++) sum += p[i];
  *out = sum;
}

static void fill(int *p, int v) { (void)p, (void)v; } /* host stubs */
static void sum(const int *p, long long *out) { (void)p, (void)out; }

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "";
  bool forked = !strcmp(mode, "forked"), captured = forked || !strcmp(mode, "captured"), relaxed = !strcmp(mode, "relaxed");
  size_t fsz[2] = {sizeof(void *), sizeof(int)}, ssz[2] = {sizeof(void *), sizeof(void *)};
  CK(__cudaRegisterSimKernel((const void *)fill, "fill", fill_kernel, 2, fsz));
  CK(__cudaRegisterSimKernel((const void *)sum, "sum", sum_kernel, 2, ssz));
  cudaStream_t s, t;
  cudaEvent_t fork, join;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&t, cudaStreamNonBlocking));
  CK(cudaEventCreateWithFlags(&fork, cudaEventDisableTiming));
  CK(cudaEventCreateWithFlags(&join, cudaEventDisableTiming));
  long long *out, host = 0;
  int *a, *b, va = 3, vb = -1000;
  CK(cudaMalloc((void **)&out, sizeof host));
  CK(cudaMalloc((void **)&a, N * sizeof *a));
  void *fa[2] = {&a, &va}, *fb[2] = {&b, &vb}, *sa[2] = {&a, &out};
  launch((const void *)fill, fa, s);
  cudaGraph_t g;
  cudaGraphExec_t e;
  if (captured) {
    CK(cudaMalloc((void **)&b, N * sizeof *b)); /* A's pages leave for B's */
    launch((const void *)fill, fb, s);
  }
  CK(cudaStreamBeginCapture(s, relaxed ? cudaStreamCaptureModeRelaxed : cudaStreamCaptureModeGlobal));
  if (relaxed) CK(cudaMalloc((void **)&b, N * sizeof *b));
  if (forked) {
    CK(cudaEventRecord(fork, s));
    CK(cudaStreamWaitEvent(t, fork, 0)); /* t joins the capture */
    launch((const void *)sum, sa, t);
    CK(cudaEventRecord(join, t));
    CK(cudaStreamWaitEvent(s, join, 0));
  } else {
    launch((const void *)sum, sa, s);
  }
  CK(cudaStreamEndCapture(s, &g));
  CK(cudaGraphInstantiate(&e, g, 0));
  if (relaxed) launch((const void *)fill, fb, s);
  if (!captured && !relaxed) {
    CK(cudaMalloc((void **)&b, N * sizeof *b)); /* A's pages leave for B's */
    launch((const void *)fill, fb, s);
  }
  CK(cudaGraphLaunch(e, s));
  CK(cudaStreamSynchronize(s));
  CK(cudaMemcpy(&host, out, sizeof host, cudaMemcpyDeviceToHost));
  printf("graph sum %lld\n", host);
  CK(cudaGraphExecDestroy(e));
  CK(cudaGraphDestroy(g));
  CK(cudaEventDestroy(join));
  CK(cudaEventDestroy(fork));
  CK(cudaStreamDestroy(t));
  CK(cudaFree(b));
  CK(cudaFree(a));
  CK(cudaFree(out));
  return 0;
}
