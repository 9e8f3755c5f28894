#!/usr/bin/env bash
# planalloc-sim over the DTR prototype's op logs (../shared/data/dtr): every policy at
# 50 % of each model's peak, at the logs' own link (PCIe 3.0 x16, 12 GB/s) and at
# PCIe 5.0 x16 (50 GB/s assumed achievable), 10 us per copy. Tables for dtr/BENCHMARKS.md.
# Usage: scripts/bench-sim.sh [BUDGET_PCT]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
sim=$root/build/bin/planalloc-sim
. "$root/scripts/common.sh"
build_targets planalloc-sim
pct=${1:-50}
for g in 12 50; do
  echo "### ${pct} % budget, ${g} GB/s per direction"
  echo
  "$sim" --budget "$pct" --gbps "$g" "$root"/../shared/data/dtr/*.log
  echo
done

# The planned policy at the DTR prototype's own budgets (bytes, from its data-full.json:
# median step time over the baseline's, recomputation on a Titan V) as fractions of each
# log's peak; the models whose logged configuration matches the measured one.
echo "### planned at the DTR prototype's budgets"
echo
echo "| model | DTR budget GB | % of the log's peak | DTR recompute slowdown | planned, PCIe 5.0 | planned, PCIe 3.0 | PCIe 3.0 link bound |"
echo "|---|---:|---:|---:|---:|---:|---:|"
# field NAME...: the named columns of planalloc-sim's one row, found by header (not position)
field() {
  awk -F'|' -v want="$*" 'NR == 1 { for (i = 1; i <= NF; i++) { gsub(/^ +| +$/, "", $i); col[$i] = i } }
    NR == 3 { n = split(want, w, ","); for (k = 1; k <= n; k++) printf "%s%s", $col[w[k]], k < n ? "|" : "\n" }'
}
for spec in inceptionv4-64:6:1.148 inceptionv4-64:8:1.104 tv_densenet121-84:6:1.292 tv_densenet121-84:8:1.223 \
            transformer-10:4:1.187 transformer-10:6:1.142 unet-6:4:1.245 unet-6:6:1.139 lstm-128:4:1.413; do
  IFS=: read -r model gb dtr <<<"$spec"
  log=$(ls "$root"/../shared/data/dtr/"$model"-*.log)
  peak=$("$sim" --policy planned "$log" | field "peak MiB")
  pct=$(awk -v g="$gb" -v p="$peak" 'BEGIN { printf "%.2f", g * 1e9 / (p * 1048576) * 100 }')
  p5=$("$sim" --budget "$pct" --gbps 50 --policy planned "$log" | field slowdown)
  p3=$("$sim" --budget "$pct" --gbps 12 --policy planned "$log" | field "slowdown,link bound")
  echo "| $model | $gb | $pct | $dtr | $p5 | $p3 |"
done
