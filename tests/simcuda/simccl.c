/* The collective library. Like NCCL it has no NEEDED on libcuda or cudart: it dlopens
 * libcuda.so.1 and resolves what it needs through cuGetProcAddress_v2, and it
 * allocates its own staging buffer with cuMemAlloc and shares it by CUDA IPC.
 * Rendezvous: a directory named by MASTER_ADDR, MASTER_PORT and the user (SIMCCL_DIR
 * overrides), where rank 0 publishes a shared control page and every rank its staging
 * buffer's IPC handle. An all-reduce: each rank copies its input into its staging
 * buffer; barrier; each adds every rank's staging buffer in rank order (on the host:
 * the same bits everywhere); barrier, so no staging buffer is overwritten early. */
#include "simccl.h"

#include <cudaTypedefs.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CCL_EXPORT __attribute__((visibility("default")))
#define MAX_RANKS 64

static struct {
  PFN_cuMemAlloc_v3020 alloc;
  PFN_cuMemFree_v3020 free;
  PFN_cuMemcpyDtoD_v3020 dtod;
  PFN_cuMemcpyDtoH_v3020 dtoh;
  PFN_cuMemcpyHtoD_v3020 htod;
  PFN_cuStreamSynchronize_v2000 sync;
  PFN_cuIpcGetMemHandle_v4010 ipc_get;
  PFN_cuIpcOpenMemHandle_v11000 ipc_open;
  PFN_cuIpcCloseMemHandle_v4010 ipc_close;
} cu;

typedef struct control_s { /* shared by the ranks: a sense-reversing barrier */
  atomic_int arrived, sense;
} control_t;

typedef struct group_s { /* the ranks of one process (simcclCommInitAll) */
  control_t ctl;
  CUdeviceptr staging[MAX_RANKS];
  atomic_int left; /* ranks not yet destroyed */
} group_t;

struct simccl_comm_s {
  int rank, size, sense;
  char dir[256];
  control_t *ctl;
  group_t *group; /* in-process ranks: staging buffers by pointer; else NULL (IPC) */
  CUdeviceptr staging, peer[MAX_RANKS]; /* peer[rank] is staging */
  size_t capacity;                      /* floats */
  float *host, *parts;                  /* size x capacity */
};

static CUresult resolve(void) {
  void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  PFN_cuGetProcAddress_v12000 gpa = h ? (PFN_cuGetProcAddress_v12000)dlsym(h, "cuGetProcAddress_v2") : NULL;
  if (!gpa) return CUDA_ERROR_NOT_INITIALIZED;
  struct { const char *name; int version; void **fn; } want[] = {
      {"cuMemAlloc", 3020, (void **)&cu.alloc}, {"cuMemFree", 3020, (void **)&cu.free},
      {"cuMemcpyDtoD", 3020, (void **)&cu.dtod}, {"cuMemcpyDtoH", 3020, (void **)&cu.dtoh},
      {"cuMemcpyHtoD", 3020, (void **)&cu.htod}, {"cuStreamSynchronize", 2000, (void **)&cu.sync},
      {"cuIpcGetMemHandle", 4010, (void **)&cu.ipc_get}, {"cuIpcOpenMemHandle", 11000, (void **)&cu.ipc_open},
      {"cuIpcCloseMemHandle", 4010, (void **)&cu.ipc_close},
  };
  for (size_t i = 0; i < sizeof want / sizeof *want; i++) {
    CUdriverProcAddressQueryResult st;
    if (gpa(want[i].name, want[i].fn, want[i].version, CU_GET_PROC_ADDRESS_DEFAULT, &st) || !*want[i].fn)
      return CUDA_ERROR_NOT_FOUND;
  }
  return CUDA_SUCCESS;
}

static int env_int(const char *name, int dflt) {
  const char *v = getenv(name);
  char *end;
  long x = v && *v ? strtol(v, &end, 10) : dflt;
  return v && *v && *end ? -1 : (int)x;
}

static void pause_briefly(void) { nanosleep(&(struct timespec){0, 20000}, NULL); }

static void barrier(simcclComm_t c) {
  c->sense = !c->sense;
  if (atomic_fetch_add(&c->ctl->arrived, 1) == c->size - 1) {
    atomic_store(&c->ctl->arrived, 0);
    atomic_store(&c->ctl->sense, c->sense);
  } else {
    for (long n = 0; atomic_load(&c->ctl->sense) != c->sense; n++) {
      if (n == 3000000) { /* about a minute: a rank died or never came; never hang a test */
        fprintf(stderr, "simccl: error: rank %d of %d waited a minute for the others at a barrier\n", c->rank, c->size);
        _exit(3);
      }
      pause_briefly();
    }
  }
}

/* Rank 0 makes the control page (whole before it is seen: written then renamed);
 * the others wait for it. */
static CUresult join(simcclComm_t c) {
  char path[320], tmp[330];
  snprintf(path, sizeof path, "%s/control", c->dir);
  if (c->rank == 0) {
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || ftruncate(fd, sizeof(control_t)) || rename(tmp, path)) return CUDA_ERROR_INVALID_VALUE;
    close(fd);
  }
  int fd;
  for (int tries = 0; (fd = open(path, O_RDWR)) < 0; tries++) {
    if (tries > 500000) return CUDA_ERROR_NOT_READY; /* about 10 s: no rank 0 */
    pause_briefly();
  }
  void *m = mmap(NULL, sizeof(control_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (m == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
  c->ctl = m;
  barrier(c);
  return CUDA_SUCCESS;
}

/* The driver's entry points, resolved by the first communicator made. */
static CUresult resolved(void) {
  static CUresult rc = CUDA_ERROR_NOT_INITIALIZED;
  if (rc) rc = resolve();
  return rc;
}

CCL_EXPORT CUresult simcclCommInitEnv(simcclComm_t *out) {
  CUresult ready = resolved();
  if (ready) return ready;
  int rank = env_int("RANK", 0), size = env_int("WORLD_SIZE", 1);
  if (!out || rank < 0 || size < 1 || size > MAX_RANKS || rank >= size) return CUDA_ERROR_INVALID_VALUE;
  simcclComm_t c = calloc(1, sizeof *c);
  if (!c) return CUDA_ERROR_OUT_OF_MEMORY;
  c->rank = rank, c->size = size;
  const char *d = getenv("SIMCCL_DIR"), *addr = getenv("MASTER_ADDR"), *port = getenv("MASTER_PORT");
  if (d && *d) snprintf(c->dir, sizeof c->dir, "%s", d);
  else {
    const char *run = getenv("TORCHELASTIC_RUN_ID"); /* torchrun's, or the launcher's: one job's */
    snprintf(c->dir, sizeof c->dir, "/tmp/simccl-%u-%s-%s-%s", (unsigned)getuid(), addr ? addr : "local",
             port ? port : "0", run ? run : "none");
  }
  if (mkdir(c->dir, 0700) && errno != EEXIST) return free(c), CUDA_ERROR_INVALID_VALUE;
  CUresult rc = join(c);
  if (rc) return free(c), rc;
  *out = c;
  return CUDA_SUCCESS;
}

/* In-process ranks publish their staging buffers' pointers in the group. */
static CUresult stage_local(simcclComm_t c, CUresult rc) {
  c->group->staging[c->rank] = rc ? 0 : c->staging;
  barrier(c);
  for (int r = 0; r < c->size; r++) c->peer[r] = c->group->staging[r];
  for (int r = 0; r < c->size && !rc; r++)
    if (!c->peer[r]) rc = CUDA_ERROR_INVALID_HANDLE; /* a rank failed */
  barrier(c);
  return rc;
}

/* Every rank's staging buffer of count floats, exchanged by IPC handles (collective). */
static CUresult stage(simcclComm_t c, size_t count) {
  if (count <= c->capacity) return CUDA_SUCCESS;
  for (int r = 0; r < c->size && !c->group; r++)
    if (c->peer[r] && r != c->rank) cu.ipc_close(c->peer[r]);
  if (c->staging) cu.free(c->staging);
  free(c->host), free(c->parts);
  c->host = malloc(count * sizeof *c->host), c->parts = malloc((size_t)c->size * count * sizeof *c->parts);
  CUresult rc = c->host && c->parts ? cu.alloc(&c->staging, count * sizeof(float)) : CUDA_ERROR_OUT_OF_MEMORY;
  if (c->group) {
    rc = stage_local(c, rc);
    if (!rc) c->capacity = count;
    return rc;
  }
  CUipcMemHandle h;
  if (!rc) rc = cu.ipc_get(&h, c->staging);
  char path[320], tmp[330];
  snprintf(path, sizeof path, "%s/rank%d.%zu", c->dir, c->rank, count);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = rc ? NULL : fopen(tmp, "wb");
  if (!rc && (!f || fwrite(&h, sizeof h, 1, f) != 1 || fclose(f) || rename(tmp, path))) rc = CUDA_ERROR_INVALID_VALUE;
  barrier(c); /* every handle published (a failed rank's missing file fails the others) */
  for (int r = 0; r < c->size && !rc; r++) {
    if (r == c->rank) {
      c->peer[r] = c->staging;
      continue;
    }
    snprintf(path, sizeof path, "%s/rank%d.%zu", c->dir, r, count);
    f = fopen(path, "rb");
    if (!f || fread(&h, sizeof h, 1, f) != 1) rc = CUDA_ERROR_INVALID_HANDLE;
    if (f) fclose(f);
    if (!rc) rc = cu.ipc_open(&c->peer[r], h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
  }
  barrier(c); /* every file read */
  if (!rc) c->capacity = count;
  return rc;
}

CCL_EXPORT void simcclSumInOrder(float *acc, const float *const *parts, int n, size_t count) {
  for (size_t i = 0; i < count; i++) {
    float s = parts[0][i];
    for (int r = 1; r < n; r++) s += parts[r][i];
    acc[i] = s;
  }
}

CCL_EXPORT CUresult simcclAllReduceSum(simcclComm_t c, const float *send, float *recv, size_t count, CUstream stream) {
  if (!c || !send || !recv) return CUDA_ERROR_INVALID_VALUE;
  size_t bytes = count * sizeof(float);
  CUresult rc = stage(c, count);
  if (!rc) rc = cu.sync(stream);
  if (!rc) rc = cu.dtod(c->staging, (CUdeviceptr)send, bytes);
  barrier(c);
  const float *parts[MAX_RANKS];
  for (int r = 0; r < c->size && !rc; r++) {
    parts[r] = c->parts + (size_t)r * count;
    rc = cu.dtoh((void *)parts[r], c->peer[r], bytes);
  }
  if (!rc) simcclSumInOrder(c->host, parts, c->size, count);
  if (!rc) rc = cu.htod((CUdeviceptr)recv, c->host, bytes);
  barrier(c);
  return rc;
}

CCL_EXPORT int simcclRank(simcclComm_t c) { return c ? c->rank : -1; }
CCL_EXPORT int simcclSize(simcclComm_t c) { return c ? c->size : 0; }

/* In-process ranks: one group, its barrier in process memory. */
CCL_EXPORT CUresult simcclCommInitAll(simcclComm_t *comms, int n) {
  CUresult ready = resolved();
  if (ready) return ready;
  if (!comms || n < 1 || n > MAX_RANKS) return CUDA_ERROR_INVALID_VALUE;
  group_t *g = calloc(1, sizeof *g);
  if (!g) return CUDA_ERROR_OUT_OF_MEMORY;
  atomic_store(&g->left, n);
  for (int r = 0; r < n; r++) {
    comms[r] = calloc(1, sizeof *comms[r]);
    if (!comms[r]) return CUDA_ERROR_OUT_OF_MEMORY; /* the ones made leak: a test's library */
    comms[r]->rank = r, comms[r]->size = n, comms[r]->ctl = &g->ctl, comms[r]->group = g;
  }
  return CUDA_SUCCESS;
}

CCL_EXPORT CUresult simcclCommDestroy(simcclComm_t c) {
  if (!c) return CUDA_ERROR_INVALID_VALUE;
  barrier(c); /* nobody reads a staging buffer any more */
  if (c->group) {
    if (c->staging) cu.free(c->staging);
    group_t *g = c->group;
    free(c->host), free(c->parts), free(c);
    if (atomic_fetch_sub(&g->left, 1) == 1) free(g);
    return CUDA_SUCCESS;
  }
  for (int r = 0; r < c->size; r++)
    if (c->peer[r] && r != c->rank) cu.ipc_close(c->peer[r]);
  if (c->staging) cu.free(c->staging);
  char path[320];
  snprintf(path, sizeof path, "%s/rank%d.%zu", c->dir, c->rank, c->capacity);
  unlink(path);
  barrier(c);
  if (c->rank == 0) {
    snprintf(path, sizeof path, "%s/control", c->dir);
    unlink(path);
    rmdir(c->dir);
  }
  munmap(c->ctl, sizeof(control_t));
  free(c->host), free(c->parts), free(c);
  return CUDA_SUCCESS;
}
