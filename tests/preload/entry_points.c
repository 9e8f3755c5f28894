/* entry_points: a program that reaches the driver's allocator only through the entry-
 * point queries (as cuBLAS, cuDNN and cudart 13 do) and dlsym on a libcuda handle. Each
 * path allocates one buffer, writes and reads it back, frees it; the output is the same
 * with and without the preload, and the preload must have planned every one of them. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "simcudart.h"

/* cudaGetDriverEntryPoint is deprecated in CUDA 13 and still called by libraries. */
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

typedef CUresult (*alloc_fn)(CUdeviceptr *, size_t);
typedef CUresult (*alloc_async_fn)(CUdeviceptr *, size_t, CUstream);
typedef CUresult (*free_fn)(CUdeviceptr);
typedef CUresult (*free_async_fn)(CUdeviceptr, CUstream);

static void use(const char *path, const CUdeviceptr *pp, int rc) {
  CUdeviceptr p = *pp;
  int in = 0x5eed, out = 0;
  if (!rc && p) rc = (int)cudaMemcpy((void *)p, &in, sizeof in, cudaMemcpyHostToDevice);
  if (!rc && p) rc = (int)cudaMemcpy(&out, (void *)p, sizeof out, cudaMemcpyDeviceToHost);
  printf("%s: rc %d, pointer %s, data %s\n", path, rc, p ? "set" : "null", out == in ? "ok" : "wrong");
}

int main(void) {
  enum cudaDriverEntryPointQueryResult st;
  alloc_fn a1 = NULL, a2 = NULL, a5 = NULL;
  alloc_async_fn a3 = NULL, a4 = NULL;
  free_fn f1 = NULL, f5 = NULL;
  free_async_fn f3 = NULL;
  CUdeviceptr p[5] = {0};
  cudaFree(0); /* the context */
  printf("query %d\n", (int)cudaGetDriverEntryPoint("cuMemAlloc", (void **)&a1, cudaEnableDefault, &st));
  printf("query %d\n", (int)cudaGetDriverEntryPoint("cuMemFree", (void **)&f1, cudaEnableDefault, &st));
  printf("query %d\n", (int)cudaGetDriverEntryPointByVersion("cuMemAlloc", (void **)&a2, 3020, cudaEnableDefault, &st));
  printf("query %d\n", (int)cudaGetDriverEntryPoint_ptsz("cuMemAllocAsync", (void **)&a3, cudaEnablePerThreadDefaultStream, &st));
  printf("query %d\n", (int)cudaGetDriverEntryPoint_ptsz("cuMemFreeAsync", (void **)&f3, cudaEnablePerThreadDefaultStream, &st));
  printf("query %d\n", (int)cudaGetDriverEntryPointByVersion_ptsz("cuMemAllocAsync", (void **)&a4, 11020, cudaEnableDefault, &st));
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  a5 = lib ? (alloc_fn)dlsym(lib, "cuMemAlloc_v2") : NULL;
  f5 = lib ? (free_fn)dlsym(lib, "cuMemFree_v2") : NULL;
  if (!a1 || !f1 || !a2 || !a3 || !f3 || !a4 || !a5 || !f5) return printf("a query gave no function\n"), 1;
  int rc[5] = {a1(&p[0], 1000), a2(&p[1], 2000), a3(&p[2], 3000, NULL), a4(&p[3], 4000, NULL), a5(&p[4], 5000)};
  static const char *const path[5] = {"cudaGetDriverEntryPoint", "cudaGetDriverEntryPointByVersion",
                                      "cudaGetDriverEntryPoint_ptsz", "cudaGetDriverEntryPointByVersion_ptsz", "dlsym"};
  for (int i = 0; i < 5; i++) use(path[i], &p[i], rc[i]);
  printf("frees %d %d %d %d %d\n", f1(p[0]), f1(p[1]), f3(p[2], NULL), f3(p[3], NULL), f5(p[4]));
  printf("double free %d\n", f1(p[0]) != CUDA_SUCCESS);
  return 0;
}
