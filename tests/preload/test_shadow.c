/* The shadow checker's set: exact overlap answers, against a brute-force list over random
 * operations, and the edge cases (adjacent ranges share no byte). */
#include "harness.h"
#include "pa.h"

#include <stdlib.h>

#define N 512

static uint64_t lo_of[N], hi_of[N];
static int live[N];

static bool brute_overlaps(uint64_t lo, uint64_t hi) {
  for (int i = 0; i < N; i++)
    if (live[i] && lo_of[i] < hi && lo < hi_of[i]) return true;
  return false;
}

static void edges(void) {
  uint64_t c[2];
  CHECK(pa_shadow_insert(0, 256, c));
  CHECK(pa_shadow_insert(512, 768, c));
  CHECK(pa_shadow_insert(256, 512, c)); /* touches both neighbours, overlaps neither */
  CHECK(!pa_shadow_insert(100, 200, c));
  CHECK_EQ_I64(c[0], 0);
  CHECK(!pa_shadow_insert(767, 800, c));
  CHECK_EQ_I64(c[0], 512);
  CHECK(!pa_shadow_insert(0, 1024, c));
  CHECK(pa_shadow_erase(512, 768));
  CHECK(!pa_shadow_erase(512, 768)); /* freed twice */
  CHECK(!pa_shadow_erase(0, 100));   /* not a live range's exact bounds */
  CHECK(pa_shadow_insert(600, 700, c));
  CHECK(pa_shadow_erase(600, 700) && pa_shadow_erase(0, 256) && pa_shadow_erase(256, 512));
}

static void random_ops(void) {
  srand(12345);
  for (int op = 0; op < 200000; op++) {
    int i = rand() % N;
    uint64_t c[2];
    if (live[i]) {
      CHECK(pa_shadow_erase(lo_of[i], hi_of[i]));
      live[i] = 0;
      continue;
    }
    uint64_t lo = (uint64_t)(rand() % 100000) * 16, hi = lo + 16 + (uint64_t)(rand() % 4000);
    bool want = !brute_overlaps(lo, hi);
    bool got = pa_shadow_insert(lo, hi, c);
    CHECK(got == want);
    if (got) lo_of[i] = lo, hi_of[i] = hi, live[i] = 1;
    else CHECK(c[0] < hi && lo < c[1]); /* the clash it names really overlaps */
  }
}

int main(void) {
  edges();
  random_ops();
  return test_report("test_shadow");
}
