/* dlsym: cudart, cuBLAS, cuDNN, XLA and CuPy take libcuda's entry points with dlsym on a
 * handle, which never sees a preloaded definition. For a real libcuda function planalloc
 * wraps, the wrapper is returned; everything else comes back untouched.
 *
 * glibc resolves dlsym(RTLD_NEXT or RTLD_DEFAULT, ...) relative to its caller's return
 * address, so a C override calling the real dlsym would make those lookups relative to
 * planalloc instead (ASan's interceptor set-up then crashes). The export is therefore a
 * trampoline: the two pseudo-handles jump to the real dlsym with the caller's return
 * address intact; real handles go to the C hook. Unversioned, so it binds both
 * dlsym@GLIBC_2.2.5 and dlsym@GLIBC_2.34 references. x86-64. */
#include "pa.h"

void *pa_real_dlsym_ptr __attribute__((visibility("hidden")));
void *pa_resolve_dlsym(void) __attribute__((visibility("hidden")));
void *pa_dlsym_hook(void *handle, const char *name) __attribute__((visibility("hidden")));

void *pa_resolve_dlsym(void) { return pa_real_dlsym_ptr = (void *)pa_real_dlsym(); }

__asm__(".globl dlsym\n"
        ".type dlsym, @function\n"
        "dlsym:\n"
        "  cmpq $-1, %rdi\n" /* RTLD_NEXT */
        "  je 2f\n"
        "  testq %rdi, %rdi\n" /* RTLD_DEFAULT: also caller-relative */
        "  jne pa_dlsym_hook\n"
        "2:\n"
        "  movq pa_real_dlsym_ptr(%rip), %rax\n"
        "  testq %rax, %rax\n"
        "  jne 1f\n"
        "  pushq %rdi\n"
        "  pushq %rsi\n"
        "  subq $8, %rsp\n" /* keep the stack 16-byte aligned */
        "  call pa_resolve_dlsym\n"
        "  addq $8, %rsp\n"
        "  popq %rsi\n"
        "  popq %rdi\n"
        "1: jmp *%rax\n"
        ".size dlsym, .-dlsym\n");

void *pa_dlsym_hook(void *handle, const char *name) {
  void *fn = pa_real_dlsym()(handle, name);
  if (!fn || !name || name[0] != 'c' || name[1] != 'u' || pa_depth) return fn;
  void *hook = pa_hook_for(fn);
  return hook ? hook : fn;
}
