/* planalloc's budget side, offline part: access traces (which buffers each kernel
 * touches, and for how long it runs) and a simulator that replays one under a device
 * memory budget, swapping buffers to host memory with a victim policy. The cross-file
 * API, by the file that defines it. Error convention: 0 on success. */
#ifndef PLANALLOC_DTR_H
#define PLANALLOC_DTR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- atrace.c: the access trace ---------------------------------------------------------
 * Buffers are numbered 0..nbuf-1, ops 0..nop-1 in program order. A buffer exists from
 * before op born[b] (allocated there, or a constant declared there) to after op
 * last[b] (freed then; nop - 1 if it outlives the trace). Op i runs ns[i] nanoseconds
 * and touches ids[first[i] .. first[i + 1]). */
typedef struct pa_atrace_s {
  size_t nbuf, nop, nids, cap_buf, cap_op, cap_ids;
  uint64_t *size;
  uint32_t *born, *last;
  uint8_t *constant; /* existed before the iteration (parameters, inputs) */
  double *ns;
  uint32_t *first;   /* nop + 1 entries */
  uint32_t *ids;
} pa_atrace_t;

/* Grows n arrays of one dimension together to hold need elements (capacity doubling
 * from 256); false without memory (nothing lost: those already grown stay valid). */
bool pa_grow_arrays(void **arrs[], const size_t *elem, int n, size_t *cap, size_t need);

void pa_atrace_init(pa_atrace_t *t);
void pa_atrace_free(pa_atrace_t *t);
/* A new buffer, existing from before the next op; its id, or UINT32_MAX without memory. */
uint32_t pa_atrace_buffer(pa_atrace_t *t, uint64_t size, bool constant);
int pa_atrace_op(pa_atrace_t *t, double ns);       /* opens the next op */
int pa_atrace_touch(pa_atrace_t *t, uint32_t buf); /* the open op touches buf (once) */
void pa_atrace_release(pa_atrace_t *t, uint32_t buf); /* freed after the last op so far */
uint64_t pa_atrace_peak(const pa_atrace_t *t);     /* the most bytes live at one op */
/* Bytes live at each op (nop + 1 entries, malloc'ed; NULL without memory): a buffer from
 * its birth to its last op, one released before its birth not at all. */
int64_t *pa_atrace_live(const pa_atrace_t *t);
double pa_atrace_compute_ns(const pa_atrace_t *t);
/* Per buffer: ops touching it, and the most ops between two of its uses (before the
 * first and after the last count too: idle while it exists). */
void pa_atrace_uses(const pa_atrace_t *t, uint32_t *uses, uint32_t *longest_idle);

/* ---- dtr_log.c: the DTR prototype's op logs (JSON lines) -------------------------------- */
int pa_dtr_log_read(const char *path, pa_atrace_t *t, char *err, size_t errlen);

/* ---- planalloc_dump.c: planalloc's own dumps (PLANALLOC_DUMP) --------------------------- */
/* The recording (*.trace.csv) and its launches (*.access.csv, with the event column):
 * each launch an op of ns_per_op nanoseconds (the dumps carry no kernel times). */
int pa_planalloc_dump_read(const char *trace, const char *access, double ns_per_op, pa_atrace_t *t, char *err,
                           size_t errlen);

/* ---- swapplan.c: a swap schedule over the whole trace ------------------------------------ */
typedef struct pa_swap_s {
  uint32_t buf;
  uint32_t out_after; /* copied out once this op has run (a use, or its birth) */
  uint32_t back_at;   /* restore issued as this op starts; UINT32_MAX: not before it dies */
  uint32_t lo, hi;    /* the ops whose resident bytes it relieves: [lo, hi] */
} pa_swap_t;
/* Chooses the swaps that bring every op's resident bytes under budget, copies at full
 * link speed (bytes_per_ns each way, latency_ns each); *swaps is malloc'ed. Ops no
 * candidate can relieve stay over: the simulator's reactive fallback meets them.
 * lead_ns: how far the host that acts on the schedule runs ahead of the device (0: not
 * at all): a buffer's restore is issued only lead_ns after the device ran its copy
 * out, when the host can see it done (its address takes new memory then). */
int pa_swap_plan(const pa_atrace_t *t, uint64_t budget, double bytes_per_ns, double latency_ns, double lead_ns,
                 pa_swap_t **swaps, size_t *n);

/* ---- policy.c: the reactive victim choice, the preload's and the simulator's -------------- */
typedef struct pa_victim_s {
  double cost;        /* bringing it back: bytes (or ns) to copy, a copy's latency included */
  double gain;        /* what its leaving frees: its bytes, or the whole pages that go */
  double idle;        /* ticks since its last use */
  uint32_t evictions; /* times it left already */
} pa_victim_t;
/* DTR's score, lower is the better victim: cost x (1 + repeat x evictions) / (gain x
 * (idle + 1)). Belady's where the next use is known: cost / (freed x (next_use + 1)). */
double pa_dtr_score(const pa_victim_t *v, double repeat);
double pa_belady_score(double cost, double freed, double next_use);
/* Scores candidate i (INFINITY: not one; one smaller than min_size bytes is none either). */
typedef double pa_score_fn(void *ctx, size_t i, double min_size);
/* The lowest-scoring of n candidates; SIZE_MAX if none. With rng and over 64 of them,
 * first the best of a random sample of max(32, sqrt(n)) no smaller than 1 % of mean_size;
 * then all of those; then all. */
size_t pa_victim_pick(size_t n, double mean_size, uint64_t *rng, pa_score_fn *score, void *ctx);

/* ---- served.c: the served phase's swap schedule, over one turn of its cycle ---------------- */
typedef struct pa_cycle_s {
  uint32_t nop;               /* launch positions in a turn */
  uint32_t nbuf, nslots;      /* buffers; the first nslots are slots, the rest live throughout */
  const uint64_t *size;       /* per buffer */
  const uint32_t *born, *gone; /* per slot: alive for positions [born, gone), wrapped when gone < born */
  const uint32_t *op_first, *used; /* the buffers position q uses: used[op_first[q] .. op_first[q + 1]) */
  double ns;                  /* each position's kernel time */
  double lead_ns;             /* the most the host may lead the device by (pa_swap_plan) */
  const uint8_t *pinned;      /* per buffer, or NULL: never leaves (a use it has may go unseen) */
} pa_cycle_t;
typedef struct pa_cycle_plan_s {
  uint32_t nop;
  uint32_t *out_at, *outs;   /* position q's buffers to copy out once it is issued: outs[out_at[q] .. out_at[q + 1]) */
  uint32_t *back_at, *backs; /* and those to bring back as it is issued */
  size_t nswaps;
  double lead_ns; /* the lead planned for: the host is to be held to it */
  uint32_t over;  /* positions still over budget, period after period, at that lead */
} pa_cycle_plan_t;
/* The swaps that keep each position's live bytes under budget (swapplan.c, over one turn),
 * for the largest lead, halving from c->lead_ns down to one position's time, at which
 * none is over (else the one with the fewest over); 0, or -1 without memory (*p empty
 * then). */
int pa_cycle_plan(const pa_cycle_t *c, uint64_t budget, double bytes_per_ns, double latency_ns, pa_cycle_plan_t *p);
void pa_cycle_plan_free(pa_cycle_plan_t *p);
/* Buffer b lives at position q: a slot over [born, gone), wrapped when gone < born; the
 * buffers after the slots throughout. */
bool pa_cycle_alive(const pa_cycle_t *c, uint32_t b, uint32_t q);

/* ---- cycle.c: the product's served phase, offline (PLANALLOC_DUMP's cycle.csv) ----------- */
typedef struct pa_cycle_file_s {
  pa_cycle_t c;          /* its arrays below */
  uint64_t page, budget; /* bytes */
  double kernel_ns, bytes_per_ns, latency_ns;
  double map_ns;         /* host time the driver's mapping calls take a page moved, out or back (0: none) */
  uint64_t *size;
  uint32_t *born, *gone, *op_first, *used, *page_of;
  uint8_t *pinned;
  size_t nused;
} pa_cycle_file_t;
/* 0, or -1 with the reason in err (a hostile file gets a line number, nothing read). */
int pa_cycle_read(const char *path, pa_cycle_file_t *f, char *err, size_t errlen);
void pa_cycle_file_free(pa_cycle_file_t *f);
typedef struct pa_cycle_replay_s {
  uint64_t bytes_out, bytes_in, misses; /* in one turn; misses: uses the schedule left away */
  double compute_ns, turn_ns;           /* slowdown = turn / compute */
  double map_ns;                        /* the turn's mapping calls on the host (turn_ns is no less) */
} pa_cycle_replay_t;
/* Follows plan p for turns turns (the last one counted) on one compute stream, device-bound,
 * and two copy streams, out and in, each in queue order; the turn takes no less than the
 * link takes its bytes, nor than the host its mapping calls (f->map_ns a page moved). */
int pa_cycle_replay(const pa_cycle_file_t *f, const pa_cycle_plan_t *p, uint32_t turns, pa_cycle_replay_t *r);
/* The schedule the product follows: pa_cycle_plan at the launches' time, and where that
 * leaves positions over budget, at PA_STRETCH_MAX, half that ... 2 times it while none is
 * over; the one replayed soonest (within 5 %: fewer bytes out), its replay in *r and the
 * factor it was planned at in *stretch (its lead_ns is the launches' own time). 0, or -1
 * without memory (*p empty then). */
#define PA_STRETCH_MAX 64
int pa_cycle_plan_best(const pa_cycle_file_t *f, pa_cycle_plan_t *p, pa_cycle_replay_t *r, double *stretch);

/* ---- sim.c: replay under a budget ------------------------------------------------------- */
/* planned: knows the trace (the served phase's view): follows a swap schedule planned
 * over the whole trace (swapplan.c: which buffer leaves after which use, and at which
 * op it is sent back for); where that is not enough, the victim is the resident used
 * again last (Belady), and evicted buffers come back ahead of their use, displacing only
 * buffers needed later than they are. */
typedef enum { PA_POL_LRU, PA_POL_LARGEST, PA_POL_DTR, PA_POL_PLANNED, PA_POL_COUNT } pa_policy_t;
extern const char *const pa_policy_names[PA_POL_COUNT];

typedef struct pa_sim_opts_s {
  uint64_t budget;     /* device bytes */
  double bytes_per_ns; /* each direction: one H2D and one D2H copy queue */
  double latency_ns;   /* per copy */
  pa_policy_t policy;
  uint32_t lookahead;  /* planned: ops ahead it prefetches for (0: 16) */
  uint64_t *out_by_buf; /* optional, nbuf entries the caller zeroed: bytes each buffer sent out */
} pa_sim_opts_t;

typedef struct pa_sim_result_s {
  uint64_t bytes_out, bytes_in, evictions, ooms, peak;
  double compute_ns, total_ns; /* slowdown = total / compute */
  double wait_out_ns, wait_in_ns; /* ops waiting for space (copy-outs) / for restores */
} pa_sim_result_t;

/* Replays t under o: before each op, the buffers it touches are made resident, evicting
 * others by the policy (copies modelled on the two queues, overlapped with compute). */
int pa_simulate(const pa_atrace_t *t, const pa_sim_opts_t *o, pa_sim_result_t *r);

#endif
