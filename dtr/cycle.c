/* The product's served phase, offline: the turn of pages the preload planned its swap
 * schedule over (preload/pageplan.c writes it: PLANALLOC_DUMP's cycle.csv), read back,
 * planned again by the same code (served.c), and replayed turn after turn on the
 * product's own mechanism: one compute stream, and planalloc's two copy streams, one each
 * way, each running its copies in the order they were queued (a copy out waits for the
 * launch before it; a restore waits only for the restores queued before it). */
#include "dtr.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void pa_cycle_file_free(pa_cycle_file_t *f) {
  free(f->size), free(f->born), free(f->gone), free(f->pinned), free(f->op_first), free(f->used), free(f->page_of);
  memset(f, 0, sizeof *f);
}

static int bad(FILE *in, pa_cycle_file_t *f, char *err, size_t len, const char *why, unsigned long line) {
  snprintf(err, len, "line %lu: %s", line, why);
  fclose(in);
  pa_cycle_file_free(f);
  return -1;
}

static bool header(const char *line, pa_cycle_file_t *f) {
  unsigned nop;
  unsigned long long page, budget;
  double lead = 0, map = 0; /* ",lead_ns,L" and ",map_ns,M" last: dumps before them planned for none */
  int got = sscanf(line, "launches,%u,page,%llu,budget,%llu,kernel_ns,%lf,link_bytes_per_ns,%lf,latency_ns,%lf,lead_ns,%lf,map_ns,%lf",
                   &nop, &page, &budget, &f->kernel_ns, &f->bytes_per_ns, &f->latency_ns, &lead, &map);
  f->c.lead_ns = lead, f->map_ns = map;
  return got >= 6 && map >= 0 && map < 1e9 &&
         (f->c.nop = nop, f->page = page, f->budget = budget, nop > 0 && nop < (1u << 30) && page > 0 && f->kernel_ns > 0 &&
                                                                   f->bytes_per_ns > 0 && f->latency_ns >= 0 && lead >= 0 && lead < 1e15);
}

static bool item(const char *line, pa_cycle_file_t *f, size_t *cap) {
  unsigned page, born, gone;
  int slot, pinned;
  if (sscanf(line, "i,%u,%u,%u,%d,%d", &page, &born, &gone, &slot, &pinned) != 5) return false;
  if (born > f->c.nop || gone > f->c.nop || (slot && born == gone) || (slot != 0 && slot != 1) || (pinned != 0 && pinned != 1))
    return false;
  if (slot && f->c.nslots != f->c.nbuf) return false; /* the slots come first */
  void **arrs[] = {(void **)&f->size, (void **)&f->born, (void **)&f->gone, (void **)&f->pinned, (void **)&f->page_of};
  const size_t elem[] = {sizeof *f->size, sizeof *f->born, sizeof *f->gone, 1, sizeof *f->page_of};
  if (!pa_grow_arrays(arrs, elem, 5, cap, (size_t)f->c.nbuf + 1)) return false;
  uint32_t k = f->c.nbuf++;
  f->size[k] = f->page, f->born[k] = born, f->gone[k] = gone, f->pinned[k] = (uint8_t)pinned, f->page_of[k] = page;
  f->c.nslots += (uint32_t)slot;
  return true;
}

/* "u,Q,A B C": position Q (ascending, each once) uses items A, B, C. */
static bool uses(const char *line, pa_cycle_file_t *f, uint32_t *next_q, size_t *cap) {
  char *end;
  unsigned long q = strtoul(line + 2, &end, 10);
  if (*end != ',' || q >= f->c.nop || q < *next_q) return false;
  for (; *next_q <= q; (*next_q)++) f->op_first[*next_q] = (uint32_t)f->nused;
  for (const char *s = end + 1; *s && *s != '\n';) {
    unsigned long k = strtoul(s, &end, 10);
    if (end == s || k >= f->c.nbuf || (*end && *end != ' ' && *end != '\n')) return false;
    if (!pa_grow_arrays((void **[]){(void **)&f->used}, (size_t[]){sizeof *f->used}, 1, cap, f->nused + 1)) return false;
    f->used[f->nused++] = (uint32_t)k;
    s = *end == ' ' ? end + 1 : end;
  }
  return true;
}

int pa_cycle_read(const char *path, pa_cycle_file_t *f, char *err, size_t errlen) {
  memset(f, 0, sizeof *f);
  FILE *in = fopen(path, "r");
  if (!in) return snprintf(err, errlen, "cannot open %s", path), -1;
  char line[1 << 16];
  unsigned long n = 0;
  size_t cap_items = 0, cap_used = 0;
  uint32_t next_q = 0;
  bool head = false;
  while (fgets(line, sizeof line, in)) {
    n++;
    if (!strchr(line, '\n') && !feof(in)) return bad(in, f, err, errlen, "line too long", n);
    if (n == 1 && strncmp(line, "# planalloc cycle 1", 19)) return bad(in, f, err, errlen, "not a planalloc cycle v1 dump", n);
    if (line[0] == '#') continue;
    if (!head) {
      if (!header(line, f) || !(f->op_first = calloc((size_t)f->c.nop + 1, sizeof *f->op_first)))
        return bad(in, f, err, errlen, "bad header (launches, page, budget, kernel_ns, link, latency)", n);
      head = true;
    } else if (!strncmp(line, "i,", 2)) {
      if (next_q || !item(line, f, &cap_items)) return bad(in, f, err, errlen, "bad item", n);
    } else if (!strncmp(line, "u,", 2)) {
      if (!uses(line, f, &next_q, &cap_used)) return bad(in, f, err, errlen, "bad uses", n);
    } else return bad(in, f, err, errlen, "unknown line", n);
  }
  fclose(in);
  if (!head) return snprintf(err, errlen, "%s: no swap schedule in it", path), pa_cycle_file_free(f), -1;
  for (; next_q <= f->c.nop; next_q++) f->op_first[next_q] = (uint32_t)f->nused;
  f->c.size = f->size, f->c.born = f->born, f->c.gone = f->gone, f->c.pinned = f->pinned;
  f->c.op_first = f->op_first, f->c.used = f->used, f->c.ns = f->kernel_ns;
  return 0;
}

/* ---- the replay ---------------------------------------------------------------------------- */

typedef struct replay_s {
  const pa_cycle_file_t *f;
  const pa_cycle_plan_t *p;
  double now, stream_free[2], *ready; /* copies out, in; ready: per item, when its bytes are back (0: on the device) */
  uint8_t *away;
  uint32_t *born_at, *born;      /* the slot items born at each position: born[born_at[q] .. born_at[q + 1]) */
  uint32_t *use_at, *uses;       /* per item its positions, ascending: uses[use_at[i] .. use_at[i + 1]) */
  uint64_t *mark, tick;          /* mark[i] == tick: used at the position being replayed */
  pa_cycle_replay_t *r;
} replay_t;

/* A slot item born again owes nothing: its last life's copy was dropped with it. */
static bool index_births(replay_t *x) {
  const pa_cycle_t *c = &x->f->c;
  x->born_at = calloc((size_t)c->nop + 2, sizeof *x->born_at), x->born = malloc(((size_t)c->nslots + 1) * sizeof *x->born);
  if (!x->born_at || !x->born) return false;
  for (uint32_t i = 0; i < c->nslots; i++)
    if (c->born[i] < c->nop) x->born_at[c->born[i] + 2]++;
  for (uint32_t q = 0; q < c->nop; q++) x->born_at[q + 2] += x->born_at[q + 1];
  for (uint32_t i = 0; i < c->nslots; i++)
    if (c->born[i] < c->nop) x->born[x->born_at[c->born[i] + 1]++] = i;
  return true;
}

/* Where the schedule leaves positions over budget, the product's victims at need fill the
 * gap; the model does too, so it needs each item's uses. */
static bool index_uses(replay_t *x) {
  const pa_cycle_file_t *f = x->f;
  uint32_t n = f->c.nbuf, nop = f->c.nop;
  x->use_at = calloc((size_t)n + 2, sizeof *x->use_at), x->uses = malloc(((size_t)f->op_first[nop] + 1) * sizeof *x->uses);
  x->mark = calloc((size_t)n + 1, sizeof *x->mark);
  if (!x->use_at || !x->uses || !x->mark) return false;
  for (uint32_t k = 0; k < f->op_first[nop]; k++) x->use_at[f->used[k] + 2]++;
  for (uint32_t i = 0; i < n; i++) x->use_at[i + 2] += x->use_at[i + 1];
  for (uint32_t q = 0; q < nop; q++) /* ascending positions per item, as they are met */
    for (uint32_t k = f->op_first[q]; k < f->op_first[q + 1]; k++) x->uses[x->use_at[f->used[k] + 1]++] = q;
  return true;
}

/* Positions from q to item i's next use after it, wrapping; UINT32_MAX if never used. */
static uint32_t next_use(const replay_t *x, uint32_t i, uint32_t q) {
  uint32_t lo = x->use_at[i], hi = x->use_at[i + 1], first = lo;
  if (lo == hi) return UINT32_MAX;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (x->uses[mid] <= q) lo = mid + 1;
    else hi = mid;
  }
  return lo < x->use_at[i + 1] ? x->uses[lo] - q : x->uses[first] + x->f->c.nop - q;
}

static double copy_ns(const replay_t *x) { return x->f->latency_ns + (double)x->f->page / x->f->bytes_per_ns; }

/* Queued on its direction's stream after what is queued there already, not before at. */
static double queue_copy(replay_t *x, bool in, double at) {
  double begin = x->stream_free[in] > at ? x->stream_free[in] : at;
  return x->stream_free[in] = begin + copy_ns(x);
}

/* The victim at need (budget.c's planned one: Belady's): resident, alive, not pinned,
 * not used at q, used again last; UINT32_MAX if none. */
static uint32_t victim(const replay_t *x, uint32_t q) {
  const pa_cycle_t *c = &x->f->c;
  uint32_t pick = UINT32_MAX, far = 0;
  for (uint32_t i = 0; i < c->nbuf; i++) {
    if (x->away[i] || x->mark[i] == x->tick || (c->pinned && c->pinned[i]) || !pa_cycle_alive(c, i, q)) continue;
    uint32_t d = next_use(x, i, q);
    if (pick == UINT32_MAX || d > far) pick = i, far = d;
  }
  return pick;
}

/* Position q over budget with its pages back: victims copied out first, the kernel's
 * memory theirs once those copies ran (as the product's restores follow the copy out
 * whose handle they take); the time it may start. */
static double make_room(replay_t *x, uint32_t q, double start, bool count) {
  const pa_cycle_t *c = &x->f->c;
  uint64_t cap = x->f->budget / x->f->page, resident = 0;
  for (uint32_t i = 0; i < c->nbuf; i++) resident += !x->away[i] && pa_cycle_alive(c, i, q);
  for (uint32_t v; resident > cap && (v = victim(x, q)) != UINT32_MAX; resident--) {
    x->away[v] = 1, x->r->bytes_out += count * x->f->page;
    double done = queue_copy(x, false, start);
    if (done > start) start = done;
  }
  return start;
}

/* Position q: its pages back (the schedule's restores, queued when the host issued it,
 * long before: device-bound), their copies awaited, the kernel, then its copies out. */
static void step(replay_t *x, uint32_t q, bool count) {
  const pa_cycle_plan_t *p = x->p;
  for (uint32_t k = x->born_at[q]; k < x->born_at[q + 1]; k++) x->away[x->born[k]] = 0, x->ready[x->born[k]] = 0;
  for (uint32_t k = p->back_at[q]; k < p->back_at[q + 1]; k++)
    if (x->away[p->backs[k]]) x->away[p->backs[k]] = 0, x->ready[p->backs[k]] = queue_copy(x, true, 0), x->r->bytes_in += count * x->f->page;
  double start = x->now;
  x->tick++;
  for (uint32_t k = x->f->op_first[q]; k < x->f->op_first[q + 1]; k++) x->mark[x->f->used[k]] = x->tick;
  for (uint32_t k = x->f->op_first[q]; k < x->f->op_first[q + 1]; k++) {
    uint32_t i = x->f->used[k];
    if (x->away[i]) x->away[i] = 0, x->ready[i] = queue_copy(x, true, start), x->r->bytes_in += count * x->f->page, x->r->misses += count;
    if (x->ready[i] > start) start = x->ready[i];
  }
  if (p->over && x->f->budget) start = make_room(x, q, start, count); /* none over: no need to look */
  x->now = start + x->f->kernel_ns;
  for (uint32_t k = p->out_at[q]; k < p->out_at[q + 1]; k++)
    if (!x->away[p->outs[k]]) x->away[p->outs[k]] = 1, queue_copy(x, false, x->now), x->r->bytes_out += count * x->f->page;
}

int pa_cycle_replay(const pa_cycle_file_t *f, const pa_cycle_plan_t *p, uint32_t turns, pa_cycle_replay_t *r) {
  memset(r, 0, sizeof *r);
  replay_t x = {.f = f, .p = p, .ready = calloc((size_t)f->c.nbuf + 1, sizeof *x.ready), .away = calloc((size_t)f->c.nbuf + 1, 1), .r = r};
  bool ok = x.ready && x.away && index_births(&x) && index_uses(&x);
  if (!ok) return free(x.ready), free(x.away), free(x.born_at), free(x.born), free(x.use_at), free(x.uses), free(x.mark), -1;
  double began = 0;
  for (uint32_t t = 0; t < turns; t++) {
    if (t + 1 == turns) began = x.now; /* the turns before bring it to its steady state */
    for (uint32_t q = 0; q < f->c.nop; q++) step(&x, q, t + 1 == turns);
  }
  /* copies the turn queued but no kernel waited for would lag further every period: the
   * steady state runs no faster than the link moves its bytes; nor than the host makes
   * its mapping calls (a page out leaves its address, its handle opens another's: an
   * unmap, a map and a set access, 37 us on an H200; the launches' own host time, not
   * in the dump, comes on top of it) */
  double out_ns = (double)(r->bytes_out / f->page) * copy_ns(&x), in_ns = (double)(r->bytes_in / f->page) * copy_ns(&x);
  r->map_ns = (double)((r->bytes_out + r->bytes_in) / f->page) * f->map_ns;
  r->compute_ns = (double)f->c.nop * f->kernel_ns, r->turn_ns = x.now - began;
  r->turn_ns = r->turn_ns > out_ns ? r->turn_ns : out_ns, r->turn_ns = r->turn_ns > in_ns ? r->turn_ns : in_ns;
  r->turn_ns = r->turn_ns > r->map_ns ? r->turn_ns : r->map_ns;
  free(x.ready), free(x.away), free(x.born_at), free(x.born), free(x.use_at), free(x.uses), free(x.mark);
  return 0;
}

/* ---- the plan to follow -------------------------------------------------------------------- */

/* r beats best: sooner by more than 5 %, or as soon (within 5 %) moving fewer bytes. The
 * model charges the host's mapping calls (about 37 us a page moved on an H200,
 * gpu/BENCHMARKS.md) only where they outlast the turn; within it they still take the
 * host's time from its launches, so a plan as fast in the model by moving more is slower
 * on a GPU. */
static bool sooner(const pa_cycle_replay_t *r, const pa_cycle_replay_t *best) {
  if (r->turn_ns < best->turn_ns * 0.95) return true;
  return r->turn_ns <= best->turn_ns * 1.05 && r->bytes_out < best->bytes_out;
}

/* One stretch s tried: planned as if each launch took s times as long, replayed at their
 * own time, kept in *p if it beats it (the first tried always does). -1 without memory;
 * else the positions it leaves over budget. */
static int64_t try_stretch(const pa_cycle_file_t *f, double s, pa_cycle_plan_t *p, pa_cycle_replay_t *r, double *stretch) {
  pa_cycle_file_t g = *f;
  pa_cycle_plan_t q;
  pa_cycle_replay_t rq;
  g.c.ns = f->c.ns * s, g.c.lead_ns = f->c.lead_ns * s;
  if (pa_cycle_plan(&g.c, f->budget, f->bytes_per_ns, f->latency_ns, &q)) return -1;
  q.lead_ns /= s; /* the same launches ahead, at their own time */
  if (pa_cycle_replay(f, &q, 4, &rq)) return pa_cycle_plan_free(&q), -1;
  int64_t over = q.over;
  bool first = !*stretch; /* *r holds nothing yet */
  bool as_good = !first && s < *stretch && rq.turn_ns <= r->turn_ns * 1.005 && rq.bytes_out <= r->bytes_out; /* the less stretched */
  if (first || sooner(&rq, r) || as_good) pa_cycle_plan_free(p), *p = q, *r = rq, *stretch = s;
  else pa_cycle_plan_free(&q);
  return over;
}

/* Planned at the launches' measured time, a schedule keeps only the swaps whose copies
 * finish within it: where the link cannot hide the bytes behind kernels that short, it
 * drops them all, and victims chosen at need move the same bytes with every launch
 * waiting for them (ResNet-50 on an H200 at half its peak: no swap planned, 2 GB a step at
 * need, 11x the step). The kernels will wait for copies either way, so where the turn
 * planned at their time leaves positions over budget it is planned again as if each
 * launch took PA_STRETCH_MAX, then half that ... down to 2 times as long, while none is
 * over (a plan with positions over halves its lead again and again: the costly ones come
 * last), and the plan whose replay ends soonest is kept. */
int pa_cycle_plan_best(const pa_cycle_file_t *f, pa_cycle_plan_t *p, pa_cycle_replay_t *r, double *stretch) {
  *p = (pa_cycle_plan_t){.nop = f->c.nop}, *stretch = 0;
  int64_t over = try_stretch(f, 1, p, r, stretch);
  for (double s = PA_STRETCH_MAX; over > 0 && s >= 2; s /= 2) {
    int64_t o = try_stretch(f, s, p, r, stretch);
    if (o) { /* over here too, less stretched would be as well; or no memory */
      over = o < 0 ? o : 0;
      break;
    }
  }
  if (over < 0) pa_cycle_plan_free(p), *stretch = 1;
  return over < 0 ? -1 : 0;
}
