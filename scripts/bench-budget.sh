#!/usr/bin/env bash
# The budget on the simulated CUDA: every workload at 70/50/35 % of its peak without
# planalloc. Prints markdown tables:
#  1. the preload's reactive eviction (what moved, simulator peak, exit status, how often
#     the host waited for a copy, and how many cudaMallocs left that wait to the launches
#     after them), beside
#     planalloc-sim's policies on the same run's full recording (PLANALLOC_MODE=record
#     dumps the whole run) at the same percentage: the model's bytes for LRU, DTR and the
#     planned (Belady + prefetch) schedule the served phase will use;
#  2. the victim-score settings' measured effect (PLANALLOC_EVICT_*), median of 3 runs.
# Usage: scripts/bench-budget.sh [BUILD_DIR]   (after scripts/test.sh)
build=${1:-build}
. "$(dirname "$0")/budget-common.sh"
workloads 5 4 6 6 3

peak_of() { SIMCUDA_PEAK_FILE=$tmp/p0 ${cmd[$1]} >/dev/null 2>&1; cat "$tmp/p0"; }

# sim_out NAME PCT POLICY: planalloc-sim's MiB moved out on NAME's full recording
sim_out() {
  build/bin/planalloc-sim --budget "$2" --policy "$3" --dump "$tmp/$1/"*.trace.csv "$tmp/$1/"*.access.csv 2>/dev/null |
    awk -F'|' 'NR == 1 { for (i = 1; i <= NF; i++) if ($i ~ /out MiB/) c = i } NR > 2 { gsub(/ /, "", $c); print $c }'
}

echo "| workload | budget | budget MiB | status | simulator peak MiB | out MiB | back MiB | victims | host waits | waits left to launches | sim LRU out | sim DTR out | sim planned out |"
echo "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for name in $order; do
  peak=$(peak_of "$name")
  mkdir -p "$tmp/$name"
  PLANALLOC_MODE=record PLANALLOC_DUMP=$tmp/$name LD_PRELOAD=$pre ${cmd[$name]} >/dev/null 2>&1
  for pct in 70 50 35; do
    b=$((peak * pct / 100))
    SIMCUDA_STRICT=1 SIMCUDA_PEAK_FILE=$tmp/p1 PLANALLOC_STATS=1 PLANALLOC_PLAN_TIME=0 PLANALLOC_BUDGET=$b LD_PRELOAD=$pre \
      ${cmd[$name]} >/dev/null 2>"$tmp/err"
    rc=$?
    status=$([ $rc = 0 ] && echo ok || echo "out of memory ($rc)")
    echo "| $name | $pct % | $(mib "$b") | $status | $(mib "$(cat "$tmp/p1")") | $(mib "$(stats_row "$tmp/err" "bytes moved to host")") |" \
         "$(mib "$(stats_row "$tmp/err" "bytes brought back")") | $(stats_row "$tmp/err" evictions) | $(stats_row "$tmp/err" "host waits for copies") |" \
         "$(stats_row "$tmp/err" "copy waits left to launches") |" \
         "$(sim_out "$name" "$pct" lru) | $(sim_out "$name" "$pct" dtr) | $(sim_out "$name" "$pct" planned) |"
  done
done

echo
echo "| workload | budget | setting | out MiB (median of 3) | back MiB | victims |"
echo "|---|---:|---|---:|---:|---:|"
# median of three runs: eviction depends on when stream work completes
for name in transformer_train trace_replay mlp_train; do
  pct=50
  [ "$name" = mlp_train ] && pct=70
  b=$(($(peak_of "$name") * pct / 100))
  for setting in "defaults" "PLANALLOC_EVICT_FRAG=on" "PLANALLOC_EVICT_REPEAT=0" "PLANALLOC_EVICT_REPEAT=100" \
                 "PLANALLOC_EVICT_SAMPLE=off"; do
    env_set=$([ "$setting" = defaults ] || echo "$setting")
    for run in 1 2 3; do
      env $env_set PLANALLOC_STATS=1 PLANALLOC_PLAN_TIME=0 PLANALLOC_BUDGET=$b LD_PRELOAD=$pre ${cmd[$name]} >/dev/null 2>"$tmp/err"
      echo "$(stats_row "$tmp/err" "bytes moved to host") $(stats_row "$tmp/err" "bytes brought back") $(stats_row "$tmp/err" evictions)"
    done | sort -n | sed -n 2p >"$tmp/median"
    read -r out back victims <"$tmp/median"
    echo "| $name | $pct % | $setting | $(mib "$out") | $(mib "$back") | $victims |"
  done
done
