/* Process-wide simulator state: the reserved device range, the capacity, accounting and
 * the report printed at exit. */
#include "sim.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

sim_state_t sim = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* "4GiB", "512M", "1073741824"; 0 on a malformed value. */
static uint64_t parse_size(const char *s) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || end == s) return 0;
  int shift = 0;
  switch (*end) {
  case 'K': case 'k': shift = 10; end++; break;
  case 'M': case 'm': shift = 20; end++; break;
  case 'G': case 'g': shift = 30; end++; break;
  case 'T': case 't': shift = 40; end++; break;
  }
  if (*end == 'i') end++;
  if (*end == 'B') end++;
  if (*end || v > (UINT64_MAX >> shift)) return 0;
  return (uint64_t)v << shift;
}

/* A number option: 0 (off, the default) or a value in [lo, hi]; anything else is said
 * once and ignored. */
static double read_number(const char *name, double lo, double hi) {
  const char *g = getenv(name);
  char *end = NULL;
  double v = g && *g ? strtod(g, &end) : 0;
  if (!g || !*g || (!*end && (v == 0 || (v >= lo && v <= hi)))) return v;
  fprintf(stderr, "simcuda: warning: %s='%s' is not 0 (off) or a number between %g and %g; ignored\n", name, g, lo, hi);
  return 0;
}

/* The host's memmove cost per byte, for a link's first copy (stream.c keeps it from
 * then on): without it the first copy took its link time plus a memmove, past 1.5x the
 * link under ASan's slower memmove, and the exit report named a slow link. The fastest
 * of five: a loaded machine that preempts one memmove would otherwise make the estimate
 * so large that the first copy read its source at once, not at the end of its time. */
static void measure_memmove(void) {
  size_t n = 2u << 20;
  char *a = malloc(n), *b = malloc(n);
  double best = 0;
  if (a && b) {
    memset(a, 1, n), memset(b, 2, n);
    for (int i = 0; i < 5; i++) {
      struct timespec t0, t1;
      clock_gettime(CLOCK_MONOTONIC, &t0);
      memmove(b, a, n);
      clock_gettime(CLOCK_MONOTONIC, &t1);
      double ns = (double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec);
      if (!i || ns < best) best = ns;
    }
    atomic_store(&sim.memmove_ns_per_byte, best / (double)n);
  }
  free(a), free(b);
}

/* Copies as slow as a link (GB/s), kernels as long as a GPU's (microseconds each): a
 * missing wait for a copy or a kernel then shows every time, not only when the machine
 * happens to be loaded, and a host that waits for the device pays what it would on one. */
static void read_device_times(void) {
  double gbps = read_number("SIMCUDA_COPY_GBPS", 0.001, 1e4), us = read_number("SIMCUDA_KERNEL_US", 0.001, 1e6);
  if (gbps > 0) sim.copy_ns_per_byte = 1 / gbps, measure_memmove();
  sim.kernel_ns = us * 1e3;
  const char *depth = getenv("SIMCUDA_QUEUE_DEPTH"); /* 0: no limit; unset or ignored: 1024 */
  double d = read_number("SIMCUDA_QUEUE_DEPTH", 1, 1e9);
  sim.queue_depth = d > 0 ? (uint64_t)d : depth && !strcmp(depth, "0") ? 0 : 1024;
}

/* SIMCUDA_DEVICES: how many devices, each of SIMCUDA_MEMORY. */
static void read_devices(void) {
  double v = read_number("SIMCUDA_DEVICES", 1, SIM_MAX_DEVICES);
  sim.ndevices = v >= 1 && v == (int)v ? (int)v : 1;
  if (v && sim.ndevices != v)
    fprintf(stderr, "simcuda: warning: SIMCUDA_DEVICES='%s' is not a whole number; using 1\n", getenv("SIMCUDA_DEVICES"));
}

/* A switch: 1, true or on; anything else is off. */
static bool read_flag(const char *name) {
  const char *v = getenv(name);
  return v && (!strcmp(v, "1") || !strcmp(v, "true") || !strcmp(v, "on"));
}

static void read_options(void) {
  const char *mem = getenv("SIMCUDA_MEMORY");
  sim.capacity = 16ull << 30;
  if (mem && *mem) {
    uint64_t v = parse_size(mem);
    if (v >= (1u << 20) && v <= (1ull << 40)) sim.capacity = v;
    else fprintf(stderr, "simcuda: warning: SIMCUDA_MEMORY='%s' is not a size between 1MiB "
                         "and 1TiB; using 16GiB\n", mem);
  }
  sim.strict = read_flag("SIMCUDA_STRICT"), sim.map_sync = read_flag("SIMCUDA_MAP_SYNC");
  read_devices();
  read_device_times();
}

/* The device range sits far from the heap, as device virtual addresses do: allocations
 * in the lower half, VMM reservations in the upper half. */
/* SIMCUDA_BASE (hex) moves the range, e.g. for ThreadSanitizer, whose shadow memory
 * covers the default. */
static void *base_hint(void) {
  const char *b = getenv("SIMCUDA_BASE");
  uintptr_t v = b && *b ? (uintptr_t)strtoull(b, NULL, 16) : 0;
  return (void *)(v ? v : (uintptr_t)0x500000000000ull);
}

static void reserve(void) {
  read_options();
  sim.size = 4 * (uintptr_t)sim.capacity * (uintptr_t)sim.ndevices;
  void *want = base_hint();
  void *p = mmap(want, sim.size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE |
                 MAP_FIXED_NOREPLACE, -1, 0);
  if (p == MAP_FAILED)
    p = mmap(NULL, sim.size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    fprintf(stderr, "simcuda: error: cannot reserve %zu bytes of address space\n", sim.size);
    abort();
  }
  sim.base = (uintptr_t)p;
  sim.vmm_base = sim.base + sim.size / 2;
}

void sim_lazy_init(void) { pthread_once(&once, reserve); }

/* Fork: the lock is taken across fork so the child never inherits it held by a worker.
 * The child has no worker threads, and like CUDA it cannot use a driver its parent had
 * initialised: every call there fails with CUDA_ERROR_NOT_INITIALIZED. */
static void prefork(void) { pthread_mutex_lock(&sim.mu); }
static void postfork_parent(void) { pthread_mutex_unlock(&sim.mu); }
static void postfork_child(void) {
  pthread_mutex_init(&sim.mu, NULL);
  pthread_cond_init(&sim.cv, NULL);
  if (sim.initialized) sim.forked = true, sim.initialized = false;
}

__attribute__((constructor)) static void register_fork_handlers(void) {
  pthread_atfork(prefork, postfork_parent, postfork_child);
}

bool sim_in_device_range(uintptr_t p) { return sim.base && p >= sim.base && p < sim.base + sim.size; }

void sim_account(int device, int64_t delta) {
  sim.in_use[device] = (uint64_t)((int64_t)sim.in_use[device] + delta);
  if (sim.in_use[device] > sim.peak[device]) sim.peak[device] = sim.in_use[device];
}

/* Counts a misuse reported at exit, keeping the first one's description. */
static void note(uint64_t *count, char first[256], const char *what) {
  pthread_mutex_lock(&sim.mu);
  if (!(*count)++) snprintf(first, 256, "%s", what);
  pthread_mutex_unlock(&sim.mu);
}

void sim_note_bad_launch(const char *what) { note(&sim.bad_launches, sim.first_bad, what); }
void sim_note_bad_unmap(const char *what) { note(&sim.bad_unmaps, sim.first_bad_unmap, what); }
void sim_note_bad_peer(const char *what) { note(&sim.bad_peers, sim.first_bad_peer, what); }

static void write_peak(void) {
  const char *path = getenv("SIMCUDA_PEAK_FILE");
  if (!path || !*path) return;
  FILE *f = fopen(path, "w");
  if (!f) {
    fprintf(stderr, "simcuda: warning: cannot write SIMCUDA_PEAK_FILE %s\n", path);
    return;
  }
  for (int d = 0; d < (sim.ndevices ? sim.ndevices : 1); d++) fprintf(f, "%llu\n", (unsigned long long)sim.peak[d]);
  fclose(f);
}

/* A link the host could not keep up with: the times the program measured are the
 * host's memmove, not SIMCUDA_COPY_GBPS (said when over a tenth of the bytes). */
static void report_link(void) {
  unsigned long long all = atomic_load(&sim.link_bytes), slow = atomic_load(&sim.link_slow_bytes);
  if (!all || slow * 10 < all) return;
  fprintf(stderr, "simcuda: warning: %.0f %% of %llu bytes copied took the host's memmove longer than "
                  "SIMCUDA_COPY_GBPS=%g allows (it ran at %.1f GB/s on the last copy): the link was the host's\n",
          100.0 * (double)slow / (double)all, all, 1 / sim.copy_ns_per_byte, 1 / atomic_load(&sim.memmove_ns_per_byte));
}

__attribute__((destructor)) static void report(void) {
  write_peak();
  report_link();
  if (sim.bad_launches)
    fprintf(stderr, "simcuda: error: %llu kernel launches passed pointers outside live device "
                    "memory; first: %s\n", (unsigned long long)sim.bad_launches, sim.first_bad);
  if (sim.bad_unmaps)
    fprintf(stderr, "simcuda: error: %llu unmaps of memory that queued work still uses; "
                    "first: %s\n", (unsigned long long)sim.bad_unmaps, sim.first_bad_unmap);
  if (sim.bad_peers)
    fprintf(stderr, "simcuda: error: %llu kernel launches used another device's memory without peer "
                    "access; first: %s\n", (unsigned long long)sim.bad_peers, sim.first_bad_peer);
  if (sim.strict && (sim.bad_launches || sim.bad_unmaps || sim.bad_peers)) _exit(86);
}
