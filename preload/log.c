/* The one output path. Messages are formatted into a stack buffer and written with one
 * write(2), so they never allocate, interleave whole between threads, and work before
 * main and during exit. */
#include "pa.h"

#include <stdarg.h>
#include <unistd.h>

int pa_log_fd = 2;
static PA_TLS int depth; /* a message about a message is dropped */

static void emit(const char *prefix, const char *fmt, va_list ap) {
  if (depth++) {
    depth--;
    return;
  }
  char buf[1024];
  int k = snprintf(buf, sizeof buf, "planalloc: %s", prefix);
  int m = vsnprintf(buf + k, sizeof buf - (size_t)k, fmt, ap);
  size_t len = (size_t)k + (m < 0 ? 0 : (size_t)m);
  if (len > sizeof buf - 2) len = sizeof buf - 2; /* truncated, still one line */
  buf[len++] = '\n';
  ssize_t w = write(pa_log_fd, buf, len);
  (void)w; /* nowhere to report a failed report */
  depth--;
}

void pa_info(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  emit("", fmt, ap);
  va_end(ap);
}

void pa_warn(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  emit("warning: ", fmt, ap);
  va_end(ap);
}

void pa_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  emit("error: ", fmt, ap);
  va_end(ap);
}
