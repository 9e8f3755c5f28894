#!/usr/bin/env bash
# torch_stream's PyTorch-shaped streams in random configurations (COUNT, default 24; seeded
# by their number, so a row can be run again): 8-80 layers, 2-4 sequence lengths held
# 3-7 steps each, a logging buffer every 0-3 steps, 80 steps; each replayed by
# event_replay under the shadow-checker preload with the simulator strict. A row fails
# on a status, a mismatch the replay counted or an overlap the checker saw. Prints one
# markdown row each: what the plan served, divergent periods, plans, kept plans served
# again (of them known from their events), recordings beside the plan, the whole run's
# mapped peak over its live peak.
# Usage: scripts/stress-streams.sh [COUNT]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/scripts/common.sh"
build_targets torch_stream event_replay planalloc-shadow simcuda simcudart
export LD_LIBRARY_PATH=$root/build/simcuda
w=$root/build/workloads
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
count=${1:-24} failed=0
echo "| # | layers | lengths x steps each | extra every | served / allocations | divergent periods | plans | kept served again (known) | recordings beside | mapped peak / live peak | check |"
echo "|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---|"
for i in $(seq "$count"); do
  shapes=$(awk -v i="$i" 'BEGIN { srand(i); n = 2 + int(rand() * 3); split("32 64 96 128 192 256", c, " ");
    for (k = 1; k <= n; k++) printf "%s%s", (k > 1 ? "," : ""), c[1 + int(rand() * 6)] }')
  layers=$((8 + (i * 3) % 73)) each=$((i % 5 + 3)) extra=$((i % 4))
  "$w/torch_stream" --seed $((i * 7 + 1)) --shapes "$shapes" --shape-steps $each --steps 80 --extra-every $extra \
    --layers $layers >"$tmp/s.log"
  rc=0
  SIMCUDA_STRICT=1 PLANALLOC_STATS=1 LD_PRELOAD=$root/build/lib/libplanalloc-shadow.so \
    "$w/event_replay" "$tmp/s.log" >"$tmp/out" 2>"$tmp/err" || rc=$?
  check=ok
  [ $rc = 0 ] || check="status $rc"
  grep -q ' mismatches 0$' "$tmp/out" || check="$check, mismatches"
  grep -q '^planalloc: shadow: .* no overlap' "$tmp/err" || check="$check, overlap: $(grep -m1 shadow "$tmp/err")"
  [ "$check" = ok ] || failed=$((failed + 1))
  s=$(stats_row "$tmp/err" "served from the plan") a=$(stats_row "$tmp/err" allocations)
  printf "| %d | %d | %s x %d | %d | %d / %d (%.1f %%) | %s | %s | %s (%s) | %s | %.4f | %s |\n" "$i" $layers "$shapes" $each $extra \
    "${s:-0}" "${a:-0}" "$(awk -v s="${s:-0}" -v a="${a:-0}" 'BEGIN { print a ? 100 * s / a : 0 }')" \
    "$(stats_row "$tmp/err" "divergent periods")" "$(stats_row "$tmp/err" plans)" \
    "$(stats_row "$tmp/err" "kept plans served again")" "$(stats_row "$tmp/err" "kept plans known from events")" \
    "$(stats_row "$tmp/err" "recordings beside the plan")" \
    "$(awk -v m="$(stats_row "$tmp/err" "device memory peak")" -v l="$(stats_row "$tmp/err" "live bytes peak")" 'BEGIN { print l ? m / l : 0 }')" "$check"
done
[ $failed = 0 ] || { echo "stress-streams: $failed of $count failed" >&2; exit 1; }
