# Sourced by scripts/bench-budget.sh and scripts/bench-planned.sh: the simulated CUDA, the
# preload, a scratch directory, the stats reader and the budget workloads.
# Needs: build (the build directory). Defines: pre, w, tmp, workloads, order (and
# scripts/common.sh's helpers).
set -u
cd "$(dirname "$0")/.."
export LD_LIBRARY_PATH=$build/simcuda
pre=$build/lib/libplanalloc.so w=$build/workloads
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
root=$(pwd)
. scripts/common.sh

# workloads TR RP MLP MS VG: cmd[NAME], each workload at that many iterations
declare -A cmd
workloads() {
  cmd=(
    [transformer_train]="$w/transformer_train --iters $1 --seq 512 --dim 32 --batch 4 --layers 6"
    [trace_replay]="$w/trace_replay tests/data/resnet50.csv --iterations $2 --scale 32"
    [mlp_train]="$w/mlp_train --iters $3 --batch 8 --in 1024 --hidden 1024 --out 1024"
    [multistream]="$w/multistream --iters $4 --elems 2097152"
    [vendor_gemm]="$w/vendor_gemm --iters $5 --dim 1024"
  )
}
order="transformer_train trace_replay mlp_train multistream vendor_gemm"
