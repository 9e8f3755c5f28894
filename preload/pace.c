/* The host's lead over the device in a budgeted served phase, held to the lead the swap
 * schedule was planned for (at most PLANALLOC_LEAD launches). The swap schedule sends a
 * page out after a launch and its memory serves another page at once (the taker's work
 * waits for the copy on the device); but the host acts on a page when it issues the
 * launch or allocation that wants it, as far ahead of the device as the launch queue
 * lets it run (about a thousand launches: 200 ms of 200 us kernels). A page wanted back
 * within that lead still has its copy out queued behind launches the device has not
 * run, and the host must wait for it before its address can take memory again (iopddl
 * G_1 at 50 %: 30-100 such waits an iteration, the device idle through them). So the
 * schedule plans for a lead of L launches (dtr/swapplan.c: a page comes back only L
 * launches after the device ran its copy out; dtr/served.c halves L until every
 * position fits the budget) and the host is held to it: every STEP launches
 * an event is recorded on the launch's stream, and a launch that puts the host more than
 * L launches ahead of the newest one run waits for it (asked first, no wait if done).
 * The device still has L launches queued through such a wait: it does not idle for it,
 * as it does not when the driver's own launch queue is full. Counted by waits.c apart
 * from the host waits that stall the program (stats: pacing waits). Only while a swap schedule is served; one atomic load per
 * launch otherwise. */
#include "pa.h"

#define SLOTS 16 /* events; STEP = L / 8, so a mark is recorded again 2 L launches later */

static struct {
  pthread_mutex_t mu;
  CUevent ev[SLOTS];
  uint64_t launches, waited; /* launches issued while pacing; the newest mark waited for */
  uint64_t lead, step;
  int ready; /* 0 not yet, 1 ready, 2 failed */
  atomic_bool on;
} PA_PER_DEVICE(pc) = {[0 ... PA_SLOTS - 1] = {.mu = PTHREAD_MUTEX_INITIALIZER}};
PA_BIND(pc)
#define pc PA_THIS(pc)

static bool ready(void) {
  if (!pc.ready) {
    pc.ready = 1;
    for (size_t i = 0; i < SLOTS && pc.ready == 1; i++)
      if (pa_cu.EventCreate(&pc.ev[i], CU_EVENT_DISABLE_TIMING)) pc.ready = 2;
  }
  return pc.ready == 1;
}

void pa_pace_start(uint64_t lead) {
  pthread_mutex_lock(&pc.mu);
  pc.launches = pc.waited = 0, pc.lead = lead, pc.step = lead >= 8 ? lead / 8 : 1;
  pthread_mutex_unlock(&pc.mu);
  atomic_store_explicit(&pc.on, lead > 0, memory_order_relaxed);
}

/* The mark to wait for once launch n is issued, or NULL (pc.mu held): mark k is recorded
 * at launch k * step, in slot k % SLOTS. */
static CUevent due(uint64_t n, CUstream s) {
  if (n % pc.step == 0 && ready() && pa_cu.EventRecord(pc.ev[(n / pc.step) % SLOTS], s)) pc.ready = 2;
  uint64_t k = n > pc.lead ? (n - pc.lead) / pc.step : 0;
  if (k <= pc.waited || pc.ready != 1) return NULL;
  pc.waited = k;
  return pc.ev[k % SLOTS];
}

void pa_pace_launch(CUstream s) {
  if (!atomic_load_explicit(&pc.on, memory_order_relaxed) || pa_capture_records(s)) return; /* a capture records no event */
  pthread_mutex_lock(&pc.mu);
  CUevent e = due(++pc.launches, s);
  pthread_mutex_unlock(&pc.mu);
  if (e && pa_cu.EventQuery(e) == CUDA_ERROR_NOT_READY) pa_wait_event(e, PA_WAIT_PACE);
}
