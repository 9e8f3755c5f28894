/* Launches: which of planalloc's buffers a kernel may touch. Every 8-byte word of every
 * parameter (by-value structs too) and of a packed `extra` buffer is looked up in the
 * pool. Parameter layouts come from the driver once per function. While recording, each
 * hit is logged (launch, stream, buffer, and the allocation events before it, which puts
 * it on the recorded trace's clock) in the access trace (access.c) the budget plans
 * from. Under a budget every buffer hit is held resident for the launch (budget.c).
 * Pointers stored in device memory are invisible here. */
#include "pa.h"

#include <stdlib.h>
#include <string.h>
#define HASH_FUNCTION PA_HASH_WORD
#include <uthash.h>

#define MAX_PARAMS 256

typedef struct layout_s {
  void *fn;
  uint32_t n;
  uint32_t *off, *size;
  UT_hash_handle hh;
} layout_t;

static struct {
  layout_t *layouts;
  uint64_t launches;
} PA_PER_DEVICE(lc);
PA_BIND(lc)
#define lc PA_THIS(lc)

static int param_info(void *f, bool is_kernel, size_t i, size_t *off, size_t *size) {
  int rc = CUDA_ERROR_NOT_SUPPORTED;
  if (!is_kernel && pa_cu.FuncGetParamInfo) rc = pa_cu.FuncGetParamInfo((CUfunction)f, i, off, size);
  if (rc && pa_cu.KernelGetParamInfo) rc = pa_cu.KernelGetParamInfo((CUkernel)f, i, off, size);
  return rc;
}

static void free_layout(layout_t *l) {
  if (l) free(l->off), free(l->size), free(l);
}

static layout_t *build_layout(void *f, bool is_kernel) {
  layout_t *l = calloc(1, sizeof *l);
  uint32_t off[MAX_PARAMS], size[MAX_PARAMS], n = 0;
  size_t o, s;
  while (n < MAX_PARAMS && param_info(f, is_kernel, n, &o, &s) == CUDA_SUCCESS)
    off[n] = (uint32_t)o, size[n] = (uint32_t)s, n++;
  if (!l || !(l->off = malloc((n + 1) * sizeof *off)) || !(l->size = malloc((n + 1) * sizeof *size))) {
    free_layout(l);
    return NULL;
  }
  memcpy(l->off, off, n * sizeof *off), memcpy(l->size, size, n * sizeof *size);
  l->fn = f, l->n = n;
  return l;
}

/* The cached layout (pa_mu held). A miss asks the driver with pa_mu released; a lost race
 * only builds one twice. */
static layout_t *layout_of(void *f, bool is_kernel) {
  layout_t *l, *built;
  HASH_FIND_PTR(lc.layouts, &f, l);
  if (l) return l;
  pthread_mutex_unlock(&pa_mu);
  built = build_layout(f, is_kernel);
  pthread_mutex_lock(&pa_mu);
  HASH_FIND_PTR(lc.layouts, &f, l);
  if (l || !built) {
    free_layout(built);
    return l;
  }
  HASH_ADD_PTR(lc.layouts, fn, built);
  return built;
}

/* One word that may be a pointer (pa_mu held). */
static void word(uint64_t v, uint64_t launch, CUstream s, bool record) {
  if (!pa_pool_contains((CUdeviceptr)v)) return;
  pa_stats.launch_hits++;
  if (pa_limit_on()) pa_budget_touch((uint64_t)v - pa_pool_base(), s);
  uint32_t id = record ? pa_alloc_id_at((CUdeviceptr)v) : UINT32_MAX;
  if (id != UINT32_MAX) pa_access_log(launch, s, id);
}

static void scan(const unsigned char *p, size_t len, uint64_t launch, CUstream s, bool record) {
  for (size_t k = 0; k + 8 <= len; k += 8) {
    uint64_t v;
    memcpy(&v, p + k, 8);
    word(v, launch, s, record);
  }
}

/* A parameter's words are 8-aligned in the device layout, not in its host copy. */
static void scan_param(const unsigned char *host, size_t off, size_t size, uint64_t launch,
                       CUstream s, bool record) {
  size_t first = (off + 7) / 8 * 8;
  if (first < off + size) scan(host + (first - off), off + size - first, launch, s, record);
}

static void scan_extra(void **extra, uint64_t launch, CUstream s, bool record) {
  const unsigned char *buf = NULL;
  size_t len = 0;
  for (int i = 0; extra[i] != CU_LAUNCH_PARAM_END && i < 16; i += 2) {
    if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) buf = extra[i + 1];
    else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE && extra[i + 1]) len = *(size_t *)extra[i + 1];
    else break;
  }
  if (buf) scan(buf, len, launch, s, record);
}

bool pa_launch_seen(CUfunction f, bool is_kernel, CUstream s, void **params, void **extra) {
  if (!pa_active() || !pa_pool_base()) return false;
  pthread_mutex_lock(&pa_mu);
  pa_stats.launches++;
  bool order = pa_fence_mark(s);
  layout_t *l = params ? layout_of(f, is_kernel) : NULL;
  uint64_t launch = lc.launches++;
  bool record = pa_recording();
  pa_budget_tick(true);
  uint64_t hits = pa_stats.launch_hits;
  for (uint32_t i = 0; l && i < l->n; i++)
    if (params[i]) scan_param(params[i], l->off[i], l->size[i], launch, s, record);
  if (extra && !params) scan_extra(extra, launch, s, record);
  if (pa_events_on())
    pa_events_write(&(pa_logged_t){'l', s, 0, pa_stats.launch_hits - hits, 0, NULL, PA_CLOCK_OFF, PA_CLOCK_OFF, 0, PA_CLOCK_OFF});
  pthread_mutex_unlock(&pa_mu);
  return order;
}

void pa_launch_captured(void) {
  pthread_mutex_lock(&pa_mu);
  pa_stats.launches_captured++;
  pthread_mutex_unlock(&pa_mu);
}
