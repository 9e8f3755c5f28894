/* A free's "dead count": how many of the allocations made after its buffer are freed
 * already. The recording's token for a free (record.c). It was how many allocations back
 * the buffer was made; but PyTorch makes the optimizer's state in the first step, lazily,
 * between the step's own buffers, so the frees of step 1 counted back over allocations
 * that step 2's do not, and the first plan waited for steps 2-3. Buffers still live (the
 * optimizer's state, the weights) count for nothing now: step 1 is a copy of step 2.
 *
 * A Fenwick tree over the last PA_DEAD_RING allocation numbers, a ring, 1 where the
 * buffer is live: O(log ring) an allocation and a free, no malloc after the first. A
 * buffer older than the ring (a weight freed at the end) gets its distance back past the
 * ring: a token no dead count has. Kept only while the events are logged (the served
 * alloc+free pair paid 7 ns for it, 132 -> 139): the first free logged after a time
 * without rebuilds it from the live buffers (pa_dead_reset, then each one born). */
#include "pa.h"

#include <stdlib.h>
#include <string.h>

typedef struct dead_s {
  uint32_t *tree; /* Fenwick, 1-based over ring slots */
  uint8_t *live;  /* per ring slot: its buffer is live and counted */
  bool failed;    /* no memory for the tree: every count is the distance back */
} dead_t;

static dead_t PA_PER_DEVICE(dead);
PA_BIND(dead)
#define dead PA_THIS(dead)

static bool ready(void) {
  if (dead.tree || dead.failed) return !dead.failed;
  dead.tree = calloc(PA_DEAD_RING + 1, sizeof *dead.tree), dead.live = calloc(PA_DEAD_RING, 1);
  if (dead.tree && dead.live) return true;
  free(dead.tree), free(dead.live);
  dead.tree = NULL, dead.live = NULL, dead.failed = true;
  return false;
}

static void add(uint32_t slot, int32_t d) {
  for (uint32_t i = slot + 1; i <= PA_DEAD_RING; i += i & -i) dead.tree[i] += (uint32_t)d;
}

/* Live buffers in slots [0, k). */
static uint64_t prefix(uint32_t k) {
  uint64_t s = 0;
  for (uint32_t i = k; i; i -= i & -i) s += dead.tree[i];
  return s;
}

/* Live buffers in the n slots from a on, round the ring. */
static uint64_t live_in(uint32_t a, uint64_t n) {
  if (a + n <= PA_DEAD_RING) return prefix((uint32_t)(a + n)) - prefix(a);
  return prefix(PA_DEAD_RING) - prefix(a) + prefix((uint32_t)(a + n - PA_DEAD_RING));
}

static uint32_t slot_of(uint64_t nth) { return (uint32_t)(nth % PA_DEAD_RING); }

/* Allocation nth is the ring's: no more than PA_DEAD_RING made since, it included. */
static bool in_ring(uint64_t nth, uint64_t allocs) { return allocs - nth <= PA_DEAD_RING; }

void pa_dead_born(uint64_t nth) {
  if (!ready()) return;
  uint32_t s = slot_of(nth);
  if (dead.live[s]) add(s, -1); /* the buffer PA_DEAD_RING allocations older is past the ring */
  dead.live[s] = 1, add(s, 1);
}

void pa_dead_gone(uint64_t nth, uint64_t allocs) {
  uint32_t s = slot_of(nth);
  if (!dead.tree || !in_ring(nth, allocs) || !dead.live[s]) return;
  dead.live[s] = 0, add(s, -1);
}

uint64_t pa_dead_count(uint64_t nth, uint64_t allocs) {
  uint64_t after = allocs - nth - 1;
  if (!dead.tree || !in_ring(nth, allocs)) return PA_DEAD_RING + allocs - nth;
  return after - live_in(slot_of(nth + 1), after);
}

void pa_dead_reset(void) {
  if (!dead.tree) return;
  memset(dead.tree, 0, (PA_DEAD_RING + 1) * sizeof *dead.tree), memset(dead.live, 0, PA_DEAD_RING);
}
