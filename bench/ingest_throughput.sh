#!/usr/bin/env bash
# Reader throughput of every format wattwatch reads against its nvidia-smi CSV reader, in the
# same run, on one core (CPU seconds): `wattwatch triage` over the same telemetry (8 GPUs at 100 ms) written
# in each format by bench/make_format_logs.py. Whole-command time (reader + engine), so each
# reader is at least as fast as printed. Reports MB/s and the ratio to the CSV reader.
#
# usage: bench/ingest_throughput.sh [BUILD_DIR] [SIZE_MB]
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build/release}
SIZE_MB=${2:-200}
WW=$BUILD/wattwatch
DATA=build/bench-data/formats
/usr/bin/python3 bench/make_format_logs.py "$DATA" "$SIZE_MB"
run() {  # FILE ARGS... -> seconds
  cat "$1" > /dev/null
  # CPU seconds (user + sys) on one core: on a shared machine, wall time measures the neighbours.
  /usr/bin/time -f "%U %S" -o "$DATA/time.txt" taskset -c 0 "$WW" triage "$@" --json > /dev/null
  awk '{ printf "%.2f", $1 + $2 }' "$DATA/time.txt"
}
ref_s=$(run "$DATA/nvsmi.csv")
ref_b=$(stat -c %s "$DATA/nvsmi.csv")
printf "%-16s %8s %8s %9s %s\n" format MB seconds "MB/s" "vs CSV reader"
awk -v b="$ref_b" -v s="$ref_s" 'BEGIN { printf "%-16s %8.0f %8.2f %9.1f %s\n", "nvidia-smi", b/1e6, s, b/1e6/s, "1.00x" }'
for spec in "dcgmi-dmon dcgmi.dmon --interval-ms 100" "dcgm-exporter dcgm.prom --interval-ms 100" \
            "wandb wandb.jsonl" "custom-csv custom.csv" "prometheus-json prom.json"; do
  set -- $spec
  name=$1; file=$DATA/$2; shift 2
  s=$(run "$file" "$@")
  b=$(stat -c %s "$file")
  awk -v n="$name" -v b="$b" -v s="$s" -v rb="$ref_b" -v rs="$ref_s" \
    'BEGIN { printf "%-16s %8.0f %8.2f %9.1f %.2fx\n", n, b/1e6, s, b/1e6/s, (b/s)/(rb/rs) }'
done
