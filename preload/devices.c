/* Several devices in one process: which device's planalloc a call works on. Each device
 * below PA_DEVICES has its own pool, recording, plan, budget and fence (pa.h's pa_slot);
 * the hooks ask here first, and the slot then holds for the whole call. A launch, copy
 * or allocation works on its stream's device (a default stream: the current context's);
 * a free on the device whose pool holds the address (pool.c). Devices from PA_DEVICES on
 * share a slot that never makes a pool: their allocations go to the driver, counted and
 * said once.
 * Peer access the program enables to a device's context opens that device's pool to
 * the enabling device (cuMemSetAccess on its pages: peer access alone does not open VMM
 * memory). A kernel may then touch another device's pool, and any copy may: that pool's
 * fence orders the work as a lane of the other device's context (fence.c), so its reuse
 * follows on the devices. Calls run one way: the hooks ask here; this file asks pool.c
 * and fence.c.
 * A process that sees one device pays one branch per call; with several, a default
 * stream's work asks the driver for the current context (a thread-local read in the real
 * driver), and a named stream's device is asked once and kept. */
#include "pa.h"

#define STREAMS 256 /* named streams whose device is kept; more are asked every time */
#define MAX_DEVICES 32

static struct {
  pthread_mutex_t mu; /* guards the stream table, the contexts and the peer access enabled */
  struct { CUstream s; CUdevice dev; } stream[STREAMS];
  atomic_uint granted[PA_DEVICES]; /* each pool: the devices its pages are open to (bits) */
  atomic_bool peers;                /* some pool is open to another device */
  atomic_bool asked[PA_DEVICES];    /* its pool was opened to the peer access enabled before it */
  CUcontext ctx[MAX_DEVICES];       /* other devices' primary contexts, retained at first need */
  atomic_bool told;
  atomic_ulong passed;              /* allocations on devices from PA_DEVICES on */
  struct { CUdevice dev; CUcontext peer; } enabled[MAX_DEVICES]; /* peer access the program enabled */
  size_t nenabled;
} dv = {.mu = PTHREAD_MUTEX_INITIALIZER};

static PA_TLS struct {
  CUcontext ctx;
  CUdevice dev;
} cur;

/* How many devices the process sees, once the driver can say (before cuInit nothing runs
 * on a device, and the first slot serves). */
static bool multi(void) {
  int seen = atomic_load_explicit(&pa_devices_seen, memory_order_acquire), n = 1;
  if (seen) return seen == 2;
  if (!pa_cu.DeviceGetCount || pa_cu.DeviceGetCount(&n)) return false;
  atomic_store(&pa_devices_seen, n > 1 ? 2 : 1);
  return n > 1;
}

/* The process sees one device: slot 0 is set. */
static bool first_only(void) {
  if (multi()) return false;
  pa_slot_set(0);
  return true;
}

/* The current context's device; the first where none is current. */
static CUdevice current_device(void) {
  CUcontext c = NULL;
  if (pa_cu.CtxGetCurrent(&c) || !c) return 0;
  if (c != cur.ctx && !pa_cu.CtxGetDevice(&cur.dev)) cur.ctx = c;
  return c == cur.ctx ? cur.dev : 0;
}

static bool default_stream(CUstream s) { return !s || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD; }

/* A named stream's device: kept in the table, asked on first sight. */
static CUdevice stream_device(CUstream s) {
  CUdevice dev = current_device();
  size_t h = ((uintptr_t)s >> 4) % STREAMS;
  pthread_mutex_lock(&dv.mu);
  bool kept = dv.stream[h].s == s;
  if (kept) dev = dv.stream[h].dev;
  pthread_mutex_unlock(&dv.mu);
  if (kept || !pa_cu.StreamGetDevice || pa_cu.StreamGetDevice(s, &dev)) return dev;
  pthread_mutex_lock(&dv.mu);
  dv.stream[h].s = s, dv.stream[h].dev = dev;
  pthread_mutex_unlock(&dv.mu);
  return dev;
}

static CUdevice device_of(CUstream s) { return default_stream(s) ? current_device() : stream_device(s); }

static int slot_of(CUdevice dev) { return dev >= 0 && dev < PA_DEVICES ? (int)dev : PA_DEVICES; }

/* dev's primary context, retained once. */
static CUcontext context_of(CUdevice dev) {
  if (dev < 0 || dev >= MAX_DEVICES) return NULL;
  pthread_mutex_lock(&dv.mu);
  if (!dv.ctx[dev] && pa_cu.DevicePrimaryCtxRetain && pa_cu.DevicePrimaryCtxRetain(&dv.ctx[dev], dev)) dv.ctx[dev] = NULL;
  CUcontext c = dv.ctx[dev];
  pthread_mutex_unlock(&dv.mu);
  return c;
}

/* This slot's pool opened to every device that enabled peer access to its context (pa_mu
 * not held; pa_slot is the pool's). */
static void grant_enabled(void) {
  CUcontext mine = atomic_load(&pa_pool_ctx);
  CUdevice want[MAX_DEVICES];
  size_t k = 0;
  pthread_mutex_lock(&dv.mu);
  for (size_t i = 0; i < dv.nenabled; i++)
    if (dv.enabled[i].peer == mine && dv.enabled[i].dev != pa_slot) want[k++] = dv.enabled[i].dev;
  pthread_mutex_unlock(&dv.mu);
  for (size_t i = 0; i < k; i++)
    if (want[i] < MAX_DEVICES && pa_pool_grant(want[i]))
      atomic_fetch_or(&dv.granted[pa_slot], 1u << want[i]), atomic_store(&dv.peers, true);
}

/* pa_slot becomes dev's. */
static bool enter(CUdevice dev) {
  pa_slot_set(slot_of(dev));
  return pa_slot < PA_DEVICES;
}

/* Pools are made only by an allocation (pa_pool_init), which calls this next: the peer
 * access enabled before the pool existed is granted on it once. */
void pa_device_pool_made(void) {
  if (pa_slot < PA_DEVICES && !atomic_exchange(&dv.asked[pa_slot], true)) grant_enabled();
}

void pa_device_each_pool(void (*fn)(void *arg), void *arg) {
  int own = pa_slot;
  for (int d = 0; d < PA_DEVICES; d++)
    if (pa_slot_set(d), pa_pool_base()) fn(arg);
  pa_slot_set(own);
}

bool pa_device_enter_slow(CUstream s) {
  if (first_only()) return true;
  return enter(device_of(s));
}

/* Work on dev's stream s may touch pool p: p's fence orders it (unless it is settled
 * when its call returns), and p's budget, which cannot follow it, gives way (pa_slot is
 * p's after). */
static int order_on(int p, CUdevice dev, CUstream s, bool settled) {
  CUcontext c = settled ? NULL : context_of(dev);
  pa_slot_set(p);
  int rc = c ? pa_fence_foreign(c, s) : CUDA_SUCCESS;
  return rc ? rc : pa_budget_foreign(s);
}

bool pa_device_launch_slow(CUstream s, int *rc) {
  *rc = CUDA_SUCCESS;
  if (first_only()) return true;
  CUdevice dev = device_of(s);
  for (int p = 0; p < PA_DEVICES && !*rc && atomic_load_explicit(&dv.peers, memory_order_relaxed); p++)
    if (p != dev && dev >= 0 && dev < MAX_DEVICES && (atomic_load(&dv.granted[p]) >> dev & 1)) *rc = order_on(p, dev, s, false);
  return enter(dev);
}

int pa_device_copy(CUstream s, int p, bool settled) {
  int own = pa_slot;
  int rc = order_on(p, device_of(s), s, settled);
  pa_slot_set(own);
  return rc;
}

bool pa_device_alloc_slow(CUstream s, bool async) {
  if (first_only()) return true;
  if (enter(async && !default_stream(s) ? stream_device(s) : current_device())) return true;
  atomic_fetch_add(&dv.passed, 1);
  if (!atomic_exchange(&dv.told, true))
    pa_info("devices from %d on have no pool: their memory goes to the driver", PA_DEVICES);
  return false;
}

unsigned long pa_device_passed(void) { return atomic_load(&dv.passed); }

void pa_device_forget(CUstream s) {
  if (!multi() || default_stream(s)) return;
  pthread_mutex_lock(&dv.mu);
  size_t h = ((uintptr_t)s >> 4) % STREAMS;
  if (dv.stream[h].s == s) dv.stream[h].s = NULL;
  pthread_mutex_unlock(&dv.mu);
}

static void grant_if_made_in(void *peer) {
  if (atomic_load(&pa_pool_ctx) == peer) grant_enabled();
}

/* The program enabled peer access from the current context to peer: kept (peer's pool
 * may not exist yet), and every pool made in peer is opened to the current device. */
void pa_device_peer(CUcontext peer) {
  CUdevice dev = current_device();
  pthread_mutex_lock(&dv.mu);
  if (dv.nenabled < MAX_DEVICES) dv.enabled[dv.nenabled].dev = dev, dv.enabled[dv.nenabled++].peer = peer;
  pthread_mutex_unlock(&dv.mu);
  pa_device_each_pool(grant_if_made_in, peer);
}
