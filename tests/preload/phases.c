/* phases: a training loop that alternates between two steady iterations (train and
 * eval: different buffers and sizes), each phase several iterations long, each buffer
 * written and read back. Prints one checksum per phase. Under the preload both
 * iterations are planned once and the second visit of each serves its kept plan.
 * Usage: phases ITERATIONS_PER_PHASE PHASES */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cuda_runtime_api.h>

static const size_t train[] = {1 << 20, 3 << 18, 65536, 1 << 20, 12288, 2 << 20, 4096, 786432};
static const size_t eval[] = {40960, 1 << 19, 1 << 19, 8192};

static uint64_t iteration(const size_t *sizes, int n, uint64_t h) {
  void *p[8];
  for (int i = 0; i < n; i++) {
    uint64_t v = h * 31 + (uint64_t)i, back = 0;
    if (cudaMalloc(&p[i], sizes[i]) || cudaMemcpy(p[i], &v, sizeof v, cudaMemcpyHostToDevice)) exit(1);
    if (i % 3 == 2) { /* a temporary: read back and freed at once */
      if (cudaMemcpy(&back, p[i], sizeof back, cudaMemcpyDeviceToHost) || cudaFree(p[i])) exit(1);
      h = h * 1099511628211ull ^ back;
    }
  }
  for (int i = n - 1; i >= 0; i--) {
    uint64_t back = 0;
    if (i % 3 == 2) continue;
    if (cudaMemcpy(&back, p[i], sizeof back, cudaMemcpyDeviceToHost) || cudaFree(p[i])) exit(1);
    h = h * 1099511628211ull ^ back;
  }
  return h;
}

int main(int argc, char **argv) {
  int iters = argc > 1 ? atoi(argv[1]) : 12, phases = argc > 2 ? atoi(argv[2]) : 4;
  void *weights;
  if (cudaMalloc(&weights, 8 << 20)) return 1;
  for (int ph = 0; ph < phases; ph++) {
    uint64_t h = 14695981039346656037ull;
    for (int it = 0; it < iters; it++)
      h = ph % 2 ? iteration(eval, 4, h) : iteration(train, 8, h);
    printf("phase %d (%s) checksum %016llx\n", ph, ph % 2 ? "eval" : "train", (unsigned long long)h);
  }
  cudaFree(weights);
  return 0;
}
