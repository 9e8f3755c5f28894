#!/usr/bin/env bash
# planalloc plan on every PyTorch memory snapshot in ../shared/data/torch-snapshots: what
# planalloc would need (the trace's max-live, the planned pool, in 2 MiB pages) against
# what PyTorch's caching allocator reserved. Prints a markdown table (scripts/BENCHMARKS.md).
# Usage: scripts/bench-snapshots.sh [--time-limit S]  (S: the planner's search, default 2)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$root/build data=$root/../shared/data/torch-snapshots
. "$root/scripts/common.sh"
build_targets planalloc-plan
cmake -S "$root" -B "$build" >/dev/null # copies bin/planalloc and its modules
echo "| snapshot | device | trace events | buffers (live before / at end) | max-live GiB | planned pool / max-live | caching allocator reserved GiB (peak) | planalloc needs GiB (2 MiB pages) | change |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
for f in "$data"/*.pickle; do
  "$build/bin/planalloc" plan --markdown "$@" "$f"
done
