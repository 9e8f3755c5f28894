/* The recording: every allocation and free as a token (size and callsite, or how many
 * allocations ago the freed one was made), and the iteration found as the shortest
 * period p such that the last WARMUP (at least 2) windows of p events are identical and
 * leave the same bytes live. Windows compare in O(1) by prefix hashes; candidate periods
 * come from the earlier occurrences of the current token. */
#include "pa.h"

#include <stdlib.h>
#include <string.h>
#define HASH_FUNCTION PA_HASH_WORD
#include <uthash.h>

#define PA_RECORD_MAX_EVENTS (1u << 22)
#define PA_CANDIDATES 48 /* earlier occurrences of a token tried as periods */
#define HASH_BASE 0x9e3779b97f4a7c15ull

static pa_log_t PA_PER_DEVICE(pa_log);
PA_BIND_SHARED(pa_log)

static struct {
  uint64_t *prefix, *power; /* rolling hash of the token sequence */
  uint64_t *prev_same;      /* per event: the previous event with the same token */
  struct last_s {
    uint64_t tok, pos;
    UT_hash_handle hh;
  } *last;                  /* per token: where it was last seen */
  uint64_t live;
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
        !GROW(pa_log.ev_alloc, c) || !GROW(pa_log.launch, c) || !GROW(rec.prefix, c + 1) || !GROW(rec.power, c + 1) ||
        !GROW(rec.prev_same, c))
      return false;
    rec.power[0] = 1, rec.prefix[0] = 0;
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
  struct last_s *l;
  pa_log.tok[n] = tok, pa_log.live[n] = rec.live, pa_log.ev_id[n] = id, pa_log.ev_alloc[n] = alloc;
  pa_log.launch[n] = pa_stats.launches;
  rec.power[n + 1] = rec.power[n] * HASH_BASE;
  rec.prefix[n + 1] = rec.prefix[n] * HASH_BASE + tok;
  HASH_FIND(hh, rec.last, &tok, sizeof tok, l);
  rec.prev_same[n] = l ? l->pos : PA_NO_EVENT;
  if (!l && (l = calloc(1, sizeof *l))) {
    l->tok = tok;
    HASH_ADD(hh, rec.last, tok, sizeof l->tok, l);
  }
  if (l) l->pos = n;
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

/* Hash of events [a, b). */
static uint64_t window(uint64_t a, uint64_t b) {
  return rec.prefix[b] - rec.prefix[a] * rec.power[b - a];
}

/* The last `copies` windows of p events are equal and balanced. */
static bool repeats(uint64_t end, uint64_t p, uint64_t copies) {
  if (copies * p > end) return false;
  uint64_t h = window(end - p, end);
  for (uint64_t k = 1; k < copies; k++) {
    uint64_t e = end - k * p;
    if (window(e - p, e) != h || pa_log.live[e - 1] != pa_log.live[end - 1]) return false;
  }
  return !memcmp(pa_log.tok + end - 2 * p, pa_log.tok + end - p, p * sizeof *pa_log.tok);
}

static bool has_alloc(uint64_t end, uint64_t p) {
  for (uint64_t i = end - p; i < end; i++)
    if (pa_log.ev_alloc[i]) return true;
  return false;
}

uint64_t pa_record_period(uint64_t min_period, uint64_t *cut) {
  uint64_t end = pa_log.nev, copies = (uint64_t)pa_opt.v[PA_OPT_WARMUP].i, j = end ? end - 1 : 0;
  if (copies < 2) copies = 2;
  for (int k = 0; end && k < PA_CANDIDATES && (j = rec.prev_same[j]) != PA_NO_EVENT; k++) {
    uint64_t p = end - 1 - j;
    if (p < min_period || p < 2 || !repeats(end, p, copies) || !has_alloc(end, p)) continue;
    uint64_t best = end - 1;
    for (uint64_t i = end - p; i < end; i++)
      if (pa_log.live[i] < pa_log.live[best]) best = i;
    *cut = best;
    return p;
  }
  return 0;
}

bool pa_record_full(void) { return pa_log.nev + 1 >= PA_RECORD_MAX_EVENTS; }
uint64_t pa_record_events(void) { return pa_log.nev; }

/* Starts a fresh recording; ids restart at 0 (live buffers keep their old ids: they are
 * treated as persistent). */
void pa_record_reset(void) {
  struct last_s *l, *tmp;
  HASH_ITER(hh, rec.last, l, tmp) {
    HASH_DEL(rec.last, l);
    free(l);
  }
  pa_log.nev = pa_log.nalloc = 0;
  rec.live = 0;
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
