/* Every host wait planalloc makes goes through here, counted and timed by why: a host
 * wait stalls the program while the device drains, which is what users compare against
 * PyTorch's caching allocator (it never waits, but on out of memory). The stats table
 * and stats.json report them; the simulator's SIMCUDA_CALLS_FILE counts them again from
 * outside. One kind does not stall: pace.c's, which holds the host a lead ahead with
 * that many launches queued; it is counted here too, but not among the host waits. */
#include "pa.h"

#include <time.h>

static struct {
  atomic_uint_fast64_t count[PA_WAIT_KINDS], ns[PA_WAIT_KINDS], served_count, served_ns, held_ns[PA_HT_KINDS];
  atomic_bool served;
} PA_PER_DEVICE(wt);
PA_BIND(wt)
#define wt PA_THIS(wt)

uint64_t pa_wait_begin(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void pa_wait_end(pa_wait_why_t why, uint64_t since) {
  uint64_t took = pa_wait_begin() - since;
  atomic_fetch_add_explicit(&wt.count[why], 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&wt.ns[why], took, memory_order_relaxed);
  if (why >= PA_WAIT_STALLS || !atomic_load_explicit(&wt.served, memory_order_relaxed)) return;
  atomic_fetch_add_explicit(&wt.served_count, 1, memory_order_relaxed);
  atomic_fetch_add_explicit(&wt.served_ns, took, memory_order_relaxed);
}

void pa_waits_served(bool on) { atomic_store_explicit(&wt.served, on, memory_order_relaxed); }

/* ---- host time held elsewhere (pa.h: pa_htime_t) -------------------------------------------- */

uint64_t pa_htime_start(void) {
  bool asked = pa_opt.v[PA_OPT_STATS].i || pa_opt.v[PA_OPT_DUMP].text[0];
  return asked && atomic_load_explicit(&wt.served, memory_order_relaxed) ? pa_wait_begin() : 0;
}

static PA_TLS bool moving;

void pa_htime_mover(void) { moving = true; }

uint64_t pa_htime_lap(pa_htime_t kind, uint64_t since) {
  if (!since) return 0;
  uint64_t now = pa_wait_begin();
  if (kind == PA_HT_MAP && moving) kind = PA_HT_MOVER; /* off the program's threads */
  atomic_fetch_add_explicit(&wt.held_ns[kind], now - since, memory_order_relaxed);
  return now;
}

uint64_t pa_htime_us(pa_htime_t kind) { return atomic_load_explicit(&wt.held_ns[kind], memory_order_relaxed) / 1000; }

uint64_t pa_waits_in_served(bool us) {
  return us ? atomic_load_explicit(&wt.served_ns, memory_order_relaxed) / 1000
            : atomic_load_explicit(&wt.served_count, memory_order_relaxed);
}

static int sync_context(CUcontext c);

/* With several devices the current context may be another device's: the pool's is
 * waited for too (idle when it was the current one). */
int pa_wait_device(pa_wait_why_t why) {
  uint64_t t0 = pa_wait_begin();
  int rc = pa_cu.CtxSynchronize();
  CUcontext pool = atomic_load_explicit(&pa_pool_ctx, memory_order_relaxed);
  if (!rc && pool && atomic_load_explicit(&pa_devices_seen, memory_order_relaxed) == 2) rc = sync_context(pool);
  pa_wait_end(why, t0);
  return rc;
}

/* Another context's work: CUDA 13 names it (cuCtxSynchronize_v2); before, it is made
 * current for the wait and the caller's context restored. */
static int sync_context(CUcontext c) {
  if (pa_cu.CtxSynchronize_v2) return pa_cu.CtxSynchronize_v2(c);
  CUcontext was = NULL;
  int rc = pa_cu.CtxGetCurrent(&was);
  if (!rc) rc = pa_cu.CtxSetCurrent(c);
  if (rc) return rc;
  rc = pa_cu.CtxSynchronize();
  int back = pa_cu.CtxSetCurrent(was);
  return rc ? rc : back;
}

int pa_wait_context(CUcontext c, pa_wait_why_t why) {
  uint64_t t0 = pa_wait_begin();
  int rc = sync_context(c);
  pa_wait_end(why, t0);
  return rc;
}

int pa_wait_stream(CUstream s, pa_wait_why_t why) {
  uint64_t t0 = pa_wait_begin();
  int rc = pa_cu.StreamSynchronize(s);
  pa_wait_end(why, t0);
  return rc;
}

int pa_wait_event(CUevent e, pa_wait_why_t why) {
  uint64_t t0 = pa_wait_begin();
  int rc = pa_cu.EventSynchronize(e);
  pa_wait_end(why, t0);
  return rc;
}

uint64_t pa_waits(pa_wait_why_t why) { return atomic_load_explicit(&wt.count[why], memory_order_relaxed); }

uint64_t pa_waits_us(pa_wait_why_t why) { return atomic_load_explicit(&wt.ns[why], memory_order_relaxed) / 1000; }

uint64_t pa_waits_all(bool us) {
  uint64_t sum = 0;
  for (int k = 0; k < PA_WAIT_STALLS; k++) sum += us ? pa_waits_us((pa_wait_why_t)k) : pa_waits((pa_wait_why_t)k);
  return sum;
}
