/* The one growth rule of the preload's arrays: capacity doubles (from 1024) until it
 * holds what is needed, never past a limit. And the one order and lower bound of their
 * sorted 32-bit ones. */
#include "pa.h"

#include <stdlib.h>

uint32_t pa_lower_u32(const uint32_t *a, uint32_t lo, uint32_t hi, uint64_t key) {
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (a[mid] < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

int pa_cmp_u32(const void *x, const void *y) {
  uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
  return (a > b) - (a < b);
}

bool pa_grow(void *arr, size_t *cap, size_t need, size_t elem, size_t limit) {
  if (need <= *cap) return true;
  size_t c = *cap ? *cap : 1024;
  while (c < need) c *= 2;
  void *q = c <= limit ? realloc(*(void **)arr, c * elem) : NULL;
  if (!q) return false;
  *(void **)arr = q, *cap = c;
  return true;
}
