/* stress: random allocation traffic through the preload, checked by content. Every live
 * buffer holds a pattern unique to it (written at allocation, head and tail); before a
 * buffer is freed its pattern is read back, so two live buffers that overlap, or a
 * buffer moved under the program, show as a mismatch. The tail is written by a kernel
 * launch, so launches are checked the same way. The main thread repeats one
 * iteration (so a plan is made and served) with random divergence; helper threads
 * allocate at random; a forked child must get the runtime's initialization error and
 * not crash. Usage: stress EVENTS THREADS; exit 0 when every check passed.
 * STRESS_NOFORK=1: no child; STRESS_RANDOM=1: the main thread wanders too;
 * STRESS_DEVICES=N (with SIMCUDA_DEVICES=N): the helpers switch among N devices at
 * random, and each buffer is written and checked on the device it was made on, and
 * freed there or, every other one, with the device current before. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "simcudart.h"

#define EDGE 64
static long events_per_thread;
static int failures;
static pthread_mutex_t fail_mu = PTHREAD_MUTEX_INITIALIZER;

static void fail(const char *what, long i) {
  pthread_mutex_lock(&fail_mu);
  if (failures++ < 10) fprintf(stderr, "stress: %s (event %ld)\n", what, i);
  pthread_mutex_unlock(&fail_mu);
}

typedef struct buf_s {
  unsigned char *p;
  size_t n;
  uint64_t tag;
  int device;
} buf_t;

static int devices = 1; /* STRESS_DEVICES */

static uint64_t next(uint64_t *s) {
  *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
  return *s;
}

static void pattern(unsigned char *out, uint64_t tag, int which) {
  for (int i = 0; i < EDGE; i++) out[i] = (unsigned char)((tag >> (i % 8)) + (unsigned)i * 31u + (unsigned)which);
}

/* The kernel that writes a buffer's tail pattern on the device: launches reach the
 * preload too, and one into the wrong memory shows as a mismatch. */
static void stamp_kernel(const simcu_launch_t *l) {
  unsigned char *dst;
  uint64_t tag;
  memcpy(&dst, l->args[0], sizeof dst), memcpy(&tag, l->args[1], sizeof tag);
  pattern(dst, tag, 1);
}
static void stamp(unsigned char *dst, uint64_t tag) { (void)dst, (void)tag; } /* the host stub */

static void put(buf_t *b, size_t n, uint64_t tag, long i) {
  unsigned char h[EDGE], *tail;
  void *args[2] = {&tail, &tag};
  b->n = n, b->tag = tag, b->p = NULL;
  if (cudaGetDevice(&b->device) != cudaSuccess) return fail("cudaGetDevice failed", i);
  if (cudaMalloc((void **)&b->p, n) != cudaSuccess) return fail("cudaMalloc failed", i);
  if ((uintptr_t)b->p % 256) fail("pointer not 256-byte aligned", i);
  pattern(h, tag, 0);
  if (cudaMemcpy(b->p, h, EDGE, cudaMemcpyHostToDevice)) fail("copy in failed", i);
  tail = b->p + n - EDGE;
  if (cudaLaunchKernel((const void *)stamp, (dim3){1, 1, 1}, (dim3){1, 1, 1}, args, 0, 0)) fail("launch failed", i);
}

static void take(buf_t *b, long i) {
  unsigned char h[EDGE], want[EDGE];
  if (!b->p) return;
  int was = 0;
  if (devices > 1 && (cudaGetDevice(&was) || cudaSetDevice(b->device))) fail("cudaSetDevice failed", i);
  for (int which = 0; which < 2; which++) {
    if (cudaMemcpy(h, b->p + (which ? b->n - EDGE : 0), EDGE, cudaMemcpyDeviceToHost)) fail("copy out failed", i);
    pattern(want, b->tag, which);
    if (memcmp(h, want, EDGE)) fail("a live buffer's contents changed: overlap", i);
  }
  /* every other buffer freed with the device current before (often another): the
   * free goes by the address, as cudaFree does */
  if (devices > 1 && (b->tag & 1) && cudaSetDevice(was)) fail("cudaSetDevice failed", i);
  if (cudaFree(b->p) != cudaSuccess) fail("cudaFree failed", i);
  b->p = NULL;
  if (devices > 1 && cudaSetDevice(was)) fail("cudaSetDevice failed", i);
}

/* The training loop: one fixed iteration of 24 buffers with nested lifetimes, plus a
 * random extra buffer in one iteration of 8 (divergence the plan must survive). */
static void *iterate(void *arg) {
  uint64_t seed = (uintptr_t)arg * 7919 + 17, tag = (uintptr_t)arg << 40;
  buf_t live[24], extra = {0};
  for (long e = 0; e < events_per_thread;) {
    for (int k = 0; k < 24; k++, e++) put(&live[k], EDGE * 2 + (size_t)((k * 7919) % 29) * 4096, ++tag, e);
    if (next(&seed) % 8 == 0) put(&extra, EDGE * 2 + next(&seed) % 100000, ++tag, e++);
    for (int k = 23; k >= 12; k--, e++) take(&live[k], e);
    take(&extra, e);
    for (int k = 0; k < 12; k++, e++) take(&live[k], e);
  }
  return NULL;
}

/* Helpers: a random pool of up to 32 live buffers. */
static void *wander(void *arg) {
  uint64_t seed = (uintptr_t)arg * 104729 + 3, tag = (uintptr_t)arg << 40;
  buf_t live[32] = {{0}};
  for (long e = 0; e < events_per_thread; e++) {
    buf_t *b = &live[next(&seed) % 32];
    if (devices > 1 && next(&seed) % 16 == 0 && cudaSetDevice((int)(next(&seed) % (uint64_t)devices))) fail("cudaSetDevice failed", e);
    if (b->p) take(b, e);
    else put(b, EDGE * 2 + next(&seed) % 300000, ++tag, e);
  }
  for (int k = 0; k < 32; k++) take(&live[k], events_per_thread);
  return NULL;
}

static int forked_child(void) {
  pid_t pid = fork();
  if (pid == 0) {
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, 4096);
    _exit(e == cudaErrorInitializationError ? 0 : 10 + (int)e % 100);
  }
  int st = 0;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 100 + WTERMSIG(st);
}

int main(int argc, char **argv) {
  long events = argc > 1 ? atol(argv[1]) : 100000;
  int threads = argc > 2 ? atoi(argv[2]) : 4;
  if (events <= 0 || threads < 1 || threads > 64) return fprintf(stderr, "usage: stress EVENTS THREADS\n"), 2;
  events_per_thread = events / threads;
  if (getenv("STRESS_DEVICES")) devices = atoi(getenv("STRESS_DEVICES"));
  if (devices < 1 || devices > 8) return fprintf(stderr, "stress: STRESS_DEVICES must be 1 to 8\n"), 2;
  void *warm;
  size_t sizes[2] = {sizeof(void *), sizeof(uint64_t)};
  if (__cudaRegisterSimKernel((const void *)stamp, "stamp", stamp_kernel, 2, sizes)) return fprintf(stderr, "stress: cannot register the kernel\n"), 1;
  cudaMalloc(&warm, 1 << 20); /* the context exists before fork, as in a real program */
  pthread_t th[64];
  /* STRESS_RANDOM=1: no thread repeats anything (a program that never iterates) */
  pthread_create(&th[0], NULL, getenv("STRESS_RANDOM") ? wander : iterate, (void *)1);
  for (int t = 1; t < threads; t++) pthread_create(&th[t], NULL, wander, (void *)(uintptr_t)(t + 1));
  int child = getenv("STRESS_NOFORK") ? 0 : forked_child();
  for (int t = 0; t < threads; t++) pthread_join(th[t], NULL);
  if (child) fprintf(stderr, "stress: the forked child's cudaMalloc did not fail cleanly (status %d)\n", child), failures++;
  cudaFree(warm);
  printf("stress: %ld events on %d threads, %d failures\n", events, threads, failures);
  return failures ? 1 : 0;
}
