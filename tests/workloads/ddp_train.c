/* ddp_train: data-parallel training (issue #26), one process per device, as torchrun
 * starts DDP: rank r of WORLD_SIZE (from the environment; 1 when unset) takes rows
 * [r B/N, (r+1) B/N) of each global batch of B, computes mlp_train's gradients of the
 * whole batch's mean loss on them, and libsimccl all-reduces them (summed in rank order)
 * before every rank takes the same SGD step. So every rank prints the same lines, and
 * the same as one process given --shards N, which computes the N shards in turn and
 * adds them in the same order: bit-identical to N ranks. Device: LOCAL_RANK (else RANK)
 * modulo the devices present.
 * Usage: ddp_train [--iters N] [--batch B] [--in D] [--hidden H] [--out O] [--shards S] */
#include <stdint.h>
#include <string.h>

#include "mlp.h"
#include "simccl.h"

/* this shard's share of the batch's mean loss: its squared errors over all B x O */
KERNEL_5(mse_part, const float *, y, const float *, t, float *, out, long, n, float, scale) {
  SERIAL_SECTION {
    double s = 0;
    for (long i = 0; i < n; i++) s += (double)(y[i] - t[i]) * (y[i] - t[i]);
    out[0] = (float)s * scale;
  }
}

typedef struct cfg_s {
  int iters, batch, in, hidden, out, shards, rank, world;
} cfg_t;

static void parse(int argc, char **argv, cfg_t *c) {
  for (int i = 1; i + 1 < argc; i += 2) {
    int v = atoi(argv[i + 1]);
    if (v <= 0) fprintf(stderr, "ddp_train: bad value for %s\n", argv[i]), exit(2);
    if (!strcmp(argv[i], "--iters")) c->iters = v;
    else if (!strcmp(argv[i], "--batch")) c->batch = v;
    else if (!strcmp(argv[i], "--in")) c->in = v;
    else if (!strcmp(argv[i], "--hidden")) c->hidden = v;
    else if (!strcmp(argv[i], "--out")) c->out = v;
    else if (!strcmp(argv[i], "--shards")) c->shards = v;
    else fprintf(stderr, "ddp_train: unknown option %s\n", argv[i]), exit(2);
  }
}

static int env_int(const char *name, int dflt) {
  const char *v = getenv(name);
  return v && *v ? atoi(v) : dflt;
}

/* One shard's gradients and loss share, [dw1 | dw2 | loss] in one device buffer g. */
static void shard_grads(const cfg_t *c, const float *w1, const float *w2, const float *xh, const float *th, int s, float *g) {
  long R = c->batch / c->shards, D = c->in, H = c->hidden, O = c->out, B = c->batch;
  float *x = upload(xh + (size_t)s * R * D, (size_t)(R * D)), *t = upload(th + (size_t)s * R * O, (size_t)(R * O));
  float *h = port_dalloc(R * H), *y = port_dalloc(R * O), *dy = port_dalloc(R * O), *dh = port_dalloc(R * H);
  CHECK_CUDA(matmul_launch(grid_for(R * H), block256(), 0, x, w1, h, (int)R, (int)H, (int)D));
  CHECK_CUDA(relu_launch(grid_for(R * H), block256(), 0, h, R * H));
  CHECK_CUDA(matmul_launch(grid_for(R * O), block256(), 0, h, w2, y, (int)R, (int)O, (int)H));
  CHECK_CUDA(mse_part_launch(one(), one(), 0, y, t, g + D * H + H * O, R * O, 1.0f / (float)(B * O)));
  CHECK_CUDA(mse_grad_launch(grid_for(R * O), block256(), 0, y, t, dy, R * O, 2.0f / (float)(B * O)));
  CHECK_CUDA(matmul_at_launch(grid_for(H * O), block256(), 0, h, dy, g + D * H, (int)H, (int)O, (int)R));
  CHECK_CUDA(matmul_bt_launch(grid_for(R * H), block256(), 0, dy, w2, dh, (int)R, (int)H, (int)O));
  CHECK_CUDA(relu_backward_launch(grid_for(R * H), block256(), 0, dh, h, R * H));
  CHECK_CUDA(matmul_at_launch(grid_for(D * H), block256(), 0, x, dh, g, (int)D, (int)H, (int)R));
  float *order[] = {dh, dy, y, h, t, x};
  for (size_t i = 0; i < sizeof order / sizeof *order; i++) CHECK_CUDA(cudaFree(order[i]));
}

/* The whole batch's gradients into sum: this rank's shard all-reduced, or (one process)
 * every shard in turn, added in the order the all-reduce adds ranks. */
static void batch_grads(const cfg_t *c, simcclComm_t comm, const float *w1, const float *w2, const float *xh, const float *th, float *sum) {
  long n = (long)c->in * c->hidden + (long)c->hidden * c->out + 1;
  if (comm) {
    float *g = port_dalloc(n);
    shard_grads(c, w1, w2, xh, th, c->rank, g);
    if (simcclAllReduceSum(comm, g, sum, (size_t)n, NULL)) fprintf(stderr, "ddp_train: all-reduce failed\n"), exit(1);
    CHECK_CUDA(cudaFree(g));
    return;
  }
  float *host = (float *)malloc((size_t)(n * (c->shards + 1)) * sizeof *host);
  const float *parts[64];
  for (int s = 0; s < c->shards; s++) {
    float *g = port_dalloc(n);
    shard_grads(c, w1, w2, xh, th, s, g);
    CHECK_CUDA(cudaMemcpy(host + (size_t)s * n, g, (size_t)n * sizeof *host, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaFree(g));
    parts[s] = host + (size_t)s * n;
  }
  simcclSumInOrder(host + (size_t)c->shards * n, parts, c->shards, (size_t)n);
  CHECK_CUDA(cudaMemcpy(sum, host + (size_t)c->shards * n, (size_t)n * sizeof *host, cudaMemcpyHostToDevice));
  free(host);
}

int main(int argc, char **argv) {
  cfg_t c = {20, 64, 128, 256, 32, 0, env_int("RANK", 0), env_int("WORLD_SIZE", 1)};
  parse(argc, argv, &c);
  if (!c.shards) c.shards = c.world;
  if (c.world > 1 && c.shards != c.world) fprintf(stderr, "ddp_train: --shards is for one process\n"), exit(2);
  if (c.shards > 64 || c.batch % c.shards) fprintf(stderr, "ddp_train: the batch must split in %d shards\n", c.shards), exit(2);
  int n = 0;
  CHECK_CUDA(cudaGetDeviceCount(&n));
  CHECK_CUDA(cudaSetDevice(env_int("LOCAL_RANK", c.rank) % (n > 0 ? n : 1)));
  simcclComm_t comm = NULL;
  if (c.world > 1 && simcclCommInitEnv(&comm)) fprintf(stderr, "ddp_train: rank %d could not join\n", c.rank), exit(1);
  unsigned long long seed = 42;
  long n1 = (long)c.in * c.hidden, n2 = (long)c.hidden * c.out;
  float *w1h = random_host((size_t)n1, &seed, 0.2f), *w2h = random_host((size_t)n2, &seed, 0.2f);
  float *teacher = random_host((size_t)c.in * c.out, &seed, 0.5f);
  float *xh = (float *)malloc((size_t)c.batch * c.in * sizeof *xh), *th = (float *)malloc((size_t)c.batch * c.out * sizeof *th);
  float *w1 = upload(w1h, (size_t)n1), *w2 = upload(w2h, (size_t)n2);
  uint64_t hash = 0;
  for (int it = 0; it < c.iters; it++) {
    make_batch(c.batch, c.in, c.out, teacher, &seed, xh, th);
    float *sum = port_dalloc(n1 + n2 + 1), loss;
    batch_grads(&c, comm, w1, w2, xh, th, sum);
    CHECK_CUDA(sgd_launch(grid_for(n1), block256(), 0, w1, sum, 2.0f, n1));
    CHECK_CUDA(sgd_launch(grid_for(n2), block256(), 0, w2, sum + n1, 2.0f, n2));
    CHECK_CUDA(cudaMemcpy(&loss, sum + n1 + n2, sizeof loss, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaMemcpy(w2h, w2, (size_t)n2 * sizeof *w2h, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaFree(sum));
    hash = port_hash(port_hash(PORT_HASH_SEED, &loss, sizeof loss), w2h, (size_t)n2 * sizeof *w2h);
    printf("iter %d loss %.9g checksum %016llx\n", it, loss, (unsigned long long)hash);
  }
  printf("final ddp_train iterations %d checksum %016llx\n", c.iters, (unsigned long long)hash);
  if (comm) simcclCommDestroy(comm);
  CHECK_CUDA(cudaFree(w1));
  CHECK_CUDA(cudaFree(w2));
  free(w1h), free(w2h), free(teacher), free(xh), free(th);
  return 0;
}
