#!/usr/bin/env bash
# The GPU checks of issues #4 and #5 in one command, for a lent GPU machine where nothing
# can be fetched. Builds planalloc (Release) and the nvcc workloads, then
#  workloads  each #3 workload at its >= 256 MiB size for 24 iterations: without planalloc,
#             with it, and with PLANALLOC_BUDGET at half of what planalloc mapped; outputs
#             compared byte for byte; device memory read from outside by
#             scripts/gpu-meter.py (cuMemGetInfo); planalloc's figures from its stats dump.
#  torch      tests/gpu/torch_train.py (a GPT-style model, then ResNet-50) with PyTorch's
#             caching allocator, with its expandable segments
#             (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True), with the cudaMallocAsync
#             backend, with one cudaMalloc per tensor (PYTORCH_NO_CUDA_MEMORY_CACHING=1)
#             without and with planalloc, and with planalloc at half of the caching
#             allocator's reserved peak: losses and final parameters compared bit for
#             bit, device peak, median step time and its ratio to the caching
#             allocator's; planalloc's allocations served
#             (of all, and of those after the warm-up), divergent periods, host waits,
#             page maps.
#  sanitizer  (asked for by name) compute-sanitizer's memcheck over two small workloads
#             with planalloc, plain and at half its peak: an access planalloc let reach
#             an unmapped or evicted page is an error there.
# Writes OUTDIR/report.md (the tables of preload/GPU.md and dtr/GPU.md), row by row, and
# OUTDIR/logs.tar.gz (every run's output, stderr and dumps; updated after each part):
# two files, so OUTDIR can be the device tool's $OUT. A run that fails is a row that says
# so and the script goes on: one lease should answer as much as it can. Each run is cut
# at GPU_CHECK_RUN_S seconds (120). Preloaded runs search for a plan for
# GPU_CHECK_PLAN_TIME seconds (2, not the default 10: these runs last seconds on a GPU,
# and best fit serves until the search ends). A lease with less time picks: GPU_CHECK_MODELS
# (default "gpt resnet50", in that order), GPU_CHECK_ROWS (the optional rows, default
# "expandable async nocache"; empty: none), GPU_CHECK_VARIANTS (more budget rows at the same budget,
# e.g. "keep_off:PLANALLOC_KEEP_MAPPED=off noschedule:PLANALLOC_SWAP_SCHEDULE=off"), GPU_CHECK_SKIP
# ("planalloc": no row without a budget).
# Where the machine lacks libunwind or uthash, their .debs come from .gpu-deps (fetch them
# here with scripts/gpu-deps.sh, name .gpu-deps in the device call's carry).
# --sim: the workloads on the simulated CUDA, its peak standing in for the meter's (how
# this script is tested without a GPU); --quick: small sizes; --build DIR (default
# build-gpu; configured here unless it already is); --torch-cpu: the PyTorch loop on the
# CPU (no device memory to compare; checks this script's own plumbing).
# Usage: scripts/gpu-check.sh [--sim] [--quick] [--build DIR] [--torch-cpu] OUTDIR [workloads] [torch] [sanitizer]
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
. "$root/scripts/common.sh"
sim=0 quick=0 build=$root/build-gpu torch_device=cuda
while [ $# -gt 0 ]; do
  case $1 in
    --sim) sim=1 ;;
    --quick) quick=1 ;;
    --build) build=$2; shift ;;
    --torch-cpu) torch_device=cpu ;;
    *) break ;;
  esac
  shift
done
[ $# -ge 1 ] || { sed -n 's/^# Usage: /usage: /p' "$0" >&2; exit 2; }
mkdir -p "$1" "$build/gpu-check.logs" && out=$(cd "$1" && pwd) logs=$(cd "$build/gpu-check.logs" && pwd)
shift
parts=${*:-workloads torch}
lib=$build/lib/libplanalloc.so plan_time=${GPU_CHECK_PLAN_TIME:-2}
report=$out/report.md
say() { echo "$@" | tee -a "$report"; }
secs() { awk -v s="$1" -v e="$2" 'BEGIN { printf "%.2f", e - s }'; }

# Headers and library the preload builds against, unpacked from carried .debs if absent.
deps() {
  printf '#include <libunwind.h>\n#include <uthash.h>\nint main(void) { return 0; }\n' >"$build/deps.c"
  cc "$build/deps.c" -lunwind -o "$build/deps.out" 2>/dev/null && return
  ls "$root"/.gpu-deps/*.deb >/dev/null 2>&1 || { say "missing libunwind/uthash and no .gpu-deps"; return 1; }
  for d in "$root"/.gpu-deps/*.deb; do dpkg -x "$d" "$build/deps"; done
  export CMAKE_PREFIX_PATH=$build/deps/usr
  export LD_LIBRARY_PATH=$build/deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
}

build_all() {
  local targets=(planalloc)
  [ $sim = 1 ] && targets+=(simcuda simcudart trace_replay mlp_train transformer_train multistream vendor_gemm)
  mkdir -p "$build" && deps || return 1
  [ -f "$build/CMakeCache.txt" ] ||
    cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DPLANALLOC_WERROR=OFF -DPLANALLOC_SHADOW=OFF \
      >"$logs/build.log" 2>&1 &&
    cmake --build "$build" -j "$(nproc)" --target "${targets[@]}" >>"$logs/build.log" 2>&1 ||
    { say "build failed: $(tail -3 "$logs/build.log")"; return 1; }
  if [ $sim = 1 ]; then
    wdir=$build/workloads
    export LD_LIBRARY_PATH=$build/simcuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} SIMCUDA_STRICT=1
  else
    wdir=$build/workloads-nvcc
    "$root/scripts/build-workloads-nvcc.sh" "$wdir" >>"$logs/build.log" 2>&1 || { say "nvcc build failed"; return 1; }
  fi
}

# measure TAG [VAR=VALUE...] CMD...: one run, its stdout, stderr, device peak and seconds
# in logs/TAG.{out,err,peak,secs}; returns the run's status.
measure() {
  local tag=$1 start rc
  shift
  rm -f "$logs/$tag".{out,err,peak,secs}
  start=$(date +%s.%N)
  if [ $sim = 1 ]; then
    env SIMCUDA_PEAK_FILE="$logs/$tag.peak" "$@" >"$logs/$tag.out" 2>"$logs/$tag.err"
    rc=$?
    [ -f "$logs/$tag.peak" ] && echo "peak_bytes $(cat "$logs/$tag.peak")" >"$logs/$tag.peak"
  else
    timeout "${GPU_CHECK_RUN_S:-120}" python3 "$root/scripts/gpu-meter.py" --out "$logs/$tag.peak" -- \
      env "$@" >"$logs/$tag.out" 2>"$logs/$tag.err"
    rc=$?
  fi
  secs "$start" "$(date +%s.%N)" >"$logs/$tag.secs"
  return $rc
}
peak() { awk '{ print $2 }' "$logs/$1.peak" 2>/dev/null; }
stats() { ls "$logs/$1.dump"/*.stats.json 2>/dev/null | head -1; }
# preloaded TAG [VAR=VALUE...] CMD...: measure with planalloc, its stats and dumps kept
preloaded() {
  local tag=$1
  shift
  rm -rf "$logs/$tag.dump" && mkdir -p "$logs/$tag.dump"
  measure "$tag" PLANALLOC_STATS=1 PLANALLOC_PLAN_TIME="$plan_time" PLANALLOC_DUMP="$logs/$tag.dump" LD_PRELOAD="$lib" "$@"
}
same() { cmp -s <(sed -E "$2" "$logs/$1.out") <(sed -E "$2" "$logs/$3.out") && echo identical || echo DIFFER; }
# status RC RESULT TAG: the result, or how the run ended: planalloc's error line (a clean
# failure, e.g. a budget below what one launch needs) or the run's last words
status() {
  local why
  [ "$1" = 0 ] && { echo "$2"; return; }
  why=$(grep -m1 '^planalloc: error: ' "$logs/$3.err")
  [ -n "$why" ] && echo "stopped (exit $1): ${why#planalloc: error: }" || echo "FAILED (exit $1): $(tail -1 "$logs/$3.err")"
}

declare -A args
workload_sizes() {
  if [ $quick = 1 ]; then
    args=([multistream]="--iters 8 --elems 2097152" [mlp_train]="--iters 8 --batch 8 --in 1024 --hidden 1024 --out 1024"
      [transformer_train]="--iters 8 --layers 2 --seq 256 --dim 32 --batch 4" [vendor_gemm]="--iters 6 --dim 512"
      [trace_replay]="$root/tests/data/resnet50.csv --iterations 8 --scale 32")
  else
    args=([multistream]="--iters 24 --elems 24000000" [mlp_train]="--iters 24 --batch 8 --in 4096 --hidden 8192 --out 1024"
      [transformer_train]="--iters 24 --layers 3 --seq 1024 --dim 32 --batch 16" [vendor_gemm]="--iters 24 --dim 3700"
      [trace_replay]="$root/tests/data/resnet50.csv --iterations 24 --scale 4")
  fi
}

workload_row() {
  local w=$1 prog=$wdir/$1 rc0 rc1 rc2 j jb budget a
  read -r -a a <<<"${args[$w]}"
  measure "$w.plain" "$prog" "${a[@]}"; rc0=$?
  preloaded "$w.planalloc" "$prog" "${a[@]}"; rc1=$?
  j=$(stats "$w.planalloc")
  budget=$(( $(json_field "$j" device_peak_bytes) / 2 ))
  [ "$budget" -gt 0 ] || budget=1
  preloaded "$w.budget" PLANALLOC_BUDGET=$budget "$prog" "${a[@]}"; rc2=$?
  jb=$(stats "$w.budget")
  printf '| %s | %s | %s | %s | %s | %s | %s | %s / %s | %s | %s | %s | %s | %s |\n' "$w" \
    "$(status $rc1 "$(same "$w.plain" '' "$w.planalloc")" "$w.planalloc")" \
    "$(mib "$(peak "$w.plain")")" "$(mib "$(peak "$w.planalloc")")" "$(mib "$(json_field "$j" device_peak_bytes)")" \
    "$(mib "$(bound_bytes "$j")")" \
    "$(cat "$logs/$w.plain.secs") / $(cat "$logs/$w.planalloc.secs")" \
    "$(json_field "$j" served)" "$(json_field "$j" allocations)" \
    "$(mib "$budget")" "$(status $rc2 "$(same "$w.plain" '' "$w.budget")" "$w.budget")" \
    "$(mib "$(peak "$w.budget")")" "$(mib "$(json_field "$jb" bytes_out)")" "$(cat "$logs/$w.budget.secs")" | tee -a "$report"
  [ $rc0 = 0 ] || say "  $w without planalloc failed ($rc0): $(tail -1 "$logs/$w.plain.err")"
}

workloads() {
  workload_sizes
  say ""
  say "### nvcc workloads$([ $sim = 1 ] && echo ' (on the simulated CUDA)')"
  say ""
  say "| workload | results with planalloc | device peak without, MiB | with, MiB | planalloc mapped, MiB | bound, MiB | seconds without / with | served / allocations | budget, MiB | results under it | device peak, MiB | moved to host, MiB | seconds |"
  say "|---|---|---:|---:|---:|---:|---|---|---:|---|---:|---:|---:|"
  for w in multistream mlp_train transformer_train vendor_gemm trace_replay; do workload_row "$w"; done
}

sanitizer_part() {
  local w budget j rc b a quick=1 # the small sizes for this part only
  command -v compute-sanitizer >/dev/null || { say ""; say "sanitizer: no compute-sanitizer here, skipped"; return 0; }
  workload_sizes
  say ""
  say "### compute-sanitizer memcheck with planalloc"
  say ""
  say "| workload | budget, MiB | memcheck | results |"
  say "|---|---:|---|---|"
  for w in mlp_train trace_replay; do
    read -r -a a <<<"${args[$w]}"
    measure "$w.plain" "$wdir/$w" "${a[@]}"
    preloaded "$w.planalloc" "$wdir/$w" "${a[@]}"
    j=$(stats "$w.planalloc") budget=$(( $(json_field "$j" device_peak_bytes) / 2 ))
    for b in 0 "$budget"; do
      preloaded "$w.memcheck$b" PLANALLOC_BUDGET="$b" compute-sanitizer --tool memcheck --error-exitcode 9 \
        --print-limit 20 "$wdir/$w" "${a[@]}"
      rc=$?
      say "| $w | $(mib "$b") | $(grep -m1 -E 'ERROR SUMMARY' "$logs/$w.memcheck$b.out" "$logs/$w.memcheck$b.err" | sed 's/.*ERROR SUMMARY: //') | $(status $rc "$(same "$w.plain" '/^=========/d' "$w.memcheck$b")" "$w.memcheck$b") |"
    done
  done
}

# torch_row MODEL TAG RC: one allocator's row, against the caching allocator's run
torch_row() {
  local model=$1 tag=torch.$1.$2 rc=$3 ref=torch.$1.caching j f result ms ref_ms
  j=$(stats "$tag") f=$(grep '^final ' "$logs/$tag.out")
  result=$(same "$ref" 's/ ms [0-9.]+//; s/ median_ms .*//' "$tag")
  [ "$tag" = "$ref" ] && result="(the reference)"
  ms=$(echo "$f" | awk '{ print $5 }') ref_ms=$(grep '^final ' "$logs/$ref.out" | awk '{ print $5 }')
  printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$2" "$(status "$rc" "$result" "$tag")" \
    "$(mib "$(peak "$tag")")" "$(mib "$(echo "$f" | awk '{ print $7 }')")" "$ms" \
    "$(awk -v a="$ms" -v b="$ref_ms" 'BEGIN { if (a > 0 && b > 0) printf "%.2f", a / b }')" \
    "$([ -n "$j" ] && echo "$(mib "$(json_field "$j" device_peak_bytes)") mapped, $(json_field "$j" served)/$(json_field "$j" allocations) served ($(json_field "$j" since_served) after the warm-up), $(json_field "$j" divergent_periods) divergent periods, $(json_field "$j" host_waits) host waits, $(json_field "$j" page_maps) page maps, $(mib "$(json_field "$j" bytes_out)") MiB out; served phase: period $(json_field "$j" served_period_us) us, host time in launches $(json_field "$j" served_launch_us) us, in the hook $(json_field "$j" served_hook_us) us, in mapping calls $(json_field "$j" served_map_us) us (births $(json_field "$j" served_birth_us), after launches $(json_field "$j" served_done_us))")" |
    tee -a "$report"
}

# row NAME: whether GPU_CHECK_ROWS (default all) asks for the optional row NAME (expandable,
# async, nocache); a lease that measured them once can spend its minutes elsewhere
row() { [[ " ${GPU_CHECK_ROWS-expandable async nocache} " == *" $1 "* ]]; }
# skipped NAME: GPU_CHECK_SKIP names a row otherwise always run (planalloc: no budget; the
# budget then comes from the caching allocator's figure alone)
skipped() { [[ " ${GPU_CHECK_SKIP:-} " == *" $1 "* ]]; }

# torch_model MODEL: the training loop with PyTorch's caching allocator, with its
# expandable segments and with the cudaMallocAsync backend, with one cudaMalloc per tensor
# (PYTORCH_NO_CUDA_MEMORY_CACHING=1) without and with planalloc, and with planalloc at
# half of the caching allocator's reserved peak
torch_model() {
  local model=$1 train=("$root/tests/gpu/torch_train.py" --model "$1" --device "$torch_device") rc j
  if [ $quick = 1 ]; then
    train+=(--steps 12 --batch 2)
    [ "$model" = gpt ] && train+=(--seq 64 --dim 128 --layers 2 --heads 4 --vocab 512) || train+=(--image 64 --classes 10)
  fi
  say ""
  say "### PyTorch training loop, $model ($(python3 -c "import torch; print(torch.__version__, '$torch_device' == 'cuda' and torch.cuda.get_device_name() or 'cpu')"))"
  say ""
  say "| allocator | losses and parameters vs caching | device peak, MiB | torch reserved peak, MiB | median step, ms | step / caching | planalloc |"
  say "|---|---|---:|---:|---:|---:|---|"
  measure "torch.$model.caching" python3 "${train[@]}"; torch_row "$model" caching $?
  # what users pick instead of a new allocator: pages mapped on demand, and the driver's pool
  if row expandable; then
    measure "torch.$model.expandable" PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True python3 "${train[@]}"
    torch_row "$model" expandable $?
  fi
  if row async; then
    measure "torch.$model.async" PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync python3 "${train[@]}"
    torch_row "$model" async $?
  fi
  row nocache && { measure "torch.$model.nocache" PYTORCH_NO_CUDA_MEMORY_CACHING=1 python3 "${train[@]}"; torch_row "$model" nocache $?; }
  if ! skipped planalloc; then
    preloaded "torch.$model.planalloc" PYTORCH_NO_CUDA_MEMORY_CACHING=1 python3 "${train[@]}"; rc=$?
    torch_row "$model" planalloc $rc
  fi
  # issue #39's budget: half of what the caching allocator reserved at its peak (half of
  # planalloc's mapped peak where that run left no figure)
  local budget v
  budget=$(( $(grep '^final ' "$logs/torch.$model.caching.out" | awk '{ print $7 + 0 }') / 2 ))
  j=$(skipped planalloc || stats "torch.$model.planalloc")
  [ "$budget" -gt 0 ] || budget=$(( $(json_field "$j" device_peak_bytes) / 2 ))
  [ "$budget" -gt 0 ] || budget=1
  preloaded "torch.$model.budget" PLANALLOC_BUDGET=$budget PYTORCH_NO_CUDA_MEMORY_CACHING=1 python3 "${train[@]}"
  torch_row "$model" budget $?
  # GPU_CHECK_VARIANTS="TAG:VAR=VALUE[,VAR=VALUE]...": more budget rows, the same budget
  for v in ${GPU_CHECK_VARIANTS:-}; do
    preloaded "torch.$model.budget-${v%%:*}" PLANALLOC_BUDGET=$budget PYTORCH_NO_CUDA_MEMORY_CACHING=1 \
      $(echo "${v#*:}" | tr , ' ') python3 "${train[@]}"
    torch_row "$model" "budget-${v%%:*}" $?
  done
  say ""
  say "budget row: PLANALLOC_BUDGET=$budget ($(mib "$budget") MiB)"
}

torch_part() {
  python3 -c "import torch, sys; sys.exit('$torch_device' == 'cuda' and not torch.cuda.is_available())" 2>/dev/null ||
    { say ""; say "torch: no PyTorch with a GPU here, skipped"; return 0; }
  # the archive after each model, so that a lease cut short still brings the first back
  local m
  for m in ${GPU_CHECK_MODELS:-gpt resnet50}; do
    torch_model "$m"
    tar -czf "$out/logs.tar.gz" -C "$logs/.." "$(basename "$logs")"
  done
}

: >"$report"
say "## gpu-check ($(date -u +%F), $(git -C "$root" rev-parse --short HEAD 2>/dev/null), $( [ $sim = 1 ] && echo simulated CUDA || nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null), PLANALLOC_PLAN_TIME=$plan_time)"
build_all || exit 1
for part in $parts; do
  case $part in
    workloads) workloads ;;
    torch) torch_part ;;
    sanitizer) sanitizer_part ;;
    *) say "unknown part '$part' (workloads, torch, sanitizer)"; exit 2 ;;
  esac
  tar -czf "$out/logs.tar.gz" -C "$logs/.." "$(basename "$logs")"
done
