#!/usr/bin/env bash
# torch_stream's PyTorch-shaped streams of one and of several sequence lengths, seeded
# (FROM..TO, default 300..347: a quarter one length, a quarter 128 only, a quarter 64 and
# 128 every 12 steps, a quarter 96, 192 and 64 every 10; 8-77 layers, a logging buffer
# every 0-4 steps), each replayed by event_replay on the simulated CUDA three ways: with
# planalloc, with planalloc recording only (its best fit alone: PLANALLOC_MODE=record),
# and with the caching baseline. Prints the mapped peak of each over the live peak, what
# the plan served, and the divergent periods; then the mean of each column by kind.
# Usage: scripts/bench-lengths.sh [FROM [TO]]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/scripts/common.sh"
build_targets torch_stream event_replay planalloc caching simcuda simcudart
export LD_LIBRARY_PATH=$root/build/simcuda
w=$root/build/workloads
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
from=${1:-300} to=${2:-347}

# one ENV...: a run under planalloc (ENV its settings); its stats in $tmp/err
one() { env "$@" PLANALLOC_STATS=1 LD_PRELOAD="$root/build/lib/libplanalloc.so" "$w/event_replay" "$tmp/s.log" >/dev/null 2>"$tmp/err"; }
peak() { ratio "$(stats_row "$tmp/err" "device memory peak")" "$(stats_row "$tmp/err" "live bytes peak")"; }

echo "| seed | layers | lengths | extra every | planalloc peak / live | served | divergent periods | best fit alone | caching | planalloc / caching |"
echo "|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|"
for seed in $(seq "$from" "$to"); do
  layers=$((8 + (seed * 17) % 70)) extra=$((seed % 5)) steps=$((60 + (seed % 4) * 20)) shapes=""
  case $((seed % 4)) in 1) shapes="--shapes 64,128 --shape-steps 12" ;; 2) shapes="--shapes 96,192,64 --shape-steps 10" ;; 3) shapes="--shapes 128" ;; esac
  # shellcheck disable=SC2086
  "$w/torch_stream" --seed "$seed" --layers $layers --extra-every $extra --steps $steps $shapes >"$tmp/s.log"
  one X=1 || { echo "| $seed | FAILED |"; continue; }
  p=$(peak) live=$(stats_row "$tmp/err" "live bytes peak") pk=$(stats_row "$tmp/err" "device memory peak")
  s=$(stats_row "$tmp/err" "served from the plan") a=$(stats_row "$tmp/err" allocations) d=$(stats_row "$tmp/err" "divergent periods")
  one PLANALLOC_MODE=record || { echo "| $seed | FAILED (record) |"; continue; }
  r=$(peak)
  SIMCUDA_PEAK_FILE=$tmp/peak LD_PRELOAD="$root/build/baselines/libcaching.so" "$w/event_replay" "$tmp/s.log" >/dev/null 2>&1
  c=$(cat "$tmp/peak")
  printf "| %d | %d | %s | %d | %s | %.1f %% | %s | %s | %s | %s |\n" "$seed" $layers "$(echo "${shapes:-one}" | awk '{ print $2 }' | sed 's/^$/one/')" \
    $extra "$p" "$(awk -v s="$s" -v a="$a" 'BEGIN { print a ? 100 * s / a : 0 }')" "$d" "$r" "$(ratio "$c" "$live")" "$(ratio "$pk" "$c")"
done | tee "$tmp/rows"
echo
echo "| lengths | rows | planalloc peak / live | served | divergent periods | best fit alone | caching | planalloc / caching |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
awk -F'|' '$3 ~ /[0-9]/ { k = $4 ~ /,/ ? "several" : "one"; n[k]++; p[k] += $6; s[k] += $7; d[k] += $8; r[k] += $9; c[k] += $10; q[k] += $11 }
  END { for (k in n) printf "| %s | %d | %.4f | %.1f %% | %d | %.4f | %.4f | %.4f |\n", k, n[k], p[k] / n[k], s[k] / n[k], d[k], r[k] / n[k], c[k] / n[k], q[k] / n[k] }' "$tmp/rows"
