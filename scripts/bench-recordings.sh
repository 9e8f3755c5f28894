#!/usr/bin/env bash
# The budget's served phase on the H200's own recordings (issue #39): the trace and
# access dumps of tests/gpu/torch_train.py's ResNet-50 and GPT runs (tests/data/h200.*,
# 2026-11-28) replayed by event_replay --access, each launch reading the buffers the real
# one touched, at their real sizes and at the budget the GPU ran them at (half the
# caching allocator's reserved peak), 20 us kernels, a 55 GB/s link, the simulator's
# H200 call costs. What the GPU showed (gpu/BENCHMARKS.md, 2026-11-28): on GPT 1,386-1,595
# mapping calls a served period, most of them pages whose colour's handle another
# colour's page held or whose colour had none; the same replay reproduces that profile.
# Per run: the served phase's mapping calls a period and a page moved, the pages mapped
# anew by cause (no colour / colour unbound / address / colour in use / colour idle /
# colour away: the stats' "served remaps"), host waits (all / served), the served
# period's host time and the wall. The counts vary from run to run (the planner's
# thread, the simulated device's timing): RUNS runs each (default 3).
# Needs about 10 GiB of memory for GPT (its pages and their host copies).
# Usage: scripts/bench-recordings.sh [STEPS] [RUNS]   (STEPS: periods replayed, default 8)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/scripts/common.sh"
steps=${1:-8} runs=${2:-3}
build_targets event_replay planalloc simcuda simcudart
export LD_LIBRARY_PATH=$root/build/simcuda
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
declare -A budget=([resnet50]=1882193920 [gpt]=4804575232) # the GPU runs' PLANALLOC_BUDGET

# row MODEL: one budgeted run against the plain replay's output
row() {
  local m=$1 start secs ev
  ev=("$root/build/workloads/event_replay" "$root/tests/data/h200.$m.trace.csv.xz" --access "$root/tests/data/h200.$m.access.csv.xz" --steps "$steps")
  [ -f "$tmp/$m.ref" ] || "${ev[@]}" >"$tmp/$m.ref" 2>/dev/null
  start=$(date +%s.%N)
  SIMCUDA_KERNEL_US=20 SIMCUDA_COPY_GBPS=55 PLANALLOC_STATS=1 PLANALLOC_BUDGET=${budget[$m]} \
    LD_PRELOAD=$root/build/lib/libplanalloc.so "${ev[@]}" >"$tmp/out" 2>"$tmp/err" ||
    { echo "| $m | FAILED: $(grep -m1 'planalloc: error' "$tmp/err" || tail -1 "$tmp/err") |"; return; }
  secs=$(elapsed "$start" 1)
  cmp -s "$tmp/$m.ref" "$tmp/out" || { echo "| $m | OUTPUT DIFFERS |"; return; }
  local c p moved causes=""
  c=$(stats_row "$tmp/err" "mapping calls, served") p=$(stats_row "$tmp/err" "periods served") moved=$(stats_row "$tmp/err" "pages moved, served")
  for k in "no colour" "colour unbound" address "colour in use" "colour idle" "colour away"; do
    causes+="${causes:+ / }$(stats_row "$tmp/err" "served remaps, $k")"
  done
  printf "| %s | %s | %.0f | %.2f | %s | %s / %s | %.0f | %s |\n" "$m" "$c" \
    "$(awk -v c="$c" -v p="$p" 'BEGIN { print (p > 2) ? c / (p - 2) : 0 }')" "$(awk -v c="$c" -v m="$moved" 'BEGIN { print m ? c / m : 0 }')" \
    "$causes" "$(stats_row "$tmp/err" "host waits")" "$(stats_row "$tmp/err" "host waits, served phase")" \
    "$(awk -v u="$(stats_row "$tmp/err" "period time, served")" 'BEGIN { print u / 1000 }')" "$secs"
}

echo "| recording | served mapping calls | a period | a page moved | pages mapped anew: no colour / unbound / address / in use / idle / away | host waits (served) | served period, ms | wall s |"
echo "|---|---:|---:|---:|---|---|---:|---:|"
for m in resnet50 gpt; do
  for _ in $(seq "$runs"); do row "$m"; done
done
