/* SIMCUDA_TIMELINE=path: the device's timeline, one line for every kernel, copy and memset
 * a stream ran, written as it ends: "stream kind start_us end_us bytes", the stream
 * numbered in the order streams were made, kind one of kernel, htod, dtoh, dtod, htoh
 * or memset, times from the first line's start on the monotonic clock (a kernel's start
 * is when it took its stream, its end when its body was done), bytes those a copy or
 * memset wrote. Line 1 is "# simcuda timeline 1". So where a device waited (a budget's
 * copies between two kernels, a stream idle while the host works) is read off a run
 * rather than guessed from wall times: mlp_train's served periods under a budget, 53 ms
 * longer than without one, were 25 ms gaps after each long kernel body, which is how the
 * simulator's own fault was found. Only the process that opened the file writes. */
#include "sim.h"

#include <stdlib.h>
#include <unistd.h>

static struct {
  pthread_once_t once;
  pthread_mutex_t mu;
  FILE *f;
  pid_t pid;
  double t0;
} tl = {.once = PTHREAD_ONCE_INIT, .mu = PTHREAD_MUTEX_INITIALIZER};

static void open_timeline(void) {
  const char *path = getenv("SIMCUDA_TIMELINE");
  if (!path || !*path) return;
  if (!(tl.f = fopen(path, "w"))) return (void)fprintf(stderr, "simcuda: warning: cannot write SIMCUDA_TIMELINE %s\n", path);
  fprintf(tl.f, "# simcuda timeline 1\n");
  tl.pid = getpid();
}

static const char *kind(const sim_op_t *op) {
  if (op->kind == OP_KERNEL) return "kernel";
  if (op->kind == OP_SET) return "memset";
  bool to = sim_in_device_range((uintptr_t)op->u.copy.dst), from = sim_in_device_range((uintptr_t)op->u.copy.src);
  return to ? (from ? "dtod" : "htod") : (from ? "dtoh" : "htoh");
}

void sim_timeline_note(const struct CUstream_st *s, const sim_op_t *op, double start_ns, double end_ns) {
  pthread_once(&tl.once, open_timeline);
  if (!tl.f || tl.pid != getpid()) return;
  size_t bytes = op->kind == OP_COPY ? op->u.copy.n : op->kind == OP_SET ? op->u.set.count * op->u.set.width : 0;
  pthread_mutex_lock(&tl.mu);
  if (!tl.t0) tl.t0 = start_ns;
  fprintf(tl.f, "%u %s %.1f %.1f %zu\n", s->number, kind(op), (start_ns - tl.t0) / 1e3, (end_ns - tl.t0) / 1e3, bytes);
  fflush(tl.f);
  pthread_mutex_unlock(&tl.mu);
}
