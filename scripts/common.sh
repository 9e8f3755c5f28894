# Sourced by the scripts (with $root set, or $build for build_targets' default): the few
# helpers they share, so that every script reads planalloc's numbers the same way.

# build_targets T...: builds those targets in build/ (Release, configured on first use),
# so that every figure a script prints comes from the sources as they are, not from a
# stale binary.
build_targets() {
  [ -f "$root/build/CMakeCache.txt" ] || cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$root/build" -j "$(nproc 2>/dev/null || echo 2)" --target "$@" >/dev/null
}

# mib BYTES: in MiB, one decimal (an empty argument reads as 0)
mib() { awk -v b="${1:-0}" 'BEGIN { printf "%.1f", b / 1048576 }'; }

# ratio A B: A / B, four decimals
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.4f", a / b }'; }

# json_field FILE KEY: the number under KEY in a stats dump (planalloc.*.stats.json);
# 0 when the file or the key is missing (a run that failed reads as nothing done)
json_field() {
  local v
  v=$(sed -nE "s/.*\"$2\": ([0-9]+).*/\1/p" "$1" 2>/dev/null | head -1)
  echo "${v:-0}"
}

# stats_row FILE LABEL: the number on the exit stats table's row LABEL (PLANALLOC_STATS=1)
stats_row() { awk -v k="$2" 'index($0, "planalloc: " k " ") == 1 { for (i = NF; i > 0; i--) if ($i ~ /^[0-9]+$/) { print $i; exit } }' "$1"; }

# bound_bytes FILE: the bound planalloc's peaks are read against, from its stats dump: the
# iteration's max-live plus the persistent bytes
bound_bytes() { echo $(( $(json_field "$1" iteration_maxlive_bytes) + $(json_field "$1" persistent_bytes) )); }

# elapsed START [DECIMALS]: seconds since START (a `date +%s.%N`), DECIMALS places (1)
elapsed() { awk -v s="$1" -v e="$(date +%s.%N)" -v d="${2:-1}" 'BEGIN { printf "%.*f", d, e - s }'; }
