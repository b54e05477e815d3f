#!/usr/bin/env bash
# Sampling-tick slip of `wattwatch watch` with and without a bounded scrape load (issue 4's
# acceptance: under wrk at 500 requests/s on /metrics over loopback, ticks slip < 10 ms at p99).
#
# The watcher samples 8 GPUs of the fake libnvidia-ml.so.1 every 100 ms through the production
# NVML path. Two runs in the same session: idle (the reference), then with wrk's load. Each run
# prints the watcher's own tick-lateness percentiles (its --json summary) and wrk's request rate.
#
# Usage: bench/watch_load.sh BUILD_DIR [SECONDS]   (BUILD_DIR: a Release build, e.g. build/release)
set -euo pipefail
BUILD=${1:?usage: $0 BUILD_DIR [SECONDS]}
SECONDS_PER_RUN=${2:-30}
WW=$BUILD/wattwatch
FAKE=$BUILD/tests/fake_nvml/libnvidia-ml.so.1
command -v wrk >/dev/null || { echo "wrk not installed (scripts/install-deps.sh)"; exit 2; }
[ -x "$WW" ] && [ -f "$FAKE" ] || { echo "build $BUILD first (targets wattwatch fake_nvml)"; exit 2; }

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
cat > "$TMP/gpus.script" <<'S'
gpus 8
gpu * name "NVIDIA H100 80GB HBM3" arch hopper
set * power_mw 650000
set * util_gpu 100
set * mem_used_mib 60000
S
# 10 connections, each waiting 19 ms between requests: at most ~526 requests/s (about 500 once
# the response time is added).
cat > "$TMP/pace.lua" <<'L'
function delay()
  return 19
end
L

run() {  # $1 = label, $2 = "load" or "idle"
  rm -f "$TMP/addr"
  WATTWATCH_NVML_LIB=$FAKE FAKE_NVML_SCRIPT=$TMP/gpus.script \
    "$WW" watch --source nvml --interval-ms 100 --listen 127.0.0.1:0 --ready-file "$TMP/addr" \
    --json --log-level warn > "$TMP/summary.json" &
  local pid=$!
  for _ in $(seq 100); do [ -s "$TMP/addr" ] && break; sleep 0.05; done
  local addr
  addr=$(cat "$TMP/addr")
  local rate="-"
  if [ "$2" = load ]; then
    wrk -t 2 -c 10 -d "${SECONDS_PER_RUN}s" -s "$TMP/pace.lua" "http://$addr/metrics" > "$TMP/wrk.txt"
    rate=$(awk '/Requests\/sec/ {print $2}' "$TMP/wrk.txt")
  else
    sleep "$SECONDS_PER_RUN"
  fi
  kill -TERM "$pid"
  wait "$pid"
  python3 - "$1" "$rate" "$TMP/summary.json" <<'P'
import json, sys
label, rate, path = sys.argv[1], sys.argv[2], sys.argv[3]
s = json.load(open(path))
l = s["tick_lateness_ms"]
print(f"{label:<22} ticks {s['ticks']:>5}  dropped {s['samples_dropped']:>3}  "
      f"lateness p50 {l['p50']:.3f} ms  p99 {l['p99']:.3f} ms  max {l['max']:.3f} ms  "
      f"scrapes/s {rate}")
P
}

echo "wattwatch watch, 8 fake GPUs at 100 ms, ${SECONDS_PER_RUN} s per run, $(nproc) cores"
run "idle (reference)" idle
run "wrk 500 req/s" load
