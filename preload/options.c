/* PLANALLOC_* settings: parsed once from the environment (read as an array, never with
 * getenv, which is unsafe while libc starts), checked against the table in pa.h. A bad
 * value or an unknown PLANALLOC_* key (a typo such as PLANALLOC_WARMPU) is reported in
 * one line and the default is used: a user's job never fails over a setting. */
#include "pa.h"
#include "planner.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct opt_def_s {
  const char *name;
  pa_opt_type_t type;
  const char *def;
  double min, max;
  const char *doc;
} opt_def_t;

static const opt_def_t defs[PA_OPT_COUNT] = {
#define PA_OPT_DEF(name, type, def, min, max, doc) \
  {"PLANALLOC_" #name, PA_TYPE_##type, def, min, max, doc},
    PA_OPTIONS(PA_OPT_DEF)
#undef PA_OPT_DEF
};

/* ---- value grammars ---------------------------------------------------------------- */

bool pa_parse_bool(const char *s, bool *out) {
  static const char *const yes[] = {"1", "true", "yes", "on"}, *const no[] = {"0", "false", "no", "off"};
  for (int i = 0; i < 4; i++) {
    if (!strcasecmp(s, yes[i])) return *out = true, true;
    if (!strcasecmp(s, no[i])) return *out = false, true;
  }
  return false;
}

static bool parse_percent(const char *s, double *percent) {
  char *end;
  errno = 0;
  double p = strtod(s, &end);
  if (errno || end == s || strcmp(end, "%") || !(p > 0 && p <= 100)) return false;
  *percent = p;
  return true;
}

bool pa_parse_size(const char *s, int64_t *bytes, double *percent) {
  *percent = 0;
  if (strchr(s, '%')) return parse_percent(s, percent);
  if (!isdigit((unsigned char)*s)) return false;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  double frac = 0, digit = 0.1; /* "0.5GiB": a fraction of a unit, never of a byte */
  if (*end == '.' && !isdigit((unsigned char)end[1])) return false;
  if (*end == '.')
    for (end++; isdigit((unsigned char)*end); end++, digit /= 10) frac += (*end - '0') * digit;
  int shift = 0;
  const char *units = "KMGT";
  const char *u = *end ? strchr(units, toupper((unsigned char)*end)) : NULL;
  if (u) shift = 10 * (int)(u - units + 1), end++;
  if (u && *end == 'i') end++;
  if (*end == 'B') end++;
  if (errno || *end || (frac > 0 && !u) || v >= ((unsigned long long)PA_VALUE_LIMIT >> shift)) return false;
  *bytes = (int64_t)(v << shift) + (int64_t)(frac * (double)((int64_t)1 << shift));
  return true;
}

/* ENUM choices are the doc's "a|b|c:" prefix. */
static int enum_index(const opt_def_t *d, const char *s) {
  const char *p = d->doc;
  for (int i = 0;; i++) {
    size_t n = strcspn(p, "|:");
    if (strlen(s) == n && !strncasecmp(p, s, n)) return i;
    if (p[n] != '|') return -1;
    p += n + 1;
  }
}

static bool parse_number(const char *s, double min, double max, bool integral, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || *end || !(v >= min && v <= max)) return false;
  if (integral && v != (double)(int64_t)v) return false;
  *out = v;
  return true;
}

static bool parse_value(const opt_def_t *d, const char *s, pa_opt_value_t *v) {
  double x;
  bool b;
  switch (d->type) {
  case PA_TYPE_BOOL: return pa_parse_bool(s, &b) ? (v->i = b, true) : false;
  case PA_TYPE_INT: return parse_number(s, d->min, d->max, true, &x) ? (v->i = (int64_t)x, true) : false;
  case PA_TYPE_SECONDS: return parse_number(s, d->min, d->max, false, &v->seconds);
  case PA_TYPE_ENUM: return (v->i = enum_index(d, s)) >= 0;
  case PA_TYPE_ALGO:
    if (!pa_algo_find(s)) return false;
    break;
  case PA_TYPE_SIZE: return pa_parse_size(s, &v->i, &v->percent);
  case PA_TYPE_PATH:
  case PA_TYPE_NAMES: break;
  }
  if (d->type == PA_TYPE_PATH && strlen(s) > PA_PATH_MAX) return false;
  v->text = s;
  return true;
}

static const char *expected(const opt_def_t *d, char *buf, size_t len) {
  switch (d->type) {
  case PA_TYPE_BOOL: return "one of 1/true/yes/on, 0/false/no/off";
  case PA_TYPE_INT: snprintf(buf, len, "an integer in %g..%g", d->min, d->max); return buf;
  case PA_TYPE_SECONDS: snprintf(buf, len, "seconds in %g..%g", d->min, d->max); return buf;
  case PA_TYPE_ENUM: snprintf(buf, len, "one of %.*s", (int)strcspn(d->doc, ":"), d->doc); return buf;
  case PA_TYPE_ALGO: return "a planner algorithm (planalloc-plan --help lists them)";
  case PA_TYPE_SIZE: return "a size (bytes, K/M/G/T with optional iB, or N%)";
  case PA_TYPE_NAMES: return "names, comma-separated";
  default: return "a path of at most " PA_STR(PA_PATH_MAX) " bytes";
  }
}

/* ---- the environment -------------------------------------------------------------------- */

static void defaults(pa_options_t *o) {
  memset(o, 0, sizeof *o);
  for (int i = 0; i < PA_OPT_COUNT; i++) o->v[i].text = "", parse_value(&defs[i], defs[i].def, &o->v[i]);
}

static void unknown(const char *entry, size_t name_len) {
  char known[512];
  size_t k = 0;
  for (int i = 0; i < PA_OPT_COUNT && k < sizeof known; i++)
    k += (size_t)snprintf(known + k, sizeof known - k, "%s%s", i ? ", " : "", defs[i].name);
  pa_warn("unknown option %.*s ignored (known: %s)", (int)name_len, entry, known);
}

/* The option whose name is the n bytes at name (-1: none). */
static int option_named(const char *name, size_t n) {
  for (int i = 0; i < PA_OPT_COUNT; i++)
    if (strlen(defs[i].name) == n && !strncmp(defs[i].name, name, n)) return i;
  return -1;
}

static void apply(pa_options_t *o, const char *entry) {
  const char *eq = strchr(entry, '=');
  size_t n = eq ? (size_t)(eq - entry) : strlen(entry);
  int i = option_named(entry, n);
  if (i < 0) return unknown(entry, n);
  pa_opt_value_t v = {.text = ""};
  char buf[128];
  if (eq && parse_value(&defs[i], eq + 1, &v)) {
    v.from_env = true;
    o->v[i] = v;
  } else {
    pa_warn("%s='%.64s' is not %s; using %s", defs[i].name, eq ? eq + 1 : "",
            expected(&defs[i], buf, sizeof buf), defs[i].def[0] ? defs[i].def : "(empty)");
  }
}

const char *pa_option_check(const char *name, const char *value) {
  static char buf[128];
  int i = option_named(name, strlen(name));
  pa_opt_value_t v = {.text = ""};
  if (i < 0) return "an option planalloc knows";
  return parse_value(&defs[i], value, &v) ? NULL : expected(&defs[i], buf, sizeof buf);
}

void pa_options_parse(pa_options_t *o, char *const *env) {
  defaults(o);
  for (size_t i = 0; env && env[i]; i++)
    if (!strncmp(env[i], "PLANALLOC_", 10)) apply(o, env[i]);
}

/* ---- printing ------------------------------------------------------------------------------ */

static void format_size(int64_t bytes, char *buf, size_t len) {
  static const char *const unit[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (u < 4 && bytes && bytes % 1024 == 0) bytes /= 1024, u++;
  snprintf(buf, len, "%lld%s", (long long)bytes, unit[u]);
}

void pa_option_format(const pa_options_t *o, pa_opt_id_t id, char *buf, size_t len) {
  const opt_def_t *d = &defs[id];
  const pa_opt_value_t *v = &o->v[id];
  switch (d->type) {
  case PA_TYPE_BOOL: snprintf(buf, len, "%s", v->i ? "on" : "off"); break;
  case PA_TYPE_INT: snprintf(buf, len, "%lld", (long long)v->i); break;
  case PA_TYPE_SECONDS: snprintf(buf, len, "%g", v->seconds); break;
  case PA_TYPE_ENUM:
    snprintf(buf, len, "%.*s", (int)strcspn(d->doc, "|:"), d->doc);
    for (int64_t k = 0, at = 0; k < v->i; k++) {
      at += (int64_t)strcspn(d->doc + at, "|:") + 1;
      snprintf(buf, len, "%.*s", (int)strcspn(d->doc + at, "|:"), d->doc + at);
    }
    break;
  case PA_TYPE_SIZE:
    if (v->percent > 0) snprintf(buf, len, "%g%%", v->percent);
    else format_size(v->i, buf, len);
    break;
  default: snprintf(buf, len, "%s", v->text); break;
  }
}

void pa_options_print(const pa_options_t *o) {
  for (int i = 0; i < PA_OPT_COUNT; i++) {
    char buf[300];
    pa_option_format(o, (pa_opt_id_t)i, buf, sizeof buf);
    pa_info("option %s = %s%s", defs[i].name, buf[0] ? buf : "(empty)",
            o->v[i].from_env ? "" : " (default)");
  }
}

/* Markdown cells cannot hold a bare '|'. */
static void cell(FILE *f, const char *s) {
  for (; *s; s++) fputs(*s == '|' ? "\\|" : (char[2]){*s, 0}, f);
}

void pa_options_markdown(FILE *f) {
  fprintf(f, "| option | default | values | what it does |\n|---|---|---|---|\n");
  for (int i = 0; i < PA_OPT_COUNT; i++) {
    const opt_def_t *d = &defs[i];
    char buf[128], values[128];
    const char *doc = d->doc;
    if (d->type == PA_TYPE_ENUM) doc += strcspn(doc, ":") + 2;
    snprintf(values, sizeof values, "%s", d->type == PA_TYPE_PATH ? "a directory" : expected(d, buf, sizeof buf));
    fprintf(f, "| `%s` | `%s` | ", d->name, d->def[0] ? d->def : "(empty)");
    cell(f, values);
    fputs(" | ", f);
    cell(f, doc);
    fputs(" |\n", f);
  }
}
