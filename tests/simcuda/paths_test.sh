#!/usr/bin/env bash
# Each workload under LD_PRELOAD=libpathcount.so: every path sees what it must.
# Usage: paths_test.sh SIMDIR PATHCOUNT_SO WORKLOAD_DIR DATA_DIR
set -u
simdir=$1 preload=$2 bin=$3 data=$4
fails=0
# In the sanitizer build the preload comes before ASan's runtime, which is fine here.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"
# run NAME ARGS...: prints the pathcount line's numbers as "ma la dg ra rl rx"
run() {
  LD_LIBRARY_PATH="$simdir" LD_PRELOAD="$preload" SIMCUDA_STRICT=1 "$bin/$@" 2>&1 >/dev/null |
    sed -n 's/^pathcount: exported cudaMalloc \([0-9]*\) __cudaLaunchKernel \([0-9]*\); dlsym cuGetProcAddress_v2 \([0-9]*\); resolved cuMemAlloc \([0-9]*\) cuLaunchKernel \([0-9]*\) cuLaunchKernelEx \([0-9]*\)$/\1 \2 \3 \4 \5 \6/p'
}
expect() { # expect WHAT CONDITION
  if ! eval "$2"; then fails=$((fails + 1)); echo "FAIL: $1 ($2)"; fi
}
read -r ma la dg ra rl rx <<<"$(run mlp_train --iters 3)"
expect "mlp_train: runtime symbols seen" '[ "${ma:-0}" -gt 0 ] && [ "${la:-0}" -gt 0 ]'
expect "mlp_train: cudart reached the resolver through dlsym" '[ "${dg:-0}" -ge 1 ]'
expect "mlp_train: each cudaMalloc reached cuMemAlloc through the resolver" '[ "${ra:-x}" = "$ma" ]'
expect "mlp_train: each launch reached cuLaunchKernel through the resolver" '[ "${rl:-x}" = "$la" ]'
read -r ma la dg ra rl rx <<<"$(run vendor_gemm --iters 4)"
expect "vendor_gemm: runtime and vendor both resolved through dlsym" '[ "${dg:-0}" -ge 2 ]'
expect "vendor_gemm: 2 vendor GEMMs per iteration, seen only as cuLaunchKernelEx" '[ "${rx:-0}" = 8 ]'
expect "vendor_gemm: 2 own kernels per iteration" '[ "${la:-0}" = 8 ] && [ "${rl:-0}" = 8 ]'
read -r ma la dg ra rl rx <<<"$(run multistream --iters 3 --elems 1024)"
expect "multistream: launches on two streams" '[ "${la:-0}" = 6 ] && [ "${rl:-0}" = 6 ]'
read -r ma la dg ra rl rx <<<"$(run transformer_train --iters 2 --dynamic)"
expect "transformer_train: every allocation and launch seen on both layers" \
  '[ "${ma:-0}" -gt 0 ] && [ "${ra:-x}" = "$ma" ] && [ "${la:-0}" -gt 0 ] && [ "${rl:-x}" = "$la" ]'
read -r ma la dg ra rl rx <<<"$(run trace_replay "$data/resnet50.csv" --iterations 1 --scale 256)"
expect "trace_replay: one allocation per buffer plus the counter, fill and verify per buffer" \
  '[ "${ma:-0}" = 1043 ] && [ "${ra:-x}" = 1043 ] && [ "${la:-0}" = 2084 ] && [ "${rl:-x}" = 2084 ]'
echo "paths: $fails failed"
[ $fails = 0 ]
