#!/usr/bin/env bash
# One device lease's work as one command (the GPU parts of issues #38 and #39), in order
# of value and cut by a deadline, so that a lease that ends early still answers the first:
#  1. OUTDIR/machine.txt   the card, driver, cores, PyTorch
#  2. OUTDIR/calibrate.txt scripts/gpu-calibrate.sh: the driver's memory-call costs as
#                          SIMCUDA_* settings
#  3. OUTDIR/report.md, logs.tar.gz, check.log   scripts/gpu-check.sh OUTDIR torch
#  4. OUTDIR/events.tar.gz where 60 s are left: the GPT run under planalloc again with
#                          PLANALLOC_EVENTS (its events.csv, for tests/workloads'
#                          event_replay and `planalloc report`)
# Seven files at most: the device tool brings back eight. Carry .gpu-deps
# (scripts/gpu-deps.sh) where the machine lacks libunwind or uthash.
# Usage: scripts/gpu-lease.sh OUTDIR [SECONDS]   (the deadline, default 540)
# (GPU_LEASE_CHECK_FLAGS, e.g. "--sim --quick --torch-cpu", and GPU_LEASE_DEVICE=cpu try
# it where there is no GPU; the build directory is build-gpu either way)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
[ $# -ge 1 ] || { sed -n 's/^# Usage: /usage: /p' "$0" >&2; exit 2; }
mkdir -p "$1" && out=$(cd "$1" && pwd)
deadline=$(($(date +%s) + ${2:-540}))
left() { echo $((deadline - $(date +%s))); }
export PYTHONUNBUFFERED=1

{
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  echo "cores $(nproc)"
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
  nvcc --version | tail -2
} >"$out/machine.txt" 2>&1
cat "$out/machine.txt"

timeout 90 "$root/scripts/gpu-calibrate.sh" /tmp/gpu-calibrate 2>&1 | tee "$out/calibrate.txt"

# the check gets all but the last 60 s, which the event log may use
timeout $(($(left) - 60)) env GPU_CHECK_RUN_S="${GPU_CHECK_RUN_S:-80}" \
  "$root/scripts/gpu-check.sh" ${GPU_LEASE_CHECK_FLAGS:-} --build "$root/build-gpu" "$out" torch 2>&1 | tee "$out/check.log"
echo "check ended with $(left) s left"

build=$root/build-gpu
[ "$(left)" -gt 50 ] && [ -f "$build/lib/libplanalloc.so" ] || exit 0
rm -rf /tmp/events && mkdir -p /tmp/events
deps=$build/deps/usr/lib/x86_64-linux-gnu
timeout $(($(left) - 10)) env LD_LIBRARY_PATH="$deps${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" PLANALLOC_EVENTS=1 PLANALLOC_STATS=1 \
  PLANALLOC_PLAN_TIME=2 PLANALLOC_DUMP=/tmp/events PYTORCH_NO_CUDA_MEMORY_CACHING=1 \
  LD_PRELOAD="$build/lib/libplanalloc.so" python3 "$root/tests/gpu/torch_train.py" --model gpt \
  --device "${GPU_LEASE_DEVICE:-cuda}" \
  >/tmp/events/run.out 2>/tmp/events/run.err
echo "events run: exit $?, $(left) s left"
tar -czf "$out/events.tar.gz" -C /tmp events
ls -l "$out"
