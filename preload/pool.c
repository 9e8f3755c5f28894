/* The pool: address space reserved once (twice the device's memory: the address space
 * is free, only mapped pages cost), backed page by page. A page whose last buffer goes
 * stays mapped until its physical handle is needed elsewhere, so the steady state makes
 * no driver call at all, and physical use never exceeds the most pages in use at once.
 * Once a plan has served two periods, its range is pinned: its pages stay mapped when
 * they fall idle (the next period uses them again; recycling them would map and unmap
 * every period), and the pages idle elsewhere (the recording's best fit needed more) go
 * back to the driver: the served phase holds only what it uses.
 * pa_mu guards the counts and states; map_mu serialises the driver calls, which run
 * without pa_mu. */
#include "pa.h"

#include <stdlib.h>

enum { UNMAPPED, MAPPED, BUSY };

static struct {
  CUdeviceptr base;
  size_t size, page, npages;
  uint32_t *ref;                         /* live buffers touching each page */
  uint8_t *state, *queued; /* queued: on the idle stack */
  CUmemGenericAllocationHandle *handle;  /* per mapped page */
  uint32_t *idle;                        /* stack: pages that went unused (may be stale) */
  size_t nidle;
  CUmemGenericAllocationHandle *spare;   /* handles mapped nowhere */
  size_t nspare, handles, maps, unmaps, released;
  size_t handles_peak, served_peak;      /* served_peak: since the first trim */
  size_t pin_lo, pin_hi;                 /* pinned pages [pin_lo, pin_hi) */
  bool trimmed;
  CUmemAllocationProp prop;
  CUmemAccessDesc access;
} pool;

static pthread_mutex_t map_mu = PTHREAD_MUTEX_INITIALIZER;

static bool reserve(CUdevice dev) {
  size_t total = 0;
  if (pa_cu.DeviceTotalMem(&total, dev) || !total) return false;
  pool.size = (2 * total + pool.page - 1) / pool.page * pool.page;
  pool.npages = pool.size / pool.page;
  pool.ref = calloc(pool.npages, sizeof *pool.ref);
  pool.state = calloc(pool.npages, 1);
  pool.queued = calloc(pool.npages, 1);
  pool.handle = calloc(pool.npages, sizeof *pool.handle);
  pool.idle = malloc(pool.npages * sizeof *pool.idle);
  pool.spare = malloc(pool.npages * sizeof *pool.spare);
  if (!pool.ref || !pool.state || !pool.queued || !pool.handle || !pool.idle || !pool.spare) return false;
  return pa_cu.MemAddressReserve(&pool.base, pool.size, pool.page, 0, 0) == CUDA_SUCCESS;
}

/* 0: try again (no context yet: the caller's real call reports that), 1: ready, 2: never. */
static int try_init(void) {
  CUdevice dev;
  if (!pa_cu.MemAddressReserve || !pa_cu.MemCreate || !pa_cu.CtxGetDevice) return 2;
  if (pa_cu.CtxGetDevice(&dev)) return 0;
  pool.prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  pool.prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  pool.prop.location.id = dev;
  pool.access.location = pool.prop.location;
  pool.access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  if (pa_cu.MemGetAllocationGranularity(&pool.page, &pool.prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED) ||
      !pool.page || !reserve(dev)) {
    pa_warn("cannot reserve the pool's address space: passing allocations through");
    pool.base = 0, pool.size = 0;
    return 2;
  }
  return 1;
}

bool pa_pool_init(void) {
  static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  static atomic_int st;
  int s = atomic_load_explicit(&st, memory_order_acquire);
  if (s) return s == 1;
  pthread_mutex_lock(&mu);
  if (!(s = atomic_load(&st))) atomic_store_explicit(&st, s = try_init(), memory_order_release);
  pthread_mutex_unlock(&mu);
  return s == 1;
}

CUdeviceptr pa_pool_base(void) { return pool.base; }
size_t pa_pool_size(void) { return pool.size; }
size_t pa_pool_page(void) { return pool.page; }
bool pa_pool_contains(CUdeviceptr p) { return p - pool.base < pool.size; }

/* The pages [off, off+size) touches: for (size_t p = FIRST; p <= LAST; p++). */
#define FIRST (off / pool.page)
#define LAST ((off + size - 1) / pool.page)

bool pa_pool_acquire(uint64_t off, uint64_t size) {
  bool mapped = true;
  for (size_t p = FIRST; p <= LAST; p++) {
    pool.ref[p]++;
    mapped &= pool.state[p] == MAPPED;
  }
  return mapped;
}

static bool pinned(size_t p) { return p >= pool.pin_lo && p < pool.pin_hi; }

/* Mapped, no live buffer on it, not pinned: its handle may go elsewhere (pa_mu held). */
static bool unused(size_t p) { return pool.ref[p] == 0 && pool.state[p] == MAPPED && !pinned(p); }

static void queue_idle(size_t p) {
  if (unused(p) && !pool.queued[p]) pool.queued[p] = 1, pool.idle[pool.nidle++] = (uint32_t)p;
}

void pa_pool_release(uint64_t off, uint64_t size) {
  for (size_t p = FIRST; p <= LAST; p++)
    if (--pool.ref[p] == 0) queue_idle(p);
}

void pa_pool_pin(uint64_t off, uint64_t size) {
  size_t lo = pool.pin_lo, hi = pool.pin_hi;
  pool.pin_lo = size ? FIRST : 0, pool.pin_hi = size ? LAST + 1 : 0;
  for (size_t p = lo; p < hi; p++) queue_idle(p); /* no longer pinned: idle again */
}

/* A page nobody uses, to take its handle (pa_mu held); marked BUSY. */
static size_t pick_idle(size_t not) {
  while (pool.nidle) {
    size_t v = pool.idle[--pool.nidle];
    pool.queued[v] = 0;
    if (v != not && unused(v)) {
      pool.state[v] = BUSY;
      return v;
    }
  }
  return SIZE_MAX;
}

/* Handles change under map_mu. */
static void count_handles(long delta) {
  pool.handles += (size_t)delta;
  if (pool.handles > pool.handles_peak) pool.handles_peak = pool.handles;
  if (pool.trimmed && pool.handles > pool.served_peak) pool.served_peak = pool.handles;
}

/* A physical handle for a page: a spare one, one taken from an idle page, or a new one. */
static int take_handle(size_t page, CUmemGenericAllocationHandle *h) {
  pthread_mutex_lock(&pa_mu);
  bool spare = pool.nspare > 0;
  size_t victim = spare ? SIZE_MAX : pick_idle(page);
  if (spare) *h = pool.spare[--pool.nspare];
  pthread_mutex_unlock(&pa_mu);
  if (victim != SIZE_MAX) {
    CUresult rc = pa_cu.MemUnmap(pool.base + victim * pool.page, pool.page);
    pthread_mutex_lock(&pa_mu);
    pool.state[victim] = rc ? MAPPED : UNMAPPED;
    pool.unmaps += !rc;
    pthread_mutex_unlock(&pa_mu);
    if (!rc) return *h = pool.handle[victim], CUDA_SUCCESS;
  } else if (spare) {
    return CUDA_SUCCESS;
  }
  CUresult rc = pa_cu.MemCreate(h, pool.page, &pool.prop, 0);
  if (!rc) count_handles(1);
  return rc;
}

static int map_page(size_t p) {
  pthread_mutex_lock(&pa_mu);
  bool done = pool.state[p] == MAPPED;
  if (!done) pool.state[p] = BUSY;
  pthread_mutex_unlock(&pa_mu);
  if (done) return CUDA_SUCCESS;
  CUmemGenericAllocationHandle h = 0;
  CUdeviceptr at = pool.base + p * pool.page;
  int rc = take_handle(p, &h), held = rc == CUDA_SUCCESS;
  if (!rc) rc = pa_cu.MemMap(at, pool.page, 0, h, 0);
  if (!rc && (rc = pa_cu.MemSetAccess(at, pool.page, &pool.access, 1))) pa_cu.MemUnmap(at, pool.page);
  pthread_mutex_lock(&pa_mu);
  pool.state[p] = rc ? UNMAPPED : MAPPED;
  if (!rc) pool.handle[p] = h, pool.maps++;
  else if (held) pool.spare[pool.nspare++] = h;
  pthread_mutex_unlock(&pa_mu);
  return rc;
}

int pa_pool_map(uint64_t off, uint64_t size) {
  pthread_mutex_lock(&map_mu);
  int rc = CUDA_SUCCESS;
  for (size_t p = FIRST; p <= LAST && !rc; p++) rc = map_page(p);
  pthread_mutex_unlock(&map_mu);
  return rc;
}

/* The idle pages, marked BUSY, then the spare handles (pa_mu held): *n handles, the
 * first *npages of them mapped at pages[]. NULL without memory: nothing is trimmed. */
static CUmemGenericAllocationHandle *take_unused(size_t **pages, size_t *npages, size_t *n) {
  CUmemGenericAllocationHandle *h = malloc((pool.nidle + pool.nspare + 1) * sizeof *h);
  *pages = malloc((pool.nidle + 1) * sizeof **pages);
  if (!h || !*pages) return free(h), free(*pages), NULL;
  size_t k = 0;
  for (size_t i = 0; i < pool.nidle; i++) {
    size_t v = pool.idle[i];
    pool.queued[v] = 0; /* stale entries go too */
    if (unused(v)) pool.state[v] = BUSY, (*pages)[k] = v, h[k++] = pool.handle[v];
  }
  pool.nidle = 0, *npages = k;
  while (pool.nspare) h[k++] = pool.spare[--pool.nspare];
  *n = k;
  return h;
}

#define KEPT ((size_t)1 << (sizeof(size_t) * 8 - 1)) /* a page the driver did not unmap */

void pa_pool_trim(void) {
  size_t *pages, npages, n, gone = 0;
  pthread_mutex_lock(&map_mu);
  pthread_mutex_lock(&pa_mu);
  CUmemGenericAllocationHandle *h = take_unused(&pages, &npages, &n);
  pthread_mutex_unlock(&pa_mu);
  for (size_t i = 0; h && i < n; i++) {
    bool unmapped = i >= npages || !pa_cu.MemUnmap(pool.base + pages[i] * pool.page, pool.page);
    bool released = unmapped && !pa_cu.MemRelease(h[i]);
    gone += released;
    if (i < npages && !unmapped) pages[i] |= KEPT;
  }
  pthread_mutex_lock(&pa_mu);
  for (size_t i = 0; h && i < npages; i++) {
    bool kept = pages[i] & KEPT;
    size_t p = pages[i] & ~KEPT;
    pool.state[p] = kept ? MAPPED : UNMAPPED;
    pool.unmaps += !kept;
    if (kept) pool.queued[p] = 1, pool.idle[pool.nidle++] = (uint32_t)p;
  }
  pthread_mutex_unlock(&pa_mu);
  pool.released += gone;
  count_handles(-(long)gone);
  pool.trimmed = true;
  count_handles(0);
  pthread_mutex_unlock(&map_mu);
  free(h), free(pages);
}

void pa_pool_stats(pa_pool_stats_t *s) {
  *s = (pa_pool_stats_t){pool.page, pool.handles_peak, pool.served_peak, pool.maps, pool.unmaps, pool.released};
}
