#!/usr/bin/env bash
# Logs of one very large job for the scale bench (bench/triage_scale.sh): GPUS GPUs at 100 ms for
# 90 s, 16 GPUs per host file, the window 46 s of training then 44 s of a hang (hang-spin from
# 11:30:00 to 11:31:30, so a hang is confirmed). The simulator writes at most 64 hosts, so one
# run of SIM_HOSTS hosts is cut to the window and its host files copied under new names until
# there are GPUS/16 files (each file is one host to triage: copies are different hosts with the
# same readings).
#
# usage: bench/make_scale_logs.sh WATTWATCH GPUS OUT_DIR   (prints the file list, one a line)
set -euo pipefail
WW=$1
GPUS=$2
OUT=$3
SIM_HOSTS=8
hosts=$(((GPUS + 15) / 16))
mkdir -p "$OUT"
if [ ! -s "$OUT/src/window0.csv" ]; then
  mkdir -p "$OUT/src"
  "$WW" simulate hang-spin --hosts "$SIM_HOSTS" --gpus-per-host 16 --seed 7 --force \
    --out-dir "$OUT/src" > /dev/null
  for h in $(seq 0 $((SIM_HOSTS - 1))); do
    awk 'NR == 1 || ($1 " " $2 >= "2025/11/18 11:30:00" && $1 " " $2 < "2025/11/18 11:31:30")' \
      "$OUT/src/node$h.csv" > "$OUT/src/window$h.csv"
  done
fi
for h in $(seq 0 $((hosts - 1))); do
  f=$OUT/host$h.csv
  [ -s "$f" ] || cp "$OUT/src/window$((h % SIM_HOSTS)).csv" "$f"
  echo "$f"
done
