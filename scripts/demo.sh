#!/usr/bin/env bash
# The README's main command. Until the interposer lands (issue #4) the demo plans a real
# model's allocation trace with every algorithm and shows the pool each one needs
# against the max-live lower bound.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x build/bin/planalloc-plan ]; then
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build -j "$(nproc 2>/dev/null || echo 2)" --target planalloc-plan >/dev/null
fi
trace=${1:-tests/data/resnet50.csv}
echo "planalloc demo: planning $trace (ResNet-50 training trace from MindSpore SOMAS)"
for algo in start-best megengine size-best skyline best; do
  build/bin/planalloc-plan --algo "$algo" --alignment 256 "$trace" | sed "s|.*: \([0-9]* buffers\)|  \1|"
done
echo "start-best is what an online best-fit allocator would need; best is planalloc's plan."
