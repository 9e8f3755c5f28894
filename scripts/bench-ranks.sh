#!/usr/bin/env bash
# Data-parallel ranks on the simulated CUDA (issue #26): ddp_train at 2 and 4 ranks
# (scripts/launch-ranks.sh, one process and one device each), three ways: without a
# preload (one cudaMalloc per tensor: the simulator counts exact bytes, the rank's
# max-live), under the caching-allocator model (its peak reserved) and under planalloc.
# Per rank: the peak of each, planalloc's over max-live and over the caching model's,
# planalloc's host waits, and the wall time of the job. Prints a markdown table.
# Usage: scripts/bench-ranks.sh [ITERS]   (default 8)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build
iters=${1:-8}
. "$root/scripts/common.sh"
build_targets ddp_train simccl planalloc caching
export LD_LIBRARY_PATH=$build/simcuda SIMCUDA_DEVICES=4 PLANALLOC_PLAN_TIME=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
shape=(--iters "$iters" --in 1024 --hidden 8192 --out 512 --batch 128)

# job N MODE: the N ranks under MODE (raw, caching, planalloc); per-rank peaks and errs in $tmp/N.MODE
job() {
  local n=$1 mode=$2 pre="" d=$tmp/$1.$2 start
  case $mode in caching) pre=$build/baselines/libcaching.so ;; planalloc) pre=$build/lib/libplanalloc.so ;; esac
  start=$(date +%s.%N)
  LD_PRELOAD=$pre PLANALLOC_STATS=1 "$root/scripts/launch-ranks.sh" "$n" --out "$d" -- \
    sh -c "SIMCUDA_PEAK_FILE=$d/peak.\$RANK exec $build/workloads/ddp_train ${shape[*]}"
  elapsed "$start" 2 >"$d/secs"
  for ((r = 1; r < n; r++)); do cmp -s "$d/rank.0.out" "$d/rank.$r.out" || { echo "rank $r differs ($mode)" >&2; exit 1; }; done
}

echo "| ranks | rank | max-live MiB | caching model MiB | planalloc MiB | planalloc / max-live | planalloc / caching | host waits | seconds (raw, caching, planalloc) |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---|"
for n in 2 4; do
  for mode in raw caching planalloc; do job $n $mode; done
  cmp -s "$tmp/$n.raw/rank.0.out" "$tmp/$n.planalloc/rank.0.out" || { echo "planalloc's output differs at $n ranks" >&2; exit 1; }
  secs="$(cat "$tmp/$n.raw/secs"), $(cat "$tmp/$n.caching/secs"), $(cat "$tmp/$n.planalloc/secs")"
  for ((r = 0; r < n; r++)); do
    raw=$(sed -n $((r + 1))p "$tmp/$n.raw/peak.$r") cach=$(sed -n $((r + 1))p "$tmp/$n.caching/peak.$r")
    got=$(sed -n $((r + 1))p "$tmp/$n.planalloc/peak.$r")
    printf "| %d | %d | %s | %s | %s | %s | %s | %s | %s |\n" "$n" "$r" "$(mib "$raw")" "$(mib "$cach")" "$(mib "$got")" \
      "$(ratio "$got" "$raw")" "$(ratio "$got" "$cach")" "$(stats_row "$tmp/$n.planalloc/rank.$r.err" "host waits")" "$secs"
  done
done
