#!/usr/bin/env bash
# Builds the workloads for a real GPU with nvcc (sm_90; Hopper) into OUTDIR (default
# build/workloads-nvcc). cudart is linked shared, as frameworks do, so that an
# LD_PRELOAD library can interpose the runtime's exported symbols. Exits 77 (skip)
# where nvcc is missing.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$root/build/workloads-nvcc}
nvcc=$(command -v nvcc || true)
[ -n "$nvcc" ] || { [ -x /usr/local/cuda/bin/nvcc ] && nvcc=/usr/local/cuda/bin/nvcc; } || true
[ -n "$nvcc" ] || { echo "build-workloads-nvcc: no nvcc, skipped"; exit 77; }
mkdir -p "$out"
# The toolkit's libraries by run path: a machine need not list them for the loader.
cudalib=$(cd "$(dirname "$nvcc")/../lib64" && pwd)
for w in mlp_train transformer_train multistream vendor_gemm trace_replay event_replay multi_device; do
  extra=""
  [ $w = vendor_gemm ] && extra="-lcublas"
  "$nvcc" -x cu -arch=sm_90 -O2 -cudart shared -Xlinker -rpath="$cudalib" -Werror all-warnings -I"$root/tests/workloads" \
    -o "$out/$w" "$root/tests/workloads/$w.c" $extra
  echo "built $out/$w"
done
