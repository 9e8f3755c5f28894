#!/usr/bin/env bash
# The real driver's memory-call costs on this GPU machine, printed as the simulator's
# settings (tests/simcuda/cost.c: SIMCUDA_COST_*_US, SIMCUDA_COPY_GBPS): builds
# tests/gpu/calibrate.c and contend.c with nvcc against the machine's libcuda and runs them (a few seconds
# on an H100; well under 60). Usage: scripts/gpu-calibrate.sh [OUTDIR] [PAGES]
# (OUTDIR: where the binary and calibrate.txt go, default build/gpu-calibrate).
# --build-only: compile and stop (ctest's check that it builds, where nvcc is installed).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build_only=0
[ "${1:-}" = --build-only ] && { build_only=1; shift; }
out=${1:-$root/build/gpu-calibrate} pages=${2:-512}
nvcc=$(command -v nvcc || true)
[ -n "$nvcc" ] || { [ -x /usr/local/cuda/bin/nvcc ] && nvcc=/usr/local/cuda/bin/nvcc; } || true
[ -n "$nvcc" ] || { echo "gpu-calibrate: no nvcc, skipped"; exit 77; }
mkdir -p "$out"
# the toolkit's stub libcuda links it; the machine's own is loaded when it runs
stubs=$(cd "$(dirname "$nvcc")/../lib64" && pwd)/stubs
"$nvcc" -O2 -Werror all-warnings -Xcompiler -Wall,-Wextra -o "$out/calibrate" "$root/tests/gpu/calibrate.c" -L"$stubs" -lcuda
"$nvcc" -O2 -Werror all-warnings -Xcompiler -Wall,-Wextra -o "$out/contend" "$root/tests/gpu/contend.c" -L"$stubs" -lcuda -lpthread
[ $build_only = 1 ] && { echo "built $out/calibrate"; exit 0; }
start=$(date +%s)
"$out/calibrate" "$pages" | tee "$out/calibrate.txt"
# the launch hook's calls, and the mapping calls on a thread of their own (comments only)
"$out/contend" | tee -a "$out/calibrate.txt"
echo "# measured in $(($(date +%s) - start)) s"
