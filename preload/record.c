/* The recording: every allocation and free as a token (size and callsite, or how many
 * allocations ago the freed one was made), the log plan.c builds the period's trace
 * from, and the iteration found by the clock's finder (clock.c): the shortest period p
 * such that the last WARMUP (at least 2) windows of p events are identical and leave the
 * same bytes live (the last seen in part: clock.c's seen_cut). The bytes live are the
 * device's, the buffers older than the log too: a recording begun beside a plan the
 * program left balanced its first period only once the buffers it did not see were
 * gone. */
#include "pa.h"

#include <stdlib.h>
#include <string.h>

#define PA_RECORD_MAX_EVENTS (1u << 22)

static pa_log_t PA_PER_DEVICE(pa_log);
PA_BIND_SHARED(pa_log)

typedef struct recording_s {
  pa_finder_t finder;
  uint64_t live;
  bool lost; /* the finder had no memory for an event: no period is found in this recording */
} recording_t;

/* The kept plans' matcher's view: the program's last PA_MATCH_LEN allocations and frees,
 * whatever the phase, each free naming the event that made its buffer (made: its seq).
 * The log leaves out the frees of buffers older than it (to it they are persistent), but
 * a kept period has them where they fall: the first step after a shape change frees the
 * last step's buffers, and no window over the log matched there (torch_stream's 3
 * shapes: each shape that came back known 354 events after the change; 2 more divergent
 * periods). Nor does it wait for the recording beside the plan to start, 60-70 events
 * after the change. */
typedef struct ring_s {
  uint64_t seq, hash, hash_short; /* events pushed; the hash of the last PA_MATCH_LEN's, PA_MATCH_SHORT's codes */
  struct ring_event_s {
    uint64_t size, made;
    bool alloc;
  } e[PA_MATCH_LEN];
} ring_t;

/* aside: the served plan's recording while another runs beside it (pa_record_aside) */
static struct {
  recording_t now, aside;
  pa_log_t aside_log;
  bool beside;
  ring_t ring;
} PA_PER_DEVICE(rec);
PA_BIND(rec)
#define rec PA_THIS(rec)

/* Grows *arr to cap elements; on failure *arr is left as it was. */
static bool grow_to(void *arr, size_t cap, size_t elem) {
  void *q = realloc(*(void **)arr, cap * elem);
  if (q) *(void **)arr = q;
  return q != NULL;
}
#define GROW(arr, cap) grow_to(&(arr), (cap), sizeof *(arr))

static bool room(void) {
  if (pa_log.nev + 1 >= pa_log.cap_ev) {
    size_t c = pa_log.cap_ev ? 2 * pa_log.cap_ev : 4096;
    if (c > PA_RECORD_MAX_EVENTS) return false;
    if (!GROW(pa_log.tok, c) || !GROW(pa_log.live, c) || !GROW(pa_log.ev_id, c) ||
        !GROW(pa_log.ev_alloc, c) || !GROW(pa_log.launch, c))
      return false;
    pa_log.cap_ev = c;
  }
  if (pa_log.nalloc + 1 >= pa_log.cap_alloc) {
    size_t c = pa_log.cap_alloc ? 2 * pa_log.cap_alloc : 4096;
    if (!GROW(pa_log.size, c) || !GROW(pa_log.alloc_pos, c) || !GROW(pa_log.free_pos, c) || !GROW(pa_log.placed, c))
      return false;
    pa_log.cap_alloc = c;
  }
  return true;
}

uint64_t pa_record_event(bool alloc, uint64_t size, uint64_t made) {
  ring_t *g = &rec.ring;
  struct ring_event_s *x = &g->e[g->seq % PA_MATCH_LEN], *y = &g->e[(g->seq - PA_MATCH_SHORT) % PA_MATCH_LEN];
  uint64_t in = pa_event_code(alloc, size), out = g->seq >= PA_MATCH_LEN ? pa_event_code(x->alloc, x->size) : 0;
  uint64_t out_short = g->seq >= PA_MATCH_SHORT ? pa_event_code(y->alloc, y->size) : 0;
  g->hash = pa_match_roll(g->hash, in, out, PA_MATCH_LEN);
  g->hash_short = pa_match_roll(g->hash_short, in, out_short, PA_MATCH_SHORT);
  *x = (struct ring_event_s){size, made, alloc};
  return g->seq++;
}

static uint64_t push(uint64_t tok, uint32_t id, bool alloc) {
  size_t n = pa_log.nev++;
  pa_log.tok[n] = tok, pa_log.live[n] = rec.now.live, pa_log.ev_id[n] = id, pa_log.ev_alloc[n] = alloc;
  pa_log.launch[n] = pa_stats.launches;
  rec.now.lost |= !rec.now.lost && !pa_finder_push(&rec.now.finder, tok);
  return n;
}

/* The token of an allocation is its size's hash xor its callsite: the site comes back out. */
static uint64_t size_hash(uint64_t size) { return pa_mix64(size * 2 + 1); }

static uint64_t site_of(const pa_log_t *l, size_t id) { return l->tok[l->alloc_pos[id]] ^ size_hash(l->size[id]); }
uint64_t pa_record_site(uint32_t id) { return site_of(&pa_log, id); }

uint32_t pa_record_alloc(uint64_t size, uint64_t site, uint64_t placed) {
  if (!room()) return UINT32_MAX;
  uint32_t id = (uint32_t)pa_log.nalloc++;
  rec.now.live += size;
  pa_log.size[id] = size, pa_log.free_pos[id] = PA_NO_EVENT, pa_log.placed[id] = placed;
  pa_log.alloc_pos[id] = push(size_hash(size) ^ site, id, true);
  return id;
}

/* A free's token names its buffer by its dead count (dead.c); under a budget, by how many
 * allocations back it was made, as before the dead count. Found a step earlier so, the
 * swap schedule of ResNet-50's stream at half its peak waited on the host for copies in
 * its served phase, 1-5 times in 5 of 6 runs (0 in 6 so; 0 in 6 too with the dead
 * count and 3 whole copies, a step later still): a schedule planned from step 2, which
 * ran beside the budget's first evictions, not from step 3. */
static uint64_t free_token(uint64_t back, uint64_t dead) { return pa_log_free_token(pa_limit_on() ? back : dead); }

void pa_record_free(uint32_t id, uint64_t dead) {
  if (id >= pa_log.nalloc || pa_log.free_pos[id] != PA_NO_EVENT || !room()) return;
  rec.now.live -= pa_log.size[id];
  pa_log.free_pos[id] = push(free_token(pa_log.nalloc - id, dead), id, false);
}

void pa_record_free_old(uint64_t back, uint64_t dead, uint64_t size) {
  if (!room()) return;
  rec.now.live -= size;
  push(free_token(back, dead), PA_LOG_OLD | (uint32_t)(back < PA_LOG_OLD ? back : PA_LOG_OLD - 1), false);
}

uint64_t pa_record_period(uint64_t min_period, uint64_t *cut) {
  if (rec.now.lost) return 0;
  /* Under a budget the plan waits for the last iteration whole: the swap schedule is
   * planned from what the recording measured (the kernels' time, the buffers live through
   * the iteration), and a shorter one planned mlp_train's 16 layers at 50 % to move 34
   * MiB an iteration, not 26 (bench-budget 1.07 -> 1.14x at 2 GB/s). */
  return pa_finder_period(&rec.now.finder, &pa_log, min_period, (uint64_t)pa_opt.v[PA_OPT_WARMUP].i, !pa_limit_on(), cut);
}

uint64_t pa_record_later_cut(uint64_t period, uint64_t cut) {
  return rec.now.lost ? PA_NO_EVENT : pa_finder_later_cut(&rec.now.finder, &pa_log, period, cut);
}

bool pa_record_full(void) { return pa_log.nev + 1 >= PA_RECORD_MAX_EVENTS; }
uint64_t pa_record_events(void) { return pa_log.nev; }

/* Starts a fresh recording; ids restart at 0 (live buffers keep their old ids: they are
 * treated as persistent). */
static void reset(pa_log_t *l, recording_t *r) {
  pa_finder_reset(&r->finder);
  l->nev = l->nalloc = 0;
  r->live = pa_stats.live, r->lost = false;
}

void pa_record_reset(void) { reset(&pa_log, &rec.now); }

/* The recording the plan was made from, in the planner's CSV: buffers still live end
 * with the log. */
void pa_record_dump(FILE *f) {
  const pa_log_t *l = rec.beside ? &rec.aside_log : &pa_log;
  fprintf(f, "# planalloc trace 1\nid,lower,upper,size,site,placed\n");
  for (size_t i = 0; i < l->nalloc; i++) {
    uint64_t end = l->free_pos[i] == PA_NO_EVENT ? l->nev : l->free_pos[i];
    fprintf(f, "b%zu,%llu,%llu,%llu,%016llx,%llu\n", i, (unsigned long long)l->alloc_pos[i],
            (unsigned long long)end, (unsigned long long)l->size[i], (unsigned long long)site_of(l, i),
            (unsigned long long)l->placed[i]);
  }
}

uint64_t pa_record_recent(uint32_t len) {
  return rec.ring.seq < len ? 0 : len == PA_MATCH_SHORT ? rec.ring.hash_short : rec.ring.hash;
}

/* The window's event j (0: the oldest). */
static const struct ring_event_s *ring_at(uint64_t j) { return &rec.ring.e[(rec.ring.seq + j) % PA_MATCH_LEN]; }

/* The hash matched: the events themselves, and each free in the window names the
 * allocation the period's free names (first: the window's first event's number). */
bool pa_record_is(const pa_period_t *p, uint32_t r, uint32_t len) {
  if (rec.ring.seq < len || len > PA_MATCH_LEN || r >= p->period) return false;
  uint64_t n = p->period, at0 = (r + 1 + n * len - len) % n, first = rec.ring.seq - len;
  for (uint64_t j = 0; j < len; j++) {
    const struct ring_event_s *x = ring_at(PA_MATCH_LEN - len + j);
    uint32_t u = (uint32_t)((at0 + j) % n);
    if (x->alloc ? p->size[u] != x->size : p->size[u] != 0) return false;
    if (!x->alloc && x->made >= first && p->mate[u] != (at0 + x->made - first) % n) return false;
  }
  return true;
}

/* ---- a recording beside the plan's ---------------------------------------------------------- */

static void swap_aside(void) {
  pa_log_t l = pa_log;
  recording_t r = rec.now;
  pa_log = rec.aside_log, rec.now = rec.aside;
  rec.aside_log = l, rec.aside = r;
}

/* The program left its plan: a fresh recording starts beside the plan's, which is set
 * aside (the dump's trace, and the log again if the plan holds after all). */
void pa_record_aside(void) {
  if (rec.beside) return;
  swap_aside();
  rec.beside = true;
  pa_record_reset();
}

/* The plan held: its recording is the log again (the one beside it is dropped). */
void pa_record_restore(void) {
  if (!rec.beside) return;
  pa_record_reset();
  swap_aside();
  rec.beside = false;
}

/* The plan retired: the recording beside it goes on as the log; the plan's is dropped
 * (its arrays kept for the next one set aside). */
void pa_record_go_on(void) {
  if (!rec.beside) return;
  reset(&rec.aside_log, &rec.aside);
  rec.beside = false;
}
