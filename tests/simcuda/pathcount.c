/* pathcount: a tiny LD_PRELOAD library that counts what it sees through each path a
 * program reaches CUDA by: (a) exported runtime symbols, (b) dlsym on a libcuda handle,
 * (c) entry points handed out by cuGetProcAddress_v2. It proves the simulator loads the
 * way the real libraries do: an interposer that skips a path sees less. Counts go to
 * stderr at exit as one line. No version script: unversioned exports bind versioned
 * references such as cudaMalloc@libcudart.so.13 and dlsym@GLIBC_2.34. */
#include <cuda.h>
#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "dlsym_trampoline.h"

#define EXPORT __attribute__((visibility("default")))

static atomic_long n_cuda_malloc, n_cuda_launch, n_dlsym_gpa, n_gpa_alloc, n_gpa_launch,
    n_gpa_launch_ex;

typedef void *(*dlsym_fn)(void *, const char *);

static dlsym_fn real_dlsym(void) {
  static dlsym_fn fn;
  if (!fn) fn = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
  if (!fn) fn = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
  return fn;
}

/* ---- (c) entry points from the driver's resolver ------------------------------- */

static PFN_cuGetProcAddress_v12000 real_gpa;
static PFN_cuMemAlloc_v3020 real_alloc;
static PFN_cuLaunchKernel_v4000 real_launch, real_launch_ptsz;
static PFN_cuLaunchKernelEx_v11060 real_launch_ex, real_launch_ex_ptsz;

static CUresult w_alloc(CUdeviceptr *p, size_t n) {
  n_gpa_alloc++;
  return real_alloc(p, n);
}

#define LAUNCH_ARGS CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, \
                    unsigned bz, unsigned sm, CUstream s, void **p, void **e
static CUresult w_launch(LAUNCH_ARGS) {
  n_gpa_launch++;
  return real_launch(f, gx, gy, gz, bx, by, bz, sm, s, p, e);
}
static CUresult w_launch_ptsz(LAUNCH_ARGS) {
  n_gpa_launch++;
  return real_launch_ptsz(f, gx, gy, gz, bx, by, bz, sm, s, p, e);
}
static CUresult w_launch_ex(const CUlaunchConfig *c, CUfunction f, void **p, void **e) {
  n_gpa_launch_ex++;
  return real_launch_ex(c, f, p, e);
}
static CUresult w_launch_ex_ptsz(const CUlaunchConfig *c, CUfunction f, void **p, void **e) {
  n_gpa_launch_ex++;
  return real_launch_ex_ptsz(c, f, p, e);
}

/* Calls the real resolver first, then swaps in the wrapper for exactly what came back. */
static CUresult w_gpa(const char *sym, void **pfn, int v, cuuint64_t flags,
                      CUdriverProcAddressQueryResult *st) {
  CUresult r = real_gpa(sym, pfn, v, flags, st);
  if (r || !pfn || !*pfn) return r;
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  dlsym_fn ds = real_dlsym();
  if (!h) return r;
  struct { const char *name; void **real; void *wrapper; } map[] = {
      {"cuMemAlloc_v2", (void **)&real_alloc, (void *)w_alloc},
      {"cuLaunchKernel", (void **)&real_launch, (void *)w_launch},
      {"cuLaunchKernel_ptsz", (void **)&real_launch_ptsz, (void *)w_launch_ptsz},
      {"cuLaunchKernelEx", (void **)&real_launch_ex, (void *)w_launch_ex},
      {"cuLaunchKernelEx_ptsz", (void **)&real_launch_ex_ptsz, (void *)w_launch_ex_ptsz},
  };
  for (size_t i = 0; i < sizeof map / sizeof *map; i++)
    if (*pfn == ds(h, map[i].name)) *map[i].real = *pfn, *pfn = map[i].wrapper;
  dlclose(h);
  return r;
}

/* ---- (b) dlsym ---------------------------------------------------------------------- */

/* The exported dlsym is the project's trampoline (preload/dlsym_trampoline.h): the
 * pseudo-handles go straight to the real dlsym, real handles to the C hook. */
void *pathcount_real_dlsym __attribute__((visibility("hidden")));
void *pathcount_resolve_dlsym(void) __attribute__((visibility("hidden")));
void *pathcount_dlsym_hook(void *handle, const char *name) __attribute__((visibility("hidden")));

void *pathcount_resolve_dlsym(void) { return pathcount_real_dlsym = (void *)real_dlsym(); }

PA_DLSYM_TRAMPOLINE(pathcount_dlsym_hook, pathcount_real_dlsym, pathcount_resolve_dlsym);

void *pathcount_dlsym_hook(void *handle, const char *name) {
  void *fn = real_dlsym()(handle, name);
  if (fn && !strcmp(name, "cuGetProcAddress_v2")) {
    n_dlsym_gpa++;
    real_gpa = (PFN_cuGetProcAddress_v12000)fn;
    return (void *)w_gpa;
  }
  return fn;
}

/* ---- (a) exported runtime symbols ------------------------------------------------------ */

#include <cuda_runtime_api.h>

EXPORT cudaError_t cudaMalloc(void **p, size_t n) {
  n_cuda_malloc++;
  cudaError_t (*real)(void **, size_t) = (cudaError_t(*)(void **, size_t))dlsym(RTLD_NEXT, "cudaMalloc");
  return real(p, n);
}

EXPORT cudaError_t __cudaLaunchKernel(cudaKernel_t k, dim3 g, dim3 b, void **a, size_t sm, cudaStream_t s);
EXPORT cudaError_t __cudaLaunchKernel(cudaKernel_t k, dim3 g, dim3 b, void **a, size_t sm, cudaStream_t s) {
  n_cuda_launch++;
  typedef cudaError_t (*fn_t)(cudaKernel_t, dim3, dim3, void **, size_t, cudaStream_t);
  return ((fn_t)dlsym(RTLD_NEXT, "__cudaLaunchKernel"))(k, g, b, a, sm, s);
}

__attribute__((destructor)) static void report(void) {
  fprintf(stderr, "pathcount: exported cudaMalloc %ld __cudaLaunchKernel %ld; dlsym "
                  "cuGetProcAddress_v2 %ld; resolved cuMemAlloc %ld cuLaunchKernel %ld "
                  "cuLaunchKernelEx %ld\n",
          (long)n_cuda_malloc, (long)n_cuda_launch, (long)n_dlsym_gpa, (long)n_gpa_alloc,
          (long)n_gpa_launch, (long)n_gpa_launch_ex);
}
