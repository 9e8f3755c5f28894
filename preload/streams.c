/* Stream-ordered frees without a wait. cudaFreeAsync records an event on its stream and
 * the range is reusable at once; an allocation that lands on a range whose event may not
 * have completed waits for it: on the freeing stream not at all (stream order), on
 * another stream with cuStreamWaitEvent; cudaMalloc, whose memory any stream may use at
 * return, raises the fence instead (fence.c: every stream's next work follows). A page
 * unmapped under such a range waits on the host (pa_pending_settle). Events are pooled
 * and recycled only once complete, so a waiter holding one that was recycled meanwhile
 * waits for a later point: later is safe. Pending ranges and spare events are under
 * pa_mu; driver calls are made without it. */
#include "pa.h"

#include <string.h>

#define MAX_PENDING 256

static struct {
  struct {
    CUdeviceptr lo, hi;
    CUstream stream;
    CUevent ev;
    uint64_t seq;
  } pend[MAX_PENDING]; /* oldest first */
  size_t npend;
  atomic_uint_fast64_t next_seq; /* read without pa_mu by pa_pending_mark */
  CUevent spare[MAX_PENDING];
  size_t nspare;
} PA_PER_DEVICE(st);
PA_BIND(st)
#define st PA_THIS(st)

static void recycle(CUevent ev) {
  if (st.nspare < MAX_PENDING) st.spare[st.nspare++] = ev;
  /* else: more events than pending slots exist only transiently; this one is dropped */
}

CUevent pa_event_after(CUstream s) {
  CUevent ev = NULL;
  pthread_mutex_lock(&pa_mu);
  if (st.nspare) ev = st.spare[--st.nspare];
  pthread_mutex_unlock(&pa_mu);
  if (!ev && (!pa_cu.EventCreate || pa_cu.EventCreate(&ev, CU_EVENT_DISABLE_TIMING))) return NULL;
  if (!pa_cu.EventRecord(ev, s)) return ev;
  pthread_mutex_lock(&pa_mu);
  recycle(ev);
  pthread_mutex_unlock(&pa_mu);
  return NULL;
}

/* Forgets the k oldest pending entries (pa_mu held): their events are complete. */
static void drop_front(size_t k) {
  for (size_t i = 0; i < k; i++) recycle(st.pend[i].ev);
  memmove(&st.pend[0], &st.pend[k], (st.npend - k) * sizeof st.pend[0]);
  st.npend -= k;
}

bool pa_pending_add(CUdeviceptr p, uint64_t size, CUstream s, CUevent ev) {
  if (st.npend == MAX_PENDING) return false;
  st.pend[st.npend++] = (__typeof__(st.pend[0])){p, p + size, s, ev, atomic_fetch_add(&st.next_seq, 1)};
  return true;
}

void pa_pending_drop(CUevent ev) { recycle(ev); }

size_t pa_pending_waits(CUdeviceptr p, uint64_t size, CUstream s, bool async, CUevent *out, size_t max) {
  size_t n = 0;
  for (size_t i = 0; i < st.npend; i++) {
    bool overlaps = st.pend[i].lo < p + size && p < st.pend[i].hi;
    /* the per-thread default stream's handle names one stream per thread: never "the same" */
    bool same = async && st.pend[i].stream == s && s != CU_STREAM_PER_THREAD;
    if (!overlaps || same) continue;
    if (n == max) return max + 1;
    out[n++] = st.pend[i].ev;
  }
  return n;
}

int pa_pending_wait(const CUevent *evs, size_t n, CUstream s) {
  int rc = CUDA_SUCCESS;
  for (size_t i = 0; i < n && !rc; i++) rc = pa_cu.StreamWaitEvent(s, evs[i], 0);
  return rc;
}

int pa_pending_settle(const CUevent *evs, size_t n, size_t max) {
  if (n > max) return pa_wait_device(PA_WAIT_PAGE); /* too many to wait for one by one */
  int rc = CUDA_SUCCESS;
  for (size_t i = 0; i < n && !rc; i++) rc = pa_cu.EventQuery(evs[i]) ? pa_wait_event(evs[i], PA_WAIT_PAGE) : CUDA_SUCCESS;
  return rc;
}

/* Drops pending entries whose event is complete, oldest first, up to max of them. */
void pa_pending_prune(size_t max) {
  for (size_t k = 0; k < max; k++) {
    pthread_mutex_lock(&pa_mu);
    CUevent ev = st.npend ? st.pend[0].ev : NULL;
    pthread_mutex_unlock(&pa_mu);
    if (!ev || pa_cu.EventQuery(ev) != CUDA_SUCCESS) return;
    pthread_mutex_lock(&pa_mu);
    if (st.npend && st.pend[0].ev == ev) drop_front(1);
    pthread_mutex_unlock(&pa_mu);
  }
}

bool pa_pending_busy(CUdeviceptr p, uint64_t size) {
  for (size_t i = 0; i < st.npend; i++)
    if (st.pend[i].lo < p + size && p < st.pend[i].hi) return true;
  return false;
}

uint64_t pa_pending_mark(void) { return atomic_load_explicit(&st.next_seq, memory_order_relaxed); }

void pa_pending_clear(uint64_t mark) {
  size_t k = 0;
  while (k < st.npend && st.pend[k].seq < mark) k++;
  drop_front(k);
}
