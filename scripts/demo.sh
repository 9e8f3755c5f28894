#!/usr/bin/env bash
# The README's main command: a training workload three ways, without planalloc (one
# cudaMalloc/cudaFree per tensor, what PYTORCH_NO_CUDA_MEMORY_CACHING=1 gives), under the
# caching allocator users run by default (tests/baselines/libcaching.so, PyTorch's modelled)
# and under planalloc: time and device memory side by side, the saving and the slowdown
# against the caching allocator. Then planalloc's exit table, its report, and the same
# run in half the memory (a budget). On a GPU machine the nvcc build of the workload
# runs on the GPU; elsewhere it runs on the simulated CUDA (tests/simcuda), whose peak
# figure stands in for the device's and whose kernels take 20 us each
# (SIMCUDA_KERNEL_US), about the host's time per launch here.
# Usage: scripts/demo.sh [TRACE.csv]  (the training trace replayed; default ResNet-50)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
. scripts/common.sh
trace=${1:-tests/data/resnet50.csv}
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "$(nproc 2>/dev/null || echo 2)" --target planalloc caching trace_replay simcuda simcudart >/dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
args=("$trace" --iterations 8 --scale 4)
caching=$root/build/baselines/libcaching.so planalloc=$root/build/lib/libplanalloc.so

# timed NAME CMD...: CMD's wall seconds in $tmp/NAME.secs
timed() {
  local name=$1 start
  shift
  start=$(date +%s.%N)
  "$@"
  elapsed "$start" 2 >"$tmp/$name.secs"
}

if nvidia-smi -L >/dev/null 2>&1 && command -v nvcc >/dev/null; then
  scripts/build-workloads-nvcc.sh build/workloads-nvcc >/dev/null
  echo "planalloc demo on the GPU: trace_replay ${args[*]}"
  prog=build/workloads-nvcc/trace_replay
  # polled from outside the program (cuMemGetInfo): its CUDA context counts too
  meter() { local out=$1; shift; python3 scripts/gpu-meter.py --out "$tmp/$out" -- "$@"; }
  timed raw meter peak0 "$prog" "${args[@]}" >"$tmp/ref"
  timed caching meter peakc env LD_PRELOAD="$caching" "$prog" "${args[@]}" >"$tmp/cout" 2>"$tmp/cerr"
  timed planalloc meter peak1 env PLANALLOC_STATS=1 PLANALLOC_DUMP="$tmp" LD_PRELOAD="$planalloc" "$prog" "${args[@]}" \
    >"$tmp/out" 2>"$tmp/err"
  for f in peak0 peakc peak1; do awk '{ print $2 }' "$tmp/$f" >"$tmp/$f.bytes"; done
  what="device memory used, polled (its CUDA context included)"
else
  echo "planalloc demo on the simulated CUDA (no GPU here): trace_replay ${args[*]}"
  export LD_LIBRARY_PATH=$root/build/simcuda SIMCUDA_KERNEL_US=${SIMCUDA_KERNEL_US:-20}
  prog=build/workloads/trace_replay
  timed raw env SIMCUDA_PEAK_FILE="$tmp/peak0.bytes" "$prog" "${args[@]}" >"$tmp/ref"
  timed caching env SIMCUDA_PEAK_FILE="$tmp/peakc.bytes" LD_PRELOAD="$caching" "$prog" "${args[@]}" >"$tmp/cout" 2>"$tmp/cerr"
  timed planalloc env SIMCUDA_PEAK_FILE="$tmp/peak1.bytes" PLANALLOC_STATS=1 PLANALLOC_DUMP="$tmp" LD_PRELOAD="$planalloc" \
    "$prog" "${args[@]}" >"$tmp/out" 2>"$tmp/err"
  what="peak device memory"
fi
cmp -s "$tmp/ref" "$tmp/cout" && cmp -s "$tmp/ref" "$tmp/out" || { echo "results: DIFFER between the three runs"; exit 1; }
pc=$(cat "$tmp/peakc.bytes") tc=$(cat "$tmp/caching.secs")
# line LABEL NAME PEAKFILE: time, memory, and both against the caching allocator
line() {
  local t p
  t=$(cat "$tmp/$2.secs") p=$(cat "$tmp/$3.bytes")
  printf "  %-30s %7s s %10s MiB   time %sx, memory %sx of the caching allocator's\n" "$1" "$t" "$(mib "$p")" \
    "$(awk -v a="$t" -v b="$tc" 'BEGIN { printf "%.2f", a / b }')" "$(awk -v a="$p" -v b="$pc" 'BEGIN { printf "%.2f", a / b }')"
}
echo "three ways, identical results ($(tail -1 "$tmp/out")): wall time, $what"
line "cudaMalloc per tensor" raw peak0
line "caching allocator (PyTorch's)" caching peakc
line "planalloc" planalloc peak1
saved=$((pc - $(cat "$tmp/peak1.bytes")))
echo "  planalloc saves $(mib "$saved") MiB ($(awk -v a="$saved" -v b="$pc" 'BEGIN { printf "%.1f", 100 * a / b }') %) of the" \
  "caching allocator's $(mib "$pc") MiB at $(awk -v a="$(cat "$tmp/planalloc.secs")" -v b="$tc" 'BEGIN { printf "%.2f", a / b }')x its time"
# one run each: a single time is noisy on a small or loaded machine
echo "  (one run each: times move by about 10 % between runs here; medians of many runs: scripts/bench-speed.sh)"
echo
grep '^planalloc: ' "$tmp/err" || true
stats=$(ls "$tmp"/planalloc.*.stats.json | head -1)
get() { json_field "$stats" "$1"; }
echo "max-live lower bound:            $(bound_bytes "$stats") bytes"
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
grep -E '^planalloc: (bytes moved to host|bytes brought back|evictions|swaps out scheduled|host waits for copies|host time waiting for copies|host waits, served phase|copy waits left to launches) ' "$tmp/berr" || true
[ -f "$tmp/peak2" ] && echo "device memory under the budget:  $(cat "$tmp/peak2") bytes"
exit 0
