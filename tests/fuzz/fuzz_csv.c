/* libFuzzer target: any bytes into the CSV reader; whatever it accepts must plan to a
 * valid layout with the fast heuristics (polish within the 50 ms limit). */
#include "planner.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  pa_trace_t t;
  char err[512];
  if (pa_csv_read_buf((const char *)data, size, &t, err, sizeof err)) return 0;
  if (t.n <= 200) {
    int64_t *off = malloc(t.n * sizeof *off), peak;
    pa_plan_opts_t o = {.time_limit = 0.05};
    static const char *const algos[] = {"start-best", "megengine", "size-best", "skyline", "polish", "best"};
    for (size_t i = 0; off && i < sizeof algos / sizeof *algos; i++) {
      int rc = pa_plan(pa_algo_find(algos[i]), &t, &o, off, &peak, err, sizeof err);
      if (rc == PA_EINTERNAL) abort(); /* a layout failed validation */
    }
    free(off);
  }
  pa_trace_free(&t);
  return 0;
}
