/* The replays' check that no two live buffers overlap: each buffer is filled with a
 * pattern of its own when it is made and verified before it is freed; a mismatch means
 * another buffer was handed the same memory meanwhile. With sample set, only the two
 * ends of a big buffer (EDGE_WORDS words each) are written: the footprint is what a
 * replay measures, and the preload's shadow checker proves the rest. */
#ifndef WORKLOAD_PATTERN_H
#define WORKLOAD_PATTERN_H

#include "port.h"

KERNEL_3(fill, unsigned *, p, long, words, unsigned, seed) {
  DEVICE_LOOP(i, words) p[i] = (unsigned)(i * 2654435761u) ^ seed;
}

KERNEL_4(verify, const unsigned *, p, long, words, unsigned, seed, unsigned long long *, bad) {
  DEVICE_LOOP(i, words) {
    if (p[i] != ((unsigned)(i * 2654435761u) ^ seed)) {
#ifdef __CUDACC__
      atomicAdd(bad, 1ull);
#else
      (*bad)++;
#endif
    }
  }
}

#define EDGE_WORDS 64

/* Fills (or verifies) w words at p on stream s: all, or with sample its two edges. */
static inline void pattern_fill(unsigned *p, long w, unsigned seed, int sample, cudaStream_t s) {
  long n = sample && w > 2 * EDGE_WORDS ? EDGE_WORDS : w;
  CHECK_CUDA(fill_launch(grid_for(n), block256(), s, p, n, seed));
  if (n < w) CHECK_CUDA(fill_launch(grid_for(n), block256(), s, p + w - n, n, ~seed));
}

static inline void pattern_verify(const unsigned *p, long w, unsigned seed, int sample, unsigned long long *bad,
                                  cudaStream_t s) {
  long n = sample && w > 2 * EDGE_WORDS ? EDGE_WORDS : w;
  CHECK_CUDA(verify_launch(grid_for(n), block256(), s, p, n, seed, bad));
  if (n < w) CHECK_CUDA(verify_launch(grid_for(n), block256(), s, p + w - n, n, ~seed, bad));
}

#endif
