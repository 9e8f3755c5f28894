#!/usr/bin/env bash
# Starts N ranks of a command as torchrun does (issue #26), for machines without
# torchrun: each gets RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK,
# MASTER_ADDR, MASTER_PORT and TORCHELASTIC_RUN_ID (one per job), the same variables
# `torchrun --standalone --nproc-per-node N --no-python CMD` sets. Waits for all; the
# exit status is the first failing rank's, else 0.
# Usage: scripts/launch-ranks.sh N [--out DIR] -- CMD ARGS...   (DIR/rank.R.out and .err)
set -u
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
export MASTER_ADDR=127.0.0.1 MASTER_PORT=$((20000 + RANDOM % 40000)) WORLD_SIZE=$n LOCAL_WORLD_SIZE=$n GROUP_RANK=0
export TORCHELASTIC_RUN_ID="launch-ranks-$$-$RANDOM"
pids=()
for ((r = 0; r < n; r++)); do
  if [ -n "$out" ]; then
    RANK=$r LOCAL_RANK=$r "$@" >"$out/rank.$r.out" 2>"$out/rank.$r.err" &
  else
    RANK=$r LOCAL_RANK=$r "$@" &
  fi
  pids+=($!)
done
status=0
for pid in "${pids[@]}"; do
  wait "$pid" || { rc=$?; [ $status = 0 ] && status=$rc; }
done
exit $status
