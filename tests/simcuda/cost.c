/* What the driver's memory calls cost the host: each call below holds its caller for at
 * least its cost (the simulator's own work counts toward it), spinning, as a thread in
 * the real driver is busy, so that a preload that maps and unmaps pages for every
 * allocation pays for it here as it does on a GPU.
 *
 * SIMCUDA_COSTS=h100 (the default) or 0 (none); SIMCUDA_COST_<CALL>_US overrides one
 * (CALL: MEMCREATE, MEMMAP, MEMSETACCESS, MEMUNMAP, MEMRELEASE, MEMALLOC, MEMFREE). Map,
 * access and unmap cost so much per 2 MiB of the range, the others per call.
 *
 * The h100 figures are not measured call by call (no GPU machine has run
 * scripts/gpu-calibrate.sh yet, which prints these settings). What was measured, on the
 * 2026-11-26 H100 (../shared/data/gpu-runs): under a budget, PyTorch's steps took
 * 542 ms (GPT) and 230 ms (ResNet-50) longer than the caching allocator's; the bytes
 * moved account for 209 and 77 ms of that at 25 GB/s if no copy overlapped anything, and
 * the rest over the page maps and unmaps made (14,360 and 5,061 a step) is 23 and 30 us
 * each. So a page map
 * (cuMemMap + cuMemSetAccess) and an unmap cost about 25 us each here, split between
 * the calls by estimate; cuMemCreate and cuMemRelease by estimate, about the same;
 * cuMemAlloc and cuMemFree (before cuMemFree's wait for the device) 10 us, an
 * estimate. */
#include "sim.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static const struct {
  const char *env;
  double h100_us;
} table[SIM_COSTS] = {
    [SIM_COST_CREATE] = {"SIMCUDA_COST_MEMCREATE_US", 20},   [SIM_COST_MAP] = {"SIMCUDA_COST_MEMMAP_US", 10},
    [SIM_COST_ACCESS] = {"SIMCUDA_COST_MEMSETACCESS_US", 15}, [SIM_COST_UNMAP] = {"SIMCUDA_COST_MEMUNMAP_US", 25},
    [SIM_COST_RELEASE] = {"SIMCUDA_COST_MEMRELEASE_US", 15}, [SIM_COST_ALLOC] = {"SIMCUDA_COST_MEMALLOC_US", 10},
    [SIM_COST_FREE] = {"SIMCUDA_COST_MEMFREE_US", 10},
};

static double cost_ns[SIM_COSTS];
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
  for (int c = 0; c < SIM_COSTS; c++) cost_ns[c] = 1e3 * read_us(table[c].env, on ? table[c].h100_us : 0);
}

uint64_t sim_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void sim_charge(sim_cost_t c, size_t units, uint64_t since) {
  pthread_once(&once, read_costs);
  double ns = cost_ns[c] * (double)units;
  while (ns > 0 && (double)(sim_now_ns() - since) < ns) {
  }
}
