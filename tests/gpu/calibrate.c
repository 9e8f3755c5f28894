/* What the real driver's memory calls cost the host, measured on a GPU machine and printed
 * as the simulator's settings (tests/simcuda/cost.c): the median time of each call over
 * rounds of 2 MiB pages made, mapped, opened, unmapped and released (and of handles of 8
 * pages: whether the driver charges a mapping by its pages or its handles), of cuMemAlloc and
 * cuMemFree of 1 MiB with the device idle, and the link's speed each way from pinned
 * memory. Built by scripts/gpu-calibrate.sh with nvcc (-lcuda); a few seconds on an H100.
 * Usage: calibrate [PAGES]   (default 512 a round, 5 rounds) */
#define GPU_TOOL "calibrate"
#include "gpu_tool.h"

#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ROUNDS 5

enum { CREATE, MAP, ACCESS, UNMAP, RELEASE, ALLOC, FREE, ACCESS_RUN, UNMAP_RUN, ALLOC_BIG, FREE_BIG, CREATE_WIDE, MAP_WIDE,
       ACCESS_WIDE, UNMAP_WIDE, RELEASE_WIDE, NCALLS, NPRINTED = ACCESS_RUN };
#define BIG (256u << 20) /* a caching allocator's large segment: does cuMemAlloc's cost grow with it? */
#define RUN 8 /* pages one cuMemSetAccess or cuMemUnmap covers in the run figures */
_Static_assert(RELEASE_WIDE - CREATE_WIDE == RELEASE - CREATE, "handles_round writes the wide figures in the order of the pages'");
static const char *const names[NCALLS] = {"MEMCREATE", "MEMMAP", "MEMSETACCESS", "MEMUNMAP", "MEMRELEASE", "MEMALLOC", "MEMFREE"};

/* A loop of m calls (call may use i, 0..m-1), its mean time a call into *us. */
#define TIMED(us, m, call)                                    \
  do {                                                        \
    double t_ = now_us();                                     \
    for (int i = 0; i < (m); i++) CHECK(call);                \
    *(us) = (now_us() - t_) / (m);                            \
  } while (0)

typedef void probe_fn(CUdeviceptr base, int n, size_t size, const CUmemGenericAllocationHandle *h,
                      const CUmemAccessDesc *acc, double *us);

/* m handles of size bytes side by side, each made, mapped, opened, unmapped and released:
 * each call's mean time into us[first ..] (in the order CREATE .. RELEASE); between the
 * unmaps and the releases, probe (if any) runs on them. */
static void handles_round(int m, size_t size, const CUmemAllocationProp *prop, const CUmemAccessDesc *acc, double *us,
                          int first, probe_fn *probe) {
  CUdeviceptr base;
  CUmemGenericAllocationHandle *h = calloc((size_t)m, sizeof *h);
  CHECK(cuMemAddressReserve(&base, (size_t)m * size, size, 0, 0));
  TIMED(&us[first + CREATE], m, cuMemCreate(&h[i], size, prop, 0));
  TIMED(&us[first + MAP], m, cuMemMap(base + (size_t)i * size, size, 0, h[i], 0));
  TIMED(&us[first + ACCESS], m, cuMemSetAccess(base + (size_t)i * size, size, acc, 1));
  TIMED(&us[first + UNMAP], m, cuMemUnmap(base + (size_t)i * size, size));
  if (probe) probe(base, m, size, h, acc, us);
  TIMED(&us[first + RELEASE], m, cuMemRelease(h[i]));
  CHECK(cuMemAddressFree(base, (size_t)m * size));
  free(h);
}

/* The same pages again, opened and unmapped RUN at a call (planalloc's pool does so for
 * pages side by side): whether the driver's cost is the call's or the page's. */
static void run_probe(CUdeviceptr base, int n, size_t page, const CUmemGenericAllocationHandle *h,
                      const CUmemAccessDesc *acc, double *us) {
  for (int i = 0; i < n; i++) CHECK(cuMemMap(base + (size_t)i * page, page, 0, h[i], 0));
  TIMED(&us[ACCESS_RUN], n / RUN, cuMemSetAccess(base + (size_t)i * RUN * page, RUN * page, acc, 1));
  TIMED(&us[UNMAP_RUN], n / RUN, cuMemUnmap(base + (size_t)i * RUN * page, RUN * page));
}

/* One round of n pages through the VMM calls, each call's mean time per page; and the
 * same bytes in handles of RUN pages (n / RUN of them), per handle: whether the driver
 * charges a mapping by its pages or by its handles (if by handles, a pool of wider
 * handles maps its pages for a fraction of the calls' cost). */
static void vmm_round(int n, size_t page, const CUmemAllocationProp *prop, const CUmemAccessDesc *acc, double *us) {
  handles_round(n, page, prop, acc, us, 0, run_probe);
  handles_round(n / RUN, RUN * page, prop, acc, us, CREATE_WIDE, NULL);
}

static void alloc_round(int n, double *us) {
  CUdeviceptr *p = calloc((size_t)n, sizeof *p), big;
  TIMED(&us[ALLOC], n, cuMemAlloc(&p[i], 1 << 20));
  TIMED(&us[FREE], n, cuMemFree(p[i]));
  free(p);
  TIMED(&us[ALLOC_BIG], 1, cuMemAlloc(&big, BIG));
  TIMED(&us[FREE_BIG], 1, cuMemFree(big));
}

/* GB/s one way: a 256 MiB copy from (to) pinned memory, the best of five. */
static double link_gbps(int to_device) {
  size_t n = 256u << 20;
  void *host;
  CUdeviceptr dev;
  CHECK(cuMemHostAlloc(&host, n, 0));
  CHECK(cuMemAlloc(&dev, n));
  memset(host, 1, n);
  double best = 0;
  for (int i = 0; i < 5; i++) {
    double t = now_us();
    if (to_device) CHECK(cuMemcpyHtoD(dev, host, n));
    else CHECK(cuMemcpyDtoH(host, dev, n));
    double gbps = (double)n / ((now_us() - t) * 1e3);
    if (gbps > best) best = gbps;
  }
  CHECK(cuMemFree(dev));
  CHECK(cuMemFreeHost(host));
  return best;
}

/* The VMM calls while the device is busy (the budget unmaps and maps pages with kernels
 * and copies queued): each call's time, and whether the work queued before it was done
 * when it returned. A call that waits for the device costs what is queued, not its
 * idle time: on the 2026-11-27 H200 the budget's served period took 231 ms of host time
 * for 1,452 pages moved, 37 ms of it the calls' idle cost. The work: memsets of a buffer
 * on a stream of its own, about LOAD_MS of them (one timed first), touching no page the
 * calls do: 256 MiB each, or CALIBRATE_LOAD_MIB. */
#define LOAD_MS 20.0
enum { L_CREATE, L_MAP, L_ACCESS, L_UNMAP, L_RELEASE, L_CALLS };
static const char *const load_names[L_CALLS] = {"cuMemCreate", "cuMemMap", "cuMemSetAccess", "cuMemUnmap", "cuMemRelease"};

static double busy_queue(CUstream s, CUdeviceptr buf, size_t len) {
  double t = now_us();
  CHECK(cuMemsetD8Async(buf, 1, len, s));
  CHECK(cuStreamSynchronize(s));
  double one = now_us() - t;
  int k = (int)(LOAD_MS * 1000 / (one > 1 ? one : 1)) + 1;
  t = now_us();
  for (int i = 0; i < k && i < 100000; i++) CHECK(cuMemsetD8Async(buf, (unsigned char)i, len, s));
  return now_us() - t < 1 ? 0 : k * one; /* the queue's expected length, us */
}

static void under_load(size_t page, const CUmemAllocationProp *prop, const CUmemAccessDesc *acc) {
  CUstream s;
  CUdeviceptr buf, va;
  const char *mib = getenv("CALIBRATE_LOAD_MIB"); /* the simulator's memsets run on its host: smaller there */
  size_t len = (size_t)(mib && atoi(mib) > 0 ? atoi(mib) : 256) << 20;
  CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  CHECK(cuMemAlloc(&buf, len));
  CHECK(cuMemAddressReserve(&va, page, page, 0, 0));
  printf("# under about %.0f ms of queued device work (memsets on a stream of their own):\n", LOAD_MS);
  for (int c = 0; c < L_CALLS; c++) {
    CUmemGenericAllocationHandle h;
    if (c > L_CREATE) CHECK(cuMemCreate(&h, page, prop, 0));
    if (c > L_MAP) CHECK(cuMemMap(va, page, 0, h, 0));
    if (c > L_ACCESS) CHECK(cuMemSetAccess(va, page, acc, 1));
    if (c > L_UNMAP) CHECK(cuMemUnmap(va, page));
    double queued = busy_queue(s, buf, len), t = now_us();
    switch (c) {
    case L_CREATE: CHECK(cuMemCreate(&h, page, prop, 0)); break;
    case L_MAP: CHECK(cuMemMap(va, page, 0, h, 0)); break;
    case L_ACCESS: CHECK(cuMemSetAccess(va, page, acc, 1)); break;
    case L_UNMAP: CHECK(cuMemUnmap(va, page)); break;
    default: CHECK(cuMemRelease(h)); break;
    }
    double took = now_us() - t;
    CUresult q = cuStreamQuery(s);
    printf("#   %-15s %9.1f us, %s (queued %.0f us)\n", load_names[c], took,
           q == CUDA_SUCCESS ? "the queued work was done: it waits for the device" : "returned before the queued work", queued);
    CHECK(cuStreamSynchronize(s));
    if (c == L_MAP || c == L_ACCESS) CHECK(cuMemUnmap(va, page));
    if (c != L_RELEASE) CHECK(cuMemRelease(h));
  }
  CHECK(cuMemAddressFree(va, page));
  CHECK(cuMemFree(buf));
  CHECK(cuStreamDestroy(s));
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 512;
  if (n < 8 || n > 16384) fprintf(stderr, "usage: calibrate [PAGES: 8..16384]\n"), exit(2);
  CUdevice dev;
  CUcontext ctx;
  char name[128];
  CHECK(cuInit(0));
  CHECK(cuDeviceGet(&dev, 0));
  CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK(cuCtxSetCurrent(ctx));
  CHECK(cuDeviceGetName(name, sizeof name, dev));
  CUmemAllocationProp prop;
  memset(&prop, 0, sizeof prop);
  prop.type = CU_MEM_ALLOCATION_TYPE_PINNED, prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE, prop.location.id = dev;
  CUmemAccessDesc acc = {{CU_MEM_LOCATION_TYPE_DEVICE, dev}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
  size_t page;
  CHECK(cuMemGetAllocationGranularity(&page, &prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
  double us[ROUNDS + 1][NCALLS], med[NCALLS];
  for (int r = 0; r <= ROUNDS; r++) /* round 0: warm-up */
    vmm_round(n, page, &prop, &acc, us[r]), alloc_round(n, us[r]);
  for (int c = 0; c < NCALLS; c++) {
    double v[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) v[r] = us[r + 1][c];
    med[c] = median(v, ROUNDS);
  }
  double h2d = link_gbps(1), d2h = link_gbps(0);
  printf("# %s, page %zu bytes, %d pages a round, median of %d rounds (us a call; map, access and unmap a page)\n", name,
         page, n, ROUNDS);
  for (int c = 0; c < NPRINTED; c++) printf("SIMCUDA_COST_%s_US=%.1f\n", names[c], med[c]);
  printf("# %d pages in one call: cuMemSetAccess %.1f us, cuMemUnmap %.1f us (the simulator charges a run as its pages)\n",
         RUN, med[ACCESS_RUN], med[UNMAP_RUN]);
  printf("# one handle of %d pages (%zu MiB) a call: cuMemCreate %.1f us, cuMemMap %.1f, cuMemSetAccess %.1f, cuMemUnmap "
         "%.1f, cuMemRelease %.1f (%d handles of one page: %.1f, %.1f, %.1f, %.1f, %.1f)\n",
         RUN, RUN * page >> 20, med[CREATE_WIDE], med[MAP_WIDE], med[ACCESS_WIDE], med[UNMAP_WIDE], med[RELEASE_WIDE], RUN,
         RUN * med[CREATE], RUN * med[MAP], RUN * med[ACCESS], RUN * med[UNMAP], RUN * med[RELEASE]);
  printf("# cuMemAlloc of %u MiB %.1f us, cuMemFree %.1f us (the simulator charges each call its flat cost, whatever its size)\n",
         BIG >> 20, med[ALLOC_BIG], med[FREE_BIG]);
  printf("# the link from pinned memory: %.1f GB/s to the device, %.1f GB/s back\n", h2d, d2h);
  printf("SIMCUDA_COPY_GBPS=%.1f\n", h2d < d2h ? h2d : d2h);
  under_load(page, &prop, &acc);
  CHECK(cuDevicePrimaryCtxRelease(dev));
  return 0;
}
