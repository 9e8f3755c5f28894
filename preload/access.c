/* The access trace: which recorded buffers each launch touched, kept while recording
 * (launch.c logs, alloc.c resets it with the recording) for the budget's schedule
 * (schedule.c) and the dump. Compact because it grows with every recorded launch: one
 * record per launch that touched a buffer, its buffer ids in one array. A store: it
 * calls nothing of planalloc's but the growable array. pa_mu held throughout. */
#include "pa.h"

typedef struct launch_rec_s {
  uint64_t launch, event; /* event: allocation events logged before it (the trace's clock) */
  uintptr_t stream;
  uint32_t first; /* its ids are ids[first .. next launch's first) */
} launch_rec_t;

static struct {
  launch_rec_t *rec;
  uint32_t *ids;
  size_t nrec, cap_rec, nids, cap_ids;
} PA_PER_DEVICE(lc);
PA_BIND(lc)
#define lc PA_THIS(lc)

#define MAX_LOGGED (1u << 24) /* entries of the access trace kept, each kind */

void pa_access_log(uint64_t launch, CUstream s, uint32_t id) {
  bool same = lc.nrec && lc.rec[lc.nrec - 1].launch == launch;
  if (!pa_grow(&lc.ids, &lc.cap_ids, lc.nids + 1, sizeof *lc.ids, MAX_LOGGED)) return;
  if (!same && !pa_grow(&lc.rec, &lc.cap_rec, lc.nrec + 1, sizeof *lc.rec, MAX_LOGGED)) return;
  if (!same) lc.rec[lc.nrec++] = (launch_rec_t){launch, pa_log.nev, (uintptr_t)s, (uint32_t)lc.nids};
  lc.ids[lc.nids++] = id;
}

void pa_access_reset(void) { lc.nrec = lc.nids = 0; }

/* The first record of a launch numbered at least from. */
static size_t first_record(uint64_t from) {
  size_t lo = 0, hi = lc.nrec;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (lc.rec[mid].launch < from) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

void pa_access_each(uint64_t from, uint64_t to, pa_access_fn fn, void *ctx) {
  for (size_t r = first_record(from); r < lc.nrec && lc.rec[r].launch < to; r++) {
    size_t end = r + 1 < lc.nrec ? lc.rec[r + 1].first : lc.nids;
    for (size_t i = lc.rec[r].first; i < end; i++) fn(ctx, lc.rec[r].launch, lc.ids[i]);
  }
}

void pa_access_dump(FILE *f) {
  fprintf(f, "# planalloc access 2\nlaunch,stream,buffer,event\n");
  for (size_t r = 0; r < lc.nrec; r++) {
    size_t end = r + 1 < lc.nrec ? lc.rec[r + 1].first : lc.nids;
    for (size_t i = lc.rec[r].first; i < end; i++)
      if (!(lc.ids[i] & PA_ACCESS_OLD)) fprintf(f, "%llu,%#llx,%u,%llu\n", (unsigned long long)lc.rec[r].launch,
              (unsigned long long)lc.rec[r].stream, lc.ids[i], (unsigned long long)lc.rec[r].event);
  }
}
