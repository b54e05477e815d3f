#!/usr/bin/env bash
# `wattwatch fleet` at scale against one TSDB (issue 15): for each size, GPUs in jobs of 8
# (1 host each), 30 s samples for one hour (bench/fleet_make_openmetrics.py), backfilled with
# `promtool tsdb create-blocks-from openmetrics`, served by the real Prometheus on 127.0.0.1;
# then `wattwatch fleet --start/--end` replays the hour in 30 s cycles exactly as the live
# service runs them (the first cycle reads --lookback-s 900 s, each later one the 30 s since the
# last plus the 60 s overlap) and prints each cycle's wall time split into Prometheus (waiting
# for the answer), decoding and evaluation (the job table and its triage engines: CPU), plus
# the process's CPU and peak RSS (/usr/bin/time). Targets: evaluation under 2 s CPU a cycle for
# 10,000 GPUs, RSS under 1 GB, cost linear in GPUs.
#
#   bench/fleet_scale.sh [build/release/wattwatch] [GPUS...]   (default 1000 5000 10000)
# Needs prometheus and promtool (Debian package prometheus) and python3.
set -euo pipefail
WW=${1:-build/release/wattwatch}
shift || true
SIZES=("${@:-1000 5000 10000}")
[[ ${#SIZES[@]} -eq 1 ]] && read -r -a SIZES <<<"${SIZES[0]}"
for tool in prometheus promtool python3 /usr/bin/time; do
  command -v "$tool" >/dev/null || { echo "fleet_scale.sh: $tool is not installed" >&2; exit 2; }
done
HERE=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d /tmp/ww_fleet_scale.XXXXXX)
PROM_PID=
# KEEP_TMP=1 keeps the TSDBs, the events files and each run's JSON (the path is printed).
cleanup() {
  [[ -n $PROM_PID ]] && kill "$PROM_PID" 2>/dev/null && wait "$PROM_PID" 2>/dev/null
  if [[ -n ${KEEP_TMP:-} ]]; then echo "kept $TMP" >&2; else rm -rf "$TMP"; fi
}
trap cleanup EXIT

printf '%-7s %-6s %-9s %-10s %-12s %-11s %-13s %-12s %-10s %-9s\n' GPUS JOBS backfill_s \
  first_wall steady_wall steady_prom steady_decode steady_eval cpu_s/cyc rss_MiB
for n in "${SIZES[@]}"; do
  om=$TMP/fleet-$n.om
  read -r start end < <(python3 "$HERE/fleet_make_openmetrics.py" "$n" "$om")
  t0=$(date +%s.%N)
  promtool tsdb create-blocks-from openmetrics "$om" "$TMP/tsdb-$n" >/dev/null
  backfill=$(python3 -c "import time; print(f'{time.time() - $t0:.1f}')")
  rm -f "$om"
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  echo 'global: {}' >"$TMP/prometheus.yml"
  prometheus --config.file="$TMP/prometheus.yml" --storage.tsdb.path="$TMP/tsdb-$n" \
    --storage.tsdb.retention.time=100y --web.listen-address="127.0.0.1:$port" \
    --log.level=warn >"$TMP/prom-$n.log" 2>&1 &
  PROM_PID=$!
  for _ in $(seq 300); do curl -sf "http://127.0.0.1:$port/-/ready" >/dev/null && break; sleep 0.2; done
  # Replay from 15 minutes in (the first cycle reads those 15 minutes) to the end.
  /usr/bin/time -v -o "$TMP/time-$n.txt" "$WW" fleet --prometheus "http://127.0.0.1:$port" \
    --start $((start + 900)) --end "$end" --interval-s 30 --lookback-s 900 --listen none \
    --log-level error --events "$TMP/events-$n.jsonl" --json >"$TMP/fleet-$n.json"
  kill "$PROM_PID"; wait "$PROM_PID" 2>/dev/null || true; PROM_PID=
  python3 - "$TMP/fleet-$n.json" "$TMP/time-$n.txt" "$n" "$backfill" "$TMP/events-$n.jsonl" <<'PY'
import json, re, statistics, sys
j = json.load(open(sys.argv[1]))
events = [json.loads(l) for l in open(sys.argv[5])]
t = open(sys.argv[2]).read()
cyc = [c for c in j["cycle_reports"] if c["ok"]]
first, steady = cyc[0], cyc[1:]
med = lambda k: statistics.median(c[k] for c in steady)
cpu = float(re.search(r"User time \(seconds\): ([\d.]+)", t).group(1)) + \
      float(re.search(r"System time \(seconds\): ([\d.]+)", t).group(1))
rss = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", t).group(1)) / 1024
hung = sum(1 for e in events if e.get("event") == "hang_confirmed")
jobs = max(c["jobs"] for c in cyc)
print(f"{sys.argv[3]:<7} {jobs:<6} {sys.argv[4]:<9} {first['wall_s']:<10.2f} {med('wall_s'):<12.3f} "
      f"{med('server_s'):<11.3f} {med('decode_cpu_s'):<13.3f} {med('evaluate_cpu_s'):<12.3f} "
      f"{cpu / len(cyc):<10.3f} {rss:<9.0f}")
print(f"        ({len(cyc)} cycles; first cycle: prometheus {first['server_s']:.2f} s, decode "
      f"{first['decode_cpu_s']:.2f} s, evaluation {first['evaluate_cpu_s']:.2f} s CPU, "
      f"{first['samples']} samples; steady: {statistics.median(c['samples'] for c in steady):.0f} "
      f"samples a cycle; hangs found {hung})", file=sys.stderr)
PY
done
