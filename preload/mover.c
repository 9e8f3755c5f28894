/* The budget's mover (issue #39): a thread of planalloc's own, one a device, that carries
 * out what the swap schedule asks after each launch (the page runs that go out, the
 * buffers that come back ahead of their launch), so that those mapping calls run beside
 * the program's launches instead of between them. On the H200 the budgeted served
 * phase spent 56 ms a ResNet-50 step and 126 ms a GPT step in mapping calls on the
 * program's thread (gpu/BENCHMARKS.md, 2026-11-28), while a thread looping map, access
 * and unmap slowed another thread's launches and the device's work by nothing
 * measurable (tests/gpu/contend.c: 3.4 against 3.5 us a launch; 35.1 against 34.8 ms).
 * The launching thread only queues. A launch or allocation whose pages are away waits
 * for the moves queued before it (pa_mover_drain), then brings back what is still away
 * itself, as without the mover (the pool's states under map_mu: whoever comes first
 * maps a page, the other finds it mapped); a batch queued more than the schedule's lead
 * of launches ago is dropped (its launches came and went). Full, not started or refused a thread, the caller moves
 * inline, as before. Measured on the H200 (2026-11-28): no faster. The program waited
 * for the mover as long as it saved (GPT at half 2.02x either way), since the driver
 * maps on one thread at a time (21.8 pages a ms by one thread, 19.7 by four), and the
 * births mapped ahead took spares the restores then missed. So PLANALLOC_MOVER is off by
 * default: what it leaves is the pages mapped anew, wherever they are mapped. */
#include "pa.h"

#include <stdlib.h>

#define RING 2048 /* moves queued, a few dozen launches' worth */

typedef struct {
  pa_move_t m;
  uint64_t launch, lead; /* the program's launches when it was queued; dropped past lead more */
  uint16_t nout, nin, backs, nbirth; /* on a batch's first move: its shape */
} slot_t;

static struct {
  pthread_mutex_t mu;
  pthread_cond_t cv, moved; /* work queued; a batch done */
  slot_t ring[RING];
  uint64_t head, tail, done; /* taken up to head, queued up to tail, moved up to done */
  pthread_t thread;
  pa_mover_fn move; /* the budget's: what a batch does (no call edge back to the policy) */
  int state; /* 0 none, 1 running, 2 refused (inline from then on), 3 stopped */
  bool stop;
  atomic_uint_fast64_t batches, dropped, inline_batches;
} PA_PER_DEVICE(mv) = {[0 ... PA_SLOTS - 1] = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER, .moved = PTHREAD_COND_INITIALIZER}};
PA_BIND(mv)
#define mv PA_THIS(mv)

static PA_TLS bool in_mover;

static bool stale(const slot_t *first) {
  pthread_mutex_lock(&pa_mu);
  uint64_t now = pa_users_launches();
  pthread_mutex_unlock(&pa_mu);
  return now - first->launch > first->lead;
}

/* One batch taken off the ring (mv.mu held, released while it moves). */
static void move_batch(void) {
  slot_t first = mv.ring[mv.head % RING];
  pa_mover_fn move = mv.move;
  size_t n = (size_t)first.nout + first.nin + first.nbirth;
  pa_move_t moves[PA_MOVES_MAX];
  for (size_t i = 0; i < n; i++) moves[i] = mv.ring[(mv.head + i) % RING].m;
  mv.head += n;
  pthread_mutex_unlock(&mv.mu);
  pa_moves_t m = {moves, first.nout, moves + first.nout, first.nin, first.backs, moves + first.nout + first.nin, first.nbirth};
  if (stale(&first)) atomic_fetch_add(&mv.dropped, 1);
  else move(&m), atomic_fetch_add(&mv.batches, 1);
  pthread_mutex_lock(&mv.mu);
  mv.done += n;
  pthread_cond_broadcast(&mv.moved);
}

static void *mover(void *arg) {
  int slot = (int)(intptr_t)arg;
  pa_slot_set(slot);
  pa_depth++, in_mover = true; /* its driver calls pass straight through */
  pa_htime_mover();
  CUcontext c = atomic_load(&pa_pool_ctx);
  if (c) (void)pa_cu.CtxSetCurrent(c);
  pthread_mutex_lock(&mv.mu);
  while (!mv.stop) {
    if (mv.head == mv.tail) pthread_cond_wait(&mv.cv, &mv.mu);
    else move_batch();
  }
  pthread_mutex_unlock(&mv.mu);
  return NULL;
}

/* mv.mu held. Started once; a refused thread leaves the moves inline for good. */
static bool running(void) {
  if (mv.state == 0) {
    pthread_attr_t a;
    bool ok = !pthread_attr_init(&a) && !pthread_attr_setstacksize(&a, 256 << 10);
    ok = ok && !pthread_create(&mv.thread, &a, mover, (void *)(intptr_t)pa_slot);
    pthread_attr_destroy(&a);
    mv.state = ok ? 1 : 2;
    if (!ok) pa_warn("the budget's mover thread could not start: its copies and mappings run on the program's threads");
  }
  return mv.state == 1;
}

static pa_move_t nth(const pa_moves_t *m, size_t i) {
  return i < m->nout ? m->out[i] : i < m->nout + m->nin ? m->in[i - m->nout] : m->birth[i - m->nout - m->nin];
}

bool pa_mover_post(const pa_moves_t *m, uint64_t launch, uint64_t lead, pa_mover_fn move) {
  size_t n = m->nout + m->nin + m->nbirth;
  if (!n) return true;
  if (pa_opt.v[PA_OPT_MOVER].i == PA_MOVER_OFF || in_mover) return false;
  pthread_mutex_lock(&mv.mu);
  mv.move = move;
  bool ok = n <= PA_MOVES_MAX && running() && !mv.stop && mv.tail - mv.head + n <= RING;
  for (size_t i = 0; ok && i < n; i++)
    mv.ring[(mv.tail + i) % RING] = (slot_t){nth(m, i), launch, lead, (uint16_t)m->nout, (uint16_t)m->nin, (uint16_t)m->backs, (uint16_t)m->nbirth};
  if (ok) mv.tail += n, pthread_cond_signal(&mv.cv);
  pthread_mutex_unlock(&mv.mu);
  if (!ok) atomic_fetch_add(&mv.inline_batches, 1);
  return ok;
}

void pa_mover_stop(void) {
  pthread_mutex_lock(&mv.mu);
  bool joins = mv.state == 1;
  mv.stop = true, mv.state = joins ? 3 : mv.state;
  pthread_cond_signal(&mv.cv);
  pthread_cond_broadcast(&mv.moved);
  pthread_mutex_unlock(&mv.mu);
  if (joins) pthread_join(mv.thread, NULL);
}

/* Mapped by the launch instead, a page the mover was about to bring back would take
 * another's handle (a remap, and that page's restore another), and one it was about to
 * send out would not yet have freed the handle the launch needs: the launch waits for
 * the moves queued before it, as they ran inline before it. */
void pa_mover_drain(void) {
  if (in_mover || pa_opt.v[PA_OPT_MOVER].i == PA_MOVER_OFF) return;
  pthread_mutex_lock(&mv.mu);
  uint64_t want = mv.tail, t = mv.state == 1 && mv.done < want ? pa_wait_begin() : 0;
  while (mv.state == 1 && !mv.stop && mv.done < want) pthread_cond_wait(&mv.moved, &mv.mu);
  pthread_mutex_unlock(&mv.mu);
  if (t) pa_wait_end(PA_WAIT_MOVER, t);
}

void pa_mover_stats(pa_mover_stats_t *s) {
  s->batches = atomic_load(&mv.batches), s->dropped = atomic_load(&mv.dropped);
  s->inline_batches = atomic_load(&mv.inline_batches);
}
