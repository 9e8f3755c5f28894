#!/usr/bin/env bash
# Long fuzzing of the trace reader and the planners (ctest runs 30 s of the same target).
# Usage: scripts/fuzz.sh [SECONDS] (default 600). Crashes land in build/fuzz-artifacts/.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
secs=${1:-600}
cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$root/build" --target fuzz_csv_build >/dev/null
work="$root/build/fuzz-corpus"
mkdir -p "$work" "$root/build/fuzz-artifacts"
cp -n "$root"/tests/fuzz/corpus/* "$work/" 2>/dev/null || true
cd "$root/build"  # libFuzzer writes fuzz-N.log into the working directory
exec "$root/build/tests/fuzz/fuzz_csv" -max_total_time="$secs" -timeout=10 -rss_limit_mb=4096 \
  -artifact_prefix="$root/build/fuzz-artifacts/" -jobs=2 -workers=2 "$work"
