/* Lazy, once: the constructor does nothing; the first intercepted call parses the
 * options and loads the driver. A forked child passes everything through: the driver
 * refuses it (CUDA does not survive fork), and the pool's mappings are the parent's.
 * The exit report is dump.c's. */
#include "pa.h"

#include <unistd.h>

extern char **environ;

/* The process-wide state every file reads, defined here, below them all: this file
 * calls only the options' parser and the driver's loader. */
pa_options_t pa_opt;
PA_TLS int pa_depth;
pthread_mutex_t pa_mu = PTHREAD_MUTEX_INITIALIZER;
PA_TLS int pa_slot;
static pa_stats_t PA_PER_DEVICE(pa_stats);
PA_BIND_SHARED(pa_stats)
static _Atomic(CUcontext) PA_PER_DEVICE(pa_pool_ctx);
PA_BIND_SHARED(pa_pool_ctx)

/* the linker's bounds of the section (hidden: the preload exports only the CUDA names) */
extern const pa_rebind_fn __start_pa_rebind[] __attribute__((visibility("hidden")));
extern const pa_rebind_fn __stop_pa_rebind[] __attribute__((visibility("hidden")));

void pa_slot_switch(int slot) {
  pa_slot = slot;
  for (const pa_rebind_fn *f = __start_pa_rebind; f < __stop_pa_rebind; f++) (*f)(slot);
}
atomic_int pa_devices_seen;

long pa_rank(void) {
  const char *r = getenv("RANK");
  char *end = NULL;
  long v = r && *r ? strtol(r, &end, 10) : -1;
  return v >= 0 && end && !*end ? v : -1;
}

static atomic_int state; /* 0: not yet, 1: on, 2: pass through (off, or a forked child) */

static void child_after_fork(void) { atomic_store(&state, 2); }

static void init_once(void) {
  pa_options_parse(&pa_opt, environ);
  if (pa_opt.v[PA_OPT_VERBOSE].i) pa_options_print(&pa_opt);
  pthread_atfork(NULL, NULL, child_after_fork);
  atomic_store(&state, pa_opt.v[PA_OPT_MODE].i == PA_MODE_OFF ? 2 : 1);
}

bool pa_enabled(void) {
  int s = atomic_load_explicit(&state, memory_order_acquire);
  if (s == 0) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pa_depth++;
    pthread_once(&once, init_once);
    pa_depth--;
    s = atomic_load(&state);
  }
  return s == 1;
}

bool pa_active(void) { return pa_depth == 0 && pa_enabled() && pa_gpu_load(); }

bool pa_started(void) { return atomic_load(&state) == 1; }
