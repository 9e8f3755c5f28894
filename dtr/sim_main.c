/* planalloc-sim: replays access traces under a device-memory budget with each victim
 * policy and prints a markdown table: bytes moved, evictions, OOMs and the modelled
 * slowdown (copies on one H2D and one D2H queue, overlapped with compute).
 * Usage: planalloc-sim [options] LOG...   (DTR prototype op logs)
 *        planalloc-sim [options] --dump TRACE.csv ACCESS.csv   (planalloc's own dumps) */
#include "dtr.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(void) {
  fprintf(stderr, "usage: planalloc-sim [--budget PCT] [--gbps G] [--latency-us U] [--lookahead N] [--policy lru|largest|dtr|planned|all] LOG...\n"
                  "       planalloc-sim [options] --dump TRACE.csv ACCESS.csv\n"
                  "  LOG: a DTR prototype op log (JSON lines); --dump: planalloc's trace and access\n"
                  "       dumps (PLANALLOC_DUMP), each launch an op of --op-us microseconds (default 100)\n"
                  "  --budget PCT    device budget, percent of each trace's peak (default 50)\n"
                  "  --gbps G        copy bandwidth per direction, GB/s (default 12: PCIe 3.0 x16)\n"
                  "  --latency-us U  fixed cost per copy (default 10)\n"
                  "  --lookahead N   planned: ops ahead it prefetches for (default 16)\n");
  exit(2);
}

static void row(const char *name, const pa_atrace_t *t, const pa_sim_opts_t *o, uint64_t peak) {
  pa_sim_result_t r;
  if (pa_simulate(t, o, &r)) {
    fprintf(stderr, "planalloc-sim: %s: out of memory\n", name);
    return;
  }
  /* The link's bound: this run's copies, each direction at full speed, fully overlapped. */
  double out_ns = (double)r.bytes_out / o->bytes_per_ns, in_ns = (double)r.bytes_in / o->bytes_per_ns;
  double link = r.compute_ns > 0 ? (out_ns > in_ns ? out_ns : in_ns) / r.compute_ns : 0;
  double c = r.compute_ns > 0 ? r.compute_ns : 1;
  printf("| %s | %.0f | %.0f | %.1f | %s | %.1f | %.1f | %llu | %llu | %.3f | %.3f | %.3f | %.3f |\n", name,
         (double)peak / 1048576, (double)o->budget / 1048576, r.compute_ns / 1e6, pa_policy_names[o->policy],
         (double)r.bytes_out / 1048576, (double)r.bytes_in / 1048576, (unsigned long long)r.evictions,
         (unsigned long long)r.ooms, link > 1 ? link : 1, r.wait_out_ns / c, r.wait_in_ns / c, r.total_ns / c);
}

/* "dir/resnet32-56-9000000000.0-2020-....log" -> "resnet32-56": model and batch size. */
static const char *base(const char *path, char *out, size_t len) {
  const char *s = strrchr(path, '/');
  snprintf(out, len, "%s", s ? s + 1 : path);
  char *dash = strchr(out, '-');
  if (dash && (dash = strchr(dash + 1, '-'))) *dash = 0;
  return out;
}

int main(int argc, char **argv) {
  double pct = 50, gbps = 12, lat_us = 10, op_us = 100;
  bool dump = false;
  long lookahead = 0;
  int policy = -1, i = 1;
  for (; i < argc && argv[i][0] == '-'; i += 2) {
    if (!strcmp(argv[i], "--dump")) {
      dump = true, i++;
      break;
    }
    if (i + 1 >= argc) usage();
    if (!strcmp(argv[i], "--budget")) pct = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--gbps")) gbps = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--latency-us")) lat_us = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--lookahead")) lookahead = atol(argv[i + 1]);
    else if (!strcmp(argv[i], "--op-us")) op_us = atof(argv[i + 1]);
    else if (!strcmp(argv[i], "--policy")) {
      policy = -1;
      for (int p = 0; p < PA_POL_COUNT; p++)
        if (!strcmp(argv[i + 1], pa_policy_names[p])) policy = p;
      if (policy < 0 && strcmp(argv[i + 1], "all")) usage();
    } else usage();
  }
  if (i == argc || (dump && argc - i != 2) || !(op_us > 0) || !(pct > 0 && pct <= 100) || !(gbps > 0) || !(lat_us >= 0) || lookahead < 0 || lookahead > 1000000) usage();
  printf("| trace | peak MiB | budget MiB | compute ms | policy | out MiB | in MiB | evictions | OOMs | link bound "
         "| waiting for space | waiting for restores | slowdown |\n");
  printf("|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  int failed = 0;
  for (; i < argc; i += dump ? 2 : 1) {
    pa_atrace_t t;
    char err[256], name[64];
    pa_atrace_init(&t);
    int rc = dump ? pa_planalloc_dump_read(argv[i], argv[i + 1], op_us * 1000, &t, err, sizeof err)
                  : pa_dtr_log_read(argv[i], &t, err, sizeof err);
    if (rc) {
      fprintf(stderr, "planalloc-sim: error: %s: %s\n", argv[i], err);
      failed = 1;
      pa_atrace_free(&t);
      continue;
    }
    uint64_t peak = pa_atrace_peak(&t);
    pa_sim_opts_t o = {.budget = (uint64_t)((double)peak * pct / 100), .bytes_per_ns = gbps, .latency_ns = lat_us * 1000,
                      .lookahead = (uint32_t)lookahead};
    for (int p = 0; p < PA_POL_COUNT; p++)
      if (policy < 0 || policy == p) o.policy = (pa_policy_t)p, row(base(argv[i], name, sizeof name), &t, &o, peak);
    pa_atrace_free(&t);
  }
  return failed;
}
