/* Event pairs that time the device's work (ktime.c: kernels, link.c: copies): made once
 * per ring, each read with a query, never a wait. */
#include "pa.h"

bool pa_pairs_ready(CUevent *start, CUevent *end, size_t n, int *state) {
  if (!*state) {
    *state = pa_cu.EventElapsedTime ? 1 : 2;
    for (size_t i = 0; i < n && *state == 1; i++)
      if (pa_cu.EventCreate(&start[i], CU_EVENT_DEFAULT) || pa_cu.EventCreate(&end[i], CU_EVENT_DEFAULT)) *state = 2;
  }
  return *state == 1;
}

bool pa_pair_ms(CUevent start, CUevent end, float *ms) {
  return !pa_cu.EventQuery(end) && !pa_cu.EventElapsedTime(ms, start, end);
}
