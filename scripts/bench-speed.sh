#!/usr/bin/env bash
# Speed and memory against what users run, on the simulated CUDA: each workload, and
# trace_replay of real traces, three ways:
#   raw        no preload: one cudaMalloc/cudaFree per tensor (what
#              PYTORCH_NO_CUDA_MEMORY_CACHING=1 gives); every cudaFree waits for the device
#   caching    tests/baselines/libcaching.so, PyTorch's caching allocator modelled
#   planalloc  build/lib/libplanalloc.so, default options
# in two regimes: launch-bound (SIMCUDA_KERNEL_US=1: the host is the bottleneck) and
# device-bound (each kernel takes twice the host's time per launch measured in the
# launch-bound caching run: the device is the bottleneck, the host runs ahead).
# Prints one markdown table: wall time (median of 11 runs for the workloads, 5 for the
# traces; the three ways interleaved run by run), host waits (the driver's
# cuCtxSynchronize, cuStreamSynchronize, cuEventSynchronize and cuMemFree calls, from
# SIMCUDA_CALLS_FILE; the program's own included), peak device bytes (SIMCUDA_PEAK_FILE),
# each against the caching baseline; and planalloc's own host waits (its stats) and how
# many allocations its plan served.
# The simulator charges the driver's memory calls what an H100 is estimated to
# (tests/simcuda/cost.c, SIMCUDA_COSTS=h100, the default; its own VMM calls take longer on
# this machine). The real programs' allocation streams (tests/data/ev.*.log.xz, PyTorch on
# an H100) replayed by event_replay, 40 steps at REPLAY_SCALE (default 1: their real
# sizes), REPLAY_RUNS runs (default 5), both regimes, and without kernels (the allocator's host time alone: launch-bound
# only, no launches to time a device-bound one by); then, without kernels, the host time an
# event costs after the warm-up (160 steps less 40) and the first 40 steps' (--steady: that
# table alone).
# Usage: scripts/bench-speed.sh [--quick|--replays|--steady]   (--quick: the workloads only,
# one run each; --replays: the replayed streams only)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/scripts/common.sh"
runs=11 quick=0 replays=0 steady=0
[ "${1:-}" = --quick ] && runs=1 quick=1
[ "${1:-}" = --replays ] && replays=1
[ "${1:-}" = --steady ] && steady=1
build_targets mlp_train transformer_train multistream vendor_gemm trace_replay event_replay planalloc caching simcuda simcudart
export LD_LIBRARY_PATH=$root/build/simcuda
w=$root/build/workloads data=$root/../shared/data/idealloc
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

declare -A pre=([raw]="" [caching]="$root/build/baselines/libcaching.so" [planalloc]="$root/build/lib/libplanalloc.so")

# one MODE US CMD...: one run; "seconds host-waits peak planalloc-waits served" in $tmp/one
one() {
  local mode=$1 us=$2 start secs
  shift 2
  start=$(date +%s.%N)
  SIMCUDA_KERNEL_US=$us SIMCUDA_CALLS_FILE=$tmp/calls SIMCUDA_PEAK_FILE=$tmp/peak PLANALLOC_STATS=1 \
    LD_PRELOAD=${pre[$mode]} "$@" >"$tmp/out.$mode" 2>"$tmp/err" || { echo "$mode: $* failed: $(tail -2 "$tmp/err")" >&2; exit 1; }
  secs=$(elapsed "$start" 3)
  local waits
  waits=$(awk '$1 ~ /^cu(CtxSynchronize|StreamSynchronize|EventSynchronize|MemFree_v2)/ { s += $2 } END { print s + 0 }' "$tmp/calls")
  echo "$secs $waits $(cat "$tmp/peak") \
$(stats_row "$tmp/err" "host waits" || true) $(stats_row "$tmp/err" "served from the plan" || true)" >"$tmp/one"
}

# medians US CMD...: $runs runs of each mode, interleaved (the machine's drift falls on all
# three alike); the run with the median time of each in $tmp/median.MODE
medians() {
  local mode
  rm -f "$tmp"/runs.*
  for _ in $(seq "$runs"); do
    for mode in raw caching planalloc; do one $mode "$@" && cat "$tmp/one" >>"$tmp/runs.$mode"; done
  done
  for mode in raw caching planalloc; do sort -n "$tmp/runs.$mode" | sed -n "$(((runs + 1) / 2))p" >"$tmp/median.$mode"; done
}

launches() { awk '$1 ~ /^cuLaunch/ { s += $2 } END { print s + 0 }' "$tmp/calls"; }

# row LABEL CMD...: both regimes (REGIMES: launch only), three ways each, outputs compared
row() {
  local label=$1 us dev
  shift
  for regime in ${REGIMES:-launch device}; do
    if [ $regime = launch ]; then us=1; else us=$dev; fi
    medians "$us" "$@"
    if [ $regime = launch ]; then # the host's time per launch, caching: twice that per kernel (the
      # launch count from the last run's calls: every mode makes the program's launches alone)
      dev=$(awk -v t="$(cut -d' ' -f1 "$tmp/median.caching")" -v n="$(launches)" 'BEGIN { u = 2e6 * t / n; printf "%d", u < 1 ? 1 : u + 0.5 }')
    fi
    cmp -s "$tmp/out.raw" "$tmp/out.caching" && cmp -s "$tmp/out.raw" "$tmp/out.planalloc" || { echo "| $label | $regime | OUTPUT DIFFERS |"; continue; }
    read -r tr wr pr _ <"$tmp/median.raw"
    read -r tc wc pc _ <"$tmp/median.caching"
    read -r tp wp pp own served <"$tmp/median.planalloc"
    printf "| %s | %s (%s us) | %s | %s | %s | %s | **%s** | %s | %s | %s | %s | %s | %s | %s | %s | %s | **%s** | %s |\n" \
      "$label" "$regime" "$us" "$tr" "$tc" "$tp" "$(ratio "$tr" "$tc")" "$(ratio "$tp" "$tc")" "$(ratio "$tr" "$tp")" \
      "$wr" "$wc" "$wp" "${own:-0}" "$(mib "$pr")" "$(mib "$pc")" "$(mib "$pp")" "$(ratio "$pr" "$pc")" "$(ratio "$pp" "$pc")" \
      "${served:-0}"
  done
}

[ $steady = 1 ] || echo "| workload | regime (kernel time) | raw s | caching s | planalloc s | raw / caching | planalloc / caching | raw / planalloc | host waits raw | caching | planalloc | of them planalloc's own | peak MiB raw | caching | planalloc | raw / caching | planalloc / caching | served from the plan |"
[ $steady = 1 ] || echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
replay_rows() {
  local log sc=${REPLAY_SCALE:-1}
  runs=${REPLAY_RUNS:-5}
  for log in resnet50 gpt; do
    row "event_replay $log (40 steps, scale $sc)" "$w/event_replay" "$root/tests/data/ev.$log.log.xz" --steps 40 --scale "$sc"
    REGIMES=launch row "event_replay $log, no kernels (40 steps, scale $sc)" "$w/event_replay" \
      "$root/tests/data/ev.$log.log.xz" --steps 40 --scale "$sc" --kernels 0
  done
  steady_rows
}

# secs MODE STEPS LOG: the median of $runs runs' wall time, no kernels (the log unpacked once)
secs() {
  local start
  for _ in $(seq "$runs"); do
    start=$(date +%s.%N)
    SIMCUDA_KERNEL_US=1 LD_PRELOAD=${pre[$1]} "$w/event_replay" "$3" --steps "$2" --scale "${REPLAY_SCALE:-1}" --kernels 0 \
      >"$tmp/steady.out" 2>&1 || { echo "$1: event_replay $3 failed" >&2; exit 1; }
    elapsed "$start" 6
    echo
  done | sort -n | sed -n "$(((runs + 1) / 2))p"
}

# The host time an event costs once the warm-up is over, without kernels: a replay of 160
# steps less one of 40, over the events between, against the caching allocator's; and what
# the first 40 steps cost (warm-up included: planalloc's recording, first page maps and plan).
steady_rows() {
  echo
  echo "| stream (no kernels, scale ${REPLAY_SCALE:-1}) | caching us an event after 40 steps | planalloc | planalloc / caching | caching s, first 40 steps | planalloc | planalloc / caching |"
  echo "|---|---:|---:|---:|---:|---:|---:|"
  local log e40 e160 c40 c160 p40 p160
  for log in resnet50 gpt; do
    xz -dc "$root/tests/data/ev.$log.log.xz" >"$tmp/$log.log"
    e40=$("$w/event_replay" "$tmp/$log.log" --steps 40 --scale 64 --kernels 0 2>/dev/null | awk '/^final/ { print $4 }')
    e160=$("$w/event_replay" "$tmp/$log.log" --steps 160 --scale 64 --kernels 0 2>/dev/null | awk '/^final/ { print $4 }')
    c40=$(secs caching 40 "$tmp/$log.log") c160=$(secs caching 160 "$tmp/$log.log")
    p40=$(secs planalloc 40 "$tmp/$log.log") p160=$(secs planalloc 160 "$tmp/$log.log")
    awk -v l="$log" -v n="$((e160 - e40))" -v c40="$c40" -v c160="$c160" -v p40="$p40" -v p160="$p160" 'BEGIN {
      c = 1e6 * (c160 - c40) / n; p = 1e6 * (p160 - p40) / n
      printf "| %s | %.3f | %.3f | %.2f | %.3f | %.3f | %.2f |\n", l, c, p, p / c, c40, p40, p40 / c40 }'
  done
}
if [ $steady = 1 ]; then
  runs=${REPLAY_RUNS:-5}
  steady_rows
  exit 0
fi
if [ $replays = 1 ]; then
  replay_rows
  exit 0
fi
# shapes whose kernel bodies (the simulator runs them on the CPU) stay cheap beside the
# host's work, with a footprint of several pages
row "mlp_train" "$w/mlp_train" --iters 100 --batch 2 --in 1024 --hidden 1024 --out 64
row "transformer_train" "$w/transformer_train" --iters 40 --seq 128 --dim 16 --batch 2 --layers 4
row "multistream" "$w/multistream" --iters 100 --elems 1048576
row "vendor_gemm" "$w/vendor_gemm" --iters 160 --dim 192
[ $quick = 1 ] && exit 0
runs=5
for t in "$root/tests/data/resnet50.csv:4:20" "$data/iopddl/G_1.csv:8:20"; do
  IFS=: read -r file scale iters <<<"$t"
  [ -f "$file" ] || { echo "| $(basename "$file") | missing |"; continue; }
  row "trace_replay $(basename "$file" .csv) (scale $scale, $iters iterations)" "$w/trace_replay" "$file" --iterations "$iters" --scale "$scale" --sample 1
done
replay_rows
