/* The planned victims of the served phase: for every buffer of the recorded iteration,
 * the launches of the iteration that touch it, by position. The served phase repeats the
 * iteration (that is what it serves), so a buffer's next use is known, not guessed:
 * Belady's choice -- the buffer used again farthest ahead -- instead of the reactive
 * score's staleness. A buffer is a plan slot (its address changes from period to period
 * with the slot's instance) or a fixed one, live through the iteration at one address.
 * Positions: the period's launches in order, launches before period event p come from
 * the recording's launches between its events s+p-1 and s+p (s: the period's first
 * event), so the served clock (alloc.c's period event) resynchronises the position at
 * every allocation and free. Built once per plan, pa_mu held. */
#include "dtr.h"
#include "pa.h"
#include "planner.h"

#include <stdlib.h>
#define HASH_FUNCTION PA_HASH_WORD
#include <uthash.h>

#define NONE UINT32_MAX

typedef struct fixed_s {
  uint64_t off, size, key; /* key: the access trace's name for it (8 bytes: the hash's word) */
  uint32_t ident;
  UT_hash_handle hh, hh_key;
} fixed_t;

struct pa_sched_s {
  uint64_t period, nlaunch, base; /* base: the recording's launch number of position 0 */
  uint32_t nslots, nident, nid;
  uint32_t *ident_of; /* per recording id */
  uint64_t *first;    /* per period event, and one past: the position of its first launch */
  uint32_t *gone_at;  /* per slot: the first position after its free */
  uint32_t *born_at;  /* per slot: the first position after its allocation */
  uint64_t *size;     /* per ident: slots' from the plan, fixed ones' appended by pa_sched_finish */
  uint32_t *use_at;   /* per ident, and one past: its uses are uses[use_at[i] .. use_at[i+1]) */
  uint32_t *uses;     /* positions, ascending per ident */
  uint32_t *used_at;  /* per position, and one past: its idents are used[used_at[q] .. used_at[q+1]) */
  uint32_t *used;
  fixed_t *fixed, *by_off, *by_key;
  size_t nfixed, cap_fixed;
  uint64_t page, page_first; /* pa_sched_place: the pool's page, the plan range's first */
  uint32_t npages;
  uint32_t *birth_at, *births; /* per page of the range, and one past: its slots' births */
  uint32_t *born_first, *born;  /* per position, and one past: the slots born just before it */
  uint64_t *slot_off;           /* per slot: its pool offset (pa_sched_place) */
};

void pa_sched_free(pa_sched_t *s) {
  if (!s) return;
  HASH_CLEAR(hh, s->by_off);
  HASH_CLEAR(hh_key, s->by_key);
  free(s->born_at), free(s->size), free(s->birth_at), free(s->births), free(s->born_first), free(s->born), free(s->slot_off);
  free(s->ident_of), free(s->first), free(s->gone_at), free(s->use_at), free(s->uses), free(s->used_at), free(s->used), free(s->fixed),
      free(s);
}

static uint64_t cyclic(const pa_sched_t *s, uint64_t to, uint64_t at);

static void name_slot(pa_sched_t *s, uint64_t ev, uint32_t slot) {
  if (pa_log.ev_alloc[ev]) s->ident_of[pa_log.ev_id[ev]] = slot;
}

/* Both instances a period sees of each slot: this period's, and the previous period's
 * (a wrapping slot's, still live at the period's start). */
pa_sched_t *pa_sched_new(const pa_plan_slots_t *p, uint64_t start) {
  uint64_t period = p->period;
  pa_sched_t *s = start && start + period <= pa_log.nev ? calloc(1, sizeof *s) : NULL;
  if (!s) return NULL;
  s->period = period, s->nslots = s->nident = p->nslots, s->nid = (uint32_t)pa_log.nalloc;
  s->ident_of = malloc((s->nid + 1) * sizeof *s->ident_of);
  s->first = malloc((period + 1) * sizeof *s->first);
  s->gone_at = malloc((s->nslots + 1) * sizeof *s->gone_at);
  s->born_at = malloc((s->nslots + 1) * sizeof *s->born_at);
  s->size = malloc((s->nslots + 1) * sizeof *s->size);
  if (!s->ident_of || !s->first || !s->gone_at || !s->born_at || !s->size) return pa_sched_free(s), NULL;
  for (uint32_t i = 0; i < s->nid; i++) s->ident_of[i] = NONE;
  s->base = pa_log.launch[start - 1];
  for (uint64_t t = 0; t <= period; t++) s->first[t] = pa_log.launch[start + t - 1] - s->base;
  s->nlaunch = s->first[period];
  for (uint32_t k = 0; k < s->nslots; k++) s->gone_at[k] = (uint32_t)s->first[p->free_at[k] + 1];
  for (uint64_t t = 0; t < period; t++) {
    uint32_t slot = p->is_alloc[t] ? p->slot_at[t] : PA_PLAN_NONE;
    if (slot == PA_PLAN_NONE) continue;
    s->born_at[slot] = (uint32_t)s->first[t + 1], s->size[slot] = (uint64_t)p->bufs[slot].size;
    name_slot(s, start + t, slot);
    if (start + t >= period) name_slot(s, start + t - period, slot);
  }
  return s;
}

/* Keys that are no slot: fixed buffers, hashed once the array stops moving (finish). */
bool pa_sched_add_fixed(pa_sched_t *s, uint32_t key, uint64_t off, uint64_t size) {
  if (key == NONE || (key < s->nid && s->ident_of[key] != NONE)) return true;
  if (!pa_grow(&s->fixed, &s->cap_fixed, s->nfixed + 1, sizeof *s->fixed, NONE / 2)) return false;
  s->fixed[s->nfixed++] = (fixed_t){.off = off, .size = size, .key = key, .ident = s->nident++};
  return true;
}

static uint32_t ident_of(const pa_sched_t *s, uint32_t key) {
  if (key < s->nid && s->ident_of[key] != NONE) return s->ident_of[key];
  fixed_t *f;
  uint64_t k = key;
  HASH_FIND(hh_key, s->by_key, &k, sizeof k, f);
  return f ? f->ident : NONE;
}

typedef struct fill_s {
  pa_sched_t *s;
  uint32_t *at; /* counting pass: counts; filling pass: next free index */
  bool count;
} fill_t;

static void one_use(void *ctx, uint64_t launch, uint32_t id) {
  fill_t *f = ctx;
  uint32_t i = ident_of(f->s, id);
  if (i == NONE) return;
  uint32_t pos = (uint32_t)(launch - f->s->base);
  if (f->count) return (void)f->at[i]++;
  if (f->at[i] > f->s->use_at[i] && f->s->uses[f->at[i] - 1] == pos) return; /* one launch, two words */
  f->s->uses[f->at[i]++] = pos;
}

/* The uses, counted then placed (a launch touching a buffer twice counts twice and
 * stores once: its range keeps a hole, which lower_bound never reaches past). */
static bool place_uses(pa_sched_t *s) {
  uint32_t *at = calloc(s->nident + 1, sizeof *at);
  s->use_at = malloc((s->nident + 1) * sizeof *s->use_at);
  if (!at || !s->use_at) return free(at), false;
  fill_t f = {s, at, true};
  pa_access_each(s->base, s->base + s->nlaunch, one_use, &f);
  uint32_t total = 0;
  for (uint32_t i = 0; i < s->nident; i++) s->use_at[i] = total, total += at[i], at[i] = s->use_at[i];
  s->use_at[s->nident] = total;
  s->uses = malloc((total + 1) * sizeof *s->uses);
  f.count = false;
  if (s->uses) pa_access_each(s->base, s->base + s->nlaunch, one_use, &f);
  for (uint32_t i = 0; s->uses && i < s->nident; i++) /* the holes: repeat the last use */
    for (uint32_t k = at[i]; k < s->use_at[i + 1]; k++) s->uses[k] = k > s->use_at[i] ? s->uses[k - 1] : 0;
  free(at);
  return s->uses != NULL;
}

/* The holes place_uses left repeat an ident's previous use: no second entry. */
static bool first_of_its_launch(const pa_sched_t *s, uint32_t ident, uint32_t k) {
  return k == s->use_at[ident] || s->uses[k] != s->uses[k - 1];
}

/* The uses again, by position: what the prefetch looks up for the launches ahead. */
static bool place_by_position(pa_sched_t *s) {
  s->used_at = calloc(s->nlaunch + 2, sizeof *s->used_at);
  s->used = malloc((s->use_at[s->nident] + 1) * sizeof *s->used);
  if (!s->used_at || !s->used) return false;
  uint32_t *count = s->used_at + 1; /* count[q] lands on used_at[q + 1]: prefix sums in place */
  for (uint32_t i = 0; i < s->nident; i++)
    for (uint32_t k = s->use_at[i]; k < s->use_at[i + 1]; k++) count[s->uses[k]] += first_of_its_launch(s, i, k);
  for (uint64_t q = 0; q < s->nlaunch; q++) s->used_at[q + 1] += s->used_at[q];
  for (uint32_t i = 0; i < s->nident; i++) /* used_at[q] advances while filling, ... */
    for (uint32_t k = s->use_at[i]; k < s->use_at[i + 1]; k++)
      if (first_of_its_launch(s, i, k)) s->used[s->used_at[s->uses[k]]++] = i;
  for (uint64_t q = s->nlaunch; q > 0; q--) s->used_at[q] = s->used_at[q - 1]; /* ... to the next one's start */
  s->used_at[0] = 0;
  return true;
}

bool pa_sched_finish(pa_sched_t *s) {
  for (size_t i = 0; i < s->nfixed; i++) {
    HASH_ADD(hh, s->by_off, off, sizeof s->fixed[i].off, &s->fixed[i]);
    HASH_ADD(hh_key, s->by_key, key, sizeof s->fixed[i].key, &s->fixed[i]);
  }
  uint64_t *size = realloc(s->size, (s->nident + 1) * sizeof *size);
  if (!size) return false;
  s->size = size;
  for (size_t i = 0; i < s->nfixed; i++) size[s->nslots + i] = s->fixed[i].size;
  if (s->nlaunch >= NONE || !place_uses(s) || !place_by_position(s)) return false;
  HASH_CLEAR(hh_key, s->by_key);
  free(s->ident_of), s->ident_of = NULL;
  if (pa_opt.v[PA_OPT_VERBOSE].i)
    pa_info("budget schedule: %llu launches an iteration, %u slots and %zu fixed buffers, %u uses",
            (unsigned long long)s->nlaunch, s->nslots, s->nfixed, s->use_at[s->nident]);
  return true;
}

uint32_t pa_sched_slots(const pa_sched_t *s) { return s->nslots; }

/* ---- births by page: a page about to take a new buffer is a poor victim -------------------- */

/* Slot k's birth on every page of the range its bytes cover: counted (count), else
 * stored at each page's next free index. */
static void slot_pages(pa_sched_t *s, const pa_plan_slots_t *p, uint64_t base, uint32_t k, bool count) {
  uint64_t size = (uint64_t)p->bufs[k].size, at = base + (uint64_t)p->off[k];
  if (!size) return;
  for (uint64_t q = at / s->page; q <= (at + size - 1) / s->page && q - s->page_first < s->npages; q++) {
    uint32_t i = (uint32_t)(q - s->page_first);
    if (count) s->birth_at[i + 1]++;
    else s->births[s->birth_at[i]++] = s->born_at[k];
  }
}

static bool drop_births(pa_sched_t *s) {
  free(s->birth_at), free(s->births), s->birth_at = s->births = NULL, s->npages = 0;
  free(s->born_first), free(s->born), free(s->slot_off), s->born_first = s->born = NULL, s->slot_off = NULL;
  return false;
}

/* The slots born before each position (a counting sort by born_at, wrapped into the
 * iteration), and each slot's pool offset: what the mover maps ahead of the births. */
static bool births_by_position(pa_sched_t *s, const pa_plan_slots_t *p, uint64_t base) {
  if (!s->nlaunch) return true;
  s->born_first = calloc(s->nlaunch + 2, sizeof *s->born_first);
  s->born = malloc((s->nslots + 1) * sizeof *s->born), s->slot_off = malloc((s->nslots + 1) * sizeof *s->slot_off);
  if (!s->born_first || !s->born || !s->slot_off) return false;
  for (uint32_t k = 0; k < s->nslots; k++) s->born_first[s->born_at[k] % s->nlaunch + 1]++;
  for (uint64_t q = 0; q < s->nlaunch; q++) s->born_first[q + 1] += s->born_first[q];
  for (uint32_t k = 0; k < s->nslots; k++) s->born[s->born_first[s->born_at[k] % s->nlaunch]++] = k;
  for (uint64_t q = s->nlaunch; q > 0; q--) s->born_first[q] = s->born_first[q - 1];
  s->born_first[0] = 0;
  for (uint32_t k = 0; k < s->nslots; k++) s->slot_off[k] = base + (uint64_t)p->off[k];
  return true;
}

uint32_t pa_sched_born_at(const pa_sched_t *s, uint64_t at, const uint32_t **slots) {
  if (!s->born_first) return 0;
  uint64_t q = at % s->nlaunch;
  *slots = s->born + s->born_first[q];
  return s->born_first[q + 1] - s->born_first[q];
}

void pa_sched_slot_range(const pa_sched_t *s, uint32_t slot, uint64_t *off, uint64_t *size) {
  *off = s->slot_off[slot], *size = s->size[slot];
}

bool pa_sched_place(pa_sched_t *s, const pa_plan_slots_t *p, uint64_t base, uint64_t page) {
  drop_births(s);
  if (!page) return false;
  s->page = page, s->page_first = base / page;
  uint64_t n = (base + p->pool + page - 1) / page - s->page_first;
  s->birth_at = n < NONE ? calloc(n + 2, sizeof *s->birth_at) : NULL;
  if (!s->birth_at) return false;
  s->npages = (uint32_t)n;
  for (uint32_t k = 0; k < s->nslots; k++) slot_pages(s, p, base, k, true);
  for (uint32_t i = 0; i < s->npages; i++) s->birth_at[i + 1] += s->birth_at[i];
  if (!(s->births = malloc((s->birth_at[s->npages] + 1) * sizeof *s->births))) return drop_births(s);
  for (uint32_t k = 0; k < s->nslots; k++) slot_pages(s, p, base, k, false); /* birth_at[i] moves to i+1's start */
  for (uint32_t i = s->npages; i > 0; i--) s->birth_at[i] = s->birth_at[i - 1];
  s->birth_at[0] = 0;
  return births_by_position(s, p, base) || drop_births(s);
}

uint64_t pa_sched_next_birth(const pa_sched_t *s, uint64_t lo, uint64_t hi, uint64_t at) {
  uint64_t soonest = UINT64_MAX;
  if (!s->npages || !s->nlaunch) return soonest;
  uint64_t first = lo / s->page, end = (hi + s->page - 1) / s->page, last = s->page_first + s->npages;
  for (uint64_t q = first > s->page_first ? first : s->page_first; q < end && q < last; q++) {
    uint32_t i = (uint32_t)(q - s->page_first);
    for (uint32_t k = s->birth_at[i]; k < s->birth_at[i + 1]; k++) {
      uint64_t d = cyclic(s, s->births[k], at);
      if (d < soonest) soonest = d;
    }
  }
  return soonest;
}

uint32_t pa_sched_fixed(const pa_sched_t *s, uint64_t off, uint64_t size) {
  fixed_t *f;
  HASH_FIND(hh, s->by_off, &off, sizeof off, f);
  return f && f->size == size ? f->ident : NONE;
}

bool pa_sched_fixed_range(const pa_sched_t *s, uint32_t ident, uint64_t *off, uint64_t *size) {
  if (ident < s->nslots || ident - s->nslots >= s->nfixed) return false;
  const fixed_t *f = &s->fixed[ident - s->nslots];
  return *off = f->off, *size = f->size, true;
}

uint64_t pa_sched_launches(const pa_sched_t *s) { return s->nlaunch; }

uint64_t pa_sched_first(const pa_sched_t *s, uint64_t pos) { return s->first[pos % s->period]; }
uint64_t pa_sched_end(const pa_sched_t *s, uint64_t pos) { return s->first[pos % s->period + 1]; }
uint32_t pa_sched_idents(const pa_sched_t *s) { return s->nident; }

uint32_t pa_sched_used_at(const pa_sched_t *s, uint64_t at, const uint32_t **idents) {
  if (!s->nlaunch) return 0;
  uint64_t q = at % s->nlaunch;
  *idents = s->used + s->used_at[q];
  return s->used_at[q + 1] - s->used_at[q];
}

static uint64_t cyclic(const pa_sched_t *s, uint64_t to, uint64_t at) {
  return (to + s->nlaunch - at % s->nlaunch) % s->nlaunch;
}

/* Launches from position at until ident's next use (0: the next launch uses it);
 * UINT64_MAX if it has none: the iteration never uses it, or a slot's instance is
 * freed first (dead: its copy goes out, never back). */
uint64_t pa_sched_next_use(const pa_sched_t *s, uint32_t ident, uint64_t at) {
  uint32_t first = s->use_at[ident], end = s->use_at[ident + 1];
  if (first == end || !s->nlaunch) return UINT64_MAX;
  uint32_t lo = pa_lower_u32(s->uses, first, end, at);
  uint64_t next = cyclic(s, lo < end ? s->uses[lo] : s->uses[first], at);
  /* gone_at is in [0, nlaunch]: nlaunch is after the period's last launch, not 0 */
  uint64_t gone = ident < s->nslots ? s->gone_at[ident] : 0, until_gone = gone >= at ? gone - at : gone + s->nlaunch - at;
  bool dead = ident < s->nslots && next >= until_gone;
  return dead ? UINT64_MAX : next;
}

/* ---- what the swap schedule in pages reads (pageplan.c) ----------------------------------- */

void pa_sched_life(const pa_sched_t *s, uint32_t slot, uint32_t *born, uint32_t *gone) {
  *born = s->born_at[slot], *gone = s->gone_at[slot];
}

uint32_t pa_sched_uses(const pa_sched_t *s, uint32_t ident) { return s->use_at[ident + 1] - s->use_at[ident]; }
