/* An ordered set of small integer nodes (0..cap-1) keyed by (key, node), as a treap.
 * Nodes carry no payload: callers index their own arrays by node. No allocation after
 * init, so the hot loops of the planners never call malloc. */
#ifndef PLANALLOC_TREAP_H
#define PLANALLOC_TREAP_H

#include <stddef.h>
#include <stdint.h>

#define PA_NIL UINT32_MAX

typedef struct pa_treap_s {
  uint32_t root;
  uint32_t *left, *right, *prio;
  int64_t *key;
  uint64_t rng; /* the priorities' sequence */
} pa_treap_t;

int pa_treap_init(pa_treap_t *t, size_t cap, uint64_t seed);
/* Room for nodes old_cap..cap-1 (the set is kept); nonzero without memory, and then the
 * treap is as it was. */
int pa_treap_grow(pa_treap_t *t, size_t old_cap, size_t cap);
void pa_treap_free(pa_treap_t *t);
void pa_treap_insert(pa_treap_t *t, uint32_t x, int64_t key);
void pa_treap_erase(pa_treap_t *t, uint32_t x);
/* Smallest node whose (key, node) >= (key, 0); PA_NIL if none. */
uint32_t pa_treap_ceil(const pa_treap_t *t, int64_t key);
/* Largest node whose key <= key; PA_NIL if none. */
uint32_t pa_treap_floor(const pa_treap_t *t, int64_t key);
uint32_t pa_treap_next(const pa_treap_t *t, uint32_t x);
uint32_t pa_treap_prev(const pa_treap_t *t, uint32_t x);
uint32_t pa_treap_first(const pa_treap_t *t);
uint32_t pa_treap_last(const pa_treap_t *t);

#endif
