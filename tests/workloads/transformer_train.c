/* transformer_train: the allocation pattern of transformer training. Per layer and
 * iteration: q, k, v projections, B x S x S attention scores (the large activations),
 * softmax, context, output projection with a residual, row statistics (small
 * temporaries), an MLP; then a backward pass that allocates gradients in reverse order
 * and an Adam step whose moment buffers persist for the whole run (optimizer state,
 * untouched between steps). --dynamic varies the sequence length per iteration.
 * Usage: transformer_train [--iters N] [--layers L] [--seq S] [--dim E] [--batch B] [--dynamic] */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "linalg.h"

/* C[b] = A[b] B[b]^T for b < nb; A[b]: m x k, B[b]: n x k, C[b]: m x n */
KERNEL_5(bmm_nt, const float *, A, const float *, B, float *, C, int, nb, int4, mnk) {
  long per = (long)mnk.x * mnk.y;
  DEVICE_LOOP(idx, per * nb) {
    long b = idx / per, r = idx % per, i = r / mnk.y, j = r % mnk.y;
    const float *a = A + (b * mnk.x + i) * mnk.z, *bb = B + (b * mnk.y + j) * mnk.z;
    float acc = 0;
    for (int p = 0; p < mnk.z; p++) acc += a[p] * bb[p];
    C[idx] = acc * mnk.w * 1e-3f;
  }
}

/* C[b] = A[b] B[b]; A[b]: m x k, B[b]: k x n */
KERNEL_5(bmm, const float *, A, const float *, B, float *, C, int, nb, int4, mnk) {
  long per = (long)mnk.x * mnk.y;
  DEVICE_LOOP(idx, per * nb) {
    long b = idx / per, r = idx % per, i = r / mnk.y, j = r % mnk.y;
    float acc = 0;
    for (int p = 0; p < mnk.z; p++) acc += A[(b * mnk.x + i) * mnk.z + p] * B[(b * mnk.z + p) * mnk.y + j];
    C[idx] = acc;
  }
}

KERNEL_3(softmax_rows, float *, x, long, rows, int, cols) {
  DEVICE_LOOP(r, rows) {
    float *row = x + r * cols, mx = row[0], sum = 0;
    for (int j = 1; j < cols; j++) mx = row[j] > mx ? row[j] : mx;
    for (int j = 0; j < cols; j++) row[j] = expf(row[j] - mx), sum += row[j];
    for (int j = 0; j < cols; j++) row[j] /= sum;
  }
}

KERNEL_4(row_stats, const float *, x, float *, stats, long, rows, int, cols) {
  DEVICE_LOOP(r, rows) {
    float m = 0, v = 0;
    for (int j = 0; j < cols; j++) m += x[r * cols + j];
    m /= (float)cols;
    for (int j = 0; j < cols; j++) v += (x[r * cols + j] - m) * (x[r * cols + j] - m);
    stats[2 * r] = m, stats[2 * r + 1] = 1.0f / sqrtf(v / (float)cols + 1e-5f);
  }
}

KERNEL_4(normalize, float *, x, const float *, stats, long, rows, int, cols) {
  DEVICE_LOOP(i, rows * cols) x[i] = (x[i] - stats[2 * (i / cols)]) * stats[2 * (i / cols) + 1];
}

KERNEL_2(gelu, float *, x, long, n) {
  DEVICE_LOOP(i, n) x[i] = 0.5f * x[i] * (1.0f + tanhf(0.79788456f * (x[i] + 0.044715f * x[i] * x[i] * x[i])));
}

KERNEL_4(axpy, float *, y, const float *, x, float, a, long, n) {
  DEVICE_LOOP(i, n) y[i] += a * x[i];
}

KERNEL_4(diff, const float *, y, const float *, t, float *, d, long, n) {
  DEVICE_LOOP(i, n) d[i] = y[i] - t[i];
}

KERNEL_3(mean_square, const float *, x, float *, out, long, n) {
  SERIAL_SECTION {
    double s = 0;
    for (long i = 0; i < n; i++) s += (double)x[i] * x[i];
    out[0] = (float)(s / (double)n);
  }
}

KERNEL_6(adam, float *, w, const float *, g, float *, m, float *, v, float, lr, long, n) {
  DEVICE_LOOP(i, n) {
    m[i] = 0.9f * m[i] + 0.1f * g[i];
    v[i] = 0.999f * v[i] + 0.001f * g[i] * g[i];
    w[i] -= lr * m[i] / (sqrtf(v[i]) + 1e-8f);
  }
}

enum { WQ, WK, WV, WO, W1, W2, NW };

typedef struct layer_s {
  float *w[NW], *m[NW], *v[NW];
  long size[NW];
} layer_t;

typedef struct acts_s { /* what one layer keeps for its backward pass */
  float *x, *q, *k, *v, *scores, *ctx, *x1, *h;
} acts_t;

typedef struct cfg_s {
  int iters, layers, seq, dim, batch, dynamic;
} cfg_t;

static float *dzero(long n) {
  float *d = port_dalloc(n);
  CHECK_CUDA(cudaMemset(d, 0, (size_t)n * sizeof *d));
  return d;
}

static void init_layer(layer_t *L, int e, unsigned long long *seed) {
  long sizes[NW] = {(long)e * e, (long)e * e, (long)e * e, (long)e * e, 4L * e * e, 4L * e * e};
  float *h = (float *)malloc((size_t)sizes[W1] * sizeof *h);
  for (int i = 0; i < NW; i++) {
    L->size[i] = sizes[i];
    for (long j = 0; j < sizes[i]; j++) h[j] = 0.3f * port_rand(seed);
    L->w[i] = port_dalloc(sizes[i]);
    CHECK_CUDA(cudaMemcpy(L->w[i], h, (size_t)sizes[i] * sizeof *h, cudaMemcpyHostToDevice));
    L->m[i] = dzero(sizes[i]);
    L->v[i] = dzero(sizes[i]);
  }
  free(h);
}

#define G(n) grid_for(n), block256(), 0

static int4 dims(int m, int n, int k, int w) {
  int4 d;
  d.x = m, d.y = n, d.z = k, d.w = w;
  return d;
}

static float *forward(const layer_t *L, float *x, acts_t *a, int B, int S, int E) {
  long T = (long)B * S;
  a->x = x;
  a->q = port_dalloc(T * E), a->k = port_dalloc(T * E), a->v = port_dalloc(T * E);
  CHECK_CUDA(matmul_launch(G(T * E), x, L->w[WQ], a->q, (int)T, E, E));
  CHECK_CUDA(matmul_launch(G(T * E), x, L->w[WK], a->k, (int)T, E, E));
  CHECK_CUDA(matmul_launch(G(T * E), x, L->w[WV], a->v, (int)T, E, E));
  a->scores = port_dalloc((long)B * S * S);
  CHECK_CUDA(bmm_nt_launch(G((long)B * S * S), a->q, a->k, a->scores, B, dims(S, S, E, 1000 / E)));
  CHECK_CUDA(softmax_rows_launch(G(T), a->scores, T, S));
  a->ctx = port_dalloc(T * E);
  CHECK_CUDA(bmm_launch(G(T * E), a->scores, a->v, a->ctx, B, dims(S, E, S, 0)));
  a->x1 = port_dalloc(T * E);
  CHECK_CUDA(matmul_launch(G(T * E), a->ctx, L->w[WO], a->x1, (int)T, E, E));
  CHECK_CUDA(axpy_launch(G(T * E), a->x1, x, 1.0f, T * E));
  float *stats = port_dalloc(2 * T); /* a small temporary, freed at once */
  CHECK_CUDA(row_stats_launch(G(T), a->x1, stats, T, E));
  CHECK_CUDA(normalize_launch(G(T * E), a->x1, stats, T, E));
  CHECK_CUDA(cudaFree(stats));
  a->h = port_dalloc(T * 4 * E);
  CHECK_CUDA(matmul_launch(G(T * 4 * E), a->x1, L->w[W1], a->h, (int)T, 4 * E, E));
  CHECK_CUDA(gelu_launch(G(T * 4 * E), a->h, T * 4 * E));
  float *out = port_dalloc(T * E);
  CHECK_CUDA(matmul_launch(G(T * E), a->h, L->w[W2], out, (int)T, E, 4 * E));
  CHECK_CUDA(axpy_launch(G(T * E), out, a->x1, 1.0f, T * E));
  return out;
}

static void step(const layer_t *L, int i, float *grad, float lr) {
  CHECK_CUDA(adam_launch(G(L->size[i]), L->w[i], grad, L->m[i], L->v[i], lr, L->size[i]));
  CHECK_CUDA(cudaFree(grad));
}

/* A backward of the right shapes: weight gradients from activations and the incoming
 * gradient, allocated late and freed after each Adam step. Returns the gradient for the
 * layer below (takes ownership of dout). */
static float *backward(const layer_t *L, acts_t *a, float *dout, int B, int S, int E) {
  long T = (long)B * S;
  float *dw2 = port_dalloc(4L * E * E), *dh = port_dalloc(T * 4 * E);
  CHECK_CUDA(matmul_at_launch(G(4L * E * E), a->h, dout, dw2, 4 * E, E, (int)T));
  CHECK_CUDA(matmul_bt_launch(G(T * 4 * E), dout, L->w[W2], dh, (int)T, 4 * E, E));
  step(L, W2, dw2, 1e-3f);
  float *dw1 = port_dalloc(4L * E * E), *dx1 = port_dalloc(T * E);
  CHECK_CUDA(matmul_at_launch(G(4L * E * E), a->x1, dh, dw1, E, 4 * E, (int)T));
  CHECK_CUDA(matmul_bt_launch(G(T * E), dh, L->w[W1], dx1, (int)T, E, 4 * E));
  CHECK_CUDA(axpy_launch(G(T * E), dx1, dout, 1.0f, T * E));
  CHECK_CUDA(cudaFree(dh));
  CHECK_CUDA(cudaFree(dout));
  step(L, W1, dw1, 1e-3f);
  float *dwo = port_dalloc((long)E * E), *dctx = port_dalloc(T * E);
  CHECK_CUDA(matmul_at_launch(G((long)E * E), a->ctx, dx1, dwo, E, E, (int)T));
  CHECK_CUDA(matmul_bt_launch(G(T * E), dx1, L->w[WO], dctx, (int)T, E, E));
  step(L, WO, dwo, 1e-3f);
  for (int w = WQ; w <= WV; w++) {
    float *dw = port_dalloc((long)E * E);
    CHECK_CUDA(matmul_at_launch(G((long)E * E), a->x, dctx, dw, E, E, (int)T));
    step(L, w, dw, 1e-3f / (float)(w + 1));
  }
  float *dx = port_dalloc(T * E);
  CHECK_CUDA(matmul_bt_launch(G(T * E), dctx, L->w[WQ], dx, (int)T, E, E));
  CHECK_CUDA(axpy_launch(G(T * E), dx, dx1, 1.0f, T * E));
  float *order[] = {dctx, dx1, a->h, a->x1, a->ctx, a->scores, a->v, a->k, a->q};
  for (size_t i = 0; i < sizeof order / sizeof *order; i++) CHECK_CUDA(cudaFree(order[i]));
  return dx;
}

static void parse(int argc, char **argv, cfg_t *c) {
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--dynamic")) { c->dynamic = 1; continue; }
    int v = i + 1 < argc ? atoi(argv[i + 1]) : 0;
    if (v <= 0) fprintf(stderr, "transformer_train: bad value for %s\n", argv[i]), exit(2);
    if (!strcmp(argv[i], "--iters")) c->iters = v;
    else if (!strcmp(argv[i], "--layers")) c->layers = v;
    else if (!strcmp(argv[i], "--seq")) c->seq = v;
    else if (!strcmp(argv[i], "--dim")) c->dim = v;
    else if (!strcmp(argv[i], "--batch")) c->batch = v;
    else fprintf(stderr, "transformer_train: unknown option %s\n", argv[i]), exit(2);
    i++;
  }
}

int main(int argc, char **argv) {
  cfg_t c = {20, 2, 32, 32, 2, 0};
  parse(argc, argv, &c);
  unsigned long long seed = 11;
  int E = c.dim, B = c.batch;
  layer_t *L = (layer_t *)calloc((size_t)c.layers, sizeof *L);
  for (int l = 0; l < c.layers; l++) init_layer(&L[l], E, &seed);
  acts_t *acts = (acts_t *)calloc((size_t)c.layers, sizeof *acts);
  float *host = (float *)malloc(((size_t)B * c.seq + 1) * E * sizeof *host), loss = 0;
  uint64_t h = 0;
  for (int it = 0; it < c.iters; it++) {
    int S = c.dynamic ? c.seq / 2 + (it * 7) % (c.seq / 2 + 1) : c.seq;
    long T = (long)B * S;
    for (long i = 0; i < T * E + E; i++) host[i] = port_rand(&seed);
    float *x = port_dalloc(T * E), *target = port_dalloc(T * E);
    CHECK_CUDA(cudaMemcpy(x, host, (size_t)(T * E) * sizeof *host, cudaMemcpyHostToDevice));
    CHECK_CUDA(cudaMemcpy(target, host + E, (size_t)(T * E) * sizeof *host, cudaMemcpyHostToDevice));
    float *cur = x;
    for (int l = 0; l < c.layers; l++) cur = forward(&L[l], cur, &acts[l], B, S, E);
    float *dout = port_dalloc(T * E), *lossbuf = port_dalloc(1);
    CHECK_CUDA(diff_launch(G(T * E), cur, target, dout, T * E));
    CHECK_CUDA(mean_square_launch(one(), one(), 0, dout, lossbuf, T * E));
    CHECK_CUDA(cudaMemcpy(&loss, lossbuf, sizeof loss, cudaMemcpyDeviceToHost));
    CHECK_CUDA(cudaFree(lossbuf));
    CHECK_CUDA(cudaFree(cur));
    for (int l = c.layers - 1; l >= 0; l--) {
      dout = backward(&L[l], &acts[l], dout, B, S, E);
      if (l > 0) CHECK_CUDA(cudaFree(acts[l].x)); /* the layer's input: the layer below's output */
    }
    CHECK_CUDA(cudaFree(dout));
    CHECK_CUDA(cudaFree(target));
    CHECK_CUDA(cudaFree(x));
    CHECK_CUDA(cudaMemcpy(host, L[0].w[WQ], (size_t)E * E * sizeof *host, cudaMemcpyDeviceToHost));
    h = port_hash(port_hash(PORT_HASH_SEED, &loss, sizeof loss), host, (size_t)E * E * sizeof *host);
    printf("iter %d seq %d loss %.9g checksum %016llx\n", it, S, loss, (unsigned long long)h);
  }
  printf("final transformer_train iterations %d checksum %016llx\n", c.iters, (unsigned long long)h);
  for (int l = 0; l < c.layers; l++)
    for (int i = 0; i < NW; i++) {
      CHECK_CUDA(cudaFree(L[l].w[i]));
      CHECK_CUDA(cudaFree(L[l].m[i]));
      CHECK_CUDA(cudaFree(L[l].v[i]));
    }
  free(L), free(acts), free(host);
  return 0;
}
