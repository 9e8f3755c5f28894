/* The kernels' time, for the budget's swap schedule (dtr/served.c plans its copies
 * against it). While recording under a budget, every 16th launch is bracketed by two
 * events on its stream, recorded after the stream's waits for restores and around the
 * launch alone; at planning, the pairs that completed (a query, no wait) give the mean
 * time of a kernel. The recording's own copies and stalls stay out of it. Only the
 * recording pays (two event records per 16 launches); the served phase, none. The
 * pairs are read in the thread that completed the iteration, which has the program's
 * context current: the planner's own thread has none, and there every query fails
 * (CUDA_ERROR_INVALID_CONTEXT; the schedule was never planned before this was seen). */
#include "pa.h"

#define EVERY 16
#define RING 64

static struct {
  pthread_mutex_t mu;
  CUevent start[RING], end[RING];
  uint8_t closed[RING]; /* both recorded */
  uint64_t n, launches; /* the ring holds pairs n - RING .. n - 1 */
  int ready;            /* 0 not yet, 1 ready, 2 failed */
  double ns;            /* the mean measured last (pa_ktime_measure) */
} PA_PER_DEVICE(kt) = {[0 ... PA_SLOTS - 1] = {.mu = PTHREAD_MUTEX_INITIALIZER}};
PA_BIND(kt)
#define kt PA_THIS(kt)

int pa_ktime_begin(CUstream s) {
  if (!pa_recording() || !pa_limit_on() || !pa_opt.v[PA_OPT_SWAP_SCHEDULE].i) return -1;
  pthread_mutex_lock(&kt.mu);
  int slot = kt.launches++ % EVERY == 0 && pa_pairs_ready(kt.start, kt.end, RING, &kt.ready) ? (int)(kt.n % RING) : -1;
  if (slot >= 0 && pa_cu.EventRecord(kt.start[slot], s)) slot = -1;
  if (slot >= 0) kt.closed[slot] = 0, kt.n++;
  pthread_mutex_unlock(&kt.mu);
  return slot;
}

void pa_ktime_end(int slot, CUstream s) {
  if (slot < 0) return;
  pthread_mutex_lock(&kt.mu);
  kt.closed[slot] = !pa_cu.EventRecord(kt.end[slot], s);
  pthread_mutex_unlock(&kt.mu);
}

void pa_ktime_measure(void) {
  double ns = 0, pairs = 0;
  float ms;
  pthread_mutex_lock(&kt.mu);
  for (size_t i = 0; kt.ready == 1 && i < RING && i < kt.n; i++)
    if (kt.closed[i] && pa_pair_ms(kt.start[i], kt.end[i], &ms) && ms >= 0)
      ns += (double)ms * 1e6, pairs++;
  kt.ns = pairs > 0 ? ns / pairs : 0;
  pthread_mutex_unlock(&kt.mu);
  pa_link_measure();
}

double pa_ktime_ns(void) {
  pthread_mutex_lock(&kt.mu);
  double ns = kt.ns;
  pthread_mutex_unlock(&kt.mu);
  return ns;
}
