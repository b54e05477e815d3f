#!/usr/bin/env bash
# Reader throughput of every format wattwatch reads against its nvidia-smi CSV reader, in the
# same run, on one core (CPU seconds): `wattwatch triage` over the same telemetry (8 GPUs at 100 ms) written
# in each format by bench/make_format_logs.py. Whole-command time (reader + engine), so each
# reader is at least as fast as printed. Reports MB/s, the ratio to the CSV reader and the peak
# RSS; and, where the build has bench/ingest_bench (-DWATTWATCH_BENCH=ON), the reader alone
# (the file opened and drained, no triage engine). With BEFORE=path/to/an/older/wattwatch, the
# same files are also run through that binary and its ingest_bench (a before/after comparison
# in one run, on one machine state).
#
# The reader-only figure is the best of REPEAT runs (default 3): on a shared machine the
# neighbours' load inflates CPU time too (shared caches and cores), by up to half here.
#
# usage: [BEFORE=OLD_WATTWATCH] [REPEAT=N] bench/ingest_throughput.sh [BUILD_DIR] [SIZE_MB]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build/release}
SIZE_MB=${2:-200}
WW=$BUILD/wattwatch
DATA=build/bench-data/formats
/usr/bin/python3 bench/make_format_logs.py "$DATA" "$SIZE_MB"
run() {  # BINARY FILE ARGS... -> "seconds peak_rss_kb"
  local bin=$1
  shift
  cat "$1" > /dev/null
  # CPU seconds (user + sys) on one core: on a shared machine, wall time measures the neighbours.
  /usr/bin/time -f "%U %S %M" -o "$DATA/time.txt" taskset -c 0 "$bin" triage "$@" --json > /dev/null
  awk '{ printf "%.2f %d\n", $1 + $2, $3 }' "$DATA/time.txt"
}
reader_only() {  # INGEST_BENCH FILE [--interval-ms N] -> seconds (the best of REPEAT runs)
  local bin=$1 file=$2 interval=${4:-} best="" i
  for ((i = 0; i < ${REPEAT:-3}; ++i)); do
    /usr/bin/time -f "%U %S" -o "$DATA/time.txt" taskset -c 0 "$bin" "$file" $interval > /dev/null
    best=$(awk -v b="$best" '{ s = $1 + $2; if (b == "" || s < b) b = s; printf "%.2f\n", b }' \
      "$DATA/time.txt")
  done
  echo "$best"
}
specs=("nvidia-smi nvsmi.csv" "dcgmi-dmon dcgmi.dmon --interval-ms 100"
       "dcgm-exporter dcgm.prom --interval-ms 100" "wandb wandb.jsonl" "custom-csv custom.csv"
       "prometheus-json prom.json")
report() {  # BINARY LABEL
  local bin=$1 label=$2 ref_s="" ref_b=""
  local ib
  ib="$(dirname "$bin")/bench/ingest_bench"
  printf "%s (%s)\n%-16s %8s %8s %9s %8s %13s %s\n" "$label" "$bin" format MB seconds "MB/s" \
    "RSS MB" "reader MB/s" "vs CSV reader"
  for spec in "${specs[@]}"; do
    set -- $spec
    local name=$1 file=$DATA/$2
    shift 2
    read -r s rss < <(run "$bin" "$file" "$@")
    local b r="-"
    b=$(stat -c %s "$file")
    if [ -x "$ib" ]; then
      r=$(reader_only "$ib" "$file" "$@")
      r=$(awk -v b="$b" -v s="$r" 'BEGIN { printf "%.1f", b/1e6/s }')
    fi
    if [ -z "$ref_s" ]; then ref_s=$s ref_b=$b; fi
    awk -v n="$name" -v b="$b" -v s="$s" -v m="$rss" -v r="$r" -v rb="$ref_b" -v rs="$ref_s" \
      'BEGIN { printf "%-16s %8.0f %8.2f %9.1f %8.0f %13s %.2fx\n", n, b/1e6, s, b/1e6/s, m/1024,
               r, (b/s)/(rb/rs) }'
  done
}
if [ -n "${BEFORE:-}" ]; then
  report "$BEFORE" before
  report "$WW" after
else
  report "$WW" "this build"
fi
