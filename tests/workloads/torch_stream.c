/* torch_stream: writes the allocation stream of a PyTorch-shaped training run, seeded, in
 * the format of ../shared/data/gpu-events ("a <ptr> <size> <tid>", "f <ptr> <tid>",
 * "a (nil) 0 <tid>"), for event_replay to play through the simulated CUDA:
 *   torch_stream [--seed S] [--steps N] [--layers L] [--extra-every K] [--shapes A,B,..]
 *                [--shape-steps M] | event_replay /dev/stdin
 * Each step, as PyTorch's eager mode makes it (uncached: one cudaMalloc per tensor):
 *   - the batch copied in (input and target), the last batch freed once the new one is
 *     bound;
 *   - zero_grad: the last step's gradients freed at once (set_to_none);
 *   - forward on the Python thread: per layer an activation kept for backward, two or
 *     three temporaries in a seeded order, a zero-byte request (PyTorch makes 182 a
 *     ResNet-50 step); the loss, the last step's freed once the new one is made;
 *   - backward on the autograd thread: per layer in reverse, the input's gradient (the
 *     one above freed), the weight's gradient (kept until the next zero_grad), a
 *     temporary, the activation freed;
 *   - the optimizer on the Python thread: its state made at the first step (two
 *     buffers per parameter, kept), a temporary per parameter group;
 *   - with --extra-every K, every Kth step a logging buffer made and freed;
 *   - with --shapes, the sequence length (activation sizes) cycles through the list,
 *     each held for --shape-steps steps (default 8): a plan per shape.
 * Sizes: parameters 4 KiB..8 MiB, activations by the shape, all seeded. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAIN = 1001, AUTOGRAD = 1002, MAXL = 256 };

static unsigned long long rng;
static unsigned long long next_ptr = 0x7f0000000000ull;

static unsigned rnd(unsigned n) {
  rng = rng * 6364136223846793005ull + 1442695040888963407ull;
  return (unsigned)((rng >> 33) % n);
}

static unsigned long long alloc(long long size, int tid) {
  unsigned long long p = next_ptr;
  next_ptr += ((unsigned long long)size + 511) / 512 * 512;
  printf("a 0x%llx %lld %d\n", p, size, tid);
  return p;
}

static void release(unsigned long long p, int tid) {
  if (p) printf("f 0x%llx %d\n", p, tid);
}

static void zero(int tid) { printf("a (nil) 0 %d\n", tid); }

typedef struct model_s {
  int layers;
  long long param[MAXL], act[MAXL]; /* bytes: per layer, act per unit of sequence */
  int temps[MAXL];                  /* forward temporaries per layer: 2 or 3 */
  unsigned long long grad[MAXL], state[2 * MAXL], input, target, loss;
  int opt_made;
} model_t;

static void build(model_t *m, int layers) {
  m->layers = layers;
  for (int l = 0; l < layers; l++) {
    m->param[l] = 4096LL << rnd(12); /* 4 KiB .. 8 MiB */
    m->act[l] = 1024LL * (1 + rnd(64));
    m->temps[l] = 2 + (int)rnd(2);
  }
}

static void forward(model_t *m, long long seq, unsigned long long *acts) {
  for (int l = 0; l < m->layers; l++) {
    unsigned long long t[3];
    acts[l] = alloc(m->act[l] * seq, MAIN);
    for (int k = 0; k < m->temps[l]; k++) t[k] = alloc(m->act[l] * seq / (k + 2) + 256, MAIN);
    if (l % 3 == 0) zero(MAIN);
    for (int k = m->temps[l]; k-- > 0;) release(t[k], MAIN); /* in reverse, as the ops finish */
  }
  unsigned long long loss = alloc(4, MAIN);
  release(m->loss, MAIN); /* the last step's loss, held until the new one is bound */
  m->loss = loss;
}

static void backward(model_t *m, long long seq, unsigned long long *acts) {
  unsigned long long above = alloc(4, AUTOGRAD); /* d loss */
  for (int l = m->layers; l-- > 0;) {
    unsigned long long gin = alloc(m->act[l] * seq, AUTOGRAD);
    release(above, AUTOGRAD);
    m->grad[l] = alloc(m->param[l], AUTOGRAD);
    unsigned long long tmp = alloc(m->param[l] / 2 + 512, AUTOGRAD);
    release(tmp, AUTOGRAD);
    release(acts[l], AUTOGRAD);
    above = gin;
  }
  release(above, AUTOGRAD);
}

static void optimizer(model_t *m) {
  if (!m->opt_made)
    for (int l = 0; l < m->layers; l++) m->state[2 * l] = alloc(m->param[l], MAIN), m->state[2 * l + 1] = alloc(m->param[l], MAIN);
  m->opt_made = 1;
  for (int g = 0; g < (m->layers + 7) / 8; g++) release(alloc(8LL << 20, MAIN), MAIN); /* a foreach op's scratch */
}

static void step(model_t *m, long long seq, int k, int extra_every) {
  unsigned long long acts[MAXL];
  unsigned long long in = alloc(64 * seq * 4, MAIN), tg = alloc(64 * 4, MAIN);
  release(m->input, MAIN), release(m->target, MAIN);
  m->input = in, m->target = tg;
  for (int l = 0; l < m->layers; l++) release(m->grad[l], MAIN), m->grad[l] = 0; /* zero_grad */
  forward(m, seq, acts);
  backward(m, seq, acts);
  optimizer(m);
  if (extra_every && k % extra_every == extra_every - 1) release(alloc(1 << 20, MAIN), MAIN);
}

int main(int argc, char **argv) {
  int steps = 40, layers = 24, extra_every = 0, shape_steps = 8, nshapes = 1;
  long long shapes[16] = {128};
  rng = 1;
  for (int i = 1; i < argc; i += 2) {
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v) fprintf(stderr, "torch_stream: %s wants a value\n", argv[i]), exit(2);
    if (!strcmp(argv[i], "--seed")) rng = strtoull(v, NULL, 10) * 2654435761ull + 1;
    else if (!strcmp(argv[i], "--steps")) steps = atoi(v);
    else if (!strcmp(argv[i], "--layers")) layers = atoi(v);
    else if (!strcmp(argv[i], "--extra-every")) extra_every = atoi(v);
    else if (!strcmp(argv[i], "--shape-steps")) shape_steps = atoi(v);
    else if (!strcmp(argv[i], "--shapes")) {
      char *copy = strdup(v), *save = NULL;
      nshapes = 0;
      for (char *t = strtok_r(copy, ",", &save); t && nshapes < 16; t = strtok_r(NULL, ",", &save)) shapes[nshapes++] = atoll(t);
      free(copy);
    } else
      fprintf(stderr, "torch_stream: unknown option %s\n", argv[i]), exit(2);
  }
  if (steps < 1 || layers < 1 || layers > MAXL || extra_every < 0 || shape_steps < 1 || nshapes < 1)
    fprintf(stderr, "torch_stream: bad --steps, --layers, --extra-every, --shape-steps or --shapes\n"), exit(2);
  for (int s = 0; s < nshapes; s++)
    if (shapes[s] < 1 || shapes[s] > 1 << 16) fprintf(stderr, "torch_stream: a shape in 1..65536\n"), exit(2);
  model_t m;
  memset(&m, 0, sizeof m);
  build(&m, layers);
  for (int l = 0; l < layers; l++) alloc(m.param[l], MAIN); /* the weights, made once */
  for (int k = 0; k < steps; k++) step(&m, shapes[(k / shape_steps) % nshapes], k, extra_every);
  return 0;
}
