#!/usr/bin/env bash
# The planalloc command on the simulated CUDA. Usage: tools_test.sh CASE BUILD_DIR SOURCE_DIR
#   run      exit status passed through (0, 7, a signal's 128+N), the environment it sets
#            (preload appended to the user's, PLANALLOC_*, the framework switches unless
#            the user set them), the six dumps left, output identical to a plain run;
#            the timeline of 18,000 events thinned to under 8,192 rows keeps the live
#            peak, and its plot draws every row's peaks where they belong
#   report   the summary's figures equal the stats dump's; every callsite named by a
#            function of the program (the sites dump, addr2line); both PNGs valid,
#            960x480, the plotted series at the pixels the dump's numbers map to (check.py)
#   export   Perfetto JSON passes the trace-event schema and carries the timeline's
#            numbers; the memory_viz pickle is protocol 2 with only memory_viz's opcodes
#            and replays to the trace dump's live bytes and the stats' live peak
#   plan     a hand-made snapshot's figures; every snapshot in ../shared/data/torch-snapshots
#            (where present); a planner CSV and a dump
#   errors   bad arguments, missing files, truncated dumps, foreign and truncated
#            pickles: one 'planalloc: error:' line each, status 2 (127: no such command);
#            --version and every --help exit 0, run takes its command without --
#   fuzz     500 random argument lists and hostile paths: no traceback, status 0, 1, 2
#            or the program's, one error line (cli_fuzz.py)
set -u
case_=$1 build=$2 src=$3
export LD_LIBRARY_PATH=$build/simcuda
pa=$build/bin/planalloc tools=$build/lib/planalloc/python w=$build/workloads
# The sanitizer build's preload needs the ASan runtime loaded before it: the user's own
# LD_PRELOAD, which planalloc run keeps in front.
asan=$(ldd "$build/lib/libplanalloc.so" | awk '/libasan/ { print $3 }')
# Every child (bash, python, sed) then runs with the ASan runtime: their own leaks are not
# planalloc's (the preload cases check the preload's).
[ -z "$asan" ] || export LD_PRELOAD=$asan ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
check() { python3 "$src/tests/tools/check.py" "$tools" "$@" || exit 1; }
json() { sed -nE "s/.*\"$2\": ([0-9]+).*/\1/p" "$1"; }
# dumps DIR ARGS...: transformer_train through planalloc run, its dumps in DIR
dumps() {
  local d=$1; shift
  PLANALLOC_PLAN_TIME=0 PLANALLOC_ALGO=megengine "$pa" run --dump "$d" "$@" -- \
    "$w/transformer_train" --iters 12 --seq 512 --dim 32 --batch 4 --layers 6 >"$d.out" 2>"$d.err" ||
    fail "planalloc run failed: $(tail -2 "$d.err")"
}

case $case_ in
run)
  "$pa" run -- sh -c 'exit 7'; [ $? = 7 ] || fail "exit status 7 not passed through"
  "$pa" run -- sh -c 'kill -TERM $$'; [ $? = 143 ] || fail "a signal's status not passed through"
  "$pa" run --budget 64M --dump "$tmp/e" --verbose --stats -- env >"$tmp/env" || fail "run env failed"
  want=("LD_PRELOAD=${asan:+$asan }$build/lib/libplanalloc.so" PLANALLOC_BUDGET=64M "PLANALLOC_DUMP=$tmp/e"
        PLANALLOC_VERBOSE=1 PLANALLOC_STATS=1 PYTORCH_NO_CUDA_MEMORY_CACHING=1 XLA_PYTHON_CLIENT_ALLOCATOR=platform)
  for kv in "${want[@]}"; do grep -qxF "$kv" "$tmp/env" || fail "run does not set $kv: $(grep "${kv%%=*}" "$tmp/env")"; done
  [ -d "$tmp/e" ] || fail "the dump directory was not made"
  PYTORCH_NO_CUDA_MEMORY_CACHING=0 "$pa" run -- env | grep -qx PYTORCH_NO_CUDA_MEMORY_CACHING=0 ||
    fail "the user's own PYTORCH_NO_CUDA_MEMORY_CACHING was overridden"
  "$pa" run -- env | grep -q '^PLANALLOC_' && fail "PLANALLOC_* set without being asked"
  LD_PRELOAD= "$w/mlp_train" --iters 1000 >"$tmp/ref" || fail "reference run failed"
  "$pa" run --dump "$tmp/d" --stats -- "$w/mlp_train" --iters 1000 >"$tmp/out" 2>"$tmp/err" || fail "planalloc run failed"
  cmp -s "$tmp/ref" "$tmp/out" || fail "output differs under planalloc run"
  grep -q '^planalloc: served from the plan' "$tmp/err" || fail "--stats printed no table"
  for k in trace.csv sites.csv plan.csv access.csv stats.json timeline.csv; do
    [ "$(ls "$tmp"/d/planalloc.*.$k | wc -l)" = 1 ] || fail "not one $k dump"
  done
  head -1 "$tmp"/d/*.timeline.csv | grep -qx '# planalloc timeline 1' || fail "timeline unversioned"
  [ "$(tail -1 "$tmp"/d/*.timeline.csv | cut -d, -f1)" = $(( $(json "$tmp"/d/*.stats.json allocations) + $(json "$tmp"/d/*.stats.json frees) )) ] ||
    fail "the timeline's last row is not at the last event"
  rows=$(grep -c '^[0-9]' "$tmp"/d/*.timeline.csv)
  [ "$rows" -lt 8192 ] || fail "the timeline was not thinned: $rows rows"
  [ "$(awk -F, '/^[0-9]/ && $4 > m { m = $4 } END { print m }' "$tmp"/d/*.timeline.csv)" = "$(json "$tmp"/d/*.stats.json live_peak_bytes)" ] ||
    fail "the thinned timeline lost the live peak"
  "$pa" report "$tmp/d" >/dev/null || fail "report failed"
  check memory-svg "$tmp/d" "$tmp"/d/*.memory.svg
  ;;
report)
  dumps "$tmp/d" --budget 24M
  cmp -s "$tmp/d.out" <(LD_PRELOAD= "$w/transformer_train" --iters 12 --seq 512 --dim 32 --batch 4 --layers 6) ||
    fail "output differs under the budget"
  "$pa" report "$tmp/d" >"$tmp/rep" || fail "report failed"
  s=$(ls "$tmp"/d/*.stats.json)
  grep -qF "plan coverage               $(json "$s" served) of $(json "$s" allocations) allocations" "$tmp/rep" || fail "coverage: $(cat "$tmp/rep")"
  grep -qF "$(json "$s" evictions) evictions ($(json "$s" planned_evictions) planned)" "$tmp/rep" || fail "evictions line"
  [ "$(json "$s" evictions)" -gt 0 ] || fail "no eviction at 24 MiB"
  # the driver's memory calls: every map is cuMemMap and cuMemSetAccess, and pages were made
  calls=$(json "$s" driver_memory_calls)
  grep -qF "driver memory calls         $calls over the run" "$tmp/rep" || fail "no driver calls line: $(grep driver "$tmp/rep")"
  # a page map is a cuMemMap, and cuMemSetAccess and cuMemUnmap each take a run of pages
  # (fewer calls than pages, one per page before issue #39); pages were created
  mc=$(json "$s" mapping_calls) maps=$(json "$s" page_maps) unmaps=$(json "$s" page_unmaps)
  [ "$mc" -ge "$maps" ] && [ "$mc" -lt $((2 * maps + unmaps)) ] && [ "$calls" -gt "$mc" ] ||
    fail "mapping calls $mc, driver calls $calls: for $maps page maps and $unmaps unmaps"
  # each page's first map and opening are no page moved: the report leaves them out of
  # the calls a page moved (some, not all: the budget's evictions map pages again)
  first=$(json "$s" first_mapping_calls) moved=$(($(json "$s" pages_out) + $(json "$s" pages_in)))
  [ "$first" -gt 0 ] && [ "$first" -lt "$mc" ] || fail "first mapping calls $first of $mc"
  per=$(awk -v c="$mc" -v f="$first" -v m="$moved" 'BEGIN { printf "%.2f", (c - f) / m }')
  grep -qE "mapping calls +$mc \(map, set access, unmap\), $first of them pages mapped the first time; for $moved pages moved out and back: $per a page" "$tmp/rep" ||
    fail "no mapping calls line ($mc, $first first, $moved moved, $per a page): $(grep mapping "$tmp/rep")"
  grep -q "^  top callsites by bytes" "$tmp/rep" || fail "no callsites"
  # each callsite named by the program's function that allocated, in the program's own
  # source (addr2line on the sites dump's module offsets); where the build inlined it
  # (port_dalloc, at -O1 under the sanitizers), the functions it was inlined into follow,
  # and one of them is a function transformer_train defines
  at=$(grep -m1 '^      at ' "$tmp/rep")
  # (a build without debug info names only the module)
  case $at in "      at "*" ($src/tests/workloads/"* | "      at "*" (transformer_train)"*) ;; *) fail "the top callsite is not in the program's source: $at" ;; esac
  for fn in $(sed -E 's/ \([^)]*\)//g; s/^      at //; s/ < / /g' <<<"$at"); do
    nm "$w/transformer_train" | awk '$2 ~ /^[Tt]$/ { print $3 }' | grep -qxF "$fn" && break
    fn=
  done
  [ -n "$fn" ] || fail "no function of the program names the top callsite: $at"
  [ "$(grep -c '^      at ' "$tmp/rep")" = "$(grep -cE '^    [0-9a-f]{16} ' "$tmp/rep")" ] || fail "a callsite without its frames"
  check memory-svg "$tmp/d" "$tmp"/d/*.memory.svg
  check layout-svg "$tmp/d" "$tmp"/d/*.layout.svg
  "$pa" report --out "$tmp/o" "$tmp/d" >/dev/null && [ -s "$tmp"/o/*.memory.svg ] || fail "--out"
  # A Python program's call sites are its lines: two functions allocate (python3, ctypes)
  "$pa" run --dump "$tmp/py" -- python3 "$src/tests/tools/two_functions.py" >"$tmp/py.out" 2>"$tmp/py.err" &&
    [ "$(cat "$tmp/py.out")" = done ] || fail "two_functions.py failed: $(cat "$tmp/py.err")"
  "$pa" report "$tmp/py" >"$tmp/pyrep" || fail "report of the Python run failed"
  for f in gradients:GRADIENTS activations:ACTIVATIONS; do
    line=$(grep -n "# ${f#*:}\$" "$src/tests/tools/two_functions.py" | cut -d: -f1)
    grep -q "^      at make_${f%:*} ($src/tests/tools/two_functions.py:$line)\$" "$tmp/pyrep" ||
      fail "the report does not name make_${f%:*} at line $line: $(grep -A1 'top callsites' "$tmp/pyrep")"
  done
  # PyTorch's sites (the H100 run's dump): past its allocation path, to the op
  check torch-frames "$src/tests/data/torch-gpt.sites.csv"
  # the larger bytes first
  [ "$(grep -m1 '^      at ' "$tmp/pyrep" | cut -d' ' -f8)" = make_gradients ] || fail "make_gradients not the top call site"
  ;;
export)
  dumps "$tmp/d"
  "$pa" export --perfetto "$tmp/d" -o "$tmp/t.json" >/dev/null || fail "export --perfetto failed"
  check perfetto "$tmp/t.json" "$tmp/d"
  "$pa" export --memory-viz "$tmp/d" -o "$tmp/m.pickle" >/dev/null || fail "export --memory-viz failed"
  check memviz "$tmp/m.pickle" "$tmp/d"
  "$pa" run --dump "$tmp/m" -- "$w/mlp_train" --iters 12 >/dev/null 2>&1 && "$pa" export --memory-viz "$tmp/m" >/dev/null ||
    fail "mlp_train's export --memory-viz failed"
  check memviz "$tmp"/m/*.memory_viz.pickle "$tmp/m"
  # with the event log: the whole run at its real times, not the last recording
  "$pa" run --dump "$tmp/mr" --events -- "$w/mlp_train" --iters 12 >/dev/null 2>&1 && "$pa" export --memory-viz "$tmp/mr" >/dev/null ||
    fail "the export of a run with its event log failed"
  check memviz-run "$tmp"/mr/*.memory_viz.pickle "$tmp/mr"
  ;;
plan)
  check make-snapshot "$tmp/s.pickle"
  "$pa" plan "$tmp/s.pickle" >"$tmp/p" || fail "plan of the hand-made snapshot failed"
  grep -qF "8 trace events, 5 buffers (2 live before the trace began, 3 at its end)" "$tmp/p" || fail "buffers: $(cat "$tmp/p")"
  grep -qF "max-live 6.5 KiB, planned pool 6.5 KiB (1.0000x max-live)" "$tmp/p" || fail "max-live: $(cat "$tmp/p")"
  grep -qF "reserved 16.0 KiB at its peak in the trace (segment events)" "$tmp/p" || fail "reserved: $(cat "$tmp/p")"
  n=0
  for f in "$src"/../shared/data/torch-snapshots/*.pickle; do
    [ -f "$f" ] || continue
    "$pa" plan "$f" >"$tmp/p" || fail "plan $f failed"
    grep -q "planned pool .*x max-live" "$tmp/p" || fail "$f: no figures"
    n=$((n + 1))
  done
  echo "planned $n real snapshots"
  "$pa" plan "$src/tests/data/input.12.csv" | grep -qF "max-live 12, pool 12" || fail "planner CSV"
  dumps "$tmp/d"
  "$pa" plan "$tmp/d" | grep -q "trace.csv: .* buffers, max-live" || fail "plan of a dump"
  ;;
errors)
  # expect STATUS CMD...: that status and exactly one stderr line, the error line
  expect() {
    local st=$1; shift
    "$@" >/dev/null 2>"$tmp/e"
    local got=$?
    [ "$got" = "$st" ] || fail "$*: status $got, not $st"
    [ "$(wc -l <"$tmp/e")" = 1 ] && grep -q '^planalloc: error: ' "$tmp/e" || fail "$*: not one error line: $(cat "$tmp/e")"
  }
  dumps "$tmp/d"
  expect 2 "$pa" frobnicate
  expect 2 "$pa" run --budget lots -- true
  # the preload's grammar (planalloc-options --value): what it would warn of and ignore
  expect 2 "$pa" run --budget 150% -- true
  grep -qx "planalloc: error: run: --budget '150%' is not a size (bytes, K/M/G/T with optional iB, or N%)" "$tmp/e" ||
    fail "--budget 150%: $(cat "$tmp/e")"
  "$pa" run --budget 0.5GiB -- env | grep -qx PLANALLOC_BUDGET=0.5GiB || fail "--budget 0.5GiB not taken"
  "$pa" run sh -c 'exit 7'; [ $? = 7 ] || fail "run without -- did not run the command"
  "$pa" --version | grep -qE '^planalloc [0-9]+\.[0-9]+\.[0-9]+' || fail "--version: $("$pa" --version 2>&1)"
  for c in "" run report export plan; do
    # shellcheck disable=SC2086
    "$pa" $c --help >"$tmp/h" 2>&1 || fail "planalloc $c --help: status $?"
    grep -q '^usage: planalloc' "$tmp/h" && grep -q '^  planalloc ' "$tmp/h" || fail "planalloc $c --help: no usage or example"
  done
  touch "$tmp/afile"
  expect 2 "$pa" run --dump "$tmp/afile" -- true
  expect 2 "$pa" run --frob -- true
  expect 2 "$pa" run --dump "$tmp/x"
  expect 127 "$pa" run -- /nonexistent/program
  expect 2 "$pa" report
  expect 2 "$pa" report "$tmp/missing"
  expect 2 "$pa" report "$src/README.md"
  expect 2 "$pa" export --perfetto
  expect 2 "$pa" export --pdf "$tmp/d"
  expect 2 "$pa" plan
  expect 2 "$pa" plan "$tmp/missing.pickle"
  mkdir "$tmp/t"
  for k in trace.csv sites.csv plan.csv stats.json timeline.csv; do cp "$tmp"/d/*.$k "$tmp/t/"; done
  s=$(ls "$tmp"/t/*.sites.csv)
  cp "$s" "$tmp/sites.ok" && sed -i '3s/,0x[0-9a-f]*,/,12abc,/' "$s"
  expect 2 "$pa" report "$tmp/t"
  grep -q "sites.csv:3: not a frame" "$tmp/e" || fail "a bad frame line is not named: $(cat "$tmp/e")"
  mv "$tmp/sites.ok" "$s"
  f=$(ls "$tmp"/t/*.timeline.csv)
  # cut inside a line (half the bytes fell on a line's end in some runs: nothing to call
  # truncated): the middle line's first 3 bytes kept
  head -c $(( $(head -n $(( $(wc -l <"$f") / 2 )) "$f" | wc -c) + 3 )) "$f" >"$f.cut" && mv "$f.cut" "$f"
  expect 2 "$pa" report "$tmp/t"
  grep -q truncated "$tmp/e" || fail "a cut timeline is not called truncated: $(cat "$tmp/e")"
  rm "$tmp"/t/*.timeline.csv && echo '{"version": 1, "allocations": ' >"$(ls "$tmp"/t/*.stats.json)"
  expect 2 "$pa" report "$tmp/t"
  sed -i 1d "$(ls "$tmp"/t/*.trace.csv)"
  expect 2 "$pa" export --memory-viz "$(ls "$tmp"/t/*.trace.csv)"
  check make-foreign "$tmp/f.pickle"
  expect 2 "$pa" plan "$tmp/f.pickle"
  grep -q "not a PyTorch memory snapshot" "$tmp/e" || fail "foreign pickle: $(cat "$tmp/e")"
  check make-snapshot "$tmp/s.pickle"
  head -c 200 "$tmp/s.pickle" >"$tmp/cut.pickle"
  expect 2 "$pa" plan "$tmp/cut.pickle"
  printf 'id,lower,upper\n' >"$tmp/bad.csv"
  expect 2 "$pa" plan "$tmp/bad.csv"
  ;;
fuzz)
  # 500 random argument lists and hostile paths (tests/tools/cli_fuzz.py); the seed is
  # fixed so that a failure reproduces, CLI_FUZZ_SEED picks another
  "$pa" run --dump "$tmp/d" -- "$w/mlp_train" --iters 6 >/dev/null 2>&1 || fail "planalloc run for the dumps failed"
  python3 "$src/tests/tools/cli_fuzz.py" "$pa" "$tmp/d" 500 "${CLI_FUZZ_SEED:-1}" || fail "the CLI fuzz"
  ;;
*) fail "unknown case $case_" ;;
esac
echo "ok: tools $case_"
