/* multi_device: one process, two devices, pipeline style (issue #26). mlp_train's two
 * layers split across devices: layer 1 on device 0, layer 2 on device 1. The
 * activations go to device 1 and their gradient back to device 0 by peer copies
 * (cudaMemcpyPeer), or with --peer device 1 enables peer access and its kernels read
 * device 0's activations where they are. Every iteration allocates and frees its
 * tensors on both devices, as a framework without a caching allocator does. Prints one
 * line per iteration (loss, hash of both devices' weights) and a final line. With --ipc
 * it then hands device 0's trained weights to a second process by CUDA IPC (a copy in a
 * cudaMalloc buffer, its cudaIpcGetMemHandle; the process is this program again), which
 * opens the handle, hashes the weights and prints the hash: equal to the first's.
 * Usage: multi_device [--iters N] [--batch B] [--in D] [--hidden H] [--out O] [--peer] [--ipc] */
#include <spawn.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>

#include "mlp.h"

typedef struct cfg_s {
  int iters, batch, in, hidden, out, peer, ipc;
} cfg_t;

static void parse(int argc, char **argv, cfg_t *c) {
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--peer") || !strcmp(argv[i], "--ipc")) {
      *(argv[i][2] == 'p' ? &c->peer : &c->ipc) = 1;
      continue;
    }
    int v = i + 1 < argc ? atoi(argv[i + 1]) : 0;
    if (v <= 0) fprintf(stderr, "multi_device: bad value for %s\n", argv[i]), exit(2);
    if (!strcmp(argv[i], "--iters")) c->iters = v;
    else if (!strcmp(argv[i], "--batch")) c->batch = v;
    else if (!strcmp(argv[i], "--in")) c->in = v;
    else if (!strcmp(argv[i], "--hidden")) c->hidden = v;
    else if (!strcmp(argv[i], "--out")) c->out = v;
    else fprintf(stderr, "multi_device: unknown option %s\n", argv[i]), exit(2);
    i++;
  }
}

/* Device 0's activations h where device 1 reads them: h itself (peer access) or a copy
 * in device 1's memory. */
static float *to_device_1(const cfg_t *c, float *h, long n) {
  if (c->peer) return h;
  float *h1 = port_dalloc(n);
  CHECK_CUDA(cudaMemcpyPeer(h1, 1, h, 0, (size_t)n * sizeof *h));
  return h1;
}

typedef struct weights_s {
  float *w1, *w2; /* on device 0, on device 1 */
} weights_t;

/* Device 1's half: the loss, dw2 applied, and dh (on device 1) returned. */
static float *layer_2(const cfg_t *c, weights_t *w, const float *h1, const float *th, float *loss) {
  long B = c->batch, H = c->hidden, O = c->out;
  CHECK_CUDA(cudaSetDevice(1));
  float *t = upload(th, (size_t)(B * O)), *y = port_dalloc(B * O);
  CHECK_CUDA(matmul_launch(grid_for(B * O), block256(), 0, h1, w->w2, y, (int)B, (int)O, (int)H));
  float *l = port_dalloc(1), *dy = port_dalloc(B * O);
  CHECK_CUDA(mse_loss_launch(one(), one(), 0, y, t, l, B * O));
  CHECK_CUDA(mse_grad_launch(grid_for(B * O), block256(), 0, y, t, dy, B * O, 2.0f / (float)(B * O)));
  float *dw2 = port_dalloc(H * O), *dh = port_dalloc(B * H);
  CHECK_CUDA(matmul_at_launch(grid_for(H * O), block256(), 0, h1, dy, dw2, (int)H, (int)O, (int)B));
  CHECK_CUDA(matmul_bt_launch(grid_for(B * H), block256(), 0, dy, w->w2, dh, (int)B, (int)H, (int)O));
  CHECK_CUDA(sgd_launch(grid_for(H * O), block256(), 0, w->w2, dw2, 2.0f, H * O));
  CHECK_CUDA(cudaMemcpy(loss, l, sizeof *loss, cudaMemcpyDeviceToHost));
  float *order[] = {dw2, dy, l, y, t};
  for (size_t i = 0; i < sizeof order / sizeof *order; i++) CHECK_CUDA(cudaFree(order[i]));
  return dh;
}

static float train_step(const cfg_t *c, weights_t *w, const float *xh, const float *th) {
  long B = c->batch, D = c->in, H = c->hidden;
  CHECK_CUDA(cudaSetDevice(0));
  float *x = upload(xh, (size_t)(B * D)), *h = port_dalloc(B * H);
  CHECK_CUDA(matmul_launch(grid_for(B * H), block256(), 0, x, w->w1, h, (int)B, (int)H, (int)D));
  CHECK_CUDA(relu_launch(grid_for(B * H), block256(), 0, h, B * H));
  CHECK_CUDA(cudaDeviceSynchronize()); /* device 1's stream does not follow device 0's */
  CHECK_CUDA(cudaSetDevice(1));
  float *h1 = to_device_1(c, h, B * H), loss;
  float *dh1 = layer_2(c, w, h1, th, &loss);
  if (h1 != h) CHECK_CUDA(cudaFree(h1));
  CHECK_CUDA(cudaSetDevice(0));
  float *dh = port_dalloc(B * H), *dw1 = port_dalloc(D * H);
  CHECK_CUDA(cudaMemcpyPeer(dh, 0, dh1, 1, (size_t)(B * H) * sizeof *dh));
  CHECK_CUDA(relu_backward_launch(grid_for(B * H), block256(), 0, dh, h, B * H));
  CHECK_CUDA(matmul_at_launch(grid_for(D * H), block256(), 0, x, dh, dw1, (int)D, (int)H, (int)B));
  CHECK_CUDA(sgd_launch(grid_for(D * H), block256(), 0, w->w1, dw1, 2.0f, D * H));
  float *order[] = {dw1, dh, h, x};
  for (size_t i = 0; i < sizeof order / sizeof *order; i++) CHECK_CUDA(cudaFree(order[i]));
  CHECK_CUDA(cudaSetDevice(1));
  CHECK_CUDA(cudaFree(dh1));
  return loss;
}

/* Both devices' weights, hashed from the host: each read with its own device current,
 * whose default stream follows the kernels that wrote it (another device's does not;
 * only cudaFree's implicit synchronization, which no caching allocator keeps, would). */
static uint64_t weights_hash(const cfg_t *c, const weights_t *w, float loss) {
  size_t n1 = (size_t)c->in * c->hidden, n2 = (size_t)c->hidden * c->out;
  float *h = (float *)malloc((n1 > n2 ? n1 : n2) * sizeof *h);
  uint64_t hash = port_hash(PORT_HASH_SEED, &loss, sizeof loss);
  CHECK_CUDA(cudaSetDevice(0));
  CHECK_CUDA(cudaMemcpy(h, w->w1, n1 * sizeof *h, cudaMemcpyDeviceToHost));
  hash = port_hash(hash, h, n1 * sizeof *h);
  CHECK_CUDA(cudaSetDevice(1));
  CHECK_CUDA(cudaMemcpy(h, w->w2, n2 * sizeof *h, cudaMemcpyDeviceToHost));
  hash = port_hash(hash, h, n2 * sizeof *h);
  free(h);
  return hash;
}

/* ---- the second process -------------------------------------------------------------- */

extern char **environ;

/* The importer: argv after --ipc-child: the handle in hex, the floats it holds. */
static int ipc_child(const char *text, long n) {
  cudaIpcMemHandle_t h;
  memset(&h, 0, sizeof h);
  for (size_t i = 0; i < sizeof h.reserved && text[2 * i] && text[2 * i + 1]; i++) {
    unsigned v = 0;
    sscanf(text + 2 * i, "%2x", &v);
    h.reserved[i] = (char)v;
  }
  void *p;
  CHECK_CUDA(cudaSetDevice(0));
  CHECK_CUDA(cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess));
  float *host = (float *)malloc((size_t)n * sizeof *host);
  CHECK_CUDA(cudaMemcpy(host, p, (size_t)n * sizeof *host, cudaMemcpyDeviceToHost));
  CHECK_CUDA(cudaIpcCloseMemHandle(p));
  printf("ipc second process weights %016llx\n", (unsigned long long)port_hash(PORT_HASH_SEED, host, (size_t)n * sizeof *host));
  free(host);
  return 0;
}

/* Device 0's weights, copied into a buffer of their own, handed to a second process. */
static void ipc_share(const cfg_t *c, const weights_t *w, const char *self) {
  long n = (long)c->in * c->hidden;
  CHECK_CUDA(cudaSetDevice(0));
  float *shared = port_dalloc(n), *host = (float *)malloc((size_t)n * sizeof *host);
  CHECK_CUDA(cudaMemcpy(shared, w->w1, (size_t)n * sizeof *shared, cudaMemcpyDeviceToDevice));
  CHECK_CUDA(cudaMemcpy(host, shared, (size_t)n * sizeof *host, cudaMemcpyDeviceToHost));
  printf("ipc first process weights %016llx\n", (unsigned long long)port_hash(PORT_HASH_SEED, host, (size_t)n * sizeof *host));
  fflush(stdout);
  cudaIpcMemHandle_t h;
  CHECK_CUDA(cudaIpcGetMemHandle(&h, shared));
  char text[2 * sizeof h.reserved + 1], count[32], flag[] = "--ipc-child";
  for (size_t i = 0; i < sizeof h.reserved; i++) snprintf(text + 2 * i, 3, "%02x", (unsigned char)h.reserved[i]);
  snprintf(count, sizeof count, "%ld", n);
  char *args[] = {(char *)self, flag, text, count, NULL};
  pid_t pid;
  int status = 0;
  if (posix_spawn(&pid, self, NULL, NULL, args, environ) || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
      WEXITSTATUS(status))
    fprintf(stderr, "multi_device: the second process failed\n"), exit(1);
  CHECK_CUDA(cudaFree(shared));
  free(host);
}

int main(int argc, char **argv) {
  if (argc == 4 && !strcmp(argv[1], "--ipc-child")) return ipc_child(argv[2], atol(argv[3]));
  cfg_t c = {20, 64, 128, 256, 32, 0, 0};
  parse(argc, argv, &c);
  int n = 0;
  CHECK_CUDA(cudaGetDeviceCount(&n));
  if (n < 2) fprintf(stderr, "multi_device: needs two devices, found %d\n", n), exit(2);
  unsigned long long seed = 42;
  float *w1h = random_host((size_t)c.in * c.hidden, &seed, 0.2f);
  float *w2h = random_host((size_t)c.hidden * c.out, &seed, 0.2f);
  float *teacher = random_host((size_t)c.in * c.out, &seed, 0.5f);
  float *xh = (float *)malloc((size_t)c.batch * c.in * sizeof *xh);
  float *th = (float *)malloc((size_t)c.batch * c.out * sizeof *th);
  weights_t w;
  CHECK_CUDA(cudaSetDevice(1));
  if (c.peer) CHECK_CUDA(cudaDeviceEnablePeerAccess(0, 0));
  CHECK_CUDA(cudaSetDevice(0));
  w.w1 = upload(w1h, (size_t)c.in * c.hidden);
  CHECK_CUDA(cudaSetDevice(1));
  w.w2 = upload(w2h, (size_t)c.hidden * c.out);
  uint64_t hash = 0;
  for (int it = 0; it < c.iters; it++) {
    make_batch(c.batch, c.in, c.out, teacher, &seed, xh, th);
    float loss = train_step(&c, &w, xh, th);
    hash = weights_hash(&c, &w, loss);
    printf("iter %d loss %.9g checksum %016llx\n", it, loss, (unsigned long long)hash);
  }
  printf("final multi_device iterations %d checksum %016llx\n", c.iters, (unsigned long long)hash);
  fflush(stdout);
  if (c.ipc) ipc_share(&c, &w, argv[0]);
  CHECK_CUDA(cudaSetDevice(0));
  CHECK_CUDA(cudaFree(w.w1));
  CHECK_CUDA(cudaSetDevice(1));
  CHECK_CUDA(cudaFree(w.w2));
  free(w1h), free(w2h), free(teacher), free(xh), free(th);
  return 0;
}
