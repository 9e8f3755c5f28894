#!/usr/bin/env bash
# The budget on the simulated CUDA (issue #25), device-bound (each kernel KERNEL_US of
# its stream's time, 200 by default, 1000 for the G_1 replay and 80000 for mlp_train: the
# host runs ahead of the device). Every workload
# and the real traces a replay can run, at 90/70/50/30 % of the peak without planalloc,
# over two links (SIMCUDA_COPY_GBPS, LINKS="2 5" GB/s by default, the preload planning
# at the same speed, PLANALLOC_LINK_GBPS): links the simulator can time on a 2-core
# machine, whose memmove moves 10-14 GB/s (a 25 GB/s link ran at the host's speed,
# simcuda says so at exit; such rows are marked "host link"). 5 GB/s under 200 us
# kernels is PCIe 4's 25 under 40 us ones: bytes to compute as on a GPU. Prints markdown:
#  1. per row: wall time over the unbudgeted run's (median of RUNS of those on the same
#     link, one budgeted run), MiB moved out, host waits (planalloc's, for copies) and the served phase's
#     share, outputs compared with the unbudgeted run; the served phase's MiB out per
#     iteration and its iteration time over the unbudgeted run's ("period time, served"),
#     each beside the model of it (planalloc-sim --cycle on the run's cycle.csv: the swap
#     schedule planned again and replayed); beside it planalloc-sim on the same
#     program's whole recording (PLANALLOC_MODE=record) at the same percentage of its own
#     peak and link, an op the unbudgeted iteration over its launches: the planned
#     policy's MiB out and slowdown; and the DTR
#     prototype's slowdowns at the nearest ratio where a model like it was measured
#     (../shared/notes/eviction-anchors.md §8 simulated h_DTR^eq, §9 measured on a GPU;
#     DTR recomputes where planalloc copies, so those are anchors for the choice only);
#     Then the forecast the preload said before its served phase (its model's slowdown),
#     the bandwidth bound of the served iteration over the unbudgeted one (max of compute
#     and the bytes each way over the link), the served iteration over that bound, and the
#     mapping calls (cuMemMap, cuMemSetAccess, cuMemUnmap, as the simulator counts them,
#     less each page's first map and opening) per page moved out or back (issue #39's targets);
#  2. per workload the floor: the lowest budget (bisection over percent of the peak, on
#     the faster link) at which the run completes with its output unchanged;
#  3. with --settings, the victim-score settings' effect (PLANALLOC_EVICT_*), median of 3.
# FLOORS=0 leaves the floors out (a bisection of 7 runs a workload).
# ONLY="NAME ..." runs those workloads alone (e.g. KERNEL_US=200 ONLY=trace_replay_G_1:
# G_1 with kernels too short for the 2-core host to keep up with its copies).
# Usage: scripts/bench-budget.sh [BUILD_DIR] [--settings]   (after scripts/test.sh)
build=${1:-build}
[ "${1:-}" = --settings ] && build=build
. "$(dirname "$0")/budget-common.sh"
workloads 8 6 6 6 3 # enough iterations for two timed served periods of each
cmd[trace_replay_G_1]="$w/trace_replay ../shared/data/idealloc/iopddl/G_1.csv --iterations 8 --scale 8"
[ -f ../shared/data/idealloc/iopddl/G_1.csv ] && order="$order trace_replay_G_1"
# mlp_train as deep as issue #25's floor asks (one launch's buffers a small share of the
# budget): 16 hidden layers of 512, each gradient applied and freed as it is made
cmd[mlp_train_deep]="$w/mlp_train --iters 12 --batch 32 --in 512 --hidden 512 --out 512 --layers 16"
order="$order mlp_train_deep"
order=${ONLY:-$order}
us=${KERNEL_US:-200} runs=${RUNS:-3} links=${LINKS:-2 5}
fast=${links##* }
# Where 200 us kernels leave the device waiting for this 2-core host (the G_1 replay moves
# 600-700 MiB a period by memmove, on the same two cores as the kernels' bodies), the
# workload's kernels are longer, so that every row is device-bound (KERNEL_US: all alike).
# A kernel holds its stream max(KERNEL_US, its body's time on this host) (simcuda): where
# bodies take longer than KERNEL_US, the device is the CPU running them. mlp_train's take
# 0.1-55 ms of it (the weight gradients 53-55, the updates 23-25: 1024 x 1024 x 8): at
# 200 us its wall was its bodies', and a budget's memmoves and planning on the same 2
# cores slowed them (1.17-1.30x at 50 %, 1.09x at 90 % where 14 ms of copies should cost
# 2 %), a cost a GPU's copy engines do not have. At 80 ms its kernels' time is the
# device's (at 30 ms, until the simulator held a long body's stream to its end, a
# budget's copies, which wait on events after those kernels, paid 25 ms a long body the
# unbudgeted run hid: its served iteration read 1.15-1.20x the bound, 1.04 since).
declare -A kus
[ -n "${KERNEL_US:-}" ] || kus[trace_replay_G_1]=1000 kus[mlp_train]=80000
kernel_us() { echo "${kus[$1]:-$us}"; }
export SIMCUDA_KERNEL_US=$us

# one NAME BUDGET GBPS: a run; "seconds rc" in $tmp/one, its output $tmp/out, stats $tmp/err
one() {
  local start rc
  rm -rf "$tmp/d" && mkdir -p "$tmp/d"
  start=$(date +%s.%N)
  SIMCUDA_COPY_GBPS=$3 PLANALLOC_LINK_GBPS=$3 SIMCUDA_PEAK_FILE=$tmp/peak SIMCUDA_CALLS_FILE=$tmp/calls PLANALLOC_STATS=1 PLANALLOC_BUDGET=$2 LD_PRELOAD=$pre \
    PLANALLOC_DUMP=$([ "$2" = 0 ] || echo "$tmp/d") ${cmd[$1]} >"$tmp/out" 2>"$tmp/err"
  rc=$?
  echo "$(elapsed "$start" 3) $rc" >"$tmp/one"
}

# unbudgeted NAME GBPS: the median wall time of $runs runs on that link (a program's own
# copies take it: multistream moves 8 MiB each way an iteration, and against a base timed
# at 25 GB/s its rows read 2.1-2.9x where the budget cost far less); output in $tmp/ref,
# the median served period in $tmp/base_period.GBPS
unbudgeted() {
  for _ in $(seq "$runs"); do
    one "$1" 0 "$2" && cut -d' ' -f1 "$tmp/one"
    stats_row "$tmp/err" "period time, served" >>"$tmp/periods"
  done | sort -n | sed -n "$(((runs + 1) / 2))p"
  cp "$tmp/out" "$tmp/ref"
  sort -n "$tmp/periods" | sed -n "$(((runs + 1) / 2))p" >"$tmp/base_period.$2" && rm -f "$tmp/periods"
}

# bound GBPS: the served period's bandwidth bound over the unbudgeted period, max(compute,
# bytes out / link, bytes back / link) (a copy stream each way), and the served period over
# it: "bound period_over_bound" (— where no period was served)
bound() {
  local periods out in period base
  periods=$(stats_row "$tmp/err" "periods served") period=$(stats_row "$tmp/err" "period time, served")
  out=$(stats_row "$tmp/err" "bytes moved to host, served") in=$(stats_row "$tmp/err" "bytes brought back, served")
  base=$(cat "$tmp/base_period" 2>/dev/null)
  [ "${periods:-0}" -gt 0 ] && [ "${base:-0}" -gt 0 ] || { echo "— —"; return; }
  awk -v o="$out" -v i="$in" -v n="$periods" -v g="$1" -v b="$base" -v p="$period" 'BEGIN {
    m = (o > i ? o : i) / n / (g * 1000); t = m > b ? m : b; printf "%.2f %.2f\n", t / b, p / t }'
}

# calls: the mapping calls (cuMemMap, cuMemSetAccess, cuMemUnmap, the simulator's count)
# less each page's first map and opening (planalloc's "mapping calls, first": the issue's
# "first mapping of each page excluded"; until 2026-11-29 each handle's first map and
# access, 2 x cuMemCreate, where a budget's pages outnumber its handles), per page moved
# out or back (— if none)
calls() {
  local moved first
  moved=$(($(stats_row "$tmp/err" "pages moved to host") + $(stats_row "$tmp/err" "pages brought back")))
  first=$(stats_row "$tmp/err" "mapping calls, first")
  [ "$moved" -gt 0 ] || { echo "—"; return; }
  awk -v m="$moved" -v f="${first:-0}" '$1 == "cuMemMap" || $1 == "cuMemSetAccess" || $1 == "cuMemUnmap" { c += $2 }
    END { printf "%.2f\n", (c - f) / m }' "$tmp/calls"
}

# run_bound SECS BASE GBPS: the whole run's bandwidth bound over the unbudgeted run's
# wall (max of that wall and the run's bytes each way over the link), and the run's wall
# over that bound: "bound wall_over_bound"
run_bound() {
  awk -v o="$(stats_row "$tmp/err" "bytes moved to host")" -v i="$(stats_row "$tmp/err" "bytes brought back")" \
    -v g="$3" -v b="$2" -v w="$1" 'BEGIN { m = (o > i ? o : i) / (g * 1e9); t = m > b ? m : b; printf "%.2f %.2f\n", t / b, w / t }'
}

# forecast: the slowdown the preload predicted before its served phase (— if none)
forecast() { sed -nE 's/^planalloc: budget [0-9.]+ MiB: predicted ([0-9.]+)x .*/\1/p' "$tmp/err" | tail -1 | grep . || echo "—"; }

# served: the served phase of the run just made against the model of it (planalloc-sim
# --cycle on its cycle.csv): "MiB_per_period model_MiB slowdown model_slowdown" (— where none)
served() {
  local periods bytes period base m
  periods=$(stats_row "$tmp/err" "periods served") bytes=$(stats_row "$tmp/err" "bytes moved to host, served")
  period=$(stats_row "$tmp/err" "period time, served") base=$(cat "$tmp/base_period" 2>/dev/null)
  m=$(build/bin/planalloc-sim --cycle "$tmp/d/"*.cycle.csv 2>/dev/null | awk -F'|' 'NR == 3 { gsub(/ /, ""); print $9, $12 }')
  [ -n "$m" ] || m="— —"
  if [ "${periods:-0}" -gt 0 ] && [ "${base:-0}" != 0 ]; then echo "$(mib $((bytes / periods))) ${m% *} $(ratio "${period:-0}" "${base:-1}") ${m#* }"
  else echo "— ${m% *} — ${m#* }"; fi
}

completes() { one "$1" "$2" "$fast"; [ "$(cut -d' ' -f2 "$tmp/one")" = 0 ] && cmp -s "$tmp/out" "$tmp/ref"; }

# floor NAME PEAK: the lowest percent (1 .. 100) at which NAME completes, by bisection
floor_pct() {
  local lo=0 hi=100 mid
  while [ $((hi - lo)) -gt 1 ]; do
    mid=$(((lo + hi) / 2))
    if completes "$1" $(($2 * mid / 100)); then hi=$mid; else lo=$mid; fi
  done
  echo $hi
}

# op_us NAME: an op's time for the model, the unbudgeted served period over its launches
# (from the row's cycle.csv), so that the host's own time between launches (mlp_train
# makes each batch on the host) counts as time the copies may overlap, as it does in the
# run; where no swap schedule served, the unbudgeted run's wall over the recording's
# launches. A fixed --op-us of 200 read mlp_train's kernels of 10 ms as 200 us and
# predicted 5-11x where the run took 1.17-1.30x.
op_us() {
  local n all
  n=$(sed -n '2s/^launches,\([0-9]*\),.*/\1/p' "$tmp/d/"*.cycle.csv 2>/dev/null | head -1)
  all=$(awk -F, 'NR > 2 && $1 + 1 > n { n = $1 + 1 } END { print n + 0 }' "$tmp/$1/"*.access.csv 2>/dev/null)
  awk -v b="$(cat "$tmp/base_period" 2>/dev/null)" -v n="${n:-0}" -v w="$base" -v a="${all:-0}" -v k="$SIMCUDA_KERNEL_US" \
    'BEGIN { printf "%.1f\n", (b > 0 && n > 0) ? b / n : (w > 0 && a > 0) ? w * 1e6 / a : k }'
}

# sim NAME PCT GBPS: planalloc-sim's planned policy on NAME's whole recording: "out_MiB slowdown"
sim() {
  build/bin/planalloc-sim --budget "$2" --gbps "$3" --op-us "$(op_us "$1")" --policy planned \
    --dump "$tmp/$1/"*.trace.csv "$tmp/$1/"*.access.csv 2>/dev/null |
    awk -F'|' 'NR == 1 { for (i = 1; i <= NF; i++) { if ($i ~ /out MiB/) o = i; if ($i ~ /slowdown/) s = i } }
               NR > 2 { gsub(/ /, "", $o); gsub(/ /, "", $s); print $o, $s }'
}

# dtr NAME PCT: the DTR prototype's slowdowns for a model like NAME (eviction-anchors.md)
dtr() {
  case "$1:$2" in
  transformer_train:90) echo "sim 1.03 (0.7); GPU 1.12 (0.81)" ;;
  transformer_train:70) echo "sim 1.03; GPU 1.15 (0.61)" ;;
  transformer_train:50) echo "sim 1.06; GPU 1.19 (0.41)" ;;
  transformer_train:30) echo "sim 1.12; GPU 1.60 (0.20)" ;;
  trace_replay:90) echo "ResNet-32 sim 1.05 (0.7); ResNet-1202 GPU 1.28 (0.90)" ;;
  trace_replay:70) echo "sim 1.05; GPU 1.35 (0.67)" ;;
  trace_replay:50) echo "sim 1.11; GPU 1.42 (0.45)" ;;
  trace_replay:30) echo "sim 1.18; GPU 1.47 (0.22)" ;;
  *) echo "—" ;;
  esac
}

settings_table() {
  echo "| workload | budget | setting | out MiB (median of 3) | back MiB | victims |"
  echo "|---|---:|---|---:|---:|---:|"
  for name in transformer_train trace_replay mlp_train; do
    pct=50
    [ "$name" = mlp_train ] && pct=70
    SIMCUDA_PEAK_FILE=$tmp/p0 ${cmd[$name]} >/dev/null 2>&1
    b=$(($(cat "$tmp/p0") * pct / 100))
    for setting in "defaults" "PLANALLOC_EVICT_FRAG=on" "PLANALLOC_EVICT_REPEAT=0" "PLANALLOC_EVICT_REPEAT=100" \
                   "PLANALLOC_EVICT_SAMPLE=off"; do
      env_set=$([ "$setting" = defaults ] || echo "$setting")
      for _ in 1 2 3; do
        env $env_set PLANALLOC_STATS=1 PLANALLOC_BUDGET=$b LD_PRELOAD=$pre ${cmd[$name]} >/dev/null 2>"$tmp/err"
        echo "$(stats_row "$tmp/err" "bytes moved to host") $(stats_row "$tmp/err" "bytes brought back") $(stats_row "$tmp/err" evictions)"
      done | sort -n | sed -n 2p >"$tmp/median"
      read -r out back victims <"$tmp/median"
      echo "| $name | $pct % | $setting | $(mib "$out") | $(mib "$back") | $victims |"
    done
  done
}
for a in "$@"; do [ "$a" = --settings ] && { settings_table; exit 0; }; done

echo "Kernels $us us each, but where the kernel us column says; wall: one budgeted run over the median of $runs unbudgeted ones on the same link."
echo
echo "| workload | kernel us | budget | link GB/s | budget MiB | result | wall / unbudgeted | out MiB | host waits | of them served phase (pacing waits) | served MiB / iteration (model) | served iteration / unbudgeted (model) | forecast | bandwidth bound / unbudgeted | served iteration / bound | mapping calls / page moved | sim out MiB | sim slowdown | DTR prototype slowdown |"
echo "|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
declare -A peak floor base_of
for name in $order; do
  export SIMCUDA_KERNEL_US=$(kernel_us "$name")
  SIMCUDA_PEAK_FILE=$tmp/p0 ${cmd[$name]} >/dev/null 2>&1
  peak[$name]=$(cat "$tmp/p0")
  mkdir -p "$tmp/$name"
  PLANALLOC_MODE=record PLANALLOC_DUMP=$tmp/$name LD_PRELOAD=$pre ${cmd[$name]} >/dev/null 2>&1
  for gbps in $links; do base_of[$name:$gbps]=$(unbudgeted "$name" "$gbps"); done
  for pct in 90 70 50 30; do
    b=$((peak[$name] * pct / 100))
    for gbps in $links; do
      base=${base_of[$name:$gbps]}
      cp "$tmp/base_period.$gbps" "$tmp/base_period"
      one "$name" "$b" "$gbps"
      read -r secs rc <"$tmp/one"
      result=ok
      [ "$rc" = 0 ] || result="exit $rc"
      [ "$rc" = 0 ] && ! cmp -s "$tmp/out" "$tmp/ref" && result="OUTPUT DIFFERS"
      grep -q "^simcuda: warning: .* the link was the host's" "$tmp/err" && result="$result, host link"
      read -r sout sslow <<<"$(sim "$name" "$pct" "$gbps")"
      waits=$(stats_row "$tmp/err" "host waits")
      served=$(stats_row "$tmp/err" "host waits, served phase") pace=$(stats_row "$tmp/err" "pacing waits")
      read -r pmib mmib pslow mslow <<<"$(served)"
      read -r bnd over <<<"$(bound "$gbps")"
      echo "| $name | $SIMCUDA_KERNEL_US | $pct % | $gbps | $(mib "$b") | $result | $(ratio "$secs" "$base") | $(mib "$(stats_row "$tmp/err" "bytes moved to host")") |" \
           "${waits:-0} | ${served:-0} (${pace:-0}) | $pmib ($mmib) | $pslow ($mslow) | $(forecast) | $bnd | $over | $(calls) | ${sout:-—} | ${sslow:-—} | $(dtr "$name" "$pct") |"
    done
  done
  [ "${FLOORS:-1}" = 0 ] || floor[$name]=$(floor_pct "$name" "${peak[$name]}")
done

# The reactive path alone (PLANALLOC_SWAP_SCHEDULE=off: the victims chosen at need, as in
# the recording and after a divergence) at 50 % on the fast link, against the whole run's
# bandwidth bound (issue #39: wall <= 1.5x it)
echo
echo "| workload | budget | link GB/s | schedule | result | wall / unbudgeted | run bound / unbudgeted | wall / run bound | out MiB | back MiB | host waits | mapping calls / page moved |"
echo "|---|---:|---:|---|---|---:|---:|---:|---:|---:|---:|---:|"
for name in $order; do
  export SIMCUDA_KERNEL_US=$(kernel_us "$name")
  SIMCUDA_PEAK_FILE=$tmp/p0 ${cmd[$name]} >"$tmp/ref" 2>/dev/null
  for sched in on off; do
    PLANALLOC_SWAP_SCHEDULE=$sched one "$name" $((peak[$name] / 2)) "$fast"
    read -r secs rc <"$tmp/one"
    result=ok
    [ "$rc" = 0 ] || result="exit $rc"
    [ "$rc" = 0 ] && ! cmp -s "$tmp/out" "$tmp/ref" && result="OUTPUT DIFFERS"
    read -r rb over <<<"$(run_bound "$secs" "${base_of[$name:$fast]}" "$fast")"
    echo "| $name | 50 % | $fast | $sched | $result | $(ratio "$secs" "${base_of[$name:$fast]}") | $rb | $over |" \
         "$(mib "$(stats_row "$tmp/err" "bytes moved to host")") | $(mib "$(stats_row "$tmp/err" "bytes brought back")") | $(stats_row "$tmp/err" "host waits") | $(calls) |"
  done
done
[ "${FLOORS:-1}" = 0 ] && exit 0

echo
echo "| workload | peak MiB (no planalloc) | floor, % of peak ($fast GB/s) | floor MiB |"
echo "|---|---:|---:|---:|"
for name in $order; do
  echo "| $name | $(mib "${peak[$name]}") | ${floor[$name]} % | $(mib $((peak[$name] * floor[$name] / 100))) |"
done
