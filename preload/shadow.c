/* The shadow checker, built only into lib/libplanalloc-shadow.so (PA_SHADOW), the preload
 * the tests run: its own sorted array of every live range planalloc has handed out,
 * sharing no code with the plan's slots, the overdue list or the online allocator it
 * checks. A new range that overlaps a live one, or a free of a range that is not live,
 * is reported and aborts the program, so a test cannot pass over it. Slow on purpose:
 * O(live) per call, all under pa_mu. */
#include "pa.h"

#include <stdlib.h>
#include <string.h>

typedef struct range_s {
  uint64_t lo, hi;
} range_t;

static struct {
  range_t *r;
  size_t n, cap;
  uint64_t allocs, frees; /* checked */
} sh;

/* Index of the first range with lo >= x. */
static size_t lower_bound(uint64_t x) {
  size_t a = 0, b = sh.n;
  while (a < b) {
    size_t m = (a + b) / 2;
    if (sh.r[m].lo < x) a = m + 1;
    else b = m;
  }
  return a;
}

static _Noreturn void violation(const char *what, uint64_t lo, uint64_t hi, const uint64_t *other) {
  if (other)
    pa_error("shadow: %s [%#llx, %#llx) overlaps the live [%#llx, %#llx)", what, (unsigned long long)lo,
             (unsigned long long)hi, (unsigned long long)other[0], (unsigned long long)other[1]);
  else pa_error("shadow: %s [%#llx, %#llx) is not live", what, (unsigned long long)lo, (unsigned long long)hi);
  abort();
}

bool pa_shadow_insert(uint64_t lo, uint64_t hi, uint64_t clash[2]) {
  size_t i = lower_bound(lo);
  const range_t *c = i < sh.n && sh.r[i].lo < hi ? &sh.r[i] : i > 0 && sh.r[i - 1].hi > lo ? &sh.r[i - 1] : NULL;
  if (c) return clash[0] = c->lo, clash[1] = c->hi, false;
  if (!pa_grow(&sh.r, &sh.cap, sh.n + 1, sizeof *sh.r, SIZE_MAX)) pa_error("shadow: out of memory"), abort();
  memmove(&sh.r[i + 1], &sh.r[i], (sh.n - i) * sizeof *sh.r);
  sh.r[i] = (range_t){lo, hi}, sh.n++;
  return true;
}

bool pa_shadow_erase(uint64_t lo, uint64_t hi) {
  size_t i = lower_bound(lo);
  if (i == sh.n || sh.r[i].lo != lo || sh.r[i].hi != hi) return false;
  memmove(&sh.r[i], &sh.r[i + 1], (sh.n - i - 1) * sizeof *sh.r);
  sh.n--;
  return true;
}

void pa_shadow_alloc(CUdeviceptr p, uint64_t size) {
  uint64_t clash[2];
  if (!pa_shadow_insert(p, p + size, clash)) violation("the new buffer", p, p + size, clash);
  sh.allocs++;
}

void pa_shadow_free(CUdeviceptr p, uint64_t size) {
  if (!pa_shadow_erase(p, p + size)) violation("the freed buffer", p, p + size, NULL);
  sh.frees++;
}

void pa_shadow_report(void) {
  pa_info("shadow: %llu allocations and %llu frees checked, no overlap, %zu buffers live at exit",
          (unsigned long long)sh.allocs, (unsigned long long)sh.frees, sh.n);
}
