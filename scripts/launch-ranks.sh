#!/usr/bin/env bash
# Starts N ranks of a command (issue #26): with torchrun where it is installed (Debian's
# python3-torch, which scripts/test.sh installs), `torchrun --standalone --no_python`;
# else, or with LAUNCH_RANKS=script, by itself, giving each rank the variables torchrun
# gives: RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR,
# MASTER_PORT and TORCHELASTIC_RUN_ID (one per job). Waits for all; the exit status is a
# failing rank's, else 0. LD_PRELOAD is the ranks': this script and torchrun run without.
# Usage: scripts/launch-ranks.sh N [--out DIR] -- CMD ARGS...   (DIR/rank.R.out and .err)
set -u
# the preload is the ranks': this script (under a sanitizer's runtime, its exit would
# report bash's leaks) and torchrun run without it
if [ -n "${LD_PRELOAD:-}" ]; then
  export PA_RANKS_PRELOAD=$LD_PRELOAD
  exec env -u LD_PRELOAD bash "$0" "$@"
fi
export PA_RANKS_PRELOAD=${PA_RANKS_PRELOAD:-}
n=${1:?usage: launch-ranks.sh N [--out DIR] -- CMD ARGS...}
shift
out=""
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  case $1 in
    --out) out=$2; shift 2 ;;
    *) echo "launch-ranks: unknown option $1" >&2; exit 2 ;;
  esac
done
[ "${1:-}" = "--" ] && shift
[ $# -gt 0 ] || { echo "launch-ranks: no command" >&2; exit 2; }
case $n in ''|*[!0-9]*|0) echo "launch-ranks: N must be a positive number" >&2; exit 2 ;; esac
[ -z "$out" ] || mkdir -p "$out"

if [ "${LAUNCH_RANKS:-}" != script ] && command -v torchrun >/dev/null 2>&1; then
  export PA_RANKS_OUT=$out
  log=$(mktemp -d)
  trap 'rm -rf "$log"' EXIT
  # Debian's torchrun (1.13) on Python 3.11 loses the value 0 of its --redirects and
  # --tee flags (crash): stdout goes to its log directory and the console, which a rank
  # given --out leaves empty
  torchrun --standalone --nproc_per_node "$n" --redirects 1 --tee 1 --log_dir "$log" --no_python sh -c '
    [ -z "$PA_RANKS_PRELOAD" ] || export LD_PRELOAD=$PA_RANKS_PRELOAD
    unset PA_RANKS_PRELOAD
    [ -z "$PA_RANKS_OUT" ] || exec "$@" >"$PA_RANKS_OUT/rank.$RANK.out" 2>"$PA_RANKS_OUT/rank.$RANK.err"
    exec "$@"' rank "$@" >"$log/torchrun.out" 2>&1
  status=$?
  [ $status = 0 ] || tail -5 "$log/torchrun.out" >&2
  exit $status
fi

export MASTER_ADDR=127.0.0.1 MASTER_PORT=$((20000 + RANDOM % 40000)) WORLD_SIZE=$n LOCAL_WORLD_SIZE=$n GROUP_RANK=0
export TORCHELASTIC_RUN_ID="launch-ranks-$$-$RANDOM"
pids=()
for ((r = 0; r < n; r++)); do
  if [ -n "$out" ]; then
    RANK=$r LOCAL_RANK=$r env ${PA_RANKS_PRELOAD:+"LD_PRELOAD=$PA_RANKS_PRELOAD"} "$@" >"$out/rank.$r.out" 2>"$out/rank.$r.err" &
  else
    RANK=$r LOCAL_RANK=$r env ${PA_RANKS_PRELOAD:+"LD_PRELOAD=$PA_RANKS_PRELOAD"} "$@" &
  fi
  pids+=($!)
done
status=0
for pid in "${pids[@]}"; do
  wait "$pid" || { rc=$?; [ $status = 0 ] && status=$rc; }
done
exit $status
