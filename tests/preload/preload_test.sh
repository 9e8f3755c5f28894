#!/usr/bin/env bash
# The preload on the simulated CUDA. Usage: preload_test.sh CASE BUILD_DIR SOURCE_DIR
#   workloads  every workload: output identical with and without the preload, no launch
#              into dead memory (SIMCUDA_STRICT), and the plan served where one exists
#   peak       trace_replay of resnet50 and G_1, multistream (each >= 256 MiB): simulator peak <= 1.05 x
#              and served-phase peak <= 1.01 x (iteration max-live + persistent), all
#              from the preload's own stats dump; the served phase maps no page beyond
#              those the plan and the persistent bytes fill together (one range, shared
#              pages); no page mapped in the steady state; a plan left for a stretch
#              of other buffers each window: its idle pages serve them (peak <= 1.05 x)
#   off        PLANALLOC_MODE=off: pure pass-through (same output, same peak, no stats)
#   env        bad values and unknown keys: one warning each, defaults, same output; the
#              verdict at exit: where the dumps are, PyTorch's caching allocator said to be
#              on where libtorch_cuda is loaded without PYTORCH_NO_CUDA_MEMORY_CACHING=1, no
#              allocation said (python3 and ctypes: cudaFree(NULL) alone)
#   dumps      the dumps, versioned; each callsite's frames lead to a call of cudaMalloc
#              in the program (module and offset checked with objdump); the trace re-plans with planalloc-plan and, with
#              the access trace, replays in planalloc-sim
#   versioned  a program bound to cudaMalloc@libcudart.so.13 reaches our export
#   capture    allocations during global, thread-local and relaxed stream capture: the
#              same return codes and results as without the preload; the launches into
#              the captures counted as captured, none as a launch (they run later)
#   phases     train and eval iterations in turn (shadow build): two plans made, each
#              served again from the kept plans when the program comes back to it
#   async      a range freed stream-ordered while its stream still reads it, reused at
#              once on the same stream, another stream and by cudaMalloc: same sums
#   entry      allocations reached only through cudaGetDriverEntryPoint(ByVersion)(_ptsz)
#              and dlsym on libcuda: all five planned, same output
#   never      a program that never repeats: no plan, everything best fit, no failure, and
#              the verdict at exit says no iteration repeated
#   replay     the real programs' allocation streams (tests/data/ev.*.log.xz, PyTorch on an
#              H100: ResNet-50's forward and backward threads, GPT), 40 steps at 1/16 of
#              their sizes through event_replay under the shadow build, with the event
#              log on: the same output, every allocation checked, 0 divergent periods, one
#              plan, at least 99 % of the allocations from the first one the plan served on
#              served from it (by the event log) and 90 % of all (ResNet-50's warm-up is
#              4.5 %, its two recorded steps 4.7 %: the plan must serve from the event
#              it is found at, and does: at 8ebcbb9 the planner's thread lost 1,806
#              events to best fit on this 2-core machine, 88.5 % served); GPT's page
#              unmaps fewer than its peak's pages (the hand-over's handles come from the
#              recording's idle pages, not the plan's range's); at 638a0fa the plan's first period went
#              off it (the recording's gradients freed at zero_grad moved no clock) and 3 %
#              were served. ResNet-50 at its real sizes (not under the sanitizers): its
#              plan laid out around what stays, on the recording's pages: page maps and
#              unmaps <= 10 % of the allocations (15 % placed beside them), >= 90 %
#              served, mapped peak <= 1.03 x live. torch_stream's PyTorch-shaped streams
#              the same way: exactly repeating (a loss and an input held across steps:
#              planned over two steps),
#              >= 99 % after warm-up, 0 divergent periods; a logging buffer every 5th step:
#              2 events off the plan each, none else, 0 divergent periods, >= 90 % served
#              (the first period's slots under the recording's last buffers go around
#              them), and planalloc
#              report names the first (the extra's allocation) and what the plan expected
#              there; three sequence
#              lengths in turn, 16 steps each, twice: 3 plans, the last 3 turns served
#              from kept plans, all 3 known from the program's last 96 events
#              (the frees of the last shape's buffers among them), >= 90 % served, <= 2
#              divergent periods (at 5e97516: 70.9 %, 8; at 35b553a: 87.4 %, 4), mapped
#              peak <= 1.10 x live (1.14 at 6ada4fe); 44 layers, three lengths 5 steps each, laid
#              out 0.17 % above max-live by the quick heuristics: >= 70 % served (the
#              plan serves at once, within 0.5 %; at 0.1 % the planner's thread searched
#              past the replay's end: 0 served). GPT device-bound (40 us kernels): pages recycled under
#              freed work handed on with no host wait (at most 1 wait per 4 handed on;
#              at fb1a733, 31 waits and none handed on)
#   race       a buffer freed while a kernel on another stream still reads it (kernels
#              take 5 ms: SIMCUDA_KERNEL_US), its range overwritten at once by a kernel,
#              through a pointer in device memory, an async copy, a memset, a synchronous
#              copy and a CUDA graph: the same sums as without the preload (cudaFree waits
#              there), the range really reused, and no host wait of planalloc's; the same
#              with PLANALLOC_FREE=sync (which waits); and different sums under the build
#              whose frees are not ordered (libplanalloc-unordered.so): the test can fail;
#              and 96 streams made and destroyed in turn (more than planalloc's 64 lanes):
#              the same, with no host wait; on two devices, device 1's kernel under peer
#              access reading the freed buffer (peer) or writing the reused one
#              (peerwrite): same sums, no host wait, different sums unordered; and, under a budget, a freed buffer's pages
#              taken at once by a new buffer elsewhere while the reader still reads them (page): same sums,
#              pages recycled under the reader, no host wait, different sums unordered;
#              a page freed after the program's own cudaStreamSynchronize or
#              cudaDeviceSynchronize serves elsewhere at once (sync_known: no drain, no
#              wait; without the sync, drains)
#   shadow     every workload under the shadow-checker build (libplanalloc-shadow.so:
#              aborts when two live buffers overlap); it must have checked them all
#   stress     under the shadow build: 4 threads, 100,000 alloc/free/launch events,
#              random divergence, a forked child; every buffer's contents checked; again
#              with the helpers switching between two devices at random
#   budget     every workload under PLANALLOC_BUDGET at 70/50/35 % of its peak without
#              planalloc, plain and with PLANALLOC_POISON=1 and copies at 2 GB/s
#              (SIMCUDA_COPY_GBPS): same output, simulator peak <= budget + one page,
#              bytes really moved (mlp_train 16 layers deep at 50 and 35 % too). Where one launch needs more
#              pages than the budget (see the list), a clean failure instead: the
#              planalloc: error: line, the program's own out-of-memory exit, no signal.
#              restore_race and graph_budget: a restore read on another stream, and a
#              CUDA graph reading an evicted buffer (it comes back; the budget is lifted).
#              restore_evict: a page restored and sent out again before anyone used
#              it (the two copy streams): its copy out waits for the restore.
#              evict_launch: evictions made for launches are exact and the host never
#              waits for them, nor for the first round's cudaMallocs (their launches do).
#              evict_readers: a buffer two streams read at once leaves after both.
#              owed_malloc: a cudaMalloc whose memory a copy out still reads, written
#              by a kernel through a pointer stored in device memory: exact.
#              And an allocation larger than the whole budget: the same, with the numbers.
#              mlp_train at 50 % with megengine's layout: planned again with its
#              page-sized slots on pages, since one launch would need more than the budget.
#   planned    the served phase's scheduled victims (Belady from the access trace, the
#              fallback under the swap schedule, which is off for this) move
#              fewer bytes than the reactive score on the same layout, same output, also
#              poisoned (transformer_train and trace_replay at 50 %, multistream and
#              vendor_gemm at 70 %);
#              and some pages come back ahead of the launch that needs them (prefetch);
#              dtr's swap schedule (PLANALLOC_SWAP_SCHEDULE=1) on transformer_train at
#              50 %, poisoned and not: same output, scheduled copies out and back made;
#              and by default, on the demo's budget run (resnet50 replay at 50 %): fewer
#              served-phase host waits than with the schedule off, same output; on both,
#              planalloc-sim --cycle over the run's cycle.csv predicts the served phase's
#              pages out within 5 %. The host held to the schedule's lead (at most PLANALLOC_LEAD)
#              (resnet50 replay at 50 %, 200 us kernels): no served-phase host wait, pacing
#              waits made; with the lead unbounded, served-phase waits and no pacing.
#   devices    multi_device on two simulated devices (SIMCUDA_DEVICES=2), its activations
#              copied between them and, with --peer, read in place by device 1 under peer
#              access: the same output; each device has its own pool, plan and stats
#              table (served from the plan on both), none passed to the driver; no kernel
#              uses memory its device may not (SIMCUDA_STRICT: a pool page device 1
#              reads without the grant that peer access gives it fails the run); copying,
#              no host wait (one device's copies of the other's pool are settled when they
#              return), and none reading in place either (device 1's stream is a lane of
#              device 0's fence);
#              under a budget on each device, another device's copy of a pool lifts
#              that pool's budget after bringing its buffers back: one warning a device,
#              the same output;
#              with --ipc, device 0's weights handed to a second process by CUDA IPC:
#              from a pool buffer, the program's own error exit and one planalloc: error:
#              line naming the buffer and PLANALLOC_PASS_MODULES; with the program's module
#              passed, the same output as without planalloc (the second process's too)
#   ddp        ddp_train at 2 and 4 ranks (scripts/launch-ranks.sh: torchrun where installed, else its own start with torchrun's variables;
#              libsimccl all-reduces over CUDA IPC): every rank's output equals one
#              process computing the same shards in turn, without planalloc, with it, and
#              under a budget (75 % of a rank's peak, poisoned: bytes really move); each
#              rank's peak under planalloc within one 2 MiB page of its peak without
#              rounded up to pages (the simulator counts exact bytes there: its max-live;
#              at 17-18 MiB a rank, a page is 12 %); libsimccl's staging buffer goes to
#              the driver (PLANALLOC_PASS_MODULES' built-in list), or IPC would fail;
#              no rank waits on the host more often than one process computing all shards;
#              each rank's dumps are named by pid, device and rank, and planalloc report
#              over them ends with one table of the ranks and a plot of their memory
#   faults     the driver fails one call (SIMCUDA_FAIL): without a budget, a refused
#              cuMemCreate/Map/SetAccess sends the allocation to the driver itself and a
#              failed cuMemUnmap/Release keeps the page: same output every time; under a
#              budget (also failing pinned host memory, async copies, events), the same
#              output or a clean failure: a planalloc: error: line, status 1, no signal;
#              without pinned memory, pageable blocks and the same output; a device
#              that refuses pages below the budget lowers it, same output; one that
#              leaves too little fails with an error naming the lowered budget.
set -u
case_=$1 build=$2 src=$3
export LD_LIBRARY_PATH=$build/simcuda
pre=$build/lib/libplanalloc.so shadow=$build/lib/libplanalloc-shadow.so unordered=$build/lib/libplanalloc-unordered.so
# The sanitizer build's preload needs the ASan runtime loaded before it.
asan=$(ldd "$pre" | awk '/libasan/ { print $3 }')
[ -z "$asan" ] || pre="$asan $pre" shadow="$asan $shadow" unordered="$asan $unordered"
w=$build/workloads
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# run NAME CMD...: reference and preloaded outputs, stats on stderr (PRE: another preload).
# Planning is inline (PLAN_TIME 0) unless PLAN_TIME says otherwise: these short programs
# must see their plan served whatever the load of the machine running the tests.
run() {
  local pre=${PRE:-$pre}
  local name=$1; shift
  SIMCUDA_STRICT=1 SIMCUDA_PEAK_FILE=$tmp/$name.peak0 "$@" >"$tmp/$name.ref" 2>"$tmp/$name.referr" ||
    fail "$name: reference run failed: $(cat "$tmp/$name.referr")"
  SIMCUDA_STRICT=1 SIMCUDA_PEAK_FILE=$tmp/$name.peak1 PLANALLOC_STATS=1 PLANALLOC_PLAN_TIME=${PLAN_TIME-0} LD_PRELOAD="$pre" "$@" \
    >"$tmp/$name.out" 2>"$tmp/$name.err" || fail "$name: preloaded run failed (status $?): $(tail -3 "$tmp/$name.err")"
  cmp -s "$tmp/$name.ref" "$tmp/$name.out" || fail "$name: output differs under the preload"
  [ -s "$tmp/$name.out" ] || fail "$name: no output"
}
# checked NAME: the shadow build ran and checked every allocation the stats count
checked() {
  local line n
  line=$(grep '^planalloc: shadow: ' "$tmp/$1.err") || fail "$1: the shadow checker did not report"
  n=$(echo "$line" | awk '{ print $3 }')
  [ "$n" -gt 0 ] && [ "$n" = "$(stats_sum "$1" allocations)" ] || fail "$1: shadow checked $n of $(stats_sum "$1" allocations)"
}
stat() { awk -v k="$2" 'index($0, "planalloc: " k " ") == 1 { for (i = NF; i > 0; i--) if ($i ~ /^[0-9]+$/) { print $i; exit } }' "$tmp/$1.err"; }
# devstat NAME DEVICE LABEL: the figure in that device's table (a process that sees
# several devices prints a table for each device with a pool, its "device" row first)
devstat() {
  awk -v d="$2" -v k="$3" '/^planalloc: device +[0-9]+ *$/ { at = $3 == d }
    at && index($0, "planalloc: " k " ") == 1 { for (i = NF; i > 0; i--) if ($i ~ /^[0-9]+$/) { print $i; exit } }' "$tmp/$1.err"
}
# stats_sum NAME LABEL: the figure summed over every device's table
stats_sum() {
  awk -v k="$2" 'index($0, "planalloc: " k " ") == 1 { for (i = NF; i > 0; i--) if ($i ~ /^[0-9]+$/) { n += $i; break } } END { print n + 0 }' "$tmp/$1.err"
}

# modelled NAME DUMP_DIR: planalloc-sim, given the turn the run's swap schedule was planned
# over (cycle.csv), plans it again and replays it: its pages out per iteration, times the
# periods the run served, within 5 % of the pages the run's served phase sent out (#25:
# the model predicts the product; here its served phase, which the schedule decides).
# Pages, the unit both plan in: a page sends out only its buffers' span, which the model
# does not know (transformer_train planned for a lead of 32 launches: 26 MiB of pages an
# iteration, 24.2 MiB of bytes)
modelled() {
  local per periods got page
  per=$("$build/bin/planalloc-sim" --cycle "$2"/*.cycle.csv | awk -F'|' 'NR == 3 { gsub(/ /, "", $9); print $9 }')
  page=$(sed -n 2p "$2"/*.cycle.csv | cut -d, -f4)
  periods=$(stat "$1" "periods served") got=$(stat "$1" "pages moved to host, served")
  [ -n "$per" ] && [ "${page:-0}" -gt 0 ] && [ "${periods:-0}" -gt 0 ] && [ "${got:-0}" -gt 0 ] ||
    fail "$1: no served phase to model (per $per, page $page, periods $periods, got $got)"
  awk -v p="$per" -v b="$page" -v n="$periods" -v g="$got" 'BEGIN { w = p * 1048576 / b * n; exit !(w >= 0.95 * g && w <= 1.05 * g) }' ||
    fail "$1: planalloc-sim --cycle predicts $per MiB x $periods periods, the served phase sent out $got pages of $page bytes"
  echo "$1: modelled $per MiB x $periods periods, served phase moved $((got / 1048576)) MiB"
}

# every workload of the simulated CUDA, 20 iterations (--dynamic included)
every_workload() {
  run mlp $w/mlp_train --iters 20
  run tr $w/transformer_train --iters 20
  run trd $w/transformer_train --iters 20 --dynamic
  run ms $w/multistream --iters 20
  run vg $w/vendor_gemm --iters 20
  run rp $w/trace_replay "$src/tests/data/resnet50.csv" --iterations 4 --scale 64
}

# budgets NAME "PCT..." "PCT..." CMD...: CMD at the first list's budgets (percent of its
# simulator peak without planalloc) must run exactly as without; at the second's it must
# fail cleanly (those are below the pages one of its launches needs at once).
budgets() {
  local name=$1 ok=$2 no=$3 pct poison b k rc page=2097152
  shift 3
  SIMCUDA_STRICT=1 SIMCUDA_PEAK_FILE=$tmp/$name.peak0 "$@" >"$tmp/$name.ref" 2>&1 || fail "$name: reference run failed"
  local peak; peak=$(cat "$tmp/$name.peak0")
  for pct in $ok $no; do
    for poison in 0 1; do
      b=$((peak * pct / 100)) k=$name.$pct.$poison
      # poisoned runs with copies as slow as a 2 GB/s link: a missing wait for a copy shows
      SIMCUDA_STRICT=1 SIMCUDA_PEAK_FILE=$tmp/$k.peak PLANALLOC_STATS=1 PLANALLOC_PLAN_TIME=0 PLANALLOC_BUDGET=$b \
        PLANALLOC_POISON=$poison SIMCUDA_COPY_GBPS=$((poison * 2)) LD_PRELOAD="$pre" "$@" >"$tmp/$k.out" 2>"$tmp/$k.err"
      rc=$?
      if [[ " $no " == *" $pct "* ]]; then
        [ $rc -ne 0 ] && [ $rc -lt 128 ] || fail "$k: status $rc under an impossible budget of $b bytes"
        grep -q '^planalloc: error: ' "$tmp/$k.err" || fail "$k: no planalloc: error: line"
        break
      fi
      [ $rc = 0 ] || fail "$k: status $rc under a budget of $b bytes: $(grep -m2 'error' "$tmp/$k.err")"
      cmp -s "$tmp/$name.ref" "$tmp/$k.out" || fail "$k: output differs under a budget of $b bytes"
      [ "$(cat "$tmp/$k.peak")" -le $((b + page)) ] || fail "$k: simulator peak $(cat "$tmp/$k.peak") > budget $b + a page"
      [ "$(stat "$k" "bytes moved to host")" -gt 0 ] || fail "$k: nothing moved: the budget never bound"
      echo "$k: budget $b, peak $(cat "$tmp/$k.peak"), moved out $(stat "$k" "bytes moved to host")"
    done
  done
}

# planned NAME PCT CMD...: in the served phase the schedule's victims (Belady) must move
# fewer bytes (out + back) than the reactive score on the same layout (ALGO=megengine: a
# layout that does not depend on the planner's time limit), with the same output, also
# poisoned.
planned() {
  local name=$1 pct=$2 mode b
  local -A moved
  shift 2
  SIMCUDA_PEAK_FILE=$tmp/$name.peak0 "$@" >"$tmp/$name.ref" 2>&1 || fail "$name: reference run failed"
  b=$(($(cat "$tmp/$name.peak0") * pct / 100))
  for mode in on.0 on.1 off.0; do
    SIMCUDA_STRICT=1 PLANALLOC_STATS=1 PLANALLOC_PLAN_TIME=0 PLANALLOC_ALGO=megengine PLANALLOC_BUDGET=$b \
      PLANALLOC_SWAP_SCHEDULE=0 PLANALLOC_EVICT_PLANNED=${mode%.*} PLANALLOC_POISON=${mode#*.} LD_PRELOAD="$pre" "$@" >"$tmp/$name.$mode.out" 2>"$tmp/$name.$mode.err" ||
      fail "$name.$mode: status $? under a budget of $b bytes"
    cmp -s "$tmp/$name.ref" "$tmp/$name.$mode.out" || fail "$name.$mode: output differs under a budget of $b bytes"
    moved[${mode%.*}]=$(($(stat "$name.$mode" "bytes moved to host") + $(stat "$name.$mode" "bytes brought back")))
  done
  [ "$(stat "$name.on.0" "evictions planned")" -gt 0 ] || fail "$name: no victim came from the schedule"
  [ "$(stat "$name.off.0" "evictions planned")" = 0 ] || fail "$name: PLANALLOC_EVICT_PLANNED=off still planned"
  # where the served period's host time went: the driver's launch calls, and the mapping
  # calls of the pages it moved (timed because the stats were asked for)
  [ "$(stat "$name.on.0" "host time in launches, served")" -gt 0 ] && { [ "$(stat "$name.on.0" "page maps, served phase")" = 0 ] ||
    [ "$(stat "$name.on.0" "host time in mapping calls")" -gt 0 ]; } || fail "$name: the served phase's host time not accounted"
  [ "${moved[on]}" -lt "${moved[off]}" ] || fail "$name: planned moved ${moved[on]} bytes, reactive ${moved[off]}"
  # the schedule also brings buffers back before their launch (PLANALLOC_PREFETCH, on by
  # default), and the poisoned run shows each such launch still waited for its copy.
  # Not multistream: each launch needs two of its three buffers, and an eviction frees
  # exactly the pages the launch needs, never one to spare for the next.
  local ahead back
  ahead=$(stat "$name.on.1" "pages brought back ahead") back=$(stat "$name.on.1" "pages brought back")
  { [ "$ahead" -gt 0 ] || [ "$name" = ms ]; } && [ "$ahead" -le "$back" ] || fail "$name: $ahead of $back pages brought back ahead of their launch"
  [ "$(stat "$name.off.0" "pages brought back ahead")" = 0 ] || fail "$name: a prefetch without a schedule"
  echo "$name at $pct %: planned moved ${moved[on]} bytes, reactive ${moved[off]}; $ahead of $back pages back ahead"
}

case $case_ in
replay)
  # after NAME: allocations from the first one the plan served on, and how many it served
  after() { awk -F, 'NR > 2 && $2 == "a" && $8 != "pass" { on = on || $8 == "plan"; n += on; p += $8 == "plan" } END { print n + 0, p + 0 }' "$tmp/d.$1"/*.events.csv; }
  # off NAME: the events off the plan
  off() { awk -F, '$8 == "miss"' "$tmp/d.$1"/*.events.csv | wc -l; }
  replayed() {
    local name=$1; shift
    mkdir -p "$tmp/d.$name"
    # the user's default planner time (the harness's is 0: inline)
    PLAN_TIME=${REPLAY_PLAN_TIME-10} PLANALLOC_EVENTS=1 PLANALLOC_DUMP=$tmp/d.$name PRE=$shadow run $name "$@"
    checked $name
    read -r n p < <(after $name)
    a=$(stat $name allocations) s=$(stat $name "served from the plan") dv=$(stat $name "divergent periods")
    echo "$name: $s of $a allocations served from the plan, $p of $n from the first, $dv divergent periods, $(stat $name plans) plans, $(off $name) events off it"
  }
  for log in resnet50 gpt; do
    replayed $log $w/event_replay "$src/tests/data/ev.$log.log.xz" --steps 40 --scale 16
    [ "$dv" = 0 ] && [ "$(stat $log plans)" = 1 ] && [ $((p * 100)) -ge $((n * 99)) ] && [ $((s * 100)) -ge $((a * 90)) ] ||
      fail "$log: not served as an exactly repeating stream is"
    # laid out on the allocating thread (its heuristics reach max-live): installed at the
    # event after the one that completed the iteration, whatever the machine's load
    at=$(awk -F, '$9 ~ /^iteration found/ { f = $1 } $9 ~ /^plan: / { print $1 - f; exit }' "$tmp/d.$log"/*.timeline.csv)
    [ "$at" = 1 ] || fail "$log: the plan was installed $at events after its iteration was found, not at the next"
  done
  # the H200's own recordings (trace and access dumps of its budget runs, 2026-11-28):
  # PyTorch's allocations in order and its launches, each reading the buffers the real
  # one touched, through the shadow checker: one plan, no divergent period, and at least
  # 98 % of the allocations from the first one served on (the hand-over around the
  # recording's buffers takes the rest: 214 of ResNet-50's 17,156 when measured)
  for m in resnet50 gpt; do
    replayed h200$m $w/event_replay "$src/tests/data/h200.$m.trace.csv.xz" --access "$src/tests/data/h200.$m.access.csv.xz" \
      --steps 20 --scale 16
    [ "$dv" = 0 ] && [ "$(stat h200$m plans)" = 1 ] && [ "$n" -gt 0 ] && [ $((p * 100)) -ge $((n * 98)) ] ||
      fail "h200$m: $p of $n allocations from the first served, $dv divergent periods, $(stat h200$m plans) plans"
  done
  # GPT's plan is placed beside what stays and maps its range's new pages in the hand-over
  # with the handles of the recording's idle pages, outside the range: each page of the
  # run unmapped less than once. At 84a2290 the range's own idle pages, the highest, gave
  # their handles first and were mapped again within the period: 461 unmaps for 290 pages.
  PLANALLOC_STATS=1 LD_PRELOAD="$pre" $w/event_replay "$src/tests/data/ev.gpt.log.xz" --steps 8 --scale 16 --kernels 0 \
    >"$tmp/hand.out" 2>"$tmp/hand.err" || fail "hand: the replay failed"
  um=$(stat hand "page unmaps") pk=$(stat hand "device memory peak")
  echo "hand: $(stat hand "page maps") + $um page maps and unmaps, a peak of $((pk / 2097152)) pages"
  [ $((um * 2097152)) -lt "$pk" ] || fail "hand: $um page unmaps for a peak of $((pk / 2097152)) pages"
  # at its real sizes (3 GiB live), ResNet-50's plan is laid out at the pool's start
  # around what stays, on the recording's own pages: that layout covers 1-2 pages more
  # than the plan placed beside them, whose range maps ~1,270 pages anew in the hand-over
  # and unmaps as many (at 35b553a: 3,722 + 2,215 page maps and unmaps, 15 % of the
  # allocations; 8 % at ee27314). Found a step earlier since frees are named by their
  # dead count, the plan takes over in step 2, 900 events past its cut, where more of the
  # step's buffers lie where best fit put them: 9.6-12.7 % in 11 runs (the planner's
  # thread's timing), for 870 more allocations served (90.3 -> 92.5 %). The anchored
  # layouts' polish stops at a deadline on the clock, so the machine's load moves it:
  # 5.9-13.5 % in 12 runs at cfc21b9, 9.8-13.0 % at 344b92a, 14.3 % once beside the
  # sanitizers' replay; at most 15 %. Not under the sanitizers (3 GiB of simulated pages).
  if [ -z "$asan" ]; then
    PLANALLOC_STATS=1 PLANALLOC_PLAN_TIME=10 LD_PRELOAD="$pre" $w/event_replay "$src/tests/data/ev.resnet50.log.xz" --steps 40 \
      >"$tmp/full.out" 2>"$tmp/full.err" && grep -q ' mismatches 0$' "$tmp/full.out" || fail "full: the replay failed or mismatched"
    a=$(stat full allocations) s=$(stat full "served from the plan") m=$(stat full "page maps") u=$(stat full "page unmaps")
    pk=$(stat full "device memory peak") lv=$(stat full "live bytes peak")
    echo "full: $s of $a allocations served from the plan, $m + $u page maps and unmaps, mapped peak $pk for $lv live"
    [ $(((m + u) * 100)) -le $((a * 15)) ] && [ $((s * 100)) -ge $((a * 90)) ] && [ $((pk * 100)) -le $((lv * 103)) ] ||
      fail "full: $m + $u page maps and unmaps, $s of $a served, mapped peak $pk for $lv live"
    # the demo's run (1/4 of its sizes, 20 us kernels): its plan, found a step earlier
    # since frees are named by their dead count, takes over with 210 of the recording's
    # buffers live, and its anchored layout keeps them where they lie in a second round;
    # at 40 ms of layouts that round never ran, 146 slots went to best fit above the
    # range and the peak was 790 MiB for 751 live (1.052 x); 756 so
    SIMCUDA_KERNEL_US=20 PLANALLOC_STATS=1 LD_PRELOAD="$pre" $w/event_replay "$src/tests/data/ev.resnet50.log.xz" --steps 40 --scale 4 \
      >"$tmp/quarter.out" 2>"$tmp/quarter.err" || fail "quarter: the replay failed"
    pk=$(stat quarter "device memory peak") lv=$(stat quarter "live bytes peak")
    echo "quarter: mapped peak $pk for $lv live"
    [ $((pk * 100)) -le $((lv * 102)) ] || fail "quarter: mapped peak $pk for $lv live"
  fi
  # device-bound (each event a 40 us kernel: the device a launch queue behind the host),
  # best fit's pages recycled under freed work: their handles go on at once, the fence
  # orders their next use, and the host does not wait (at fb1a733: 31 waits, none handed on;
  # the waits left are pages wanted back before their work ended). Unmaps under queued
  # work fail the run (SIMCUDA_STRICT), the shadow checker any reuse before it ended.
  SIMCUDA_KERNEL_US=40 replayed gptdev $w/event_replay "$src/tests/data/ev.gpt.log.xz" --steps 6 --scale 16
  handed=$(stat gptdev "pages handed on under work") waits=$(stat gptdev "host waits for pages")
  [ "${handed:-0}" -gt 0 ] && [ $((waits * 4)) -le "$handed" ] ||
    fail "gptdev: $waits host waits for pages, ${handed:-0} pages handed on under work"
  $w/torch_stream --seed 3 >"$tmp/exact.log" && replayed exact $w/event_replay "$tmp/exact.log"
  # the run's own event log replays as the stream it logged (a user sends that one file):
  # every allocation of bytes again (at 10733ed the replayer refused its version 2)
  made=$(awk -F, 'NR > 2 && $2 == "a" && $6 > 0' "$tmp/d.exact"/*.events.csv | wc -l)
  SIMCUDA_COSTS=0 PLANALLOC_STATS=1 LD_PRELOAD="$pre" $w/event_replay "$tmp/d.exact"/*.events.csv --kernels 0 \
    >"$tmp/again.out" 2>"$tmp/again.err" || fail "exact: its own event log did not replay: $(tail -1 "$tmp/again.out")"
  [ "$(stat again allocations)" = "$made" ] || fail "exact: its event log replayed $(stat again allocations) allocations of $made"
  [ "$dv" = 0 ] && [ "$(stat exact plans)" = 1 ] && [ $((p * 100)) -ge $((n * 99)) ] || fail "exact: not served as an exactly repeating stream is"
  # its plan spans two steps (gradients live to the next zero_grad) and is cut where the
  # fewest bytes are live, whose two steps back reach into the warm-up: a later cut in
  # the same step, not a step later (e7e7acd: found at event 1523, 87.7 % served)
  found=$(awk -F, '$9 ~ /^iteration found/ { print $1; exit }' "$tmp/d.exact"/*.timeline.csv)
  [ "${found:-99999}" -le 1200 ] && [ $((s * 100)) -ge $((a * 90)) ] || fail "exact: iteration found at event ${found:-none}, $s of $a served"
  # its range laid out at the pool's start around what stays (weights, optimizer state),
  # not beside them (main at ed0e66a: 1.087 x the live peak, their holes idle); the
  # recording's last buffers keep their places as the slots they were made at, so none
  # lies under a slot the first period serves (without: 0.3 % of the allocations fewer);
  # its layout polished (planner: pa_greedy_polish): 109 -> 108 pages, 1.0395 -> 1.0299 x.
  # Found 180 events earlier since frees are named by their dead count (91.5 % served,
  # 90.2 before), fewer of step 3's buffers lie in place, and the layout around them takes
  # 110 pages: 1.0490 x
  pk=$(stat exact "device memory peak") lv=$(stat exact "live bytes peak") in=$(stat exact intruded)
  [ $((pk * 100)) -le $((lv * 105)) ] && [ "${in:-0}" = 0 ] || fail "exact: mapped peak $pk for $lv live, ${in:-0} intrusions"
  PLANALLOC_ANCHOR=off replayed beside $w/event_replay "$tmp/exact.log"
  grep -q 'at the pool start around' "$tmp/d.exact"/*.timeline.csv && ! grep -q 'at the pool start around' "$tmp/d.beside"/*.timeline.csv &&
    [ "$(stat beside "device memory peak")" -gt "$pk" ] || fail "exact: PLANALLOC_ANCHOR=off not honoured, or no dearer"
  $w/torch_stream --seed 4 --extra-every 5 >"$tmp/extra.log" && replayed extra $w/event_replay "$tmp/extra.log"
  # 8 extras, each an allocation and a free off the plan; and the replay's counter at its exit
  [ "$dv" = 0 ] && [ "$(stat extra plans)" = 1 ] && [ "$(off extra)" -le 17 ] || fail "extra: more off the plan than the extras"
  # its plan, placed beside what stays, lies over the recording's last buffers: the slots
  # of its first period that meet them go around them in its range, not to best fit
  # (at f25ef06: 18 to best fit, 89.7 % served)
  [ "${s:-0}" -gt 0 ] && [ $((s * 100)) -ge $((a * 90)) ] && [ "$(stat extra "served around them")" -gt 0 ] ||
    fail "extra: $s of $a served, $(stat extra "served around them") around the recording's buffers"
  # the report reads the event log: the first event off the plan (an extra's 1 MiB
  # allocation), and what the plan expected there
  "$build/bin/planalloc" report "$tmp/d.extra" >"$tmp/report.extra" 2>&1 || fail "extra: planalloc report failed"
  grep -q '^  event log .* off it; the first off it, event [0-9]*:$' "$tmp/report.extra" &&
    grep -q '^    came  *an allocation of 1048576 bytes' "$tmp/report.extra" &&
    grep -q '^    the plan expected  *an allocation of [0-9]* bytes (position [0-9]*)$' "$tmp/report.extra" ||
    { cat "$tmp/report.extra"; fail "extra: the report does not say where the run left its plan"; }
  # laid out in the holes between the weights by the skylines around them (at 2e4c073 the
  # greedy orders' 180 pages lost to the placed plan's 183: 1.0453 x live), without the
  # recording's last buffers fixed where they lie: its first period's slots under them go
  # around them in the range (without: 73 to best fit, 89.5 % served, 1.0396 x live)
  $w/torch_stream --seed 57 --layers 43 --extra-every 5 >"$tmp/holes.log" && replayed holes $w/event_replay "$tmp/holes.log"
  pk=$(stat holes "device memory peak") lv=$(stat holes "live bytes peak")
  [ $((pk * 100)) -le $((lv * 103)) ] && [ $((s * 100)) -ge $((a * 90)) ] && [ "$(stat holes "served around them")" -gt 0 ] ||
    fail "holes: mapped peak $pk for $lv live, $s of $a served, $(stat holes "served around them") around"
  # the logging buffer every 5th step, off the plan, goes where no slot lies for a quarter
  # period in the plan's range, not to best fit beside it (1.0260 x live so)
  $w/torch_stream --seed 24 --layers 22 --extra-every 5 >"$tmp/window.log" && replayed window $w/event_replay "$tmp/window.log"
  pk=$(stat window "device memory peak") lv=$(stat window "live bytes peak")
  [ $((pk * 100)) -le $((lv * 102)) ] && [ "$(stat window "off the plan in its range")" -gt 0 ] ||
    fail "window: mapped peak $pk for $lv live, $(stat window "off the plan in its range") off the plan in its range"
  # a quick layout in as many pages as max-live's (0.55 % above it) serves at once: no
  # search on the planner's thread, which can save no page (at e21a65b: 13-55 % served)
  $w/torch_stream --seed 202 --layers 54 --extra-every 4 >"$tmp/pages.log" && replayed pages $w/event_replay "$tmp/pages.log"
  [ $((s * 100)) -ge $((a * 90)) ] || fail "pages: $s of $a served"
  # laid out on the planner's thread, a plan comes thousands of events after its cut: its
  # clock follows the log's events since, the logging buffers made meanwhile among them
  # (at eacf660, counted from the cut: 2 events ahead a logging buffer, 1 divergent
  # period in 2 runs of 4; test_clock's late_plan every time)
  $w/torch_stream --seed 245 --layers 13 --extra-every 5 --steps 120 >"$tmp/late.log" && replayed late $w/event_replay "$tmp/late.log"
  [ "$dv" = 0 ] && [ "$(stat late plans)" = 1 ] && [ $((p * 100)) -ge $((n * 99)) ] || fail "late: $dv divergent periods, $p of $n served from the first"
  # a plan laid out on the planner's thread searches for two of the program's iterations,
  # not PLANALLOC_PLAN_TIME's 10 s (at e21a65b: past the replay's end, no plan served)
  $w/torch_stream --seed 247 --layers 39 --extra-every 4 --steps 120 >"$tmp/search.log" && replayed search $w/event_replay "$tmp/search.log"
  [ "$(stat search plans)" = 1 ] && [ $((s * 100)) -ge $((a * 40)) ] || fail "search: $(stat search plans) plans, $s of $a served"
  # a quick layout a page above max-live's: the search runs briefly on the allocating
  # thread first (10 layers, three lengths: 2 ms reach it), and a plan whose anchored
  # alternative beats any layout the search could find serves at once (58 layers), not
  # after the planner's thread (at d908f65: 14-70 % and 37-73 % served, the plans of the
  # 64 length 5,000-11,000 events late, after the length changed)
  $w/torch_stream --seed 346 --layers 10 --extra-every 1 --steps 100 --shapes 96,192,64 --shape-steps 10 >"$tmp/brief.log" &&
    replayed brief $w/event_replay "$tmp/brief.log"
  [ $((s * 100)) -ge $((a * 85)) ] || fail "brief: $s of $a served"
  $w/torch_stream --seed 390 --layers 58 --steps 100 --shapes 96,192,64 --shape-steps 10 >"$tmp/first.log" &&
    replayed first $w/event_replay "$tmp/first.log"
  [ $((s * 100)) -ge $((a * 85)) ] || fail "first: $s of $a served"
  # a later length's plan is placed beside what stays, not anchored in the recording's range
  # around it: beside that one the next length change peaked 4 pages higher (1.0468 x live;
  # 1.0273 so). Since frees are named by their dead count the 256 length's first stretch
  # is planned too (80.4 -> 86.3 % served), at the pool's start; at its first return a
  # 256-byte buffer the 64 length held across its step lay in its range, and it went
  # beside everything (1.0565) till such a buffer no longer kept it from the pool's start
  $w/torch_stream --seed 50 --shapes 256,128,64 --shape-steps 5 --steps 80 --extra-every 3 --layers 29 >"$tmp/later.log" &&
    replayed later $w/event_replay "$tmp/later.log"
  pk=$(stat later "device memory peak") lv=$(stat later "live bytes peak")
  [ $((pk * 1000)) -le $((lv * 1035)) ] || fail "later: mapped peak $pk for $lv live"
  # two lengths every 12 steps: the other length's first step, off the plan, maps its
  # pages with the idle ones of the plan's pinned range, not new ones beside it (at
  # 8aac19c: 1.0905 x live, above the caching allocator's 1.0500; 1.0463 so); and a kept
  # plan laid out with the recording's buffers in place serves again with its lower plain
  # layout, those buffers gone (at 4ecacf3: 1.0315; 1.0205 so)
  $w/torch_stream --seed 325 --layers 73 --shapes 64,128 --shape-steps 12 --steps 80 >"$tmp/lengths.log" &&
    replayed lengths $w/event_replay "$tmp/lengths.log"
  pk=$(stat lengths "device memory peak") lv=$(stat lengths "live bytes peak")
  [ $((pk * 1000)) -le $((lv * 1025)) ] && [ "$(stat lengths plans)" = 2 ] || fail "lengths: mapped peak $pk for $lv live, $(stat lengths plans) plans"
  # three lengths every 10 steps: a plan the program leaves opens its range to best fit,
  # so the next length's first step fills the holes among the weights and the pages the
  # plan mapped, and a kept plan served again lies over the last length's buffers still
  # live (at 4469b7b: 1.0748-1.0922 x live, each claimed range held beside the next;
  # 1.0341-1.0515 so, by when the planner's thread lays the first plans out)
  $w/torch_stream --seed 310 --layers 28 --steps 100 --shapes 96,192,64 --shape-steps 10 >"$tmp/opened.log" &&
    replayed opened $w/event_replay "$tmp/opened.log"
  pk=$(stat opened "device memory peak") lv=$(stat opened "live bytes peak")
  [ $((pk * 100)) -le $((lv * 106)) ] || fail "opened: mapped peak $pk for $lv live"
  # a length that comes back: its kept plan serves again with the last length's buffers
  # and its own first ones (made while the last plan still served, as misses) in its
  # range. Those are its buffers at their positions, each its slot's instance where it
  # lies, and the other slots go around them in the range. Planned inline, where the
  # counts do not hang on the planner's thread (at cfc21b9: 29 slots still occupied sent
  # to best fit; 4-9 so)
  $w/torch_stream --seed 313 --layers 9 --extra-every 3 --steps 80 --shapes 64,128 --shape-steps 12 >"$tmp/returns.log" &&
    REPLAY_PLAN_TIME=0 replayed returns $w/event_replay "$tmp/returns.log"
  in=$(stat returns "planned but still occupied")
  [ "$in" -le 12 ] || fail "returns: $in slots still occupied"
  # ... and its slots fixed in place (the recording before last's buffers, gone) go around
  # them too: a buffer of the last length over one of them left no slot a detour (34 still
  # occupied at 78a7e72, 12 so)
  $w/torch_stream --seed 309 --layers 11 --extra-every 4 --steps 80 --shapes 64,128 --shape-steps 12 >"$tmp/floats.log" &&
    REPLAY_PLAN_TIME=0 replayed floats $w/event_replay "$tmp/floats.log"
  in=$(stat floats "planned but still occupied")
  [ "$in" -le 20 ] || fail "floats: $in slots still occupied"
  # three lengths, the user's planner time: 1.0840 x live at cfc21b9, 1.0690 so (its count
  # of slots still occupied, 12 -> 1-2, went to 17 once under the sanitizers' load)
  $w/torch_stream --seed 342 --layers 12 --extra-every 2 --steps 100 --shapes 96,192,64 --shape-steps 10 >"$tmp/returns3.log" &&
    replayed returns3 $w/event_replay "$tmp/returns3.log"
  pk=$(stat returns3 "device memory peak") lv=$(stat returns3 "live bytes peak")
  [ $((pk * 1000)) -le $((lv * 1075)) ] || fail "returns3: mapped peak $pk for $lv live"
  # lengths changing every step: a kept plan served at once from the allocation that ends
  # its stretch, a slot of the plan that retires then; that plan's range opens with the
  # buffer not yet among the live ones, which needs a block of its own there (else best
  # fit's next buffer lay over it: the shadow's overlap, exit 134)
  $w/torch_stream --seed 612 --layers 20 --steps 104 --shapes 64,64,128 --shape-steps 1 >"$tmp/every.log" &&
    replayed every $w/event_replay "$tmp/every.log"
  # and its 64, 64 plan, failed twice running, is not served again at each 64 step: the
  # 3-step cycle is recorded and planned (48 % served so at 3eb09e9 with the log's older
  # frees, below)
  [ $((s * 100)) -ge $((a * 85)) ] || fail "every: $s of $a served"
  # a length held 6 steps, another 3, a logging buffer every other step (stress-streams
  # #10): the 128 length's plan holds two whole periods a stretch, not a pattern inside
  # the iteration, and serves each stretch again from the moment its events come, the
  # matcher running while the 64 length records (at 2a46ec7: 32.3 % served, every 128
  # stretch found again 3.2 steps in, no kept plan known from its events)
  $w/torch_stream --seed 71 --shapes 128,128,64 --shape-steps 3 --steps 80 --extra-every 2 --layers 38 >"$tmp/held.log" &&
    replayed held $w/event_replay "$tmp/held.log"
  [ $((s * 100)) -ge $((a * 55)) ] && [ "$(stat held "kept plans known from events")" -ge 1 ] ||
    fail "held: $s of $a served, $(stat held "kept plans known from events") kept plans known from their events"
  # four lengths 4 steps each (stress-streams #11): the 128 length planned late in its
  # first stretch fails at the change, and again 3,102 events later in its second; not
  # the same plan failing twice running, whose shortest period then rose above every
  # length's (2.3 % served at 3dfce06 without that rule; 83.6 % before the dead count)
  $w/torch_stream --seed 78 --shapes 128,64,128,192 --shape-steps 4 --steps 80 --extra-every 3 --layers 41 >"$tmp/stretch.log" &&
    replayed stretch $w/event_replay "$tmp/stretch.log"
  [ $((s * 100)) -ge $((a * 70)) ] || fail "stretch: $s of $a served"
  # a length held for 3 steps: the log's first step has the frees of buffers made before
  # it began, so it repeats the next and each length gets its plan, kept and served again
  # at each return (at 3eb09e9: 4 divergent periods, a kept plan served again once; 1 and
  # 24 since). Planned inline: on the planner's thread its plans, not tight, arrive some
  # 8,700 events late and a 3-step length misses them by the machine's load (4-20 kept
  # plans served again, run to run: this check failed a fresh clone's test.sh once)
  $w/torch_stream --seed 141 --shapes 192,128 --shape-steps 3 --steps 80 --layers 68 >"$tmp/short.log" &&
    REPLAY_PLAN_TIME=0 replayed short $w/event_replay "$tmp/short.log"
  [ "$dv" -le 2 ] && [ "$(stat short "kept plans served again")" -ge 20 ] ||
    fail "short: $dv divergent periods, $(stat short "kept plans served again") kept plans served again"
  # the same with the user's planner time (the thread searches where the quick layout is
  # not good enough): the 192 length's quick layout, a page over max-live's pages, serves
  # at the event after its iteration was found (at 9b63e5e it waited for the thread's
  # search, which on 2 loaded cores came 54,177 events late, its length long gone). Not
  # under the sanitizers: there the inline search's 5 ms reach less, its layout is past
  # the page in some runs, and the thread's plan came 19,488-24,760 events late
  replayed thread $w/event_replay "$tmp/short.log"
  late=$(awk -F, '$9 ~ /^iteration found/ { f = $1 } $9 ~ /^plan: / && $1 - f > m { m = $1 - f } END { print m + 0 }' "$tmp/d.thread"/*.timeline.csv)
  [ -n "$asan" ] || { [ "$late" -le 1 ] && [ "$(stat thread "kept plans served again")" -ge 20 ]; } ||
    fail "thread: a plan installed $late events after its iteration was found, $(stat thread "kept plans served again") kept plans served again"
  $w/torch_stream --seed 5 --shapes 128,256,64 --shape-steps 16 --steps 96 >"$tmp/shapes.log" &&
    replayed shapes $w/event_replay "$tmp/shapes.log"
  [ "$(stat shapes plans)" = 3 ] && [ "$(stat shapes "kept plans served again")" -ge 3 ] || fail "shapes: not one plan a shape, kept"
  # off its plan, the program's events are recorded beside it: a shape it ran before is
  # known from its last PA_MATCH_LEN events, its kept plan cut elsewhere serving with its
  # clock turned, and a new one found as soon as it repeats (at 5e97516 each change went
  # two periods off the plan and recorded two steps after: 70.9 % served, 8 divergent
  # periods, and 2 of the 3 returns planned anew, cut elsewhere)
  came=$(stat shapes "kept plans known from events")
  [ "$came" = "$(grep -c 'serves again: its last' "$tmp/d.shapes"/*.timeline.csv)" ] || fail "shapes: kept plans known from events, stats and timeline differ"
  # the matcher sees every event, the frees of the last shape's buffers in the first step
  # after a change among them (the log leaves those out): each shape that comes back is
  # known within the step, before its old plan's period ends off it (at 35b553a: 354
  # events after the change, 4 divergent periods, 87.4 % served; one each for the new
  # shapes is left)
  # (>= 90 % since the matcher's stretch is 96 events, not 128: 89.84 -> 90.11 %; since
  # a range opens to best fit when the program leaves its plan, only with the shorter
  # stretch, PA_MATCH_SHORT, where it is unique: 89.4 % without)
  [ "$came" -ge 3 ] && [ "$dv" -le 2 ] && [ $((s * 1000)) -ge $((a * 900)) ] ||
    fail "shapes: $came kept plans known from the events, $dv divergent periods, $s of $a served"
  # a run of events off the plan past the clock's window unpins its pages: the next
  # length takes the idle ones' memory, not new pages beside them (1.140 x live at 6ada4fe,
  # when only a tenth of the period off it did); and a kept plan's first period around
  # what lies in its range lays its slots again where the settle left some above it
  # (1.0633 x live at 344b92a, 1.0401 so)
  pk=$(stat shapes "device memory peak") lv=$(stat shapes "live bytes peak")
  [ $((pk * 100)) -le $((lv * 105)) ] || fail "shapes: mapped peak $pk for $lv live"
  # its first plan is anchored (at the pool's start around the weights); when a length
  # comes back after best fit moved what stays, the kept plan takes its own layout again,
  # placed as any (without: it never served again, 0 kept plans, 236 of 28,106 served).
  # What had moved here was a buffer the last length held across its step: since 2a46ec7
  # the kept plan goes back to the pool's start past it (85.4 -> 89.4 % served, 1.0143 x
  # live both; no 'what stays moved' in 244 torch_stream configurations of 2-3 lengths)
  $w/torch_stream --seed 106 --shapes 192,128,64 --shape-steps 3 --steps 80 --extra-every 3 --layers 53 >"$tmp/moved.log" &&
    replayed moved $w/event_replay "$tmp/moved.log"
  kept=$(stat moved "kept plans served again") moved=$(grep -c 'what stays moved' "$tmp/d.moved"/*.timeline.csv)
  [ "${kept:-0}" -ge 5 ] && [ $((s * 100)) -ge $((a * 85)) ] ||
    fail "moved: $moved anchored plans placed again, ${kept:-0} kept plans served again, $s of $a served"
  # anchored only where it wins with the pages its layout lies above max-live counted:
  # here 1 page fewer at the placement, 2 above max-live (1.116 x live without the count)
  $w/torch_stream --seed 29 --shapes 32,64,64,64 --shape-steps 7 --steps 80 --layers 20 >"$tmp/over.log" &&
    replayed over $w/event_replay "$tmp/over.log"
  pk=$(stat over "device memory peak") lv=$(stat over "live bytes peak")
  [ $((pk * 1000)) -le $((lv * 1100)) ] || fail "over: mapped peak $pk for $lv live"
  # 44 layers, three lengths 5 steps each: the heuristics lay each plan out 0.17 % above
  # max-live; the plan serves from the next allocation, not after a search on the
  # planner's thread that outlasted the replay (0 of 24,133 served, at 0.1 %)
  $w/torch_stream --seed 85 --shapes 96,256,192 --shape-steps 5 --steps 80 --layers 44 >"$tmp/near.log" &&
    replayed near $w/event_replay "$tmp/near.log"
  [ $((s * 100)) -ge $((a * 70)) ] || fail "near: $s of $a served"
  ;;
workloads)
  every_workload
  for n in mlp tr ms vg rp; do
    s=$(stat $n "served from the plan")
    [ "${s:-0}" -gt 0 ] || fail "$n: nothing served from a plan: $(cat "$tmp/$n.err")"
  done
  # vendor_gemm's launches come only through the vendor library's cuGetProcAddress_v2
  [ "$(stat vg "pointer words in the pool")" -gt 0 ] || fail "vendor_gemm: launches not scanned"
  ;;
devices)
  export SIMCUDA_DEVICES=2
  for mode in copy peer; do
    run $mode $w/multi_device --iters 20 $([ $mode = peer ] && echo --peer)
    for d in 0 1; do # each device's own pool, plan and stats
      [ "$(devstat $mode $d allocations)" -gt 0 ] || fail "$mode: no table for device $d: $(cat "$tmp/$mode.err")"
      [ "$(devstat $mode $d "served from the plan")" -gt 0 ] || fail "$mode: nothing served from a plan on device $d"
      # device 1's copies of device 0's pool return after they ran (to the host) or are
      # serialised with later work (peer copies); its kernels reading device 0's pool in
      # place are a lane of device 0's fence: no reuse waits on the host for either
      [ "$(devstat $mode $d "host waits")" = 0 ] || fail "$mode: $(devstat $mode $d "host waits") host waits on device $d, want 0"
      echo "$mode: device $d allocations $(devstat $mode $d allocations), served $(devstat $mode $d "served from the plan"), host waits $(devstat $mode $d "host waits")"
    done
    [ "$(stats_sum $mode "on a device with no pool")" = 0 ] || fail "$mode: allocations passed to the driver"
  done
  # a budget on each device (poisoned): another device's copy of a pool's memory is work
  # that budget cannot follow, so the pool's buffers come back first and its budget is
  # lifted, said once a device; the same output (without the lift it differs: device 1
  # evicts before device 0 copies from its pool, 37748736 and 69206016 bytes moved)
  PLANALLOC_BUDGET=36000000 PLANALLOC_POISON=1 run budget $w/multi_device --iters 2 --batch 64 --in 1024 --hidden 4096 --out 1024
  for d in 0 1; do
    [ "$(grep -c "^planalloc: warning: another device's work touches device $d's pool under PLANALLOC_BUDGET=36000000 bytes: " "$tmp/budget.err")" = 1 ] ||
      fail "budget: not said once that device $d's budget is lifted: $(grep warning "$tmp/budget.err")"
  done
  [ "$(devstat budget 1 "bytes moved to host")" -gt 0 ] || fail "budget: device 1's budget never bound"
  echo "budget: same output, bytes moved to host $(devstat budget 0 "bytes moved to host") and $(devstat budget 1 "bytes moved to host")"
  SIMCUDA_STRICT=1 LD_PRELOAD="$pre" $w/multi_device --iters 5 --ipc >"$tmp/ipc.out" 2>"$tmp/ipc.err"
  rc=$?
  [ $rc -ne 0 ] && [ $rc -lt 128 ] || fail "ipc from a pool buffer: status $rc"
  [ "$(grep -c '^planalloc: error: ' "$tmp/ipc.err")" = 1 ] &&
    grep -q '^planalloc: error: cuIpcGetMemHandle(0x[0-9a-f]*) on a pool buffer of 131072 bytes: .*PLANALLOC_PASS_MODULES=' "$tmp/ipc.err" ||
    fail "ipc from a pool buffer: not one clear error: $(cat "$tmp/ipc.err")"
  PLANALLOC_PASS_MODULES=multi_device run ipc $w/multi_device --iters 5 --ipc
  grep -q '^ipc second process weights' "$tmp/ipc.out" || fail "ipc: the second process printed nothing"
  passed=$(grep '^planalloc: from a passed library ' "$tmp/ipc.err" | awk '{ print $6 }' | sort -n | tail -1)
  [ "${passed:-0}" -gt 0 ] || fail "ipc: nothing passed by module" # the first process's (the second allocates nothing)
  echo "ipc: $passed allocations passed by module, second process: $(grep '^ipc second' "$tmp/ipc.out")"
  ;;
ddp)
  export SIMCUDA_DEVICES=4
  if command -v torchrun >/dev/null; then echo "ranks started by $(command -v torchrun)"; else echo "ranks started by launch-ranks.sh (no torchrun)"; fi
  shape=(--iters 6 --in 256 --hidden 2048 --out 256 --batch 128) page=2097152
  for n in 2 4; do
    $w/ddp_train "${shape[@]}" --shards $n >"$tmp/ddp$n.ref" || fail "ddp$n: one process failed"
    SIMCUDA_STRICT=1 PLANALLOC_STATS=1 PLANALLOC_PLAN_TIME=0 LD_PRELOAD="$pre" $w/ddp_train "${shape[@]}" --shards $n \
      >"$tmp/ddp$n.one.out" 2>"$tmp/ddp$n.one.err" || fail "ddp$n: one process under planalloc failed"
    one=$(stat ddp$n.one "host waits")
    for mode in raw planalloc budget; do
      env=() d=$tmp/ddp$n.$mode
      [ $mode = raw ] || env=(LD_PRELOAD="$pre" PLANALLOC_STATS=1 PLANALLOC_PLAN_TIME=0)
      [ $mode = planalloc ] && [ $n = 2 ] && mkdir "$tmp/ddpdump" && env+=(PLANALLOC_DUMP="$tmp/ddpdump")
      [ $mode = budget ] && env+=(PLANALLOC_BUDGET=$(($(sed -n 1p "$tmp/ddp$n.raw/peak.0") * 75 / 100)) PLANALLOC_POISON=1)
      env "${env[@]}" SIMCUDA_STRICT=1 "$src/scripts/launch-ranks.sh" $n --out "$d" -- \
        sh -c "SIMCUDA_PEAK_FILE=$d/peak.\$RANK exec $w/ddp_train ${shape[*]}" || fail "ddp$n.$mode: a rank failed: $(cat "$d"/*.err)"
      for ((r = 0; r < n; r++)); do
        cmp -s "$tmp/ddp$n.ref" "$d/rank.$r.out" || fail "ddp$n.$mode: rank $r differs from one process"
      done
    done
    for ((r = 0; r < n; r++)); do
      raw=$(sed -n $((r + 1))p "$tmp/ddp$n.raw/peak.$r") got=$(sed -n $((r + 1))p "$tmp/ddp$n.planalloc/peak.$r")
      [ "$got" -le $(((raw + page - 1) / page * page + page)) ] || fail "ddp$n: rank $r peak $got > a page over $raw without planalloc"
      grep -q '^planalloc: from a passed library *[1-9]' "$tmp/ddp$n.planalloc/rank.$r.err" || fail "ddp$n: rank $r's libsimccl buffer not passed"
      waits=$(awk '/^planalloc: host waits  / { print $4 }' "$tmp/ddp$n.planalloc/rank.$r.err")
      [ "${waits:-x}" -le "$one" ] || fail "ddp$n: rank $r waited on the host $waits times, one process $one"
    done
    if [ $n = 2 ]; then
      for r in 0 1; do ls "$tmp"/ddpdump/planalloc.*.d$r.r$r.*.stats.json >/dev/null || fail "ddp2: no dumps named for rank $r on device $r"; done
      "$build/bin/planalloc" report "$tmp/ddpdump" >"$tmp/ddp.report" || fail "ddp2: planalloc report failed"
      grep -q '^planalloc report: 2 processes$' "$tmp/ddp.report" && grep -Eq '^  0 +[0-9]+ +0 ' "$tmp/ddp.report" &&
        grep -Eq '^  1 +[0-9]+ +1 ' "$tmp/ddp.report" || fail "ddp2: no table of the ranks: $(tail -4 "$tmp/ddp.report")"
      grep -q "^  plot: $tmp/ddpdump/planalloc.ranks.memory.svg\$" "$tmp/ddp.report" &&
        head -1 "$tmp/ddpdump/planalloc.ranks.memory.svg" | grep -q '^<svg xmlns="http://www.w3.org/2000/svg"' ||
        fail "ddp2: no plot of the ranks: $(tail -2 "$tmp/ddp.report")"
    fi
    moved=$(grep -h '^planalloc: bytes moved to host ' "$tmp/ddp$n.budget"/rank.*.err | awk '{ s += $6 } END { print s + 0 }')
    [ "$moved" -gt 0 ] || fail "ddp$n: the budget never bound"
    echo "ddp$n: ranks = one process; rank 0 peak $(sed -n 1p "$tmp/ddp$n.planalloc/peak.0") (without $(sed -n 1p "$tmp/ddp$n.raw/peak.0")); budget moved $moved bytes"
  done
  ;;
peak)
  # each a steady footprint >= 256 MiB; 8 iterations: the plan serves >= 2 periods
  for n in resnet50:4 G_1:8 multistream; do
    mkdir "$tmp/$n"
    if [ $n = multistream ]; then
      PLANALLOC_DUMP=$tmp/$n run $n $w/multistream --iters 8 --elems 24000000
    else
      PLANALLOC_DUMP=$tmp/$n run $n $w/trace_replay "$src/tests/data/${n%:*}.csv" --iterations 8 --scale ${n#*:} --sample 1
    fi
    json=$(cat "$tmp"/$n/*.stats.json)
    get() { echo "$json" | sed -nE "s/.*\"$1\": ([0-9]+).*/\1/p"; }
    peak=$(cat "$tmp/$n.peak1") served=$(get served_peak_bytes)
    bound=$(( $(get iteration_maxlive_bytes) + $(get persistent_bytes) ))
    [ "$bound" -ge $((256 << 20)) ] || fail "$n: footprint $bound below 256 MiB"
    echo "$n: peak $peak, served phase $served, bound $bound, without preload $(cat "$tmp/$n.peak0")"
    [ $((peak * 100)) -le $((bound * 105)) ] || fail "$n: peak $peak > 1.05 x bound $bound"
    [ "$served" -gt 0 ] || fail "$n: no served phase measured"
    [ $((served * 100)) -le $((bound * 101)) ] || fail "$n: served-phase peak $served > 1.01 x bound $bound"
    # the plan's range shares a page with the persistent buffers (a few bytes here)
    page=$(get page_bytes) pool=$(get plan_pool_bytes)
    pages=$(( (pool + $(get persistent_bytes) + page - 1) / page ))
    [ "$served" -le $((pages * page)) ] || fail "$n: served phase $served > $pages pages: the plan's range holds pages of its own"
  done
  # The served steady state makes no driver call: no page mapped after the first served
  # periods, even for a plan with slack (start-best's) whose pages fall idle in turn.
  for it in 8 12; do
    PLANALLOC_ALGO=start-best run sb$it $w/trace_replay "$src/tests/data/resnet50.csv" --iterations $it --scale 4 --sample 1
  done
  [ "$(stat sb8 "page maps")" = "$(stat sb12 "page maps")" ] ||
    fail "pages mapped in the served phase: $(stat sb8 "page maps") after 8 iterations, $(stat sb12 "page maps") after 12"
  # A plan the program leaves for a while each window (twelve 4-event steps, then three
  # 40 MiB buffers at once: a snapshot window's edge, an eval step): the stretch takes the
  # plan's idle pages. Held pinned beside it, they made 250 MiB of a 184 MiB max-live.
  awk 'BEGIN { M = 1048576; print "id,lower,upper,size"; c = 37; print 0 ",0," c + 6 "," 64 * M; id = 1
    for (k = 0; k < 12; k++) { b = 1 + 3 * k; print id++ "," b "," b + 2 "," 32 * M; print id++ "," b + 1 "," b + 3 "," 32 * M }
    for (j = 0; j < 3; j++) print id++ "," c + j "," c + j + 3 "," 40 * M }' >"$tmp/diverge.csv"
  run diverge $w/trace_replay "$tmp/diverge.csv" --iterations 8 --sample 1
  [ "$(stat diverge "plans")" -ge 1 ] || fail "diverge: the 4-event step was not planned"
  peak=$(cat "$tmp/diverge.peak1") bound=$(cat "$tmp/diverge.peak0") # the simulator's own: max-live
  echo "diverge: peak $peak, max-live $bound"
  [ $((peak * 100)) -le $((bound * 105)) ] || fail "diverge: peak $peak > 1.05 x max-live $bound"
  ;;
off)
  PLANALLOC_MODE=off run mlp $w/mlp_train --iters 5
  [ "$(cat "$tmp/mlp.peak0")" = "$(cat "$tmp/mlp.peak1")" ] || fail "off: peak changed"
  ! grep -q 'statistics' "$tmp/mlp.err" || fail "off: planalloc acted"
  ;;
env)
  PLANALLOC_WARMUP=lots PLANALLOC_COLOUR=red run mlp $w/mlp_train --iters 8
  grep -q '^planalloc: warning: .*PLANALLOC_WARMUP' "$tmp/mlp.err" || fail "no warning for the bad value"
  grep -q '^planalloc: warning: .*PLANALLOC_COLOUR' "$tmp/mlp.err" || fail "no warning for the unknown key"
  [ "$(stat mlp "served from the plan")" -gt 0 ] || fail "defaults not used"
  # PLANALLOC_PASS_MODULES: a name is a file name up to its version suffix, spaces trimmed
  # (a part of a name matched before: libcuda passed libcudart's allocations)
  PLANALLOC_PASS_MODULES=mlp run pm0 $w/mlp_train --iters 8
  [ "$(stat pm0 "from a passed library")" = 0 ] || fail "PLANALLOC_PASS_MODULES=mlp passed mlp_train's allocations"
  PLANALLOC_PASS_MODULES=" libnone , mlp_train " run pm1 $w/mlp_train --iters 8
  [ "$(stat pm1 "from a passed library")" -gt 0 ] && [ "$(stat pm1 allocations)" = 0 ] || fail "' mlp_train ' did not pass mlp_train's allocations"
  # PLANALLOC_DUMP is made, parents too; where it cannot be, one warning
  PLANALLOC_DUMP=$tmp/new/a/b run dmk $w/mlp_train --iters 8
  [ "$(ls "$tmp"/new/a/b/planalloc.*.stats.json | wc -l)" = 1 ] || fail "no dumps in a directory PLANALLOC_DUMP named"
  touch "$tmp/file"
  PLANALLOC_DUMP=$tmp/file/d PLANALLOC_EVENTS=1 run dno $w/mlp_train --iters 8
  [ "$(grep -c warning "$tmp/dno.err")" = 1 ] && grep -q "^planalloc: warning: cannot make the dump directory $tmp/file/d (Not a directory): no dumps written$" "$tmp/dno.err" ||
    fail "an impossible dump directory: $(grep warning "$tmp/dno.err")"
  # The verdict at exit: where the dumps are, and the command that reads them
  grep -q "^planalloc: dumps in $tmp/new/a/b: planalloc report $tmp/new/a/b$" "$tmp/dmk.err" || fail "dmk: no line says where the dumps are"
  # PyTorch's caching allocator between the program and planalloc: said, unless it is off
  PRE="$pre $build/tests/libtorch_cuda.so" run tc $w/mlp_train --iters 8
  grep -q "^planalloc: warning: PyTorch's caching allocator is on: planalloc sees its segments, not the tensors; set PYTORCH_NO_CUDA_MEMORY_CACHING=1" \
    "$tmp/tc.err" || fail "libtorch_cuda loaded, its caching allocator on: not said"
  PYTORCH_NO_CUDA_MEMORY_CACHING=1 PRE="$pre $build/tests/libtorch_cuda.so" run tc1 $w/mlp_train --iters 8
  ! grep -q "caching allocator is on" "$tmp/tc1.err" || fail "PYTORCH_NO_CUDA_MEMORY_CACHING=1: still said to be on"
  # CUDA calls and no allocation (cudaFree(NULL) alone, from Python through ctypes)
  ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 LD_PRELOAD=$pre python3 -c 'import ctypes; ctypes.CDLL("libcudart.so.13").cudaFree(None)' 2>"$tmp/na.err" ||
    fail "no allocation: the program failed: $(cat "$tmp/na.err")"
  grep -q "^planalloc: warning: no CUDA allocation seen: nothing planned" "$tmp/na.err" || fail "no allocation: not said: $(cat "$tmp/na.err")"
  ;;
dumps)
  mkdir "$tmp/d"
  PLANALLOC_DUMP=$tmp/d run mlp $w/mlp_train --iters 6
  for k in trace.csv plan.csv access.csv stats.json; do
    f=$(ls "$tmp"/d/planalloc.*.$k 2>/dev/null) || fail "no $k dump"
    case $k in
      stats.json) grep -q '^{"version": 1,' "$f" || fail "$k unversioned" ;;
      access.csv) head -1 "$f" | grep -q '^# planalloc access 2$' || fail "$k unversioned"
                  sed -n 2p "$f" | grep -q '^launch,stream,buffer,event$' || fail "$k header" ;;
      *) head -1 "$f" | grep -q "^# planalloc ${k%.csv} 1$" || fail "$k unversioned" ;;
    esac
  done
  # every callsite the trace names has its frames, and the first frame in the program is
  # where it called cudaMalloc: the module is the program, the offset is the return
  # address of a call to cudaMalloc in it (objdump) less one
  s=$(ls "$tmp"/d/*.sites.csv)
  head -1 "$s" | grep -qx '# planalloc sites 1' || fail "sites.csv unversioned"
  named=$(awk -F, 'NR > 2 && $5 !~ /^0+$/ { print $5 }' "$(ls "$tmp"/d/*.trace.csv)" | sort -u)
  [ -n "$named" ] || fail "no callsite in the trace"
  for site in $named; do grep -q "^$site," "$s" || fail "callsite $site has no frames in the sites dump"; done
  returns=$(objdump -d --no-show-raw-insn "$w/mlp_train" |
    awk 'after { sub(/^ +/, ""); sub(/:.*/, ""); print; after = 0 } /call.*<cudaMalloc(@plt)?>/ { after = 1 }')
  [ -n "$returns" ] || fail "objdump found no call to cudaMalloc in mlp_train"
  prog=$(realpath "$w/mlp_train")
  for site in $named; do
    off=$(awk -F, -v s="$site" -v m="$prog" '$1 == s && $3 == m { print $4; exit }' "$s")
    [ -n "$off" ] || fail "callsite $site has no frame in $prog"
    echo "$returns" | grep -qx "$(printf '%x' $((off + 1)))" || fail "callsite $site: $off + 1 is no return from cudaMalloc"
  done
  "$build/bin/planalloc-plan" "$(ls "$tmp"/d/*.trace.csv)" >/dev/null || fail "the trace does not re-plan"
  "$build/bin/planalloc-plan" "$(ls "$tmp"/d/*.plan.csv)" >/dev/null || fail "the plan does not re-plan"
  # the trace and access dumps replay in planalloc-sim: no OOM at full budget, moves at half
  sim() { "$build/bin/planalloc-sim" --budget "$1" --policy planned --dump "$(ls "$tmp"/d/*.trace.csv)" "$(ls "$tmp"/d/*.access.csv)"; }
  full=$(sim 100) half=$(sim 50) || fail "planalloc-sim does not read the dumps"
  # the row's columns by header name
  col() { echo "$1" | awk -F'|' -v want="$2" 'NR == 1 { for (i = 1; i <= NF; i++) { gsub(/^ +| +$/, "", $i); if ($i == want) c = i } } NR == 3 { print $c + 0 }'; }
  [ "$(col "$full" "out MiB")" = 0 ] && [ "$(col "$full" OOMs)" = 0 ] || fail "sim at 100 %: $full"
  awk -v o="$(col "$half" "out MiB")" 'BEGIN { exit !(o > 0) }' || fail "sim at 50 % moved nothing: $half"
  ;;
race)
  export SIMCUDA_KERNEL_US=5000
  for mode in streams pointer copy memset sync graph; do
    PLANALLOC_FREE=ordered run race_$mode $build/tests/reuse_race $mode 3
    grep -q "in 3 of 3 rounds" "$tmp/race_$mode.err" || fail "race $mode: the freed range was not reused: $(grep reuse_race "$tmp/race_$mode.err")"
    [ "$(stat race_$mode "host waits")" = 0 ] || fail "race $mode: planalloc waited on the host $(stat race_$mode "host waits") times"
    PLANALLOC_FREE=sync run race_sync_$mode $build/tests/reuse_race $mode 3
    [ "$(stat race_sync_$mode "host waits for frees")" -gt 0 ] || fail "race $mode: PLANALLOC_FREE=sync did not wait"
    LD_PRELOAD="$unordered" $build/tests/reuse_race $mode 3 >"$tmp/race_un_$mode.out" 2>"$tmp/race_un_$mode.err"
    cmp -s "$tmp/race_$mode.ref" "$tmp/race_un_$mode.out" && fail "race $mode: the unordered build gave the right sums: the test cannot fail"
    echo "race $mode: same sums as cudaFree, range reused 3 of 3, 0 host waits; unordered: $(diff "$tmp/race_$mode.ref" "$tmp/race_un_$mode.out" | grep -c '^>') of 3 sums wrong"
  done
  # streams made and destroyed every round, more of them than planalloc has lanes (64):
  # the retired ones give theirs back (asked, no wait), and the order holds
  # another device's kernel under peer access reading the freed buffer (peer), or writing
  # the reused one (peerwrite): a lane of its own, ordered on the devices, no host wait
  # (before it had a lane, peerwrite's writer was not ordered at all: wrong sums)
  for mode in peer peerwrite; do
    SIMCUDA_DEVICES=2 PLANALLOC_FREE=ordered run race_$mode $build/tests/reuse_race $mode 3
    grep -q "in 3 of 3 rounds" "$tmp/race_$mode.err" || fail "race $mode: the freed range was not reused"
    [ "$(stat race_$mode "host waits")" = 0 ] || fail "race $mode: planalloc waited on the host $(stat race_$mode "host waits") times"
    SIMCUDA_DEVICES=2 LD_PRELOAD="$unordered" $build/tests/reuse_race $mode 3 >"$tmp/race_un_$mode.out" 2>"$tmp/race_un_$mode.err"
    cmp -s "$tmp/race_$mode.ref" "$tmp/race_un_$mode.out" && fail "race $mode: the unordered build gave the right sums: the test cannot fail"
    echo "race $mode: same sums as cudaFree, range reused 3 of 3, 0 host waits; unordered: $(diff "$tmp/race_$mode.ref" "$tmp/race_un_$mode.out" | grep -c '^>') of 3 sums wrong"
  done
  PLANALLOC_FREE=ordered SIMCUDA_KERNEL_US=500 run race_churn $build/tests/reuse_race churn 48
  grep -q "in 48 of 48 rounds" "$tmp/race_churn.err" || fail "race churn: the freed range was not reused"
  [ "$(stat race_churn "host waits")" = 0 ] || fail "race churn: planalloc waited on the host $(stat race_churn "host waits") times"
  echo "race churn: 96 streams made and destroyed, same sums, 0 host waits"
  # under a budget, the freed buffer's own pages serve a new buffer elsewhere at once while
  # the reader still reads them: their handles move with a wait on the GPU, none on the
  # host, and their old addresses are unmapped only once the reader is done (STRICT)
  # (four rounds: a later round's buffer lands on a page handed over in an earlier one;
  # each round ends with cudaDeviceSynchronize, which planalloc hears, so that page's
  # address is free at once: before it did, the host waited once a run on a loaded machine)
  PLANALLOC_BUDGET=64MiB PLANALLOC_FREE=ordered run race_page $build/tests/reuse_race page 4
  [ "$(stat race_page "host waits")" = 0 ] || fail "race page: planalloc waited on the host $(stat race_page "host waits") times"
  # (the first round's new buffer can only take the freed pages; later ones may find
  # pages idle since the last round, known done, and take those first)
  [ "$(stat race_page "pages recycled under work")" -ge 1 ] ||
    fail "race page: no page recycled under the reader"
  # the unordered build must get a sum wrong (its reader reads 100 ms after the overwrite
  # was queued; a machine loaded past that can hide it once: up to three tries)
  for try in 1 2 3; do
    PLANALLOC_BUDGET=64MiB LD_PRELOAD="$unordered" $build/tests/reuse_race page 4 >"$tmp/race_un_page.out" 2>"$tmp/race_un_page.err"
    cmp -s "$tmp/race_page.ref" "$tmp/race_un_page.out" || break
  done
  cmp -s "$tmp/race_page.ref" "$tmp/race_un_page.out" && fail "race page: the unordered build gave the right sums: the test cannot fail"
  echo "race page: $(stat race_page "pages recycled under work") pages recycled under a reader, same sums, 0 host waits;" \
    "unordered: $(diff "$tmp/race_page.ref" "$tmp/race_un_page.out" | grep -c '^>') of 4 sums wrong"
  # the program's own sync says its work is done: a page freed after it serves elsewhere at
  # once, with no drain and no wait; without the sync, its memory moves behind the copy stream
  for mode in none stream device; do
    PLANALLOC_BUDGET=64MiB PLANALLOC_FREE=ordered run known_$mode $build/tests/sync_known $mode 2
    [ "$(stat known_$mode "host waits")" = 0 ] || fail "sync $mode: planalloc waited on the host $(stat known_$mode "host waits") times"
  done
  [ "$(stat known_none "pages recycled under work")" -ge 1 ] || fail "sync none: no page recycled under work: the test cannot fail"
  for mode in stream device; do
    [ "$(stat known_$mode "pages recycled under work")" = 0 ] ||
      fail "sync $mode: $(stat known_$mode "pages recycled under work") pages drained though the program synced before the free"
  done
  echo "sync: a page freed after cudaStreamSynchronize or cudaDeviceSynchronize serves at once (0 drains, 0 host waits);" \
    "without the sync, $(stat known_none "pages recycled under work") drains"
  ;;
shadow)
  export PRE=$shadow
  every_workload
  for n in mlp tr trd ms vg rp; do checked $n; done
  ;;
stress)
  export PRE=$shadow
  export PLAN_TIME=10 # the default: planned on the planner's own thread
  run st $build/tests/stress 100000 4
  grep -q ', 0 failures$' "$tmp/st.out" || fail "stress: $(cat "$tmp/st.out")"
  checked st
  # helpers switching among two devices: each device's buffers from its own pool (the
  # shadow checker sees both), frees routed by address, and no kernel uses memory of a
  # device it may not (SIMCUDA_STRICT)
  SIMCUDA_DEVICES=2 STRESS_DEVICES=2 run stdev $build/tests/stress 40000 4
  grep -q ', 0 failures$' "$tmp/stdev.out" || fail "stress on 2 devices: $(cat "$tmp/stdev.out")"
  [ "$(devstat stdev 1 allocations)" -gt 0 ] || fail "stress on 2 devices: nothing allocated in device 1's pool"
  checked stdev
  run st1 $build/tests/stress 20000 1 # alone, the repeating thread is planned and served
  grep -q ', 0 failures$' "$tmp/st1.out" || fail "stress: $(cat "$tmp/st1.out")"
  [ "$(stat st1 "served from the plan")" -gt 0 ] || fail "stress: the repeating thread was never planned"
  checked st1
  ;;
capture)
  run cap $build/tests/capture
  # ours: the first buffer, the relaxed capture's and the one made between its two captures;
  # the two refused ones passed through
  [ "$(stat cap allocations)" = 3 ] || fail "capture: $(stat cap allocations) allocations planned, want 3"
  # its four launches are all captured: none is a launch now (no access, no clock tick)
  [ "$(stat cap launches)" = 0 ] && [ "$(stat cap "launches captured")" = 4 ] ||
    fail "capture: $(stat cap launches) launches and $(stat cap "launches captured") captured, want 0 and 4"
  grep -q "^planalloc: warning: cudaFreeAsync of a planalloc buffer inside stream capture" "$tmp/cap.err" || fail "capture: no warning for the refused free"
  ;;
phases)
  PRE=$shadow run ph $build/tests/phases 12 6
  checked ph
  [ "$(stat ph plans)" = 2 ] || fail "phases: $(stat ph plans) plans made, want 2 (train and eval)"
  [ "$(stat ph "kept plans served again")" -ge 3 ] || fail "phases: kept plans not served again"
  ;;
async)
  run ar $build/tests/async_reuse 12
  [ "$(stat ar "served from the plan")" -gt 0 ] || fail "async: never served from a plan"
  ;;
entry)
  run ep $build/tests/entry_points
  [ "$(stat ep allocations)" = 5 ] && [ "$(stat ep frees)" = 5 ] ||
    fail "entry points: $(stat ep allocations) allocations and $(stat ep frees) frees reached the preload, want 5 and 5"
  ;;
never)
  STRESS_RANDOM=1 STRESS_NOFORK=1 run nv $build/tests/stress 20000 1
  grep -q ', 0 failures$' "$tmp/nv.out" || fail "never: $(cat "$tmp/nv.out")"
  [ "$(stat nv plans)" = 0 ] || fail "never: a random program got a plan"
  [ "$(stat nv "served best fit")" = "$(stat nv allocations)" ] || fail "never: not everything served best fit"
  grep -q "^planalloc: warning: no iteration repeated in $(stat nv allocations) allocations: all served best fit, none planned" "$tmp/nv.err" ||
    fail "never: the verdict at exit does not say no iteration repeated"
  ;;
versioned)
  nm -D --undefined-only $w/mlp_train | grep -q ' cudaMalloc@libcudart.so.13$' || fail "mlp_train not versioned"
  run mlp $w/mlp_train --iters 3
  [ "$(stat mlp "runtime calls (exported)")" -gt 0 ] || fail "versioned references bypass the preload"
  ;;
budget)
  # Pages one launch needs at once bound every policy from below: mlp's weight update
  # touches w1 and dw1 (4 MiB each: 4 pages, half its peak, only because a budget starts
  # such buffers on pages: at 256-byte offsets, 5 or 6); multistream's square
  # touches two of its three 8 MiB buffers; vendor_gemm's GEMMs three of five matrices.
  budgets tr "70 50 35" "" $w/transformer_train --iters 5 --seq 512 --dim 32 --batch 4 --layers 6
  budgets rp "70 50 35" "" $w/trace_replay "$src/tests/data/resnet50.csv" --iterations 4 --scale 32
  budgets mlp "70 50" "35" $w/mlp_train --iters 6 --batch 8 --in 1024 --hidden 1024 --out 1024
  # deep, each launch a small share of the peak: 35 % works (issue #25's floor)
  budgets mlpdeep "50 35" "" $w/mlp_train --iters 4 --batch 32 --in 512 --hidden 512 --out 512 --layers 16
  # megengine's layout puts dw1 across 3 pages: the served plan is laid out again with
  # such slots on pages (fit_budget), or the SGD step fails at 50 %
  PLANALLOC_ALGO=megengine budgets mlp_megengine "50" "" $w/mlp_train --iters 6 --batch 8 --in 1024 --hidden 1024 --out 1024
  [ "$(stat mlp_megengine.50.0 "served from the plan")" -gt 0 ] || fail "mlp_megengine: the plan never served"
  budgets ms "70" "50 35" $w/multistream --iters 6 --elems 2097152
  # 13 s an iteration under the sanitizers (a Debug build of simblas's GEMM): Release only
  [ -n "$asan" ] || budgets vg "70" "50" $w/vendor_gemm --iters 3 --dim 1024
  # a restore queued for one stream, read at once on another: both wait for the copy
  $build/tests/restore_race 3 >"$tmp/race.ref" || fail "restore_race without the preload"
  SIMCUDA_STRICT=1 PLANALLOC_STATS=1 PLANALLOC_BUDGET=36M LD_PRELOAD="$pre" $build/tests/restore_race 3 >"$tmp/race.out" 2>"$tmp/race.err" ||
    fail "restore_race: status $? under the budget: $(grep -m2 error "$tmp/race.err")"
  cmp -s "$tmp/race.ref" "$tmp/race.out" || fail "restore_race: a reader on another stream did not wait for the restore: $(diff "$tmp/race.ref" "$tmp/race.out" | head -3)"
  [ "$(stat race "bytes brought back")" -gt 0 ] || fail "restore_race: nothing came back: the budget never bound"
  # a page restored and sent out again before anyone used it: the copy out waits for the restore
  $build/tests/restore_evict 3 >"$tmp/re.ref" || fail "restore_evict without the preload"
  SIMCUDA_STRICT=1 SIMCUDA_COPY_GBPS=1 PLANALLOC_EVICT_REPEAT=0 PLANALLOC_STATS=1 PLANALLOC_BUDGET=6M LD_PRELOAD="$pre" \
    $build/tests/restore_evict 3 >"$tmp/re.out" 2>"$tmp/re.err" || fail "restore_evict: status $? under the budget: $(grep -m2 error "$tmp/re.err")"
  cmp -s "$tmp/re.ref" "$tmp/re.out" || fail "restore_evict: a copy out read a page before its restore: $(diff "$tmp/re.ref" "$tmp/re.out" | head -3)"
  [ "$(stat re "pages brought back")" -ge 3 ] || fail "restore_evict: fewer than a restore a round: the case never arose"
  # evictions made for launches: exact results, and the host never waits for them
  $build/tests/evict_launch 6 >"$tmp/el.ref" || fail "evict_launch without the preload"
  for gbps in 0 1; do
    SIMCUDA_STRICT=1 SIMCUDA_COPY_GBPS=$gbps PLANALLOC_POISON=1 PLANALLOC_STATS=1 PLANALLOC_BUDGET=10M LD_PRELOAD="$pre" \
      $build/tests/evict_launch 6 >"$tmp/el.out" 2>"$tmp/el.err" || fail "evict_launch: status $? under the budget: $(grep -m2 error "$tmp/el.err")"
    cmp -s "$tmp/el.ref" "$tmp/el.out" || fail "evict_launch (copies at $gbps GB/s, 0: full speed): results differ: $(diff "$tmp/el.ref" "$tmp/el.out" | head -3)"
    ev=$(stat el evictions) waits=$(stat el "host waits for copies") owed=$(stat el "copy waits left to launches")
    # the first round's allocations leave their waits to the launches after them; the 5
    # rounds after it evict 4 buffers each, for launches
    [ "$ev" -ge 20 ] && [ "$waits" = 0 ] || fail "evict_launch: the host waited $waits times for $ev evictions"
    [ "$gbps" = 0 ] || [ "$owed" -ge 1 ] || fail "evict_launch: no allocation left its wait to the launches at $gbps GB/s"
    echo "evict_launch (copies at $gbps GB/s, 0: full speed): $ev evictions, $waits host waits, $owed waits left to launches"
  done
  # cudaMalloc returns memory a copy out still reads; a kernel reaching it only through
  # a pointer in device memory must still wait for that copy (slow copies make it show)
  $build/tests/owed_malloc 2 >"$tmp/om.ref" || fail "owed_malloc without the preload"
  for poison in 0 1; do
    SIMCUDA_STRICT=1 SIMCUDA_COPY_GBPS=1 PLANALLOC_POISON=$poison PLANALLOC_STATS=1 PLANALLOC_BUDGET=10M LD_PRELOAD="$pre" \
      $build/tests/owed_malloc 2 >"$tmp/om.out" 2>"$tmp/om.err" || fail "owed_malloc: status $? under the budget: $(grep -m2 error "$tmp/om.err")"
    cmp -s "$tmp/om.ref" "$tmp/om.out" || fail "owed_malloc (poison $poison): the victim's bytes changed: $(diff "$tmp/om.ref" "$tmp/om.out" | head -3)"
    [ "$(stat om "copy waits left to launches")" -ge 1 ] || fail "owed_malloc: no allocation left its wait to a launch"
  done
  # a buffer evicted while kernels on two streams read it: its copy out waits for both
  $build/tests/evict_readers 2 >"$tmp/readers.ref" || fail "evict_readers without the preload"
  SIMCUDA_STRICT=1 PLANALLOC_STATS=1 PLANALLOC_BUDGET=36M LD_PRELOAD="$pre" $build/tests/evict_readers 2 >"$tmp/readers.out" 2>"$tmp/readers.err" ||
    fail "evict_readers: status $? under the budget: $(grep -m2 error "$tmp/readers.err")"
  cmp -s "$tmp/readers.ref" "$tmp/readers.out" || fail "evict_readers: a reader saw the next buffer: $(diff "$tmp/readers.ref" "$tmp/readers.out" | head -3)"
  [ "$(stat readers evictions)" -gt 0 ] || fail "evict_readers: nothing left: the budget never bound"
  # a CUDA graph reads a buffer that left the device: it comes back, the budget is lifted
  $build/tests/graph_budget >"$tmp/graph.ref" || fail "graph_budget without the preload"
  SIMCUDA_STRICT=1 PLANALLOC_POISON=1 PLANALLOC_STATS=1 PLANALLOC_BUDGET=36M LD_PRELOAD="$pre" $build/tests/graph_budget >"$tmp/graph.out" 2>"$tmp/graph.err" ||
    fail "graph_budget: status $? under the budget"
  cmp -s "$tmp/graph.ref" "$tmp/graph.out" || fail "graph_budget: the graph read an evicted buffer: $(cat "$tmp/graph.out")"
  [ "$(stat graph "bytes brought back")" -gt 0 ] || fail "graph_budget: nothing came back: the budget never bound"
  grep -q '^planalloc: warning: a CUDA graph was launched under PLANALLOC_BUDGET=37748736 bytes' "$tmp/graph.err" || fail "graph_budget: no warning"
  # A gone before the capture (the captured launch must not wait for copies; also from a
  # stream that joined the capture), and A leaving inside a relaxed capture (its copy
  # out must not record on the capturing stream)
  for mode in captured relaxed forked; do
    SIMCUDA_STRICT=1 PLANALLOC_POISON=1 PLANALLOC_STATS=1 PLANALLOC_BUDGET=36M LD_PRELOAD="$pre" $build/tests/graph_budget $mode >"$tmp/graph.out" 2>"$tmp/graph.err" ||
      fail "graph_budget $mode: status $? under the budget: $(grep -m2 -E '^planalloc: error|^graph_budget' "$tmp/graph.err")"
    cmp -s "$tmp/graph.ref" "$tmp/graph.out" || fail "graph_budget $mode: the graph read an evicted buffer: $(cat "$tmp/graph.out")"
    [ "$(stat graph evictions)" -gt 0 ] || fail "graph_budget $mode: nothing left: the budget never bound"
  done
  SIMCUDA_STRICT=1 PLANALLOC_BUDGET=1M LD_PRELOAD="$pre" $w/mlp_train --iters 2 --in 1024 --hidden 1024 >"$tmp/imp.out" 2>"$tmp/imp.err"
  rc=$?
  [ $rc -ne 0 ] && [ $rc -lt 128 ] || fail "impossible budget: status $rc"
  grep -q '^planalloc: error: a 4194304-byte allocation needs 2 pages of 2097152 bytes, more than PLANALLOC_BUDGET=1048576 bytes holds (0): out of memory$' \
    "$tmp/imp.err" || fail "impossible budget: $(cat "$tmp/imp.err")"
  grep -q 'out of memory$' <(grep -v '^planalloc' "$tmp/imp.err") || fail "impossible budget: not the out-of-memory code"
  # one page: a two-page allocation's second page evicts its first; mapping must go on
  # from the page refused, not take the first back and evict it again (that looped
  # until the LEAVING list overflowed: a crash)
  SIMCUDA_STRICT=1 PLANALLOC_BUDGET=3M LD_PRELOAD="$pre" timeout 120 $w/transformer_train --iters 8 --layers 2 --seq 256 --dim 32 --batch 4 \
    >"$tmp/one.out" 2>"$tmp/one.err"
  rc=$?
  [ $rc -ne 0 ] && [ $rc -lt 124 ] || fail "one-page budget: status $rc"
  grep -q '^planalloc: error: cannot bring 3 buffers back within PLANALLOC_BUDGET=3145728 bytes' "$tmp/one.err" ||
    fail "one-page budget: $(grep -m2 error "$tmp/one.err")"
  ;;
planned)
  # trace_replay and vendor_gemm: minutes under the sanitizers
  planned tr 50 $w/transformer_train --iters 12 --seq 512 --dim 32 --batch 4 --layers 6
  [ -n "$asan" ] || planned rp 50 $w/trace_replay "$src/tests/data/resnet50.csv" --iterations 8 --scale 32
  planned ms 70 $w/multistream --iters 12 --elems 2097152
  # the forecast's iteration is the recording's less planalloc's waits, not its kernels
  # alone: multistream moves 8 MiB each way an iteration itself (16.8 ms at 1 GB/s, a sync
  # between), which its kernels leave out (over them alone its forecast read 5.6-11x
  # where it ran 1.5-1.7x)
  SIMCUDA_PEAK_FILE=$tmp/fc.peak0 $w/multistream --iters 8 --elems 2097152 >/dev/null 2>&1
  SIMCUDA_KERNEL_US=200 SIMCUDA_COPY_GBPS=1 PLANALLOC_LINK_GBPS=1 PLANALLOC_BUDGET=$(($(cat "$tmp/fc.peak0") * 9 / 10)) \
    LD_PRELOAD="$pre" $w/multistream --iters 8 --elems 2097152 >/dev/null 2>"$tmp/fc.err" || fail "forecast run: status $?"
  read -r it k <<<"$(sed -nE 's/^planalloc: budget .* the iteration.s ([0-9.]+) ms \(([0-9.]+) ms of kernels\).*/\1 \2/p' "$tmp/fc.err")"
  awk -v i="${it:-0}" -v k="${k:-0}" 'BEGIN { exit !(i >= 12 && k > 0 && i >= 2 * k) }' ||
    fail "forecast: the iteration ${it:-none} ms, its kernels ${k:-none} ms: $(grep -m1 'budget .* MiB:' "$tmp/fc.err")"
  echo "forecast: multistream's iteration $it ms, its kernels $k ms: $(grep -oE 'predicted [0-9.]+x' "$tmp/fc.err")"
  # every launch needs three of five 2-page matrices: only a planned victim that gives up
  # just the pages needed (not whole buffers, as the reactive score does) moves less.
  # Release only: the sanitizers' build takes 13 s an iteration (a Debug simblas GEMM)
  [ -n "$asan" ] || planned vg 70 $w/vendor_gemm --iters 5 --dim 1024
  # dtr's swap schedule followed in the served phase (PLANALLOC_SWAP_SCHEDULE, #25), kernels
  # of 200 us measured by the recording's events, poisoned copies at 2 GB/s: the same
  # output, and the schedule's copies out and back really made
  tr="$w/transformer_train --iters 12 --seq 512 --dim 32 --batch 4 --layers 6"
  SIMCUDA_PEAK_FILE=$tmp/sw.peak0 $tr >"$tmp/sw.ref" || fail "swap schedule: reference run"
  for poison in 0 1; do
    mkdir -p "$tmp/sw$poison.d"
    SIMCUDA_STRICT=1 SIMCUDA_KERNEL_US=200 SIMCUDA_COPY_GBPS=2 PLANALLOC_POISON=$poison PLANALLOC_SWAP_SCHEDULE=1 \
      PLANALLOC_DUMP=$tmp/sw$poison.d PLANALLOC_LINK_GBPS=2 \
      PLANALLOC_STATS=1 PLANALLOC_PLAN_TIME=0 PLANALLOC_BUDGET=$(($(cat "$tmp/sw.peak0") / 2)) LD_PRELOAD="$pre" $tr \
      >"$tmp/sw.out" 2>"$tmp/sw.err" || fail "swap schedule (poison $poison): status $?: $(tail -2 "$tmp/sw.err")"
    cmp -s "$tmp/sw.ref" "$tmp/sw.out" || fail "swap schedule (poison $poison): output differs"
    # the forecast, said before the served phase runs: its bytes out an iteration within
    # a third (and a page) of what the served phase then moved a period
    fo=$(sed -nE 's/^planalloc: budget [0-9.]+ MiB: predicted [0-9.]+x .* of kernels\)?, ([0-9.]+) MiB out and .*/\1/p' "$tmp/sw.err")
    mo=$(awk -v b="$(stat sw "bytes moved to host, served")" -v p="$(stat sw "periods served")" 'BEGIN { if (p > 0) printf "%.1f", b / p / 1048576 }')
    [ -n "$fo" ] && [ -n "$mo" ] && awk -v f="$fo" -v m="$mo" 'BEGIN { d = f - m; exit !((d < 0 ? -d : d) <= m / 3 + 2) }' ||
      fail "swap schedule (poison $poison): forecast ${fo:-none} MiB out an iteration, the served phase moved ${mo:-nothing}: $(grep -m1 'budget .* MiB:' "$tmp/sw.err")"
    echo "swap schedule (poison $poison): out $(stat sw "swaps out scheduled"), back $(stat sw "swaps back scheduled"), moved $(stat sw "bytes moved to host")"
    [ "$(stat sw "swaps out scheduled")" -gt 0 ] && [ "$(stat sw "swaps back scheduled")" -gt 0 ] ||
      fail "swap schedule (poison $poison): no scheduled swap made"
    modelled sw "$tmp/sw$poison.d"
    cp "$tmp/sw.err" "$tmp/sw$poison.err"
  done
  # a page that left keeps its address mapped to its handle and comes back into it, when
  # that handle is free again, with no mapping call (PLANALLOC_KEEP_MAPPED, #39): fewer
  # mapping calls than with every address unmapped, the same output (poisoned above too,
  # where nothing comes back uncopied), the device's memory still within the budget
  SIMCUDA_STRICT=1 SIMCUDA_KERNEL_US=200 SIMCUDA_COPY_GBPS=2 PLANALLOC_KEEP_MAPPED=off PLANALLOC_LINK_GBPS=2 \
    PLANALLOC_STATS=1 PLANALLOC_PLAN_TIME=0 PLANALLOC_BUDGET=$(($(cat "$tmp/sw.peak0") / 2)) LD_PRELOAD="$pre" $tr \
    >"$tmp/unkept.out" 2>"$tmp/unkept.err" || fail "unkept: status $?: $(tail -2 "$tmp/unkept.err")"
  cmp -s "$tmp/sw.ref" "$tmp/unkept.out" || fail "unkept: output differs"
  kept=$(stat sw0 "mapping calls") unkept=$(stat unkept "mapping calls")
  echo "kept addresses: $kept mapping calls, $(stat sw0 "pages back in kept handle") pages back in their handle; unmapped: $unkept"
  [ "$(stat sw0 "pages back in kept handle")" -gt 0 ] && [ "$(stat unkept "pages back in kept handle")" = 0 ] &&
    [ "$kept" -lt "$unkept" ] || fail "kept addresses: $kept mapping calls, unmapped $unkept"
  # each page mapped anew while the plan served has its cause counted, once
  causes=0
  for c in "no colour" "colour unbound" "address" "colour in use" "colour idle" "colour away"; do
    causes=$((causes + $(stat sw0 "served remaps, $c")))
  done
  [ "$causes" = "$(stat sw0 "page maps, served phase")" ] ||
    fail "served remaps by cause: $causes, page maps in the served phase: $(stat sw0 "page maps, served phase")"
  # pages whose stays never meet share a handle period after period (hues.c): the ResNet-50
  # replay at half its peak, 2 GB/s, made 1.71 mapping calls a page moved in its served
  # phase when the handles went as they came (each period's pages came back to find theirs
  # taken meanwhile), 1.32 coloured; at most 1.5 (a loaded machine: a second try)
  rh="$w/trace_replay $src/tests/data/resnet50.csv --iterations 6 --scale 32"
  SIMCUDA_PEAK_FILE=$tmp/rh.peak0 $rh >"$tmp/rh.ref" || fail "hues: reference"
  for try in 1 2; do
    SIMCUDA_STRICT=1 SIMCUDA_KERNEL_US=200 SIMCUDA_COPY_GBPS=2 PLANALLOC_LINK_GBPS=2 PLANALLOC_STATS=1 PLANALLOC_VERBOSE=1 \
      PLANALLOC_BUDGET=$(($(cat "$tmp/rh.peak0") / 2)) LD_PRELOAD="$pre" $rh >"$tmp/rh.out" 2>"$tmp/rh.err" ||
      fail "hues: status $?: $(tail -2 "$tmp/rh.err")"
    cmp -s "$tmp/rh.ref" "$tmp/rh.out" || fail "hues: output differs"
    calls=$(stat rh "mapping calls, served") moved=$(stat rh "pages moved, served")
    echo "hues: $calls mapping calls served for $moved pages moved, $(stat rh "host waits, served phase") served waits; $(grep -m1 -o 'budget handle colours: [0-9]* pages share [0-9]* handles' "$tmp/rh.err")"
    # more pages than handles, each coloured: pages share handles by plan
    grep -qE 'budget handle colours: ([0-9]+) pages share ([0-9]+) handles' "$tmp/rh.err" &&
      [ "$(sed -nE 's/.*budget handle colours: ([0-9]+) pages share ([0-9]+) handles.*/\1 \2/p' "$tmp/rh.err" | awk '{ print ($1 > $2) }')" = 1 ] ||
      fail "hues: no page shares a handle: $(grep -m1 'handle colours' "$tmp/rh.err")"
    [ "${moved:-0}" -gt 0 ] && [ $((calls * 2)) -le $((moved * 3)) ] && [ "$(stat rh "host waits, served phase")" = 0 ] && break
  done
  [ "${moved:-0}" -gt 0 ] && [ $((calls * 2)) -le $((moved * 3)) ] && [ "$(stat rh "host waits, served phase")" = 0 ] ||
    fail "hues: $calls mapping calls served for $moved pages moved (at most 1.5 a page, no served wait)"
  # outside the served phase victims are guessed: one whose page holds the handle a page
  # to map kept gives it back with no mapping call, and best fit takes mapped pages first
  # (#39). The same replay at 30 %, the recording's mapping calls a page moved (the first
  # map and access of each handle made left out): 1.67 before both, 1.74 with the fit
  # alone, 1.42 with both; at most 1.55 (a loaded machine: a second try)
  rest() {
    awk -v c="$(stat kv "mapping calls")" -v sc="$(stat kv "mapping calls, served")" -v m="$(stat kv "pages moved to host")" \
      -v b="$(stat kv "pages brought back")" -v sm="$(stat kv "pages moved, served")" \
      -v k="$(awk '$1 == "cuMemCreate" { print $2 }' "$tmp/kv.calls")" 'BEGIN { printf "%d %d", c - sc - 2 * k, m + b - sm }'
  }
  for try in 1 2; do
    SIMCUDA_STRICT=1 SIMCUDA_KERNEL_US=200 SIMCUDA_COPY_GBPS=2 PLANALLOC_LINK_GBPS=2 PLANALLOC_STATS=1 SIMCUDA_CALLS_FILE=$tmp/kv.calls \
      PLANALLOC_BUDGET=$(($(cat "$tmp/rh.peak0") * 3 / 10)) LD_PRELOAD="$pre" $rh >"$tmp/kv.out" 2>"$tmp/kv.err" ||
      fail "kept victims: status $?: $(tail -2 "$tmp/kv.err")"
    cmp -s "$tmp/rh.ref" "$tmp/kv.out" || fail "kept victims: output differs"
    read -r calls moved <<<"$(rest)"
    echo "kept victims: $(stat kv "evictions for a kept handle") evictions for a kept handle, $calls mapping calls for $moved pages moved outside the served phase"
    [ "$(stat kv "evictions for a kept handle")" -gt 0 ] && [ "$moved" -gt 0 ] && [ $((calls * 100)) -le $((moved * 155)) ] && break
  done
  [ "$(stat kv "evictions for a kept handle")" -gt 0 ] && [ "$moved" -gt 0 ] && [ $((calls * 100)) -le $((moved * 155)) ] ||
    fail "kept victims: $calls mapping calls for $moved pages moved outside the served phase (at most 1.55 a page)"
  # ResNet-50's GPU stream at half its peak (12 steps at 1/4, 25 us kernels, 25 GB/s):
  # outside the served phase, mapping calls a page moved (the first map and access of each
  # handle left out) were 1.92-1.94, 1.74-1.83 with the mapped fit and the kept victims,
  # and are 1.42-1.56 with the kept addresses unmapped a run at a time (6 runs); at most
  # 1.65, the output the same and no served host wait. Release only: a loaded sanitizer
  # build lags the simulated device, and the page choices with it
  if [ -z "$asan" ]; then
    ev="$w/event_replay $src/tests/data/ev.resnet50.log.xz --steps 12 --scale 4"
    SIMCUDA_KERNEL_US=25 SIMCUDA_PEAK_FILE=$tmp/ev.peak0 $ev >"$tmp/ev.ref" 2>/dev/null || fail "resnet50 stream: reference"
    for try in 1 2; do
      SIMCUDA_STRICT=1 SIMCUDA_KERNEL_US=25 SIMCUDA_COPY_GBPS=25 PLANALLOC_LINK_GBPS=25 PLANALLOC_STATS=1 \
        SIMCUDA_CALLS_FILE=$tmp/kv.calls PLANALLOC_BUDGET=$(($(cat "$tmp/ev.peak0") / 2)) LD_PRELOAD="$pre" $ev \
        >"$tmp/kv.out" 2>"$tmp/kv.err" || fail "resnet50 stream: status $?: $(tail -2 "$tmp/kv.err")"
      cmp -s "$tmp/ev.ref" "$tmp/kv.out" || fail "resnet50 stream: output differs"
      read -r calls moved <<<"$(rest)"
      echo "resnet50 stream at half: $calls mapping calls for $moved pages moved outside the served phase, $(stat kv "host waits, served phase") served waits"
      [ "$moved" -gt 0 ] && [ $((calls * 100)) -le $((moved * 165)) ] && [ "$(stat kv "host waits, served phase")" = 0 ] && break
    done
    [ "$moved" -gt 0 ] && [ $((calls * 100)) -le $((moved * 165)) ] && [ "$(stat kv "host waits, served phase")" = 0 ] ||
      fail "resnet50 stream: $calls mapping calls for $moved pages moved outside the served phase (at most 1.65 a page, no served wait)"
  fi
  # the H200's recordings replayed at half their peak under the swap schedule: every
  # launch reads the buffers the real one touched, so a page planalloc left away when a
  # launch needed it faults (SIMCUDA_STRICT) or changes the output; so too with the mover
  # (PLANALLOC_MOVER=on), whose thread moves and maps births beside the launches
  for m in resnet50 gpt; do
    hv="$w/event_replay $src/tests/data/h200.$m.trace.csv.xz --access $src/tests/data/h200.$m.access.csv.xz --steps 12 --scale 16"
    SIMCUDA_PEAK_FILE=$tmp/hv.peak0 $hv >"$tmp/hv.ref" 2>/dev/null || fail "h200 $m at half: reference"
    for mover in off on; do
      SIMCUDA_STRICT=1 SIMCUDA_KERNEL_US=20 PLANALLOC_STATS=1 PLANALLOC_MOVER=$mover PLANALLOC_BUDGET=$(($(cat "$tmp/hv.peak0") / 2)) \
        LD_PRELOAD="$pre" $hv >"$tmp/hv.out" 2>"$tmp/hv.err" || fail "h200 $m at half, mover $mover: status $?: $(tail -2 "$tmp/hv.err")"
      cmp -s "$tmp/hv.ref" "$tmp/hv.out" || fail "h200 $m at half, mover $mover: output differs"
      echo "h200 $m at half, mover $mover: $(stat hv "swaps out scheduled") swaps out scheduled, $(stat hv "mapping calls, served") mapping calls for $(stat hv "pages moved, served") pages moved served, $(stat hv "launches' moves, mover") moved by the mover, $(stat hv "pages mapped ahead of births") pages premapped"
      [ "$(stat hv "swaps out scheduled")" -gt 0 ] || fail "h200 $m at half, mover $mover: no swap schedule followed"
      [ $mover = off ] || [ "$(stat hv "launches' moves, mover")" -gt 0 ] || fail "h200 $m at half: the mover moved nothing"
    done
  done
  # the link the schedule and its forecast time the copies by: measured from the
  # recording's copies out (link.c) unless PLANALLOC_LINK_GBPS says; the simulator's link
  # at 2 GB/s reads 1.5-2.5 (it read 25, the option's default, before)
  lk="$w/trace_replay $src/tests/data/resnet50.csv --iterations 8 --scale 4"
  SIMCUDA_PEAK_FILE=$tmp/lk.peak0 $lk >/dev/null || fail "link: reference"
  for set in "" 25; do
    env ${set:+PLANALLOC_LINK_GBPS=$set} SIMCUDA_KERNEL_US=20 SIMCUDA_COPY_GBPS=2 PLANALLOC_STATS=1 \
      PLANALLOC_BUDGET=$(($(cat "$tmp/lk.peak0") / 2)) LD_PRELOAD="$pre" $lk >/dev/null 2>"$tmp/lk.err" || fail "link: status $?"
    said=$(grep -o 'at [0-9.]* GB/s ([A-Za-z_]*)' "$tmp/lk.err" | head -1)
    echo "link, PLANALLOC_LINK_GBPS=${set:-unset}: planned $said"
    if [ -z "$set" ]; then
      # where the host's memmove was slower than the link (the sanitizers' build on a loaded
      # machine: 1.2 GB/s measured once), simcuda says so, and the measure is that host's
      lo=1.5
      grep -q "^simcuda: warning: .* the link was the host's" "$tmp/lk.err" && lo=0.1
      echo "$said" | awk -v lo=$lo '{ exit !($2 >= lo && $2 <= 2.5 && $4 == "(measured)") }' || fail "link: measured $said, not about 2 GB/s"
    else
      [ "$said" = "at 25.0 GB/s (PLANALLOC_LINK_GBPS)" ] || fail "link: $said with PLANALLOC_LINK_GBPS=25"
    fi
  done
  # the schedule is planned in pages, by default, with the plan searched on its own thread
  # (where no context is current: the kernels' time must be read before, or nothing is
  # planned): on the demo's budget run it leaves the served phase fewer host waits than the
  # victims chosen at need (1 against 14-15 when measured), the same output
  if [ -z "$asan" ]; then
    rp="$w/trace_replay $src/tests/data/resnet50.csv --iterations 8 --scale 4"
    SIMCUDA_PEAK_FILE=$tmp/rp.peak0 $rp >"$tmp/rp.ref" || fail "demo run: reference"
    mkdir -p "$tmp/rp.d"
    for sched in 0 1; do
      SIMCUDA_KERNEL_US=20 PLANALLOC_SWAP_SCHEDULE=$sched PLANALLOC_STATS=1 PLANALLOC_BUDGET=$(($(cat "$tmp/rp.peak0") / 2)) \
        PLANALLOC_DUMP=$([ $sched = 1 ] && echo "$tmp/rp.d") \
        LD_PRELOAD="$pre" $rp >"$tmp/rp$sched.out" 2>"$tmp/rp$sched.err" || fail "demo run (schedule $sched): status $?"
      cmp -s "$tmp/rp.ref" "$tmp/rp$sched.out" || fail "demo run (schedule $sched): output differs"
      echo "demo run, schedule $sched: served waits $(stat rp$sched "host waits, served phase"), moved $(stat rp$sched "bytes moved to host"), scheduled $(stat rp$sched "swaps out scheduled")"
    done
    [ "$(stat rp1 "swaps out scheduled")" -gt 0 ] || fail "demo run: no swap schedule followed by default"
    [ "$(stat rp1 "host waits, served phase")" -lt "$(stat rp0 "host waits, served phase")" ] ||
      fail "demo run: the schedule's served phase waited as often as the victims at need"
    modelled rp1 "$tmp/rp.d"
    # the host held to the lead the schedule plans for (at most PLANALLOC_LEAD): the
    # resnet50 replay device-bound (200 us kernels, a 5 GB/s link the simulator can time)
    # at 50 % waits for no page in its served phase; unbounded (0), the host runs up to
    # the launch queue ahead and wants pages back whose copy out has not run (17 waits
    # when measured), and nothing paces it
    rp="$w/trace_replay $src/tests/data/resnet50.csv --iterations 6 --scale 32"
    SIMCUDA_PEAK_FILE=$tmp/ld.peak0 $rp >"$tmp/ld.ref" || fail "lead: reference"
    for lead in 32 0; do
      SIMCUDA_KERNEL_US=200 SIMCUDA_COPY_GBPS=5 PLANALLOC_LINK_GBPS=5 PLANALLOC_LEAD=$lead PLANALLOC_STATS=1 \
        PLANALLOC_BUDGET=$(($(cat "$tmp/ld.peak0") / 2)) LD_PRELOAD="$pre" $rp >"$tmp/ld$lead.out" 2>"$tmp/ld$lead.err" ||
        fail "lead $lead: status $?"
      cmp -s "$tmp/ld.ref" "$tmp/ld$lead.out" || fail "lead $lead: output differs"
      echo "lead $lead: served waits $(stat ld$lead "host waits, served phase"), pacing waits $(stat ld$lead "pacing waits"), periods $(stat ld$lead "periods served")"
      [ "$(stat ld$lead "periods served")" -gt 1 ] || fail "lead $lead: no served phase"
    done
    [ "$(stat ld32 "host waits, served phase")" = 0 ] && [ "$(stat ld32 "pacing waits")" -gt 0 ] ||
      fail "lead 32: the served phase waited for pages, or nothing paced the host"
    # under a budget a quick layout serves at once only within 0.1 % of max-live; else the
    # search on the planner's thread: at 30 %, this replay's quick layout (0.28 % above
    # max-live, served at once since 3ed09e1) moved 120 MiB an iteration, the searched one 59
    SIMCUDA_KERNEL_US=200 SIMCUDA_COPY_GBPS=5 PLANALLOC_LINK_GBPS=5 PLANALLOC_STATS=1 \
      PLANALLOC_BUDGET=$(($(cat "$tmp/ld.peak0") * 3 / 10)) LD_PRELOAD="$pre" $rp >"$tmp/tight.out" 2>"$tmp/tight.err" ||
      fail "30 %: status $?"
    cmp -s "$tmp/ld.ref" "$tmp/tight.out" || fail "30 %: output differs"
    per=$(awk -v b="$(stat tight "bytes moved to host, served")" -v p="$(stat tight "periods served")" 'BEGIN { if (p > 0) printf "%d", b / p / 1048576 }')
    echo "30 %: $per MiB out an iteration served, pool $(stat tight "planned pool") for max-live $(stat tight "iteration max-live")"
    [ -n "$per" ] && [ "$per" -le 80 ] || fail "30 %: ${per:-no served phase:} MiB out an iteration"
    [ "$(stat ld0 "host waits, served phase")" -gt 0 ] && [ "$(stat ld0 "pacing waits")" = 0 ] ||
      fail "lead 0: no served-phase wait to spare, or the host was paced"
    # an idle page's handle is taken from the page born on again last (the schedule's next
    # birth, told to the pool at the free), not from the oldest: G_1 at 50 %, device-bound
    # (1000 us kernels, a lead of 32 launches), took once a period a page of its 144 MiB
    # buffer (the oldest idle) shortly before a buffer is born on it again: the host waited
    # for the device to run the work freed there (4 served waits in this run before; 0).
    # At 90 % every idle page then is born on again within the lead: none gives its
    # handle while a live buffer wanted later can leave instead (one served wait a
    # period before; 0)
    g1="$w/trace_replay $src/tests/data/G_1.csv --iterations 5 --scale 8"
    SIMCUDA_PEAK_FILE=$tmp/g1.peak0 $g1 >"$tmp/g1.ref" || fail "G_1: reference"
    # (a machine loaded past the 1000 us kernels can make one such wait: a second run then
    # must make none, as the race cases' controls get a second try)
    for pct in 50 90; do
      for try in 1 2; do
        SIMCUDA_KERNEL_US=1000 SIMCUDA_COPY_GBPS=5 PLANALLOC_LINK_GBPS=5 PLANALLOC_STATS=1 \
          PLANALLOC_BUDGET=$(($(cat "$tmp/g1.peak0") * pct / 100)) LD_PRELOAD="$pre" $g1 >"$tmp/g1.out" 2>"$tmp/g1.err" ||
          fail "G_1 at $pct %: status $?"
        cmp -s "$tmp/g1.ref" "$tmp/g1.out" || fail "G_1 at $pct %: output differs"
        echo "G_1 at $pct %: served waits $(stat g1 "host waits, served phase"), periods $(stat g1 "periods served")"
        [ "$(stat g1 "periods served")" -gt 1 ] || fail "G_1 at $pct %: no served phase"
        [ "$(stat g1 "host waits, served phase")" = 0 ] && break
      done
      [ "$(stat g1 "host waits, served phase")" = 0 ] || fail "G_1 at $pct %: the served phase waited for the device, twice"
    done
  fi
  ;;
faults)
  mlp="$w/mlp_train --iters 6 --batch 8 --in 1024 --hidden 1024 --out 1024"
  SIMCUDA_PEAK_FILE=$tmp/peak0 $mlp >"$tmp/ref" || fail "mlp_train without the preload"
  # one run with call NAME:N failing, BUDGET maybe; $rc, stderr in $tmp/f.err
  faulty() {
    SIMCUDA_FAIL=$1 SIMCUDA_STRICT=1 PLANALLOC_STATS=1 PLANALLOC_PLAN_TIME=0 PLANALLOC_BUDGET=${2:-} \
      LD_PRELOAD="$pre" $mlp >"$tmp/f.out" 2>"$tmp/f.err"
    rc=$?
  }
  for name in cuMemCreate cuMemMap cuMemSetAccess cuMemUnmap cuMemRelease; do
    for n in 1 3 8 21 3+; do
      faulty $name:$n
      [ $rc = 0 ] || fail "$name:$n: status $rc: $(grep -m2 -E 'error|warning' "$tmp/f.err")"
      cmp -s "$tmp/ref" "$tmp/f.out" || fail "$name:$n: output differs"
    done
  done
  faulty cuMemMap:1
  [ "$(stat f "passed to the driver")" -ge 1 ] || fail "cuMemMap:1: nothing passed to the driver"
  grep -q '^planalloc: warning: the driver refused pages for [0-9]* bytes (CUDA_ERROR_OUT_OF_MEMORY = 2): such allocations go to the driver directly' \
    "$tmp/f.err" || fail "cuMemMap:1: no warning"
  faulty cuMemCreate:1+
  [ "$(stat f "allocations")" = 0 ] || fail "cuMemCreate:1+: allocations counted that the driver made"
  half=$(( $(cat "$tmp/peak0") / 2 )) clean=0 failed=0
  for name in cuMemCreate cuMemMap cuMemUnmap cuMemRelease cuMemHostAlloc cuMemcpyAsync cuEventCreate; do
    for n in 1 8 55; do
      faulty $name:$n $half
      if [ $rc = 0 ]; then
        cmp -s "$tmp/ref" "$tmp/f.out" || fail "$name:$n under the budget: output differs"
        clean=$((clean + 1))
      else
        [ $rc = 1 ] || fail "$name:$n under the budget: status $rc: $(grep -m2 error "$tmp/f.err")"
        grep -q '^planalloc: error: ' "$tmp/f.err" || fail "$name:$n under the budget: failed without saying why"
        failed=$((failed + 1))
      fi
    done
  done
  echo "under the budget: $clean runs unharmed, $failed clean failures"
  # no pinned host memory at all (a container's locked-memory limit): pageable blocks,
  # same output, and the copies out they cost are host waits
  faulty cuMemHostAlloc:1+ $half
  [ $rc = 0 ] && cmp -s "$tmp/ref" "$tmp/f.out" || fail "no pinned memory: status $rc or output differs"
  grep -q '^planalloc: warning: pinned host memory refused for a [0-9]*-byte block (CUDA_ERROR_OUT_OF_MEMORY = 2): evicted pages go to pageable' \
    "$tmp/f.err" || fail "no pinned memory: no warning"
  [ "$(stat f "host blocks not pinned")" -ge 1 ] || fail "no pinned memory: no pageable block counted"
  [ "$(stat f "host waits for copies")" -ge "$(stat f "host blocks not pinned")" ] || fail "no pinned memory: waits not counted"
  # a device full below the budget (5 pages of the 8 it allows): the budget shrinks to
  # what the device gave and victims make room, same output
  faulty cuMemCreate:6+ "$(cat "$tmp/peak0")"
  [ $rc = 0 ] && cmp -s "$tmp/ref" "$tmp/f.out" || fail "device full below the budget: status $rc or output differs"
  grep -q '^planalloc: warning: the device refused a page at 5 of the 8 pages .* the budget is 5 pages from now on$' "$tmp/f.err" ||
    fail "device full below the budget: no warning"
  [ "$(stat f evictions)" -ge 1 ] || fail "device full below the budget: nothing evicted"
  # a device full at 1 page of the 8: the 4 MiB matrices cannot fit, and the error names
  # the budget as lowered, not the PLANALLOC_BUDGET it started from
  faulty cuMemCreate:2+ "$(cat "$tmp/peak0")"
  [ $rc = 1 ] || fail "device full at one page: status $rc"
  grep -q "^planalloc: error: .* within the budget of 2097152 bytes (PLANALLOC_BUDGET=$(cat "$tmp/peak0"), lowered when the device refused a page)" \
    "$tmp/f.err" || fail "device full at one page: the error does not name the lowered budget: $(grep error "$tmp/f.err")"
  ;;
*) fail "unknown case $case_" ;;
esac
echo "ok: $case_"
