#!/usr/bin/env bash
# planalloc-sim over the DTR prototype's op logs (../shared/data/dtr): every policy at
# 50 % of each model's peak, at the logs' own link (PCIe 3.0 x16, 12 GB/s) and at
# PCIe 5.0 x16 (50 GB/s assumed achievable), 10 us per copy. Tables for dtr/BENCHMARKS.md.
# Usage: scripts/bench-sim.sh [BUDGET_PCT]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
sim=$root/build/bin/planalloc-sim
if [ ! -x "$sim" ]; then
  cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$root/build" -j "$(nproc 2>/dev/null || echo 2)" --target planalloc-sim >/dev/null
fi
pct=${1:-50}
for g in 12 50; do
  echo "### ${pct} % budget, ${g} GB/s per direction"
  echo
  "$sim" --budget "$pct" --gbps "$g" "$root"/../shared/data/dtr/*.log
  echo
done
