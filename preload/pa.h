/* planalloc's preload: the internal API, listed by the file that defines it (mimalloc's
 * internal.h). Everything is hidden (-fvisibility=hidden); only CUDA names and dlsym
 * will be exported. Error convention: 0 on success. */
#ifndef PLANALLOC_PA_H
#define PLANALLOC_PA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---- options.c: one table of every PLANALLOC_* setting ---------------------------
 * X(NAME, type, default, min, max, doc): the table generates the struct below, the
 * parser, the effective-configuration print and the README table, so they cannot drift.
 * Types: BOOL (1/true/yes/on, 0/false/no/off), INT (min..max), SECONDS (min..max),
 * ENUM (default and choices in the doc's "a|b|c" prefix), ALGO (a planner algorithm),
 * PATH (any string), SIZE (bytes with K/M/G/T[iB], or N% of the device). */
#define PA_OPTIONS(X)                                                                    \
  X(MODE, ENUM, "auto", 0, 0, "auto|record|off: plan and serve, only record, or pass "    \
                              "everything through untouched")                              \
  X(WARMUP, INT, "2", 1, 100, "iterations that must repeat before a plan is served")      \
  X(ALGO, ALGO, "best", 0, 0, "the planner algorithm (see planalloc-plan --help)")        \
  X(PLAN_TIME, SECONDS, "2", 0, 600, "seconds the planner may search for a better layout") \
  X(DUMP, PATH, "", 0, 0, "directory for dumps (trace, plan, access trace, stats); "       \
                         "empty: none")                                                    \
  X(VERBOSE, BOOL, "off", 0, 0, "print the effective configuration and planning events")  \
  X(STATS, BOOL, "off", 0, 0, "print the statistics table at exit")

typedef enum { PA_TYPE_BOOL, PA_TYPE_INT, PA_TYPE_SECONDS, PA_TYPE_ENUM, PA_TYPE_ALGO,
               PA_TYPE_PATH, PA_TYPE_SIZE } pa_opt_type_t;

typedef enum {
#define PA_OPT_ID(name, type, def, min, max, doc) PA_OPT_##name,
  PA_OPTIONS(PA_OPT_ID)
#undef PA_OPT_ID
  PA_OPT_COUNT
} pa_opt_id_t;

typedef struct pa_opt_value_s {
  int64_t i;         /* BOOL, INT, ENUM (index of the choice), SIZE (bytes) */
  double seconds;    /* SECONDS */
  double percent;    /* SIZE given as N%: resolved against the device later; else 0 */
  char text[256];    /* ALGO, PATH */
  bool from_env;
} pa_opt_value_t;

typedef struct pa_options_s {
  pa_opt_value_t v[PA_OPT_COUNT];
} pa_options_t;

/* Parses env (an environ-style array; NULL-terminated). Bad values and unknown
 * PLANALLOC_* keys are reported through pa_warn and fall back to defaults. */
void pa_options_parse(pa_options_t *o, char *const *env);
/* The value as text: "auto", "2", "4GiB", "60%" ... */
void pa_option_format(const pa_options_t *o, pa_opt_id_t id, char *buf, size_t len);
void pa_options_print(const pa_options_t *o); /* the effective configuration, one per line */
void pa_options_markdown(FILE *f);           /* the README's option table */
/* "4GiB", "512M", "1073741824" -> bytes; "60%" -> *percent = 60. false if malformed. */
bool pa_parse_size(const char *s, int64_t *bytes, double *percent);
bool pa_parse_bool(const char *s, bool *out);

/* ---- log.c: the one output path ------------------------------------------------------ */
/* "planalloc: ", "planalloc: warning: ", "planalloc: error: " + message + newline, written
 * with one write(2) from a stack buffer: no allocation, usable before main and after
 * exit starts. A nested call from inside a message is dropped. */
void pa_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void pa_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void pa_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Test seam: where messages go (default: stderr's file descriptor). */
extern int pa_log_fd;

#endif
