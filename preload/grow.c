/* The one growth rule of the preload's arrays: capacity doubles (from 1024) until it
 * holds what is needed, never past a limit. */
#include "pa.h"

#include <stdlib.h>

bool pa_grow(void *arr, size_t *cap, size_t need, size_t elem, size_t limit) {
  if (need <= *cap) return true;
  size_t c = *cap ? *cap : 1024;
  while (c < need) c *= 2;
  void *q = c <= limit ? realloc(*(void **)arr, c * elem) : NULL;
  if (!q) return false;
  *(void **)arr = q, *cap = c;
  return true;
}
