/* Stream capture and graphs, the subset programs use with allocators: a capturing stream
 * records its kernels, async copies, memsets and event operations into a graph instead
 * of running them; an instantiated graph replays copies of them on a stream. As on CUDA,
 * the legacy stream cannot capture, and allocation or synchronisation while a stream
 * captures in global mode fails with CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and
 * invalidates the capture. Stream-ordered allocation inside a capture is refused
 * (CUDA_ERROR_NOT_SUPPORTED): the simulator does not make memory nodes.
 * A capture spans streams as on CUDA (fork/join): a stream that waits for an event
 * recorded in an open capture joins it, and the capture can end only on the stream that
 * began it, once that stream is ordered after all work captured on the others (vector
 * clocks over the members; else CUDA_ERROR_STREAM_CAPTURE_UNJOINED). The graph keeps the
 * members' work in the order it was issued: one valid order of its nodes. */
#include "sim.h"

#include <stdlib.h>
#include <string.h>

#define GRAPH_MAGIC 0x47524150u
#define EXEC_MAGIC 0x47455845u

struct CUgraph_st {
  uint32_t magic;
  sim_op_t *head, *tail;
  struct CUgraph_st *next_graph;
  bool open, invalidated; /* captured into now; EndCapture will fail */
  unsigned members;       /* streams in the capture, the one that began it first */
  uint32_t work[SIM_CAPTURE_STREAMS]; /* nodes each member captured */
  CUstreamCaptureMode mode; /* every member's */
  pthread_t capturer;       /* the thread that began it (thread-local mode) */
};

struct CUgraphExec_st {
  uint32_t magic;
  sim_op_t *head, *tail;
  struct CUgraphExec_st *next_exec;
};

static struct CUgraph_st *graphs; /* registries, guarded by sim.mu */
static struct CUgraphExec_st *execs;

CUresult cuStreamBeginCapture_v2_ptsz(CUstream s, CUstreamCaptureMode mode);
CUresult cuStreamEndCapture_ptsz(CUstream s, CUgraph *graph);
CUresult cuGraphLaunch_ptsz(CUgraphExec exec, CUstream s);

void sim_op_free(sim_op_t *op) {
  if (op->kind == OP_KERNEL) free(op->u.kernel.argbuf);
  if (op->kind == OP_COPY) free(op->u.copy.staging);
  free(op);
}

static void free_list(sim_op_t *op) {
  for (sim_op_t *next; op; op = next) next = op->next, sim_op_free(op);
}

/* A deep copy: a replay owns its argument buffer and staged bytes. */
static sim_op_t *op_clone(const sim_op_t *op) {
  sim_op_t *c = malloc(sizeof *c);
  if (!c) return NULL;
  *c = *op, c->next = NULL;
  if (op->kind == OP_KERNEL) {
    const sim_func_t *f = op->u.kernel.f;
    if (!(c->u.kernel.argbuf = malloc(f->argsize + 8))) return free(c), NULL;
    memcpy(c->u.kernel.argbuf, op->u.kernel.argbuf, f->argsize + 8);
    for (unsigned i = 0; i < f->nparams; i++) c->u.kernel.launch.args[i] = c->u.kernel.argbuf + f->offset[i];
  } else if (op->kind == OP_COPY && op->u.copy.staging) {
    if (!(c->u.copy.staging = malloc(op->u.copy.n))) return free(c), NULL;
    memcpy(c->u.copy.staging, op->u.copy.staging, op->u.copy.n);
    c->u.copy.src = c->u.copy.staging;
  }
  return c;
}

/* Event records and waits order the capture; they are no nodes of the graph. */
static bool is_node(const sim_op_t *op) { return op->kind != OP_RECORD && op->kind != OP_WAIT_EVENT; }

bool sim_capture_take(struct CUstream_st *s, sim_op_t *op) {
  if (!s->capturing) return false;
  struct CUgraph_st *g = s->graph;
  op->next = NULL;
  if (g->tail) g->tail->next = op;
  else g->head = op;
  g->tail = op;
  if (is_node(op)) s->clock[s->member] = ++g->work[s->member];
  return true;
}

bool sim_capture_invalid(const struct CUstream_st *x) { return x->capturing && x->graph->invalidated; }

void sim_capture_record(struct CUstream_st *x, struct CUevent_st *e) {
  e->captured = x->capturing ? x->graph : NULL;
  if (x->capturing) memcpy(e->clock, x->clock, sizeof e->clock);
}

static CUresult join(struct CUstream_st *x, struct CUgraph_st *g, const struct CUevent_st *e) {
  if (x->legacy) return CUDA_ERROR_STREAM_CAPTURE_IMPLICIT;
  if (g->members == SIM_CAPTURE_STREAMS) return CUDA_ERROR_NOT_SUPPORTED; /* the simulator's limit */
  x->capturing = true, x->graph = g, x->member = g->members++;
  memcpy(x->clock, e->clock, sizeof x->clock);
  return CUDA_SUCCESS;
}

/* A wait on outside work would cross the capture's boundary: CUDA fails it and
 * invalidates the capture. */
CUresult sim_capture_wait(struct CUstream_st *x, struct CUevent_st *e, unsigned flags) {
  struct CUgraph_st *g = (struct CUgraph_st *)e->captured;
  if (!x->capturing) return !g ? CUDA_SUCCESS : g->open ? join(x, g, e) : CUDA_ERROR_CAPTURED_EVENT;
  if (flags & CU_EVENT_WAIT_EXTERNAL || !e->recorded) return CUDA_SUCCESS;
  if (g != x->graph) return x->graph->invalidated = true, CUDA_ERROR_STREAM_CAPTURE_ISOLATION;
  for (unsigned m = 0; m < SIM_CAPTURE_STREAMS; m++)
    if (e->clock[m] > x->clock[m]) x->clock[m] = e->clock[m];
  return CUDA_SUCCESS;
}

bool sim_capture_forbids(void) {
  bool hit = false;
  pthread_mutex_lock(&sim.mu);
  for (struct CUstream_st *x = sim_streams(); x; x = x->next_stream)
    if (x->capturing && (x->graph->mode == CU_STREAM_CAPTURE_MODE_GLOBAL ||
                         (x->graph->mode == CU_STREAM_CAPTURE_MODE_THREAD_LOCAL &&
                          pthread_equal(x->graph->capturer, pthread_self()))))
      x->graph->invalidated = hit = true;
  pthread_mutex_unlock(&sim.mu);
  return hit;
}

static CUresult begin(CUstream s, CUstreamCaptureMode mode, bool ptsz) {
  CUresult rc = sim_ctx_check();
  if (rc) return rc;
  if (!sim_stream_valid(s)) return CUDA_ERROR_INVALID_HANDLE;
  if (mode > CU_STREAM_CAPTURE_MODE_RELAXED) return CUDA_ERROR_INVALID_VALUE;
  struct CUstream_st *x = sim_stream(s, ptsz);
  if (x->legacy) return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
  struct CUgraph_st *g = calloc(1, sizeof *g);
  if (!g) return CUDA_ERROR_OUT_OF_MEMORY;
  g->magic = GRAPH_MAGIC, g->open = true, g->members = 1, g->mode = mode, g->capturer = pthread_self();
  pthread_mutex_lock(&sim.mu);
  if (x->capturing) rc = CUDA_ERROR_ILLEGAL_STATE;
  else x->capturing = true, x->member = 0, x->graph = g, memset(x->clock, 0, sizeof x->clock);
  if (!rc) g->next_graph = graphs, graphs = g;
  pthread_mutex_unlock(&sim.mu);
  if (rc) free(g);
  return rc;
}

/* sim.mu held; x began the capture. Every member leaves it, and the graph is the
 * caller's unless the capture broke or left work on another stream unjoined. */
static CUresult close_capture(struct CUstream_st *x, CUgraph *out) {
  struct CUgraph_st *g = x->graph;
  bool unjoined = false;
  for (struct CUstream_st *y = sim_streams(); y; y = y->next_stream) {
    if (!y->capturing || y->graph != g) continue;
    unjoined |= x->clock[y->member] < g->work[y->member];
    y->capturing = false, y->graph = NULL;
  }
  g->open = false;
  CUresult rc = g->invalidated ? CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
                : unjoined     ? CUDA_ERROR_STREAM_CAPTURE_UNJOINED
                               : CUDA_SUCCESS;
  if (rc) free_list(g->head), g->head = g->tail = NULL;
  *out = rc ? NULL : g;
  return rc;
}

static CUresult end(CUstream s, CUgraph *out, bool ptsz) {
  CUresult rc = sim_ctx_check();
  if (rc) return rc;
  if (!sim_stream_valid(s)) return CUDA_ERROR_INVALID_HANDLE;
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  struct CUstream_st *x = sim_stream(s, ptsz);
  pthread_mutex_lock(&sim.mu);
  if (!x->capturing) rc = CUDA_ERROR_ILLEGAL_STATE;
  else if (x->member) rc = CUDA_ERROR_STREAM_CAPTURE_UNMATCHED, x->graph->invalidated = true;
  else rc = close_capture(x, out);
  pthread_mutex_unlock(&sim.mu);
  return rc;
}

SIM_EXPORT CUresult cuStreamBeginCapture(CUstream s) { SIM_CALLED(); return begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL, false); }
SIM_EXPORT CUresult cuStreamBeginCapture_ptsz(CUstream s) { SIM_CALLED(); return begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL, true); }
SIM_EXPORT CUresult cuStreamBeginCapture_v2(CUstream s, CUstreamCaptureMode m) { SIM_CALLED(); return begin(s, m, false); }
SIM_EXPORT CUresult cuStreamBeginCapture_v2_ptsz(CUstream s, CUstreamCaptureMode m) { SIM_CALLED(); return begin(s, m, true); }
SIM_EXPORT CUresult cuStreamEndCapture(CUstream s, CUgraph *g) { SIM_CALLED(); return end(s, g, false); }
SIM_EXPORT CUresult cuStreamEndCapture_ptsz(CUstream s, CUgraph *g) { SIM_CALLED(); return end(s, g, true); }

static bool graph_ok(CUgraph g) {
  struct CUgraph_st *x = graphs;
  while (x && x != g) x = x->next_graph;
  return x && x->magic == GRAPH_MAGIC;
}

static bool exec_ok(CUgraphExec e) {
  struct CUgraphExec_st *x = execs;
  while (x && x != e) x = x->next_exec;
  return x && x->magic == EXEC_MAGIC;
}

static bool append_clone(struct CUgraphExec_st *e, const sim_op_t *op) {
  sim_op_t *c = op_clone(op);
  if (!c) return false;
  if (e->tail) e->tail->next = c;
  else e->head = c;
  e->tail = c;
  return true;
}

SIM_EXPORT CUresult cuGraphInstantiateWithFlags(CUgraphExec *out, CUgraph g, unsigned long long flags) {
  SIM_CALLED();
  CUresult rc = sim_ctx_check();
  if (rc) return rc;
  if (!out || flags) return CUDA_ERROR_INVALID_VALUE;
  struct CUgraphExec_st *e = calloc(1, sizeof *e);
  if (!e) return CUDA_ERROR_OUT_OF_MEMORY;
  e->magic = EXEC_MAGIC;
  pthread_mutex_lock(&sim.mu);
  if (!graph_ok(g)) rc = CUDA_ERROR_INVALID_VALUE;
  for (const sim_op_t *op = rc ? NULL : g->head; op && !rc; op = op->next)
    if (!append_clone(e, op)) rc = CUDA_ERROR_OUT_OF_MEMORY;
  if (!rc) e->next_exec = execs, execs = e, *out = e;
  pthread_mutex_unlock(&sim.mu);
  if (rc) free_list(e->head), free(e);
  return rc;
}

static CUresult launch(CUgraphExec e, CUstream s, bool ptsz) {
  CUresult rc = sim_ctx_check();
  if (rc) return rc;
  if (!sim_stream_valid(s)) return CUDA_ERROR_INVALID_HANDLE;
  struct CUstream_st *x = sim_stream(s, ptsz);
  pthread_mutex_lock(&sim.mu);
  bool ok = exec_ok(e);
  sim_op_t *copies = NULL, **tail = &copies;
  for (const sim_op_t *op = ok ? e->head : NULL; op && rc == CUDA_SUCCESS; op = op->next)
    if ((*tail = op_clone(op))) tail = &(*tail)->next;
    else rc = CUDA_ERROR_OUT_OF_MEMORY;
  pthread_mutex_unlock(&sim.mu);
  if (!ok) return CUDA_ERROR_INVALID_HANDLE;
  if (rc) return free_list(copies), rc;
  for (sim_op_t *next; copies; copies = next) next = copies->next, sim_enqueue(x, copies);
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuGraphLaunch(CUgraphExec e, CUstream s) { SIM_CALLED(); return launch(e, s, false); }
SIM_EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec e, CUstream s) { SIM_CALLED(); return launch(e, s, true); }

SIM_EXPORT CUresult cuGraphExecDestroy(CUgraphExec e) {
  SIM_CALLED();
  CUresult rc = sim_ctx_check();
  if (rc) return rc;
  pthread_mutex_lock(&sim.mu);
  if (!exec_ok(e)) rc = CUDA_ERROR_INVALID_VALUE;
  else e->magic = 0, free_list(e->head), e->head = e->tail = NULL; /* record stays listed */
  pthread_mutex_unlock(&sim.mu);
  return rc;
}

SIM_EXPORT CUresult cuGraphDestroy(CUgraph g) {
  SIM_CALLED();
  CUresult rc = sim_ctx_check();
  if (rc) return rc;
  pthread_mutex_lock(&sim.mu);
  if (!graph_ok(g)) rc = CUDA_ERROR_INVALID_VALUE;
  else g->magic = 0, free_list(g->head), g->head = g->tail = NULL;
  pthread_mutex_unlock(&sim.mu);
  return rc;
}
