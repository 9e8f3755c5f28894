/* The kernels' time, for the budget's swap schedule (dtr/served.c plans its copies
 * against it). While recording under a budget, the first 64 launches and every 16th
 * after are bracketed by two events on their stream, recorded after the stream's waits
 * for restores and around the launch alone; at planning, the pairs that completed (a
 * query, no wait) from the later half of the launches so far give the mean time of a
 * kernel. The first launches are cold (a GPU loads each module at its first launch,
 * the simulator faults in each page at its first touch): mlp_train's first kernel took
 * 38.7 ms, its second 3.4, and its recording's two samples made 18-21 ms a kernel where
 * the iteration gives 10.7. The later half is at least the last iteration recorded,
 * sampled whole where it is short. The recording's own copies and stalls stay out of
 * it. Only the recording pays (at most 64 pairs, then two event records per 16
 * launches); the served phase, none. The pairs are read in the thread that completed
 * the iteration, which has the program's context current: the planner's own thread has
 * none, and there every query fails (CUDA_ERROR_INVALID_CONTEXT; the schedule was never
 * planned before this was seen).
 * Beside it, the iteration's time for the forecast (budget.c): the recording's clock
 * every event of its first 512, then every 32nd, with planalloc's host waits so far; at
 * planning, the last period's span less those waits. */
#include "pa.h"

#define EVERY 16
#define RING 64
#define TICK 32    /* events between the iteration clock's samples, past the first TICKS */
#define TICKS 512  /* samples kept: 16,384 events, several PyTorch steps */

/* Sample k of a stream of them is taken: every one of the first `first`, then every `every`th. */
static bool sampled(uint64_t k, uint64_t first, uint64_t every) { return k < first || k % every == 0; }

typedef struct tick_s {
  uint64_t event, ns, waited_us; /* the monotonic clock and planalloc's host waits so far */
} tick_t;

static struct {
  pthread_mutex_t mu;
  CUevent start[RING], end[RING];
  uint8_t closed[RING]; /* both recorded */
  uint64_t at[RING];     /* the launch each pair brackets */
  uint64_t n, launches; /* the ring holds pairs n - RING .. n - 1 */
  int ready;            /* 0 not yet, 1 ready, 2 failed */
  double ns;            /* the mean measured last (pa_ktime_measure) */
  tick_t tick[TICKS];   /* the recording's clock every TICK events: ticks - TICKS .. ticks - 1 */
  uint64_t ticks;
  double iter_ns;       /* the last recorded iteration's time less planalloc's waits (pa_ktime_measure) */
} PA_PER_DEVICE(kt) = {[0 ... PA_SLOTS - 1] = {.mu = PTHREAD_MUTEX_INITIALIZER}};
PA_BIND(kt)
#define kt PA_THIS(kt)

int pa_ktime_begin(CUstream s) {
  if (!pa_recording() || !pa_limit_on() || !pa_opt.v[PA_OPT_SWAP_SCHEDULE].i) return -1;
  pthread_mutex_lock(&kt.mu);
  uint64_t k = kt.launches++;
  int slot = sampled(k, RING, EVERY) && pa_pairs_ready(kt.start, kt.end, RING, &kt.ready) ? (int)(kt.n % RING) : -1;
  if (slot >= 0 && pa_cu.EventRecord(kt.start[slot], s)) slot = -1;
  if (slot >= 0) kt.closed[slot] = 0, kt.at[slot] = k, kt.n++;
  pthread_mutex_unlock(&kt.mu);
  return slot;
}

void pa_ktime_end(int slot, CUstream s) {
  if (slot < 0) return;
  pthread_mutex_lock(&kt.mu);
  kt.closed[slot] = !pa_cu.EventRecord(kt.end[slot], s);
  pthread_mutex_unlock(&kt.mu);
}

/* The mean of the pairs done that bracket launches from `from` on (0: none). */
static double mean_from(uint64_t from) {
  double ns = 0, pairs = 0;
  float ms;
  for (size_t i = 0; kt.ready == 1 && i < RING && i < kt.n; i++)
    if (kt.at[i] >= from && kt.closed[i] && pa_pair_ms(kt.start[i], kt.end[i], &ms) && ms >= 0)
      ns += (double)ms * 1e6, pairs++;
  return pairs > 0 ? ns / pairs : 0;
}

void pa_ktime_event(uint64_t event) {
  if (!sampled(event, TICKS, TICK) || !pa_limit_on()) return;
  tick_t t = {event, pa_wait_begin(), pa_waits_all(true)};
  pthread_mutex_lock(&kt.mu);
  kt.tick[kt.ticks++ % TICKS] = t;
  pthread_mutex_unlock(&kt.mu);
}

/* The time of the last `period` events the ticks cover, less planalloc's host waits in
 * it, per period (0: fewer than two ticks). From the newest tick back to the newest one
 * a period before it, else the oldest kept. */
static double iteration_ns(uint64_t period) {
  if (kt.ticks < 2 || !period) return 0;
  const tick_t *hi = &kt.tick[(kt.ticks - 1) % TICKS], *lo = NULL;
  uint64_t oldest = kt.ticks > TICKS ? kt.ticks - TICKS : 0;
  for (uint64_t i = kt.ticks - 1; i-- > oldest;) {
    lo = &kt.tick[i % TICKS];
    if (hi->event - lo->event >= period) break;
  }
  double wall = (double)(hi->ns - lo->ns) - (double)(hi->waited_us - lo->waited_us) * 1e3;
  return wall > 0 ? wall * (double)period / (double)(hi->event - lo->event) : 0;
}

void pa_ktime_measure(uint64_t period) {
  pthread_mutex_lock(&kt.mu);
  double warm = mean_from(kt.launches / 2);
  kt.ns = warm > 0 ? warm : mean_from(0);
  kt.iter_ns = iteration_ns(period);
  pthread_mutex_unlock(&kt.mu);
  pa_link_measure();
}

double pa_ktime_iter_ns(void) {
  pthread_mutex_lock(&kt.mu);
  double ns = kt.iter_ns;
  pthread_mutex_unlock(&kt.mu);
  return ns;
}

double pa_ktime_ns(void) {
  pthread_mutex_lock(&kt.mu);
  double ns = kt.ns;
  pthread_mutex_unlock(&kt.mu);
  return ns;
}
