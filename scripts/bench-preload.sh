#!/usr/bin/env bash
# Times the preload's hot paths on the simulated CUDA (build/tests/bench_preload) and
# prints a markdown table: each figure is the median of RUNS runs (default 5), each run
# itself a median (see tests/preload/bench_preload.c). Runs are pinned to one CPU when
# taskset exists: unpinned, thread migrations make the figures bimodal on small VMs.
# Usage: scripts/bench-preload.sh [RUNS]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build
runs=${1:-5}
. "$root/scripts/common.sh"
build_targets bench_preload planalloc
export LD_LIBRARY_PATH=$build/simcuda
# Planned inline: the program is tiny, and with the planner on its own thread (the
# default) the 20 iterations before the launch loop can end before the plan is
# installed, so the "served" launches would be timed while still recording.
export PLANALLOC_PLAN_TIME=0
bench=$build/tests/bench_preload pre=$build/lib/libplanalloc.so
pin=()
if command -v taskset >/dev/null; then pin=(taskset -c "$(($(nproc) - 1))"); fi

# median MODE COUNT [PRELOAD]: the median over runs of the bench's figure
median() {
  local mode=$1 count=$2 with=${3:-}
  for _ in $(seq "$runs"); do
    if [ -n "$with" ]; then LD_PRELOAD=$with "${pin[@]}" "$bench" "$mode" "$count"
    else "${pin[@]}" "$bench" "$mode" "$count"; fi
  done | awk '{ print $2 }' | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

# The alloc bench must really be served from a plan, or its figure means nothing.
served=$(PLANALLOC_STATS=1 LD_PRELOAD=$pre "$bench" alloc 4000 2>&1 >/dev/null |
  awk '/served from the plan/ { s = $(NF) } /planalloc: allocations/ { a = $(NF) } END { printf "%d of %d", s, a }')

row() { # LABEL MODE COUNT TARGET
  local base with
  base=$(median "$2" "$3") with=$(median "$2" "$3" "$pre")
  awk -v l="$1" -v b="$base" -v w="$with" -v t="$4" \
    'BEGIN { printf "| %s | %.0f | %.0f | %+.0f | %s |\n", l, b, w, w - b, t }'
}

echo "bench-preload: $(nproc) CPUs, $(uname -m), $runs runs per figure, pinned: ${pin[*]:-no}; alloc bench served $served"
echo
echo "| path (ns per call) | without preload | with preload | difference | target |"
echo "|---|---:|---:|---:|---|"
row "alloc+free pair, served phase (32 per iteration)" alloc 4000 "with preload <= 100"
row "launch, 8 pointer params, served phase" launch 30000 "difference <= 300"
row "launch, 8 pointer params, while recording" launch-record 30000 "difference <= 300"
row "cuCtxSynchronize, idle (each free waits for it under PLANALLOC_FREE=sync)" sync 1000000 "-"
