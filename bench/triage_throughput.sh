#!/usr/bin/env bash
# Whole-command throughput of `wattwatch triage` on a 1 GB log of 16 GPUs at 100 ms, against the
# straightforward pandas version (bench/reference_triage.py) in the same run. Reports MB/s, peak
# RSS and the ratio. Needs python3-pandas (scripts/install-deps.sh installs it).
# The two run RUNS times each, alternating, and the medians are reported (the spread too), in
# wall time and in CPU time (user + system): on a shared virtual machine one core's speed drifts
# by a third within minutes and the hypervisor takes whole seconds of a run (wall 5.9 s for 3.3 s
# of CPU, seen here), so one run of each can put the two on different machines in all but name.
#
# With BASELINE=/path/to/an/older/wattwatch, that binary runs in the same rounds too and the
# new/old ratio is printed (best and median CPU): "throughput unchanged" measured, not assumed.
#
# usage: [BASELINE=OLD_BIN] bench/triage_throughput.sh [BUILD_DIR] [SIZE_MB] [RUNS]   (RUNS: 3)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build/release}
SIZE_MB=${2:-1024}
RUNS=${3:-3}
WW=$BUILD/wattwatch
DATA=build/bench-data
mkdir -p "$DATA"
BIG=$DATA/triage_${SIZE_MB}mb.csv
if [ ! -s "$BIG" ]; then
  "$WW" simulate hang-spin --gpus-per-host 16 --seed 5 --force --out "$DATA/block.csv" > /dev/null
  /usr/bin/python3 bench/make_big_log.py "$DATA/block.csv" "$BIG" $((SIZE_MB * 1000000))
fi
bytes=$(stat -c %s "$BIG")
cat "$BIG" > /dev/null  # warm the page cache for both contenders

measure() {  # appends "wall_s max_rss_kb cpu_s" to $1
  local out=$1
  shift
  /usr/bin/time -f "%e %M %U %S" -o "$DATA/time.txt" "$@" > /dev/null
  awk '{ printf "%s %s %.2f\n", $1, $2, $3 + $4 }' "$DATA/time.txt" >> "$out"
}
: > "$DATA/ww_runs.txt"
: > "$DATA/pd_runs.txt"
: > "$DATA/base_runs.txt"
for _ in $(seq "$RUNS"); do
  measure "$DATA/ww_runs.txt" taskset -c 0 "$WW" triage "$BIG" --json
  if [ -n "${BASELINE:-}" ]; then
    measure "$DATA/base_runs.txt" taskset -c 0 "$BASELINE" triage "$BIG" --json
  fi
  measure "$DATA/pd_runs.txt" taskset -c 0 /usr/bin/python3 bench/reference_triage.py "$BIG"
done
# "median_wall min_wall max_wall max_rss_kb median_cpu" of a runs file.
summary() {
  local cpu
  cpu=$(awk '{ print $3 }' "$1" | sort -n | awk '{ c[NR] = $1 } END { print c[int((NR + 1) / 2)] }')
  sort -n "$1" | awk -v cpu="$cpu" '{ s[NR] = $1; if ($2 > k) k = $2 }
    END { printf "%s %s %s %s %s\n", s[int((NR + 1) / 2)], s[1], s[NR], k, cpu }'
}
read -r ww_s ww_min ww_max ww_kb ww_cpu < <(summary "$DATA/ww_runs.txt")
read -r pd_s pd_min pd_max pd_kb pd_cpu < <(summary "$DATA/pd_runs.txt")
awk -v b="$bytes" -v n="$RUNS" -v ws="$ww_s" -v wl="$ww_min" -v wh="$ww_max" -v wk="$ww_kb" \
  -v wc="$ww_cpu" -v ps="$pd_s" -v pl="$pd_min" -v ph="$pd_max" -v pk="$pd_kb" -v pc="$pd_cpu" '
  BEGIN {
  printf "log: %.0f MB, 16 GPUs at 100 ms; medians of %d alternating runs (wall range)\n", b / 1e6, n
  printf "wattwatch triage : %6.2f s  %7.1f MB/s  (%.2f-%.2f s)  CPU %6.2f s = %7.1f MB/s  peak RSS %6.1f MB\n",
    ws, b / 1e6 / ws, wl, wh, wc, b / 1e6 / wc, wk / 1024
  printf "pandas reference : %6.2f s  %7.1f MB/s  (%.2f-%.2f s)  CPU %6.2f s = %7.1f MB/s  peak RSS %6.1f MB\n",
    ps, b / 1e6 / ps, pl, ph, pc, b / 1e6 / pc, pk / 1024
  printf "ratio (wattwatch / pandas throughput, medians): wall %.2fx, CPU %.2fx\n", ps / ws, pc / wc
}'
if [ -n "${BASELINE:-}" ]; then
  # CPU seconds (user + system), best and median of each: the best is the run the machine left
  # alone; the median says how typical it was.
  stats() { awk '{ print $3 }' "$1" | sort -n | awk '{ c[NR] = $1 } END { print c[1], c[int((NR + 1) / 2)] }'; }
  read -r new_best new_med < <(stats "$DATA/ww_runs.txt")
  read -r old_best old_med < <(stats "$DATA/base_runs.txt")
  awk -v nb="$new_best" -v nm="$new_med" -v ob="$old_best" -v om="$old_med" -v base="$BASELINE" 'BEGIN {
    printf "baseline %s: CPU best %.2f s, median %.2f s; this build: best %.2f s, median %.2f s\n", base, ob, om, nb, nm
    printf "this build / baseline CPU time: best %+.1f %%, median %+.1f %%\n", 100 * (nb / ob - 1), 100 * (nm / om - 1)
  }'
fi
