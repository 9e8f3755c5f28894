/* What the budget's test programs share: a runtime call that must succeed (else one
 * line, PROGRAM: the call: its error code, and exit status 1), a one-thread launch, and
 * the order-sensitive sum their kernels print.
 * Define PROGRAM (the program's name, a string) before including it. */
#ifndef PLANALLOC_TEST_PROGRAM_H
#define PLANALLOC_TEST_PROGRAM_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simcudart.h"

static inline void check_call(cudaError_t e, const char *call) {
  if (e) fprintf(stderr, "%s: %s: %d\n", PROGRAM, call, (int)e), exit(1);
}

#define CK(call) check_call((call), #call)

static inline void launch(const void *fn, void **args, cudaStream_t s) {
  CK(cudaLaunchKernel(fn, (dim3){1, 1, 1}, (dim3){1, 1, 1}, args, 0, s));
}

/* The body of a sum kernel (const uint32_t *p, uint64_t *out) over n words: a missed
 * or reordered write changes it. */
static inline void sum_words(const simcu_launch_t *l, uint32_t n) {
  const uint32_t *p;
  uint64_t *out, sum = 0;
  memcpy(&p, l->args[0], sizeof p), memcpy(&out, l->args[1], sizeof out);
  for (uint32_t i = 0; i < n; i++) sum = sum * 31 + p[i];
  *out = sum;
}

#endif
