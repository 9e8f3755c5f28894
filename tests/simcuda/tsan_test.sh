#!/usr/bin/env bash
# The simulator under ThreadSanitizer: the driver's contract tests (also with kernels that
# hold their streams, the timeline written) and a multi-stream workload, built with clang
# -fsanitize=thread into a scratch folder. Any race report fails the test. Exits 77
# (skip) without clang.
# Usage: tsan_test.sh CUDA_INCLUDE_DIR
set -u
inc=$1 src=$(cd "$(dirname "$0")" && pwd)
cc=$(command -v clang || command -v clang-14 || true)
[ -n "$cc" ] || { echo "tsan: no clang, skipped"; exit 77; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
flags="-std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=thread -I$inc -I$src -I$src/../workloads"
cd "$src"
$cc $flags -fPIC -shared state.c calls.c cost.c timeline.c pager.c device.c memory.c vmm.c stream.c copy.c launch.c graph.c procaddr.c fault.c pointer.c ipc.c \
  -o "$out/libcuda.so.1" -lpthread -Wl,-soname,libcuda.so.1 || exit 1
$cc $flags -fPIC -shared cudart.c -o "$out/libcudart.so.13" -lpthread -ldl \
  -Wl,-soname,libcudart.so.13 -Wl,--version-script=cudart.map || exit 1
$cc $flags test_driver.c "$out/libcuda.so.1" -o "$out/test_driver" -lpthread || exit 1
$cc $flags test_devices.c "$out/libcuda.so.1" -o "$out/test_devices" -lpthread || exit 1
$cc $flags ../workloads/multistream.c "$out/libcudart.so.13" -o "$out/multistream" -lpthread || exit 1
# TSan's shadow memory covers the simulator's default device range: move it.
export SIMCUDA_BASE=7e9000000000 LD_LIBRARY_PATH="$out" TSAN_OPTIONS="halt_on_error=1"
SIMCUDA_MEMORY=64MiB "$out/test_driver" >"$out/log" 2>&1 &&
  SIMCUDA_MEMORY=64MiB SIMCUDA_KERNEL_US=50000 SIMCUDA_QUEUE_DEPTH=4 SIMCUDA_TIMELINE="$out/timeline" "$out/test_driver" --device-time >>"$out/log" 2>&1 &&
  SIMCUDA_MEMORY=64MiB SIMCUDA_DEVICES=2 "$out/test_devices" >>"$out/log" 2>&1 && "$out/multistream" --iters 10 >>"$out/log" 2>&1
rc=$?
if [ $rc != 0 ] || grep -q "ThreadSanitizer" "$out/log"; then
  echo "tsan: FAIL (exit $rc)"; grep -A20 "WARNING" "$out/log" | head -60; exit 1
fi
grep -E "^test_driver:|^test_devices:|^final" "$out/log"
