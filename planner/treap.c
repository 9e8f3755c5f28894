/* Treap with split/merge; expected depth O(log n), so recursion is safe. */
#include "treap.h"

#include <stdbool.h>
#include <stdlib.h>

/* Priorities continue one xorshift sequence, so a treap grown to cap has the ones it
 * would have had if made that big. */
static void draw_prios(pa_treap_t *t, size_t from, size_t cap) {
  for (size_t i = from; i < cap; i++) {
    t->rng ^= t->rng << 13, t->rng ^= t->rng >> 7, t->rng ^= t->rng << 17; /* cheap, deterministic */
    t->prio[i] = (uint32_t)t->rng;
  }
}

/* realloc that keeps *p when it fails. */
static bool resize(void *p, size_t bytes) {
  void *q = realloc(*(void **)p, bytes);
  if (q) *(void **)p = q;
  return q != NULL;
}

int pa_treap_grow(pa_treap_t *t, size_t old_cap, size_t cap) {
  bool ok = resize(&t->left, (cap + 1) * sizeof *t->left) && resize(&t->right, (cap + 1) * sizeof *t->right) &&
            resize(&t->prio, (cap + 1) * sizeof *t->prio) && resize(&t->key, (cap + 1) * sizeof *t->key);
  if (!ok) return 3;
  draw_prios(t, old_cap, cap);
  return 0;
}

int pa_treap_init(pa_treap_t *t, size_t cap, uint64_t seed) {
  *t = (pa_treap_t){.root = PA_NIL, .rng = seed * 0x9E3779B97F4A7C15ull + 1};
  if (pa_treap_grow(t, 0, cap)) {
    pa_treap_free(t);
    return 3;
  }
  return 0;
}

void pa_treap_free(pa_treap_t *t) {
  free(t->left), free(t->right), free(t->prio), free(t->key);
  t->left = t->right = t->prio = NULL;
  t->key = NULL;
}

static bool less(const pa_treap_t *t, uint32_t a, int64_t bkey, uint32_t b) {
  return t->key[a] < bkey || (t->key[a] == bkey && a < b);
}

/* Splits n into nodes < (key, x) and the rest. */
static void split(pa_treap_t *t, uint32_t n, int64_t key, uint32_t x, uint32_t *l,
                  uint32_t *r) {
  if (n == PA_NIL) {
    *l = *r = PA_NIL;
  } else if (less(t, n, key, x)) {
    split(t, t->right[n], key, x, &t->right[n], r);
    *l = n;
  } else {
    split(t, t->left[n], key, x, l, &t->left[n]);
    *r = n;
  }
}

static uint32_t merge(pa_treap_t *t, uint32_t a, uint32_t b) {
  if (a == PA_NIL) return b;
  if (b == PA_NIL) return a;
  if (t->prio[a] > t->prio[b]) {
    t->right[a] = merge(t, t->right[a], b);
    return a;
  }
  t->left[b] = merge(t, a, t->left[b]);
  return b;
}

void pa_treap_insert(pa_treap_t *t, uint32_t x, int64_t key) {
  uint32_t l, r;
  t->key[x] = key;
  t->left[x] = t->right[x] = PA_NIL;
  split(t, t->root, key, x, &l, &r);
  t->root = merge(t, merge(t, l, x), r);
}

void pa_treap_erase(pa_treap_t *t, uint32_t x) {
  uint32_t *link = &t->root;
  while (*link != x) {
    uint32_t n = *link;
    link = less(t, x, t->key[n], n) ? &t->left[n] : &t->right[n];
  }
  *link = merge(t, t->left[x], t->right[x]);
}

uint32_t pa_treap_ceil(const pa_treap_t *t, int64_t key) {
  uint32_t n = t->root, best = PA_NIL;
  while (n != PA_NIL) {
    if (t->key[n] >= key) best = n, n = t->left[n];
    else n = t->right[n];
  }
  return best;
}

uint32_t pa_treap_floor(const pa_treap_t *t, int64_t key) {
  uint32_t n = t->root, best = PA_NIL;
  while (n != PA_NIL) {
    if (t->key[n] <= key) best = n, n = t->right[n];
    else n = t->left[n];
  }
  return best;
}

uint32_t pa_treap_next(const pa_treap_t *t, uint32_t x) {
  uint32_t n = t->root, best = PA_NIL;
  while (n != PA_NIL) {
    if (less(t, x, t->key[n], n)) best = n, n = t->left[n];
    else n = t->right[n];
  }
  return best;
}

uint32_t pa_treap_prev(const pa_treap_t *t, uint32_t x) {
  uint32_t n = t->root, best = PA_NIL;
  while (n != PA_NIL) {
    if (less(t, n, t->key[x], x)) best = n, n = t->right[n];
    else n = t->left[n];
  }
  return best;
}

uint32_t pa_treap_first(const pa_treap_t *t) {
  uint32_t n = t->root;
  while (n != PA_NIL && t->left[n] != PA_NIL) n = t->left[n];
  return n;
}

uint32_t pa_treap_last(const pa_treap_t *t) {
  uint32_t n = t->root;
  while (n != PA_NIL && t->right[n] != PA_NIL) n = t->right[n];
  return n;
}
