#!/usr/bin/env bash
# The long stress run (ctest runs 100,000 events): EVENTS (default 1,000,000) random
# alloc/free/launch events through the shadow-checker preload, on 4 threads and then on 1
# (planned and served), each buffer's contents checked, a forked child that allocates.
# Prints the stress program's summary and the shadow checker's count.
# Usage: scripts/stress-preload.sh [EVENTS]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build
events=${1:-1000000}
. "$root/scripts/common.sh"
build_targets stress planalloc-shadow
export LD_LIBRARY_PATH=$build/simcuda
for threads in 4 1; do
  start=$(date +%s)
  SIMCUDA_STRICT=1 PLANALLOC_STATS=1 LD_PRELOAD=$build/lib/libplanalloc-shadow.so \
    "$build/tests/stress" "$events" "$threads" 2>&1 |
    grep -E '^stress|shadow:|served from the plan|served best fit|launches  |re-plans'
  echo "($threads threads: $(( $(date +%s) - start )) s)"
done
