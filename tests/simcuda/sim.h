/* simcuda: a stand-in for libcuda.so.1 with the real CUDA 13 prototypes (cuda.h), so that
 * programs and interposers run unmodified on machines without a GPU. Internal API, by
 * file. Every exported driver function returns the codes the real driver documents. */
#ifndef SIMCUDA_SIM_H
#define SIMCUDA_SIM_H

#define __CUDA_API_VERSION_INTERNAL 1 /* declare every exported name (_v2, _ptds, _ptsz) */
#include <cuda.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "simcuda.h"

#define SIM_EXPORT __attribute__((visibility("default")))
#define SIM_DRIVER_VERSION 13000
#define SIM_ALIGN 256                   /* cudaMalloc's documented alignment */
#define SIM_ROUND 512                   /* consecutive cudaMalloc results are 512 B apart */
#define SIM_GRANULARITY (2u << 20)      /* VMM granularity */
#define SIM_MAX_DEVICES 8

/* An interprocess event's generations, shared by the processes that use it: any of them
 * records (recorded), and a record that ran raises done (to the highest generation ran:
 * across processes records are taken as completing in order). */
typedef struct sim_shared_event_s {
  atomic_ullong recorded, done;
} sim_shared_event_t;

/* ---- state.c: process-wide state, options, exit report ---------------------- */
typedef struct sim_state_s {
  pthread_mutex_t mu;   /* guards everything below and every stream queue */
  pthread_cond_t cv;    /* broadcast whenever any stream finishes an operation */
  bool initialized;     /* cuInit was called */
  bool forked;          /* this is a child forked after the parent used the driver */
  int ndevices;          /* SIMCUDA_DEVICES */
  uint64_t capacity;     /* each device's */
  uint64_t in_use[SIM_MAX_DEVICES], peak[SIM_MAX_DEVICES];
  bool peer[SIM_MAX_DEVICES][SIM_MAX_DEVICES]; /* [a][b]: kernels on a may use b's cuMemAlloc memory */
  uintptr_t base, size; /* reserved device range: [base, base+size) */
  uintptr_t vmm_base;   /* VMM reservations come from [vmm_base, base+size) */
  bool strict;
  bool map_sync;           /* SIMCUDA_MAP_SYNC (cost.c) */
  double copy_ns_per_byte; /* SIMCUDA_COPY_GBPS: how long a copy takes, 0: as long as memmove */
  _Atomic double memmove_ns_per_byte; /* the host's, on the last copy (stream.c) */
  atomic_ullong link_bytes, link_slow_bytes; /* copied on the link; in copies the host made slower */
  double kernel_ns;        /* SIMCUDA_KERNEL_US: how long a kernel holds its stream, 0: no time */
  uint64_t queue_depth;    /* SIMCUDA_QUEUE_DEPTH: operations a stream holds before queueing blocks, 0: no limit */
  uint64_t bad_launches, bad_unmaps, bad_peers;
  char first_bad[256], first_bad_unmap[256], first_bad_peer[256];
} sim_state_t;

extern sim_state_t sim;
/* stream.c, sim.mu held: whether record generation gen of e has run */
bool sim_event_ran(const struct CUevent_st *e, uint64_t gen);
void sim_lazy_init(void); /* reserves the range; safe to call from any entry point */
bool sim_in_device_range(uintptr_t p);
/* Do [a, a+n) and [b, b+m) share a byte? */
static inline bool sim_overlaps(uintptr_t a, size_t n, uintptr_t b, size_t m) { return a < b + m && b < a + n; }
void sim_note_bad_launch(const char *what);
void sim_note_bad_unmap(const char *what);
void sim_note_bad_peer(const char *what);
void sim_account(int device, int64_t delta); /* in_use += delta, tracking the peak; caller holds mu */

/* ---- cost.c: the driver's memory calls' host time (SIMCUDA_COSTS) ------------------ */
typedef enum { SIM_COST_CREATE, SIM_COST_MAP, SIM_COST_ACCESS, SIM_COST_UNMAP, SIM_COST_RELEASE, SIM_COST_ALLOC,
               SIM_COST_FREE, SIM_COSTS } sim_cost_t;
uint64_t sim_now_ns(void);
/* The caller, in the call since `since` (sim_now_ns at its entry), spins until the call
 * has taken units times its cost; sim.mu not held. */
void sim_charge(sim_cost_t c, size_t units, uint64_t since);
/* SIMCUDA_MAP_SYNC=1: a mapping call (map, set access, unmap) first waits for every
 * stream's queued work, as a driver whose mapping changes synchronise with the GPU would;
 * sim.mu not held. Off by default: on the H200 they did not (2026-11-28). */
void sim_map_sync(void);
/* cuMemMap, cuMemSetAccess, cuMemUnmap: one thread at a time (cost.c). begin: after the
 * call's checks, with its start (returned moved past the wait for the others); end: its
 * cost charged (units 0: refused, none) and the next may go. */
uint64_t sim_mapping_begin(uint64_t since);
void sim_mapping_end(sim_cost_t c, size_t units, uint64_t since);

/* ---- pager.c: page work off the caller's thread ------------------------------------- */
void sim_pager_fill(uintptr_t at, size_t size);    /* a copy's destination faulted in now, on the caller's thread */
void sim_pager_prefill(uintptr_t at, size_t size); /* with a link: a mapping opened, faulted in on the helper */
void sim_pager_close(int fd);                      /* a released handle's memory freed */

/* ---- calls.c: SIMCUDA_CALLS_FILE, every driver entry point's calls counted ------ */
typedef struct sim_calls_s {
  const char *name;
  atomic_ullong n;
  struct sim_calls_s *next;
} sim_calls_t;
void sim_calls_first(sim_calls_t *c); /* lists an entry point at its first call */
/* The first statement of every exported driver function (a test checks they all have it). */
#define SIM_CALLED()                                                                          \
  do {                                                                                        \
    static sim_calls_t sim_calls_ = {__func__, 0, NULL};                                      \
    if (!atomic_fetch_add_explicit(&sim_calls_.n, 1, memory_order_relaxed)) sim_calls_first(&sim_calls_); \
  } while (0)

/* ---- fault.c: SIMCUDA_FAIL ---------------------------------------------------- */
/* The code an injected fault makes this call of name return, or CUDA_SUCCESS. */
CUresult sim_fault(const char *name);

/* ---- device.c ------------------------------------------------------------- */
CUresult sim_ctx_check(void); /* initialised and a context current on this thread */
int sim_device(void);          /* the current context's device (0 when none) */
CUcontext sim_primary(int device);
bool sim_ctx_valid(CUcontext c, int *device); /* a context this driver made, and its device */

/* ---- memory.c: cuMemAlloc and friends ------------------------------------- */
/* Is [p, p+len) inside one live allocation or one accessible mapping? mu held. */
bool sim_mem_live(uintptr_t p, size_t len);
/* ... and whether kernels on device may use it: its own memory, a peer's with access
 * enabled (cuMemAlloc), a mapping cuMemSetAccess opened to it (VMM). mu held. */
bool sim_mem_reachable(uintptr_t p, size_t len, int device);
/* The cuMemAlloc block or VMM mapping holding p: its start, size and device. mu held. */
bool sim_mem_range(uintptr_t p, uintptr_t *start, size_t *size, int *device);
/* The cuMemAlloc block holding p, as IPC exports it: the device memfd, the block's offset
 * there, its size and device; false for anything else (mu held). */
bool sim_mem_ipc_source(uintptr_t p, int *fd, uint64_t *offset, size_t *size, int *device);

/* stream.c: an event over an interprocess page (ipc.c opens another process's) */
CUevent sim_event_over(sim_shared_event_t *page, int fd);
int sim_event_page_fd(CUevent e); /* its page's memfd, or -1 (not interprocess) */

/* ---- ipc.c: memory another process exported, mapped here ----------------------- */
bool sim_ipc_range(uintptr_t p, size_t len, uintptr_t *start, size_t *size, int *device); /* mu held */
void sim_mem_release_now(uintptr_t p); /* frees an allocation; mu held */
bool sim_host_pinned(const void *p, size_t len); /* inside one cuMemHostAlloc block */

/* ---- vmm.c ---------------------------------------------------------------- */
bool sim_vmm_live(uintptr_t p, size_t len); /* mu held */
/* Address space of the VMM half for another use (IPC imports), PROT_NONE until mapped;
 * unreserving maps it PROT_NONE again. 0 when none is free. mu not held. */
uintptr_t sim_vmm_reserve(size_t len);
void sim_vmm_unreserve(uintptr_t at, size_t len);
bool sim_vmm_reachable(uintptr_t p, size_t len, int device); /* mu held */
bool sim_vmm_range(uintptr_t p, uintptr_t *start, size_t *size, int *device); /* mu held */

/* ---- stream.c: queues, one worker thread per stream ------------------------ */
typedef enum { OP_KERNEL, OP_COPY, OP_SET, OP_RECORD, OP_WAIT_EVENT, OP_WAIT_STREAM,
               OP_FREE, OP_HOST } sim_op_kind_t;

typedef struct sim_op_s {
  sim_op_kind_t kind;
  struct sim_op_s *next;
  double queued_ns; /* when it was queued (SIMCUDA_KERNEL_US only) */
  union {
    struct { struct sim_func_s *f; simcu_launch_t launch; unsigned char *argbuf; int device; } kernel;
    struct { void *dst; const void *src; size_t n; void *staging; } copy;
    struct { void *dst; uint32_t value; unsigned width; size_t count; } set;
    struct { struct CUevent_st *e; uint64_t gen; } event;
    struct { struct CUstream_st *s; uint64_t seq; } stream;
    struct { uintptr_t p; } free;
    struct { CUhostFn fn; void *data; } host;
  } u;
} sim_op_t;

#define SIM_CAPTURE_STREAMS 8 /* streams one capture may span, joined by event waits */

struct CUstream_st {
  uint32_t magic;
  unsigned flags;          /* CU_STREAM_NON_BLOCKING or default */
  bool legacy;             /* a device's legacy default stream */
  int device;              /* whose: the context current at its creation */
  pthread_t worker;
  sim_op_t *head, *tail;
  uint64_t enqueued, done; /* operations */
  double busy_until;       /* SIMCUDA_KERNEL_US: when its last kernel ends (its worker's own) */
  bool stop, capturing;      /* stream capture (graph.c) */
  struct CUgraph_st *graph;          /* what the capture recorded so far, its mode */
  unsigned member;                   /* its index in that capture; 0 began it */
  uint32_t clock[SIM_CAPTURE_STREAMS]; /* per member, the captured work it is ordered after */
  struct CUstream_st *next_stream;
  unsigned number; /* made so many streams after the first (SIMCUDA_TIMELINE) */
};

struct CUevent_st {
  uint32_t magic;
  struct CUevent_st *next_event; /* registry: a handle is valid only if listed */
  unsigned flags;
  int device;                   /* its context's: records only on that device's streams */
  uint64_t recorded;            /* generations: one per cuEventRecord */
  const void *captured;         /* the capture its last record went into; NULL: outside any */
  uint32_t clock[SIM_CAPTURE_STREAMS]; /* that record's stream's clock */
  /* Records on different streams complete in any order, and a wait is for its own
   * record only: every generation <= completed ran, and those in above ran past it. */
  uint64_t completed;
  uint64_t *above;
  size_t nabove, cap_above;
  double time;                  /* when the last recorded generation completed */
  struct sim_shared_event_s *shared; /* CU_EVENT_INTERPROCESS: the generations, in a page */
  int shared_fd;                     /* both processes map (ipc.c), its memfd; NULL, -1 */
};


#define SIM_STREAM_MAGIC 0x5354524du
#define SIM_EVENT_MAGIC 0x45564e54u

/* ---- timeline.c: SIMCUDA_TIMELINE, what each stream ran and when ---------------- */
void sim_timeline_note(const struct CUstream_st *s, const sim_op_t *op, double start_ns, double end_ns);

/* Resolves a CUstream argument: NULL and CU_STREAM_LEGACY mean the legacy default stream,
 * CU_STREAM_PER_THREAD (and NULL when per_thread) this thread's default stream. */
struct CUstream_st *sim_stream(CUstream s, bool per_thread);
bool sim_stream_valid(CUstream s);
struct CUstream_st *sim_streams(void); /* every stream ever created; caller holds sim.mu */
/* Queues op on s (after the implicit legacy-stream ordering); mu taken inside. */
void sim_enqueue(struct CUstream_st *s, sim_op_t *op);
sim_op_t *sim_op_new(sim_op_kind_t kind);
void sim_stream_sync(struct CUstream_st *s); /* waits for everything queued so far */
/* Work queued or running on some stream that touches [p, p+len): kernels by their pointer
 * parameters, copies and memsets by their ranges; what gets which (mu held). */
bool sim_queued_touches(uintptr_t p, size_t len, char *what, size_t n);
void sim_device_sync(void);                  /* waits for every stream */
bool sim_device_busy(void);                  /* some stream has work queued or running; mu not held */
void sim_ctx_sync(int device);               /* waits for device's streams */

/* ---- graph.c: stream capture and graphs ------------------------------------- */
/* Under sim.mu: a capturing stream records op instead of running it (true). */
bool sim_capture_take(struct CUstream_st *s, sim_op_t *op);
/* A potentially unsafe call (allocation, synchronisation) while a stream captures in
 * global mode, or in thread-local mode begun by the calling thread: invalidates those
 * captures and returns true (the call then fails with
 * CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, as on CUDA). Takes sim.mu. */
bool sim_capture_forbids(void);
/* Under sim.mu, for cuStreamWaitEvent(x, e): the outcome for the capture, if any. A
 * capture may wait for its own records (or an external event); a stream outside any
 * capture that waits for a record of an open one joins that capture. */
CUresult sim_capture_wait(struct CUstream_st *x, struct CUevent_st *e, unsigned flags);
void sim_capture_record(struct CUstream_st *x, struct CUevent_st *e); /* sim.mu held */
bool sim_capture_invalid(const struct CUstream_st *x);                 /* sim.mu held */
void sim_op_free(sim_op_t *op);

/* ---- launch.c: kernels --------------------------------------------------------- */
#define SIM_FUNC_MAGIC 0x46554e43u
#define SIM_KERNEL_MAGIC 0x4b45524eu
typedef struct sim_func_s {
  uint32_t magic;
  struct sim_func_s *next_func; /* registry: a handle is valid only if listed */
  char name[64];
  simcu_kernel_fn fn;
  unsigned nparams;
  size_t offset[SIMCU_MAX_PARAMS], size[SIMCU_MAX_PARAMS], argsize;
  struct sim_func_s *kernel; /* the CUkernel twin of this function */
} sim_func_t;

void sim_run_kernel(sim_op_t *op); /* on a worker: check pointers, then run */
/* A pointer parameter of a launched kernel into [p, p+len): true, its index and value. */
bool sim_kernel_points_into(const sim_op_t *op, uintptr_t p, size_t len, unsigned *param,
                            uint64_t *value);
CUresult simcuRegisterKernel(CUfunction *func, CUkernel *kernel, const char *name,
                             simcu_kernel_fn fn, unsigned nparams, const size_t *sizes);

#endif
