/* planalloc's preload: the internal API, listed by the file that defines it (mimalloc's
 * internal.h). Everything is hidden (-fvisibility=hidden); only CUDA names and dlsym
 * will be exported. Error convention: 0 on success. */
#ifndef PLANALLOC_PA_H
#define PLANALLOC_PA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---- options.c: one table of every PLANALLOC_* setting ---------------------------
 * X(NAME, type, default, min, max, doc): the table generates the struct below, the
 * parser, the effective-configuration print and the README table, so they cannot drift.
 * Types: BOOL (1/true/yes/on, 0/false/no/off), INT (min..max), SECONDS (min..max),
 * ENUM (default and choices in the doc's "a|b|c" prefix), ALGO (a planner algorithm),
 * PATH (any string), NAMES (comma-separated), SIZE (bytes with K/M/G/T[iB], or N% of the device). */
#define PA_OPTIONS(X)                                                                    \
  X(MODE, ENUM, "auto", 0, 0, "auto|record|off: plan and serve, only record, or pass "    \
                              "everything through untouched")                              \
  X(FREE, ENUM, "ordered", 0, 0, "ordered|sync: a free never makes the host wait, reuse is " \
                                 "ordered on the device; sync: the host waits for the device " \
                                 "as cudaFree does (for a program that frees to synchronise)") \
  X(WARMUP, INT, "2", 1, 100, "iterations that must repeat before a plan is served " \
                              "(without a budget the last half seen, where the ones "     \
                              "before it freed all they made)")                          \
  X(ALGO, ALGO, "best", 0, 0, "the planner algorithm (see planalloc-plan --help)")        \
  X(PLAN_TIME, SECONDS, "10", 0, 600, "seconds the planner may search at most for a better " \
                                      "layout where its quick heuristics, run in the "          \
                                      "allocating thread, end over a page above the larger of " \
                                      "max-live + 0.5 % and its pages (0.1 % above max-live "   \
                                      "under a budget; on a thread "                            \
                                      "of its own, for two of the program's iterations at "     \
                                      "most without a budget; best fit serves meanwhile); "     \
                                      "0: the heuristics only, in the allocating thread")       \
  X(ANCHOR, BOOL, "on", 0, 0, "lay the program's first plan out a second time from the pool's " \
                              "start around the buffers older than its iteration, and serve "   \
                              "that layout where it maps fewer pages; off: the plan beside "    \
                              "them only")                                                       \
  X(DUMP, PATH, "", 0, 0, "directory for dumps (trace, callsites, plan, access trace, "   \
                         "stats, timeline); empty: none")                                  \
  X(EVENTS, BOOL, "off", 0, 0, "with PLANALLOC_DUMP, log every allocation, free and launch as " \
                               "it happens, with what planalloc did (events.csv: planalloc "   \
                               "report shows where the program left its plan; event_replay "  \
                               "replays it)")                                                  \
  X(VERBOSE, BOOL, "off", 0, 0, "print the effective configuration and planning events")  \
  X(STATS, BOOL, "off", 0, 0, "print the statistics table at exit")                        \
  X(BUDGET, SIZE, "0", 0, 0, "device memory planalloc may map; past it, buffers move to "   \
                             "pinned host memory and come back at the same address before " \
                             "their next use; 0: no budget")                                \
  X(POISON, BOOL, "off", 0, 0, "under a budget, fill what leaves the device with garbage "  \
                               "first, so that an access planalloc missed changes results") \
  X(EVICT_FRAG, BOOL, "off", 0, 0, "victim score gains the whole pages an eviction frees " \
                                   "(MegEngine's free-neighbour term); off: the buffer's size "  \
                                   "(off moved less in dtr/BENCHMARKS.md)")                      \
  X(EVICT_REPEAT, INT, "10", 0, 1000, "percent added to a victim's score per earlier "      \
                                      "eviction of it")                                     \
  X(EVICT_SAMPLE, BOOL, "on", 0, 0, "score a random sample of sqrt(N) (at least 32) live "  \
                                    "buffers, not all N")                                    \
  X(EVICT_PLANNED, BOOL, "on", 0, 0, "in the served phase, victims by their next use in the " \
                                     "recorded iteration (Belady), every buffer scored; off: "   \
                                     "the reactive score throughout")                            \
  X(SWAP_SCHEDULE, BOOL, "on", 0, 0, "under a budget, the served phase follows the swap "       \
                                     "schedule dtr/ plans in pages from the recording (copies out " \
                                     "after a page's use, back before its next); off: victims by "  \
                                     "next use (Belady), chosen as launches need them")              \
  X(LINK_GBPS, INT, "25", 1, 10000, "under a budget, the host link's speed each way in GB/s, "  \
                                     "which the served phase's swap schedule times its copies "   \
                                     "by; unset: what the recording's copies measured (55 on an " \
                                     "H200), else 25 (PCIe 4.0 x16)")                             \
  X(PAGE_MAP_NS, INT, "37100", 0, 999999, "under a budget, the host time in ns the driver's " \
                                            "mapping calls take a page moved out or back (an "  \
                                            "unmap, a map, an access grant: 37100 on an H200), " \
                                            "which the swap schedule's forecast and choice charge") \
  X(KEEP_MAPPED, BOOL, "on", 0, 0, "under a budget, a page whose handle went to another keeps " \
                                    "its address mapped to it and comes back into it, when it is " \
                                    "free again, with no mapping call (and no copy where nobody " \
                                    "wrote it meanwhile); off: unmapped, so that an access "       \
                                    "planalloc missed faults")                                      \
  X(PREFETCH, INT, "4", 0, 64, "in the served phase, launches ahead whose evicted buffers " \
                              "come back as soon as free pages allow (never evicting for " \
                              "it); 0: each at the launch that needs it")                    \
  X(LEAD, INT, "32", 0, 4096, "under a budget, the most launches the host may run ahead of " \
                              "the device while the swap schedule serves (a page wanted "    \
                              "back within the lead waits for its copy out): the schedule "  \
                              "halves it until every launch fits; 0: unbounded, none "      \
                              "planned for")                                                   \
  X(MOVER, ENUM, "off", 0, 0, "on|moves|off: under a budget, a thread of planalloc's own "  \
                              "moves what the swap schedule sends out and brings back after " \
                              "each launch, and maps the pages of the next launches' births; " \
                              "moves: not the births; off: all on the program's threads (the "  \
                              "H200 maps on one thread at a time, and the program waited for " \
                              "the mover as long as it saved: GPT at half 2.02x either way)")    \
  X(PASS_MODULES, NAMES, "", 0, 0, "libraries whose own allocations go to the driver untouched, " \
                                    "comma-separated, each a file name up to its version suffix " \
                                    "(libcuda names libcuda.so.1, not libcudart.so.13; libnccl " \
                                    "and libsimccl always pass: they share buffers by CUDA IPC, " \
                                    "which the pool cannot)")

typedef enum { PA_TYPE_BOOL, PA_TYPE_INT, PA_TYPE_SECONDS, PA_TYPE_ENUM, PA_TYPE_ALGO,
               PA_TYPE_PATH, PA_TYPE_NAMES, PA_TYPE_SIZE } pa_opt_type_t;

typedef enum {
#define PA_OPT_ID(name, type, def, min, max, doc) PA_OPT_##name,
  PA_OPTIONS(PA_OPT_ID)
#undef PA_OPT_ID
  PA_OPT_COUNT
} pa_opt_id_t;

/* The longest PLANALLOC_DUMP: its dumps' names fit a 512-byte path. */
#define PA_PATH_MAX 400
#define PA_STR_(x) #x
#define PA_STR(x) PA_STR_(x)

typedef struct pa_opt_value_s {
  int64_t i;         /* BOOL, INT, ENUM (index of the choice), SIZE (bytes) */
  double seconds;    /* SECONDS */
  double percent;    /* SIZE given as N%: resolved against the device later; else 0 */
  const char *text;  /* ALGO, PATH, NAMES: the default, or the environment's own string
                      * (libc never frees those; a list of libraries may be long) */
  bool from_env;
} pa_opt_value_t;

typedef struct pa_options_s {
  pa_opt_value_t v[PA_OPT_COUNT];
} pa_options_t;

/* Parses env (an environ-style array; NULL-terminated). Bad values and unknown
 * PLANALLOC_* keys are reported through pa_warn and fall back to defaults. */
void pa_options_parse(pa_options_t *o, char *const *env);
/* The value as text: "auto", "2", "4GiB", "60%" ... */
void pa_option_format(const pa_options_t *o, pa_opt_id_t id, char *buf, size_t len);
void pa_options_print(const pa_options_t *o); /* the effective configuration, one per line */
/* NULL where value is good for the option (PLANALLOC_NAME), else what it should be. */
const char *pa_option_check(const char *name, const char *value);
void pa_options_markdown(FILE *f);           /* the README's option table */
/* "4GiB", "512M", "1073741824" -> bytes; "60%" -> *percent = 60. false if malformed. */
bool pa_parse_size(const char *s, int64_t *bytes, double *percent);
bool pa_parse_bool(const char *s, bool *out);

/* ---- log.c: the one output path ------------------------------------------------------ */
/* "planalloc: ", "planalloc: warning: ", "planalloc: error: " + message + newline, written
 * with one write(2) from a stack buffer: no allocation, usable before main and after
 * exit starts. A nested call from inside a message is dropped. */
void pa_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void pa_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void pa_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Test seam: where messages go (default: stderr's file descriptor). */
extern int pa_log_fd;

/* ---- grow.c: growable arrays, and the search of sorted ones ----------------------------- */
/* Makes *arr (elements of elem bytes; arr points at the pointer) hold at least need
 * elements, doubling *cap from 1024; false above limit elements or without memory, and
 * then *arr and *cap are as they were. */
bool pa_grow(void *arr, size_t *cap, size_t need, size_t elem, size_t limit);
/* The first index in [lo, hi) of ascending a whose element is not below key; hi if none. */
uint32_t pa_lower_u32(const uint32_t *a, uint32_t lo, uint32_t hi, uint64_t key);
int pa_cmp_u32(const void *x, const void *y); /* qsort's order of uint32_t */

/* ===== the interposer ===================================================================== */
#include "gpu.h"

#include <string.h>

/* uthash's hash for the preload's tables, whose keys are all one 8-byte word (pointers,
 * handles, tokens): a multiply instead of Jenkins' byte loop on the hot paths. Define
 * HASH_FUNCTION as PA_HASH_WORD before including uthash.h. */
static inline unsigned pa_hash_word(const void *key) {
  uint64_t v;
  memcpy(&v, key, sizeof v);
  return (unsigned)((v * 0x9e3779b97f4a7c15ull) >> 32);
}
#define PA_HASH_WORD(key, len, hashv) ((void)(len), (hashv) = pa_hash_word(key))

/* A 64-bit finalizer (MurmurHash3's): the recording's tokens and callsite hashes. */
static inline uint64_t pa_mix64(uint64_t h) {
  h ^= h >> 33, h *= 0xff51afd7ed558ccdull, h ^= h >> 33, h *= 0xc4ceb9fe1a85ec53ull;
  return h ^ (h >> 33);
}

#include <pthread.h>
#include <stdatomic.h>

/* Thread-locals in the initial-exec model: one load off the thread pointer instead of a
 * __tls_get_addr call per access (6 % of a served alloc+free pair). The preload is
 * loaded with the program, where glibc's static TLS has room for these few words; a
 * late dlopen of it could fail to load, which a preload never is. */
#define PA_TLS __thread __attribute__((tls_model("initial-exec")))

/* Several devices: each device below PA_DEVICES has a planalloc of its own (pool,
 * recording, plan, budget, fence, stats). Every file's state is an array of them, one a
 * device, and the calling thread's slot picks this call's: the hooks set it from the
 * device the call works on (devices.c), and it holds for everything the call does.
 * Devices from PA_DEVICES on share the last slot, which never makes a pool: their work
 * passes through. A file declares its state `static T PA_PER_DEVICE(x);`, then
 * `PA_BIND(x)` and `#define x PA_THIS(x)`: x is read through a thread-local pointer to
 * the slot's element, which pa_slot_set moves (an index read and multiplied at every
 * access cost the served alloc+free pair 10 ns; the pointer is one load). */
#define PA_DEVICES 8
#define PA_SLOTS (PA_DEVICES + 1)
extern PA_TLS int pa_slot; /* init.c; 0..PA_DEVICES: read it, set it by pa_slot_set */
void pa_slot_switch(int slot); /* init.c: every file's pointers moved to slot */
static inline void pa_slot_set(int slot) {
  if (slot != pa_slot) pa_slot_switch(slot);
}
typedef void (*pa_rebind_fn)(int slot);
#define PA_PER_DEVICE(name) name##_per_device[PA_SLOTS]
/* State other files read through name##_here (declared extern in this header; name may
 * already be their macro, so it is only pasted here, never passed on), with its rebind
 * function in the section pa_rebind that pa_slot_switch walks (no constructor, no call
 * edge: the files stay below init.c)... */
#define PA_BIND_SHARED(name)                                                              \
  PA_TLS __typeof__(name##_per_device[0]) *name##_here = &name##_per_device[0];           \
  static void name##_rebind(int slot) { name##_here = &name##_per_device[slot]; }           \
  __attribute__((used, section("pa_rebind"))) static const pa_rebind_fn name##_rebind_entry = name##_rebind;
/* ... and a file's own, bound before its #define. */
#define PA_BIND(name) static PA_BIND_SHARED(name)
#define PA_THIS(name) (*name##_here)

/* ---- init.c: lazy, once; the options; re-entrancy ------------------------------------- */
enum { PA_MODE_AUTO, PA_MODE_RECORD, PA_MODE_OFF }; /* PLANALLOC_MODE's choices, in order */
enum { PA_FREE_ORDERED, PA_FREE_SYNC };            /* PLANALLOC_FREE's */
enum { PA_MOVER_ON, PA_MOVER_MOVES, PA_MOVER_OFF }; /* PLANALLOC_MOVER's */
extern pa_options_t pa_opt;
/* Options parsed (once), mode not off, not a forked child. */
bool pa_enabled(void);
/* pa_enabled, the program's driver bound, and not inside planalloc: planalloc acts.
 * Two atomic loads after the first call. */
bool pa_active(void);
bool pa_started(void); /* pa_enabled's answer was yes (no init of its own: for the exit) */
/* Calls made while > 0 (from planalloc itself) go straight to the real driver. */
extern PA_TLS int pa_depth;
extern pthread_mutex_t pa_mu; /* the allocator state; never held across a driver call */

/* ---- waits.c: every host wait planalloc makes, counted and timed by why ------------------- */
typedef enum {
  PA_WAIT_FREE,  /* PLANALLOC_FREE=sync: a free waits for the device, as cuMemFree does */
  PA_WAIT_PAGE,  /* a page's address unmapped while work the program freed there may run */
  PA_WAIT_COPY,  /* the budget: a copy wanted at once, pageable blocks, too many streams */
  PA_WAIT_ORDER, /* a stream that no event can order (see fence.c) */
  PA_WAIT_STALLS, /* the kinds above stall the program; the one below does not */
  PA_WAIT_PACE = PA_WAIT_STALLS, /* pace.c: the host held to the swap schedule's lead, that many launches queued */
  PA_WAIT_MOVER, /* mover.c: a launch whose buffers are away waits for the moves queued before it */
  PA_WAIT_KINDS
} pa_wait_why_t;
int pa_wait_device(pa_wait_why_t why); /* cuCtxSynchronize */
int pa_wait_stream(CUstream s, pa_wait_why_t why);
int pa_wait_context(CUcontext c, pa_wait_why_t why); /* another context's work (devices.c) */
int pa_wait_event(CUevent e, pa_wait_why_t why);
uint64_t pa_wait_begin(void);                      /* for a call that waits by itself ... */
void pa_wait_end(pa_wait_why_t why, uint64_t since); /* ... counted once it returns */
uint64_t pa_waits(pa_wait_why_t why);
uint64_t pa_waits_us(pa_wait_why_t why);
uint64_t pa_waits_all(bool us); /* every stalling kind: how many, or their microseconds */
/* alloc.c says when a plan starts and stops serving: waits then are the served phase's,
 * which the budget promises to make none of (the stats count them apart). */
void pa_waits_served(bool on);
uint64_t pa_waits_in_served(bool us);
/* Host time the served phase spends where no wait is counted: in the driver's launch
 * calls (a full launch queue behind a device stalled on copies blocks there), in the
 * launch hook's own work before them (under a budget: evictions, restores), in
 * planalloc's mapping calls (a call that waits for the device). Timed with
 * PLANALLOC_STATS or PLANALLOC_DUMP only: start gives 0 otherwise, and a lap of 0 adds
 * nothing; a lap returns its end, the next lap's start. */
/* MOVER: mapping calls on the mover; DONE: after a launch; BIRTH: an allocation mapping
 * its pages (mapping calls included) */
typedef enum { PA_HT_LAUNCH, PA_HT_HOOK, PA_HT_MAP, PA_HT_MOVER, PA_HT_DONE, PA_HT_BIRTH, PA_HT_KINDS } pa_htime_t;
uint64_t pa_htime_start(void);
uint64_t pa_htime_lap(pa_htime_t kind, uint64_t since);
uint64_t pa_htime_us(pa_htime_t kind);
void pa_htime_mover(void); /* the calling thread is a mover: its mapping calls count as PA_HT_MOVER */

/* ---- pool.c: reserved address space, physical pages mapped on demand ------------------ */
/* (swap.c) Copies run on two streams, out and in, each in order; a copy's number (gen)
 * says its direction. pa_copies_t: a number per direction (its latest or done; 0: none). */
enum { PA_COPY_OUT, PA_COPY_IN };
typedef struct pa_copies_s {
  uint64_t dir[2];
} pa_copies_t;
/* Why a page in the served phase was mapped anew, not back into the handle its address
 * kept: its colour's handle (hues.c) was ... */
typedef enum {
  PA_REMAP_NO_HUE,  /* none: the page has no colour */
  PA_REMAP_UNBOUND, /* none yet: no page of its colour held one since the colouring */
  PA_REMAP_ADDRESS, /* its to take, but its address was mapped to another handle, or none */
  PA_REMAP_LIVE,    /* held by a page with live buffers (the program's stays and the plan's differ) */
  PA_REMAP_IDLE,    /* held by an idle page whose freed work was not known done, or wanted soon */
  PA_REMAP_AWAY,    /* on its way: its page leaving, or spare behind a copy */
  PA_REMAP_COUNT
} pa_remap_t;
typedef struct pa_pool_stats_s {
  size_t page, pages_peak, served_pages_peak, maps, unmaps, released, pages_ahead, pages_reclaimed, pages_drained, pages_deferred;
  size_t served_maps, served_unmaps; /* while a plan served whole periods */
  size_t calls, served_calls;        /* the driver's memory calls: over the run, while a plan served */
  size_t map_calls;                  /* ... of them cuMemMap, cuMemSetAccess, cuMemUnmap (one a run) */
  size_t first_calls;                /* ... of those, each page's first map and opening */
  size_t served_map_calls, served_moved; /* while a plan served: those, and the pages moved out or back */
  size_t rejoined;                   /* pages back into the handle their address kept (no mapping call) */
  size_t remaps[PA_REMAP_COUNT];     /* served: the pages mapped anew, by why (pa_remap_t) */
  size_t premapped;                  /* idle pages mapped ahead of their births (pa_pool_premap) */
  size_t idle_taken;                 /* idle pages whose handle another page took */
} pa_pool_stats_t;
/* Reserves the address space once (pa_mu not held). false: no pool, pass through. */
bool pa_pool_init(void);
CUdeviceptr pa_pool_base(void);
size_t pa_pool_size(void);
size_t pa_pool_page(void); /* the physical granularity (2 MiB) */
bool pa_pool_contains(CUdeviceptr p); /* in this device's pool */
int pa_pool_find(CUdeviceptr p);      /* the device whose pool holds p, or -1 (any thread) */
bool pa_pool_any(void);               /* some device has a pool */
/* Counts a use of [off, off+size)'s pages (pa_mu held); true if all are mapped already. */
bool pa_pool_acquire(uint64_t off, uint64_t size);
/* pa_mu held: how many of [off, off+size)'s pages a use would map (0 without a pool). */
size_t pa_pool_unmapped(uint64_t off, uint64_t size);
bool pa_pool_grant(CUdevice dev); /* another device may use the pool's pages (devices.c) */
CUdevice pa_pool_device(void);   /* the device it serves */
/* pa_mu held: the latest copies their memory waits for (as pa_pool_map's). */
pa_copies_t pa_pool_restored(uint64_t off, uint64_t size);
/* Maps [off, off+size)'s pages, restoring EVICTED ones; *restored is raised to the
 * latest copies among them (swap.c), which the caller waits for
 * while it may run: one this call queued, or one queued for another stream or thread.
 * Under a budget, PA_POOL_FULL when a page needs a victim's eviction first (the pool
 * does not choose victims: budget.c does, and calls again from stop->at, the page
 * refused: the pages before it stay mapped, and mapping them again would take back what
 * the eviction just sent out); stop->want: the pages still to map. */
#define PA_POOL_FULL (-1)
typedef struct pa_pool_stop_s {
  uint64_t at; /* pool offset of the page refused */
  size_t want;
  /* In: an idle page that pa_pool_wanted expects born on again in (spare_from,
   * spare_until], its freed work maybe still queued, gives no handle (none: until 0): the
   * allocation there would wait for that work. Out: spared, one was refused so. */
  uint64_t spare_from, spare_until;
  bool spared;
} pa_pool_stop_t;
int pa_pool_map(uint64_t off, uint64_t size, pa_copies_t *restored, pa_pool_stop_t *stop);
void pa_pool_release(uint64_t off, uint64_t size); /* pa_mu held */
/* pa_mu held, after a release: when the budget expects [off, off+size)'s idle pages born
 * on again (any clock that grows; later is a better page to take a handle from). */
void pa_pool_wanted(uint64_t off, uint64_t size, uint64_t when);
/* pa_mu held: the served swap schedule's handle colours (hues.c; NULL: none), copied,
 * and the position in its turn the next launch has (budget.c's clock). A page takes its
 * colour's handle where it is free. */
typedef struct pa_hues_s pa_hues_t;
void pa_pool_hues(const pa_hues_t *hs);
void pa_pool_position(uint64_t pos);
/* Pins [off, off+size)'s pages (the served plan's range; size 0: none), pa_mu held:
 * mapped once, they stay mapped, since every period uses them again. */
void pa_pool_pin(uint64_t off, uint64_t size);
/* soft (pa_mu held): a page born outside the pinned range, where no idle page or spare
 * handle is left, takes a pinned idle page's handle rather than a new one. */
void pa_pool_pin_soft(bool soft);
/* The served plan's range (size 0: none), pa_mu held: till pinned, its idle pages may
 * back other pages, but give their handles after every idle page outside it. */
void pa_pool_favour(uint64_t off, uint64_t size);
/* Gives every physical page no live buffer uses, and that is not pinned, back to the
 * driver (pa_mu not held). From then on the served-phase peak is counted. false (nothing
 * given back) while work the program freed on them may still run: try again later. */
bool pa_pool_trim(void);
void pa_pool_stats(pa_pool_stats_t *s);
/* pa_mu held: a plan served two periods: the served phase's peak and its page maps count
 * from now (its first periods took the recording's pages over) ... */
void pa_pool_serving(void);
void pa_pool_served(bool on); /* ... until it retires (false) */
size_t pa_pool_mapped(void); /* bytes of physical pages held now; any lock or none */
/* Under a budget, pa_mu held: launches and copies being issued hold their pages (they
 * cannot leave meanwhile); how many of [off, off+size)'s pages could leave now. */
void pa_pool_hold(uint64_t off, uint64_t size);
void pa_pool_unhold(uint64_t off, uint64_t size);
size_t pa_pool_evictable(uint64_t off, uint64_t size);
/* Copies out [off, off + size)'s evictable pages, max of them at most (pa_mu not
 * held), ordered after their users (users.c); how many left. Nobody waits for it: their
 * handles serve other pages at once, behind the copy. */
size_t pa_pool_evict_range(uint64_t off, uint64_t size, size_t max);
/* The live pages holding the handles that [off, off+size)'s pages that left keep their
 * addresses mapped to (at most max, as pool offsets; pa_mu held): sent out, each gives
 * its handle back to such a page with no mapping call. */
size_t pa_pool_kept_holders(uint64_t off, uint64_t size, uint64_t *at, size_t max);
/* pa_mu held: how many of [off, off+size)'s pages are on the host. */
size_t pa_pool_evicted(uint64_t off, uint64_t size);
/* pa_mu not held: brings [off, off+size)'s EVICTED pages back ahead of their use, while
 * handles come free without an eviction (whoever then maps them waits for the copy);
 * false when one did not. */
bool pa_pool_prefetch(uint64_t off, uint64_t size);
bool pa_pool_premap(uint64_t off, uint64_t size); /* pa_mu not held: a birth's pages, spare handles only */

typedef struct pa_sched_s pa_sched_t; /* schedule.c */
typedef struct pa_plan_slots_s pa_plan_slots_t; /* plan.c */

/* ---- limit.c: the budget as a limit, in pages (PLANALLOC_BUDGET) ------------------------- */
void pa_limit_init(size_t page, size_t device_bytes); /* from the pool's set-up */
bool pa_limit_on(void);
size_t pa_limit_pages(void); /* SIZE_MAX once lifted */
uint64_t pa_limit_page(void); /* the page a budget counts, 0 without one */
uint64_t pa_limit_bytes(void);
#define PA_LIMIT_WORDS 160
const char *pa_limit_words(char *buf, size_t n); /* "PLANALLOC_BUDGET=N bytes", or the lowered budget */
/* pa_mu held: the device refused a page with pages held: the limit shrinks to them;
 * false when it cannot (lifted, or no smaller). */
bool pa_limit_lower(size_t pages, int refused);
bool pa_limit_lowered(void); /* pa_mu held: since then no page goes back to the driver */
bool pa_limit_lift(void);    /* pa_mu held: no limit from now on; false if none or lifted */
bool pa_limit_lifted(void);

/* ---- users.c: the live pool buffers under a budget, and who touched them ------------------ */
#define PA_USER_STREAMS 4
typedef struct pa_user_s {
  uint64_t off, size, last_use, born; /* last_use: the touch clock; born: launches before it */
  CUstream streams[PA_USER_STREAMS];   /* those that touched it: its copy out waits for each */
  uint32_t evictions, pos;             /* pos: index in the dense list */
  uint32_t ident;                      /* budget.c's: in the served plan's schedule, or UINT32_MAX */
  uint8_t nstreams;
  bool seen, multi; /* multi: touched from more streams than listed (or a per-thread one) */
} pa_user_t;
/* pa_mu held throughout. Nodes are numbered; UINT32_MAX (PA_NIL): none. */
uint32_t pa_users_track(uint64_t off, uint64_t size); /* none without memory: untracked */
void pa_users_untrack(uint32_t n);
uint32_t pa_users_at(uint64_t x);         /* the live buffer containing pool offset x */
/* The first live buffer ending after x; for (n = first_over(lo); n != PA_NIL &&
 * node(n)->off < hi; n = next(n)) walks those overlapping [lo, hi). */
uint32_t pa_users_first_over(uint64_t x);
uint32_t pa_users_first(void);
uint32_t pa_users_next(uint32_t n);
pa_user_t *pa_users_node(uint32_t n);     /* valid until the next track */
size_t pa_users_count(void);
uint32_t pa_users_nth(size_t i);          /* the live buffers, dense, in no order */
uint64_t pa_users_live_bytes(void);
uint64_t pa_users_clock(void);
uint64_t pa_users_launches(void); /* the launches the touch clock counted */
void pa_users_tick(bool launch);          /* one tick per launch or copy */
void pa_users_touch(uint32_t n, CUstream s);
void pa_users_touch_range(uint64_t off, uint64_t size, CUstream s);
/* Never seen touched and no launch since its allocation: nothing could have written it. */
bool pa_users_fresh(const pa_user_t *b);
typedef struct pa_users_s {
  uint64_t lo, hi; /* the live bytes, first to last */
  size_t nstreams;
  bool unseen;
} pa_users_t;
#define PA_EVICT_STREAMS 8 /* users an eviction waits for one by one; more: the device */
/* Who uses [lo, hi): the live bytes as one span (first live byte to last), the streams
 * that touched them in streams[0 .. nstreams) (nstreams = max + 1 when unknown, too
 * many, or capturing: then the whole device must be waited for), and whether one of
 * them was never seen touched though launches ran since it was allocated (it must not
 * leave: a kernel may reach it through a pointer stored in device memory). One nothing
 * could have written yet holds no bytes worth a copy. */
pa_users_t pa_users_span(uint64_t lo, uint64_t hi, CUstream *streams, size_t max);

/* ---- mover.c: the budget's moves on a thread of planalloc's own ------------------------------ */
typedef struct pa_move_s {
  uint64_t off, size; /* a pool range */
} pa_move_t;
#define PA_MOVES_MAX 160 /* moves one launch queues at most (budget.c's SWAPS_MAX * 2 + AHEAD_MAX + BIRTHS_MAX) */
/* One launch's moves: the page runs out, then the buffers back in order until one finds
 * no free page (the first `backs` of them the schedule's, the rest prefetches), then the
 * births mapped ahead (spare handles only). */
typedef struct pa_moves_s {
  const pa_move_t *out;
  size_t nout;
  const pa_move_t *in;
  size_t nin, backs;
  const pa_move_t *birth;
  size_t nbirth;
} pa_moves_t;
typedef void (*pa_mover_fn)(const pa_moves_t *m);
/* pa_mu not held: queues one launch's moves for the device's mover (started at the first),
 * which passes them to move unless the program has launched more than lead times since
 * launch; false: the caller moves them itself (PLANALLOC_MOVER=off, full, no thread). */
bool pa_mover_post(const pa_moves_t *m, uint64_t launch, uint64_t lead, pa_mover_fn move);
void pa_mover_drain(void); /* pa_mu not held: waits until the moves queued so far are done */
void pa_mover_stop(void); /* at exit, before the dumps: this device's mover ends (pa_slot's) */
typedef struct pa_mover_stats_s {
  uint64_t batches, dropped, inline_batches;
} pa_mover_stats_t;
void pa_mover_stats(pa_mover_stats_t *s);

/* ---- budget.c: the policy's front: victims, the held list, the served clock ---------------- */
/* pa_mu held: a pool buffer [off, off+size) became live / is gone. */
void pa_budget_track(uint64_t off, uint64_t size, uint32_t slot); /* slot: of the served plan, or PA_PLAN_NONE */
void pa_budget_untrack(uint64_t off);
/* pa_mu held: a launch on s uses the buffer containing pool offset x (or a copy the
 * range): it is held resident until pa_budget_done. */
void pa_budget_touch(uint64_t x, CUstream s);
void pa_budget_touch_range(uint64_t off, uint64_t size, CUstream s);
void pa_budget_tick(bool launch); /* the touch clock and the served clock: one tick per launch or copy */
void pa_budget_lift(void); /* pa_mu held: a graph launch: hold everything, evict nothing more */
int pa_budget_foreign(CUstream s); /* another device's work on s may touch the pool: the same, and s waits */
bool pa_budget_holding(void);   /* this thread holds something */
/* pa_mu not held: pa_pool_map, evicting the victims it needs. */
int pa_budget_map(uint64_t off, uint64_t size, pa_copies_t *restored);
/* pa_mu not held: maps back what this thread holds; s waits for the copies on the GPU
 * (synchronous copies too: their default stream). A CUresult. */
int pa_budget_ready(CUstream s);
void pa_budget_done(void);      /* the launch or copy is issued: release the holds */
/* pa_mu held: the served plan's schedule (NULL: none, the reactive score throughout),
 * its slots, the pool offset of its range and the kernels' mean time (for the swap
 * schedule in pages; 0: unknown, none), and the period event the served clock is at. */
void pa_budget_schedule(const pa_sched_t *s, const pa_plan_slots_t *slots, uint64_t base, double kernel_ns,
                        double iter_ns); /* iter_ns: the recorded iteration, for the forecast (0: none) */
void pa_budget_at(uint64_t pos);
uint64_t pa_budget_planned_victims(void); /* victims chosen by their next use */
uint64_t pa_budget_kept_victims(void);    /* ... for the handle a wanted page kept */
uint64_t pa_budget_scheduled_outs(void);   /* page runs the swap schedule sent out */
uint64_t pa_budget_scheduled_backs(void);  /* and brought back before their launch */
uint64_t pa_budget_lead(void);             /* the served schedule's lead, launches */
uint64_t pa_budget_over(void);             /* its positions left over budget */
void pa_budget_dump_cycle(FILE *f); /* pa_mu held: the served swap schedule's turn (none: a comment) */

/* ---- swap.c: the copy streams, pinned host blocks -------------------------------------------- */
typedef struct pa_swap_page_s {
  CUdeviceptr at, lo, hi; /* the page; the bytes [lo, hi) of it that move */
  void *host;             /* a page-sized block (pa_swap_block) */
} pa_swap_page_t;
typedef struct pa_swap_stats_s {
  uint64_t pages_out, pages_in, bytes_out, bytes_in, victims, pageable, deferred;
  uint64_t served_out, served_in; /* the bytes moved while the plan installed last served */
  uint64_t served_pages_out;       /* and the pages sent out then (a page moves its buffers' span only) */
} pa_swap_stats_t;
void pa_swap_served(bool on); /* a plan serves from now on (or no longer) */
void pa_swap_served_reset(void); /* a new plan is installed: its served phase starts at 0 */
bool pa_copies_known(uint64_t gen, const pa_copies_t *done); /* gen is done by done's account (0: none, done) */
void pa_copies_note(pa_copies_t *latest, uint64_t gen);      /* raises gen's direction to it */
/* A block: pinned, else pageable; NULL without memory. *after is raised to the restore
 * that may still read it (its copy out waits for it). */
void *pa_swap_block(size_t page, pa_copies_t *after);
void pa_swap_unblock(void *host, uint64_t after); /* after: a restore still reading it, or 0 */
/* The out stream waits for the streams (nstreams > max: the whole device) and the events
 * (the frees pending on the pages; nfrees > max: the whole device). */
int pa_swap_after(const CUstream *streams, size_t nstreams, const CUevent *frees, size_t nfrees, size_t max);
/* Queued on the out stream after the in stream's copy after->dir[PA_COPY_IN] (pages out,
 * poisoned after if asked), or on the in stream after copy `after` (one page back); *gen:
 * the copy's number (0 on failure). Nothing waits for them. */
int pa_swap_out(const pa_swap_page_t *pages, size_t n, const pa_copies_t *after, uint64_t *gen);
int pa_swap_in(const pa_swap_page_t *page, uint64_t after, uint64_t *gen);
/* No copy: the out stream waits for the work the program freed on a page (the fence's and
 * the frees' events; nfrees > max: refused, nothing queued) and for copy `after`, and
 * *gen numbers that wait, for the page's handle's next users and for its unmap. */
int pa_swap_drain(const CUevent *frees, size_t nfrees, size_t max, uint64_t after, uint64_t *gen);
pa_copies_t pa_swap_completed(void);         /* each direction's copies up to these are done */
pa_copies_t pa_swap_queued(void);            /* the copies queued so far (a device sync covers them) */
void pa_swap_synced(const pa_copies_t *upto); /* a device sync saw every copy up to these done */
/* After copy gen (or a later one its way), if it may still run (0: none): stream s
 * waits, or the host. _each: s waits for each direction's. */
int pa_swap_wait(uint64_t gen, CUstream s, bool host);
int pa_swap_wait_each(const pa_copies_t *copies, CUstream s);
/* A synchronous allocation's memory still in these copies' hands: every launch after it
 * that runs now settles the debt first, on its stream. */
void pa_swap_owe(const pa_copies_t *copies);
int pa_swap_settle(CUstream s);
void pa_swap_stats(pa_swap_stats_t *s);
void pa_swap_moved(uint64_t *out, uint64_t *in); /* bytes so far; any lock or none */

/* ---- online.c: best fit over the pool's address space ---------------------------------- */
#define PA_GRAIN 256 /* cudaMalloc's alignment: every size is rounded to it */
/* A block of the address space, best fit; with a page size (a budget's), starting on a
 * page where best fit would span more pages than the size needs; without, on the pages
 * mapped already where one of the smallest blocks that fit allows. Its node id, or
 * PA_NIL when nothing fits. pa_mu held. */
uint32_t pa_online_alloc(uint64_t size, uint64_t page, uint64_t *off);
void pa_online_free(uint32_t node);
/* The used block containing offset x, PA_NIL if none (claimed space is no block). */
uint32_t pa_online_find(uint64_t x);
/* Claims: a plan's address range [lo, hi), taken out of best fit though buffers still
 * use parts of it (the intruders: their space joins the claim when they are freed). */
#define PA_MAX_CLAIMS 16
bool pa_online_claim(uint64_t lo, uint64_t hi);
void pa_online_unclaim(uint64_t lo, uint64_t hi);
size_t pa_online_intruders(void);                /* intruders in all claims */
bool pa_online_intrudes(uint64_t lo, uint64_t hi); /* an intruder overlaps [lo, hi) */
/* [lo, lo + size) of a claim's free space as a block in use there (an intruder, whose
 * space goes back to the claim when freed): its node, PA_NIL if that space is not all
 * claimed and free, or without memory. */
uint32_t pa_online_take(uint64_t lo, uint64_t size);
/* [lo, lo + size) of best fit's free space as a block in use (a plan's buffer where its
 * range is open to best fit): its node, PA_NIL if that space is not all free, or without
 * memory. */
uint32_t pa_online_reserve(uint64_t lo, uint64_t size);

/* ---- alloc.c: the allocation front: record, serve, fall back ---------------------------- */
#define PA_PASS (-1) /* not handled: the caller passes the call to the real driver */
/* A CUresult, or PA_PASS; *dptr untouched on failure. async: stream-ordered on s. */
int pa_alloc(CUdeviceptr *dptr, size_t size, CUstream s, bool async);
/* A CUresult, or PA_PASS when p is not planalloc's. async: stream-ordered free. */
int pa_free(CUdeviceptr p, CUstream stream, bool async);
/* Who the live buffer containing p is to the access trace (pa_mu held): the current
 * recording's id, or for a buffer older than the recording pa_access_old(its offset);
 * UINT32_MAX if neither. */
uint32_t pa_alloc_id_at(CUdeviceptr p);
#define PA_ACCESS_OLD 0x80000000u
static inline uint32_t pa_access_old(uint64_t off) {
  return off / PA_GRAIN < PA_ACCESS_OLD ? PA_ACCESS_OLD | (uint32_t)(off / PA_GRAIN) : UINT32_MAX;
}
bool pa_recording(void); /* pa_mu held */
size_t pa_alloc_size(CUdeviceptr p); /* the live buffer starting at p: its size, else 0 (pa_mu not held) */

/* ---- dead.c: a free's dead count, the allocations since its buffer's that are freed --------- */
#define PA_DEAD_RING (1u << 16)                     /* allocations counted back, at most */
void pa_dead_born(uint64_t nth);                     /* allocation nth (pa_mu held) */
void pa_dead_gone(uint64_t nth, uint64_t allocs);    /* its free, allocs made so far */
uint64_t pa_dead_count(uint64_t nth, uint64_t allocs); /* freed of those made after nth */
void pa_dead_reset(void);                            /* none live: each one born again */

/* ---- record.c: the event log, callsites, iteration detection ----------------------------- */
typedef struct pa_period_s pa_period_t; /* clock.c's, below */
#define PA_NO_EVENT UINT64_MAX
typedef struct pa_log_s {
  size_t nev, nalloc, cap_ev, cap_alloc;
  uint64_t *tok, *live; /* per event: its token (kind, size, callsite), the bytes live after (older buffers too) */
  uint64_t *launch;     /* per event: launches before it (the access trace's clock) */
  uint32_t *ev_id;      /* per event: the allocation it allocates or frees */
  uint8_t *ev_alloc;    /* per event: 1 allocation, 0 free */
  uint64_t *size, *alloc_pos, *free_pos; /* per allocation; free_pos PA_NO_EVENT */
  uint64_t *placed;                      /* per allocation: its pool offset */
} pa_log_t;
extern PA_TLS pa_log_t *pa_log_here; /* pa_mu held to read or write */
#define pa_log PA_THIS(pa_log)
/* Logs an allocation (pa_mu held); returns its recording id. */
uint32_t pa_record_alloc(uint64_t size, uint64_t site, uint64_t placed); /* UINT32_MAX when the log is full */
/* Logs a free; dead: its buffer's dead count (dead.c), the token. */
void pa_record_free(uint32_t id, uint64_t dead);
/* A free of a buffer made before the log began, back allocations ago: its event has the
 * token a logged buffer's free with that dead count has, and id PA_LOG_OLD | back. */
#define PA_LOG_OLD 0x80000000u
void pa_record_free_old(uint64_t back, uint64_t dead, uint64_t size);
/* A free's token: its buffer's dead count (an allocation's is its size and site,
 * record.c). */
static inline uint64_t pa_log_free_token(uint64_t dead) { return pa_mix64(dead * 2); }
uint64_t pa_record_site(uint32_t id); /* the callsite hash it was logged with (0: not taken) */
/* After an event: the detected period (events, >= min_period) or 0; *cut: the event to
 * cut after. */
uint64_t pa_record_period(uint64_t min_period, uint64_t *cut);
uint64_t pa_record_later_cut(uint64_t period, uint64_t cut); /* pa_finder_later_cut */
void pa_record_reset(void);
bool pa_record_full(void);
/* A recording beside the served plan's, from the program leaving its plan: the plan's
 * set aside (still the dump's trace); back as the log if the plan holds after all
 * (restore), dropped when it retires (go_on: the new recording is the log). */
void pa_record_aside(void);
void pa_record_restore(void);
void pa_record_go_on(void);
/* The kept plans' matcher's view of the program, every allocation and free in any phase
 * (pa_record_event: a free names its allocation's number, which it returns): the hash of
 * the last len events' codes (len PA_MATCH_LEN or PA_MATCH_SHORT; 0 while fewer came),
 * and whether they are period p's, the last at position r (frees name the allocations
 * they free, where both are among them). */
uint64_t pa_record_event(bool alloc, uint64_t size, uint64_t made);
uint64_t pa_record_recent(uint32_t len);
bool pa_record_is(const pa_period_t *p, uint32_t r, uint32_t len);
uint64_t pa_record_events(void);

/* ---- clock.c: the iteration clock: finding the period, following it -----------------------
 * Events in, decisions out: no CUDA, no lock, no state of its own (callers hold pa_mu). */
/* The finder: the recording's tokens (pa_log_t's tok, pushed as they are logged) and the
 * shortest period p >= min_period whose last `copies` (at least 2, and at least 12
 * events' worth) windows of p events are identical and leave the same bytes live, the
 * last of them possibly seen in part where `part` (PA_CLOCK_PART); 0 if none. *cut: the
 * event to cut after (the fewest bytes live). */
/* Events the repeats of a period must span at least: a short loop inside the step (an
 * optimizer's scratch alloc/free pair once per parameter group, three times running)
 * repeats too, but over a few events; planned, it leaves its plan at once. A real
 * iteration of 4 events waits for 3 repeats (24 events kept reuse_race page, 4 rounds of
 * 6 events, from any plan). Such a loop of more (8 groups: 16 events), or a period made
 * of its copies, is found only once they span as many events as came before them and it
 * did not run and stop before (clock.c's loop_inside); when its plan fails, alloc.c looks
 * no shorter than twice this again. */
#define PA_CLOCK_MIN_SPAN 12
/* A period's last copy may be seen in part: from its cut, a PA_CLOCK_PART-th of it
 * (clock.c's seen_cut), looked for PA_CLOCK_PART_TRIES times a period. A quarter was
 * fooled where steps are alike layer for layer (test_clock's warm_cache: a period from
 * the warm-up across a one-off burst); bench-lengths' rows of several lengths served as
 * much at a half (89.68 %, 89.61 at a quarter), stress-streams 85.8 % (86.5). */
#define PA_CLOCK_PART 2
#define PA_CLOCK_PART_TRIES 64
/* ... and its cut near the fewest bytes live: within a PA_CLOCK_CUT_SLACK-th of the
 * period's range of them (the hand-over to the plan happens there: ResNet-50's cut at 3.0
 * GB of its 3.1 GB peak laid its plan beside the recording's buffers, 1.0107 -> 1.0333 x
 * live). */
#define PA_CLOCK_CUT_SLACK 16
typedef struct pa_finder_s {
  uint64_t *prefix, *power, *prev_same; /* rolling hash of the tokens; per event: the last one like it */
  size_t n, cap;
  struct pa_last_s *last; /* per token: where it was last seen (uthash, clock.c) */
} pa_finder_t;
bool pa_finder_push(pa_finder_t *f, uint64_t tok); /* false without memory */
uint64_t pa_finder_period(const pa_finder_t *f, const pa_log_t *log, uint64_t min_period, uint64_t copies, bool part,
                          uint64_t *cut);
/* A cut after the given one, in the log's last period, whose two periods before it
 * repeat (a plan over two iterations needs them: the earlier cut's reach into the
 * warm-up): of those, the fewest bytes live; PA_NO_EVENT if none. */
uint64_t pa_finder_later_cut(const pa_finder_t *f, const pa_log_t *log, uint64_t p, uint64_t cut);
void pa_finder_reset(pa_finder_t *f);
void pa_finder_free(pa_finder_t *f);
/* The period as the clock follows it, from the log: per position an allocation's bytes
 * (0: a free), and its mate: an allocation's free position, a free's allocation position,
 * or PA_CLOCK_OFF (a buffer made before the period, or never freed in one). */
#define PA_CLOCK_OFF UINT32_MAX
#define PA_CLOCK_WINDOW 16 /* events ahead an event may match, and skipped ones waited for */
typedef struct pa_period_s {
  uint32_t period;
  uint64_t *size;
  uint32_t *mate;
} pa_period_t;
bool pa_period_build(pa_period_t *p, const pa_log_t *log, uint64_t period, uint64_t cut);
void pa_period_free(pa_period_t *p);
/* The kept plans' matcher: which position of a kept period the program's last
 * PA_MATCH_LEN events end at, by a rolling hash of their codes (an allocation's size, or
 * a free). A whole period of the program off its plan found the iteration it went to
 * only after two repeats; one it ran before is known from a stretch of it. The
 * stretch's length, on stress-streams' 24 irregular streams (served, divergent periods):
 * 128 68.26 %, 74; 112 68.47 %, 66; 96 68.55 %, 67; 80 68.58 %, 62; 64 65.97 %, 62 (a
 * repeated layer's events taken for a period's: matches in the wrong place). 96 is the
 * middle of what holds; torch_stream's 3 lengths: 89.84 -> 90.11 % served. */
#define PA_MATCH_LEN 96
/* A shorter stretch serves a kept plan sooner where it is the only place of all kept
 * plans' periods that it matches (a period of two like iterations: one place), and the
 * served plan's period has it nowhere (an optimizer's step over the same weights, at any
 * length: without this, stress-streams row 12 took its third length for a kept one each
 * step, 86.7 -> 42.5 % served). The other length's first step then starts on its plan,
 * not on best fit around which the plan goes intruded: torch_stream 128,256,64 (3 shapes,
 * 16 steps each) 1.1018 -> 1.0710 x live, 89.4 -> 90.2 % served; bench-lengths' 48 rows
 * of several lengths 82.5 -> 83.6 % served, 95 -> 75 divergent periods (their mapped
 * peak 1.0494 -> 1.0519 x live). */
#define PA_MATCH_SHORT 32
#define PA_MATCH_BASE 0x100000001b3ull
static inline uint64_t pa_event_code(bool alloc, uint64_t size) {
  return alloc ? pa_mix64(size * 2 + 1) : 0x9e3779b97f4a7c15ull;
}
uint64_t pa_match_power(uint32_t len); /* PA_MATCH_BASE to the len (pa_mu held) */
/* A window of len events' hash once code in came and out left (0: none left yet): the
 * kept periods' (clock.c) and the log's (record.c) alike. */
static inline uint64_t pa_match_roll(uint64_t h, uint64_t in, uint64_t out, uint32_t len) {
  return h * PA_MATCH_BASE + in - out * pa_match_power(len);
}
typedef struct pa_match_s {
  uint64_t *key; /* sorted: the hash of the window ending at pos[i] (cyclic) */
  uint32_t *pos, n;
} pa_match_t;
bool pa_match_build(pa_match_t *m, const pa_period_t *p, uint32_t len); /* len-event windows; false without memory */
/* The positions whose window hashes h, in turn: *i starts at 0; PA_CLOCK_OFF ends. */
uint32_t pa_match_next(const pa_match_t *m, uint64_t h, uint32_t *i);
void pa_match_free(pa_match_t *m);
/* A buffer's tag: the period position of its allocation at event ev, the period starting
 * at event start (the same clock), if the plan allocates its size there; else PA_CLOCK_OFF. */
uint32_t pa_period_tag(const pa_period_t *p, uint64_t ev, uint64_t start, uint64_t size);
/* Following: an allocation takes the first position expecting its size within the
 * window ahead (or one skipped lately); a free, its buffer's free position. */
typedef struct pa_clock_s {
  const pa_period_t *per;
  uint32_t pos;                   /* the next event expected */
  uint32_t nlate, bad;            /* bad: divergent periods in a row */
  bool partial;                   /* started mid-period: its first end closes no whole period */
  uint32_t late[PA_CLOCK_WINDOW]; /* positions skipped lately, oldest first */
  uint64_t misses, good, periods; /* this period's events off the plan; whole periods ended */
} pa_clock_t;
enum { PA_PERIOD_NONE, PA_PERIOD_ON_PLAN, PA_PERIOD_DIVERGENT };
typedef struct pa_tick_s {
  uint32_t at;      /* the position the event took, or PA_CLOCK_OFF (off the plan) */
  uint32_t from, n; /* the positions passed, from `from` on (wrapping), at's among them */
  int end;          /* a period ended: PA_PERIOD_ON_PLAN, or more than a tenth off it */
  bool retire;      /* the second divergent period in a row: the plan no longer holds */
  bool whole;       /* the period that ended was followed whole (not started mid-way) */
  bool late;        /* at was skipped before: on the plan, but its time has passed (its
                       slot's planned end too, maybe, and another slot holds its range) */
  uint64_t misses;  /* the ended period's events off the plan */
} pa_tick_t;
void pa_clock_start(pa_clock_t *c, const pa_period_t *p, uint32_t pos); /* the next event expected: pos */
pa_tick_t pa_clock_alloc(pa_clock_t *c, uint64_t size);
pa_tick_t pa_clock_free(pa_clock_t *c, uint32_t tag);
/* The position a clock started at log event `from` (position 0: the event after the
 * plan's cut) expects after the log's last event, having followed every event since:
 * a plan laid out on the planner's thread serves thousands of events after its cut, and
 * the logging buffers made meanwhile shifted the period. tags[j - from]: the position
 * each allocation since took (PA_CLOCK_OFF: off the period, or a free). */
uint32_t pa_clock_catch_up(const pa_period_t *p, const pa_log_t *log, uint64_t from, uint32_t *tags);

/* ---- sites.c: callsites, and where in the program they are -------------------------------- */
/* PyTorch's stacks are 12 frames to its empty_strided alone (planalloc's, cudart's, c10's,
 * at::detail's: the H100 run's dumps); the op that allocates is further out. */
#define PA_SITE_FRAMES 24
typedef struct pa_site_s {
  uint64_t hash; /* 0: not taken */
  int n;
  void *ip[PA_SITE_FRAMES];
  int py_line; /* a Python program's line (pyframe.c), or -1 */
  char py_file[160], py_func[64];
} pa_site_t;
void pa_callsite(pa_site_t *s);        /* the caller's frames and their hash (no lock) */
/* ---- pyframe.c: the Python line it came from, where the thread holds the GIL ------------------ */
void pa_pyframe(pa_site_t *s); /* its py_* set (py_line -1: none) and mixed into its hash */
void pa_site_note(const pa_site_t *s); /* keeps a new site's frames (pa_mu held) */
void pa_sites_dump(FILE *f);           /* every kept site, frame by frame (pa_mu held) */

/* ---- plan.c: from the recorded period to a served layout -------------------------------- */
typedef struct pa_plan_s pa_plan_t;
/* Builds the trace of the iteration found (events, the log cut after cut) from the log
 * (pa_mu held), over two iterations where a buffer outlives one: NULL when nothing can
 * be planned. */
pa_plan_t *pa_plan_build(uint64_t iteration, uint64_t cut);
/* The log holds what that needs: false while a plan over two iterations still lacks the
 * second (the same iteration is planned alike however late it was found: a kept plan
 * serves it again). */
bool pa_plan_ready(uint64_t iteration, uint64_t cut);
/* Lays it out with the planner (pa_mu not held: it may search for PLANALLOC_PLAN_TIME
 * seconds, or the plan's own search time). quick: heuristics of bounded summed cost only,
 * and a layout more than 0.5 % above max-live (0.1 % under a budget) and in more pages
 * than max-live's is not kept (false, the plan as it was): a later call searches. */
bool pa_plan_layout(pa_plan_t *p, bool quick);
void pa_plan_set_search(pa_plan_t *p, double seconds); /* less than PLANALLOC_PLAN_TIME (0: that) */
/* The quick layout a pa_plan_layout(p, true) left in p though not tight (its pool: 0 if
 * none): pa_plan_rough makes it the plan's (false if none, or under a budget). */
uint64_t pa_plan_rough_pool(const pa_plan_t *p);
bool pa_plan_rough_close(const pa_plan_t *p); /* a quick layout a page over good enough: it serves at once */
bool pa_plan_rough(pa_plan_t *p);
uint64_t pa_plan_set_pool(pa_plan_t *p, uint64_t pool); /* returns the pool it had: what-ifs */
bool pa_plan_paged(const pa_plan_t *p); /* its range must start on a page (a budget's layout) */
/* Placed at base: its slots of a page or more moved onto pages where the layout has room
 * (none of its slots live); returns the pages that saves. */
size_t pa_plan_snap(pa_plan_t *p, uint64_t base, uint64_t page);
void pa_plan_free(pa_plan_t *p);
int pa_plan_device(const pa_plan_t *p); /* the device it was recorded on (pa_slot) */
uint64_t pa_plan_period(const pa_plan_t *p);    /* events it serves before it starts again */
uint64_t pa_plan_iteration(const pa_plan_t *p); /* the program's iteration: the period or half of it */
uint64_t pa_plan_pool(const pa_plan_t *p);     /* bytes of address space it needs */
uint64_t pa_plan_maxlive(const pa_plan_t *p);
uint32_t pa_plan_buffers(const pa_plan_t *p);
uint64_t pa_plan_wrap_bytes(const pa_plan_t *p); /* live across the cut */
/* Serving, pa_mu held. The slot for an allocation of size at period event t, if its
 * planned range is free; else PA_PLAN_NONE. */
#define PA_PLAN_NONE UINT32_MAX
const pa_period_t *pa_plan_period_of(const pa_plan_t *p); /* every event, as the clock follows them */
uint64_t pa_plan_signature(const pa_plan_t *p); /* equal for the same plan cut at the same event (never 0) */
/* The same iteration, cut where a is cut or elsewhere (events, slots and sizes: a kept
 * plan serves it again): b's position t is a's (t + r) % period; PA_NO_ROTATION if not. */
#define PA_NO_ROTATION UINT32_MAX
uint32_t pa_plan_rotation(const pa_plan_t *a, const pa_plan_t *b);
/* Before a kept plan serves again: slots still live from its last time are overdue. */
void pa_plan_restart(pa_plan_t *p);
/* The slot planned for an allocation at position t (PA_PLAN_NONE: none, or an overdue
 * slot or one at its detour lies there); around: at its detour where it has one
 * (*detoured), while the recording's buffers lie in the range. */
uint32_t pa_plan_take(pa_plan_t *p, uint64_t t, uint64_t size, bool around, uint64_t *off, bool *detoured);
void pa_plan_give(pa_plan_t *p, uint32_t slot);
/* The lowest place from `from` on in its range where size bytes meet no slot live from
 * period position pos for h positions more, nor its fixed buffers, nor a live slot's
 * detour: false if none (or no memory). For an allocation off the plan. */
bool pa_plan_window(pa_plan_t *p, uint64_t pos, uint64_t size, uint64_t h, uint64_t from, uint64_t *off);
/* After event t: a slot the plan frees there and the program did not is overdue. */
void pa_plan_tick(pa_plan_t *p, uint64_t t);
uint32_t pa_plan_live(const pa_plan_t *p); /* slots in use */
void pa_plan_dump(const pa_plan_t *p, FILE *f); /* the planner's CSV with offsets */
/* Anchored: the iteration laid out at pool offset 0 around the n buffers that stay (fixed
 * at their offsets, live the whole period), in the recording's own address range, where
 * a plan placed beside them takes new pages (the hand-over's maps and unmaps) and leaves
 * the holes between them idle. */
typedef struct pa_extent_s { uint64_t lo, hi; } pa_extent_t; /* pool offsets [lo, hi) */
bool pa_plan_anchor(pa_plan_t *p, const pa_extent_t *fixed, size_t n); /* false without memory */
/* The live buffer [off, off + size) made at position t may keep its place as that slot:
 * pa_plan_layout_anchored fixes it there if the range reaches it. false if no such slot. */
bool pa_plan_in_place(pa_plan_t *p, uint64_t t, uint64_t off, uint64_t size);
bool pa_plan_in_place_is(const pa_plan_t *p, uint64_t off, uint64_t size); /* a slot fixed so lies there */
uint64_t pa_plan_plain_range(const pa_plan_t *p); /* the range laid out without them */
uint64_t pa_plan_over(const pa_plan_t *p, bool plain); /* its own bytes above max-live (plain: that layout's) */
void pa_plan_plain(pa_plan_t *p); /* that layout, the buffers under it intruding */
bool pa_plan_plain_again(pa_plan_t *p); /* a kept plan: that layout (polished) where lower */
bool pa_plan_plain_serves(const pa_plan_t *p); /* pa_plan_plain made it serve */
void pa_plan_polished(pa_plan_t *p); /* the chosen anchored plan: its polished layout serves */
bool pa_plan_anchored(const pa_plan_t *p);
/* a serves instead of p: p's layout goes with it (p's offsets taken), which it takes again
 * (pa_plan_unanchor, false if none) where its anchors no longer fit the pool's start */
void pa_plan_keep_normal(pa_plan_t *a, pa_plan_t *p);
bool pa_plan_unanchor(pa_plan_t *p);
bool pa_plan_layout_anchored(pa_plan_t *p); /* greedy orders around the fixed ones; false if none */
bool pa_plan_anchor_is(const pa_plan_t *p, uint64_t off, uint64_t size);
/* Its first served period, from period position `from`, around the recording's buffers
 * still under its range (off from the range's start; tag: the period position it was made
 * at, whose slot's planned free is when it goes, PA_CLOCK_OFF: not known): every slot
 * that meets one is given a detour, the lowest place in the range free of them and of
 * every slot over its life (planner: pa_greedy_settle), where there is one. Returns how
 * many (none: the last ones forgotten). A buffer made at its slot's position, of its
 * size, is that slot's instance: the slot moves to where it lies for the layout, and its
 * own place is free for the others (torch_stream seed 342: 12 slots still occupied sent
 * to best fit, 1 so). A slot made before `from` is made again next period, after the
 * buffers that go within this one: no detour, unless one lives into the next. Where the
 * settle leaves slots above the range, the period's slots are laid again around the rest
 * (a few greedy orders, plan.c's relay) where that is lower. Till that
 * period ends, a slot with a detour takes it (pa_plan_take, where no live slot lies), not
 * its place, which a recording's buffer may hold still and send it to best fit; later,
 * where a slot still at its detour lies in its place. */
typedef struct pa_obstacle_s { uint64_t off, size; uint32_t tag; } pa_obstacle_t;
size_t pa_plan_detours(pa_plan_t *p, const pa_obstacle_t *r, size_t n, uint64_t from);
uint64_t pa_plan_own(const pa_plan_t *p); /* its range's bytes less its fixed buffers' */
void pa_plan_set_alt(pa_plan_t *p, pa_plan_t *alt); /* the anchored alternative, freed with p */
pa_plan_t *pa_plan_take_alt(pa_plan_t *p);
/* The plan's slots as data: what reads them (schedule.c) needs no call into plan.c.
 * Valid while p lives and its layout stands. */
struct pa_plan_slots_s {
  uint64_t period, pool;       /* period events; the bytes of its range */
  uint32_t nslots;
  const uint8_t *is_alloc;     /* per period event: an allocation (else a free) */
  const uint32_t *slot_at;     /* per period event: its slot, or PA_PLAN_NONE */
  const uint64_t *free_at;     /* per slot: the period event that frees it */
  const int64_t *off;          /* per slot: in the range */
  const struct pa_buf_s *bufs; /* per slot: planner.h's buffer, .size its bytes */
};
void pa_plan_slots(const pa_plan_t *p, pa_plan_slots_t *v);
/* The plan's schedule (schedule.c), owned by it from then on: freed with it. */
void pa_plan_set_sched(pa_plan_t *p, pa_sched_t *s);
pa_sched_t *pa_plan_sched(const pa_plan_t *p);
pa_sched_t *pa_plan_take_sched(pa_plan_t *p); /* ... and the plan no longer owns it */

/* ---- schedule.c: each buffer's uses in the recorded iteration (the planned victims) ----- */
/* pa_mu held. The iteration of p, recorded from log event start: its slots named; then
 * every buffer live through it at a fixed offset, by recording id; then finish reads the
 * access trace. NULL / false without memory (no schedule: the reactive score serves). */
pa_sched_t *pa_sched_new(const pa_plan_slots_t *p, uint64_t start);
bool pa_sched_add_fixed(pa_sched_t *s, uint32_t key, uint64_t off, uint64_t size); /* key: as pa_alloc_id_at's */
bool pa_sched_finish(pa_sched_t *s);
void pa_sched_free(pa_sched_t *s);
uint32_t pa_sched_slots(const pa_sched_t *s); /* idents [0, slots) are the plan's slots */
/* A fixed buffer's ident (the one at off of this size, live since before the period), or
 * UINT32_MAX. */
uint32_t pa_sched_fixed(const pa_sched_t *s, uint64_t off, uint64_t size);
/* A fixed buffer's range by ident; false for a slot's. */
bool pa_sched_fixed_range(const pa_sched_t *s, uint32_t ident, uint64_t *off, uint64_t *size);
uint64_t pa_sched_launches(const pa_sched_t *s); /* launch positions in the iteration */
/* Launch positions: the first of period event pos's launches, and one past its last. */
uint64_t pa_sched_first(const pa_sched_t *s, uint64_t pos);
uint64_t pa_sched_end(const pa_sched_t *s, uint64_t pos);
/* Launches from position at to ident's next use, wrapping; UINT64_MAX: never used. */
uint64_t pa_sched_next_use(const pa_sched_t *s, uint32_t ident, uint64_t at);
uint32_t pa_sched_idents(const pa_sched_t *s); /* slots and fixed buffers */
/* Once the plan's range starts at pool offset base: where its slots are born, by page
 * (false without memory: no births known). Then, launches from position at until the
 * next birth on a page of [lo, hi) (pool offsets), wrapping; UINT64_MAX: none. */
bool pa_sched_place(pa_sched_t *s, const pa_plan_slots_t *p, uint64_t base, uint64_t page);
uint64_t pa_sched_next_birth(const pa_sched_t *s, uint64_t lo, uint64_t hi, uint64_t at);
/* The slots the plan allocates just before launch position at (placed only), and a slot's
 * pool range. */
uint32_t pa_sched_born_at(const pa_sched_t *s, uint64_t at, const uint32_t **slots);
void pa_sched_slot_range(const pa_sched_t *s, uint32_t slot, uint64_t *off, uint64_t *size);
/* The idents the launch at position at (wrapping) touches, each once; their number. */
uint32_t pa_sched_used_at(const pa_sched_t *s, uint64_t at, const uint32_t **idents);
/* Slot k lives over launch positions [born, gone), wrapped round the end when gone < born. */
void pa_sched_life(const pa_sched_t *s, uint32_t slot, uint32_t *born, uint32_t *gone);
uint32_t pa_sched_uses(const pa_sched_t *s, uint32_t ident); /* launches of the iteration touching it */

/* ---- pageplan.c: the served phase's swap schedule, in pages ------------------------------- */
/* The pages are what the budget moves, so the schedule is planned over them (dtr/served.c):
 * a page lives while a buffer on it does, is touched by the launches touching any of them
 * and by their births, and never leaves if one was never seen touched. Once the plan's
 * range starts at pool offset base; within budget bytes, launches of ns_per_launch and a
 * link of bytes_per_ns each way, for a host at most lead_ns ahead of the device (pace.c;
 * dtr/ picks the lead, pa_pageplan_lead). NULL without memory, or with nothing to move. */
#define PA_COPY_LATENCY_NS 10000.0 /* a copy's fixed cost */
typedef struct pa_pageplan_s pa_pageplan_t;
typedef struct pa_run_s {
  uint32_t first, n; /* pool pages [first, first + n) */
} pa_run_t;
/* What it will cost (*fc, all 0 where nothing could be planned): the model's turn with
 * these swaps, and the floor, the most bytes one launch needs on the device at once. */
typedef struct pa_forecast_s {
  uint64_t floor, bytes_out, bytes_in; /* bytes moved per iteration */
  double compute_ns, turn_ns;          /* the iteration's kernels; the modelled turn */
  double stretch;                      /* the launch time planned at, over the measured */
  double map_ns;                       /* the host's mapping calls an iteration (turn_ns is no less) */
  uint32_t over;                       /* positions the swaps leave over budget */
} pa_forecast_t;
typedef struct pa_link_s {
  double bytes_per_ns, map_ns; /* each way; the host's mapping calls per page moved */
} pa_link_t;
pa_pageplan_t *pa_pageplan_new(const pa_sched_t *s, const pa_plan_slots_t *p, uint64_t base, uint64_t page,
                               uint64_t budget, double ns_per_launch, pa_link_t link, double lead_ns, pa_forecast_t *fc);
void pa_pageplan_free(pa_pageplan_t *pp);
size_t pa_pageplan_swaps(const pa_pageplan_t *pp); /* page runs sent out per iteration */
/* The lead it was planned for, in launches (the host is to be held to it; 0: none, or
 * no schedule), and the positions still over budget at that lead (the reactive victims
 * meet them). */
uint64_t pa_pageplan_lead(const pa_pageplan_t *pp);
uint32_t pa_pageplan_over(const pa_pageplan_t *pp);
/* Per launch position (wrapping): the runs to copy out once it is issued, and those to
 * bring back before it. */
uint32_t pa_pageplan_outs(const pa_pageplan_t *pp, uint64_t at, const pa_run_t **runs);
uint32_t pa_pageplan_backs(const pa_pageplan_t *pp, uint64_t at, const pa_run_t **runs);
void pa_pageplan_dump(const pa_pageplan_t *pp, FILE *f); /* the turn, for planalloc-sim --cycle */
/* The plan's colouring of its pages with the budget's handles (hues.c; NULL: none). */
const pa_hues_t *pa_pageplan_hues(const pa_pageplan_t *pp);

/* ---- hues.c: the swap schedule's pages coloured with the budget's handles ------------------ */
#define PA_HUES_MOST_MOVING 16384 /* pages that leave, coloured at most: their graph is quadratic (32 MiB) */
/* Page page holds colour hue's handle at positions [lo, hi) of the turn, wrapping; lo ==
 * hi: the whole turn. */
typedef struct pa_hue_s {
  uint32_t page, lo, hi, hue;
} pa_hue_t;
typedef struct pa_hues_s {
  pa_hue_t *hues; /* sorted by page, then lo */
  size_t n;
  uint32_t ncolours;
  uint32_t npages, nwhole, nsplit; /* pages coloured; of them one colour all turn, several */
} pa_hues_t;
/* Pages whose stays on the device (c's items on pool page page_of[k], less the stretches
 * cp sends them to the host) never meet share a colour, at most most colours: a page
 * that meets too many borrows a colour for each stretch (another page's stretches moved
 * to make room where none is free). *out (malloc'd, pa_hues_free), its n (0 and empty
 * without memory, or past 16384 pages that leave or 65536 in all). */
typedef struct pa_cycle_s pa_cycle_t;
typedef struct pa_cycle_plan_s pa_cycle_plan_t;
size_t pa_hues_colour(const pa_cycle_t *c, const pa_cycle_plan_t *cp, const uint32_t *page_of, uint32_t most,
                      pa_hues_t *out);
void pa_hues_free(pa_hues_t *hs);

/* ---- launch.c: which buffers a launch touches ---------------------------------------------- */
/* true when s must first be ordered after the latest frees (pa_fence_order). */
bool pa_launch_seen(CUfunction f, bool is_kernel, CUstream s, void **params, void **extra);
void pa_launch_captured(void); /* a launch into a stream capture: counted only */

/* ---- access.c: the access trace, which recorded buffers each launch touched ----------------- */
void pa_access_log(uint64_t launch, CUstream s, uint32_t id); /* pa_mu held */
/* launch,stream,buffer,event: the recording's buffer ids (older buffers left out);
 * event: allocation events logged before the launch (the trace dump's clock). */
void pa_access_dump(FILE *f);
void pa_access_reset(void); /* pa_mu held: with the recording's */
/* pa_mu held: fn(ctx, launch, recording id) for every logged access of the launches
 * numbered [from, to), in launch order. */
typedef void (*pa_access_fn)(void *ctx, uint64_t launch, uint32_t id);
void pa_access_each(uint64_t from, uint64_t to, pa_access_fn fn, void *ctx);

/* ---- stats.c / dump.c ----------------------------------------------------------------------- */
typedef struct pa_stats_s { /* pa_mu held: plain counters, no lock prefix on hot paths */
  uint64_t allocs, frees, served, fallback, windowed, passed, intruded, detoured, launches, launches_captured, launch_hits, replans, plans, plans_reused, plans_known, beside,
      divergent_periods, live, live_peak, persistent, maxlive_iter, plan_pool, plan_buffers, period, served_periods;
  uint64_t timed_periods, served_ns; /* the last plan's periods from one end to the next, and their time */
  uint64_t by_module; /* passed: a listed library's (modules.c) */
  uint64_t since_served; /* allocations from the first one a plan served on (the warm-up is before) */
} pa_stats_t;
extern PA_TLS pa_stats_t *pa_stats_here; /* defined with the other shared state in init.c */
#define pa_stats PA_THIS(pa_stats)
/* The context the pool was made in (pool.c sets it): a device-wide wait waits for it too
 * where the program may have another device's context current (waits.c), and the pool's
 * fence lanes make and record their events in it (fence.c). */
extern PA_TLS _Atomic(CUcontext) *pa_pool_ctx_here;
#define pa_pool_ctx PA_THIS(pa_pool_ctx)
long pa_rank(void); /* torchrun's RANK, or -1 where it is unset or no number (dump names, stats) */
void pa_stats_print(void); /* pa_mu held, as for the dumps */
void pa_stats_json(FILE *f);
void pa_dump_all(void);
/* ---- verdict.c: what happened, in a line or two at exit ------------------------------------ */
void pa_verdict_served(void);    /* pa_mu held: a warning where the plan served under half of it */
void pa_verdict(bool allocated); /* once: PyTorch's caching allocator, no allocation, the dumps */
bool pa_dump_dir(void); /* PLANALLOC_DUMP set, and made (once; a warning if it cannot be) */
void pa_dump_path(char *path, size_t n, const char *kind); /* DUMP/planalloc.<pid>.d<dev>[.r<rank>].<seq>.<kind> */
void pa_record_dump(FILE *f);       /* record.c: the whole recording as a planner CSV */
void pa_plan_dump_current(FILE *f); /* alloc.c: the plan being served, or the last one */

/* ---- events.c: the run's event log (PLANALLOC_EVENTS) ---------------------------------------- */
typedef struct pa_logged_s {
  char kind;          /* 'a' allocation, 'f' free, 'l' launch */
  CUstream stream;
  CUdeviceptr ptr;
  uint64_t size, site; /* a launch: its parameter words in the pool; site 0: not taken */
  const char *did;    /* record, plan, fit (on the clock, best fit), miss, idle, pass */
  uint32_t pos, expected; /* the plan position taken, the one the clock was at (PA_CLOCK_OFF: none) */
  uint64_t want_size;     /* what the plan has at expected: an allocation's bytes, else a free ... */
  uint32_t want_mate;     /* ... of the buffer made at that position (PA_CLOCK_OFF: an older one) */
} pa_logged_t;
bool pa_events_on(void);
void pa_events_write(const pa_logged_t *e); /* any lock or none */
void pa_events_close(void);                /* at exit: the rest written */
uint64_t pa_run_us(void); /* timeline.c: microseconds since planalloc's first timed event */
void pa_events_zero(void); /* a zero-byte cudaMalloc (PyTorch makes 182 a ResNet-50 step), which the runtime answers itself */

/* ---- pace.c: the host's lead over the device in a budgeted served phase ------------------- */
void pa_pace_start(uint64_t lead); /* a swap schedule serves: held to lead launches ahead (0: none serves) */
void pa_pace_launch(CUstream s);  /* just after a launch on s */

/* ---- pairs.c: event pairs that time the device's work --------------------------------------- */
/* The ring's n pairs made once (*state: 0 not yet, 1 made, 2 failed: no event timing, or
 * an event refused); whether they are. */
bool pa_pairs_ready(CUevent *start, CUevent *end, size_t n, int *state);
bool pa_pair_ms(CUevent start, CUevent end, float *ms); /* its time where the end is done (a query) */

/* ---- ktime.c: the device's pace while recording, for the budget's swap schedule ------------ */
int pa_ktime_begin(CUstream s);          /* just before a launch: a sample's slot, or -1 */
void pa_ktime_end(int slot, CUstream s); /* just after it */
void pa_ktime_event(uint64_t event);     /* pa_mu held: the recording's event count, every event */
void pa_ktime_measure(uint64_t period);  /* reads the samples done (not under pa_mu; a thread with a context) */
double pa_ktime_ns(void);                /* a kernel's mean time, as last measured; 0 if none */
double pa_ktime_iter_ns(void);           /* the recorded iteration's time less planalloc's waits; 0 if none */
/* ---- link.c: the link's speed, from planalloc's own copies -------------------------------- */
int pa_link_begin(CUstream s);     /* before a batch of copies on s, after its waits: a slot, or -1 */
void pa_link_end(int slot, CUstream s, uint64_t bytes); /* after it (bytes 0: it failed) */
void pa_link_measure(void);        /* reads the pairs done (a thread with a context, as pa_ktime_measure) */
double pa_link_gbps(void);         /* GB/s as last measured; 0 if none */

/* ---- timeline.c: memory over the run, for the timeline dump (PLANALLOC_DUMP set) -------- */
void pa_timeline_event(void); /* pa_mu held: after an allocation or free was counted */
/* pa_mu held: a phase change, as one line of text without commas. */
void pa_timeline_mark(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void pa_timeline_dump(FILE *f);

/* ---- streams.c: stream-ordered frees, waited for only by whoever reuses the range ---------- */
/* A pooled event recorded on s (pa_mu not held); NULL if the driver refuses. */
CUevent pa_event_after(CUstream s);
/* pa_mu held: [p, p+size) was freed on s at ev; false when too many are pending. */
bool pa_pending_add(CUdeviceptr p, uint64_t size, CUstream s, CUevent ev);
void pa_pending_drop(CUevent ev); /* an event that ended up unused (pa_mu held) */
/* pa_mu held: the events an allocation of [p, p+size) for s must wait for; max + 1 when
 * more than max. */
size_t pa_pending_waits(CUdeviceptr p, uint64_t size, CUstream s, bool async, CUevent *out, size_t max);
/* pa_mu not held: s waits for them on the GPU (n <= max). A CUresult. */
int pa_pending_wait(const CUevent *evs, size_t n, CUstream s);
/* pa_mu not held: the host waits for those not done yet (a page unmapped under them). */
int pa_pending_settle(const CUevent *evs, size_t n, size_t max);
void pa_pending_prune(size_t max); /* pa_mu not held: forget completed ones, up to max */
bool pa_pending_busy(CUdeviceptr p, uint64_t size); /* pa_mu held: one may still run there */
uint64_t pa_pending_mark(void);    /* before a device-wide synchronisation ... */
void pa_pending_clear(uint64_t mark); /* ... after it (pa_mu held): those are complete */

/* ---- fence.c: frees without a host wait: reuse ordered on the device ----------------------- */
/* pa_mu held. Work is about to be issued on s (a launch, or a copy or memset touching
 * the pool): true when s must first be ordered after the latest frees (pa_fence_order). */
bool pa_fence_mark(CUstream s);
/* pa_mu not held: s waits on the GPU for every other stream's work from before the
 * latest free (events, cuStreamWaitEvent; the host only where no event can serve). */
int pa_fence_order(CUstream s);
/* pa_mu not held: work about to be issued on s in another device's context c that may
 * touch pool memory (a copy, or a kernel under peer access). s becomes a lane of its
 * own: ordered after the frees on the device, as later reuse is after it (where no lane
 * can be had: both on the host, c among the contexts a device-wide wait covers).
 * Returns the ordering's result. */
int pa_fence_foreign(CUcontext c, CUstream s);
/* The same for planalloc's out stream (swap.c), which stays no lane: no program stream waits for
 * its copies through the fence (the pool's copy numbers order those). */
int pa_fence_follow(CUstream s);
/* pa_mu held: a buffer was freed (or memory freed stream-ordered was taken by a caller
 * who may use it on any stream): every stream's next work follows all work so far.
 * The fence after it: work from before it may touch what was freed. */
uint64_t pa_fence_raise(void);
uint64_t pa_fence_now(void);      /* pa_mu held */
bool pa_fence_known(uint64_t f);  /* pa_mu held, no driver call: all work from before f is done */
bool pa_fence_query(uint64_t f);  /* pa_mu not held: the same, asking the driver (no wait) */
int pa_fence_settle(uint64_t f);  /* pa_mu not held: the host waits until it is (pages) */
/* The program's own sync of s (all: of the device) teaches the fence what is done. */
typedef struct pa_fence_sync_s {
  uint64_t f;
  int lane;
  uint32_t gen;
  bool all;
} pa_fence_sync_t;
pa_fence_sync_t pa_fence_sync_begin(CUstream s, bool all); /* pa_mu not held */
void pa_fence_sync_end(const pa_fence_sync_t *t);           /* after it succeeded */
void pa_fence_before_capture(CUstream s); /* before s begins a capture (pa_mu not held) */
void pa_fence_retire(CUstream s);         /* before s is destroyed (pa_mu not held) */

/* ---- modules.c: libraries whose allocations pass (PLANALLOC_PASS_MODULES) ------------------ */
bool pa_module_passes(void *caller); /* caller: a return address in the allocating code */
/* A loaded object's file name is name up to a version suffix ("libtorch_cuda"). */
bool pa_module_loaded(const char *name);
extern PA_TLS bool pa_pass_next;     /* the runtime's caller passes: its driver call does too */

/* ---- devices.c: which device's planalloc a call works on (pa_slot) -------------------------
 * Each sets pa_slot; false where the device has none (PA_DEVICES and on: it passes). */
extern atomic_int pa_devices_seen; /* 0: not yet known, 1: one device, 2: several (init.c; devices.c sets it) */
bool pa_device_enter_slow(CUstream s);
bool pa_device_launch_slow(CUstream s, int *rc);
/* The process is known to see one device: slot 0 is set (the hooks' one load and compare). */
static inline bool pa_device_one(void) {
  bool one = atomic_load_explicit(&pa_devices_seen, memory_order_relaxed) == 1;
  if (one) pa_slot_set(0);
  return one;
}
/* Work on s: its device's (s NULL: the current context's). */
static inline bool pa_device_enter(CUstream s) { return pa_device_one() || pa_device_enter_slow(s); }
/* A launch on s: first every other device's pool that peer access lets it touch orders it
 * (fence.c; *rc: how that went), then pa_slot is s's device's. */
static inline bool pa_device_launch(CUstream s, int *rc) {
  *rc = 0;
  return pa_device_one() || pa_device_launch_slow(s, rc);
}
/* A copy on s touches device p's pool, s's device being another: p's fence orders it
 * unless settled (done, or serialised with later work, when the call returns), and p's
 * budget gives way (pa_slot is left as it was). */
int pa_device_copy(CUstream s, int p, bool settled);
/* An allocation (s: its stream when async): counted and said once where it passes. */
bool pa_device_alloc_slow(CUstream s, bool async);
static inline bool pa_device_alloc(CUstream s, bool async) { return pa_device_one() || pa_device_alloc_slow(s, async); }
unsigned long pa_device_passed(void); /* allocations on devices with no pool */
/* An allocation found its device's pool (perhaps made just now): the peer access enabled
 * before is granted on it before a peer's kernel can reach the buffer. */
void pa_device_pool_made(void);
/* fn(arg) with pa_slot at each device that has a pool, then pa_slot as it was. */
void pa_device_each_pool(void (*fn)(void *arg), void *arg);
static inline void pa_device_pool_ready(void) {
  if (atomic_load_explicit(&pa_devices_seen, memory_order_relaxed) == 2) pa_device_pool_made();
}
void pa_device_forget(CUstream s);   /* s is destroyed: its handle may name another stream */
void pa_device_peer(CUcontext peer); /* the program enabled peer access to peer */

/* ---- capture.c: open stream captures ------------------------------------------------------ */
void pa_capture_began(CUstream s, CUstreamCaptureMode mode); /* after the driver began it */
void pa_capture_ended(CUstream s);                            /* after any end call */
/* A capture makes allocation an unsafe call for this thread: pass it to the driver. */
bool pa_capture_forbids(void);
bool pa_capture_open(void); /* any capture, relaxed ones too, on any thread */
bool pa_stream_capturing(CUstream s); /* the driver's answer (a driver call) */
/* Work queued on s now is recorded into a graph, not run: no call while no capture is
 * open. Such work must not wait for planalloc's copies (CUDA refuses a capture's wait
 * on outside work), and an event recorded on s would be captured. */
bool pa_capture_records(CUstream s);

/* ---- shadow.c: the overlap checker of the tests' build (PA_SHADOW) ---------------------------
 * Every range handed out and taken back, pa_mu held; a violation is reported and aborts. */
#ifdef PA_SHADOW
void pa_shadow_alloc(CUdeviceptr p, uint64_t size);
void pa_shadow_free(CUdeviceptr p, uint64_t size);
void pa_shadow_report(void); /* at exit: what was checked */
/* The set itself: false (and the live range in clash) when [lo, hi) overlaps one; erase:
 * false when exactly [lo, hi) is not live. */
bool pa_shadow_insert(uint64_t lo, uint64_t hi, uint64_t clash[2]);
bool pa_shadow_erase(uint64_t lo, uint64_t hi);
#else
static inline void pa_shadow_alloc(CUdeviceptr p, uint64_t size) { (void)p, (void)size; }
static inline void pa_shadow_free(CUdeviceptr p, uint64_t size) { (void)p, (void)size; }
static inline void pa_shadow_report(void) {}
#endif

/* ---- hooks_driver.c / hooks_runtime.c / hooks_dlsym.c ------------------------------------- */
/* A _ptsz/_ptds entry point's stream: NULL there is the calling thread's default stream. */
#define PA_PTSZ(s) ((s) ? (s) : CU_STREAM_PER_THREAD)
/* Our wrapper for exactly this real libcuda function, or NULL. */
void *pa_hook_for(void *fn);
/* After a successful entry-point query: *pfn becomes our wrapper of it, if we have one. */
void pa_hand_out_hook(void **pfn);
bool pa_hooks_bound(void);       /* the real entry points are resolved (the driver is loaded) */
void pa_copy_resolve(void);      /* hooks_copy.c: its real entry points, from pa_hooks_bound */
void *pa_copy_hook_for(void *fn); /* hooks_copy.c's part of pa_hook_for */
extern PA_TLS bool pa_driver_saw; /* a runtime call came down to the driver hooks */
unsigned long pa_runtime_unseen_allocs(void);
unsigned long pa_runtime_unseen_launches(void);
unsigned long pa_runtime_calls(void); /* allocations and launches through our runtime exports */

#endif
