#!/usr/bin/env bash
# scripts/gpu-check.sh and scripts/gpu-meter.py where there is no GPU, so that the one
# command a GPU lease runs has run before. Usage: gpu_check_test.sh BUILD_DIR SOURCE_DIR
#   the workload part on the simulated CUDA (--sim --quick): five rows; every workload's
#   results identical with planalloc; under half of planalloc's peak each is identical
#   or stopped cleanly by planalloc's own error, and at least one moved bytes and stayed
#   identical; the logs archive holds every run's output
#   the meter: usage errors exit 2; it passes the command's exit status through and
#   writes its one line, reading the simulated device; no libcuda: exit 77
set -u
build=$1 src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$src/scripts/gpu-check.sh" --sim --quick --build "$build" "$tmp/out" workloads >"$tmp/log" 2>&1 ||
  { cat "$tmp/log"; fail "gpu-check.sh exited $?"; }
rows=$(grep -cE '^\| (multistream|mlp_train|transformer_train|vendor_gemm|trace_replay) \|' "$tmp/out/report.md")
[ "$rows" = 5 ] || { cat "$tmp/out/report.md"; fail "$rows workload rows, want 5"; }
# columns (split on |): 2 workload, 3 results, 11 results under the budget, 13 moved MiB
awk -F' *\\| *' '/^\| [a-z_]+ \| / && $2 != "workload" {
    if ($3 != "identical") { print "FAIL: " $2 " with planalloc: " $3; bad = 1 }
    if ($11 == "identical" && $13 + 0 > 0) moved++
    else if ($11 != "identical" && $11 !~ /^stopped \(exit 1\): /) { print "FAIL: " $2 " under the budget: " $11; bad = 1 }
  } END { if (!moved) print "FAIL: no workload moved bytes under the budget and stayed identical"; exit bad || !moved }' \
  "$tmp/out/report.md" || { cat "$tmp/out/report.md"; exit 1; }
tar -tzf "$tmp/out/logs.tar.gz" | grep -q '^gpu-check.logs/mlp_train.budget.out$' || fail "logs.tar.gz lacks the runs' output"

meter=$src/scripts/gpu-meter.py
python3 "$meter" --out 2>/dev/null; [ $? = 2 ] || fail "meter without a command: want exit 2"
LD_LIBRARY_PATH=$build/simcuda python3 "$meter" --out "$tmp/peak" -- sh -c 'exit 3'
[ $? = 3 ] || fail "meter: the command's exit status 3 not passed through"
grep -qE '^peak_bytes [0-9]+ baseline_bytes [0-9]+ samples [0-9]+ interval_us [0-9]+$' "$tmp/peak" ||
  fail "meter line: $(cat "$tmp/peak")"
if ! ldconfig -p | grep -q 'libcuda.so.1 '; then
  LD_LIBRARY_PATH='' python3 "$meter" -- true 2>/dev/null; [ $? = 77 ] || fail "meter without libcuda: want exit 77"
fi
echo "gpu-check: $(grep -c '| identical |' "$tmp/out/report.md") identical rows; meter ok"
