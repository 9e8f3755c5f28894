/* Several devices in one process (issue #26, its first step): the pool serves the device
 * current at the first allocation; work on any other device is not planalloc's. Its
 * allocations go to the driver, and its launches, copies and memsets pass untouched (no
 * lane, no access trace, no budget): planalloc's events and waits live on the pool's
 * device only, as cuEventRecord requires. Peer access the program enables to the pool's
 * device is granted on the pool's pages (pool.c), and the other device's work may then
 * touch pool buffers: the caller hands that device's context to the fence, and a reuse
 * after such work waits for that device on the host (fence.c's stray work), the rare
 * case. Calls run one way: the hooks and alloc.c ask here; this file asks pool.c.
 * A process that sees one device pays one branch per call; with several, a launch on a
 * default stream asks the driver for the current context (a thread-local read in the
 * real driver), and a named stream's device is asked once and kept. */
#include "pa.h"

#define STREAMS 256 /* named streams whose device is kept; more are asked every time */
#define MAX_DEVICES 32

static struct {
  pthread_once_t once;   /* set up for the pool once it exists: pa_devices_seen says so */
  CUdevice pool;         /* the device the pool serves */
  pthread_mutex_t mu;    /* guards the stream table and the contexts */
  struct { CUstream s; CUdevice dev; } stream[STREAMS];
  atomic_bool peers;     /* another device may use the pool's pages (peer access enabled) */
  CUcontext ctx[MAX_DEVICES]; /* other devices' primary contexts, retained at first need */
  atomic_bool told;
  struct { CUdevice dev; CUcontext peer; } enabled[MAX_DEVICES]; /* peer access the program enabled */
  size_t nenabled;
} dv = {.mu = PTHREAD_MUTEX_INITIALIZER, .once = PTHREAD_ONCE_INIT};

static PA_TLS struct {
  CUcontext ctx;
  CUdevice dev;
} cur;

static void grant_enabled(void);

/* Once the pool exists: its device, how many the process sees, and the peer access
 * enabled before it. */
static void init(void) {
  int n = 1;
  dv.pool = pa_pool_device();
  if (pa_cu.DeviceGetCount && pa_cu.DeviceGetCount(&n)) n = 1;
  atomic_store(&pa_devices_seen, n > 1 ? 2 : 1);
  grant_enabled();
}

static bool multi(void) {
  int seen = atomic_load_explicit(&pa_devices_seen, memory_order_acquire);
  if (!seen && pa_pool_base()) pthread_once(&dv.once, init), seen = atomic_load(&pa_devices_seen);
  return seen == 2;
}

/* The current context's device; the pool's where it cannot be told. */
static CUdevice current_device(void) {
  CUcontext c = NULL;
  if (pa_cu.CtxGetCurrent(&c) || !c) return dv.pool;
  if (c != cur.ctx && !pa_cu.CtxGetDevice(&cur.dev)) cur.ctx = c;
  return c == cur.ctx ? cur.dev : dv.pool;
}

static bool default_stream(CUstream s) { return !s || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD; }

/* A named stream's device: kept in the table, asked on first sight. */
static CUdevice stream_device(CUstream s) {
  CUdevice dev = dv.pool;
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

static void tell(CUdevice dev) {
  if (!atomic_exchange(&dv.told, true))
    pa_info("device %d's memory goes to the driver: the pool serves device %d (one device a process for now)",
            (int)dev, (int)dv.pool);
}

/* dev's primary context, retained once. */
static CUcontext context_of(CUdevice dev) {
  if (dev < 0 || dev >= MAX_DEVICES) return NULL;
  pthread_mutex_lock(&dv.mu);
  if (!dv.ctx[dev] && pa_cu.DevicePrimaryCtxRetain && pa_cu.DevicePrimaryCtxRetain(&dv.ctx[dev], dev)) dv.ctx[dev] = NULL;
  CUcontext c = dv.ctx[dev];
  pthread_mutex_unlock(&dv.mu);
  return c;
}

bool pa_device_foreign(CUstream s) { return multi() && device_of(s) != dv.pool; }

bool pa_device_other_slow(CUstream s, bool launch, CUcontext *touching) {
  *touching = NULL;
  if (!multi()) return false;
  CUdevice dev = device_of(s);
  if (dev == dv.pool) return false;
  /* a kernel reaches pool memory only where peer access lets it; a copy, anywhere */
  if (!launch || atomic_load_explicit(&dv.peers, memory_order_relaxed)) *touching = context_of(dev);
  return true;
}

bool pa_device_foreign_alloc(CUstream s, bool async) {
  if (!multi()) return false;
  CUdevice dev = async && !default_stream(s) ? stream_device(s) : current_device();
  if (dev == dv.pool) return false;
  tell(dev);
  pthread_mutex_lock(&pa_mu);
  pa_stats.foreign++;
  pthread_mutex_unlock(&pa_mu);
  return true;
}

void pa_device_forget(CUstream s) {
  if (!multi() || default_stream(s)) return;
  pthread_mutex_lock(&dv.mu);
  size_t h = ((uintptr_t)s >> 4) % STREAMS;
  if (dv.stream[h].s == s) dv.stream[h].s = NULL;
  pthread_mutex_unlock(&dv.mu);
}

/* The pool's pages opened to every device that enabled peer access to the pool's
 * context (pa_mu not held). */
static void grant_enabled(void) {
  pthread_mutex_lock(&dv.mu);
  size_t n = dv.nenabled;
  CUdevice want[MAX_DEVICES];
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (dv.enabled[i].peer == atomic_load(&pa_pool_ctx) && dv.enabled[i].dev != dv.pool) want[k++] = dv.enabled[i].dev;
  pthread_mutex_unlock(&dv.mu);
  for (size_t i = 0; i < k; i++)
    if (pa_pool_grant(want[i])) atomic_store(&dv.peers, true);
}

/* The program enabled peer access from the current context to peer: kept (the pool may
 * not exist yet), and once the pool does, the pool's pages are opened to the current
 * device if peer is the pool's context. */
void pa_device_peer(CUcontext peer) {
  CUdevice dev = current_device();
  pthread_mutex_lock(&dv.mu);
  if (dv.nenabled < MAX_DEVICES) dv.enabled[dv.nenabled].dev = dev, dv.enabled[dv.nenabled++].peer = peer;
  pthread_mutex_unlock(&dv.mu);
  if (pa_pool_base()) grant_enabled();
}
