/* mlp_train: a two-layer MLP learning a random linear teacher with SGD. Parameters live
 * for the whole run; every iteration allocates its batch, activations and gradients and
 * frees them in program order, as a framework without a caching allocator does.
 * Prints one line per iteration (loss and a hash of the weights' bits) and a final line.
 * --layers L (default 1) stacks L hidden layers of H: each layer's gradient is applied
 * and freed as soon as it is made, so one launch touches a small share of what lives
 * (a budget's floor then falls with depth; two layers' SGD step needs half the peak).
 * The deep stack is there for its memory's shape: its loss is not tuned to fall (the
 * arithmetic is the one-layer step's: at L = 1 it gives the same bits).
 * Usage: mlp_train [--iters N] [--batch B] [--in D] [--hidden H] [--out O] [--layers L] [--lr LR] */
#include <stdint.h>
#include <string.h>

#include "mlp.h"

typedef struct cfg_s {
  int iters, batch, in, hidden, out, layers;
  float lr;
} cfg_t;

static void parse(int argc, char **argv, cfg_t *c) {
  for (int i = 1; i + 1 < argc; i += 2) {
    int v = atoi(argv[i + 1]);
    if (!strcmp(argv[i], "--lr")) {
      c->lr = (float)atof(argv[i + 1]);
      continue;
    }
    if (v <= 0) fprintf(stderr, "mlp_train: bad value for %s\n", argv[i]), exit(2);
    if (!strcmp(argv[i], "--iters")) c->iters = v;
    else if (!strcmp(argv[i], "--batch")) c->batch = v;
    else if (!strcmp(argv[i], "--in")) c->in = v;
    else if (!strcmp(argv[i], "--hidden")) c->hidden = v;
    else if (!strcmp(argv[i], "--out")) c->out = v;
    else if (!strcmp(argv[i], "--layers")) c->layers = v;
    else fprintf(stderr, "mlp_train: unknown option %s\n", argv[i]), exit(2);
  }
}

/* One batch: x random, t = x * teacher, computed on the host. */
typedef struct step_s {
  float *x, *t, *h, *y, *dy, *dh, *dw1, *dw2, *loss;
} step_t;

static float train_step(const cfg_t *c, float *w1, float *w2, const float *xh, const float *th) {
  long B = c->batch, D = c->in, H = c->hidden, O = c->out;
  step_t s;
  s.x = upload(xh, (size_t)(B * D));
  s.t = upload(th, (size_t)(B * O));
  s.h = port_dalloc(B * H);
  CHECK_CUDA(matmul_launch(grid_for(B * H), block256(), 0, s.x, w1, s.h, (int)B, (int)H, (int)D));
  CHECK_CUDA(relu_launch(grid_for(B * H), block256(), 0, s.h, B * H));
  s.y = port_dalloc(B * O);
  CHECK_CUDA(matmul_launch(grid_for(B * O), block256(), 0, s.h, w2, s.y, (int)B, (int)O, (int)H));
  s.loss = port_dalloc(1);
  CHECK_CUDA(mse_loss_launch(one(), one(), 0, s.y, s.t, s.loss, B * O));
  s.dy = port_dalloc(B * O);
  CHECK_CUDA(mse_grad_launch(grid_for(B * O), block256(), 0, s.y, s.t, s.dy, B * O, 2.0f / (float)(B * O)));
  s.dw2 = port_dalloc(H * O);
  CHECK_CUDA(matmul_at_launch(grid_for(H * O), block256(), 0, s.h, s.dy, s.dw2, (int)H, (int)O, (int)B));
  s.dh = port_dalloc(B * H);
  CHECK_CUDA(matmul_bt_launch(grid_for(B * H), block256(), 0, s.dy, w2, s.dh, (int)B, (int)H, (int)O));
  CHECK_CUDA(relu_backward_launch(grid_for(B * H), block256(), 0, s.dh, s.h, B * H));
  s.dw1 = port_dalloc(D * H);
  CHECK_CUDA(matmul_at_launch(grid_for(D * H), block256(), 0, s.x, s.dh, s.dw1, (int)D, (int)H, (int)B));
  CHECK_CUDA(sgd_launch(grid_for(D * H), block256(), 0, w1, s.dw1, c->lr, D * H));
  CHECK_CUDA(sgd_launch(grid_for(H * O), block256(), 0, w2, s.dw2, c->lr, H * O));
  float loss;
  CHECK_CUDA(cudaMemcpy(&loss, s.loss, sizeof loss, cudaMemcpyDeviceToHost));
  float *order[] = {s.dw1, s.dh, s.dw2, s.dy, s.loss, s.y, s.h, s.t, s.x};
  for (size_t i = 0; i < sizeof order / sizeof *order; i++) CHECK_CUDA(cudaFree(order[i]));
  return loss;
}

/* L hidden layers: w[0] is D x H, w[1..L-1] H x H, w[L] H x O. Forward keeps each
 * layer's activation for the backward pass, which frees them from the top as it goes,
 * each gradient applied at once. */
static float deep_step(const cfg_t *c, float **w, const float *xh, const float *th) {
  long B = c->batch, D = c->in, H = c->hidden, O = c->out, L = c->layers;
  float *x = upload(xh, (size_t)(B * D)), *t = upload(th, (size_t)(B * O));
  float **h = (float **)malloc((size_t)L * sizeof *h);
  for (long k = 0; k < L; k++) {
    h[k] = port_dalloc(B * H);
    CHECK_CUDA(matmul_launch(grid_for(B * H), block256(), 0, k ? h[k - 1] : x, w[k], h[k], (int)B, (int)H, (int)(k ? H : D)));
    CHECK_CUDA(relu_launch(grid_for(B * H), block256(), 0, h[k], B * H));
  }
  float *y = port_dalloc(B * O), *loss = port_dalloc(1), *dy = port_dalloc(B * O);
  CHECK_CUDA(matmul_launch(grid_for(B * O), block256(), 0, h[L - 1], w[L], y, (int)B, (int)O, (int)H));
  CHECK_CUDA(mse_loss_launch(one(), one(), 0, y, t, loss, B * O));
  CHECK_CUDA(mse_grad_launch(grid_for(B * O), block256(), 0, y, t, dy, B * O, 2.0f / (float)(B * O)));
  float *dw = port_dalloc(H * O), *dh = port_dalloc(B * H);
  CHECK_CUDA(matmul_at_launch(grid_for(H * O), block256(), 0, h[L - 1], dy, dw, (int)H, (int)O, (int)B));
  CHECK_CUDA(matmul_bt_launch(grid_for(B * H), block256(), 0, dy, w[L], dh, (int)B, (int)H, (int)O));
  CHECK_CUDA(sgd_launch(grid_for(H * O), block256(), 0, w[L], dw, c->lr, H * O));
  float *done[] = {dw, dy, y};
  for (size_t i = 0; i < 3; i++) CHECK_CUDA(cudaFree(done[i]));
  for (long k = L - 1; k >= 0; k--) {
    long in = k ? H : D;
    const float *below = k ? h[k - 1] : x;
    CHECK_CUDA(relu_backward_launch(grid_for(B * H), block256(), 0, dh, h[k], B * H));
    dw = port_dalloc(in * H);
    CHECK_CUDA(matmul_at_launch(grid_for(in * H), block256(), 0, below, dh, dw, (int)in, (int)H, (int)B));
    float *down = k ? port_dalloc(B * H) : NULL;
    if (k) CHECK_CUDA(matmul_bt_launch(grid_for(B * H), block256(), 0, dh, w[k], down, (int)B, (int)H, (int)H));
    CHECK_CUDA(sgd_launch(grid_for(in * H), block256(), 0, w[k], dw, c->lr, in * H));
    float *used[] = {dw, dh, h[k]};
    for (size_t i = 0; i < 3; i++) CHECK_CUDA(cudaFree(used[i]));
    dh = down;
  }
  float lossh;
  CHECK_CUDA(cudaMemcpy(&lossh, loss, sizeof lossh, cudaMemcpyDeviceToHost));
  float *last[] = {loss, t, x};
  for (size_t i = 0; i < 3; i++) CHECK_CUDA(cudaFree(last[i]));
  free(h);
  return lossh;
}

int main(int argc, char **argv) {
  cfg_t c = {20, 64, 128, 256, 32, 1, 2.0f};
  parse(argc, argv, &c);
  unsigned long long seed = 42;
  float *w1h = random_host((size_t)c.in * c.hidden, &seed, 0.2f);
  float *w2h = random_host((size_t)c.hidden * c.out, &seed, 0.2f);
  float *teacher = random_host((size_t)c.in * c.out, &seed, 0.5f);
  float *xh = (float *)malloc((size_t)c.batch * c.in * sizeof *xh);
  float *th = (float *)malloc((size_t)c.batch * c.out * sizeof *th);
  float *w1 = upload(w1h, (size_t)c.in * c.hidden), *w2 = upload(w2h, (size_t)c.hidden * c.out);
  float **w = (float **)calloc((size_t)c.layers + 1, sizeof *w); /* deeper: the hidden-to-hidden ones drawn last */
  w[0] = w1, w[c.layers] = w2;
  for (int k = 1; k < c.layers; k++) {
    float *wh = random_host((size_t)c.hidden * c.hidden, &seed, 0.2f / 1.5f);
    w[k] = upload(wh, (size_t)c.hidden * c.hidden);
    free(wh);
  }
  uint64_t hash = 0;
  for (int it = 0; it < c.iters; it++) {
    make_batch(c.batch, c.in, c.out, teacher, &seed, xh, th);
    float loss = c.layers == 1 ? train_step(&c, w1, w2, xh, th) : deep_step(&c, w, xh, th);
    CHECK_CUDA(cudaMemcpy(w2h, w2, (size_t)c.hidden * c.out * sizeof *w2h, cudaMemcpyDeviceToHost));
    hash = port_hash(port_hash(PORT_HASH_SEED, &loss, sizeof loss), w2h, (size_t)c.hidden * c.out * sizeof *w2h);
    printf("iter %d loss %.9g checksum %016llx\n", it, loss, (unsigned long long)hash);
  }
  printf("final mlp_train iterations %d checksum %016llx\n", c.iters, (unsigned long long)hash);
  for (int k = 0; k <= c.layers; k++) CHECK_CUDA(cudaFree(w[k]));
  free(w);
  free(w1h), free(w2h), free(teacher), free(xh), free(th);
  return 0;
}
