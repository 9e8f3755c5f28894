/* The option table: defaults, every grammar, and the exact warning for each bad input. */
#include "../harness.h"
#include "pa.h"

#include <stdlib.h>
#include <unistd.h>

static char warnings[4096];

/* Parses env, capturing what the parser printed. */
static void parse(pa_options_t *o, char *const *env) {
  int fds[2];
  if (pipe(fds)) abort();
  pa_log_fd = fds[1];
  pa_options_parse(o, env);
  close(fds[1]);
  ssize_t n = read(fds[0], warnings, sizeof warnings - 1);
  warnings[n > 0 ? n : 0] = 0;
  close(fds[0]);
  pa_log_fd = 2;
}

static void test_defaults(void) {
  pa_options_t o;
  char *env[] = {"HOME=/root", "PLANALLOCATOR=1", NULL};
  parse(&o, env);
  CHECK_STR(warnings, "");
  CHECK_EQ_I64(o.v[PA_OPT_MODE].i, 0);
  CHECK_EQ_I64(o.v[PA_OPT_WARMUP].i, 2);
  CHECK_STR(o.v[PA_OPT_ALGO].text, "best");
  CHECK(o.v[PA_OPT_PLAN_TIME].seconds == 10.0);
  CHECK_STR(o.v[PA_OPT_DUMP].text, "");
  CHECK_EQ_I64(o.v[PA_OPT_VERBOSE].i, 0);
  CHECK(!o.v[PA_OPT_MODE].from_env);
}

static void test_values(void) {
  pa_options_t o;
  char *env[] = {"PLANALLOC_MODE=OFF", "PLANALLOC_WARMUP=7", "PLANALLOC_ALGO=skyline-area",
                 "PLANALLOC_PLAN_TIME=0.25", "PLANALLOC_DUMP=/tmp/d", "PLANALLOC_VERBOSE=on",
                 "PLANALLOC_STATS=1", NULL};
  parse(&o, env);
  CHECK_STR(warnings, "");
  CHECK_EQ_I64(o.v[PA_OPT_MODE].i, 2);
  CHECK_EQ_I64(o.v[PA_OPT_WARMUP].i, 7);
  CHECK_STR(o.v[PA_OPT_ALGO].text, "skyline-area");
  CHECK(o.v[PA_OPT_PLAN_TIME].seconds == 0.25);
  CHECK_STR(o.v[PA_OPT_DUMP].text, "/tmp/d");
  CHECK_EQ_I64(o.v[PA_OPT_VERBOSE].i, 1);
  CHECK(o.v[PA_OPT_MODE].from_env);
  char buf[64];
  pa_option_format(&o, PA_OPT_MODE, buf, sizeof buf);
  CHECK_STR(buf, "off");
}

/* One warning line each, and the default kept. */
static void rejects(char *entry, const char *message, pa_opt_id_t id, int64_t def) {
  pa_options_t o;
  char *env[] = {entry, NULL};
  parse(&o, env);
  CHECK_STR(warnings, message);
  CHECK_EQ_I64(o.v[id].i, def);
  CHECK(!o.v[id].from_env);
}

static void test_bad_values(void) {
  rejects("PLANALLOC_WARMUP=0", "planalloc: warning: PLANALLOC_WARMUP='0' is not an integer in 1..100; using 2\n", PA_OPT_WARMUP, 2);
  rejects("PLANALLOC_WARMUP=2.5", "planalloc: warning: PLANALLOC_WARMUP='2.5' is not an integer in 1..100; using 2\n", PA_OPT_WARMUP, 2);
  rejects("PLANALLOC_MODE=serve", "planalloc: warning: PLANALLOC_MODE='serve' is not one of auto|record|off; using auto\n", PA_OPT_MODE, 0);
  rejects("PLANALLOC_MODE", "planalloc: warning: PLANALLOC_MODE='' is not one of auto|record|off; using auto\n", PA_OPT_MODE, 0);
  rejects("PLANALLOC_VERBOSE=maybe", "planalloc: warning: PLANALLOC_VERBOSE='maybe' is not one of 1/true/yes/on, 0/false/no/off; using off\n", PA_OPT_VERBOSE, 0);
  rejects("PLANALLOC_ALGO=fastest", "planalloc: warning: PLANALLOC_ALGO='fastest' is not a planner algorithm (planalloc-plan --help lists them); using best\n", PA_OPT_ALGO, 0);
  rejects("PLANALLOC_PLAN_TIME=-1", "planalloc: warning: PLANALLOC_PLAN_TIME='-1' is not seconds in 0..600; using 10\n", PA_OPT_PLAN_TIME, 0);
  rejects("PLANALLOC_BUDGET=lots", "planalloc: warning: PLANALLOC_BUDGET='lots' is not a size (bytes, K/M/G/T with optional iB, or N%); using 0\n", PA_OPT_BUDGET, 0);
  rejects("PLANALLOC_EVICT_REPEAT=-5", "planalloc: warning: PLANALLOC_EVICT_REPEAT='-5' is not an integer in 0..1000; using 10\n", PA_OPT_EVICT_REPEAT, 10);
  rejects("PLANALLOC_PREFETCH=65", "planalloc: warning: PLANALLOC_PREFETCH='65' is not an integer in 0..64; using 4\n", PA_OPT_PREFETCH, 4);
  rejects("PLANALLOC_WARMPU=3", "planalloc: warning: unknown option PLANALLOC_WARMPU ignored (known: PLANALLOC_MODE, PLANALLOC_FREE, PLANALLOC_WARMUP, PLANALLOC_ALGO, PLANALLOC_PLAN_TIME, PLANALLOC_ANCHOR, PLANALLOC_DUMP, PLANALLOC_EVENTS, PLANALLOC_VERBOSE, PLANALLOC_STATS, PLANALLOC_BUDGET, PLANALLOC_POISON, PLANALLOC_EVICT_FRAG, PLANALLOC_EVICT_REPEAT, PLANALLOC_EVICT_SAMPLE, PLANALLOC_EVICT_PLANNED, PLANALLOC_SWAP_SCHEDULE, PLANALLOC_LINK_GBPS, PLANALLOC_PAGE_MAP_NS, PLANALLOC_KEEP_MAPPED, PLANALLOC_PREFETCH, PLANALLOC_LEAD, PLANALLOC_MOVER, PLANALLOC_PASS_MODULES)\n", PA_OPT_WARMUP, 2);
}

static void test_grammars(void) {
  bool b;
  const char *yes[] = {"1", "true", "YES", "on"}, *no[] = {"0", "False", "no", "OFF"};
  for (int i = 0; i < 4; i++) {
    CHECK(pa_parse_bool(yes[i], &b) && b);
    CHECK(pa_parse_bool(no[i], &b) && !b);
  }
  CHECK(!pa_parse_bool("2", &b) && !pa_parse_bool("", &b));
  int64_t v = 0;
  double pct = 0;
  CHECK(pa_parse_size("4GiB", &v, &pct) && v == (int64_t)4 << 30 && pct == 0);
  CHECK(pa_parse_size("512M", &v, &pct) && v == (int64_t)512 << 20);
  CHECK(pa_parse_size("1KiB", &v, &pct) && v == 1024);
  CHECK(pa_parse_size("7B", &v, &pct) && v == 7);
  CHECK(pa_parse_size("1073741824", &v, &pct) && v == (int64_t)1 << 30);
  CHECK(pa_parse_size("60%", &v, &pct) && pct == 60);
  CHECK(pa_parse_size("12.5%", &v, &pct) && pct == 12.5);
  CHECK(pa_parse_size("0.5GiB", &v, &pct) && v == (int64_t)512 << 20 && pct == 0);
  CHECK(pa_parse_size("1.25K", &v, &pct) && v == 1280);
  const char *bad[] = {"", "4X", "G", "-1", "0%", "101%", "150%", "5%%", "99999999999T", "1 GiB", "4Gib",
                       "0.5", "1.B", "1.G", ".5G", "1..5G", "0x10M", "1e3M"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    if (pa_parse_size(bad[i], &v, &pct)) {
      fprintf(stderr, "accepted size '%s'\n", bad[i]);
      CHECK(0);
    }
}

/* A list of libraries takes any length (a 12 kB one was "not names"); a dump directory
 * is bounded by the path its dumps' names must fit. */
static void test_long_text(void) {
  static char names[12300] = "PLANALLOC_PASS_MODULES=", dump[420] = "PLANALLOC_DUMP=/";
  size_t n = strlen(names);
  for (int i = 0; n < sizeof names - 16; i++) n += (size_t)snprintf(names + n, sizeof names - n, "libx%d,", i);
  memset(dump + strlen(dump), 'd', PA_PATH_MAX);
  pa_options_t o;
  char *env[] = {names, NULL};
  parse(&o, env);
  CHECK_STR(warnings, "");
  CHECK_STR(o.v[PA_OPT_PASS_MODULES].text, names + strlen("PLANALLOC_PASS_MODULES="));
  char *env2[] = {dump, NULL};
  parse(&o, env2);
  CHECK(strstr(warnings, "planalloc: warning: PLANALLOC_DUMP='/ddd") == warnings);
  CHECK(strstr(warnings, "' is not a path of at most 400 bytes; using (empty)\n") != NULL);
  CHECK_STR(o.v[PA_OPT_DUMP].text, "");
}

int main(void) {
  test_long_text();
  test_defaults();
  test_values();
  test_bad_values();
  test_grammars();
  return test_report("test_options");
}
