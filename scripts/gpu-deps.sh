#!/usr/bin/env bash
# Fetches, here, the Debian packages the preload builds against (libunwind, uthash) into
# .gpu-deps (ignored by git), for a device call to carry to a GPU machine that may lack
# them and can fetch nothing; scripts/gpu-check.sh unpacks them there under its build
# directory only when the machine's own headers or library are missing.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .gpu-deps
cd .gpu-deps
apt-get download libunwind8 libunwind-dev uthash-dev
ls -l
