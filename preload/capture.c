/* Stream capture, as far as allocation cares. While a capture that is not relaxed is open
 * (global mode on any thread, thread-local mode on the calling one), cudaMalloc is an
 * unsafe call: the driver refuses it and invalidates the capture. planalloc then passes
 * allocations to the real driver, so the program gets exactly the driver's answer; a
 * free fails the same way through the synchronisation it makes. Captures are rare and
 * short: a small table under its own lock, and one atomic load when none is open. */
#include "pa.h"

#define MAX_CAPTURES 64

static struct {
  pthread_mutex_t mu;
  struct {
    CUstream stream;
    pthread_t owner;
    CUstreamCaptureMode mode;
    bool used;
  } open[MAX_CAPTURES];
  atomic_int strict;   /* open captures that are not relaxed, listed or not */
  atomic_int nopen;    /* open captures */
  int unlisted;        /* captures the table could not hold: allocations pass through */
} cap = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* The per-thread default stream is one handle for many streams: the owner tells them apart. */
static bool same(int i, CUstream s) {
  return cap.open[i].used && cap.open[i].stream == s &&
         (s != CU_STREAM_PER_THREAD || pthread_equal(cap.open[i].owner, pthread_self()));
}

void pa_capture_began(CUstream s, CUstreamCaptureMode mode) {
  pthread_mutex_lock(&cap.mu);
  int i = 0;
  while (i < MAX_CAPTURES && cap.open[i].used) i++;
  if (i < MAX_CAPTURES) cap.open[i].stream = s, cap.open[i].owner = pthread_self(), cap.open[i].mode = mode, cap.open[i].used = true;
  else cap.unlisted++;
  if (i == MAX_CAPTURES || mode != CU_STREAM_CAPTURE_MODE_RELAXED) atomic_fetch_add(&cap.strict, 1);
  atomic_fetch_add(&cap.nopen, 1);
  pthread_mutex_unlock(&cap.mu);
}

void pa_capture_ended(CUstream s) {
  pthread_mutex_lock(&cap.mu);
  int i = 0;
  while (i < MAX_CAPTURES && !same(i, s)) i++;
  bool known = i < MAX_CAPTURES || cap.unlisted > 0;
  bool counted = i == MAX_CAPTURES ? cap.unlisted > 0 : cap.open[i].mode != CU_STREAM_CAPTURE_MODE_RELAXED;
  if (i < MAX_CAPTURES) cap.open[i].used = false;
  else if (cap.unlisted) cap.unlisted--;
  if (counted) atomic_fetch_sub(&cap.strict, 1);
  if (known) atomic_fetch_sub(&cap.nopen, 1);
  pthread_mutex_unlock(&cap.mu);
}

bool pa_capture_open(void) { return atomic_load_explicit(&cap.nopen, memory_order_acquire) > 0; }

/* Asks the driver: a stream that joined a capture through an event is none of ours to
 * list. An error (the legacy stream beside a capturing one) counts as capturing. */
bool pa_stream_capturing(CUstream s) {
  CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
  return pa_cu.StreamIsCapturing(s, &st) != CUDA_SUCCESS || st != CU_STREAM_CAPTURE_STATUS_NONE;
}

bool pa_capture_records(CUstream s) { return pa_capture_open() && pa_stream_capturing(s); }

bool pa_capture_forbids(void) {
  if (!atomic_load_explicit(&cap.strict, memory_order_acquire)) return false;
  pthread_mutex_lock(&cap.mu);
  bool no = cap.unlisted > 0;
  for (int i = 0; i < MAX_CAPTURES && !no; i++)
    no = cap.open[i].used && (cap.open[i].mode == CU_STREAM_CAPTURE_MODE_GLOBAL ||
                              (cap.open[i].mode == CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
                               pthread_equal(cap.open[i].owner, pthread_self())));
  pthread_mutex_unlock(&cap.mu);
  return no;
}
