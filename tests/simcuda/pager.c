/* The simulator's page work, off the host's critical path as a GPU's driver keeps it.
 * Freeing a released handle's memory (cuMemRelease: 0.3 ms on the CI machine) runs on a
 * helper thread, in order. Filling a mapping's pages (faulted in, 4 KiB at a time:
 * 0.2-1.5 ms for 2 MiB here) is done only where copies are timed as a link
 * (SIMCUDA_COPY_GBPS): on the helper as cuMemSetAccess opens them, and by a copy into
 * them before its memmove, inside its link time, where the helper is not done (a fill
 * of filled pages costs a walk of their tables), so that the memmove runs at the link's
 * speed. Until 2026-11-27 cuMemSetAccess filled every page it opened on the caller's
 * thread: an H200's takes 21.9 us a page, and a budget replay of ResNet-50 (26 us
 * kernels, half its peak) spent 358 ms of host time a step there, 45 % of the run's
 * CPU, for 24 ms of the real calls' cost; filled by the copy alone, the restores ran
 * slower than the link (ResNet-50's trace_replay at 50 %: 1.01 -> 1.18 of the bound). Without a link a
 * mapping's pages fault in at their first touch, as cuMemAlloc's memory does: filled
 * ahead on a helper thread, every page a VMM preload mapped cost this 2-core machine
 * CPU that the simulated device and the program needed, and that a caching allocator's
 * cuMemAlloc, whose memory no kernel had touched, never paid (GPT's replay: 22 % of
 * the run's samples in clear_page, 3.8 s of system time; no GPU pays the host for it). */
#include "sim.h"

#include <sys/mman.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif

#define QUEUE 4096

typedef struct job_s {
  uintptr_t at; /* 0: close fd */
  size_t size;
  int fd;
} job_t;

static struct {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  job_t q[QUEUE];
  size_t head, n;
  bool started, failed;
} pg = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static void run(job_t j) {
  if (j.at) (void)madvise((void *)j.at, j.size, MADV_POPULATE_WRITE);
  else close(j.fd);
}

static void *pager(void *unused) {
  (void)unused;
  pthread_mutex_lock(&pg.mu);
  for (;;) {
    while (!pg.n) pthread_cond_wait(&pg.cv, &pg.mu);
    job_t j = pg.q[pg.head];
    pg.head = (pg.head + 1) % QUEUE, pg.n--;
    pthread_mutex_unlock(&pg.mu);
    run(j);
    pthread_mutex_lock(&pg.mu);
  }
  return NULL;
}

/* Queued for the helper; false when it cannot take it (no room, no thread). */
static bool queue(job_t j) {
  pthread_mutex_lock(&pg.mu);
  if (!pg.started && !pg.failed) {
    pthread_t t;
    pthread_attr_t a;
    pg.failed = pthread_attr_init(&a) || pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED) ||
                pthread_create(&t, &a, pager, NULL);
    pg.started = !pg.failed;
  }
  bool ok = pg.started && pg.n < QUEUE;
  if (ok) pg.q[(pg.head + pg.n++) % QUEUE] = j, pthread_cond_signal(&pg.cv);
  pthread_mutex_unlock(&pg.mu);
  return ok;
}

void sim_pager_fill(uintptr_t at, size_t size) {
  uintptr_t lo = at & ~(uintptr_t)4095, hi = (at + size + 4095) & ~(uintptr_t)4095;
  run((job_t){lo, hi - lo, -1});
}

void sim_pager_prefill(uintptr_t at, size_t size) {
  if (sim.copy_ns_per_byte > 0) (void)queue((job_t){at, size, -1}); /* no room: the copy fills it */
}

void sim_pager_close(int fd) {
  job_t j = {0, 0, fd};
  if (!queue(j)) run(j);
}
