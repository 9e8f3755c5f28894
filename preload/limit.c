/* The budget as a limit (PLANALLOC_BUDGET): how many physical pages the pool may hold.
 * The pool enforces it; everything else reads it. Lowered when the device refuses a
 * page below it (another process, memory outside the pool), lifted at a graph launch
 * (budget.c). Set once from the pool's set-up, then read and changed under pa_mu. A
 * leaf: it calls nothing above the options and the log. */
#include "pa.h"

static struct {
  uint64_t bytes; /* 0: no budget */
  size_t pages, page;
  bool lowered; /* the device refused a page below the budget */
} PA_PER_DEVICE(lim);
PA_BIND(lim)
#define lim PA_THIS(lim)

void pa_limit_init(size_t page, size_t device_bytes) {
  const pa_opt_value_t *v = &pa_opt.v[PA_OPT_BUDGET];
  lim.page = page;
  lim.bytes = v->percent > 0 ? (uint64_t)((double)device_bytes * v->percent / 100) : (uint64_t)v->i;
  lim.pages = lim.bytes / page;
  if (lim.bytes && !lim.pages)
    pa_warn("PLANALLOC_BUDGET=%llu bytes is less than one %zu-byte page: every allocation will fail",
            (unsigned long long)lim.bytes, page);
  if (lim.bytes && pa_opt.v[PA_OPT_VERBOSE].i)
    pa_info("budget %llu bytes: %zu pages of %zu bytes", (unsigned long long)lim.bytes, lim.pages, page);
}

bool pa_limit_on(void) { return lim.bytes != 0; }
uint64_t pa_limit_page(void) { return lim.bytes ? lim.page : 0; }
size_t pa_limit_pages(void) { return lim.pages; }
uint64_t pa_limit_bytes(void) { return lim.bytes; }
bool pa_limit_lowered(void) { return lim.lowered; }
bool pa_limit_lifted(void) { return lim.bytes && lim.pages == SIZE_MAX; }

/* What PLANALLOC_BUDGET said, or what is left of it once the device refused pages. */
const char *pa_limit_words(char *buf, size_t n) {
  if (lim.lowered)
    snprintf(buf, n, "the budget of %llu bytes (PLANALLOC_BUDGET=%llu, lowered when the device refused a page)",
             (unsigned long long)(lim.pages * lim.page), (unsigned long long)lim.bytes);
  else
    snprintf(buf, n, "PLANALLOC_BUDGET=%llu bytes", (unsigned long long)lim.bytes);
  return buf;
}

bool pa_limit_lift(void) {
  if (!lim.bytes || lim.pages == SIZE_MAX) return false;
  lim.pages = SIZE_MAX;
  return true;
}

bool pa_limit_lower(size_t pages, int refused) {
  if (!lim.bytes || lim.pages == SIZE_MAX || pages >= lim.pages) return false; /* none, lifted, or no lower */
  char words[PA_LIMIT_WORDS];
  pa_warn("the device refused a page at %zu of the %zu pages %s allows (%s = %d): the budget is %zu page%s from now on",
          pages, lim.pages, pa_limit_words(words, sizeof words), pa_gpu_error_name(refused), refused, pages,
          pages == 1 ? "" : "s");
  lim.pages = pages, lim.lowered = true;
  return true;
}
