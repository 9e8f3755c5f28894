/* libcaching.so: a model of PyTorch's CUDACachingAllocator, the allocator PyTorch users
 * run by default, preloaded into a program that calls cudaMalloc/cudaFree (what PyTorch
 * does with PYTORCH_NO_CUDA_MEMORY_CACHING=1), so that planalloc can be compared with what
 * users have. Written from the allocator's documented behaviour, not its code:
 *
 * - A request rounds up to 512 bytes. Requests up to 1 MiB come from the small pool,
 *   whose segments are 2 MiB cudaMallocs; larger ones from the large pool: 1-10 MiB get a
 *   20 MiB segment, 10 MiB and more a segment of their own rounded up to 2 MiB.
 * - The smallest cached free block of the same pool and stream that fits is taken and
 *   split if the rest is worth keeping (over 512 bytes small, over 1 MiB large); freed
 *   pieces merge with free neighbours of the same segment, never across segments.
 * - A block belongs to the stream it was allocated on (cudaMalloc: the legacy default
 *   stream, PyTorch's current stream unless set; cudaMallocAsync: its stream). Freed, it
 *   is reusable at once on that stream, with no wait: stream order makes that safe. A
 *   block freed on another stream (cudaFreeAsync there: PyTorch's record_stream) gets an
 *   event recorded on that stream and returns to its pool only once the event has
 *   completed, which later allocations ask (cudaEventQuery), never wait for.
 * - When cudaMalloc fails: one cached unsplit segment large enough is freed and the call
 *   retried; then the device is synchronised, every cached unsplit segment freed, and
 *   retried; only then out of memory. That is the only place it waits.
 * - max_split_size is left at its default (no limit), no expandable segments.
 *
 * At exit, one line: peak reserved bytes (its segments: what users read as
 * memory_reserved), peak allocated bytes, segments, host waits. CACHING_STATS_FILE=path
 * writes the same as "key value" lines. */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#define EXPORT __attribute__((visibility("default")))

#define MIN_BLOCK 512u
#define SMALL_SIZE (1u << 20)      /* the small pool's largest request */
#define SMALL_BUFFER (2u << 20)    /* its segments */
#define LARGE_BUFFER (20u << 20)   /* the segment of a 1-10 MiB request */
#define MIN_LARGE_ALLOC (10u << 20) /* from here, a segment of its own ... */
#define ROUND_LARGE (2u << 20)     /* ... rounded to this */
#define MAX_USES 8                 /* streams besides its own one block records */

typedef struct block_s {
  uintptr_t addr;
  size_t size;
  cudaStream_t stream;
  bool small, allocated;
  int pending;                   /* events still to complete before it is free */
  cudaStream_t uses[MAX_USES];   /* other streams that used it (freed there) */
  int nuses;
  struct block_s *prev, *next;   /* neighbours in its segment */
  UT_hash_handle hh;             /* allocated blocks by address */
} block_t;

typedef struct pool_s {
  block_t **b; /* free blocks, by (stream, size, address) */
  size_t n, cap;
} pool_t;

typedef struct pending_s {
  cudaEvent_t ev;
  block_t *block;
} pending_t;

static struct {
  pthread_mutex_t mu;
  pool_t small, large;
  block_t *live;
  pending_t *pend;
  size_t npend, cappend;
  cudaEvent_t *spare;
  size_t nspare, capspare;
  uint64_t reserved, reserved_peak, allocated, allocated_peak, segment_calls, host_waits, ooms;
} ca = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* ---- the real runtime ----------------------------------------------------------------- */

#define REAL(name) static __typeof__(&name) real_##name
REAL(cudaMalloc);
REAL(cudaFree);
REAL(cudaMallocAsync);
REAL(cudaFreeAsync);
REAL(cudaEventCreateWithFlags);
REAL(cudaEventRecord);
REAL(cudaEventQuery);
REAL(cudaDeviceSynchronize);

static bool bind(void) {
#define BIND(name) (real_##name || (real_##name = (__typeof__(&name))dlsym(RTLD_NEXT, #name)))
  return BIND(cudaMalloc) && BIND(cudaFree) && BIND(cudaMallocAsync) && BIND(cudaFreeAsync) &&
         BIND(cudaEventCreateWithFlags) && BIND(cudaEventRecord) && BIND(cudaEventQuery) && BIND(cudaDeviceSynchronize);
}

/* ---- pools: sorted arrays, best fit by binary search ---------------------------------- */

static int cmp(const block_t *a, const block_t *b) {
  if (a->stream != b->stream) return (uintptr_t)a->stream < (uintptr_t)b->stream ? -1 : 1;
  if (a->size != b->size) return a->size < b->size ? -1 : 1;
  return a->addr < b->addr ? -1 : a->addr > b->addr;
}

static size_t lower_bound(const pool_t *p, const block_t *key) {
  size_t lo = 0, hi = p->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (cmp(p->b[mid], key) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

static bool pool_insert(pool_t *p, block_t *b) {
  if (p->n == p->cap) {
    size_t cap = p->cap ? 2 * p->cap : 256;
    block_t **nb = realloc(p->b, cap * sizeof *nb);
    if (!nb) return false;
    p->b = nb, p->cap = cap;
  }
  size_t i = lower_bound(p, b);
  memmove(p->b + i + 1, p->b + i, (p->n - i) * sizeof *p->b);
  p->b[i] = b, p->n++;
  return true;
}

static void pool_erase(pool_t *p, block_t *b) {
  size_t i = lower_bound(p, b);
  if (i == p->n || p->b[i] != b) return;
  memmove(p->b + i, p->b + i + 1, (p->n - i - 1) * sizeof *p->b);
  p->n--;
}

static pool_t *pool_of(const block_t *b) { return b->small ? &ca.small : &ca.large; }

/* The smallest free block of the pool on this stream of at least size bytes, taken out. */
static block_t *best_fit(pool_t *p, cudaStream_t s, size_t size) {
  block_t key = {.stream = s, .size = size, .addr = 0};
  size_t i = lower_bound(p, &key);
  if (i == p->n || p->b[i]->stream != s) return NULL;
  block_t *b = p->b[i];
  memmove(p->b + i, p->b + i + 1, (p->n - i - 1) * sizeof *p->b);
  p->n--;
  return b;
}

/* ---- sizes ------------------------------------------------------------------------------ */

static size_t round_size(size_t n) { return n < MIN_BLOCK ? MIN_BLOCK : (n + MIN_BLOCK - 1) / MIN_BLOCK * MIN_BLOCK; }

static size_t segment_size(size_t n) {
  if (n <= SMALL_SIZE) return SMALL_BUFFER;
  if (n < MIN_LARGE_ALLOC) return LARGE_BUFFER;
  return (n + ROUND_LARGE - 1) / ROUND_LARGE * ROUND_LARGE;
}

static bool worth_split(const block_t *b, size_t n) {
  size_t rest = b->size - n;
  return b->small ? rest >= MIN_BLOCK : rest > SMALL_SIZE;
}

/* ---- segments ----------------------------------------------------------------------------- */

static void count(uint64_t *v, uint64_t *peak, int64_t delta) {
  *v += (uint64_t)delta;
  if (*v > *peak) *peak = *v;
}

/* Frees whole cached segments (free and unsplit) of at least min bytes: the smallest one
 * (one), or all of them. */
static bool release_cached(size_t min, bool one) {
  bool any = false;
  pool_t *pools[2] = {&ca.small, &ca.large};
  block_t *pick = NULL;
  for (int k = 0; k < 2; k++)
    for (size_t i = 0; i < pools[k]->n; i++) {
      block_t *b = pools[k]->b[i];
      if (b->prev || b->next || b->size < min) continue;
      if (one) {
        if (!pick || b->size < pick->size) pick = b;
        continue;
      }
      pool_erase(pools[k], b), i--;
      real_cudaFree((void *)b->addr), count(&ca.reserved, &ca.reserved_peak, -(int64_t)b->size), free(b), any = true;
    }
  if (pick) {
    pool_erase(pool_of(pick), pick);
    real_cudaFree((void *)pick->addr), count(&ca.reserved, &ca.reserved_peak, -(int64_t)pick->size), free(pick), any = true;
  }
  return any;
}

static void process_events(bool wait);

/* A new segment for a request of n bytes (rounded), on stream s. */
static block_t *new_segment(size_t n, cudaStream_t s) {
  size_t size = segment_size(n);
  void *p = NULL;
  block_t *b = calloc(1, sizeof *b);
  if (!b) return NULL;
  cudaError_t e = real_cudaMalloc(&p, size);
  if (e && release_cached(size, true)) e = real_cudaMalloc(&p, size);
  if (e) { /* every cached segment back, the device drained first */
    ca.host_waits++;
    real_cudaDeviceSynchronize();
    process_events(true);
    if (release_cached(0, false)) e = real_cudaMalloc(&p, size);
  }
  if (e) return free(b), ca.ooms++, NULL;
  *b = (block_t){.addr = (uintptr_t)p, .size = size, .stream = s, .small = n <= SMALL_SIZE};
  ca.segment_calls++;
  count(&ca.reserved, &ca.reserved_peak, (int64_t)size);
  return b;
}

/* ---- blocks ------------------------------------------------------------------------------- */

/* b's first n bytes are used; the rest becomes a free block of the segment. */
static void split(block_t *b, size_t n) {
  block_t *r = calloc(1, sizeof *r);
  if (!r) return;
  *r = (block_t){.addr = b->addr + n, .size = b->size - n, .stream = b->stream, .small = b->small,
                 .prev = b, .next = b->next};
  if (b->next) b->next->prev = r;
  b->next = r, b->size = n;
  if (!pool_insert(pool_of(r), r)) b->next = r->next, b->size += r->size, free(r); /* keeps it whole */
}

static bool mergeable(const block_t *x) { return x && !x->allocated && !x->pending; }

/* A block free at last: merged with free neighbours, back in its pool. */
static void free_block(block_t *b) {
  b->nuses = 0;
  if (mergeable(b->prev)) {
    block_t *p = b->prev;
    pool_erase(pool_of(p), p);
    p->size += b->size, p->next = b->next;
    if (b->next) b->next->prev = p;
    free(b), b = p;
  }
  if (mergeable(b->next)) {
    block_t *n = b->next;
    pool_erase(pool_of(n), n);
    b->size += n->size, b->next = n->next;
    if (n->next) n->next->prev = b;
    free(n);
  }
  pool_insert(pool_of(b), b);
}

static cudaEvent_t take_event(void) {
  cudaEvent_t ev = NULL;
  if (ca.nspare) return ca.spare[--ca.nspare];
  return real_cudaEventCreateWithFlags(&ev, cudaEventDisableTiming) ? NULL : ev;
}

static void give_event(cudaEvent_t ev) {
  if (ca.nspare == ca.capspare) {
    size_t cap = ca.capspare ? 2 * ca.capspare : 64;
    cudaEvent_t *s = realloc(ca.spare, cap * sizeof *s);
    if (!s) return;
    ca.spare = s, ca.capspare = cap;
  }
  ca.spare[ca.nspare++] = ev;
}

/* Blocks whose events have completed go back to their pools (asked, or after a device
 * synchronisation: wait). */
static void process_events(bool wait) {
  size_t keep = 0;
  for (size_t i = 0; i < ca.npend; i++) {
    pending_t *p = &ca.pend[i];
    if (!wait && real_cudaEventQuery(p->ev) != cudaSuccess) {
      ca.pend[keep++] = *p;
      continue;
    }
    give_event(p->ev);
    if (--p->block->pending == 0) free_block(p->block);
  }
  ca.npend = keep;
}

/* A freed block used on other streams waits for an event on each. */
static bool defer(block_t *b) {
  for (int i = 0; i < b->nuses; i++) {
    cudaEvent_t ev = take_event();
    if (ca.npend == ca.cappend) {
      size_t cap = ca.cappend ? 2 * ca.cappend : 64;
      pending_t *p = realloc(ca.pend, cap * sizeof *p);
      if (p) ca.pend = p, ca.cappend = cap;
    }
    if (!ev || ca.npend == ca.cappend || real_cudaEventRecord(ev, b->uses[i])) {
      ca.host_waits++; /* no event: the device drains instead */
      real_cudaDeviceSynchronize();
      continue;
    }
    ca.pend[ca.npend++] = (pending_t){ev, b};
    b->pending++;
  }
  return b->pending > 0;
}

static cudaError_t alloc(void **out, size_t bytes, cudaStream_t s) {
  if (!out) return cudaErrorInvalidValue;
  if (!bytes) return *out = NULL, cudaSuccess;
  size_t n = round_size(bytes);
  pthread_mutex_lock(&ca.mu);
  process_events(false);
  block_t *b = best_fit(n <= SMALL_SIZE ? &ca.small : &ca.large, s, n);
  if (!b) b = new_segment(n, s);
  if (!b) return pthread_mutex_unlock(&ca.mu), cudaErrorMemoryAllocation;
  if (worth_split(b, n)) split(b, n);
  b->allocated = true;
  HASH_ADD(hh, ca.live, addr, sizeof b->addr, b);
  count(&ca.allocated, &ca.allocated_peak, (int64_t)b->size);
  pthread_mutex_unlock(&ca.mu);
  *out = (void *)b->addr;
  return cudaSuccess;
}

/* -1: not ours (the real call decides); else a cudaError_t. */
static int release(void *p, cudaStream_t s, bool async) {
  uintptr_t a = (uintptr_t)p;
  block_t *b;
  pthread_mutex_lock(&ca.mu);
  HASH_FIND(hh, ca.live, &a, sizeof a, b);
  if (!b) return pthread_mutex_unlock(&ca.mu), -1;
  HASH_DEL(ca.live, b);
  b->allocated = false;
  count(&ca.allocated, &ca.allocated_peak, -(int64_t)b->size);
  if (async && s != b->stream && b->nuses < MAX_USES) b->uses[b->nuses++] = s;
  if (!defer(b)) free_block(b);
  pthread_mutex_unlock(&ca.mu);
  return cudaSuccess;
}

/* ---- the runtime's names --------------------------------------------------------------------- */

EXPORT cudaError_t cudaMalloc(void **p, size_t n) { return bind() ? alloc(p, n, NULL) : cudaErrorInitializationError; }

EXPORT cudaError_t cudaFree(void *p) {
  if (!p) return cudaSuccess;
  if (!bind()) return cudaErrorInitializationError;
  int rc = release(p, NULL, false);
  return rc < 0 ? real_cudaFree(p) : (cudaError_t)rc;
}

EXPORT cudaError_t cudaMallocAsync(void **p, size_t n, cudaStream_t s) {
  return bind() ? alloc(p, n, s) : cudaErrorInitializationError;
}

EXPORT cudaError_t cudaFreeAsync(void *p, cudaStream_t s) {
  if (!bind()) return cudaErrorInitializationError;
  int rc = release(p, s, true);
  return rc < 0 ? real_cudaFreeAsync(p, s) : (cudaError_t)rc;
}

/* ---- the exit line --------------------------------------------------------------------------- */

__attribute__((destructor)) static void report(void) {
  if (!ca.segment_calls) return;
  fprintf(stderr, "caching: peak reserved %llu bytes, peak allocated %llu bytes, %llu segments, %llu host waits%s\n",
          (unsigned long long)ca.reserved_peak, (unsigned long long)ca.allocated_peak,
          (unsigned long long)ca.segment_calls, (unsigned long long)ca.host_waits, ca.ooms ? ", out of memory" : "");
  const char *path = getenv("CACHING_STATS_FILE");
  FILE *f = path && *path ? fopen(path, "w") : NULL;
  if (!f) return;
  fprintf(f, "peak_reserved %llu\npeak_allocated %llu\nsegments %llu\nhost_waits %llu\nooms %llu\n",
          (unsigned long long)ca.reserved_peak, (unsigned long long)ca.allocated_peak,
          (unsigned long long)ca.segment_calls, (unsigned long long)ca.host_waits, (unsigned long long)ca.ooms);
  fclose(f);
}
