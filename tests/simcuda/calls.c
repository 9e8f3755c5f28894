/* SIMCUDA_CALLS_FILE=path: at exit, each driver entry point that was called and how
 * often, one "name count" line each, sorted by name. Anyone can then count what a
 * program (or a preload inside it) asked of the driver, host waits included
 * (cuCtxSynchronize, cuStreamSynchronize, cuEventSynchronize), from outside it. Every
 * exported function counts itself (SIM_CALLED in sim.h), listed at its first
 * call. Only the process that counted writes: a forked child exiting leaves the file be. */
#include "sim.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static sim_calls_t *listed;
static pid_t counting_pid;

void sim_calls_first(sim_calls_t *c) {
  pthread_mutex_lock(&mu);
  c->next = listed, listed = c;
  if (!counting_pid) counting_pid = getpid();
  pthread_mutex_unlock(&mu);
}

static int by_name(const void *a, const void *b) {
  return strcmp((*(sim_calls_t *const *)a)->name, (*(sim_calls_t *const *)b)->name);
}

__attribute__((destructor)) static void write_calls(void) {
  const char *path = getenv("SIMCUDA_CALLS_FILE");
  if (!path || !*path || counting_pid != getpid()) return;
  size_t n = 0;
  for (sim_calls_t *c = listed; c; c = c->next) n++;
  sim_calls_t **all = malloc((n + 1) * sizeof *all);
  FILE *f = all ? fopen(path, "w") : NULL;
  if (!f) {
    fprintf(stderr, "simcuda: warning: cannot write SIMCUDA_CALLS_FILE %s\n", path);
    free(all);
    return;
  }
  n = 0;
  for (sim_calls_t *c = listed; c; c = c->next) all[n++] = c;
  qsort(all, n, sizeof *all, by_name);
  for (size_t i = 0; i < n; i++) fprintf(f, "%s %llu\n", all[i]->name, (unsigned long long)atomic_load(&all[i]->n));
  fclose(f);
  free(all);
}
