#!/usr/bin/env bash
# Triage of one very large job (issue 31 item 14): 90 s at 100 ms of 2.5k and 10k GPUs, 16 a host
# file (bench/make_scale_logs.sh: training, then a hang over every GPU). Reports wall and CPU
# seconds, peak RSS, CPU microseconds per GPU sample, and the ratio of the two sizes' per-sample
# costs: 1 is linear in the GPUs, 4 would be quadratic (each sample looking at every GPU).
# With BEFORE (another wattwatch), runs it on the same files too and checks the outputs agree.
#
# usage: bench/triage_scale.sh [BUILD_DIR] [BEFORE_BINARY]   (data in BUILD_DIR/scale-data, ~2.7 GB)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build/release}
BEFORE=${2:-}
DATA=$BUILD/scale-data
mkdir -p "$DATA"

run() {  # run NAME BINARY GPUS: prints "NAME GPUS wall_s cpu_s rss_mb us_per_sample"
  local name=$1 ww=$2 gpus=$3
  mapfile -t files < <(bench/make_scale_logs.sh "$BUILD/wattwatch" "$gpus" "$DATA/g$gpus")
  local samples
  samples=$(($(cat "${files[@]}" | wc -l) - ${#files[@]}))
  /usr/bin/time -f "%e %U %S %M" -o "$DATA/time.txt" "$ww" triage "${files[@]}" \
    > "$DATA/$name-$gpus.txt"
  awk -v n="$name" -v g="$gpus" -v s="$samples" \
    '{ printf "%-7s %6d GPUs: wall %7.2f s  cpu %7.2f s  rss %5.0f MB  %.3f us/sample\n",
       n, g, $1, $2 + $3, $4 / 1024, ($2 + $3) * 1e6 / s }' "$DATA/time.txt"
}
report() {  # report NAME BINARY
  local small large
  small=$(run "$1" "$2" 2500 | tee /dev/stderr)
  large=$(run "$1" "$2" 10000 | tee /dev/stderr)
  paste <(echo "$small") <(echo "$large") | awk -v n="$1" '{
    for (i = 1; i <= NF; i++) if ($i == "us/sample") { a = b; b = $(i - 1) }
    printf "%-7s 10k/2.5k cost per sample: %.2f (1: linear, 4: quadratic)\n", n, b / a }'
}
report after "$BUILD/wattwatch" 2>&1
if [ -n "$BEFORE" ]; then
  report before "$BEFORE" 2>&1
  for g in 2500 10000; do
    cmp -s "$DATA/before-$g.txt" "$DATA/after-$g.txt" && echo "$g GPUs: outputs identical" ||
      echo "$g GPUs: OUTPUTS DIFFER"
  done
fi
