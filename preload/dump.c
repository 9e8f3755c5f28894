/* Dumps, jemalloc-style: PLANALLOC_DUMP/planalloc.<pid>.d<device>[.r<rank>].<seq>.<kind>
 * (the pool's device; the rank where RANK is set, as torchrun sets it) (trace.csv, plan.csv,
 * sites.csv, access.csv, stats.json, timeline.csv; cycle.csv under a budget), written at exit,
 * each versioned on line 1 ("# planalloc <kind> 1" for the CSVs, which planalloc-plan
 * reads as they are; "version" in the JSON). And the exit report: the dumps and the
 * stats table (PLANALLOC_STATS). */
#include "pa.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static bool dir_ok;

static void make_dir(void) {
  char p[PA_PATH_MAX + 1];
  snprintf(p, sizeof p, "%s", pa_opt.v[PA_OPT_DUMP].text);
  int err = 0;
  for (char *s = p + 1;; s++) {
    if (*s && *s != '/') continue;
    char c = *s;
    *s = 0;
    if (mkdir(p, 0777) && errno != EEXIST) err = errno;
    *s = c;
    if (!c) break;
  }
  struct stat st;
  dir_ok = !stat(p, &st) && S_ISDIR(st.st_mode);
  if (!dir_ok) pa_warn("cannot make the dump directory %s (%s): no dumps written", p, strerror(err ? err : ENOTDIR));
}

/* PLANALLOC_DUMP is made, its parents too, at the first dump, and said once if it cannot
 * be (where each of six dumps said it could not be written, and none was). */
bool pa_dump_dir(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  if (!pa_opt.v[PA_OPT_DUMP].text[0]) return false;
  pthread_once(&once, make_dir);
  return dir_ok;
}


static atomic_uint seq;

void pa_dump_path(char *path, size_t n, const char *kind) {
  char rank[32] = "";
  if (pa_rank() >= 0) snprintf(rank, sizeof rank, ".r%ld", pa_rank());
  snprintf(path, n, "%s/planalloc.%d.d%d%s.%u.%s", pa_opt.v[PA_OPT_DUMP].text, (int)getpid(), (int)pa_pool_device(),
           rank, atomic_fetch_add(&seq, 1), kind);
}

static FILE *open_dump(const char *kind) {
  char path[512];
  pa_dump_path(path, sizeof path, kind);
  FILE *f = fopen(path, "w");
  if (!f) pa_warn("cannot write the dump %s", path);
  return f;
}

static void dump(const char *kind, void (*write)(FILE *)) {
  FILE *f = open_dump(kind);
  if (!f) return;
  write(f);
  if (fclose(f)) pa_warn("cannot finish the %s dump", kind);
}

void pa_dump_all(void) {
  if (!pa_dump_dir()) return;
  pthread_mutex_lock(&pa_mu);
  dump("trace.csv", pa_record_dump);
  dump("sites.csv", pa_sites_dump);
  dump("plan.csv", pa_plan_dump_current);
  dump("access.csv", pa_access_dump);
  dump("stats.json", pa_stats_json);
  dump("timeline.csv", pa_timeline_dump);
  if (pa_limit_on()) dump("cycle.csv", pa_budget_dump_cycle);
  pthread_mutex_unlock(&pa_mu);
}

/* This slot's dumps, stats table and how its plan did; *allocated: whether it saw an
 * allocation. */
static void report(void *allocated) {
  pa_events_close();
  pa_dump_all();
  pthread_mutex_lock(&pa_mu);
  if (pa_opt.v[PA_OPT_STATS].i) pa_stats_print();
  pa_verdict_served();
  *(bool *)allocated |= pa_stats.allocs || pa_stats.by_module || pa_stats.passed;
  pthread_mutex_unlock(&pa_mu);
}

/* At exit, when planalloc ran: each device's dumps, stats table and verdict, then where
 * the dumps are. */
static void mover_stop(void *unused) {
  (void)unused;
  pa_mover_stop();
}

__attribute__((destructor)) static void at_exit_report(void) {
  if (!pa_started() || !pa_gpu_load()) return;
  pa_depth++;
  bool allocated = false;
  if (pa_pool_any()) pa_device_each_pool(mover_stop, NULL); /* before the dumps read what it moves */
  if (pa_pool_any()) pa_device_each_pool(report, &allocated);
  else pa_slot_set(0), report(&allocated); /* what ran, even where nothing was allocated */
  pthread_mutex_lock(&pa_mu);
  pa_shadow_report();
  pthread_mutex_unlock(&pa_mu);
  pa_verdict(allocated);
  pa_depth--;
}
