#!/usr/bin/env bash
# Runs every planalloc-plan algorithm over every CSV trace and prints markdown tables:
# best against max-live and the best known pool; pool/max-live per algorithm; seconds
# per algorithm. Usage: scripts/bench-planner.sh [DIR...] (default: ../shared/data).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
plan=$root/build/bin/planalloc-plan
. "$root/scripts/common.sh"
build_targets planalloc-plan
[ $# -gt 0 ] || set -- "$root/../shared/data"
algos=$("$plan" --help | awk '/^algorithms:/ { on = 1; next } on { print $1 }')

# Best known pools, from ../shared/data/README.md (MiniMalloc's challenging suite).
best_known() {
  case "$1" in
    A.1048576.csv|B.1048576.csv|E.1048576.csv|F.1048576.csv|G.1048576.csv|H.1048576.csv|\
    I.1048576.csv|K.1048576.csv) echo 1048576 ;;
    C.1048576.csv) echo 1039360 ;;
    D.1048576.csv) echo 1031168 ;;
    J.1048576.csv) echo 1041408 ;;
    input.12.csv) echo 12 ;;
    *) echo "" ;;
  esac
}

results=$(mktemp)
trap 'rm -f "$results"' EXIT
files=$(find "$@" -name '*.csv' | sort)
for f in $files; do
  for a in $algos; do
    line=$("$plan" --algo "$a" "$f" 2>&1 || true)
    # "...: N buffers, max-live M, pool P (R max-live), ALGO, T s"
    fields=$(echo "$line" | sed -nE 's/.*: ([0-9]+) buffers, max-live ([0-9]+), pool ([0-9]+) \(.*\), [^,]+, ([0-9.]+) s$/\1 \2 \3 \4/p')
    echo "$(basename "$f") $a ${fields:-- - - -}" >>"$results"
  done
done

echo "### best"
echo
echo "| trace | buffers | max-live | best known | best pool | / max-live | / best known | seconds |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
awk '$2 == "best"' "$results" | while read -r file algo n ml p t; do
  bk=$(best_known "$file")
  awk -v f="$file" -v n="$n" -v ml="$ml" -v p="$p" -v t="$t" -v bk="$bk" 'BEGIN {
    r = (p == "-") ? "-" : sprintf("%.4f", p / ml)
    rb = (bk == "" || p == "-") ? "" : sprintf("%.4f", p / bk)
    printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", f, n, ml, bk, p, r, rb, t }'
done

for what in ratio time; do
  echo
  [ $what = ratio ] && echo "### pool / max-live per algorithm" || echo "### seconds per algorithm"
  echo
  printf '| trace |'; for a in $algos; do printf ' %s |' "$a"; done; echo
  printf '|---|'; for a in $algos; do printf -- '---:|'; done; echo
  for f in $files; do
    b=$(basename "$f")
    printf '| %s |' "$b"
    for a in $algos; do
      awk -v f="$b" -v a="$a" -v w=$what '$1 == f && $2 == a {
        if ($5 == "-") printf " - |"; else if (w == "ratio") printf " %.4f |", $5 / $4;
        else printf " %s |", $6 }' "$results"
    done
    echo
  done
done
