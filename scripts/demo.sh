#!/usr/bin/env bash
# The README's main command. Its first line is the verdict: how much device memory
# planalloc saves against the caching allocator users run by default (PyTorch's, modelled
# by tests/baselines/libcaching.so), at what step time, results identical. Then a table:
# the same workload without planalloc (one cudaMalloc/cudaFree per tensor, what
# PYTORCH_NO_CUDA_MEMORY_CACHING=1 gives), under the caching allocator and under planalloc;
# how much of it the plan served; the same run in half planalloc's memory (a budget).
# The stats table, the report and its plots go to build/demo, which the last line names.
#
# The workload is PyTorch's own allocation stream: ResNet-50 training logged on an H100
# (tests/data/ev.resnet50.log.xz, ../shared/data/gpu-events), replayed by event_replay
# over 40 steps at a quarter of its sizes, each event followed by a kernel. On a GPU
# machine the nvcc build runs on the GPU; elsewhere on the simulated CUDA (tests/simcuda),
# whose peak figure stands in for the device's and whose kernels take 20 us each
# (SIMCUDA_KERNEL_US: the device the bottleneck, as in training).
# Usage: scripts/demo.sh [LOG [STEPS [SCALE]]]   (an event log: event_replay's format)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
. scripts/common.sh
log=${1:-tests/data/ev.resnet50.log.xz} steps=${2:-40} scale=${3:-4}
build_targets planalloc caching event_replay simcuda simcudart
out=$root/build/demo
rm -rf "$out" && mkdir -p "$out/dumps"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
args=("$log" --steps "$steps" --scale "$scale")
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
  where="on the GPU ($(nvidia-smi --query-gpu=name --format=csv,noheader | head -1))"
  prog=build/workloads-nvcc/event_replay
  # polled from outside the program (cuMemGetInfo): its CUDA context counts too
  meter() { local o=$1; shift; python3 scripts/gpu-meter.py --out "$tmp/$o" -- "$@"; }
  timed raw meter peak0 "$prog" "${args[@]}" >"$tmp/ref"
  timed caching meter peakc env LD_PRELOAD="$caching" "$prog" "${args[@]}" >"$tmp/cout" 2>"$tmp/cerr"
  timed planalloc meter peak1 env PLANALLOC_STATS=1 PLANALLOC_DUMP="$out/dumps" LD_PRELOAD="$planalloc" \
    "$prog" "${args[@]}" >"$tmp/out" 2>"$tmp/err"
  for f in peak0 peakc peak1; do awk '{ print $2 }' "$tmp/$f" >"$tmp/$f.bytes"; done
  what="device memory used, polled (its CUDA context included)"
else
  where="on the simulated CUDA (no GPU here; kernels of ${SIMCUDA_KERNEL_US:-20} us)"
  export LD_LIBRARY_PATH=$root/build/simcuda SIMCUDA_KERNEL_US=${SIMCUDA_KERNEL_US:-20}
  prog=build/workloads/event_replay
  timed raw env SIMCUDA_PEAK_FILE="$tmp/peak0.bytes" "$prog" "${args[@]}" >"$tmp/ref" 2>/dev/null
  timed caching env SIMCUDA_PEAK_FILE="$tmp/peakc.bytes" LD_PRELOAD="$caching" "$prog" "${args[@]}" >"$tmp/cout" 2>"$tmp/cerr"
  timed planalloc env SIMCUDA_PEAK_FILE="$tmp/peak1.bytes" PLANALLOC_STATS=1 PLANALLOC_DUMP="$out/dumps" \
    LD_PRELOAD="$planalloc" "$prog" "${args[@]}" >"$tmp/out" 2>"$tmp/err"
  what="peak device memory"
fi
cmp -s "$tmp/ref" "$tmp/cout" && cmp -s "$tmp/ref" "$tmp/out" || { echo "planalloc: results DIFFER between the three runs"; exit 1; }
grep '^planalloc: ' "$tmp/err" >"$out/stats.txt" || true
pc=$(cat "$tmp/peakc.bytes") p1=$(cat "$tmp/peak1.bytes") tc=$(cat "$tmp/caching.secs") t1=$(cat "$tmp/planalloc.secs")
pct() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", 100 * a / b }'; }
times() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
less=$(pct $((pc - p1)) "$pc")
echo "planalloc: $less % less device memory than PyTorch's caching allocator, step time $(times "$t1" "$tc")x of it, results identical"
echo "  PyTorch's ResNet-50 allocation stream (logged on an H100), $steps steps at 1/$scale of its sizes, $where"
printf "  %-30s %8s %10s %8s %9s\n" "" "wall s" "$([ "$what" = "peak device memory" ] && echo "peak MiB" || echo "used MiB")" "time x" "memory x"
row() {
  local t p
  t=$(cat "$tmp/$2.secs") p=$(cat "$tmp/$3.bytes")
  printf "  %-30s %8s %10s %8s %9s\n" "$1" "$t" "$(mib "$p")" "$(times "$t" "$tc")" "$(times "$p" "$pc")"
}
row "cudaMalloc per tensor" raw peak0
row "caching allocator (PyTorch's)" caching peakc
row "planalloc" planalloc peak1
stat() { awk -v k="$1" 'index($0, "planalloc: " k " ") == 1 { n = split($0, f, " "); for (i = 2; i <= n; i++) if (f[i] ~ /^[0-9]+$/) { print f[i]; exit } }' "$out/stats.txt"; }
allocs=$(stat allocations) served=$(stat "served from the plan") since=$(stat "since first served")
echo "  the plan served $(pct "$served" "$allocs") % of $allocs allocations ($(pct "$served" "${since:-$allocs}") % from its first), $(stat "divergent periods") divergent periods; one run each (medians: scripts/bench-speed.sh)"

# The budget: the same run in half the memory planalloc needed, buffers moving to host
# memory and back; the results must not change. Fewer steps: each moves the bytes a step
# lives on.
budget=$((p1 / 2)) bsteps=$((steps < 12 ? steps : 12))
sim_peak=()
[ -n "${LD_LIBRARY_PATH:-}" ] && sim_peak=("SIMCUDA_PEAK_FILE=$tmp/peak2")
"$prog" "$log" --steps "$bsteps" --scale "$scale" >"$tmp/bref" 2>/dev/null
env "${sim_peak[@]}" PLANALLOC_STATS=1 PLANALLOC_BUDGET=$budget LD_PRELOAD="$planalloc" \
  "$prog" "$log" --steps "$bsteps" --scale "$scale" >"$tmp/bout" 2>"$tmp/berr" || { grep 'planalloc: error' "$tmp/berr"; exit 1; }
grep '^planalloc: ' "$tmp/berr" >"$out/stats-budget.txt" || true
moved=$(awk '/^planalloc: bytes moved to host  / { print $(NF - 1) }' "$tmp/berr")
peak2=$( [ -f "$tmp/peak2" ] && echo ", $(mib "$(cat "$tmp/peak2")") MiB at the peak" || true)
cmp -s "$tmp/bref" "$tmp/bout" && echo "  under PLANALLOC_BUDGET=$budget (half of it), $bsteps steps: results identical, $(mib "${moved:-0}") MiB moved to host$peak2" ||
  { echo "  under PLANALLOC_BUDGET=$budget: results DIFFER"; exit 1; }
# what the run said, before its served phase, the budget would cost
sed -n 's/^planalloc: budget [0-9.]* MiB: \(predicted [0-9.]*x\)[^,]*, \([0-9.]* MiB out\).*/  its own forecast once planned: \1 its iteration, \2 an iteration/p' "$tmp/berr" | head -1
# What a user reads next: the report on the run's dumps, with its plots.
"$root/build/bin/planalloc" report --out "$out" "$out/dumps" >"$out/report.txt" 2>&1 || true
echo "  stats: $out/stats.txt; report and plots: $out/report.txt (planalloc report $out/dumps)"
exit 0
