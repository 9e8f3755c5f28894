#!/usr/bin/env bash
# Runs a workload twice on the simulator (strict: a launch into dead memory fails it) and
# requires identical output with at least MIN_ITERS iteration lines and a final line.
# Usage: run_twice.sh SIMDIR MIN_ITERS COMMAND [ARGS...]
set -u
simdir=$1 min_iters=$2; shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for run in 1 2; do
  if ! LD_LIBRARY_PATH="$simdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" SIMCUDA_STRICT=1 "$@" >"$tmp/out$run" 2>"$tmp/err$run"; then
    echo "FAIL: run $run of $* exited $?"; cat "$tmp/err$run"; exit 1
  fi
done
if ! cmp -s "$tmp/out1" "$tmp/out2"; then
  echo "FAIL: the two runs of $* differ"; diff "$tmp/out1" "$tmp/out2" | head; exit 1
fi
iters=$(grep -c '^iter ' "$tmp/out1")
if [ "$iters" -lt "$min_iters" ] || ! grep -q '^final ' "$tmp/out1"; then
  echo "FAIL: $* printed $iters iteration lines (want >= $min_iters) and no final line?"; cat "$tmp/out1"; exit 1
fi
tail -1 "$tmp/out1"
