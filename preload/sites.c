/* Callsites. The recording names an allocation's callsite by a hash of its return
 * addresses: cheap, and enough to tell iterations apart, but a number means nothing to
 * the user and changes from run to run (the loader places the libraries elsewhere). So
 * the first time a hash is seen its frames are kept, and the dump says where each one
 * is: the module, the offset of the call in it (what addr2line takes) and the nearest
 * dynamic symbol. Symbols are looked up only at dump time, never while recording. */
#include "pa.h"

#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#define HASH_FUNCTION PA_HASH_WORD
#include <uthash.h>

/* A program with more distinct callsites than this is rare; past it the rest keep
 * their hashes only, and the dump says how many. */
#define PA_SITES_MAX 16384

typedef struct site_s {
  pa_site_t s;
  UT_hash_handle hh;
} site_t;

static struct {
  site_t *by_hash; /* pa_mu held */
  size_t untold;
} sites;

void pa_callsite(pa_site_t *s) {
  s->n = unw_backtrace(s->ip, PA_SITE_FRAMES);
  if (s->n < 0) s->n = 0;
  s->hash = 0x51ed27u;
  for (int i = 0; i < s->n; i++) s->hash = pa_mix64(s->hash ^ (uint64_t)(uintptr_t)s->ip[i]);
  pa_pyframe(s);
}

void pa_site_note(const pa_site_t *s) {
  site_t *k;
  if (!s->n) return;
  HASH_FIND(hh, sites.by_hash, &s->hash, sizeof s->hash, k);
  if (k) return;
  if (HASH_COUNT(sites.by_hash) == PA_SITES_MAX || !(k = malloc(sizeof *k))) {
    sites.untold++;
    return;
  }
  k->s = *s;
  HASH_ADD(hh, sites.by_hash, s.hash, sizeof k->s.hash, k);
}

/* A CSV field, quoted when it must be (C++ and file names may hold anything). */
static void csv_field(FILE *f, const char *s) {
  if (!strpbrk(s, ",\"\n\r")) {
    fputs(s, f);
    return;
  }
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"') fputc('"', f);
    fputc(*s, f);
  }
  fputc('"', f);
}

/* The offset addr2line takes for an address in the module loaded at base: the address
 * itself in a fixed-position executable, else from the load base. */
static uintptr_t module_offset(const Dl_info *in, uintptr_t at) {
  const ElfW(Ehdr) *eh = in->dli_fbase;
  bool fixed = eh && !memcmp(eh->e_ident, ELFMAG, SELFMAG) && eh->e_type == ET_EXEC;
  return fixed ? at : at - (uintptr_t)in->dli_fbase;
}

/* One frame: a return address, so the call is the byte before it. */
static void dump_frame(FILE *f, uint64_t hash, int depth, void *ip) {
  uintptr_t at = (uintptr_t)ip - 1;
  Dl_info in;
  bool found = dladdr((void *)at, &in) && in.dli_fname;
  char path[PATH_MAX];
  fprintf(f, "%016llx,%d,", (unsigned long long)hash, depth);
  /* the loader's name may be relative to where the program started */
  csv_field(f, !found ? "?" : realpath(in.dli_fname, path) ? path : in.dli_fname);
  fprintf(f, ",0x%llx,", (unsigned long long)(found ? module_offset(&in, at) : at));
  if (found && in.dli_sname) csv_field(f, in.dli_sname);
  fprintf(f, ",0x%llx\n", (unsigned long long)(found && in.dli_sname ? at - (uintptr_t)in.dli_saddr : 0));
}

/* A Python frame goes first, as a module ending in .py: its file, the line as the offset,
 * the function as the symbol. */
static void dump_py(FILE *f, const pa_site_t *s) {
  fprintf(f, "%016llx,0,", (unsigned long long)s->hash);
  csv_field(f, s->py_file);
  fprintf(f, ",0x%x,", (unsigned)s->py_line);
  csv_field(f, s->py_func);
  fprintf(f, ",0x0\n");
}

void pa_sites_dump(FILE *f) {
  fprintf(f, "# planalloc sites 1\nsite,depth,module,offset,symbol,symbol_offset\n");
  for (site_t *k = sites.by_hash; k; k = k->hh.next) {
    int py = k->s.py_line >= 0;
    if (py) dump_py(f, &k->s);
    for (int d = 0; d < k->s.n; d++) dump_frame(f, k->s.hash, d + py, k->s.ip[d]);
  }
  if (sites.untold) fprintf(f, "# %zu allocations came from callsites not kept (over %d)\n", sites.untold, PA_SITES_MAX);
}
