/* The exit table (mimalloc's format: one row per figure, units spelled out). */
#include "pa.h"

pa_stats_t pa_stats;

static void row(const char *name, unsigned long long v, const char *unit) {
  pa_info("%-28s %16llu %s", name, v, unit);
}

void pa_stats_print(void) {
  pa_pool_stats_t ps;
  pa_pool_stats(&ps);
  pa_info("%-28s %16s", "statistics", "value");
  row("device memory peak", ps.pages_peak * ps.page, "bytes (pages mapped)");
  row("live bytes peak", pa_stats.live_peak, "bytes (what best fit needs at least)");
  row("iteration max-live", pa_stats.maxlive_iter, "bytes");
  row("persistent", pa_stats.persistent, "bytes");
  row("bound: max-live+persistent", pa_stats.maxlive_iter + pa_stats.persistent, "bytes");
  row("planned pool", pa_stats.plan_pool, "bytes");
  row("iteration", pa_stats.period, "events");
  row("planned buffers", pa_stats.plan_buffers, "");
  row("allocations", pa_stats.allocs, "");
  row("served from the plan", pa_stats.served, "");
  row("served best fit", pa_stats.fallback, "");
  row("frees", pa_stats.frees, "");
  row("plans", pa_stats.plans, "");
  row("re-plans", pa_stats.replans, "");
  row("divergent periods", pa_stats.divergent_periods, "");
  row("launches", pa_stats.launches, "");
  row("pointer words in the pool", pa_stats.launch_hits, "");
  row("runtime calls (exported)", pa_runtime_calls(), "");
  row("runtime calls not seen below", pa_runtime_unseen_allocs() + pa_runtime_unseen_launches(), "");
  row("page maps", ps.maps, "");
  row("page unmaps", ps.unmaps, "");
}

void pa_stats_json(FILE *f) {
  pa_pool_stats_t ps;
  pa_pool_stats(&ps);
  fprintf(f, "{\"version\": 1, \"device_peak_bytes\": %llu, \"page_bytes\": %llu, "
             "\"live_peak_bytes\": %llu, \"iteration_maxlive_bytes\": %llu, "
             "\"persistent_bytes\": %llu, \"plan_pool_bytes\": %llu, \"period_events\": %llu, "
             "\"plan_buffers\": %llu, \"allocations\": %lu, \"served\": %lu, \"fallback\": %lu, "
             "\"frees\": %lu, \"plans\": %lu, \"replans\": %lu, \"divergent_periods\": %lu, "
             "\"launches\": %lu, \"runtime_calls\": %lu, \"page_maps\": %llu, \"page_unmaps\": %llu}\n",
          (unsigned long long)(ps.pages_peak * ps.page), (unsigned long long)ps.page,
          (unsigned long long)pa_stats.live_peak, (unsigned long long)pa_stats.maxlive_iter,
          (unsigned long long)pa_stats.persistent, (unsigned long long)pa_stats.plan_pool,
          (unsigned long long)pa_stats.period, (unsigned long long)pa_stats.plan_buffers,
          pa_stats.allocs, pa_stats.served, pa_stats.fallback, pa_stats.frees, pa_stats.plans,
          pa_stats.replans, pa_stats.divergent_periods, pa_stats.launches, pa_runtime_calls(),
          (unsigned long long)ps.maps, (unsigned long long)ps.unmaps);
}
