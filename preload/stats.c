/* The exit table (mimalloc's format: one row per figure, units spelled out) and the stats
 * dump, both from one list of figures. */
#include "pa.h"

/* X(json key or NULL, table label or NULL, value, unit) */
#define PA_FIGURES(X)                                                                         \
  X("device_peak_bytes", "device memory peak", ps.pages_peak * ps.page, "bytes (pages mapped)") \
  X("served_peak_bytes", "device memory, served phase", ps.served_pages_peak * ps.page, "bytes (peak since the last plan served two periods)") \
  X("page_bytes", NULL, ps.page, "bytes")                                                     \
  X("live_peak_bytes", "live bytes peak", pa_stats.live_peak, "bytes (what best fit needs at least)") \
  X("iteration_maxlive_bytes", "iteration max-live", pa_stats.maxlive_iter, "bytes")          \
  X("persistent_bytes", "persistent", pa_stats.persistent, "bytes")                           \
  X(NULL, "bound: max-live+persistent", pa_stats.maxlive_iter + pa_stats.persistent, "bytes") \
  X("plan_pool_bytes", "planned pool", pa_stats.plan_pool, "bytes")                           \
  X("period_events", "iteration", pa_stats.period, "events")                                  \
  X("plan_buffers", "planned buffers", pa_stats.plan_buffers, "")                            \
  X("allocations", "allocations", pa_stats.allocs, "")                                        \
  X("served", "served from the plan", pa_stats.served, "")                                    \
  X("since_served", "since first served", pa_stats.since_served, "(allocations from the first one a plan served: after the warm-up)") \
  X("fallback", "served best fit", pa_stats.fallback, "")                                     \
  X("windowed", "off the plan in its range", pa_stats.windowed, "(of them: where no slot lies for the next quarter period)") \
  X("by_module", "from a passed library", pa_stats.by_module, "(passed to the driver: PLANALLOC_PASS_MODULES)") \
  X("other_device", "on a device with no pool", pa_device_passed(), "(passed to the driver: the process's, beyond the devices planalloc serves)") \
  X("passed_through", "passed to the driver", pa_stats.passed, "(it refused the pool's pages)") \
  X("intruded", "planned but still occupied", pa_stats.intruded, "(by the recording's last buffers)") \
  X("detoured", "served around them", pa_stats.detoured, "(planned slots whose place they held, elsewhere in the range)") \
  X("frees", "frees", pa_stats.frees, "")                                                     \
  X("plans", "plans", pa_stats.plans, "")                                                     \
  X("plans_reused", "kept plans served again", pa_stats.plans_reused, "")                     \
  X("plans_known", "kept plans known from events", pa_stats.plans_known, "(the last PA_MATCH_LEN events off its plan were theirs: served at once)") \
  X("beside", "recordings beside the plan", pa_stats.beside, "(the program went off its plan: its events logged while it served)") \
  X("replans", "re-plans", pa_stats.replans, "")                                              \
  X("divergent_periods", "divergent periods", pa_stats.divergent_periods, "")                 \
  X("launches", "launches", pa_stats.launches, "")                                            \
  X("launches_captured", "launches captured", pa_stats.launches_captured, "(into a stream capture: they run with its graph)") \
  X(NULL, "pointer words in the pool", pa_stats.launch_hits, "")                              \
  X("runtime_calls", "runtime calls (exported)", pa_runtime_calls(), "")                     \
  X(NULL, "runtime calls not seen below", pa_runtime_unseen_allocs() + pa_runtime_unseen_launches(), "") \
  X("page_maps", "page maps", ps.maps, "")                                                    \
  X("page_unmaps", "page unmaps", ps.unmaps, "")                                              \
  X("pages_released", "pages given back", ps.released, "")                                    \
  X("served_page_maps", "page maps, served phase", ps.served_maps, "(since the last plan served two periods)") \
  X("served_page_unmaps", "page unmaps, served phase", ps.served_unmaps, "")                  \
  X("driver_memory_calls", "driver memory calls", ps.calls, "(cuMemCreate, cuMemMap, cuMemSetAccess, cuMemUnmap, cuMemRelease)") \
  X("served_driver_memory_calls", "driver memory calls, served", ps.served_calls, "(since the last plan served two periods)") \
  X("mapping_calls", "mapping calls", ps.map_calls, "(cuMemMap, cuMemSetAccess, cuMemUnmap: one opens or closes a run of pages)") \
  X("first_mapping_calls", "mapping calls, first", ps.first_calls, "(each page's first cuMemMap, and a run of such pages' cuMemSetAccess)") \
  X("served_mapping_calls", "mapping calls, served", ps.served_map_calls, "(since the last plan served two periods)") \
  X("served_pages_moved", "pages moved, served", ps.served_moved, "(out and back, since the last plan served two periods)") \
  X("budget_bytes", "budget", pa_limit_bytes(), "bytes (0: none)")                          \
  X("evictions", "evictions", ss.victims, "(victim buffers)")                               \
  X("planned_evictions", "evictions planned", pa_budget_planned_victims(), "(chosen by next use)") \
  X("kept_evictions", "evictions for a kept handle", pa_budget_kept_victims(), "(a page that left takes back the handle its address kept: no mapping call)") \
  X("scheduled_outs", "swaps out scheduled", pa_budget_scheduled_outs(), "(by the swap schedule, after a launch)") \
  X("scheduled_backs", "swaps back scheduled", pa_budget_scheduled_backs(), "(by the swap schedule, before a launch)") \
  X("schedule_lead", "swap schedule lead", pa_budget_lead(), "launches (the host runs that far ahead; at most PLANALLOC_LEAD)") \
  X("schedule_over", "swap schedule over budget", pa_budget_over(), "positions (a period's launches the schedule leaves over: victims meet them)") \
  X("pages_out", "pages moved to host", ss.pages_out, "")                                    \
  X("pages_in", "pages brought back", ss.pages_in, "")                                       \
  X("pages_ahead", "pages brought back ahead", ps.pages_ahead, "(before the launch that needs them)") \
  X("idle_taken", "idle pages' handles taken", ps.idle_taken, "(by a page that needed one: their freed work known done, recycled under work, or waited for)") \
  X("pages_drained", "pages recycled under work", ps.pages_drained, "(under a budget, freed work still queued there: the GPU orders its next use)") \
  X("pages_deferred", "pages handed on under work", ps.pages_deferred, "(no budget: freed work still queued there, the fence orders their next use)") \
  X("pages_reclaimed", "pages taken back leaving", ps.pages_reclaimed, "(wanted before their handle served elsewhere: no copy back)") \
  X("pages_rejoined", "pages back in kept handle", ps.rejoined, "(its address still mapped to it: no mapping call; PLANALLOC_KEEP_MAPPED)") \
  X("remap_no_hue", "served remaps, no colour", ps.remaps[PA_REMAP_NO_HUE], "(pages mapped anew while a plan served: the swap schedule coloured none)") \
  X("remap_unbound", "served remaps, colour unbound", ps.remaps[PA_REMAP_UNBOUND], "(its colour held no handle yet)") \
  X("remap_address", "served remaps, address", ps.remaps[PA_REMAP_ADDRESS], "(its colour's handle, its address mapped to another or none)") \
  X("remap_live", "served remaps, colour in use", ps.remaps[PA_REMAP_LIVE], "(its colour's handle held by live buffers)") \
  X("remap_idle", "served remaps, colour idle", ps.remaps[PA_REMAP_IDLE], "(held by an idle page, its freed work not known done or wanted soon)") \
  X("remap_away", "served remaps, colour away", ps.remaps[PA_REMAP_AWAY], "(its holder leaving, or spare behind a copy)") \
  X("bytes_out", "bytes moved to host", ss.bytes_out, "bytes")                                \
  X("bytes_in", "bytes brought back", ss.bytes_in, "bytes")                                   \
  X("served_bytes_out", "bytes moved to host, served", ss.served_out, "bytes (while the last plan served)") \
  X("served_bytes_in", "bytes brought back, served", ss.served_in, "bytes")                     \
  X("served_pages_out", "pages moved to host, served", ss.served_pages_out, "(each moves its buffers' span of the page)") \
  X("served_periods", "periods served", pa_stats.served_periods, "(iterations the last plan served whole)") \
  X("served_period_us", "period time, served", pa_stats.timed_periods ? pa_stats.served_ns / pa_stats.timed_periods / 1000 : 0, "us (mean, host clock)") \
  X("host_waits", "host waits", pa_waits_all(false), "(planalloc blocked the program for the device)") \
  X("host_wait_us", "host time waiting", pa_waits_all(true), "us")                            \
  X("served_host_waits", "host waits, served phase", pa_waits_in_served(false), "(while a plan served)") \
  X("served_host_wait_us", "host time waiting, served", pa_waits_in_served(true), "us")      \
  X("free_host_waits", "host waits for frees", pa_waits(PA_WAIT_FREE), "(PLANALLOC_FREE=sync)") \
  X("page_host_waits", "host waits for pages", pa_waits(PA_WAIT_PAGE), "(a page unmapped under freed work)") \
  X("order_host_waits", "host waits for streams", pa_waits(PA_WAIT_ORDER), "(no event could order them)") \
  X("swap_host_waits", "host waits for copies", pa_waits(PA_WAIT_COPY), "(the host blocked for an eviction or restore)") \
  X("swap_host_wait_us", "host time waiting for copies", pa_waits_us(PA_WAIT_COPY), "us")       \
  X("pace_waits", "pacing waits", pa_waits(PA_WAIT_PACE), "(the host held to the swap schedule's lead, that many launches queued)") \
  X("pace_wait_us", "host time pacing", pa_waits_us(PA_WAIT_PACE), "us")                          \
  X("served_launch_us", "host time in launches, served", pa_htime_us(PA_HT_LAUNCH), "us (the driver's launch calls: a full queue blocks there)") \
  X("served_hook_us", "host time in the launch hook", pa_htime_us(PA_HT_HOOK), "us (served phase: planalloc's work before each launch)") \
  X("served_done_us", "host time after launches", pa_htime_us(PA_HT_DONE), "us (served phase: the swap schedule's moves queued or made, mapping calls included)") \
  X("served_birth_us", "host time mapping births", pa_htime_us(PA_HT_BIRTH), "us (served phase: allocations whose pages were not mapped, mapping calls included)") \
  X("served_map_us", "host time in mapping calls", pa_htime_us(PA_HT_MAP), "us (served phase: create, map, set access, unmap, release)") \
  X("mover_waits", "host waits for the mover", pa_waits(PA_WAIT_MOVER), "(a launch's buffers away: the moves queued before it finish first)") \
  X("mover_wait_us", "host time waiting for the mover", pa_waits_us(PA_WAIT_MOVER), "us") \
  X("pages_premapped", "pages mapped ahead of births", ps.premapped, "(by the mover, beside the program: the allocation finds them mapped)") \
  X("mover_map_us", "host time mapping, mover", pa_htime_us(PA_HT_MOVER), "us (served phase: the mapping calls the mover made, beside the program)") \
  X("mover_batches", "launches' moves, mover", ms.batches, "(carried out by the mover thread: PLANALLOC_MOVER)") \
  X("mover_dropped", "launches' moves dropped", ms.dropped, "(queued past the schedule's lead: their launches had come)") \
  X("mover_inline", "launches' moves inline", ms.inline_batches, "(the mover off, full or not started: on the program's thread)") \
  X("deferred_waits", "copy waits left to launches", ss.deferred, "(cudaMalloc returned; the next launches wait on the GPU)") \
  X("pageable_blocks", "host blocks not pinned", ss.pageable, "(pinned memory refused: copies out wait)")

void pa_stats_print(void) {
  pa_pool_stats_t ps;
  pa_pool_stats(&ps);
  pa_swap_stats_t ss;
  pa_swap_stats(&ss);
  pa_mover_stats_t ms;
  pa_mover_stats(&ms);
  pa_info("%-28s %16s", "statistics", "value");
  if (atomic_load(&pa_devices_seen) == 2) pa_info("%-28s %16d", "device", pa_slot); /* a table each */
#define ROW(key, label, value, unit) \
  if (label) pa_info("%-28s %16llu %s", (const char *)label, (unsigned long long)(value), unit);
  PA_FIGURES(ROW)
#undef ROW
}

void pa_stats_json(FILE *f) {
  pa_pool_stats_t ps;
  pa_pool_stats(&ps);
  pa_swap_stats_t ss;
  pa_swap_stats(&ss);
  pa_mover_stats_t ms;
  pa_mover_stats(&ms);
  fprintf(f, "{\"version\": 1, \"device\": %d", (int)pa_pool_device());
  if (pa_rank() >= 0) fprintf(f, ", \"rank\": %ld", pa_rank());
#define FIELD(key, label, value, unit) \
  if (key) fprintf(f, ", \"%s\": %llu", (const char *)key, (unsigned long long)(value));
  PA_FIGURES(FIELD)
#undef FIELD
  fprintf(f, "}\n");
}
