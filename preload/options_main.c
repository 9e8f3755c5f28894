/* planalloc-options: prints the option table as markdown (the README's table is this
 * output; a test keeps the two equal), or with --check, parses the environment and
 * prints the effective configuration and any warnings, as the preload will. */
#include <string.h>

#include "pa.h"

extern char **environ;

int main(int argc, char **argv) {
  if (argc > 1 && !strcmp(argv[1], "--check")) {
    pa_options_t o;
    pa_options_parse(&o, environ);
    pa_options_print(&o);
    return 0;
  }
  pa_options_markdown(stdout);
  return 0;
}
