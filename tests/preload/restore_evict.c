/* restore_evict: a page whose restore is still running leaves again before anyone used
 * it. A (3 MiB: page 0 and half of page 1) is filled and sent to host memory for B; a
 * cudaMalloc of X lands in page 1's free half, so page 1 comes back with A's bytes on
 * the in copy stream; X is freed unused, and Y's allocation sends A out again at once.
 * Page 1's copy out runs on the out copy stream: unless it waits for the restore, it
 * reads the page before A's bytes are back, and A's sum, read after, differs. Meant
 * for PLANALLOC_BUDGET=6M (3 pages), PLANALLOC_EVICT_REPEAT=0 (A, idle longest, is the
 * victim) and SIMCUDA_COPY_GBPS=1 (the restore takes a millisecond).
 * Usage: restore_evict ROUNDS */
#define PROGRAM "restore_evict"
#include "program.h"

#define MIB (1u << 20)
#define A_WORDS (3 * MIB / 4)

static void fill_kernel(const simcu_launch_t *l) {
  uint32_t *p, v, n;
  memcpy(&p, l->args[0], sizeof p), memcpy(&v, l->args[1], sizeof v), memcpy(&n, l->args[2], sizeof n);
  for (uint32_t i = 0; i < n; i++) p[i] = v * 2654435761u + i;
}

static void sum_kernel(const simcu_launch_t *l) { sum_words(l, A_WORDS); }

static void fill(uint32_t *p, uint32_t v, uint32_t n) { (void)p, (void)v, (void)n; } /* host stubs */
static void sum(const uint32_t *p, uint64_t *out) { (void)p, (void)out; }

static void fill_on(uint32_t *p, uint32_t v, uint32_t bytes, cudaStream_t s) {
  uint32_t n = bytes / 4;
  void *args[3] = {&p, &v, &n};
  launch((const void *)fill, args, s);
}

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 3;
  size_t fsz[3] = {sizeof(void *), sizeof(uint32_t), sizeof(uint32_t)}, ssz[2] = {sizeof(void *), sizeof(void *)};
  CK(__cudaRegisterSimKernel((const void *)fill, "fill", fill_kernel, 3, fsz));
  CK(__cudaRegisterSimKernel((const void *)sum, "sum", sum_kernel, 2, ssz));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  uint64_t *out, host;
  CK(cudaMalloc((void **)&out, sizeof host));
  for (int r = 0; r < rounds; r++) {
    uint32_t *a, *b, *x, *y;
    CK(cudaMalloc((void **)&a, 3 * MIB));
    fill_on(a, 1 + (uint32_t)r, 3 * MIB, s);
    CK(cudaMalloc((void **)&b, 4 * MIB)); /* A's pages leave for B's */
    fill_on(b, 100 + (uint32_t)r, 4 * MIB, s);
    CK(cudaMalloc((void **)&x, MIB / 2)); /* page 1 comes back */
    CK(cudaFree(x));
    CK(cudaMalloc((void **)&y, 4 * MIB)); /* and leaves again, its restore maybe still running */
    fill_on(y, 200 + (uint32_t)r, 4 * MIB, s); /* seen: Y may leave for A's sum */
    void *args[2] = {&a, &out};
    launch((const void *)sum, args, s);
    CK(cudaMemcpyAsync(&host, out, sizeof host, cudaMemcpyDeviceToHost, s));
    CK(cudaStreamSynchronize(s));
    printf("round %d sum %llu\n", r, (unsigned long long)host);
    CK(cudaFree(y));
    CK(cudaFree(b));
    CK(cudaFree(a));
  }
  CK(cudaFree(out));
  return 0;
}
