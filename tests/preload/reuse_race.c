/* reuse_race: a buffer freed while a kernel on another stream still reads it, its range
 * handed out again at once and overwritten. cudaFree waits for the device; planalloc's
 * free does not (PLANALLOC_FREE=ordered), so only its ordering on the device keeps the
 * reader's sum right. Run with SIMCUDA_KERNEL_US (the reader then reads at the end of
 * its time, every time). How the new owner writes the range, by mode:
 *   streams   a kernel on another stream
 *   pointer   the same, while the reader reaches the freed buffer only through a pointer
 *             stored in device memory
 *   copy      an async copy on another stream
 *   memset    an async memset on another stream
 *   sync      a synchronous copy (the legacy stream)
 *   graph     a CUDA graph captured on a third stream, launched on another
 *   churn     as streams, on streams made for the round and destroyed after it (more
 *             rounds than planalloc has lanes: retired streams must give theirs back)
 *   page      the freed buffer spans three pages and the reader reads its middle one; a
 *             buffer of a page allocated after it stays, so the new one (four pages) cannot take
 *             the freed address and needs pages of its own: the freed middle pages'
 *             physical memory serves it while the reader still reads it through the
 *             old address; a kernel on another stream overwrites all of it
 *   peer      the reader is device 1's kernel on device 1's stream, reading the pool's
 *             device-0 buffer under peer access (SIMCUDA_DEVICES=2); the new owner writes
 *             on device 0 as in streams
 *   peerwrite the reader is device 0's; the new owner is device 1's kernel on device 1's
 *             stream, writing the pool's buffer under peer access
 * The reader is queued behind another kernel on its stream, so it ends after any kernel
 * launched after it elsewhere. Prints the reader's sum per round (compared across runs); on stderr, how many rounds
 * the new buffer took the freed one's address (a test that reuses nothing proves nothing).
 * Usage: reuse_race MODE [ROUNDS] */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROGRAM "reuse_race"
#include "program.h"

#define N 4096
#define PAGE_WORDS (512 * 1024) /* 2 MiB: one of planalloc's pages */

static void sum_kernel(const simcu_launch_t *l) { sum_words(l, N); }

/* The same reading of N words, the buffer's address read from device memory first. */
static void sum_indirect_kernel(const simcu_launch_t *l) {
  const uint32_t *const *pp;
  memcpy(&pp, l->args[0], sizeof pp);
  simcu_launch_t direct = *l;
  direct.args[0] = (void *)pp; /* where the buffer's address is, as a parameter would be */
  sum_words(&direct, N);
}

static void fill_kernel(const simcu_launch_t *l) {
  uint32_t *p, v;
  memcpy(&p, l->args[0], sizeof p), memcpy(&v, l->args[1], sizeof v);
  for (int i = 0; i < N; i++) p[i] = v + (uint32_t)i;
}

/* Every word of four pages: wherever the freed pages' memory went, it is overwritten. */
static void fill_pages_kernel(const simcu_launch_t *l) {
  uint32_t *p, v;
  memcpy(&p, l->args[0], sizeof p), memcpy(&v, l->args[1], sizeof v);
  for (int i = 0; i < 4 * PAGE_WORDS; i++) p[i] = v + (uint32_t)i;
}

static void sum(const uint32_t *p, uint64_t *out) { (void)p, (void)out; } /* host stubs */
static void sum_indirect(uint32_t *const *pp, uint64_t *out) { (void)pp, (void)out; }
static void fill(uint32_t *p, uint32_t v) { (void)p, (void)v; }
static void fill_pages(uint32_t *p, uint32_t v) { (void)p, (void)v; }

static void register_kernels(void) {
  size_t two[2] = {sizeof(void *), sizeof(void *)}, fsz[2] = {sizeof(void *), sizeof(uint32_t)};
  CK(__cudaRegisterSimKernel((const void *)sum, "sum", sum_kernel, 2, two));
  CK(__cudaRegisterSimKernel((const void *)sum_indirect, "sum_indirect", sum_indirect_kernel, 2, two));
  CK(__cudaRegisterSimKernel((const void *)fill, "fill", fill_kernel, 2, fsz));
  CK(__cudaRegisterSimKernel((const void *)fill_pages, "fill_pages", fill_pages_kernel, 2, fsz));
}

typedef struct ctx_s {
  cudaStream_t a, b, c;
  cudaStream_t peer; /* device 1's (peer modes) */
  uint32_t *junk;    /* pinned: what the copy writes */
  uint32_t *scratch; /* what the reader's stream works on before it: the reader is queued */
} ctx_t;

/* The new owner y overwrites its range on stream b (or the legacy stream, or a graph). */
static void overwrite(const char *mode, const ctx_t *x, uint32_t *y) {
  uint32_t v = 0xdead0000u;
  void *args[2] = {&y, &v};
  if (!strcmp(mode, "copy")) {
    CK(cudaMemcpyAsync(y, x->junk, N * sizeof *y, cudaMemcpyHostToDevice, x->b));
  } else if (!strcmp(mode, "memset")) {
    CK(cudaMemsetAsync(y, 0xab, N * sizeof *y, x->b));
  } else if (!strcmp(mode, "sync")) {
    CK(cudaMemcpy(y, x->junk, N * sizeof *y, cudaMemcpyHostToDevice));
  } else if (!strcmp(mode, "graph")) {
    cudaGraph_t g;
    cudaGraphExec_t e;
    CK(cudaStreamBeginCapture(x->c, cudaStreamCaptureModeGlobal));
    launch((const void *)fill, args, x->c);
    CK(cudaStreamEndCapture(x->c, &g));
    CK(cudaGraphInstantiate(&e, g, 0));
    CK(cudaGraphLaunch(e, x->b));
    CK(cudaStreamSynchronize(x->b));
    CK(cudaGraphExecDestroy(e));
    CK(cudaGraphDestroy(g));
  } else if (!strcmp(mode, "peerwrite")) {
    CK(cudaSetDevice(1));
    launch((const void *)fill, args, x->peer);
    CK(cudaSetDevice(0));
  } else {
    launch(!strcmp(mode, "page") ? (const void *)fill_pages : (const void *)fill, args, x->b);
  }
}

/* Both devices' work done (peer modes), else device 0's. */
static void sync_all(const char *mode) {
  if (!strncmp(mode, "peer", 4)) CK(cudaSetDevice(1)), CK(cudaDeviceSynchronize()), CK(cudaSetDevice(0));
  CK(cudaDeviceSynchronize());
}

/* One round: the reader on a, the free, the new owner; true if it took x's address. */
static bool round_of(const char *mode, const ctx_t *c, const uint32_t *pattern, uint64_t *out) {
  bool indirect = !strcmp(mode, "pointer"), page = !strcmp(mode, "page");
  uint32_t *x, *y, **px = NULL, *wall = NULL;
  CK(cudaMalloc((void **)&x, (page ? 3 * PAGE_WORDS : N) * sizeof *x));
  if (page) CK(cudaMalloc((void **)&wall, PAGE_WORDS * sizeof *wall)); /* a page: best fit puts it right after x */
  uint32_t *read = page ? x + PAGE_WORDS + PAGE_WORDS / 2 : x; /* a page that is x's alone */
  CK(cudaMemcpy(read, pattern, N * sizeof *x, cudaMemcpyHostToDevice));
  if (indirect) {
    CK(cudaMalloc((void **)&px, sizeof *px));
    CK(cudaMemcpy(px, &x, sizeof x, cudaMemcpyHostToDevice));
  }
  uint32_t v = 1;
  void *rargs[2] = {indirect ? (void *)&px : (void *)&read, &out}, *bargs[2] = {(void *)&c->scratch, &v};
  /* the reader waits its turn: it ends after any one kernel (page: after twenty, 100 ms
   * at 5 ms a kernel: the new buffer's pages are mapped first, on a loaded machine too) */
  bool peer = !strcmp(mode, "peer");
  if (peer) CK(cudaDeviceSynchronize()), CK(cudaSetDevice(1)); /* the pattern is there before device 1 reads */
  for (int k = 0; k < (page ? 20 : 1); k++) launch((const void *)fill, bargs, peer ? c->peer : c->a);
  launch(indirect ? (const void *)sum_indirect : (const void *)sum, rargs, peer ? c->peer : c->a);
  if (peer) CK(cudaSetDevice(0));
  CK(cudaFree(x)); /* the reader is still running */
  CK(cudaMalloc((void **)&y, (page ? 4 * PAGE_WORDS : N) * sizeof *y));
  overwrite(mode, c, y);
  sync_all(mode);
  CK(cudaFree(y));
  if (wall) CK(cudaFree(wall));
  if (px) CK(cudaFree(px));
  return y == x;
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "streams";
  int rounds = argc > 2 ? atoi(argv[2]) : 4, reused = 0;
  static const char *const modes[] = {"streams", "pointer", "copy", "memset", "sync", "graph", "churn", "page", "peer", "peerwrite"};
  bool known = false;
  for (size_t i = 0; i < sizeof modes / sizeof *modes; i++) known |= !strcmp(mode, modes[i]);
  if (!known || rounds <= 0)
    fprintf(stderr, "usage: reuse_race streams|pointer|copy|memset|sync|graph|churn|page|peer|peerwrite [ROUNDS]\n"), exit(2);
  register_kernels();
  ctx_t c;
  CK(cudaStreamCreateWithFlags(&c.a, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&c.b, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&c.c, cudaStreamNonBlocking));
  c.peer = NULL;
  if (!strncmp(mode, "peer", 4)) { /* device 1 reaches device 0's memory from here on */
    CK(cudaSetDevice(1));
    CK(cudaDeviceEnablePeerAccess(0, 0));
    CK(cudaStreamCreateWithFlags(&c.peer, cudaStreamNonBlocking));
    CK(cudaSetDevice(0));
  }
  CK(cudaMallocHost((void **)&c.junk, N * sizeof *c.junk));
  CK(cudaMalloc((void **)&c.scratch, N * sizeof *c.scratch));
  uint32_t pattern[N];
  for (int i = 0; i < N; i++) pattern[i] = (uint32_t)i * 2654435761u, c.junk[i] = 0x5a5a5a5au;
  uint64_t *sums, host;
  CK(cudaMalloc((void **)&sums, (size_t)rounds * sizeof *sums));
  bool churn = !strcmp(mode, "churn");
  for (int r = 0; r < rounds; r++) {
    if (churn && r) { /* new streams each round, the old ones destroyed with work done */
      CK(cudaStreamDestroy(c.a)), CK(cudaStreamDestroy(c.b));
      CK(cudaStreamCreateWithFlags(&c.a, cudaStreamNonBlocking));
      CK(cudaStreamCreateWithFlags(&c.b, cudaStreamNonBlocking));
    }
    reused += round_of(mode, &c, pattern, sums + r);
    CK(cudaMemcpy(&host, sums + r, sizeof host, cudaMemcpyDeviceToHost));
    printf("%s round %d sum %016llx\n", mode, r, (unsigned long long)host);
  }
  fprintf(stderr, "reuse_race: %s: the new buffer took the freed one's address in %d of %d rounds\n", mode, reused, rounds);
  CK(cudaFree(sums));
  CK(cudaFree(c.scratch));
  return 0;
}
