/* What happened, in a line or two at exit (issue #40): where the dumps are and the command
 * that reads them; and a warning where the run did not do what the user ran planalloc
 * for: no allocation seen, PyTorch's caching allocator between the program and planalloc,
 * or a plan that served under half of the allocations, with what to run to see why. */
#include "pa.h"

#include <stdlib.h>
#include <string.h>

#define MIN_SAID 64 /* allocations: fewer, and a short run's warm-up is most of it */

/* Whether the command line that shows why the plan was left can read this run's dumps. */
static const char *to_see_why(void) {
  if (!pa_dump_dir()) return "rerun with PLANALLOC_DUMP=DIR PLANALLOC_EVENTS=1, and planalloc report DIR shows where";
  if (!pa_opt.v[PA_OPT_EVENTS].i) return "rerun with PLANALLOC_EVENTS=1, and planalloc report shows where";
  return "planalloc report shows where";
}

void pa_verdict_served(void) {
  uint64_t a = pa_stats.allocs, s = pa_stats.served;
  if (a < MIN_SAID || 2 * s >= a) return;
  if (!pa_stats.plans && !pa_stats.plans_reused) {
    pa_warn("no iteration repeated in %llu allocations: all served best fit, none planned (a plan needs "
            "PLANALLOC_WARMUP=%lld steps alike, then one more)", (unsigned long long)a,
            (long long)pa_opt.v[PA_OPT_WARMUP].i);
    return;
  }
  pa_warn("the plan served %llu of %llu allocations (%.1f %%): %llu periods left it, %llu plans made; %s",
          (unsigned long long)s, (unsigned long long)a, 100.0 * (double)s / (double)a,
          (unsigned long long)pa_stats.divergent_periods, (unsigned long long)(pa_stats.plans + pa_stats.plans_reused),
          to_see_why());
}

/* PyTorch's caching allocator hands out its own segments' blocks: planalloc sees a few
 * large cudaMalloc calls and none of the tensors. */
static void say_caching(void) {
  const char *off = getenv("PYTORCH_NO_CUDA_MEMORY_CACHING");
  if ((off && !strcmp(off, "1")) || !pa_module_loaded("libtorch_cuda")) return;
  pa_warn("PyTorch's caching allocator is on: planalloc sees its segments, not the tensors; set "
          "PYTORCH_NO_CUDA_MEMORY_CACHING=1 (planalloc run sets it)");
}

void pa_verdict(bool allocated) {
  say_caching();
  if (!allocated)
    pa_warn("no CUDA allocation seen: nothing planned (the program made CUDA calls, but no cudaMalloc*, "
            "cuMemAlloc* or cuMemCreate; a framework that allocates in another process needs planalloc there)");
  if (pa_dump_dir()) pa_info("dumps in %s: planalloc report %s", pa_opt.v[PA_OPT_DUMP].text, pa_opt.v[PA_OPT_DUMP].text);
}
