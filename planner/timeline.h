/* Compressed time: the distinct span ends of a trace, so segment k is
 * [coord[k], coord[k+1]) and every span covers a contiguous run of segments. Also a
 * max-tree over segments with range chmax updates, the skyline of placed buffers. */
#ifndef PLANALLOC_TIMELINE_H
#define PLANALLOC_TIMELINE_H

#include "planner.h"

typedef struct pa_timeline_s {
  int64_t *coord;
  size_t ncoord; /* segments: ncoord - 1 */
} pa_timeline_t;

int pa_timeline_init(pa_timeline_t *tl, const pa_trace_t *t);
void pa_timeline_free(pa_timeline_t *tl);
size_t pa_timeline_index(const pa_timeline_t *tl, int64_t time);
/* First index whose value is >= v in a sorted array. */
size_t pa_lower_bound(const int64_t *sorted, size_t n, int64_t v);
/* Live bytes per segment (array of ncoord - 1), and per buffer the most live bytes of any
 * segment it occupies (MiniMalloc's "T"). Caller frees both. */
int pa_timeline_live(const pa_timeline_t *tl, const pa_trace_t *t, int64_t **live,
                     int64_t **peak_of_buf);

typedef struct pa_maxnode_s {
  int64_t mx, tag; /* together: a query reads both of a node */
} pa_maxnode_t;

typedef struct pa_maxtree_s {
  size_t leaves;
  pa_maxnode_t *node;
} pa_maxtree_t;

int pa_maxtree_init(pa_maxtree_t *m, size_t n);
void pa_maxtree_free(pa_maxtree_t *m);
void pa_maxtree_raise(pa_maxtree_t *m, size_t lo, size_t hi, int64_t v); /* [lo, hi) */
int64_t pa_maxtree_max(const pa_maxtree_t *m, size_t lo, size_t hi);

#endif
