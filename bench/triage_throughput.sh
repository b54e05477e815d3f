#!/usr/bin/env bash
# Whole-command throughput of `wattwatch triage` on a 1 GB log of 16 GPUs at 100 ms, against the
# straightforward pandas version (bench/reference_triage.py) in the same run. Reports MB/s, peak
# RSS and the ratio. Needs python3-pandas (scripts/install-deps.sh installs it).
#
# usage: bench/triage_throughput.sh [BUILD_DIR] [SIZE_MB]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build/release}
SIZE_MB=${2:-1024}
WW=$BUILD/wattwatch
DATA=build/bench-data
mkdir -p "$DATA"
BIG=$DATA/triage_${SIZE_MB}mb.csv
if [ ! -s "$BIG" ]; then
  "$WW" simulate hang-spin --gpus-per-host 16 --seed 5 --out "$DATA/block.csv" 2>/dev/null
  /usr/bin/python3 bench/make_big_log.py "$DATA/block.csv" "$BIG" $((SIZE_MB * 1000000))
fi
bytes=$(stat -c %s "$BIG")
cat "$BIG" > /dev/null  # warm the page cache for both contenders

measure() {  # prints "seconds max_rss_kb"
  /usr/bin/time -f "%e %M" -o "$DATA/time.txt" "$@" > /dev/null
  cat "$DATA/time.txt"
}
read -r ww_s ww_kb < <(measure taskset -c 0 "$WW" triage "$BIG" --json)
read -r pd_s pd_kb < <(measure taskset -c 0 /usr/bin/python3 bench/reference_triage.py "$BIG")
awk -v b="$bytes" -v ws="$ww_s" -v wk="$ww_kb" -v ps="$pd_s" -v pk="$pd_kb" 'BEGIN {
  printf "log: %.0f MB, 16 GPUs at 100 ms\n", b / 1e6
  printf "wattwatch triage : %6.2f s  %7.1f MB/s  peak RSS %6.1f MB\n", ws, b / 1e6 / ws, wk / 1024
  printf "pandas reference : %6.2f s  %7.1f MB/s  peak RSS %6.1f MB\n", ps, b / 1e6 / ps, pk / 1024
  printf "ratio (wattwatch / pandas throughput): %.2fx\n", ps / ws
}'
