/* An exported dlsym that interposes without moving caller-relative lookups.
 *
 * glibc resolves dlsym(RTLD_NEXT or RTLD_DEFAULT, ...) relative to its caller's return
 * address, so a C override calling the real dlsym would make those lookups relative to
 * the interposer instead (ASan's interceptor set-up then crashes). The export is
 * therefore a trampoline: the two pseudo-handles jump to the real dlsym with the caller's
 * return address intact; real handles go to HOOK(handle, name). REAL is a pointer
 * variable holding the real dlsym, filled on first use by RESOLVE() (which returns it).
 * The three must be non-static, hidden symbols. x86-64. Shared by libplanalloc.so and
 * the test preload tests/simcuda/pathcount.c. */
#ifndef PLANALLOC_DLSYM_TRAMPOLINE_H
#define PLANALLOC_DLSYM_TRAMPOLINE_H

#define PA_STR_(x) #x
#define PA_STR(x) PA_STR_(x)

#define PA_DLSYM_TRAMPOLINE(HOOK, REAL, RESOLVE)                                            \
  __asm__(".globl dlsym\n"                                                                  \
          ".type dlsym, @function\n"                                                        \
          "dlsym:\n"                                                                        \
          "  cmpq $-1, %rdi\n" /* RTLD_NEXT */                                              \
          "  je 2f\n"                                                                       \
          "  testq %rdi, %rdi\n" /* RTLD_DEFAULT: also caller-relative */                   \
          "  jne " PA_STR(HOOK) "\n"                                                        \
          "2:\n"                                                                            \
          "  movq " PA_STR(REAL) "(%rip), %rax\n"                                           \
          "  testq %rax, %rax\n"                                                            \
          "  jne 1f\n"                                                                      \
          "  pushq %rdi\n"                                                                  \
          "  pushq %rsi\n"                                                                  \
          "  subq $8, %rsp\n" /* keep the stack 16-byte aligned */                          \
          "  call " PA_STR(RESOLVE) "\n"                                                    \
          "  addq $8, %rsp\n"                                                               \
          "  popq %rsi\n"                                                                   \
          "  popq %rdi\n"                                                                   \
          "1: jmp *%rax\n"                                                                  \
          ".size dlsym, .-dlsym\n")

#endif
