#!/usr/bin/env bash
# The README's test command: install what is missing, configure, build with warnings as
# errors, run every test through ctest; then the same tests under ASan and UBSan.
set -euo pipefail
cd "$(dirname "$0")/.."

sudo=""; [ "$(id -u)" = 0 ] || sudo="sudo"
need=()
for pkg in cmake gcc make libunwind-dev uthash-dev clang libclang-rt-14-dev python3; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "planalloc: installing ${need[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}"
fi

# torchrun (Debian's python3-torch, CPU only) starts the ranks of ctest preload_ddp, as
# issue #26 asks; where it cannot be installed, scripts/launch-ranks.sh starts them itself
if ! command -v torchrun >/dev/null 2>&1; then
  echo "planalloc: installing python3-torch (torchrun)"
  { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends python3-torch; } ||
    echo "planalloc: warning: python3-torch could not be installed: the ranks start from scripts/launch-ranks.sh"
fi

jobs=$(nproc 2>/dev/null || echo 2)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DPLANALLOC_WERROR=ON
cmake --build build -j "$jobs"
(cd build && ctest --output-on-failure -j "$jobs")

# Sanitizers: the unit and CLI tests again (the fuzzer already runs with them).
cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DPLANALLOC_WERROR=ON -DPLANALLOC_SANITIZE=ON
cmake --build build-asan -j "$jobs"
(cd build-asan && ctest --output-on-failure -j "$jobs" -E fuzz)
