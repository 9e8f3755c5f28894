/* planalloc-options: prints the option table as markdown (the README's table is this
 * output; a test keeps the two equal); with --check, parses the environment and prints
 * the effective configuration and any warnings, as the preload will; with --value NAME
 * VALUE, exits 0 where the preload takes VALUE for PLANALLOC_NAME, else 2 with what it
 * should be (the planalloc command checks its options by it: one grammar). */
#include <string.h>

#include "pa.h"

extern char **environ;

int main(int argc, char **argv) {
  if (argc == 4 && !strcmp(argv[1], "--value")) {
    const char *why = pa_option_check(argv[2], argv[3]);
    if (why) fprintf(stderr, "'%s' is not %s\n", argv[3], why);
    return why ? 2 : 0;
  }
  if (argc > 1 && !strcmp(argv[1], "--check")) {
    pa_options_t o;
    pa_options_parse(&o, environ);
    pa_options_print(&o);
    return 0;
  }
  pa_options_markdown(stdout);
  return 0;
}
