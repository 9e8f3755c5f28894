/* The recording: every allocation and free as a token (size and callsite, or how many
 * allocations ago the freed one was made), the log plan.c builds the period's trace
 * from, and the iteration found by the clock's finder (clock.c): the shortest period p
 * such that the last WARMUP (at least 2) windows of p events are identical and leave the
 * same bytes live. */
#include "pa.h"

#include <stdlib.h>
#include <string.h>

#define PA_RECORD_MAX_EVENTS (1u << 22)

static pa_log_t PA_PER_DEVICE(pa_log);
PA_BIND_SHARED(pa_log)

static struct {
  pa_finder_t finder;
  uint64_t live;
  bool lost; /* the finder had no memory for an event: no period is found in this recording */
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

static uint64_t push(uint64_t tok, uint32_t id, bool alloc) {
  size_t n = pa_log.nev++;
  pa_log.tok[n] = tok, pa_log.live[n] = rec.live, pa_log.ev_id[n] = id, pa_log.ev_alloc[n] = alloc;
  pa_log.launch[n] = pa_stats.launches;
  rec.lost |= !rec.lost && !pa_finder_push(&rec.finder, tok);
  return n;
}

/* The token of an allocation is its size's hash xor its callsite: the site comes back out. */
static uint64_t size_hash(uint64_t size) { return pa_mix64(size * 2 + 1); }

uint64_t pa_record_site(uint32_t id) {
  return pa_log.tok[pa_log.alloc_pos[id]] ^ size_hash(pa_log.size[id]);
}

uint32_t pa_record_alloc(uint64_t size, uint64_t site, uint64_t placed) {
  if (!room()) return UINT32_MAX;
  uint32_t id = (uint32_t)pa_log.nalloc++;
  rec.live += size;
  pa_log.size[id] = size, pa_log.free_pos[id] = PA_NO_EVENT, pa_log.placed[id] = placed;
  pa_log.alloc_pos[id] = push(size_hash(size) ^ site, id, true);
  return id;
}

void pa_record_free(uint32_t id) {
  if (id >= pa_log.nalloc || pa_log.free_pos[id] != PA_NO_EVENT || !room()) return;
  rec.live -= pa_log.size[id];
  pa_log.free_pos[id] = push(pa_mix64((pa_log.nalloc - id) * 2), id, false);
}

uint64_t pa_record_period(uint64_t min_period, uint64_t *cut) {
  if (rec.lost) return 0;
  return pa_finder_period(&rec.finder, &pa_log, min_period, (uint64_t)pa_opt.v[PA_OPT_WARMUP].i, cut);
}

uint64_t pa_record_later_cut(uint64_t period, uint64_t cut) {
  return rec.lost ? PA_NO_EVENT : pa_finder_later_cut(&rec.finder, &pa_log, period, cut);
}

bool pa_record_full(void) { return pa_log.nev + 1 >= PA_RECORD_MAX_EVENTS; }
uint64_t pa_record_events(void) { return pa_log.nev; }

/* Starts a fresh recording; ids restart at 0 (live buffers keep their old ids: they are
 * treated as persistent). */
void pa_record_reset(void) {
  pa_finder_reset(&rec.finder);
  pa_log.nev = pa_log.nalloc = 0;
  rec.live = 0, rec.lost = false;
}

/* The whole recording in the planner's CSV: buffers still live end with the log. */
void pa_record_dump(FILE *f) {
  fprintf(f, "# planalloc trace 1\nid,lower,upper,size,site,placed\n");
  for (size_t i = 0; i < pa_log.nalloc; i++) {
    uint64_t end = pa_log.free_pos[i] == PA_NO_EVENT ? pa_log.nev : pa_log.free_pos[i];
    fprintf(f, "b%zu,%llu,%llu,%llu,%016llx,%llu\n", i, (unsigned long long)pa_log.alloc_pos[i],
            (unsigned long long)end, (unsigned long long)pa_log.size[i],
            (unsigned long long)pa_record_site((uint32_t)i), (unsigned long long)pa_log.placed[i]);
  }
}
