/* dlsym: cudart, cuBLAS, cuDNN, XLA and CuPy take libcuda's entry points with dlsym on a
 * handle, which never sees a preloaded definition. For a real libcuda function planalloc
 * wraps, the wrapper is returned; everything else comes back untouched.
 * Unversioned, so it binds both dlsym@GLIBC_2.2.5 and dlsym@GLIBC_2.34 references;
 * see dlsym_trampoline.h for why it is a trampoline. */
#include "dlsym_trampoline.h"
#include "pa.h"

void *pa_real_dlsym_ptr __attribute__((visibility("hidden")));
void *pa_resolve_dlsym(void) __attribute__((visibility("hidden")));
void *pa_dlsym_hook(void *handle, const char *name) __attribute__((visibility("hidden")));

void *pa_resolve_dlsym(void) { return pa_real_dlsym_ptr = (void *)pa_real_dlsym(); }

PA_DLSYM_TRAMPOLINE(pa_dlsym_hook, pa_real_dlsym_ptr, pa_resolve_dlsym);

void *pa_dlsym_hook(void *handle, const char *name) {
  void *fn = pa_real_dlsym()(handle, name);
  if (!fn || !name || name[0] != 'c' || name[1] != 'u' || pa_depth) return fn;
  void *hook = pa_hook_for(fn);
  return hook ? hook : fn;
}
