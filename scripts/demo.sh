#!/usr/bin/env bash
# The README's main command: a training workload run without and with planalloc, then
# planalloc's exit table and the three numbers that matter: device memory without
# planalloc, with it, and the max-live lower bound. On a GPU machine the nvcc build of
# the workload runs on the GPU; elsewhere it runs on the simulated CUDA (tests/simcuda),
# whose peak-memory figure stands in for the device's.
# Usage: scripts/demo.sh [TRACE.csv]  (the training trace replayed; default ResNet-50)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
. scripts/common.sh
trace=${1:-tests/data/resnet50.csv}
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc 2>/dev/null || echo 2)" --target planalloc trace_replay simcuda simcudart >/dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
args=("$trace" --iterations 8 --scale 4)

if nvidia-smi -L >/dev/null 2>&1 && command -v nvcc >/dev/null; then
  scripts/build-workloads-nvcc.sh build/workloads-nvcc >/dev/null
  echo "planalloc demo on the GPU: trace_replay ${args[*]}"
  prog=build/workloads-nvcc/trace_replay
  # polled from outside the program (cuMemGetInfo): its CUDA context counts too
  python3 scripts/gpu-meter.py --out "$tmp/peak0" -- "$prog" "${args[@]}" >"$tmp/ref"
  python3 scripts/gpu-meter.py --out "$tmp/peak1" -- env PLANALLOC_STATS=1 PLANALLOC_DUMP="$tmp" \
    LD_PRELOAD="$root/build/lib/libplanalloc.so" "$prog" "${args[@]}" >"$tmp/out" 2>"$tmp/err"
  without="$(awk '{ print $2 }' "$tmp/peak0") bytes (the device's used memory, polled; its CUDA context included)"
  polled="; polled like the line above: $(awk '{ print $2 }' "$tmp/peak1") bytes"
else
  echo "planalloc demo on the simulated CUDA (no GPU here): trace_replay ${args[*]}"
  export LD_LIBRARY_PATH=$root/build/simcuda
  prog=build/workloads/trace_replay
  SIMCUDA_PEAK_FILE=$tmp/peak0 "$prog" "${args[@]}" >"$tmp/ref"
  SIMCUDA_PEAK_FILE=$tmp/peak1 PLANALLOC_STATS=1 PLANALLOC_DUMP=$tmp \
    LD_PRELOAD=$root/build/lib/libplanalloc.so "$prog" "${args[@]}" >"$tmp/out" 2>"$tmp/err"
  without="$(cat "$tmp/peak0") bytes"
fi
grep '^planalloc: ' "$tmp/err" || true
cmp -s "$tmp/ref" "$tmp/out" && echo "results: identical with and without planalloc ($(tail -1 "$tmp/out"))" ||
  { echo "results: DIFFER"; exit 1; }
stats=$(ls "$tmp"/planalloc.*.stats.json | head -1)
get() { json_field "$stats" "$1"; }
echo "device memory without planalloc: $without"
echo "device memory with planalloc:    $(get device_peak_bytes) bytes (pages mapped${polled:-})"
echo "max-live lower bound:            $(( $(get iteration_maxlive_bytes) + $(get persistent_bytes) )) bytes"
# What a user reads next: the report on the run's dumps, its plots kept in build/demo.
"$root/build/bin/planalloc" report --out "$root/build/demo" "$tmp"

# The budget: the same run in half the memory planalloc needed, buffers moving to host
# memory and back; the results must not change.
budget=$(( $(get device_peak_bytes) / 2 ))
sim_peak=()
[ -n "${LD_LIBRARY_PATH:-}" ] && sim_peak=("SIMCUDA_PEAK_FILE=$tmp/peak2")
env "${sim_peak[@]}" PLANALLOC_STATS=1 PLANALLOC_BUDGET=$budget LD_PRELOAD=$root/build/lib/libplanalloc.so \
  "$prog" "${args[@]}" >"$tmp/bout" 2>"$tmp/berr" || { grep 'planalloc: error' "$tmp/berr"; exit 1; }
cmp -s "$tmp/ref" "$tmp/bout" && echo "under PLANALLOC_BUDGET=$budget: results identical" ||
  { echo "under PLANALLOC_BUDGET=$budget: results DIFFER"; exit 1; }
grep -E '^planalloc: (bytes moved to host|bytes brought back|evictions|host waits for copies|host time waiting for copies|copy waits left to launches) ' "$tmp/berr" || true
[ -f "$tmp/peak2" ] && echo "device memory under the budget:  $(cat "$tmp/peak2") bytes"
exit 0
