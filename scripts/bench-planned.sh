#!/usr/bin/env bash
# The budget's planned victims against the reactive score, on the simulated CUDA: every
# workload long enough for the served phase to dominate, at 70/50/35 % of its peak
# without planalloc, PLANALLOC_EVICT_PLANNED=on and off on the same layout
# (PLANALLOC_ALGO=megengine: its layout does not depend on the planner's time limit, so
# both runs see the same pages and the recording phase evicts the same buffers). Bytes
# are the whole run's, recording included (identical in both). "Ahead": pages the planned
# run's prefetch brought back before the launch that needed them (PLANALLOC_PREFETCH,
# default). Prints a markdown table.
# Usage: scripts/bench-planned.sh [BUILD_DIR]   (after scripts/test.sh)
build=${1:-build}
. "$(dirname "$0")/budget-common.sh"
workloads 20 12 12 12 6

echo "| workload | budget | status | planned out MiB | back MiB | pages back (ahead) | victims (planned) | reactive out MiB | back MiB | victims | planned / reactive (out + back) |"
echo "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|"
for name in $order; do
  SIMCUDA_PEAK_FILE=$tmp/p0 ${cmd[$name]} >"$tmp/ref" 2>&1
  peak=$(cat "$tmp/p0")
  for pct in 70 50 35; do
    b=$((peak * pct / 100)) row="| $name | $pct % |" status=ok
    for mode in on off; do
      SIMCUDA_STRICT=1 PLANALLOC_STATS=1 PLANALLOC_PLAN_TIME=0 PLANALLOC_ALGO=megengine PLANALLOC_BUDGET=$b \
        PLANALLOC_EVICT_PLANNED=$mode LD_PRELOAD=$pre ${cmd[$name]} >"$tmp/out" 2>"$tmp/$mode"
      rc=$?
      [ $rc = 0 ] || status="out of memory ($rc)"
      [ $rc != 0 ] || cmp -s <(grep -v '^planalloc' "$tmp/ref") "$tmp/out" || status="OUTPUT DIFFERS"
    done
    [ "$status" = ok ] || { echo "$row $status | | | | | | | | |"; continue; }
    row="$row ok |"
    for mode in on off; do
      out=$(stats_row "$tmp/$mode" "bytes moved to host") back=$(stats_row "$tmp/$mode" "bytes brought back")
      victims="$(stats_row "$tmp/$mode" evictions)"
      [ $mode = on ] && victims="$(stats_row "$tmp/$mode" "pages brought back") ($(stats_row "$tmp/$mode" "pages brought back ahead")) | $victims ($(stats_row "$tmp/$mode" "evictions planned"))"
      row="$row $(mib "$out") | $(mib "$back") | $victims |"
      eval "total_$mode=$((out + back))"
    done
    echo "$row $(awk -v a="$total_on" -v b="$total_off" 'BEGIN { printf "%.2f", b ? a / b : 1 }') |"
  done
done
