#!/usr/bin/env bash
# Does the plan hold on real training programs (issue #38)? The two PyTorch streams logged
# on an H100 (tests/data/ev.*.log.xz) and torch_stream's PyTorch-shaped ones, each
# replayed by event_replay through planalloc on the simulated CUDA (its driver calls
# charged as on an H100): allocations served from the plan, of all and of those from the
# first one served on (after the warm-up), divergent periods and plans, the whole run's
# mapped peak against its live peak, and the page maps and unmaps, of the run and of its
# served phase. One run each (the figures are counts; only the planner's thread makes them
# vary a little from run to run). Prints two markdown tables: the logs and torch_stream's
# named streams, then 12 seeds of one sequence length each.
# Usage: scripts/bench-replay.sh [SCALE]   (SCALE: the logs' sizes divided, default 1)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/scripts/common.sh"
scale=${1:-1}
build_targets event_replay torch_stream planalloc simcuda simcudart
export LD_LIBRARY_PATH=$root/build/simcuda
w=$root/build/workloads
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# row LABEL CMD...: one run under planalloc, its stats in a row
row() {
  local label=$1 start secs
  shift
  start=$(date +%s.%N)
  PLANALLOC_STATS=1 LD_PRELOAD=$root/build/lib/libplanalloc.so "$@" >"$tmp/out" 2>"$tmp/err" ||
    { echo "| $label | FAILED: $(tail -1 "$tmp/err") |"; return; }
  secs=$(elapsed "$start" 1)
  grep -q ' mismatches 0$' "$tmp/out" || { echo "| $label | MISMATCHES |"; return; }
  local s a n
  s=$(stats_row "$tmp/err" "served from the plan") a=$(stats_row "$tmp/err" allocations) n=$(stats_row "$tmp/err" "since first served")
  printf "| %s | %d / %d (%.1f %%) | %d / %d (%.2f %%) | %s | %s | %s (%s) | %.4f | %s + %s | %s + %s | %s |\n" "$label" \
    "$s" "$a" "$(awk -v s="$s" -v a="$a" 'BEGIN { print a ? 100 * s / a : 0 }')" \
    "$s" "$n" "$(awk -v s="$s" -v n="$n" 'BEGIN { print n ? 100 * s / n : 0 }')" \
    "$(stats_row "$tmp/err" "divergent periods")" "$(stats_row "$tmp/err" plans)" "$(stats_row "$tmp/err" "kept plans served again")" "$(stats_row "$tmp/err" "kept plans known from events")" \
    "$(awk -v m="$(stats_row "$tmp/err" "device memory peak")" -v l="$(stats_row "$tmp/err" "live bytes peak")" 'BEGIN { print m / l }')" \
    "$(stats_row "$tmp/err" "page maps")" "$(stats_row "$tmp/err" "page unmaps")" \
    "$(stats_row "$tmp/err" "page maps, served phase")" "$(stats_row "$tmp/err" "page unmaps, served phase")" "$secs"
}

echo "| stream | served / allocations | served / since first served | divergent periods | plans | kept plans served again (known from their events) | mapped peak / live peak | page maps + unmaps | of them in the served phase | seconds |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for log in resnet50 gpt; do
  row "$log (H100 log, 40 steps, scale $scale)" "$w/event_replay" "$root/tests/data/ev.$log.log.xz" --steps 40 --scale "$scale"
done
for t in "exact:--seed 3" "extra every 5th step:--seed 4 --extra-every 5" "3 shapes, 16 steps each, twice:--seed 5 --shapes 128,256,64 --shape-steps 16 --steps 96" \
         "60 layers:--seed 7 --layers 60"; do
  # shellcheck disable=SC2086
  "$w/torch_stream" ${t#*:} >"$tmp/stream.log"
  row "torch_stream ${t%%:*}" "$w/event_replay" "$tmp/stream.log"
done

# One length each, 12 seeds (8-78 layers; a logging buffer every 4th or 5th step, or
# none): the whole-run mapped peak and the page calls where the program repeats.
echo
echo "| stream | served / allocations | served / since first served | divergent periods | plans | kept plans served again (known from their events) | mapped peak / live peak | page maps + unmaps | of them in the served phase | seconds |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for i in $(seq 12); do
  layers=$((8 + (i * 7) % 73)) extra=$((i % 3 == 0 ? 0 : i % 3 + 3))
  "$w/torch_stream" --seed $((i * 11 + 2)) --layers $layers --extra-every $extra >"$tmp/stream.log"
  row "torch_stream seed $((i * 11 + 2)), $layers layers, extra every $extra" "$w/event_replay" "$tmp/stream.log"
done
