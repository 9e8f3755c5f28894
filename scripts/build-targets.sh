# Sourced by the scripts (with $root set): build_targets T... builds those targets in
# build/ (Release, configured on first use), so that every figure a script prints comes
# from the sources as they are, not from a stale binary.
build_targets() {
  [ -f "$root/build/CMakeCache.txt" ] || cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$root/build" -j "$(nproc 2>/dev/null || echo 2)" --target "$@" >/dev/null
}
