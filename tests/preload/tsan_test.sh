#!/usr/bin/env bash
# The preload under ThreadSanitizer: planalloc's own threads (the planner's, the mover's)
# beside a program's two allocating threads, and a budget's copies and mapping calls,
# with the simulator built the same way. ResNet-50's H100 stream replayed at 1/16 of its
# sizes with a budget and the mover on, torch_stream's three lengths (kept plans,
# recordings beside the plan), and the ResNet-50 stream again with plans laid out on the
# planner's thread. Any race report fails the test; exits 77 (skip) without
# clang. The program is instrumented too: ThreadSanitizer's runtime lives in it.
# Usage: tsan_test.sh SOURCE_DIR
set -u
src=$1
cc=$(command -v clang || command -v clang-14 || true)
[ -n "$cc" ] || { echo "tsan: no clang, skipped"; exit 77; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
CC=$cc cmake -S "$src" -B "$out/b" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPLANALLOC_TSAN=ON -DPLANALLOC_SHADOW=OFF \
  -DPLANALLOC_WERROR=ON >"$out/build.log" 2>&1 &&
  cmake --build "$out/b" -j2 --target planalloc simcuda simcudart event_replay torch_stream >>"$out/build.log" 2>&1 ||
  { tail -20 "$out/build.log"; echo "tsan: build failed"; exit 1; }
b=$out/b
# TSan's shadow memory covers the simulator's default device range: move it. The stream
# is unpacked first: event_replay's xz would run under the preload, uninstrumented.
# Not symbolized in the program: the symbolizer, its child, would inherit the preload
# and fail; a report's frames are read back afterwards (frames).
export SIMCUDA_BASE=7e9000000000 LD_LIBRARY_PATH=$b/simcuda TSAN_OPTIONS="halt_on_error=1 symbolize=0"
xz -dc "$src/tests/data/ev.resnet50.log.xz" >"$out/rn.log" && "$b/workloads/torch_stream" --seed 5 --shapes 128,256,64 \
  --shape-steps 4 --steps 24 >"$out/shapes.log" || { echo "tsan: no streams"; exit 1; }
frames() { # a report's lines, each frame in the preload or the simulator with its function and line
  local f m o
  while IFS= read -r f; do
    m=$(sed -n 's/.*(\(lib[a-z.0-9]*\)+\(0x[0-9a-f]*\)).*/\1 \2/p' <<<"$f")
    o=${m#* } m=${m% *}
    case $m in
    libplanalloc.so) echo "$f $(addr2line -f -i -e "$b/lib/$m" "$o" | paste -sd ' ')" ;;
    libcuda.so.1 | libcudart.so.13) echo "$f $(addr2line -f -e "$b/simcuda/$m" "$o" | paste -sd ' ')" ;;
    *) echo "$f" ;;
    esac
  done
}
run() { # NAME ENV...: one replay of "${args[@]}" under the preload, its stats kept
  local name=$1; shift
  env PLANALLOC_STATS=1 "$@" LD_PRELOAD="$b/lib/libplanalloc.so" "$b/workloads/event_replay" "${args[@]}" \
    >"$out/$name.out" 2>"$out/$name.err"
  local rc=$?
  if [ $rc != 0 ] || grep -q "ThreadSanitizer" "$out/$name.err" || ! grep -q ' mismatches 0$' "$out/$name.out"; then
    echo "tsan: $name FAIL (exit $rc)"; grep -A30 "WARNING: ThreadSanitizer" "$out/$name.err" | head -60 | frames
    tail -3 "$out/$name.err"; exit 1
  fi
  echo "tsan: $name: $(grep -E 'served from the plan|launches. moves, mover|pages moved to host  ' "$out/$name.err" |
    sed 's/^planalloc: //; s/ (.*//; s/   */ /g' | paste -sd ';')"
}
args=("$out/rn.log" --steps 8 --scale 16)
run budget PLANALLOC_BUDGET=100M PLANALLOC_MOVER=on
# the mover must have carried moves and pages must have left, or the run tested nothing
grep -q "launches' moves, mover  *[1-9]" "$out/budget.err" && grep -q "pages moved to host  *[1-9]" "$out/budget.err" ||
  { echo "tsan: the budget run moved nothing"; exit 1; }
args=("$out/shapes.log")
run shapes PLANALLOC_VERBOSE=0
# no budget: best fit's pages handed on under freed work; start-best's layout (online
# best fit) is not within 0.5 % of max-live, so the plan is laid out again on the
# planner's thread (megengine's is, and stays on the allocating thread)
args=("$out/rn.log" --steps 6 --scale 16)
run planner PLANALLOC_ALGO=start-best
echo "tsan: no race reported"
