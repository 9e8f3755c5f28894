#!/usr/bin/env bash
# The budget's planned victims against the reactive score, on the simulated CUDA: every
# workload long enough for the served phase to dominate, at 70/50/35 % of its peak
# without planalloc, PLANALLOC_EVICT_PLANNED=on and off on the same layout
# (PLANALLOC_ALGO=megengine: its layout does not depend on the planner's time limit, so
# both runs see the same pages and the recording phase evicts the same buffers). Bytes
# are the whole run's, recording included (identical in both). Prints a markdown table.
# Usage: scripts/bench-planned.sh [BUILD_DIR]   (after scripts/test.sh)
set -u
cd "$(dirname "$0")/.."
build=${1:-build}
export LD_LIBRARY_PATH=$build/simcuda
pre=$build/lib/libplanalloc.so w=$build/workloads
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mib() { awk -v b="$1" 'BEGIN { printf "%.1f", b / 1048576 }'; }
stat() { awk -v k="$2" 'index($0, "planalloc: " k " ") == 1 { for (i = NF; i > 0; i--) if ($i ~ /^[0-9]+$/) { print $i; exit } }' "$1"; }

declare -A cmd=(
  [transformer_train]="$w/transformer_train --iters 20 --seq 512 --dim 32 --batch 4 --layers 6"
  [trace_replay]="$w/trace_replay tests/data/resnet50.csv --iterations 12 --scale 32"
  [mlp_train]="$w/mlp_train --iters 12 --batch 8 --in 1024 --hidden 1024 --out 1024"
  [multistream]="$w/multistream --iters 12 --elems 2097152"
  [vendor_gemm]="$w/vendor_gemm --iters 6 --dim 1024"
)
order="transformer_train trace_replay mlp_train multistream vendor_gemm"

echo "| workload | budget | status | planned out MiB | back MiB | victims (planned) | reactive out MiB | back MiB | victims | planned / reactive (out + back) |"
echo "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|"
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
    [ "$status" = ok ] || { echo "$row $status | | | | | | | |"; continue; }
    row="$row ok |"
    for mode in on off; do
      out=$(stat "$tmp/$mode" "bytes moved to host") back=$(stat "$tmp/$mode" "bytes brought back")
      victims="$(stat "$tmp/$mode" evictions)"
      [ $mode = on ] && victims="$victims ($(stat "$tmp/$mode" "evictions planned"))"
      row="$row $(mib "$out") | $(mib "$back") | $victims |"
      eval "total_$mode=$((out + back))"
    done
    echo "$row $(awk -v a="$total_on" -v b="$total_off" 'BEGIN { printf "%.2f", b ? a / b : 1 }') |"
  done
done
