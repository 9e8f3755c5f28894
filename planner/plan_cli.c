/* planalloc-plan: plan a trace offline and print one summary line. Exit 0 on success,
 * 2 on bad input or arguments, 1 on an internal failure. */
#include "planner.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

typedef struct cli_s {
  const char *algo, *out, *trace;
  int64_t alignment;
  pa_plan_opts_t opts;
} cli_t;

static void usage(FILE *f) {
  size_t n;
  const pa_algo_t *a = pa_algo_list(&n);
  fprintf(f, "usage: planalloc-plan [--algo NAME] [--alignment N] [--time-limit S] [--gap G]\n"
             "                      [--verbose] [-o layout.csv] TRACE.csv\n"
             "  --alignment N   every offset a multiple of N (default 1; CUDA uses 256)\n"
             "  --time-limit S  seconds best may search (default 10)\n"
             "  --gap G         best stops within G of the lower bound (default 0.0001)\n"
             "  -o FILE         write the layout: the trace's columns plus offset\n"
             "algorithms:\n");
  for (size_t i = 0; i < n; i++) fprintf(f, "  %-16s %s\n", a[i].name, a[i].doc);
}

static int bad_arg(const char *what, const char *value) {
  fprintf(stderr, "planalloc: error: %s '%s'\n", what, value ? value : "(missing)");
  return PA_EINPUT;
}

static int parse_i64(const char *s, int64_t *v) {
  char *end;
  errno = 0;
  long long x = s ? strtoll(s, &end, 10) : 0;
  if (!s || !*s || *end || errno || x <= 0 || x > PA_VALUE_LIMIT) return PA_EINPUT;
  *v = x;
  return PA_OK;
}

static int parse_seconds(const char *s, double *v) {
  char *end;
  double x = s ? strtod(s, &end) : 0;
  if (!s || !*s || *end || !(x > 0 && x < 1e7)) return PA_EINPUT;
  *v = x;
  return PA_OK;
}

static int parse_option(cli_t *c, const char *opt, const char *val, int *used) {
  *used = 1;
  if (!strcmp(opt, "--algo")) c->algo = val;
  else if (!strcmp(opt, "-o")) c->out = val;
  else if (!strcmp(opt, "--alignment")) {
    if (parse_i64(val, &c->alignment)) return bad_arg("--alignment needs a positive integer, got", val);
  } else if (!strcmp(opt, "--time-limit")) {
    if (parse_seconds(val, &c->opts.time_limit)) return bad_arg("--time-limit needs positive seconds, got", val);
  } else if (!strcmp(opt, "--gap")) {
    char *end;
    double g = val ? strtod(val, &end) : -1;
    if (!val || !*val || *end || !(g >= 0 && g < 1)) return bad_arg("--gap needs a fraction in [0, 1), got", val);
    c->opts.gap = g;
  } else if (!strcmp(opt, "--verbose")) c->opts.verbose = true, *used = 0;
  else return bad_arg("unknown option", opt);
  if (*used && !val) return bad_arg("missing value for", opt);
  return PA_OK;
}

static int parse_args(cli_t *c, int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    int used = 0;
    if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) return usage(stdout), -1;
    if (argv[i][0] == '-' && argv[i][1]) {
      if (parse_option(c, argv[i], i + 1 < argc ? argv[i + 1] : NULL, &used)) return PA_EINPUT;
      i += used;
    } else if (c->trace) {
      return bad_arg("more than one trace given:", argv[i]);
    } else {
      c->trace = argv[i];
    }
  }
  if (!c->trace) return usage(stderr), PA_EINPUT;
  return PA_OK;
}

static int load(const cli_t *c, pa_trace_t *t) {
  char err[512];
  FILE *f = strcmp(c->trace, "-") ? fopen(c->trace, "rb") : stdin;
  if (!f) {
    fprintf(stderr, "planalloc: error: %s: %s\n", c->trace, strerror(errno));
    return PA_EINPUT;
  }
  int rc = pa_csv_read(f, t, err, sizeof err);
  if (f != stdin) fclose(f);
  if (rc) fprintf(stderr, "planalloc: error: %s:%s\n", c->trace, err);
  if (!rc && pa_trace_apply_alignment(t, c->alignment)) {
    fprintf(stderr, "planalloc: error: %s: alignment %lld does not fit the trace's "
                    "alignments, fixed offsets or sizes\n", c->trace, (long long)c->alignment);
    pa_trace_free(t);
    rc = PA_EINPUT;
  }
  return rc;
}

static int write_layout(const cli_t *c, const pa_trace_t *t, const int64_t *off) {
  if (!c->out) return PA_OK;
  FILE *f = strcmp(c->out, "-") ? fopen(c->out, "w") : stdout;
  if (!f) {
    fprintf(stderr, "planalloc: error: %s: %s\n", c->out, strerror(errno));
    return PA_EINPUT;
  }
  int rc = pa_csv_write(f, t, off);
  if ((f != stdout ? fclose(f) : fflush(f)) || rc) {
    fprintf(stderr, "planalloc: error: %s: write failed\n", c->out);
    return PA_EINPUT;
  }
  return PA_OK;
}

static void summary(const cli_t *c, const pa_trace_t *t, int64_t maxlive, int64_t peak,
                    double secs) {
  FILE *f = c->out && !strcmp(c->out, "-") ? stderr : stdout;
  fprintf(f, "planalloc: %s: %zu buffers, max-live %lld, pool %lld (%.4fx max-live), %s, %.3f s\n",
          c->trace, t->n, (long long)maxlive, (long long)peak,
          maxlive ? (double)peak / (double)maxlive : 1.0, c->algo, secs);
}

static int plan(const cli_t *c, const pa_algo_t *a, const pa_trace_t *t) {
  char err[512];
  int64_t peak = 0, maxlive = pa_trace_maxlive(t);
  int64_t *off = malloc((t->n + 1) * sizeof *off);
  if (!off || maxlive < 0) {
    free(off);
    fprintf(stderr, "planalloc: error: %s: out of memory\n", c->trace);
    return 1;
  }
  double t0 = pa_now();
  int rc = pa_plan(a, t, &c->opts, off, &peak, err, sizeof err);
  double secs = pa_now() - t0;
  if (rc) fprintf(stderr, "planalloc: error: %s: %s\n", c->trace, err);
  if (!rc) rc = write_layout(c, t, off);
  if (!rc) summary(c, t, maxlive, peak, secs);
  free(off);
  return rc == PA_EINPUT || rc == PA_EUNSUPPORTED ? 2 : rc ? 1 : 0;
}

int main(int argc, char **argv) {
  cli_t c = {.algo = "best", .alignment = 1, .opts = {.gap = 1e-4}};
  int rc = parse_args(&c, argc, argv);
  if (rc) return rc < 0 ? 0 : 2;
  const pa_algo_t *a = pa_algo_find(c.algo);
  if (!a) {
    fprintf(stderr, "planalloc: error: unknown algorithm '%s' (see --help)\n", c.algo);
    return 2;
  }
  pa_trace_t t;
  if (load(&c, &t)) return 2;
  rc = plan(&c, a, &t);
  pa_trace_free(&t);
  return rc;
}
