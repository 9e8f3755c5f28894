/* Fault injection, for tests of the callers' error paths: SIMCUDA_FAIL="cuMemMap:3" makes
 * the third cuMemMap call fail with CUDA_ERROR_OUT_OF_MEMORY; "cuMemCreate:5+" every call
 * from the fifth on; "cuMemUnmap:2=1" with code 1. Entries separated by commas. Calls
 * count per name from process start, whoever makes them (the runtime's too). */
#include "sim.h"

#include <stdlib.h>
#include <string.h>

#define MAX_FAULTS 8

static struct fault_s {
  char name[32];
  unsigned long long nth;
  bool onward;
  CUresult code;
  unsigned long long calls; /* guarded by sim.mu */
} faults[MAX_FAULTS];
static size_t nfaults;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static bool parse_one(const char *s, size_t len, struct fault_s *f) {
  const char *colon = memchr(s, ':', len);
  if (!colon || colon == s || (size_t)(colon - s) >= sizeof f->name) return false;
  memcpy(f->name, s, (size_t)(colon - s));
  char *end;
  f->nth = strtoull(colon + 1, &end, 10);
  f->onward = *end == '+';
  end += f->onward;
  f->code = CUDA_ERROR_OUT_OF_MEMORY;
  if (*end == '=') f->code = (CUresult)strtoul(end + 1, &end, 10);
  return f->nth > 0 && f->code != CUDA_SUCCESS && end == s + len;
}

static void parse(void) {
  const char *s = getenv("SIMCUDA_FAIL");
  for (; s && *s && nfaults < MAX_FAULTS; s += *s == ',') {
    size_t len = strcspn(s, ",");
    if (parse_one(s, len, &faults[nfaults])) nfaults++;
    else fprintf(stderr, "simcuda: warning: SIMCUDA_FAIL entry '%.*s' is not NAME:N[+][=CODE]\n", (int)len, s);
    s += len;
  }
}

CUresult sim_fault(const char *name) {
  pthread_once(&once, parse);
  CUresult rc = CUDA_SUCCESS;
  pthread_mutex_lock(&sim.mu);
  for (size_t i = 0; i < nfaults; i++) {
    struct fault_s *f = &faults[i];
    if (strcmp(f->name, name)) continue;
    f->calls++;
    if (f->calls == f->nth || (f->onward && f->calls > f->nth)) rc = f->code;
  }
  pthread_mutex_unlock(&sim.mu);
  return rc;
}
