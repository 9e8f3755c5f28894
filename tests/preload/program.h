/* What the budget's test programs share: a runtime call that must succeed (else one
 * line, PROGRAM: the call: its error code, and exit status 1) and a one-thread launch.
 * Define PROGRAM (the program's name, a string) before including it. */
#ifndef PLANALLOC_TEST_PROGRAM_H
#define PLANALLOC_TEST_PROGRAM_H

#include <stdio.h>
#include <stdlib.h>

#include "simcudart.h"

static inline void check_call(cudaError_t e, const char *call) {
  if (e) fprintf(stderr, "%s: %s: %d\n", PROGRAM, call, (int)e), exit(1);
}

#define CK(call) check_call((call), #call)

static inline void launch(const void *fn, void **args, cudaStream_t s) {
  CK(cudaLaunchKernel(fn, (dim3){1, 1, 1}, (dim3){1, 1, 1}, args, 0, s));
}

#endif
