/* What calibrate.c and contend.c share: a driver call that must succeed (the tool exits
 * with the call's name, file and line), the monotonic clock in us, the median of a
 * sample. Define GPU_TOOL (the tool's name, for its messages) before including. */
#ifndef GPU_TOOL_H
#define GPU_TOOL_H

#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define CHECK(call)                                                                         \
  do {                                                                                      \
    CUresult rc_ = (call);                                                                  \
    if (rc_ != CUDA_SUCCESS) {                                                              \
      const char *s_ = NULL;                                                                \
      cuGetErrorName(rc_, &s_);                                                             \
      fprintf(stderr, GPU_TOOL ": %s:%d: %s: %s\n", __FILE__, __LINE__, #call, s_ ? s_ : "?"); \
      exit(1);                                                                              \
    }                                                                                       \
  } while (0)

static inline double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static inline int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static inline double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return v[n / 2];
}

#endif
