/* Allocations a library makes for itself go to the driver where it is listed
 * (PLANALLOC_PASS_MODULES, and always libnccl and libsimccl): a communication library
 * shares its buffers with other processes by CUDA IPC, which the pool's VMM memory
 * cannot be (issue #26). The allocating code is told by the return address into it:
 * dladdr names its file once per call site, a thread's small cache answers after that
 * (call sites are few; no lock, no allocation). The same name rule says whether a
 * library is loaded at all (the exit verdict's libtorch_cuda). */
#include "pa.h"

#include <dlfcn.h>
#include <link.h>
#include <string.h>

#define CACHE 64

PA_TLS bool pa_pass_next;

static PA_TLS struct {
  void *at;
  bool pass;
} cache[CACHE];

/* Whether the n bytes at name name the file base: base is name, or name and a version
 * suffix ("libcuda" names libcuda.so.1; a part of a name matched libcudart too, and then
 * every cudaMalloc went to the driver). */
static bool names(const char *name, size_t n, const char *base) {
  while (n && name[n - 1] == ' ') n--;
  return n && !strncmp(base, name, n) && (base[n] == 0 || base[n] == '.');
}

/* Whether one comma-separated name of list names base; spaces around a name are no part
 * of it. */
static bool named(const char *list, const char *base) {
  for (const char *s = list; *s;) {
    s += strspn(s, " ");
    size_t n = strcspn(s, ",");
    if (names(s, n, base)) return true;
    s += n + (s[n] == ',');
  }
  return false;
}

static const char *file_name(const char *path) {
  const char *base = strrchr(path, '/');
  return base ? base + 1 : path;
}

static bool listed(const char *path) {
  const char *base = file_name(path);
  return named("libnccl,libsimccl", base) || named(pa_opt.v[PA_OPT_PASS_MODULES].text, base);
}

typedef struct find_s {
  const char *name;
  bool found;
} find_t;

static int seen(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  find_t *f = arg;
  f->found |= info->dlpi_name && names(f->name, strlen(f->name), file_name(info->dlpi_name));
  return f->found;
}

bool pa_module_loaded(const char *name) {
  find_t f = {name, false};
  dl_iterate_phdr(seen, &f);
  return f.found;
}

bool pa_module_passes(void *caller) {
  size_t h = ((uintptr_t)caller >> 2) % CACHE;
  if (cache[h].at == caller && caller) return cache[h].pass;
  Dl_info info;
  bool pass = caller && dladdr(caller, &info) && info.dli_fname && listed(info.dli_fname);
  cache[h].at = caller, cache[h].pass = pass;
  return pass;
}
