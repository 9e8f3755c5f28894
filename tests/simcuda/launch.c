/* Kernels: registered host functions with a device-ABI parameter layout (so
 * cuFuncGetParamInfo answers as the real driver does), launched through every launch
 * entry point, run on the stream's worker with the argument values captured at launch.
 * When a kernel runs, every 8-byte word of its arguments that points into the device
 * range must point into live memory; otherwise the launch is counted and reported. */
#include "sim.h"

#include <stdlib.h>
#include <string.h>

static sim_func_t *funcs; /* registry of functions and kernels; guarded by sim.mu */

static size_t align_of(size_t size) {
  size_t a = 1;
  while (a < 16 && size % (a * 2) == 0) a *= 2;
  return a;
}

static sim_func_t *func_new(uint32_t magic, const char *name, simcu_kernel_fn fn,
                            unsigned nparams, const size_t *sizes) {
  sim_func_t *f = calloc(1, sizeof *f);
  if (!f) return NULL;
  f->magic = magic, f->fn = fn, f->nparams = nparams;
  snprintf(f->name, sizeof f->name, "%s", name);
  size_t at = 0;
  for (unsigned i = 0; i < nparams; i++) {
    size_t a = align_of(sizes[i]);
    at = (at + a - 1) / a * a;
    f->offset[i] = at, f->size[i] = sizes[i];
    at += sizes[i];
  }
  f->argsize = at;
  return f;
}

SIM_EXPORT CUresult simcuRegisterKernel(CUfunction *func, CUkernel *kernel, const char *name,
                                        simcu_kernel_fn fn, unsigned nparams,
                                        const size_t *sizes) {
  SIM_CALLED();
  if (!sim.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  if (!name || !fn || nparams > SIMCU_MAX_PARAMS || (nparams && !sizes))
    return CUDA_ERROR_INVALID_VALUE;
  for (unsigned i = 0; i < nparams; i++)
    if (!sizes[i] || sizes[i] > 4096) return CUDA_ERROR_INVALID_VALUE;
  sim_func_t *f = func_new(SIM_FUNC_MAGIC, name, fn, nparams, sizes);
  sim_func_t *k = func_new(SIM_KERNEL_MAGIC, name, fn, nparams, sizes);
  if (!f || !k) return free(f), free(k), CUDA_ERROR_OUT_OF_MEMORY;
  f->kernel = k, k->kernel = f;
  pthread_mutex_lock(&sim.mu);
  k->next_func = funcs, f->next_func = k, funcs = f;
  pthread_mutex_unlock(&sim.mu);
  if (func) *func = (CUfunction)(void *)f;
  if (kernel) *kernel = (CUkernel)(void *)k;
  return CUDA_SUCCESS;
}

static sim_func_t *listed(const void *h, uint32_t magic) {
  pthread_mutex_lock(&sim.mu);
  sim_func_t *f = funcs;
  while (f && (const void *)f != h) f = f->next_func;
  pthread_mutex_unlock(&sim.mu);
  return f && f->magic == magic ? f : NULL;
}

/* A CUfunction or a CUkernel (launch APIs accept both). */
static sim_func_t *as_func(const void *h, bool kernel_ok) {
  sim_func_t *f = listed(h, SIM_FUNC_MAGIC);
  return f ? f : kernel_ok ? listed(h, SIM_KERNEL_MAGIC) : NULL;
}

static CUresult param_info(const sim_func_t *f, size_t index, size_t *offset, size_t *size) {
  if (!f) return CUDA_ERROR_INVALID_HANDLE;
  if (index >= f->nparams || (!offset && !size)) return CUDA_ERROR_INVALID_VALUE;
  if (offset) *offset = f->offset[index];
  if (size) *size = f->size[index];
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuFuncGetParamInfo(CUfunction func, size_t index, size_t *offset, size_t *size) {
  SIM_CALLED();
  if (!sim.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  return param_info(as_func(func, false), index, offset, size);
}

SIM_EXPORT CUresult cuKernelGetParamInfo(CUkernel kernel, size_t index, size_t *offset, size_t *size) {
  SIM_CALLED();
  if (!sim.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  return param_info(listed((const void *)kernel, SIM_KERNEL_MAGIC), index, offset, size);
}

SIM_EXPORT CUresult cuFuncGetName(const char **name, CUfunction func) {
  SIM_CALLED();
  if (!sim.initialized) return CUDA_ERROR_NOT_INITIALIZED;
  sim_func_t *f = as_func(func, false);
  if (!f) return CUDA_ERROR_INVALID_HANDLE;
  if (!name) return CUDA_ERROR_INVALID_VALUE;
  *name = f->name;
  return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuKernelGetFunction(CUfunction *func, CUkernel kernel) {
  SIM_CALLED();
  CUresult rc = sim_ctx_check();
  if (rc) return rc;
  const sim_func_t *k = listed((const void *)kernel, SIM_KERNEL_MAGIC);
  if (!k) return CUDA_ERROR_INVALID_HANDLE;
  if (!func) return CUDA_ERROR_INVALID_VALUE;
  *func = (CUfunction)(void *)k->kernel;
  return CUDA_SUCCESS;
}

/* ---- capturing the arguments ---------------------------------------------------- */

/* extra = {CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &size, END} */
static CUresult from_extra(const sim_func_t *f, void **extra, unsigned char *buf) {
  const void *src = NULL;
  size_t size = 0;
  bool have_size = false;
  for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
    if (i > 64) return CUDA_ERROR_INVALID_VALUE;
    if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) src = extra[i + 1];
    else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE && extra[i + 1])
      size = *(const size_t *)extra[i + 1], have_size = true;
    else return CUDA_ERROR_INVALID_VALUE;
  }
  if (!src || !have_size || size < f->argsize) return CUDA_ERROR_INVALID_VALUE;
  memcpy(buf, src, f->argsize);
  return CUDA_SUCCESS;
}

static CUresult capture(const sim_func_t *f, void **params, void **extra, unsigned char *buf) {
  if (params && extra) return CUDA_ERROR_INVALID_VALUE;
  if (extra) return from_extra(f, extra, buf);
  if (f->nparams && !params) return CUDA_ERROR_INVALID_VALUE;
  for (unsigned i = 0; i < f->nparams; i++) {
    if (!params[i]) return CUDA_ERROR_INVALID_VALUE;
    memcpy(buf + f->offset[i], params[i], f->size[i]);
  }
  return CUDA_SUCCESS;
}

static bool dims_ok(const unsigned g[3], const unsigned b[3]) {
  if (!g[0] || !g[1] || !g[2] || !b[0] || !b[1] || !b[2]) return false;
  return (uint64_t)b[0] * b[1] * b[2] <= 1024 && b[2] <= 64 && g[1] <= 65535 && g[2] <= 65535;
}

static CUresult launch(const void *fh, const unsigned g[3], const unsigned b[3], unsigned shared,
                       CUstream stream, void **params, void **extra, bool ptsz) {
  CUresult rc = sim_ctx_check();
  if (rc) return rc;
  sim_func_t *f = as_func(fh, true);
  if (!f) return CUDA_ERROR_INVALID_HANDLE;
  if (!sim_stream_valid(stream)) return CUDA_ERROR_INVALID_HANDLE;
  if (!dims_ok(g, b)) return CUDA_ERROR_INVALID_VALUE;
  sim_op_t *op = sim_op_new(OP_KERNEL);
  unsigned char *buf = calloc(1, f->argsize + 8); /* padding reads as zero, not stale bytes */
  if (!op || !buf) return free(op), free(buf), CUDA_ERROR_OUT_OF_MEMORY;
  if ((rc = capture(f, params, extra, buf))) return free(op), free(buf), rc;
  simcu_launch_t *l = &op->u.kernel.launch;
  memcpy(l->grid, g, sizeof l->grid), memcpy(l->block, b, sizeof l->block);
  l->shared_bytes = shared, l->nargs = f->nparams;
  for (unsigned i = 0; i < f->nparams; i++) l->args[i] = buf + f->offset[i];
  struct CUstream_st *st = sim_stream(stream, ptsz);
  op->u.kernel.f = f, op->u.kernel.argbuf = buf, op->u.kernel.device = st->device; /* where its stream is */
  sim_enqueue(st, op);
  return CUDA_SUCCESS;
}

static bool live_pointer(uint64_t v) {
  if (!sim_in_device_range((uintptr_t)v)) return true; /* not a device pointer at all */
  pthread_mutex_lock(&sim.mu);
  bool live = sim_mem_live((uintptr_t)v, 1);
  pthread_mutex_unlock(&sim.mu);
  return live;
}

/* The first 8-byte aligned word inside a parameter (by-value structs included) that
 * hit accepts; padding between parameters is not looked at. */
static bool find_word(const sim_op_t *op, bool (*hit)(uint64_t v, const uintptr_t *range),
                      const uintptr_t *range, unsigned *param, uint64_t *value) {
  const sim_func_t *f = op->u.kernel.f;
  for (unsigned p = 0; p < f->nparams; p++) {
    for (size_t at = (f->offset[p] + 7) / 8 * 8; at + 8 <= f->offset[p] + f->size[p]; at += 8) {
      memcpy(value, op->u.kernel.argbuf + at, 8);
      if (hit(*value, range)) return *param = p, true;
    }
  }
  return false;
}

static bool dead_pointer(uint64_t v, const uintptr_t *range) { return (void)range, !live_pointer(v); }

/* range[0]: the launch's device */
static bool foreign_pointer(uint64_t v, const uintptr_t *range) {
  if (!sim_in_device_range((uintptr_t)v)) return false;
  pthread_mutex_lock(&sim.mu);
  bool foreign = !sim_mem_reachable((uintptr_t)v, 1, (int)range[0]);
  pthread_mutex_unlock(&sim.mu);
  return foreign;
}

/* One count per launch: a pointer to no live memory, else to another device's that this
 * one may not use (peer access not enabled, or a mapping not opened to it). */
static void check_pointers(const sim_op_t *op) {
  unsigned p;
  uint64_t v;
  uintptr_t device = (uintptr_t)op->u.kernel.device;
  bool dead = find_word(op, dead_pointer, NULL, &p, &v);
  if (!dead && !find_word(op, foreign_pointer, &device, &p, &v)) return;
  char what[200], where[32] = "";
  if (!dead) snprintf(where, sizeof where, " on device %d", op->u.kernel.device);
  snprintf(what, sizeof what, "kernel %s%s, parameter %u = 0x%llx", op->u.kernel.f->name, where, p, (unsigned long long)v);
  (dead ? sim_note_bad_launch : sim_note_bad_peer)(what);
}

static bool points_into(uint64_t v, const uintptr_t *range) { return v >= range[0] && v < range[1]; }

bool sim_kernel_points_into(const sim_op_t *op, uintptr_t p, size_t len, unsigned *param,
                            uint64_t *value) {
  const uintptr_t range[2] = {p, p + len};
  return find_word(op, points_into, range, param, value);
}

void sim_run_kernel(sim_op_t *op) {
  check_pointers(op);
  op->u.kernel.f->fn(&op->u.kernel.launch);
}

/* ---- the launch entry points -------------------------------------------------------- */

#define DIMS(a, b, c) ((const unsigned[3]){a, b, c})

SIM_EXPORT CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                   unsigned bx, unsigned by, unsigned bz, unsigned shared,
                                   CUstream s, void **params, void **extra) {
  SIM_CALLED();
  return launch(f, DIMS(gx, gy, gz), DIMS(bx, by, bz), shared, s, params, extra, false);
}

SIM_EXPORT CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                                        unsigned bx, unsigned by, unsigned bz, unsigned shared,
                                        CUstream s, void **params, void **extra) {
  SIM_CALLED();
  return launch(f, DIMS(gx, gy, gz), DIMS(bx, by, bz), shared, s, params, extra, true);
}

SIM_EXPORT CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned gx, unsigned gy,
                                              unsigned gz, unsigned bx, unsigned by,
                                              unsigned bz, unsigned shared, CUstream s,
                                              void **params) {
  SIM_CALLED();
  return launch(f, DIMS(gx, gy, gz), DIMS(bx, by, bz), shared, s, params, NULL, false);
}

SIM_EXPORT CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned gx, unsigned gy,
                                                   unsigned gz, unsigned bx, unsigned by,
                                                   unsigned bz, unsigned shared, CUstream s,
                                                   void **params) {
  SIM_CALLED();
  return launch(f, DIMS(gx, gy, gz), DIMS(bx, by, bz), shared, s, params, NULL, true);
}

static CUresult launch_ex(const CUlaunchConfig *c, CUfunction f, void **params, void **extra,
                          bool ptsz) {
  if (!c) return CUDA_ERROR_INVALID_VALUE;
  if (c->numAttrs && !c->attrs) return CUDA_ERROR_INVALID_VALUE;
  return launch(f, DIMS(c->gridDimX, c->gridDimY, c->gridDimZ),
                DIMS(c->blockDimX, c->blockDimY, c->blockDimZ), c->sharedMemBytes, c->hStream,
                params, extra, ptsz);
}

SIM_EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *c, CUfunction f, void **params,
                                     void **extra) {
  SIM_CALLED();
  return launch_ex(c, f, params, extra, false);
}

SIM_EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *c, CUfunction f, void **params,
                                          void **extra) {
  SIM_CALLED();
  return launch_ex(c, f, params, extra, true);
}
