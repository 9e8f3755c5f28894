/* What the driver's memory calls cost the host: each call below holds its caller for at
 * least its cost (the simulator's own work counts toward it), spinning, as a thread in
 * the real driver is busy, so that a preload that maps and unmaps pages for every
 * allocation pays for it here as it does on a GPU.
 *
 * SIMCUDA_COSTS=h100 (the default) or 0 (none); SIMCUDA_COST_<CALL>_US overrides one
 * (CALL: MEMCREATE, MEMMAP, MEMSETACCESS, MEMUNMAP, MEMRELEASE, MEMALLOC, MEMFREE). Map,
 * access and unmap cost so much per 2 MiB of the range, the others per call.
 *
 * The h100 figures are scripts/gpu-calibrate.sh's, measured on 2026-11-27 on an H200
 * (driver 580.159.04, CUDA 13.0: the driver of the 2026-11-26 H100 run; these are host
 * time in the driver, not the GPU's): the median over 5 rounds of 512 pages of 2 MiB,
 * in us a call, rounded to 0.1. cuMemMap is cheap (0.5 us); cuMemSetAccess (21.9) and
 * cuMemUnmap (14.7) are what a page map costs, and a call over a run of 8 pages cost 8
 * times one page's (171.7 and 115.7 us), so the simulator charges a run as its pages.
 * cuMemAlloc and cuMemFree of 1 MiB with the device idle: 18.3 and 15.4 us (256 MiB:
 * 86 and 94 us; charged flat here). gpu/BENCHMARKS.md has the run.
 *
 * With work queued on any stream the calls cost more, and still return before that work
 * is done (no wait for the device): one call of one page each under 20 ms of queued
 * memsets, 2026-11-28 on an H200 (same driver): cuMemCreate 49.8 us, cuMemMap 11.4,
 * cuMemSetAccess 169.4, cuMemUnmap 27.3, cuMemRelease 26.2. The budgeted served phase's
 * mapping calls on that card agreed: 72 us a call on ResNet-50, 86 on GPT (a third each
 * of map, access and unmap: 69 under load, 14 idle). SIMCUDA_COST_<CALL>_BUSY_US
 * overrides one; cuMemAlloc and cuMemFree were not measured so and cost the same. */
#include "sim.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static const struct {
  const char *env, *busy_env;
  double h100_us, busy_us;
} table[SIM_COSTS] = {
    [SIM_COST_CREATE] = {"SIMCUDA_COST_MEMCREATE_US", "SIMCUDA_COST_MEMCREATE_BUSY_US", 7.3, 49.8},
    [SIM_COST_MAP] = {"SIMCUDA_COST_MEMMAP_US", "SIMCUDA_COST_MEMMAP_BUSY_US", 0.5, 11.4},
    [SIM_COST_ACCESS] = {"SIMCUDA_COST_MEMSETACCESS_US", "SIMCUDA_COST_MEMSETACCESS_BUSY_US", 21.9, 169.4},
    [SIM_COST_UNMAP] = {"SIMCUDA_COST_MEMUNMAP_US", "SIMCUDA_COST_MEMUNMAP_BUSY_US", 14.7, 27.3},
    [SIM_COST_RELEASE] = {"SIMCUDA_COST_MEMRELEASE_US", "SIMCUDA_COST_MEMRELEASE_BUSY_US", 9.0, 26.2},
    [SIM_COST_ALLOC] = {"SIMCUDA_COST_MEMALLOC_US", "SIMCUDA_COST_MEMALLOC_BUSY_US", 18.3, 18.3},
    [SIM_COST_FREE] = {"SIMCUDA_COST_MEMFREE_US", "SIMCUDA_COST_MEMFREE_BUSY_US", 15.4, 15.4},
};

static double cost_ns[SIM_COSTS], busy_ns[SIM_COSTS];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static double read_us(const char *name, double def) {
  const char *g = getenv(name);
  char *end = NULL;
  double v = g && *g ? strtod(g, &end) : def;
  if (!g || !*g || (end && !*end && v >= 0 && v <= 1e6)) return v;
  fprintf(stderr, "simcuda: warning: %s='%s' is not microseconds between 0 and 1e6; using %g\n", name, g, def);
  return def;
}

static void read_costs(void) {
  const char *profile = getenv("SIMCUDA_COSTS");
  bool on = !profile || !*profile || !strcmp(profile, "h100");
  if (!on && strcmp(profile, "0") && strcmp(profile, "off") && strcmp(profile, "none"))
    fprintf(stderr, "simcuda: warning: SIMCUDA_COSTS='%s' is not h100 or 0; no costs\n", profile);
  for (int c = 0; c < SIM_COSTS; c++) {
    cost_ns[c] = 1e3 * read_us(table[c].env, on ? table[c].h100_us : 0);
    busy_ns[c] = 1e3 * read_us(table[c].busy_env, on ? table[c].busy_us : 0);
  }
}

/* PyTorch's expandable segments note that "changing memory mappings also appears to
 * involve at least some synchronous actions with the GPU". On the H200 (2026-11-28,
 * tests/gpu/calibrate.c) each returned before the queued work was done: they cost more
 * under load (above), and do not wait. So off by default. */
void sim_map_sync(void) {
  if (sim.map_sync) sim_device_sync();
}

uint64_t sim_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void sim_charge(sim_cost_t c, size_t units, uint64_t since) {
  pthread_once(&once, read_costs);
  double ns = (sim_device_busy() ? busy_ns[c] : cost_ns[c]) * (double)units;
  while (ns > 0 && (double)(sim_now_ns() - since) < ns) {
  }
}

/* The driver maps on one thread at a time: on the H200 (2026-11-28, tests/gpu/contend.c,
 * under queued memsets) threads each looping map, access and unmap of a page of their
 * own moved 21.8 pages a ms on one thread, 19.5 on two and 19.7 on four. So those three
 * calls hold one lock from their first work to the end of their cost; the time a caller
 * waits for it is not its cost but comes on top (begin returns since moved past the
 * wait). Launches do not take it (3.4 us a launch beside a mapping thread, 3.5 without).
 * cuMemCreate and cuMemRelease were not measured so and stay unserialised. */
static pthread_mutex_t mapping_mu = PTHREAD_MUTEX_INITIALIZER;

uint64_t sim_mapping_begin(uint64_t since) {
  sim_map_sync();
  uint64_t asked = sim_now_ns();
  pthread_mutex_lock(&mapping_mu);
  return since + (sim_now_ns() - asked);
}

void sim_mapping_end(sim_cost_t c, size_t units, uint64_t since) {
  if (units) sim_charge(c, units, since);
  pthread_mutex_unlock(&mapping_mu);
}
