/* planalloc-sim: replays access traces under a device-memory budget with each victim
 * policy and prints a markdown table: bytes moved, evictions, OOMs and the modelled
 * slowdown (copies on one H2D and one D2H queue, overlapped with compute).
 * Usage: planalloc-sim [options] LOG...   (DTR prototype op logs)
 *        planalloc-sim [options] --dump TRACE.csv ACCESS.csv   (planalloc's own dumps)
 *        planalloc-sim --csv LOG   (the logged iteration's allocations as a planner CSV)
 *        planalloc-sim --cycle CYCLE.csv   (the product's served phase: its swap schedule) */
#include "dtr.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(void) {
  fprintf(stderr, "usage: planalloc-sim [--budget PCT] [--gbps G] [--latency-us U] [--lookahead N] [--policy lru|largest|dtr|planned|all] LOG...\n"
                  "       planalloc-sim [options] --dump TRACE.csv ACCESS.csv\n"
                  "       planalloc-sim --csv LOG   (its allocations as a planner CSV, e.g. for trace_replay)\n"
                  "       planalloc-sim --cycle CYCLE.csv [--budget BYTES]   (a budgeted run's served phase, from\n"
                  "       PLANALLOC_DUMP: planned again as the preload did and replayed; per iteration)\n"
                  "  LOG: a DTR prototype op log (JSON lines); --dump: planalloc's trace and access\n"
                  "       dumps (PLANALLOC_DUMP), each launch an op of --op-us microseconds (default 100)\n"
                  "  --budget PCT    device budget, percent of each trace's peak (default 50)\n"
                  "  --gbps G        copy bandwidth per direction, GB/s (default 12: PCIe 3.0 x16)\n"
                  "  --latency-us U  fixed cost per copy (default 10)\n"
                  "  --lookahead N   planned: ops ahead it prefetches for (default 16)\n"
                  "  --victims N     then a table of each run's N buffers that sent the most bytes out\n");
  exit(2);
}

static FILE *victims; /* the victims' table, printed after the main one */
static long top_victims;

static void victim_rows(const char *name, const pa_atrace_t *t, const pa_sim_opts_t *o, uint64_t total_out) {
  uint32_t *uses = malloc(t->nbuf * sizeof *uses), *idle = malloc(t->nbuf * sizeof *idle);
  if (uses && idle) pa_atrace_uses(t, uses, idle);
  uint64_t whole = 0; /* bytes out of buffers that live through (nearly) the whole trace */
  for (size_t b = 0; b < t->nbuf; b++)
    if (t->last[b] == UINT32_MAX && t->born[b] * 10 < t->nop) whole += o->out_by_buf[b];
  fprintf(victims, "| %s | %s | all | | persistent: %.0f %% of out | | | %.1f | 100 %% |\n", name, pa_policy_names[o->policy],
          100.0 * (double)whole / (double)total_out, (double)total_out / 1048576);
  for (long k = 0; uses && idle && k < top_victims; k++) {
    size_t best = t->nbuf;
    for (size_t b = 0; b < t->nbuf; b++)
      if (o->out_by_buf[b] && (best == t->nbuf || o->out_by_buf[b] > o->out_by_buf[best])) best = b;
    if (best == t->nbuf) break;
    double end = t->last[best] == UINT32_MAX ? (double)t->nop : (double)t->last[best] + 1;
    double lives = end > t->born[best] ? 100.0 * (end - t->born[best]) / (double)t->nop : 0;
    fprintf(victims, "| %s | %s | %zu | %.2f | %.0f %% | %u | %u | %.1f | %.0f %% |\n", name, pa_policy_names[o->policy], best,
            (double)t->size[best] / 1048576, lives, uses[best], idle[best],
            (double)o->out_by_buf[best] / 1048576, 100.0 * (double)o->out_by_buf[best] / (double)total_out);
    o->out_by_buf[best] = 0;
  }
  free(uses), free(idle);
}

static void row(const char *name, const pa_atrace_t *t, const pa_sim_opts_t *o, uint64_t peak) {
  pa_sim_result_t r;
  if (o->out_by_buf) memset(o->out_by_buf, 0, t->nbuf * sizeof *o->out_by_buf);
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
  if (o->out_by_buf && r.bytes_out) victim_rows(name, t, o, r.bytes_out);
}

static void print_victims(void) {
  char line[512];
  printf("\n| trace | policy | buffer | MiB | lives (of the ops) | uses | longest idle (ops) | out MiB | of all out |\n");
  printf("|---|---|---:|---:|---|---:|---:|---:|---:|\n");
  rewind(victims);
  while (fgets(line, sizeof line, victims)) fputs(line, stdout);
  fclose(victims);
}

/* The logged iteration's allocations as a planner CSV (MiniMalloc's format), for
 * planalloc-plan and trace_replay: a buffer lives over the ops [born, last], to the end
 * when it outlives the trace; storages of no bytes are left out. */
static int write_csv(const char *path) {
  pa_atrace_t t;
  char err[256];
  pa_atrace_init(&t);
  if (pa_dtr_log_read(path, &t, err, sizeof err)) {
    fprintf(stderr, "planalloc-sim: error: %s: %s\n", path, err);
    return pa_atrace_free(&t), 1;
  }
  printf("id,lower,upper,size\n");
  for (size_t b = 0; b < t.nbuf; b++) {
    uint64_t end = t.last[b] == UINT32_MAX ? t.nop : (uint64_t)t.last[b] + 1;
    if (t.size[b]) printf("%zu,%u,%llu,%llu\n", b, t.born[b], (unsigned long long)(end > t.born[b] ? end : t.born[b] + 1),
                          (unsigned long long)t.size[b]);
  }
  pa_atrace_free(&t);
  return 0;
}

/* "dir/resnet32-56-9000000000.0-2020-....log" -> "resnet32-56": model and batch size. */
static const char *base(const char *path, char *out, size_t len) {
  const char *s = strrchr(path, '/');
  snprintf(out, len, "%s", s ? s + 1 : path);
  char *dash = strchr(out, '-');
  if (dash && (dash = strchr(dash + 1, '-'))) *dash = 0;
  return out;
}

/* The product's served phase: the turn it planned its swap schedule over, planned again
 * (at the dump's budget, or budget bytes) and replayed: what one iteration moves, and
 * its time over the kernels' own. */
static int cycle(const char *path, uint64_t budget) {
  pa_cycle_file_t f;
  pa_cycle_plan_t p;
  pa_cycle_replay_t r;
  char err[256];
  if (pa_cycle_read(path, &f, err, sizeof err)) return fprintf(stderr, "planalloc-sim: error: %s: %s\n", path, err), 1;
  if (budget) f.budget = budget;
  double stretch = 1;
  int rc = pa_cycle_plan_best(&f, &p, &r, &stretch);
  if (rc) fprintf(stderr, "planalloc-sim: error: %s: out of memory\n", path);
  printf("| launches | pages | budget MiB | kernel us | link GB/s | planned at | swaps | out MiB | in MiB | restores at need "
         "| slowdown | lead, launches | positions over budget | mapping calls, ms |\n");
  printf("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  if (!rc)
    printf("| %u | %u | %.1f | %.1f | %.1f | %gx | %zu | %.1f | %.1f | %llu | %.3f | %.0f | %u | %.2f |\n", f.c.nop, f.c.nbuf,
           (double)f.budget / 1048576, f.kernel_ns / 1000, f.bytes_per_ns, stretch, p.nswaps, (double)r.bytes_out / 1048576,
           (double)r.bytes_in / 1048576, (unsigned long long)r.misses, r.turn_ns / r.compute_ns, p.lead_ns / f.kernel_ns, p.over,
           r.map_ns / 1e6);
  pa_cycle_plan_free(&p);
  pa_cycle_file_free(&f);
  return rc;
}

int main(int argc, char **argv) {
  double pct = 50, gbps = 12, lat_us = 10, op_us = 100;
  if (argc >= 3 && !strcmp(argv[1], "--cycle")) {
    char *end = NULL;
    unsigned long long b = argc == 5 && !strcmp(argv[3], "--budget") ? strtoull(argv[4], &end, 10) : 0;
    if (argc != 3 && (argc != 5 || !end || *end || !b)) usage();
    return cycle(argv[2], b);
  }
  bool dump = false;
  long lookahead = 0;
  int policy = -1, i = 1;
  if (argc == 3 && !strcmp(argv[1], "--csv")) return write_csv(argv[2]);
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
    else if (!strcmp(argv[i], "--victims")) top_victims = atol(argv[i + 1]);
    else if (!strcmp(argv[i], "--policy")) {
      policy = -1;
      for (int p = 0; p < PA_POL_COUNT; p++)
        if (!strcmp(argv[i + 1], pa_policy_names[p])) policy = p;
      if (policy < 0 && strcmp(argv[i + 1], "all")) usage();
    } else usage();
  }
  if (i == argc || (dump && argc - i != 2) || !(op_us > 0) || !(pct > 0 && pct <= 100) || !(gbps > 0) || !(lat_us >= 0) || lookahead < 0 || lookahead > 1000000 || top_victims < 0 || top_victims > 1000) usage();
  if (top_victims && !(victims = tmpfile())) fprintf(stderr, "planalloc-sim: error: no temporary file\n"), exit(1);
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
                      .lookahead = (uint32_t)lookahead, .out_by_buf = top_victims ? calloc(t.nbuf + 1, sizeof *o.out_by_buf) : NULL};
    for (int p = 0; p < PA_POL_COUNT; p++)
      if (policy < 0 || policy == p) o.policy = (pa_policy_t)p, row(base(argv[i], name, sizeof name), &t, &o, peak);
    free(o.out_by_buf);
    pa_atrace_free(&t);
  }
  if (victims) print_victims();
  return failed;
}
