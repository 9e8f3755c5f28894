/* The DTR prototype's op logs (uwsampl/dtr-prototype, simrd/logs): one JSON object per
 * line. Tensors are names ("x7690") over storages; a storage is one buffer here:
 *   CONSTANT name            a tensor that exists before the iteration (new storage)
 *   MEMORY name bytes        the size of name's storage
 *   COPY dst src             dst is another reference to src's storage
 *   COPY_FROM dst src        dst's storage is written from src's: an op touching both
 *   CALL / MUTATE            an op: ARGS, RESULT names, TIME ns; touches their storages
 *   ALIAS name k             a CALL result: k = -1 a new storage, else a view of ARGS[k]
 *   RELEASE name             a reference dropped; the storage dies with its last one
 * Only the fields named above are read; the parser takes exactly this flat form. */
#include "dtr.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uthash.h>

#define MAX_ARGS 64

typedef struct tensor_s {
  char name[32];
  uint32_t buf;
  UT_hash_handle hh;
} tensor_t;

typedef struct reader_s {
  pa_atrace_t *t;
  tensor_t *tensors;
  uint32_t *refs; /* per buffer */
  size_t cap_refs;
  char args[MAX_ARGS][32], results[MAX_ARGS][32]; /* of the last op */
  uint64_t result_size[MAX_ARGS];                  /* MEMORY comes before its ALIAS */
  int nargs, nresults;
  char *err;
  size_t errlen;
  long line;
} reader_t;

/* The string value of "key" in a flat JSON object, copied into out; false if absent. */
static bool str_field(const char *line, const char *key, char *out, size_t len) {
  char pat[48];
  snprintf(pat, sizeof pat, "\"%s\":\"", key);
  const char *p = strstr(line, pat), *e;
  if (!p || !(e = strchr(p += strlen(pat), '"')) || (size_t)(e - p) >= len) return false;
  memcpy(out, p, (size_t)(e - p)), out[e - p] = 0;
  return true;
}

/* The strings of the array "key": ["a","b"]; -1 if absent or too long. */
static int list_field(const char *line, const char *key, char out[][32], int max) {
  char pat[48];
  snprintf(pat, sizeof pat, "\"%s\":[", key);
  const char *p = strstr(line, pat);
  if (!p) return -1;
  int n = 0;
  for (p += strlen(pat); *p && *p != ']';) {
    const char *s = strchr(p, '"'), *e = s ? strchr(s + 1, '"') : NULL;
    if (!s || !e || n == max || e - s - 1 >= 32) return -1;
    memcpy(out[n], s + 1, (size_t)(e - s - 1)), out[n][e - s - 1] = 0, n++;
    p = e + 1;
    while (*p == ',' || *p == ' ') p++;
  }
  return n;
}

static tensor_t *tensor(reader_t *r, const char *name) {
  tensor_t *x;
  HASH_FIND_STR(r->tensors, name, x);
  return x;
}

static int fail(reader_t *r, const char *what, const char *name) {
  snprintf(r->err, r->errlen, "line %ld: %s %s", r->line, what, name ? name : "");
  return -1;
}

static int name_tensor(reader_t *r, const char *name, uint32_t buf) {
  if (tensor(r, name)) return fail(r, "tensor defined twice:", name);
  tensor_t *x = calloc(1, sizeof *x);
  if (!x || buf >= r->t->nbuf) return free(x), fail(r, "out of memory at", name);
  snprintf(x->name, sizeof x->name, "%s", name), x->buf = buf;
  HASH_ADD_STR(r->tensors, name, x);
  if (buf >= r->cap_refs) {
    size_t c = r->cap_refs ? 2 * r->cap_refs : 1024;
    while (c <= buf) c *= 2;
    uint32_t *q = realloc(r->refs, c * sizeof *q);
    if (!q) return fail(r, "out of memory at", name);
    memset(q + r->cap_refs, 0, (c - r->cap_refs) * sizeof *q);
    r->refs = q, r->cap_refs = c;
  }
  r->refs[buf]++;
  return 0;
}

static int new_storage(reader_t *r, const char *name, bool constant) {
  uint32_t b = pa_atrace_buffer(r->t, 0, constant);
  return b == UINT32_MAX ? fail(r, "out of memory at", name) : name_tensor(r, name, b);
}

static int touch_names(reader_t *r, const char *line, const char *key) {
  char names[MAX_ARGS][32];
  int n = list_field(line, key, names, MAX_ARGS);
  for (int i = 0; i < n; i++) {
    tensor_t *x = tensor(r, names[i]);
    if (!x) return fail(r, "unknown tensor", names[i]);
    if (pa_atrace_touch(r->t, x->buf)) return fail(r, "out of memory at", names[i]);
  }
  return 0;
}

static int op(reader_t *r, const char *line) {
  char time[32] = "0";
  str_field(line, "TIME", time, sizeof time);
  if (pa_atrace_op(r->t, atof(time))) return fail(r, "out of memory", NULL);
  r->nargs = list_field(line, "ARGS", r->args, MAX_ARGS);
  r->nresults = list_field(line, "RESULT", r->results, MAX_ARGS);
  if (r->nargs < 0) r->nargs = 0;
  if (r->nresults < 0) r->nresults = 0;
  memset(r->result_size, 0, sizeof r->result_size);
  return touch_names(r, line, "ARGS");
}

/* The index of name among the last op's results, or -1. */
static int result_index(const reader_t *r, const char *name) {
  for (int i = 0; i < r->nresults; i++)
    if (!strcmp(r->results[i], name)) return i;
  return -1;
}

static int alias(reader_t *r, const char *name, const char *k) {
  int idx = atoi(k), res = result_index(r, name);
  if (idx < 0) {
    if (new_storage(r, name, false) || pa_atrace_touch(r->t, (uint32_t)r->t->nbuf - 1)) return -1;
    if (res >= 0 && r->result_size[res]) r->t->size[r->t->nbuf - 1] = r->result_size[res];
    return 0;
  }
  tensor_t *base = idx < r->nargs ? tensor(r, r->args[idx]) : NULL;
  if (!base) return fail(r, "view of an unknown argument:", name);
  return name_tensor(r, name, base->buf);
}

static int release(reader_t *r, const char *name) {
  tensor_t *x = tensor(r, name);
  if (!x) return fail(r, "release of an unknown tensor", name);
  if (--r->refs[x->buf] == 0) pa_atrace_release(r->t, x->buf);
  HASH_DEL(r->tensors, x);
  free(x);
  return 0;
}

static int copy(reader_t *r, const char *line, bool writes) {
  char dst[32], src[32];
  tensor_t *s;
  if (!str_field(line, "DST", dst, sizeof dst) || !str_field(line, "SRC", src, sizeof src)) return fail(r, "COPY without DST/SRC", NULL);
  if (!(s = tensor(r, src))) return fail(r, "copy of an unknown tensor", src);
  if (!writes) return name_tensor(r, dst, s->buf);
  tensor_t *d = tensor(r, dst);
  if (!d) return fail(r, "copy into an unknown tensor", dst);
  return pa_atrace_op(r->t, 0) || pa_atrace_touch(r->t, s->buf) || pa_atrace_touch(r->t, d->buf) ? -1 : 0;
}

static int line_of(reader_t *r, const char *line) {
  char ins[16], name[32] = "", val[32] = "";
  if (!str_field(line, "INSTRUCTION", ins, sizeof ins)) return fail(r, "no INSTRUCTION", NULL);
  str_field(line, "NAME", name, sizeof name);
  if (!strcmp(ins, "CONSTANT")) return new_storage(r, name, true);
  if (!strcmp(ins, "MEMORY")) {
    tensor_t *x = tensor(r, name);
    int res = x ? -1 : result_index(r, name);
    if ((!x && res < 0) || !str_field(line, "MEMORY", val, sizeof val)) return fail(r, "MEMORY of an unknown tensor", name);
    if (x) r->t->size[x->buf] = strtoull(val, NULL, 10);
    else r->result_size[res] = strtoull(val, NULL, 10);
    return 0;
  }
  if (!strcmp(ins, "CALL") || !strcmp(ins, "MUTATE")) return op(r, line);
  if (!strcmp(ins, "ALIAS")) return str_field(line, "ALIAS", val, sizeof val) ? alias(r, name, val) : fail(r, "ALIAS without k", name);
  if (!strcmp(ins, "RELEASE")) return release(r, name);
  if (!strcmp(ins, "COPY")) return copy(r, line, false);
  if (!strcmp(ins, "COPY_FROM")) return copy(r, line, true);
  return 0; /* ANNOTATE and anything else: no memory meaning */
}

int pa_dtr_log_read(const char *path, pa_atrace_t *t, char *err, size_t errlen) {
  FILE *f = fopen(path, "r");
  if (!f) return snprintf(err, errlen, "cannot open %s", path), -1;
  reader_t r = {.t = t, .err = err, .errlen = errlen};
  char line[16384];
  int rc = 0;
  while (!rc && fgets(line, sizeof line, f)) {
    r.line++;
    if (!strchr(line, '\n') && !feof(f)) rc = fail(&r, "line too long", NULL);
    else if (line[0] == '{') rc = line_of(&r, line);
  }
  fclose(f);
  tensor_t *x, *tmp;
  HASH_ITER(hh, r.tensors, x, tmp) {
    HASH_DEL(r.tensors, x);
    free(x);
  }
  free(r.refs);
  if (!rc && !t->nop) {
    snprintf(err, errlen, "no ops");
    rc = -1;
  }
  return rc;
}
