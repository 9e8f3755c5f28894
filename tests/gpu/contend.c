/* What the budget's other driver calls cost the host while the device works, and whether
 * the mapping calls may move to a thread of their own (issue #39). On the 2026-11-28 H200
 * the budgeted ResNet-50 step spent 23 ms a period in the launch hook (copies queued,
 * events recorded, waited for and queried: about 18 us a launch) and 45 ms in mapping
 * calls (72 us each, against 14 idle), with the program's own launches between them.
 * Three questions, each answered with the device idle and under about LOAD_MS of queued
 * memsets:
 *  1. each hook call's host time: a launch, cuEventRecord, cuStreamWaitEvent,
 *     cuEventQuery of unfinished work, a 2 MiB copy each way from pinned memory;
 *  2. whether a thread looping cuMemMap + cuMemSetAccess + cuMemUnmap slows another
 *     thread's launches (a driver lock both take), and the loop's own cost meanwhile;
 *  3. whether that loop slows the device (page-table updates that stall its work): the
 *     queued memsets' elapsed time with and without it;
 *  4. whether the driver maps on several threads at once: pages mapped, opened and
 *     unmapped a millisecond by 1, 2 and 4 threads, each its own page (a mover of several
 *     threads is worth building only if this grows).
 * Built by scripts/gpu-calibrate.sh with nvcc (-lcuda); a few seconds. The launch is an
 * empty kernel loaded from PTX, or (NO_MODULE: the simulator's build) a 4 KiB memset. */
#define GPU_TOOL "contend"
#include "gpu_tool.h"

#include <cuda.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LOAD_MS 20.0
#define BATCH 64  /* calls timed a round */
#define ROUNDS 5
#define LAUNCHES 400 /* launches timed beside the mapping thread */

static struct {
  CUstream work, out, in, load;
  CUdeviceptr load_buf, dev_pages, arg;
  size_t load_len, page;
  void *host_pages;
  CUfunction nop;
  CUevent ev, pending;
  CUmemAllocationProp prop;
  CUmemAccessDesc acc;
} g;

/* About ms of memsets queued on the load stream (one timed first); their count. */
static int queue_load(double ms) {
  double t = now_us();
  CHECK(cuMemsetD8Async(g.load_buf, 1, g.load_len, g.load));
  CHECK(cuStreamSynchronize(g.load));
  double one = now_us() - t;
  int k = (int)(ms * 1000 / (one > 1 ? one : 1)) + 1;
  for (int i = 0; i < k && i < 100000; i++) CHECK(cuMemsetD8Async(g.load_buf, (unsigned char)i, g.load_len, g.load));
  return k;
}

static void launch(CUstream s) {
#ifdef NO_MODULE
  CHECK(cuMemsetD8Async(g.arg, 0, 4096, s));
#else
  void *params[] = {&g.arg};
  CHECK(cuLaunchKernel(g.nop, 1, 1, 1, 32, 1, 1, 0, s, params, NULL));
#endif
}

enum { C_LAUNCH, C_RECORD, C_WAIT, C_QUERY, C_OUT, C_IN, NHOOK };
static const char *const hook_names[NHOOK] = {"launch (empty kernel)", "cuEventRecord", "cuStreamWaitEvent",
                                              "cuEventQuery (not done)", "copy out, 2 MiB", "copy in, 2 MiB"};

/* One call of kind c, the i-th of a round. The launches and records go behind the load
 * (the program's stream), the copies on streams of their own, as planalloc's do. */
static void hook_call(int c, int i) {
  CUdeviceptr d = g.dev_pages + (size_t)i * g.page;
  void *h = (char *)g.host_pages + (size_t)i * g.page;
  switch (c) {
  case C_LAUNCH: launch(g.load); break;
  case C_RECORD: CHECK(cuEventRecord(g.ev, g.load)); break;
  case C_WAIT: CHECK(cuStreamWaitEvent(g.work, g.pending, 0)); break;
  case C_QUERY: (void)cuEventQuery(g.pending); break;
  case C_OUT: CHECK(cuMemcpyDtoHAsync(h, d, g.page, g.out)); break;
  default: CHECK(cuMemcpyHtoDAsync(d, h, g.page, g.in)); break;
  }
}

static double hook_round(int c, int loaded) {
  if (loaded) queue_load(LOAD_MS);
  CHECK(cuEventRecord(g.pending, g.load));
  double t = now_us();
  for (int i = 0; i < BATCH; i++) hook_call(c, i);
  double us = (now_us() - t) / BATCH;
  CHECK(cuCtxSynchronize());
  return us;
}

static void hook_calls(void) {
  printf("# 1. the launch hook's calls, us a call (median of %d rounds of %d; under about %.0f ms of queued memsets)\n",
         ROUNDS, BATCH, LOAD_MS);
  printf("#   %-26s %9s %9s\n", "call", "idle", "loaded");
  for (int c = 0; c < NHOOK; c++) {
    double v[2][ROUNDS];
    for (int r = 0; r < ROUNDS; r++) v[0][r] = hook_round(c, 0), v[1][r] = hook_round(c, 1);
    printf("#   %-26s %9.1f %9.1f\n", hook_names[c], median(v[0], ROUNDS), median(v[1], ROUNDS));
  }
}

/* The mapping thread: map, open and unmap one page of its own until told to stop. */
static atomic_int stop_mapping;
static atomic_long mapped;

#define MAPPERS_MAX 4

static void *mapping_loop(void *ctx) {
  CUdeviceptr va;
  CUmemGenericAllocationHandle h;
  CHECK(cuCtxSetCurrent((CUcontext)ctx));
  CHECK(cuMemAddressReserve(&va, g.page, g.page, 0, 0));
  CHECK(cuMemCreate(&h, g.page, &g.prop, 0));
  while (!atomic_load(&stop_mapping)) {
    CHECK(cuMemMap(va, g.page, 0, h, 0));
    CHECK(cuMemSetAccess(va, g.page, &g.acc, 1));
    CHECK(cuMemUnmap(va, g.page));
    atomic_fetch_add(&mapped, 1);
  }
  CHECK(cuMemRelease(h));
  CHECK(cuMemAddressFree(va, g.page));
  return NULL;
}

static pthread_t start_mapping(CUcontext ctx) {
  pthread_t t;
  atomic_store(&stop_mapping, 0), atomic_store(&mapped, 0);
  if (pthread_create(&t, NULL, mapping_loop, ctx)) fprintf(stderr, "contend: no thread\n"), exit(1);
  while (atomic_load(&mapped) < 4) continue; /* warm */
  return t;
}

/* The time from which the mapping loop's rounds are counted, and their count then: the
 * loop runs on past its 4 warm rounds before the caller reads the clock (on a loaded
 * machine, several: counted from 4, a round read 857 us where each costs 900 at least). */
static long counted_from;

static double mark(void) {
  double t = now_us();
  counted_from = atomic_load(&mapped);
  return t;
}

static double stop_mapping_thread(pthread_t t, double since) {
  long n = atomic_load(&mapped) - counted_from;
  double us = now_us() - since;
  atomic_store(&stop_mapping, 1);
  pthread_join(t, NULL);
  return n > 0 ? us / (double)n : 0;
}

/* LAUNCHES launches on the work stream behind the load: host us a launch. */
static double launches(void) {
  queue_load(LOAD_MS);
  double t = now_us();
  for (int i = 0; i < LAUNCHES; i++) launch(g.work);
  double us = (now_us() - t) / LAUNCHES;
  CHECK(cuCtxSynchronize());
  return us;
}

/* The mapping loop's cost alone under load: us a map + open + unmap. */
static double mapping_alone(CUcontext ctx) {
  queue_load(LOAD_MS * 2);
  pthread_t t = start_mapping(ctx);
  double since = mark();
  while (now_us() - since < LOAD_MS * 1000 / 2) continue;
  long n = atomic_load(&mapped) - counted_from;
  double us = (now_us() - since) / (double)(n > 0 ? n : 1);
  stop_mapping_thread(t, since);
  CHECK(cuCtxSynchronize());
  return us;
}

/* The queued memsets' device time, ms (events around them). */
static double load_device_ms(void) {
  CUevent a, b;
  float ms;
  CHECK(cuEventCreate(&a, CU_EVENT_DEFAULT));
  CHECK(cuEventCreate(&b, CU_EVENT_DEFAULT));
  CHECK(cuEventRecord(a, g.load));
  queue_load(LOAD_MS * 2);
  CHECK(cuEventRecord(b, g.load));
  CHECK(cuEventSynchronize(b));
  CHECK(cuEventElapsedTime(&ms, a, b));
  CHECK(cuEventDestroy(a));
  CHECK(cuEventDestroy(b));
  return ms;
}

static void beside_mapping(CUcontext ctx) {
  double alone[ROUNDS], beside[ROUNDS], map_alone[ROUNDS], map_beside[ROUNDS], dev[ROUNDS], dev_beside[ROUNDS];
  for (int r = 0; r < ROUNDS; r++) {
    alone[r] = launches();
    map_alone[r] = mapping_alone(ctx);
    pthread_t t = start_mapping(ctx);
    double since = mark();
    beside[r] = launches();
    map_beside[r] = stop_mapping_thread(t, since);
    dev[r] = load_device_ms();
    t = start_mapping(ctx);
    dev_beside[r] = load_device_ms();
    stop_mapping_thread(t, mark());
  }
  printf("# 2. a thread mapping, opening and unmapping a page in a loop beside another's launches\n");
  printf("#   launch, host us: %.1f alone, %.1f beside the mapping thread\n", median(alone, ROUNDS), median(beside, ROUNDS));
  printf("#   map + open + unmap, host us: %.1f alone (device loaded), %.1f beside the launches\n", median(map_alone, ROUNDS),
         median(map_beside, ROUNDS));
  printf("# 3. about %.0f ms of memsets, device ms: %.2f alone, %.2f with the mapping thread running\n", LOAD_MS * 2,
         median(dev, ROUNDS), median(dev_beside, ROUNDS));
}

/* n threads mapping for about LOAD_MS under queued memsets: pages a millisecond. */
static double mapping_rate(CUcontext ctx, int n) {
  pthread_t t[MAPPERS_MAX];
  const char *w = getenv("CONTEND_RATE_MS"); /* the simulator's pages cost more: a longer window there */
  double window_ms = w && atof(w) > 0 ? atof(w) : LOAD_MS / 2;
  queue_load(window_ms * 2 + LOAD_MS); /* busy through the window */
  atomic_store(&stop_mapping, 0), atomic_store(&mapped, 0);
  for (int i = 0; i < n; i++)
    if (pthread_create(&t[i], NULL, mapping_loop, ctx)) fprintf(stderr, "contend: no thread\n"), exit(1);
  while (atomic_load(&mapped) < 4L * n) continue; /* every thread warm */
  long from = atomic_load(&mapped);
  double since = now_us();
  while (now_us() - since < window_ms * 1000) continue;
  double rate = (double)(atomic_load(&mapped) - from) / ((now_us() - since) / 1000);
  atomic_store(&stop_mapping, 1);
  for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
  CHECK(cuCtxSynchronize());
  return rate;
}

static void mapping_threads(CUcontext ctx) {
  static const int counts[] = {1, 2, 4};
  printf("# 4. pages mapped, opened and unmapped a ms under queued memsets (median of %d):", ROUNDS);
  for (size_t k = 0; k < sizeof counts / sizeof *counts; k++) {
    double v[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) v[r] = mapping_rate(ctx, counts[k]);
    printf(" %.1f by %d thread%s%s", median(v, ROUNDS), counts[k], counts[k] > 1 ? "s" : "", k + 1 < sizeof counts / sizeof *counts ? "," : "\n");
  }
}

static void setup(CUdevice dev) {
  memset(&g.prop, 0, sizeof g.prop);
  g.prop.type = CU_MEM_ALLOCATION_TYPE_PINNED, g.prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE, g.prop.location.id = dev;
  g.acc = (CUmemAccessDesc){{CU_MEM_LOCATION_TYPE_DEVICE, dev}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
  CHECK(cuMemGetAllocationGranularity(&g.page, &g.prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
  const char *mib = getenv("CALIBRATE_LOAD_MIB"); /* the simulator's memsets run on its host: smaller there */
  g.load_len = (size_t)(mib && atoi(mib) > 0 ? atoi(mib) : 256) << 20;
  CHECK(cuStreamCreate(&g.work, CU_STREAM_NON_BLOCKING));
  CHECK(cuStreamCreate(&g.out, CU_STREAM_NON_BLOCKING));
  CHECK(cuStreamCreate(&g.in, CU_STREAM_NON_BLOCKING));
  CHECK(cuStreamCreate(&g.load, CU_STREAM_NON_BLOCKING));
  CHECK(cuMemAlloc(&g.load_buf, g.load_len));
  CHECK(cuMemAlloc(&g.dev_pages, BATCH * g.page));
  CHECK(cuMemAlloc(&g.arg, 4096));
  CHECK(cuMemHostAlloc(&g.host_pages, BATCH * g.page, 0));
  CHECK(cuEventCreate(&g.ev, CU_EVENT_DISABLE_TIMING));
  CHECK(cuEventCreate(&g.pending, CU_EVENT_DISABLE_TIMING));
#ifndef NO_MODULE
  static const char ptx[] = ".version 7.0\n.target sm_80\n.address_size 64\n"
                            ".visible .entry pa_nop(.param .u64 p)\n{\n\tret;\n}\n";
  CUmodule mod;
  CHECK(cuModuleLoadData(&mod, ptx));
  CHECK(cuModuleGetFunction(&g.nop, mod, "pa_nop"));
#endif
}

int main(void) {
  CUdevice dev;
  CUcontext ctx;
  char name[128];
  CHECK(cuInit(0));
  CHECK(cuDeviceGet(&dev, 0));
  CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
  CHECK(cuCtxSetCurrent(ctx));
  CHECK(cuDeviceGetName(name, sizeof name, dev));
  setup(dev);
  printf("# %s: the budget's calls beside the program's work\n", name);
  hook_calls();
  beside_mapping(ctx);
  mapping_threads(ctx);
  CHECK(cuCtxSynchronize());
  CHECK(cuDevicePrimaryCtxRelease(dev));
  return 0;
}
