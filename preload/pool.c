/* The pool: address space reserved once (twice the device's memory: the address space
 * is free, only mapped pages cost), backed page by page. A page whose last buffer goes
 * stays mapped until its physical handle is needed elsewhere, so the steady state makes
 * no driver call at all, and physical use never exceeds the most pages in use at once.
 * Once a plan has served two periods, its range is pinned: its pages stay mapped when
 * they fall idle (the next period uses them again; recycling them would map and unmap
 * every period), and the pages idle elsewhere (the recording's best fit needed more) go
 * back to the driver: the served phase holds only what it uses.
 * Under a budget (limit.c), a page is never created past it: an idle page is taken, or
 * the caller hears PA_POOL_FULL and budget.c, which chooses victims (the pool never
 * does), has a victim's pages copied to pinned host memory (swap.c): EVICTED until a
 * launch, copy or allocation maps them again, restored at the same address. Pages a
 * launch or copy holds cannot leave meanwhile. Nobody waits for a copy out: the
 * victim's handle serves its taker at once, also mapped there, and its first users wait
 * on the GPU for the copy (the handle carries the copy's number); the victim's
 * page stays LEAVING, still mapped, until the copy is seen done, and only then is its
 * address unmapped (nothing may unmap what queued work still reads). An idle page whose
 * freed work may still run gives its handle away the same way (drain): the out stream
 * waits for that work instead of copying, and the page is LEAVING with nothing to bring
 * back. Under a budget a page that left keeps its address mapped to its handle (alias:
 * the driver maps a handle at several addresses): when that handle is spare again the
 * page comes back into it with no mapping call, and with no copy where nobody wrote it
 * meanwhile. A periodic swap schedule hands the same handles to the same pages period
 * after period, and the H200's 37 us a page remapped (ResNet-50 at half: 54 ms a step
 * against 32.6 ms of kernels) is what the budget cost beyond the link. For that, the
 * swap schedule's pages whose stays never meet share a handle (hues.c colours them):
 * each colour is bound to the handle its pages hold, and a page takes its colour's
 * handle where that one is free, before any other.
 * pa_mu guards the counts and states; map_mu serialises the driver calls, which run
 * without pa_mu. */
#include "pa.h"

#include <stdlib.h>
#include <string.h>
#include <uthash.h>

enum { UNMAPPED, MAPPED, BUSY, EVICTED, LEAVING };

#define NO_HUE UINT32_MAX

/* A colour's handle (hues.c), found by handle: a handle serves one colour at most. */
typedef struct bound_s {
  CUmemGenericAllocationHandle h;
  uint32_t hue;
  UT_hash_handle hh;
} bound_t;

/* The page a handle was mapped to last, found by handle: a page that left finds the
 * live page holding the handle its address kept (pa_pool_kept_holders). */
typedef struct owner_s {
  CUmemGenericAllocationHandle h;
  bool in; /* in pool.by_owner */
  UT_hash_handle hh;
} owner_t;

static struct {
  CUdeviceptr base;
  size_t size, page, npages;
  uint32_t *ref;                         /* live buffers touching each page */
  uint32_t *hold;                        /* launches and copies being issued on it */
  void **host;                           /* an EVICTED page's copy ... */
  uint32_t *span_lo, *span_hi;           /* ... of its bytes [span_lo, span_hi) */
  uint64_t *restored;                    /* the last copy its memory waits for (swap.c), or 0;
                                            LEAVING: its copy out */
  uint64_t *freed;                       /* the fence at which it went idle: work from before
                                            it may still touch it until done (fence.c) */
  uint8_t *state, *queued; /* queued: on the idle stack */
  uint8_t *alias;          /* EVICTED or UNMAPPED, its address still mapped to handle[p], which
                              holds another page's bytes or nobody's (keep_mapped) */
  bool *fenced;                          /* LEAVING by a drain that waited for the fence
                                            alone: its address is free once the fence
                                            passes freed[p], whatever the out stream did */
  uint64_t *wanted;                      /* idle: when the budget expects it born on again
                                            (its served clock; 0: not said) */
  CUmemGenericAllocationHandle *handle;  /* per mapped page */
  uint32_t *idle;                        /* stack: pages that went unused (may be stale) */
  size_t nidle;
  CUmemGenericAllocationHandle *spare;   /* handles mapped nowhere (or at LEAVING pages) ... */
  uint64_t *spare_gen;                   /* ... free once this copy is done */
  uint8_t *spare_clean;                  /* ... spare since its page's copy out, unwritten since */
  uint32_t *leaving;                     /* the LEAVING pages, and stale entries: each reap
                                            drops them, and a page only leaves again once
                                            unmapped or reclaimed (which drops its entry),
                                            so npages entries suffice */
  size_t nleaving;
  size_t nspare, handles, maps, unmaps, released, ahead; /* ahead: pages prefetched */
  size_t premapped;                      /* idle pages mapped ahead of their births */
  bool premapping;                       /* map_mu: the range maps births ahead (pa_pool_premap) */
  size_t served_maps, served_unmaps;     /* ... of them while a plan served (whole periods) */
  size_t calls, served_calls;            /* the driver's memory calls made (create, map, set
                                            access, unmap, release), under map_mu like them */
  size_t map_calls, served_map_calls;    /* ... of them cuMemMap, cuMemSetAccess, cuMemUnmap */
  size_t first_calls;                    /* ... of those, each page's first map, and the set
                                            access of a run of such pages: the address space
                                            the program reaches, not a page moved */
  uint8_t *opened;                       /* map_mu: the page was ever mapped and opened */
  size_t served_moved;                   /* pages sent out or brought back while a plan served */
  size_t remaps[PA_REMAP_COUNT];         /* pa_mu: served, pages mapped anew, by why */
  uint8_t *mark;                         /* map_mu: pages being unmapped together (unmap_runs) */
  size_t *reaped;                        /* map_mu: the LEAVING pages a reap unmaps */
  bool in_served;
  size_t reclaimed;                      /* LEAVING pages that took their handle back */
  size_t rejoined;                       /* pages back into the handle their address kept */
  size_t drained;                        /* idle pages whose handle left under freed work */
  size_t idle_taken;                     /* idle pages whose handle another took (reuse_handle) */
  size_t deferred;                       /* ... of them without a budget: no GPU wait either */
  size_t handles_peak, served_peak;      /* served_peak: since the last trim (the plan
                                            serving last, from its third period) */
  size_t pin_lo, pin_hi;                 /* pinned pages [pin_lo, pin_hi) */
  bool pin_soft;                         /* their idle ones may back pages outside (pa_pool_pin_soft) */
  size_t favour_lo, favour_hi;           /* the served plan's pages [lo, hi): their handles go last */
  pa_hue_t *hues;                        /* the swap schedule's handle colours (hues.c) ... */
  size_t nhues;
  uint32_t ncolours, *hue_first;         /* ... and each page's first, or NO_HUE */
  CUmemGenericAllocationHandle *hue_h;   /* pa_mu: per colour, the handle its pages share, or 0 */
  uint32_t *need_first, *need_at;        /* per colour c, its stays' first positions, sorted:
                                            need_at[need_first[c] .. need_first[c + 1]) */
  bound_t *bound, *by_handle;            /* pa_mu: per colour, its entry; the colours by handle */
  owner_t *owner, *by_owner;             /* pa_mu: per page, its entry; the pages by handle */
  uint64_t pos;                          /* pa_mu: the turn's position of the next launch */
  uint64_t lead;                         /* map_mu: the caller's last window's length */
  uint64_t spare_from, spare_until;      /* map_mu: the caller's window (pa_pool_stop_t) ... */
  bool spared;                           /* ... and whether it refused a page */
  bool trimmed;
  CUmemAllocationProp prop;
  CUmemAccessDesc access[9]; /* the pool's device, then the peers granted (devices.c) */
  size_t naccess;
} PA_PER_DEVICE(pool);
PA_BIND(pool)
#define pool PA_THIS(pool)

/* Every device's pool range, for the frees routed by address from any thread (pa_pool_find):
 * set once, when the pool is made. */
static struct {
  _Atomic(CUdeviceptr) base;
  atomic_size_t size;
} found[PA_DEVICES];
static struct {
  pthread_mutex_t map_mu;
  atomic_size_t mapped_now; /* handles, for readers holding pa_mu, not map_mu */
  /* A plan has served two periods: its peak counts from then, also where no trim completes
   * (under a budget the idle pages' freed work is often still queued, and the trim retries;
   * the served phase's peak read 0 there). A trim starts it again. */
  atomic_bool serving;
  atomic_int made; /* pa_pool_init: 0 not yet, 1 ready, 2 never */
} PA_PER_DEVICE(pm) = {[0 ... PA_SLOTS - 1] = {.map_mu = PTHREAD_MUTEX_INITIALIZER}};
PA_BIND(pm)
#define pm PA_THIS(pm)
#define map_mu pm.map_mu
#define mapped_now pm.mapped_now
#define serving pm.serving

static bool reserve(CUdevice dev) {
  size_t total = 0;
  if (pa_cu.DeviceTotalMem(&total, dev) || !total) return false;
  pool.size = (2 * total + pool.page - 1) / pool.page * pool.page;
  pool.npages = pool.size / pool.page;
  pool.ref = calloc(pool.npages, sizeof *pool.ref);
  pool.hold = calloc(pool.npages, sizeof *pool.hold);
  pool.host = calloc(pool.npages, sizeof *pool.host);
  pool.span_lo = calloc(pool.npages, sizeof *pool.span_lo);
  pool.span_hi = calloc(pool.npages, sizeof *pool.span_hi);
  pool.restored = calloc(pool.npages, sizeof *pool.restored);
  pool.freed = calloc(pool.npages, sizeof *pool.freed);
  pool.state = calloc(pool.npages, 1);
  pool.fenced = calloc(pool.npages, sizeof *pool.fenced);
  pool.wanted = calloc(pool.npages, sizeof *pool.wanted);
  pool.queued = calloc(pool.npages, 1);
  pool.alias = calloc(pool.npages, 1);
  pool.handle = calloc(pool.npages, sizeof *pool.handle);
  pool.idle = malloc(pool.npages * sizeof *pool.idle);
  pool.spare = malloc(pool.npages * sizeof *pool.spare);
  pool.spare_gen = malloc(pool.npages * sizeof *pool.spare_gen);
  pool.spare_clean = malloc(pool.npages);
  pool.leaving = malloc(pool.npages * sizeof *pool.leaving);
  pool.mark = calloc(pool.npages, 1);
  pool.opened = calloc(pool.npages, 1);
  pool.hue_first = malloc(pool.npages * sizeof *pool.hue_first);
  pool.hue_h = calloc(pool.npages, sizeof *pool.hue_h);
  pool.bound = calloc(pool.npages, sizeof *pool.bound);
  pool.owner = calloc(pool.npages, sizeof *pool.owner);
  for (size_t p = 0; pool.hue_first && p < pool.npages; p++) pool.hue_first[p] = NO_HUE;
  pool.reaped = malloc(pool.npages * sizeof *pool.reaped);
  if (!pool.mark || !pool.opened || !pool.reaped || !pool.hue_first || !pool.hue_h || !pool.bound || !pool.owner || !pool.ref || !pool.hold || !pool.host || !pool.span_lo || !pool.span_hi || !pool.restored || !pool.freed || !pool.state || !pool.fenced || !pool.wanted || !pool.queued || !pool.alias ||
      !pool.handle || !pool.idle || !pool.spare || !pool.spare_gen || !pool.spare_clean || !pool.leaving)
    return false;
  pa_limit_init(pool.page, total);
  return pa_cu.MemAddressReserve(&pool.base, pool.size, pool.page, 0, 0) == CUDA_SUCCESS;
}

/* 0: try again (no context yet: the caller's real call reports that), 1: ready, 2: never. */
static int try_init(void) {
  CUdevice dev;
  if (!pa_cu.MemAddressReserve || !pa_cu.MemCreate || !pa_cu.CtxGetDevice) return 2;
  if (pa_cu.CtxGetDevice(&dev)) return 0;
  /* made in its own device's context (at its next allocation there); never in the shared slot */
  if (dev != pa_slot || pa_slot >= PA_DEVICES) return 0;
  pool.prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  pool.prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  pool.prop.location.id = dev;
  pool.access[0].location = pool.prop.location;
  pool.access[0].flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  pool.naccess = 1;
  CUcontext ctx = NULL;
  if (pa_cu.CtxGetCurrent && !pa_cu.CtxGetCurrent(&ctx)) atomic_store(&pa_pool_ctx, ctx);
  if (pa_cu.MemGetAllocationGranularity(&pool.page, &pool.prop, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED) ||
      !pool.page || !reserve(dev)) {
    pa_warn("cannot reserve the pool's address space: passing allocations through");
    pool.base = 0, pool.size = 0;
    return 2;
  }
  atomic_store_explicit(&found[pa_slot].size, pool.size, memory_order_relaxed);
  atomic_store_explicit(&found[pa_slot].base, pool.base, memory_order_release);
  return 1;
}

bool pa_pool_init(void) {
  static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
  int s = atomic_load_explicit(&pm.made, memory_order_acquire);
  if (s) return s == 1;
  pthread_mutex_lock(&mu);
  if (!(s = atomic_load(&pm.made))) atomic_store_explicit(&pm.made, s = try_init(), memory_order_release);
  pthread_mutex_unlock(&mu);
  return s == 1;
}

CUdeviceptr pa_pool_base(void) { return pool.base; }
size_t pa_pool_size(void) { return pool.size; }
size_t pa_pool_page(void) { return pool.page; }
CUdevice pa_pool_device(void) { return pool.prop.location.id; } /* 0 before there is a pool */
bool pa_pool_contains(CUdeviceptr p) { return p - pool.base < pool.size; }

bool pa_pool_any(void) {
  for (int d = 0; d < PA_DEVICES; d++)
    if (atomic_load_explicit(&found[d].base, memory_order_acquire)) return true;
  return false;
}

int pa_pool_find(CUdeviceptr p) {
  for (int d = 0; d < PA_DEVICES; d++) {
    CUdeviceptr base = atomic_load_explicit(&found[d].base, memory_order_acquire);
    if (base && p - base < atomic_load_explicit(&found[d].size, memory_order_relaxed)) return d;
  }
  return -1;
}

/* The pages [off, off+size) touches: for (size_t p = FIRST; p <= LAST; p++). */
#define FIRST (off / pool.page)
#define LAST ((off + size - 1) / pool.page)

/* ---- colours: the swap schedule's pages that share a handle (hues.c) ------------------- */

/* Page p's colour for its stay now or next (pa_mu held): its whole turn's, or the
 * stretch that holds the next launch's position, else the one that starts soonest after
 * it (a page comes back, or is born, ahead of its launch); NO_HUE: none. */
static uint32_t hue_of(size_t p) {
  uint32_t pick = NO_HUE;
  uint64_t soonest = UINT64_MAX, at = pool.pos;
  for (size_t i = pool.hue_first[p]; i < pool.nhues && pool.hues[i].page == p; i++) {
    const pa_hue_t *e = &pool.hues[i];
    bool in = e->lo == e->hi || (e->lo < e->hi ? at >= e->lo && at < e->hi : at >= e->lo || at < e->hi);
    uint64_t d = in ? 0 : e->lo >= at ? e->lo - at : (1ull << 40) + e->lo;
    if (d < soonest) soonest = d, pick = e->hue;
  }
  return pick;
}

static void set_hue(uint32_t c, CUmemGenericAllocationHandle h) {
  bound_t *b = &pool.bound[c];
  if (pool.hue_h[c]) HASH_DEL(pool.by_handle, b);
  pool.hue_h[c] = h;
  if (!h) return;
  b->h = h, b->hue = c;
  HASH_ADD(hh, pool.by_handle, h, sizeof b->h, b);
}

/* The colour h serves, or NO_HUE (pa_mu held). */
static uint32_t hue_bound(CUmemGenericAllocationHandle h) {
  bound_t *b = NULL;
  HASH_FIND(hh, pool.by_handle, &h, sizeof h, b);
  return b ? b->hue : NO_HUE;
}

/* Colour c's pages share h from now on (pa_mu held), where h serves no other colour;
 * force: also where it does, and that colour takes c's old handle. A page born on where
 * it stays mapped holds its handle for the whole turn (force); one that took another
 * colour's handle because its own was still held (the plan's stays and the program's
 * differ by a launch here and there) leaves both colours as they are. Where the colour
 * that lost h was left with none, each of its pages came back to take whatever handle
 * was spare: GPT's H200 recording at half its peak replayed (bench-recordings.sh), 711-1,013
 * of about 3,500 pages mapped anew a run found their colour without a handle (on the H200
 * itself 22,000 of 52,000); trading, with the spare choice below, 253-461, and 11 % fewer
 * mapping calls (mean of 16 runs against 8). */
static void bind(uint32_t c, CUmemGenericAllocationHandle h, bool force) {
  if (c >= pool.ncolours || pool.hue_h[c] == h) return;
  uint32_t d = hue_bound(h);
  if (d != NO_HUE && !force) return;
  CUmemGenericAllocationHandle was = pool.hue_h[c];
  if (d != NO_HUE) set_hue(d, 0);
  set_hue(c, h);
  if (d != NO_HUE && was) set_hue(d, was); /* the colours trade handles: neither is left without one */
}

/* Page p holds h for a stay (pa_mu held): where its colour is its own over the whole
 * turn, that colour's handle is h (a page that borrows a colour for a stretch binds
 * nothing). */
static void settle_hue(size_t p, CUmemGenericAllocationHandle h, bool force) {
  size_t i = pool.hue_first[p];
  if (i != NO_HUE && pool.hues[i].lo == pool.hues[i].hi) bind(pool.hues[i].hue, h, force);
}

/* No colour has a handle (pa_mu held): a new colouring, or handles released. */
static void unbind_all(void) {
  HASH_CLEAR(hh, pool.by_handle);
  memset(pool.hue_h, 0, pool.npages * sizeof *pool.hue_h);
}

#define ALWAYS UINT32_MAX /* need_at: a colour one page holds the whole turn */

/* Each colour's stays' first positions, sorted (pa_mu held); none without memory. */
static void index_needs(void) {
  free(pool.need_first), free(pool.need_at);
  pool.need_first = calloc(pool.ncolours + 2, sizeof *pool.need_first);
  pool.need_at = malloc((pool.nhues + 1) * sizeof *pool.need_at);
  if (!pool.need_first || !pool.need_at) {
    free(pool.need_first), free(pool.need_at), pool.need_first = pool.need_at = NULL;
    return;
  }
  for (size_t i = 0; i < pool.nhues; i++) pool.need_first[pool.hues[i].hue + 2]++;
  for (uint32_t c = 0; c < pool.ncolours; c++) pool.need_first[c + 2] += pool.need_first[c + 1];
  for (size_t i = 0; i < pool.nhues; i++) {
    const pa_hue_t *e = &pool.hues[i];
    pool.need_at[pool.need_first[e->hue + 1]++] = e->lo == e->hi ? ALWAYS : e->lo;
  }
  for (uint32_t c = 0; c < pool.ncolours; c++)
    qsort(pool.need_at + pool.need_first[c], pool.need_first[c + 1] - pool.need_first[c], sizeof *pool.need_at, pa_cmp_u32);
}

/* How soon colour c's pages want its handle again, from the next launch's position (pa_mu
 * held): the positions to its next stay's first, 0 for one page's whole turn, UINT64_MAX
 * for no colour. */
static uint64_t need_in(uint32_t c) {
  if (c >= pool.ncolours || !pool.need_first) return UINT64_MAX;
  uint32_t lo = pool.need_first[c], hi = pool.need_first[c + 1], at = (uint32_t)pool.pos;
  if (lo == hi) return UINT64_MAX;
  if (pool.need_at[hi - 1] == ALWAYS) return 0;
  uint32_t i = pa_lower_u32(pool.need_at, lo, hi, at);
  return i < hi ? pool.need_at[i] - at : (1ull << 40) + pool.need_at[lo];
}

#define SPARE_LOOK 256 /* spares a page without its colour's handle looks through */

/* The spare handle for a page whose colour's handle is held (pa_mu held): the one whose
 * colour wants it back last, among the newest SPARE_LOOK. The newest alone was another
 * colour's, whose next page then found it held and took a third's: on GPT's H200
 * recording at half its peak, 1,290 of 1,484 pages mapped anew for a held colour a run
 * found it held by such a borrower. */
static size_t spare_far(void) {
  size_t pick = pool.nspare - 1, from = pool.nspare > SPARE_LOOK ? pool.nspare - SPARE_LOOK : 0;
  uint64_t far = 0;
  for (size_t i = pool.nspare; i-- > from && far != UINT64_MAX;) {
    uint64_t d = need_in(hue_bound(pool.spare[i]));
    if (d > far || i == pool.nspare - 1) far = d, pick = i;
  }
  return pick;
}

/* A spare for a page that cannot have its colour's (pa_mu held, pool.nspare > 0). */
static size_t other_spare(void) { return pool.nhues ? spare_far() : pool.nspare - 1; }

/* The handle page p's colour shares now, or 0 (pa_mu held). */
static CUmemGenericAllocationHandle hue_handle(size_t p) {
  uint32_t c = hue_of(p);
  return c != NO_HUE ? pool.hue_h[c] : 0;
}

void pa_pool_hues(const pa_hues_t *hs) {
  if (!pool.hue_first) return; /* no pool yet */
  for (size_t i = 0; i < pool.nhues; i++) pool.hue_first[pool.hues[i].page] = NO_HUE;
  unbind_all();
  free(pool.hues);
  pool.hues = hs && hs->n ? malloc(hs->n * sizeof *pool.hues) : NULL;
  pool.nhues = pool.hues ? hs->n : 0, pool.ncolours = pool.hues ? hs->ncolours : 0;
  bool fits = pool.ncolours <= pool.npages; /* a colouring of other pages than these: none */
  for (size_t i = 0; i < pool.nhues && fits; i++) fits = hs->hues[i].page < pool.npages && hs->hues[i].hue < pool.ncolours;
  if (!fits) free(pool.hues), pool.hues = NULL, pool.nhues = pool.ncolours = 0;
  for (size_t i = 0; i < pool.nhues; i++) {
    pool.hues[i] = hs->hues[i];
    if (pool.hue_first[hs->hues[i].page] == NO_HUE) pool.hue_first[hs->hues[i].page] = (uint32_t)i;
  }
  index_needs();
}

void pa_pool_position(uint64_t pos) { pool.pos = pos; }

/* p is mapped to h now (pa_mu held). */
static void own(size_t p, CUmemGenericAllocationHandle h) {
  owner_t *e = &pool.owner[p], *o = NULL;
  if (e->in && e->h == h) return;
  if (e->in) HASH_DEL(pool.by_owner, e);
  HASH_FIND(hh, pool.by_owner, &h, sizeof h, o);
  if (o) {
    HASH_DEL(pool.by_owner, o);
    o->in = false;
  }
  e->h = h, e->in = true;
  HASH_ADD(hh, pool.by_owner, h, sizeof e->h, e);
}

/* The page mapped to h now, or SIZE_MAX (pa_mu held): an entry whose page moved on, or
 * whose handle went back to the driver, is stale, and the page's state says so. */
static size_t owner_of(CUmemGenericAllocationHandle h) {
  owner_t *o = NULL;
  HASH_FIND(hh, pool.by_owner, &h, sizeof h, o);
  size_t q = o ? (size_t)(o - pool.owner) : SIZE_MAX;
  return q != SIZE_MAX && pool.state[q] == MAPPED && pool.handle[q] == h ? q : SIZE_MAX;
}

/* Per page of every allocation and free: no call in the loop where none is needed (a
 * GPT step's buffers span 4-100 pages; these two were a fifth of the served phase's host
 * time without kernels). */
bool pa_pool_acquire(uint64_t off, uint64_t size) {
  bool mapped = true, hues = pool.nhues;
  for (size_t p = FIRST; p <= LAST; p++) {
    if (!pool.ref[p]++ && pool.state[p] == MAPPED && hues) settle_hue(p, pool.handle[p], true);
    mapped &= pool.state[p] == MAPPED;
  }
  return mapped;
}

pa_copies_t pa_pool_restored(uint64_t off, uint64_t size) {
  pa_copies_t latest = {{0, 0}};
  for (size_t p = FIRST; p <= LAST; p++) pa_copies_note(&latest, pool.restored[p]);
  return latest;
}

static bool pinned(size_t p) { return p >= pool.pin_lo && p < pool.pin_hi; }

/* A page whose handle goes elsewhere keeps its address mapped (an access planalloc missed
 * reads the handle's new bytes there rather than faulting: off finds those). Without a
 * budget no handle comes back spare, and the unmaps a reap makes in runs would be made
 * a page at a time instead. */
static bool keep_mapped(void) { return pa_limit_on() && pa_opt.v[PA_OPT_KEEP_MAPPED].i; }

/* Mapped, no live buffer on it, not pinned: its handle may go elsewhere (pa_mu held).
 * Under a budget the plan's pages are not pinned: they are all the program may use. */
static bool unused_under(size_t p, bool limit) {
  return pool.ref[p] == 0 && pool.state[p] == MAPPED && !pool.hold[p] && (!pinned(p) || limit);
}

static bool unused(size_t p) { return unused_under(p, pa_limit_on()); }

/* Mapped with live buffers, none of them being issued: its contents may leave. */
static bool evictable(size_t p) { return pool.ref[p] && pool.state[p] == MAPPED && !pool.hold[p]; }

/* limit: pa_limit_on(), asked once by a caller that queues many pages. */
static void queue_idle_under(size_t p, bool limit) {
  if (unused_under(p, limit) && !pool.queued[p]) pool.queued[p] = 1, pool.idle[pool.nidle++] = (uint32_t)p;
}

static void queue_idle(size_t p) { queue_idle_under(p, pa_limit_on()); }

static bool away(size_t p) { return pool.state[p] == EVICTED || pool.state[p] == LEAVING; }

/* A page nobody uses any more needs no copy back. The block may go to the next copy out
 * at once, even while this one's still fills it: both are on the out stream, in order.
 * A LEAVING page stays so until its address is unmapped. */
static void forget_copy(size_t p) {
  pa_swap_unblock(pool.host[p], 0);
  pool.host[p] = NULL;
  if (pool.state[p] == EVICTED) pool.state[p] = UNMAPPED;
}

void pa_pool_release(uint64_t off, uint64_t size) {
  uint64_t now = pa_fence_now();
  bool limit = pa_limit_on();
  for (size_t p = FIRST; p <= LAST; p++) {
    if (--pool.ref[p]) continue;
    pool.freed[p] = now, pool.wanted[p] = 0;
    away(p) ? forget_copy(p) : queue_idle_under(p, limit);
  }
}

void pa_pool_wanted(uint64_t off, uint64_t size, uint64_t when) {
  for (size_t p = FIRST; p <= LAST; p++)
    if (!pool.ref[p]) pool.wanted[p] = when;
}

void pa_pool_hold(uint64_t off, uint64_t size) {
  for (size_t p = FIRST; p <= LAST; p++) pool.hold[p]++;
}

void pa_pool_unhold(uint64_t off, uint64_t size) {
  for (size_t p = FIRST; p <= LAST; p++)
    if (--pool.hold[p] == 0) queue_idle(p);
}

/* The live page holding the handle p's address kept, where it could leave (pa_mu
 * held); SIZE_MAX if none. */
static size_t kept_holder(size_t p) {
  size_t q = pool.alias[p] && pool.state[p] != MAPPED ? owner_of(pool.handle[p]) : SIZE_MAX;
  return q != SIZE_MAX && q != p && evictable(q) ? q : SIZE_MAX;
}

size_t pa_pool_kept_holders(uint64_t off, uint64_t size, uint64_t *at, size_t max) {
  size_t n = 0;
  for (size_t p = FIRST; p <= LAST && p < pool.npages && n < max; p++) {
    size_t q = kept_holder(p);
    if (q != SIZE_MAX) at[n++] = q * pool.page;
  }
  return n;
}

size_t pa_pool_evictable(uint64_t off, uint64_t size) {
  size_t n = 0;
  for (size_t p = FIRST; p <= LAST; p++) n += evictable(p);
  return n;
}

void pa_pool_pin(uint64_t off, uint64_t size) {
  size_t lo = pool.pin_lo, hi = pool.pin_hi;
  pool.pin_lo = size ? FIRST : 0, pool.pin_hi = size ? LAST + 1 : 0;
  for (size_t p = lo; p < hi; p++) queue_idle(p); /* no longer pinned: idle again */
}

void pa_pool_pin_soft(bool soft) { pool.pin_soft = soft; }

void pa_pool_favour(uint64_t off, uint64_t size) {
  pool.favour_lo = size ? FIRST : 0, pool.favour_hi = size ? LAST + 1 : 0;
}

#define SCAN 32 /* idle pages looked at for one whose freed work is known done */

/* Drops the stale entries among the oldest idle ones (pa_mu held): up to SCAN live ones
 * stay, in order, at the bottom of the stack. */
static void drop_stale_bottom(size_t not) {
  size_t w = 0, i = 0;
  for (size_t live = 0; i < pool.nidle && live < SCAN; i++) {
    size_t v = pool.idle[i];
    if (v == not || !unused(v)) pool.queued[v] = 0;
    else pool.idle[w++] = (uint32_t)v, live++;
  }
  memmove(pool.idle + w, pool.idle + i, (pool.nidle - i) * sizeof *pool.idle);
  pool.nidle -= i - w;
}

/* Among the first scan idle pages, the one the budget expects born on last; the oldest
 * where it said nothing (best fit and plans refill the newest holes first). */
static size_t wanted_last(size_t scan) {
  size_t pick = 0;
  for (size_t i = 1; i < scan; i++)
    if (pool.wanted[pool.idle[i]] > pool.wanted[pool.idle[pick]]) pick = i;
  return pick;
}

static bool in_window(size_t v) { return pool.wanted[v] > pool.spare_from && pool.wanted[v] <= pool.spare_until; }

static bool favoured(size_t p) { return p >= pool.favour_lo && p < pool.favour_hi; }

/* v gives its handle before w: outside the served plan's range first (in the hand-over a
 * placed range's idle pages are its slots' next ones: GPT's replay at 1/4, the highest
 * taken first, mapped its 904-page range's pages 1,829 times, 3,270 maps and 2,180
 * unmaps in the run; 2,209 and 1,119 so), then the higher. */
static bool above(size_t v, size_t w) { return favoured(v) != favoured(w) ? favoured(w) : v > w; }

/* Without a budget, among the idle pages whose freed work is known done, the highest:
 * best fit fills the lowest holes first, so the page it wants least. On GPT's stream
 * (PyTorch on an H100, best fit alone over 12 steps, modelled) the oldest took 37,853
 * pages' handles in turn, the highest 9,113: a page taken from under best fit's next
 * buffer is mapped again at once. A stale entry counts as no page. */
static size_t highest_done(size_t not) {
  size_t pick = SIZE_MAX;
  for (size_t i = 0; i < pool.nidle; i++) {
    size_t v = pool.idle[i];
    if (v != not && unused(v) && (pick == SIZE_MAX || above(v, pool.idle[pick])) && pa_fence_known(pool.freed[v])) pick = i;
  }
  return pick;
}

/* Where the idle page holding h is on the idle stack (pa_mu held); nidle if none. */
static size_t idle_at(CUmemGenericAllocationHandle h) {
  size_t i = 0;
  while (i < pool.nidle && (pool.handle[pool.idle[i]] != h || !unused(pool.idle[i]))) i++;
  return i;
}

/* Takes idle stack entry i, marked BUSY (pa_mu held). */
static size_t take_idle(size_t i) {
  size_t v = pool.idle[i];
  memmove(pool.idle + i, pool.idle + i + 1, (pool.nidle - i - 1) * sizeof *pool.idle);
  pool.nidle--;
  pool.queued[v] = 0, pool.state[v] = BUSY;
  return v;
}

/* The highest idle page of the served plan's pinned range (BUSY now), SIZE_MAX if none:
 * a page outside it takes that one's handle while the program is off the plan
 * (pa_pool_pin_soft), not a new one. */
static size_t pinned_idle(void) {
  for (size_t p = pool.pin_hi; p-- > pool.pin_lo;)
    if (unused_under(p, true) && !pool.queued[p]) return pool.state[p] = BUSY, p;
  return SIZE_MAX;
}

/* Whether idle page v may give its handle with no host wait to come: the work freed
 * there is known done, or it is born on again only past twice the caller's window (the
 * lead: drained before, its address is free by then; a prefetch has no window). A page
 * born on sooner made the host wait for that work: G_1 at 50 %, two served waits. */
static bool quiet(size_t v) {
  uint64_t w = pool.wanted[v], lead = pool.spare_until - pool.spare_from;
  return pa_fence_known(pool.freed[v]) || (w && pool.spare_until && w > pool.spare_until + lead);
}

/* The idle page holding the handle p's address kept (pa_mu held): p takes it with no
 * mapping call, and the page keeps its address mapped as p did. SIZE_MAX if none, if it
 * is not quiet, or if the budget wants it born on again within the caller's window. */
static size_t holder(size_t p) {
  size_t i = pool.alias[p] ? idle_at(pool.handle[p]) : pool.nidle;
  if (i == pool.nidle || !quiet(pool.idle[i]) || in_window(pool.idle[i])) return SIZE_MAX;
  return take_idle(i);
}

/* A page nobody uses, to take its handle (pa_mu held); marked BUSY. Among the oldest
 * idle pages, one whose freed work is known complete; else the one wanted again last: a
 * LEAVING page wanted back makes the host wait for the work freed there, and the
 * device runs up to a lead behind (G_1 at 50 %: a page of its 144 MiB buffer, the
 * oldest idle, was drained and born on again within the lead, once a period). None
 * when even that one is in the caller's window: the budget sends out a live buffer
 * wanted later instead, where there is one (G_1 at 90 %: every idle page was born on
 * again within the lead, one served wait a period; 0 since). */
static size_t pick_idle(size_t not) {
  drop_stale_bottom(not);
  if (!pool.nidle) return SIZE_MAX;
  size_t pick = pa_limit_on() ? SIZE_MAX : highest_done(not), scan = pool.nidle < SCAN ? pool.nidle : SCAN;
  for (size_t i = 0; i < scan && pick == SIZE_MAX; i++)
    if (pa_fence_known(pool.freed[pool.idle[i]])) pick = i;
  if (pick == SIZE_MAX && in_window(pool.idle[pick = wanted_last(scan)])) return pool.spared = true, SIZE_MAX;
  return take_idle(pick);
}

/* The driver's memory calls made (map_mu held); mapping: cuMemMap, cuMemSetAccess or
 * cuMemUnmap, the calls a page moved costs (one of each may cover a run of pages). */
static void count_calls(size_t n, bool mapping) {
  pool.calls += n, pool.map_calls += mapping ? n : 0;
  if (pool.in_served) pool.served_calls += n, pool.served_map_calls += mapping ? n : 0;
}

/* pa_mu held: the driver mapped or unmapped pages (their calls count apart). */
static void count_maps(size_t maps, size_t unmaps) {
  pool.maps += maps, pool.unmaps += unmaps;
  if (pool.in_served) pool.served_maps += maps, pool.served_unmaps += unmaps;
}

void pa_pool_served(bool on) { pool.in_served = on; } /* off: the plan retired; on: pa_pool_serving */

/* Handles change under map_mu. */
static void count_handles(long delta) {
  pool.handles += (size_t)delta;
  if (pool.handles > pool.handles_peak) pool.handles_peak = pool.handles;
  bool counts = pool.trimmed || atomic_load_explicit(&serving, memory_order_relaxed);
  if (counts && pool.handles > pool.served_peak) pool.served_peak = pool.handles;
  atomic_store_explicit(&mapped_now, pool.handles, memory_order_relaxed);
}

size_t pa_pool_mapped(void) { return atomic_load_explicit(&mapped_now, memory_order_relaxed) * pool.page; }

/* A handle for a page, and the copies whose end its new users wait for: the program's
 * streams (users), and a restore into it on the in stream (fill), which no fence orders. */
typedef struct taken_s {
  CUmemGenericAllocationHandle h;
  uint64_t users, fill;
} taken_t;

#define NONE 1 /* no handle to reuse */
#define MAX_WAITS 8

/* pa_mu held; clean: an eviction's, its bytes those its page's copy out reads */
static void give_spare(CUmemGenericAllocationHandle h, uint64_t gen, bool clean) {
  pool.spare_gen[pool.nspare] = gen, pool.spare_clean[pool.nspare] = clean;
  pool.spare[pool.nspare++] = h;
}

/* Where h is among the spare handles (pa_mu held); nspare if it is not. */
static size_t spare_at(CUmemGenericAllocationHandle h) {
  size_t i = 0;
  while (i < pool.nspare && pool.spare[i] != h) i++;
  return i;
}

/* Spare handle i leaves the list for t (pa_mu held); whether it was clean. */
static bool take_spare(size_t i, taken_t *t) {
  bool clean = pool.spare_clean[i];
  t->h = pool.spare[i], t->users = t->fill = pool.spare_gen[i];
  pool.nspare--;
  pool.spare[i] = pool.spare[pool.nspare], pool.spare_gen[i] = pool.spare_gen[pool.nspare];
  pool.spare_clean[i] = pool.spare_clean[pool.nspare];
  return clean;
}

/* ---- LEAVING pages: their copy out ran on the out stream; once done, unmapped ------------- */

/* A drained page's address waits for the program's freed work only, which the fence
 * answers at once; its drain may still sit behind the out stream's earlier copies
 * (pa_mu held: a look at what the fence knows, no driver call). */
static bool fence_passed(size_t p) { return pool.fenced[p] && pa_fence_known(pool.freed[p]); }

/* The LEAVING pages whose copy out is done, out of the list into pool.reaped, in one
 * pass (pa_mu held); their count. Entries no longer LEAVING are dropped on the way. Not
 * a pass per page found: the list holds every page handed on until the fence passes it,
 * and that was quadratic in them. */
static size_t take_left(const pa_copies_t *done) {
  size_t n = 0, keep = 0;
  for (size_t i = 0; i < pool.nleaving; i++) {
    size_t p = pool.leaving[i];
    bool stale = pool.state[p] != LEAVING, copy_done = pool.restored[p] && pa_copies_known(pool.restored[p], done);
    bool left = !stale && (copy_done || fence_passed(p)); /* no copy (a deferral): the fence alone */
    if (left) pool.reaped[n++] = p;
    else if (!stale) pool.leaving[keep++] = (uint32_t)p;
  }
  pool.nleaving = keep;
  return n;
}

enum { LISTED = 1, UNMAPPED_NOW, REFUSED }; /* pool.mark */

/* Unmaps pages[0..n) (map_mu held, pa_mu not), one call for each run of adjacent ones:
 * the driver takes a range over whole mappings, as cuMemSetAccess does, and a page moved
 * is a call, not three (issue #39). Marks each page UNMAPPED_NOW or REFUSED (the caller
 * clears the marks); the last refusal's CUresult, or 0. */
static int unmap_runs(const size_t *pages, size_t n) {
  int refused = CUDA_SUCCESS;
  for (size_t i = 0; i < n; i++) pool.mark[pages[i]] = LISTED;
  for (size_t i = 0; i < n; i++) {
    size_t a = pages[i], b = a;
    if (pool.mark[a] != LISTED || (a && pool.mark[a - 1] == LISTED)) continue; /* not a run's first */
    while (b + 1 < pool.npages && pool.mark[b + 1] == LISTED) b++;
    uint64_t t = pa_htime_start();
    int rc = pa_cu.MemUnmap(pool.base + a * pool.page, (b - a + 1) * pool.page);
    pa_htime_lap(PA_HT_MAP, t);
    if (!rc) count_calls(1, true);
    else refused = rc;
    memset(pool.mark + a, rc ? REFUSED : UNMAPPED_NOW, b - a + 1);
  }
  return refused;
}

/* A LEAVING page as its unmap left it (pa_mu held): EVICTED, or UNMAPPED when nobody
 * needs its bytes any more; listed again if the driver refused; not unmapped (keep_mapped:
 * no mark), the same with its address still mapped. */
static void left(size_t p) {
  bool kept = !pool.mark[p] && pool.state[p] == LEAVING; /* a page listed twice settles once */
  if (pool.mark[p] == REFUSED) pool.leaving[pool.nleaving++] = (uint32_t)p;
  else if (pool.mark[p] == UNMAPPED_NOW) count_maps(0, 1);
  if (pool.mark[p] == UNMAPPED_NOW || kept) pool.state[p] = pool.host[p] ? EVICTED : UNMAPPED, pool.alias[p] = kept;
  pool.mark[p] = 0;
}

/* Unmaps one LEAVING page whose copy out is done (map_mu held), as a reap does; a CUresult. */
static int unmap_left(size_t p) {
  int rc = unmap_runs(&p, 1);
  pthread_mutex_lock(&pa_mu);
  left(p);
  pthread_mutex_unlock(&pa_mu);
  return rc;
}

/* The LEAVING pages whose copy is done (done: pa_swap_completed's answer) are unmapped
 * (map_mu held), together: a query, no wait. */
static void reap(pa_copies_t done) {
  pthread_mutex_lock(&pa_mu);
  uint64_t oldest = UINT64_MAX; /* a deferral's: asked of the fence, which no map asks */
  for (size_t i = 0; i < pool.nleaving; i++) {
    size_t p = pool.leaving[i];
    if (pool.state[p] == LEAVING && !pool.restored[p] && pool.freed[p] < oldest) oldest = pool.freed[p];
  }
  pthread_mutex_unlock(&pa_mu);
  if (oldest != UINT64_MAX) (void)pa_fence_query(oldest);
  pthread_mutex_lock(&pa_mu);
  size_t n = take_left(&done);
  pthread_mutex_unlock(&pa_mu);
  if (!keep_mapped()) unmap_runs(pool.reaped, n);
  pthread_mutex_lock(&pa_mu);
  for (size_t i = 0; i < n; i++) left(pool.reaped[i]);
  pthread_mutex_unlock(&pa_mu);
}

/* Drops p's entry from the LEAVING list (pa_mu held): a page taken back may leave again
 * before a reap drops the stale entry, and two entries each time would outgrow the list. */
static void unlist(size_t p) {
  for (size_t i = 0; i < pool.nleaving; i++)
    if (pool.leaving[i] == p) return (void)(pool.leaving[i] = pool.leaving[--pool.nleaving]);
}

/* A LEAVING page whose handle nobody took yet takes it back (pa_mu held): its bytes never
 * left the device, the copy out only reads them into a host block now dropped (torn by
 * later writes, never read), so nothing waits and nothing comes back. Not when poisoned:
 * the poison overwrote them (and the restore path is what those runs check). */
static bool reclaim(size_t p) {
  size_t i = spare_at(pool.handle[p]);
  /* its own copy's number: a handle that served elsewhere since holds other bytes */
  if (pa_opt.v[PA_OPT_POISON].i || i == pool.nspare || pool.spare_gen[i] != pool.restored[p] || !pool.spare_clean[i]) return false;
  taken_t t;
  take_spare(i, &t);
  pa_swap_unblock(pool.host[p], 0); /* its copy out and the next are both on the out stream */
  pool.host[p] = NULL, pool.state[p] = MAPPED, pool.reclaimed++;
  unlist(p);
  return true;
}

/* A LEAVING page wanted back (map_mu held): its own handle if still spare; else, its
 * address is free only when its copy out is done, so the host waits for it (not ahead: a
 * prefetch leaves it); the rare slow path. A drained page asks the fence first (a query:
 * the program's freed work is often done before the out stream reached the drain). */
static int finish_leaving(size_t p, bool ahead) {
  pthread_mutex_lock(&pa_mu);
  bool leaving = pool.state[p] == LEAVING && !reclaim(p), fenced = pool.fenced[p];
  uint64_t gen = pool.restored[p], freed = pool.freed[p];
  pthread_mutex_unlock(&pa_mu);
  if (!leaving || ahead) return CUDA_SUCCESS;
  int rc = fenced && pa_fence_query(freed) ? CUDA_SUCCESS : gen ? pa_swap_wait(gen, NULL, true) : pa_fence_settle(freed);
  return rc ? rc : unmap_left(p);
}


/* An idle page's handle taken while work the program freed there may still run (map_mu
 * held, pa_mu not): the out stream waits for that work on the GPU (g), and the page
 * stays LEAVING, with no bytes to bring back, until g is seen done and its address can
 * be unmapped: nobody waits on the host. The handle's next users on the program's
 * streams need not wait for g: every stream's next work follows the program's frees
 * already (the fence), save where the fence does not reach, which g stands for: frees
 * pending on stream-ordered events, and a copy of planalloc's own still using the
 * handle (copied: true). A restore into it always follows g. false where no wait could
 * be queued. */
static bool drain(size_t v, const CUevent *evs, size_t nev, bool copied, taken_t *t) {
  uint64_t g;
  if (pa_swap_drain(evs, nev, MAX_WAITS, copied ? pool.restored[v] : 0, &g)) return false;
  pthread_mutex_lock(&pa_mu);
  pool.state[v] = LEAVING, pool.restored[v] = g, pool.leaving[pool.nleaving++] = (uint32_t)v;
  pool.fenced[v] = !nev && !copied;
  pool.drained++;
  t->h = pool.handle[v], t->users = nev || copied ? g : 0, t->fill = g;
  pthread_mutex_unlock(&pa_mu);
  return true;
}

/* An idle page's handle goes on while its old address stays mapped (pa_mu not held):
 * LEAVING with nothing to bring back, until the work that may still touch it is seen
 * done (the fence past it; copy: a restore of ours into it) and a reap unmaps it with
 * its neighbours in one call. Its handle's next users wait for that copy, if any; the
 * fence orders them after the program's work. under_work: without a budget, where
 * that work may still run: nobody waits, on the host or the GPU. Best fit moves
 * through the recording ahead of a device that runs a launch queue behind: on GPT's
 * replay device-bound, 35 host waits (120 ms) a run where none is needed. */
static void hand_on(size_t v, taken_t *t, uint64_t copy, bool under_work) {
  pthread_mutex_lock(&pa_mu);
  unlist(v);
  t->h = pool.handle[v], t->users = t->fill = pool.restored[v];
  pool.state[v] = LEAVING, pool.restored[v] = copy, pool.fenced[v] = !copy, pool.leaving[pool.nleaving++] = (uint32_t)v;
  pool.deferred += under_work;
  pthread_mutex_unlock(&pa_mu);
}

/* Whether idle page v, of the caller's colour, may give its handle now: the work freed
 * there is known done, or v is born on again only past twice the lead from now (it
 * drains meanwhile; sooner, its address waits for that drain on the host: G_1 at 50 %,
 * a served wait). Unlike quiet, also for a prefetch, which has no window. */
static bool settled(size_t v) {
  uint64_t w = pool.wanted[v];
  return pa_fence_known(pool.freed[v]) || (w && w > pa_users_launches() + 2 * pool.lead);
}

/* The handle p's colour shares, where it is free (pa_mu held): *spare its index among
 * the spares, or *victim the idle page holding it, taken (else both as they were).
 * Taken as they came (the newest spare, the oldest idle page), the handles rotated:
 * each period the pages came back to find theirs held by a page that took it
 * meanwhile, each an unmap, a map and an access grant (trace_replay at 50 %, 2 GB/s:
 * 1.71 mapping calls a page moved in the served phase; 1.32 so). */
static void hue_kept(size_t p, size_t *spare, size_t *victim) {
  CUmemGenericAllocationHandle h = hue_handle(p);
  size_t i = h ? spare_at(h) : pool.nspare, j = h && i == pool.nspare ? idle_at(h) : pool.nidle;
  if (i < pool.nspare) *spare = i;
  else if (j < pool.nidle && settled(pool.idle[j]) && !in_window(pool.idle[j])) *victim = take_idle(j);
}

/* A spare handle, or one taken from an idle page (hand_on: its old address unmapped
 * later, with its neighbours): at once when the work the program freed there is known
 * done; else, under a budget, once the GPU has run it (drain), and without one, once the
 * fence is past it; the host waits for that work otherwise. Without a budget the drain cost more time than the wait (trace_replay
 * resnet50 at 1 us kernels: 1.47-1.89 s against 1.31-1.34 s): a second stream of
 * planalloc's waking at the program's pace. NONE if there is neither. */
static int reuse_handle(size_t page, taken_t *t) {
  CUevent evs[MAX_WAITS];
  size_t nev = 0;
  pthread_mutex_lock(&pa_mu);
  size_t victim = holder(page), s = SIZE_MAX;
  if (victim == SIZE_MAX) hue_kept(page, &s, &victim);
  if (victim == SIZE_MAX && s == SIZE_MAX && pool.nspare) s = other_spare();
  bool spare = victim == SIZE_MAX && s != SIZE_MAX;
  if (victim == SIZE_MAX && !spare) victim = pick_idle(page);
  if (victim == SIZE_MAX && !spare && pool.pin_soft && !pinned(page) && !pa_limit_on()) victim = pinned_idle();
  pool.idle_taken += victim != SIZE_MAX;
  if (spare) take_spare(s, t);
  uint64_t freed = victim != SIZE_MAX ? pool.freed[victim] : 0, copy = victim != SIZE_MAX ? pool.restored[victim] : 0;
  if (victim != SIZE_MAX) nev = pa_pending_waits(pool.base + victim * pool.page, pool.page, NULL, false, evs, MAX_WAITS);
  pthread_mutex_unlock(&pa_mu);
  if (spare || victim == SIZE_MAX) return spare ? CUDA_SUCCESS : NONE;
  /* its last copy (a restore nobody used before its buffers went) may still run, and no
   * fence covers the copy streams: the drain follows it */
  pa_copies_t completed = pa_swap_completed();
  bool copied = !pa_copies_known(copy, &completed), done = !nev && !copied && pa_fence_query(freed);
  if (!done && pa_limit_on() && drain(victim, evs, nev, copied, t)) return CUDA_SUCCESS;
  if (!done && !pa_limit_on() && !nev && !copied) return hand_on(victim, t, 0, true), CUDA_SUCCESS;
  CUresult rc = done ? CUDA_SUCCESS : (CUresult)pa_pending_settle(evs, nev, MAX_WAITS);
  if (!rc && !done) rc = (CUresult)pa_fence_settle(freed);
  if (!rc) return hand_on(victim, t, copied ? copy : 0, false), CUDA_SUCCESS; /* its memory's last copy goes with it */
  pthread_mutex_lock(&pa_mu);
  pool.state[victim] = MAPPED;
  queue_idle(victim);
  pthread_mutex_unlock(&pa_mu);
  return NONE;
}

static bool over_budget(void) { return pa_limit_on() && pool.handles >= pa_limit_pages(); }

/* A birth mapped ahead takes a handle nobody holds, its colour's first: an idle page's
 * would only move the mapping call to that page's next birth. */
static int spare_handle(size_t page, taken_t *t) {
  pthread_mutex_lock(&pa_mu);
  CUmemGenericAllocationHandle h = hue_handle(page);
  size_t i = h ? spare_at(h) : pool.nspare;
  if (i == pool.nspare && pool.nspare) i = other_spare();
  bool took = i < pool.nspare;
  if (took) take_spare(i, t);
  pthread_mutex_unlock(&pa_mu);
  return took ? CUDA_SUCCESS : NONE;
}

/* A new handle (map_mu held). A device that refuses one under a budget is full before
 * the budget is (another process, memory outside the pool): the budget becomes what it
 * holds and a victim gives way instead (NONE); with none held, the refusal stands. */
static int create_handle(CUmemGenericAllocationHandle *h) {
  uint64_t t = pa_htime_start();
  CUresult rc = pa_cu.MemCreate(h, pool.page, &pool.prop, 0);
  pa_htime_lap(PA_HT_MAP, t);
  if (!rc) count_handles(1), count_calls(1, false);
  if (rc != CUDA_ERROR_OUT_OF_MEMORY || !pool.handles || !pa_limit_on()) return rc;
  pthread_mutex_lock(&pa_mu);
  bool lowered = pa_limit_lower(pool.handles, rc);
  pthread_mutex_unlock(&pa_mu);
  return lowered ? NONE : rc;
}

/* A physical handle for a page: a spare one, one taken from an idle page, or a new one
 * within the budget, with the copies its users wait for (none for a new one). Else
 * PA_POOL_FULL: a victim must give way, which is the budget's choice, not the pool's (a
 * prefetch, which never evicts, gets NONE instead). */
static int take_handle(size_t page, taken_t *t, bool ahead) {
  *t = (taken_t){0, 0, 0};
  int rc = pool.premapping ? spare_handle(page, t) : reuse_handle(page, t);
  if (rc != NONE) return rc;
  if (!over_budget() && (rc = create_handle(&t->h)) != NONE) return rc;
  return ahead ? NONE : PA_POOL_FULL; /* over it, or it was just lowered to what is held */
}

/* An EVICTED page's bytes, back from the host (a copy the caller waits for), into a
 * handle whose last use (a copy out still reading it, the program's freed work) goes
 * first. */
static int restore(size_t p, const taken_t *t, uint64_t *gen) {
  CUdeviceptr at = pool.base + p * pool.page;
  pa_swap_page_t pg = {at, at + pool.span_lo[p], at + pool.span_hi[p], pool.host[p]};
  return pa_swap_in(&pg, t->fill, gen);
}

/* Each direction completes in order: its latest copy among the pages stands for all. */
static void note_restore(size_t p, pa_copies_t *latest) { pa_copies_note(latest, pool.restored[p]); }

#define RUN 64 /* pages mapped before one cuMemSetAccess opens them all */

/* Pages mapped side by side, their access not yet set: the handles they took, and
 * whether their bytes come back from the host. */
typedef struct run_s {
  size_t n, page[RUN];
  taken_t t[RUN];
  bool evicted[RUN];
  int rc[RUN]; /* map_end: each page's first error */
} run_t;

/* p could not be mapped (pa_mu held): the handle it took, if any, is spare again. */
static void not_mapped(size_t p, bool evicted, const taken_t *t) {
  pool.state[p] = evicted ? EVICTED : UNMAPPED;
  if (t) give_spare(t->h, t->fill, false); /* a restore into it later follows fill too */
  if (away(p) && !pool.ref[p]) forget_copy(p);
}

/* p mapped (or its address kept mapped to t->h: aliased), opened and, evicted, its
 * restore queued (pa_mu held). */
static void mapped(size_t p, const taken_t *t, bool evicted, uint64_t gen, bool ahead, pa_copies_t *latest) {
  pool.state[p] = MAPPED, pool.handle[p] = t->h, pool.ahead += ahead && evicted;
  pool.premapped += ahead && !evicted && pool.premapping;
  own(p, t->h);
  settle_hue(p, t->h, false);
  count_maps(!pool.alias[p], 0);
  pool.alias[p] = 0;
  if (evicted) pa_swap_unblock(pool.host[p], gen), pool.host[p] = NULL, pool.served_moved += pool.in_served;
  pool.restored[p] = gen ? gen : t->users; /* the restore ran after the handle's last use */
  queue_idle(p), note_restore(p, latest);
}

/* p's address is still mapped to its handle, and that handle is spare: p takes it
 * (pa_mu held); *intact: nobody wrote it since p's own copy out read it. */
static bool spare_alias(size_t p, taken_t *t, bool *intact) {
  size_t i = pool.alias[p] ? spare_at(pool.handle[p]) : pool.nspare;
  if (i == pool.nspare) return false;
  *intact = take_spare(i, t) && t->fill == pool.restored[p];
  return true;
}

/* Unmaps the addresses of pages[0..n), kept mapped to handles that went on (map_mu held,
 * pa_mu not), in runs; the driver's last refusal (those pages still aliased), or 0. */
static int unalias(const size_t *pages, size_t n) {
  int rc = n ? unmap_runs(pages, n) : CUDA_SUCCESS;
  pthread_mutex_lock(&pa_mu);
  for (size_t i = 0; i < n; i++) {
    size_t p = pages[i];
    if (pool.mark[p] == UNMAPPED_NOW) pool.alias[p] = 0, count_maps(0, 1);
    pool.mark[p] = 0;
  }
  pthread_mutex_unlock(&pa_mu);
  return rc;
}

/* p comes back into the handle its address is still mapped to (map_mu held, pa_mu not):
 * no mapping call. Evicted, its bytes come back; but intact, the handle spare behind p's
 * own copy out (nobody wrote it since): nothing waits and nothing is copied, as reclaim. */
static int reopen(size_t p, const taken_t *t, bool evicted, bool intact, bool ahead, pa_copies_t *latest) {
  uint64_t gen = 0;
  int rc = evicted && !intact ? restore(p, t, &gen) : CUDA_SUCCESS;
  pthread_mutex_lock(&pa_mu);
  if (rc) not_mapped(p, evicted, t);
  else if (intact) pa_swap_unblock(pool.host[p], 0), pool.host[p] = NULL, pool.reclaimed++;
  pool.rejoined += !rc;
  if (!rc) mapped(p, t, evicted && !intact, gen, ahead, latest);
  pthread_mutex_unlock(&pa_mu);
  return rc;
}

/* Why p, served, maps h anew (pa_remap_t): where its colour's handle was. */
static pa_remap_t remap_cause(size_t p, CUmemGenericAllocationHandle h) {
  uint32_t c = hue_of(p);
  if (c == NO_HUE) return PA_REMAP_NO_HUE;
  CUmemGenericAllocationHandle mine = pool.hue_h[c];
  if (!mine) return PA_REMAP_UNBOUND;
  if (mine == h) return PA_REMAP_ADDRESS;
  size_t q = owner_of(mine);
  if (q == SIZE_MAX) return PA_REMAP_AWAY;
  return pool.ref[q] ? PA_REMAP_LIVE : PA_REMAP_IDLE;
}

static void count_remap(size_t p, CUmemGenericAllocationHandle h) {
  pthread_mutex_lock(&pa_mu);
  pool.remaps[remap_cause(p, h)]++;
  pthread_mutex_unlock(&pa_mu);
}

/* Takes a handle for p (map_mu held) and adds both to r, to be mapped with its
 * neighbours; a page mapped already, or (ahead: a prefetch, which brings back EVICTED
 * pages only, and only with free handles) not evicted, is left as it is, and one that
 * comes back into the handle its address kept is done at once. */
static int map_begin(size_t p, run_t *r, pa_copies_t *latest, bool ahead) {
  int rc = finish_leaving(p, ahead);
  if (rc) return rc;
  taken_t t;
  pthread_mutex_lock(&pa_mu);
  bool evicted = pool.state[p] == EVICTED, births = pool.premapping && pool.state[p] == UNMAPPED;
  bool done = pool.state[p] == MAPPED || (ahead && !evicted && !births); /* a LEAVING page's address is still mapped */
  if (!done) pool.state[p] = BUSY;
  else note_restore(p, latest);
  bool intact = false, hit = !done && spare_alias(p, &t, &intact);
  intact &= evicted && !pa_opt.v[PA_OPT_POISON].i;
  pthread_mutex_unlock(&pa_mu);
  if (done) return CUDA_SUCCESS;
  if (hit) return reopen(p, &t, evicted, intact, ahead, latest);
  if ((rc = take_handle(p, &t, ahead))) {
    pthread_mutex_lock(&pa_mu);
    not_mapped(p, evicted, NULL);
    pthread_mutex_unlock(&pa_mu);
    return rc;
  }
  if (pool.alias[p] && t.h == pool.handle[p]) return reopen(p, &t, evicted, false, ahead, latest);
  if (pool.in_served) count_remap(p, t.h);
  return r->page[r->n] = p, r->t[r->n] = t, r->evicted[r->n++] = evicted, CUDA_SUCCESS;
}

/* The addresses of r's pages still mapped to the handles they kept, which went on, are
 * unmapped together (map_mu held): one call for each run, not one a page (ResNet-50's
 * GPU stream at half its peak: 1,205 of the recording's 4,400 mapping calls). Only here,
 * once the page has another handle: until then its kept handle may come free (an idle
 * holder, a victim sent out for it: pa_pool_kept_holders) and take it back with no call.
 * A page the driver refused takes its error. */
static void unalias_run(run_t *r) {
  size_t n = 0, pages[RUN];
  pthread_mutex_lock(&pa_mu);
  for (size_t i = 0; i < r->n; i++)
    if (pool.alias[r->page[i]]) pages[n++] = r->page[i];
  pthread_mutex_unlock(&pa_mu);
  int rc = unalias(pages, n);
  pthread_mutex_lock(&pa_mu);
  for (size_t i = 0; i < r->n; i++) r->rc[i] = pool.alias[r->page[i]] ? (rc ? rc : CUDA_ERROR_UNKNOWN) : CUDA_SUCCESS;
  pthread_mutex_unlock(&pa_mu);
}

/* Maps r's page i to its handle (map_mu held), its access not yet open. */
static void map_one(run_t *r, size_t i) {
  uint64_t t = pa_htime_start();
  r->rc[i] = pa_cu.MemMap(pool.base + r->page[i] * pool.page, pool.page, 0, r->t[i].h, 0);
  pa_htime_lap(PA_HT_MAP, t);
  if (!r->rc[i]) count_calls(1, true), pool.first_calls += !pool.opened[r->page[i]];
}

/* Whether r's pages [a, b) are all mapped for the first time (map_mu held). */
static bool first_run(const run_t *r, size_t a, size_t b) {
  while (a < b && !pool.opened[r->page[a]]) a++;
  return a == b;
}

/* Opens r's pages [a, b), mapped side by side, with one cuMemSetAccess (map_mu held): the
 * driver takes a range over several mappings (PyTorch's expandable segments open theirs
 * so). Refused, they are unmapped again and take its error. */
static void open_run(run_t *r, size_t a, size_t b) {
  CUdeviceptr at = pool.base + r->page[a] * pool.page;
  uint64_t t = pa_htime_start();
  int rc = pa_cu.MemSetAccess(at, (b - a) * pool.page, pool.access, pool.naccess);
  pa_htime_lap(PA_HT_MAP, t);
  if (!rc) {
    pool.first_calls += first_run(r, a, b);
    for (size_t i = a; i < b; i++) pool.opened[r->page[i]] = 1;
    return count_calls(1, true);
  }
  if (!pa_cu.MemUnmap(at, (b - a) * pool.page)) count_calls(1, true);
  for (size_t i = a; i < b; i++) r->rc[i] = rc;
}

/* Maps r's pages and opens them (map_mu held), then brings back the evicted ones, each
 * into its handle after that handle's last use; the first error. */
static int map_end(run_t *r, pa_copies_t *latest, bool ahead) {
  if (!r->n) return CUDA_SUCCESS;
  unalias_run(r);
  for (size_t i = 0; i < r->n; i++)
    if (!r->rc[i]) map_one(r, i);
  for (size_t a = 0, b = 0; a < r->n; a = b + (b == a)) {
    for (b = a; b < r->n && !r->rc[b]; b++) {}
    if (b > a) open_run(r, a, b);
  }
  int first = CUDA_SUCCESS;
  for (size_t i = 0; i < r->n; i++) {
    size_t p = r->page[i];
    uint64_t gen = 0;
    int e = r->rc[i] || !r->evicted[i] ? r->rc[i] : restore(p, &r->t[i], &gen);
    if (e && !r->rc[i] && !pa_cu.MemUnmap(pool.base + p * pool.page, pool.page)) count_calls(1, true);
    pthread_mutex_lock(&pa_mu);
    if (e) not_mapped(p, r->evicted[i], &r->t[i]);
    else mapped(p, &r->t[i], r->evicted[i], gen, ahead, latest);
    pthread_mutex_unlock(&pa_mu);
    if (!first) first = e;
  }
  r->n = 0;
  return first;
}

/* ---- eviction: a victim's pages go to host memory, their handles become spare -------- */

#define BATCH 64     /* pages one eviction moves at most */

typedef struct evict_s {
  pa_swap_page_t pg[BATCH];
  size_t page[BATCH], n, nstreams, nev;
  uint64_t gen;      /* the copy out's */
  pa_copies_t after; /* the restores its pages and host blocks may still be in */
  CUstream streams[PA_EVICT_STREAMS];
  CUevent evs[MAX_WAITS];
} evict_t;

/* The victim's evictable pages (at most max), marked BUSY, their spans, whom to wait
 * for (pa_mu held). */
static void gather(evict_t *e, uint64_t off, uint64_t size, size_t max) {
  CUdeviceptr lo = pool.base + FIRST * pool.page, hi = pool.base + (LAST + 1) * pool.page;
  pa_users_t all = pa_users_span(lo - pool.base, hi - pool.base, e->streams, PA_EVICT_STREAMS);
  e->nstreams = all.nstreams;
  for (size_t p = FIRST; p <= LAST && e->n < max; p++) {
    pa_users_t u = pa_users_span(p * pool.page, (p + 1) * pool.page, NULL, 0);
    if (!evictable(p) || u.unseen) continue;
    pool.state[p] = BUSY;
    CUdeviceptr at = pool.base + p * pool.page;
    e->pg[e->n] = (pa_swap_page_t){at, pool.base + u.lo, pool.base + u.hi, NULL};
    e->page[e->n++] = p;
    pa_copies_note(&e->after, pool.restored[p]); /* one nobody touched yet may still be filling it */
  }
  e->nev = e->n ? pa_pending_waits(lo, hi - lo, NULL, false, e->evs, MAX_WAITS) : 0;
}

/* Queues the copy out after the pages' users and pending frees (pa_mu not held); a
 * CUresult. Nothing waits: the handles go on as soon as settle gives them. */
static int move_out(evict_t *e) {
  int rc = CUDA_SUCCESS;
  for (size_t i = 0; i < e->n && !rc; i++)
    if (!(e->pg[i].host = pa_swap_block(pool.page, &e->after))) rc = CUDA_ERROR_OUT_OF_MEMORY;
  if (!rc) rc = pa_swap_after(e->streams, e->nstreams, e->evs, e->nev, PA_EVICT_STREAMS);
  if (!rc) rc = pa_swap_out(e->pg, e->n, &e->after, &e->gen);
  return rc;
}

/* Where the pages stand after move_out (pa_mu held): LEAVING, their handles spare
 * behind the copy's number; after a failure, as they were (a copy queued in part only
 * wrote host blocks, which the next copy out reuses in stream order). */
static void settle(evict_t *e, int rc) {
  for (size_t i = 0; i < e->n; i++) {
    size_t p = e->page[i];
    if (rc) {
      pa_swap_unblock(e->pg[i].host, e->after.dir[PA_COPY_IN]); /* what it waited for, if a restore still reads it */
      pool.state[p] = MAPPED;
      continue;
    }
    give_spare(pool.handle[p], e->gen, true);
    pool.served_moved += pool.in_served;
    pool.host[p] = e->pg[i].host, pool.state[p] = LEAVING, pool.restored[p] = e->gen;
    pool.fenced[p] = false;
    pool.leaving[pool.nleaving++] = (uint32_t)p;
    pool.span_lo[p] = (uint32_t)(e->pg[i].lo - e->pg[i].at), pool.span_hi[p] = (uint32_t)(e->pg[i].hi - e->pg[i].at);
    if (!pool.ref[p]) forget_copy(p);
  }
}

/* Queues the gathered pages' copy out and settles them (pa_mu not held); a CUresult. */
static int send(evict_t *e) {
  int rc = move_out(e);
  pthread_mutex_lock(&pa_mu);
  settle(e, rc);
  pthread_mutex_unlock(&pa_mu);
  return rc;
}

size_t pa_pool_evict_range(uint64_t off, uint64_t size, size_t max) {
  evict_t e = {.n = 0, .gen = 0, .after = {{0, 0}}};
  pthread_mutex_lock(&map_mu);
  pthread_mutex_lock(&pa_mu);
  gather(&e, off, size, max < BATCH ? max : BATCH);
  pthread_mutex_unlock(&pa_mu);
  size_t sent = e.n && !send(&e) ? e.n : 0;
  pthread_mutex_unlock(&map_mu);
  return sent;
}

/* How many of pages [first, last] are not mapped (pa_mu held). */
static size_t unmapped(size_t first, size_t last) {
  size_t n = 0;
  for (size_t p = first; p <= last; p++) n += pool.state[p] != MAPPED;
  return n;
}

size_t pa_pool_unmapped(uint64_t off, uint64_t size) {
  if (!pool.state || !size || FIRST >= pool.npages) return 0;
  return unmapped(FIRST, LAST < pool.npages ? LAST : pool.npages - 1);
}

/* Pages [first, last] all mapped (pa_mu held): their restores noted for the caller to
 * wait on, as map_begin notes them. */
static bool all_mapped(size_t first, size_t last, pa_copies_t *latest) {
  if (unmapped(first, last)) return false;
  for (size_t p = first; p <= last; p++) note_restore(p, latest);
  return true;
}

/* The pages of [off, off+size), each mapped (or, ahead, only brought back) in turn;
 * PA_POOL_FULL with *stop where and what is still to map. A range mapped already, as a
 * launch's buffers mostly are, asks nothing of the copy streams: the reap before each
 * range was 2 of the 4.6 event queries a launch under a budget made (GPT's H200
 * recording at its budget: 132,000 of 200,000), a driver call each. Nor does it take
 * map_mu, which the mover (mover.c) holds through its mapping calls: MAPPED is only ever
 * left under pa_mu (a page held by the launch or copy asking cannot leave at all), and a
 * page being mapped reads BUSY until its restore is noted. */
enum { PA_MAP_NEED, PA_MAP_AHEAD, PA_MAP_BIRTHS }; /* births: ahead, idle pages too */

static int map_range(uint64_t off, uint64_t size, pa_copies_t *restored, int mode, pa_pool_stop_t *stop) {
  bool ahead = mode != PA_MAP_NEED;
  pthread_mutex_lock(&pa_mu);
  bool mapped = all_mapped(FIRST, LAST, restored);
  pthread_mutex_unlock(&pa_mu);
  if (mapped) {
    stop->spared = false;
    return CUDA_SUCCESS;
  }
  pthread_mutex_lock(&map_mu);
  pool.premapping = mode == PA_MAP_BIRTHS;
  reap(pa_swap_completed());
  pool.spare_from = stop->spare_from, pool.spare_until = ahead ? 0 : stop->spare_until, pool.spared = false;
  if (pool.spare_until) pool.lead = pool.spare_until - pool.spare_from;
  int rc = CUDA_SUCCESS;
  run_t run;
  run.n = 0;
  size_t stopped = LAST;
  for (size_t p = FIRST; p <= LAST && !rc; p++) {
    if (run.n == RUN || (run.n && run.page[run.n - 1] + 1 != p)) rc = map_end(&run, restored, ahead);
    if (!rc && (rc = map_begin(p, &run, restored, ahead))) stopped = p;
  }
  int end = map_end(&run, restored, ahead); /* the pages before a failure stay mapped */
  if (!rc) rc = end;
  if (rc == PA_POOL_FULL) {
    pthread_mutex_lock(&pa_mu);
    stop->at = stopped * pool.page, stop->want = unmapped(stopped, LAST);
    pthread_mutex_unlock(&pa_mu);
  }
  stop->spared = pool.spared, pool.premapping = false;
  pthread_mutex_unlock(&map_mu);
  return rc;
}

/* Device dev may use the pool's pages: those mapped now, and every page mapped from now
 * on (map_mu: nothing is mapped or unmapped meanwhile; the pages are read under pa_mu,
 * the driver called without it). false when the driver refuses. */
bool pa_pool_grant(CUdevice dev) {
  CUmemAccessDesc d = {.location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = dev}, .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
  pthread_mutex_lock(&map_mu);
  bool ok = pool.naccess < sizeof pool.access / sizeof *pool.access;
  for (size_t i = 0; ok && i < pool.naccess; i++) ok = pool.access[i].location.id != dev;
  size_t *pages = ok ? malloc((pool.npages + 1) * sizeof *pages) : NULL, n = 0;
  pthread_mutex_lock(&pa_mu);
  for (size_t p = 0; pages && p < pool.npages; p++)
    if (pool.state[p] == MAPPED || pool.state[p] == LEAVING || pool.alias[p]) pages[n++] = p;
  pthread_mutex_unlock(&pa_mu);
  ok = ok && pages;
  for (size_t i = 0; ok && i < n; i++) ok = !pa_cu.MemSetAccess(pool.base + pages[i] * pool.page, pool.page, &d, 1);
  if (ok) pool.access[pool.naccess++] = d;
  pthread_mutex_unlock(&map_mu);
  free(pages);
  return ok;
}

int pa_pool_map(uint64_t off, uint64_t size, pa_copies_t *restored, pa_pool_stop_t *stop) {
  return map_range(off, size, restored, PA_MAP_NEED, stop);
}

bool pa_pool_prefetch(uint64_t off, uint64_t size) {
  pa_copies_t restored = {{0, 0}};
  pa_pool_stop_t stop = {0}; /* a prefetch never evicts: no PA_POOL_FULL */
  return map_range(off, size, &restored, PA_MAP_AHEAD, &stop) == CUDA_SUCCESS;
}

/* The pages of a buffer about to be born, mapped ahead of it (by the mover, beside the
 * program) where a handle is spare or within the budget: the allocation finds them
 * mapped. Its first users wait for the handle's last use, as pa_pool_restored says. */
bool pa_pool_premap(uint64_t off, uint64_t size) {
  pa_copies_t restored = {{0, 0}};
  pa_pool_stop_t stop = {0};
  return map_range(off, size, &restored, PA_MAP_BIRTHS, &stop) == CUDA_SUCCESS;
}

size_t pa_pool_evicted(uint64_t off, uint64_t size) {
  size_t n = 0;
  for (size_t p = FIRST; p <= LAST; p++) n += away(p);
  return n;
}

/* The idle pages whose freed work is done (freed before fence quiet, no stream-ordered
 * free pending on them), marked BUSY, then the spare handles no copy out still reads
 * (pa_mu held; done: the copies done): *n handles, the first *npages of them mapped at
 * pages[]. Idle pages with work still possible stay idle. NULL without memory: nothing
 * is trimmed. */
static CUmemGenericAllocationHandle *take_unused(size_t **pages, size_t *npages, size_t *n, const pa_copies_t *done, uint64_t quiet) {
  CUmemGenericAllocationHandle *h = malloc((pool.nidle + pool.nspare + 1) * sizeof *h);
  *pages = malloc((pool.nidle + 1) * sizeof **pages);
  if (!h || !*pages) return free(h), free(*pages), *pages = NULL, NULL;
  size_t k = 0, keep = 0;
  for (size_t i = 0; i < pool.nidle; i++) {
    size_t v = pool.idle[i];
    bool idle = unused(v), busy = idle && (pool.freed[v] > quiet || !pa_copies_known(pool.restored[v], done) ||
                                           pa_pending_busy(pool.base + v * pool.page, pool.page));
    if (busy) pool.idle[keep++] = (uint32_t)v;
    else pool.queued[v] = 0; /* stale entries go too */
    if (idle && !busy) pool.state[v] = BUSY, (*pages)[k] = v, h[k++] = pool.handle[v];
  }
  pool.nidle = keep, *npages = k;
  size_t still = 0; /* still mapped at a LEAVING page: not released from under its copy */
  for (size_t i = 0; i < pool.nspare; i++) {
    if (pa_copies_known(pool.spare_gen[i], done)) h[k++] = pool.spare[i];
    else pool.spare_gen[still] = pool.spare_gen[i], pool.spare_clean[still] = pool.spare_clean[i], pool.spare[still++] = pool.spare[i];
  }
  pool.nspare = still;
  *n = k;
  return h;
}

/* Every kept address unmapped (map_mu held): a handle released while mapped somewhere
 * keeps its memory, and its number may come back from cuMemCreate for another. false if
 * the driver refused one: nothing goes back then. */
static bool unalias_all(void) {
  size_t n = 0;
  pthread_mutex_lock(&pa_mu);
  for (size_t p = 0; p < pool.npages; p++)
    if (pool.alias[p]) pool.reaped[n++] = p;
  pthread_mutex_unlock(&pa_mu);
  return !unalias(pool.reaped, n);
}

/* A device that refused a page may not give it again: nothing goes back then. Pages
 * the program freed work on go back once that work is done, asked without a wait:
 * false when it is not yet (the caller tries again later). */
bool pa_pool_trim(void) {
  size_t *pages = NULL, npages = 0, n = 0, gone = 0;
  pthread_mutex_lock(&pa_mu);
  uint64_t quiet = 0; /* the latest fence an idle page went idle at */
  for (size_t i = 0; i < pool.nidle; i++)
    if (unused(pool.idle[i]) && pool.freed[pool.idle[i]] > quiet) quiet = pool.freed[pool.idle[i]];
  pthread_mutex_unlock(&pa_mu);
  if (!pa_fence_query(quiet)) return false;
  pa_pending_prune(SIZE_MAX);
  pthread_mutex_lock(&map_mu);
  pa_copies_t done = pa_swap_completed(); /* before the reap: every handle done is unmapped there */
  reap(done);
  if (!unalias_all()) return pthread_mutex_unlock(&map_mu), false;
  pthread_mutex_lock(&pa_mu);
  CUmemGenericAllocationHandle *h = pa_limit_lowered() ? NULL : take_unused(&pages, &npages, &n, &done, quiet);
  pthread_mutex_unlock(&pa_mu);
  size_t nkept = 0; /* unmapped, but the driver would not release them: spare again */
  if (h) unmap_runs(pages, npages);
  for (size_t i = 0; h && i < n; i++) {
    bool unmapped = i >= npages || pool.mark[pages[i]] == UNMAPPED_NOW;
    bool released = unmapped && !pa_cu.MemRelease(h[i]);
    gone += released;
    if (unmapped && !released) h[nkept++] = h[i];
  }
  pthread_mutex_lock(&pa_mu);
  if (gone) unbind_all(); /* a released handle's number may come back for another */
  while (h && nkept) give_spare(h[--nkept], 0, false);
  for (size_t i = 0; h && i < npages; i++) {
    size_t p = pages[i];
    bool kept = pool.mark[p] != UNMAPPED_NOW; /* the driver would not unmap it */
    pool.mark[p] = 0;
    pool.state[p] = kept ? MAPPED : UNMAPPED;
    count_maps(0, !kept);
    if (kept) pool.queued[p] = 1, pool.idle[pool.nidle++] = (uint32_t)p;
  }
  pthread_mutex_unlock(&pa_mu);
  pool.released += gone;
  count_calls(gone, false);
  count_handles(-(long)gone);
  pool.trimmed = true, pool.served_peak = 0; /* a plan found after others' divergent periods: its own */
  count_handles(0);
  pthread_mutex_unlock(&map_mu);
  free(h), free(pages);
  return true;
}

void pa_pool_serving(void) {
  atomic_store_explicit(&serving, true, memory_order_relaxed);
  pool.in_served = true, pool.served_maps = pool.served_unmaps = pool.served_calls = 0; /* this plan's, as the peak */
  pool.served_map_calls = pool.served_moved = 0;
  memset(pool.remaps, 0, sizeof pool.remaps);
}

void pa_pool_stats(pa_pool_stats_t *s) {
  size_t now = atomic_load_explicit(&mapped_now, memory_order_relaxed), served = pool.served_peak;
  if ((pool.trimmed || atomic_load_explicit(&serving, memory_order_relaxed)) && now > served) served = now;
  *s = (pa_pool_stats_t){pool.page, pool.handles_peak, served, pool.maps, pool.unmaps, pool.released,
                          pool.ahead, pool.reclaimed, pool.drained, pool.deferred, pool.served_maps, pool.served_unmaps,
                          pool.calls, pool.served_calls, pool.map_calls, pool.first_calls, pool.served_map_calls, pool.served_moved, pool.rejoined, {0},
                          pool.premapped, pool.idle_taken};
  memcpy(s->remaps, pool.remaps, sizeof s->remaps);
}
