#!/usr/bin/env python3
"""End-to-end: `wattwatch triage --prometheus` against the real Prometheus (Debian package).

backfill  The simulator's multi-host scenario (2 hosts x 8 GPUs, checkpoint, starvation and a
          hang with a culprit) at 1 s, as nvidia-smi CSVs; the same run as DCGM series in
          OpenMetrics (`wattwatch simulate --format openmetrics`, the simulator's writer),
          backfilled with `promtool tsdb create-blocks-from openmetrics`, Prometheus started
          on that TSDB; triage --prometheus (step found from
          the raw samples, and --step 1s) must give the JSON verdicts of triage of the CSVs:
          the same hosts, GPUs and sample counts, state shares within 0.02, the same hang
          episodes (start/end within one sample, culprits) and checkpoints. A saved query_range
          response (curl-style, one document per metric) must triage the same.
scrape    A replayed dcgm-exporter: a small HTTP server here serves the simulator's samples as
          successive /metrics scrapes (one tick per second of wall time); Prometheus scrapes it
          every 1 s while `wattwatch watch --source dcgm-exporter:URL` reads it too; afterwards
          triage over Prometheus must agree with the watcher's labels.

Servers bind 127.0.0.1 (port 0 / free ports); every process started is stopped in teardown.
Usage: prom_e2e.py --wattwatch BIN [--prometheus BIN --promtool BIN] backfill|scrape
Exit codes: 0 pass, 1 fail, 77 skipped (no prometheus/promtool). Standard library only.
"""

import argparse
import csv
import datetime as dt
import http.server
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

SKIP = 77

# nvidia-smi column -> DCGM field, as dcgm-exporter names them.
COLUMNS = {
    "power.draw": "DCGM_FI_DEV_POWER_USAGE",
    "power.limit": "DCGM_FI_DEV_POWER_MGMT_LIMIT",
    "utilization.gpu": "DCGM_FI_DEV_GPU_UTIL",
    "utilization.memory": "DCGM_FI_DEV_MEM_COPY_UTIL",
    "clocks.sm": "DCGM_FI_DEV_SM_CLOCK",
    "clocks.current.sm": "DCGM_FI_DEV_SM_CLOCK",
    "clocks.mem": "DCGM_FI_DEV_MEM_CLOCK",
    "clocks.current.memory": "DCGM_FI_DEV_MEM_CLOCK",
    "temperature.gpu": "DCGM_FI_DEV_GPU_TEMP",
    "memory.used": "DCGM_FI_DEV_FB_USED",
}


class Failure(Exception):
  pass


def free_port():
  with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]


def number(text):
  t = text.strip().split(" ")[0]
  try:
    return float(t)
  except ValueError:
    return None


def read_csv_ticks(path, host):
  """[(unix_s, [(labels dict, {metric: value})...])...] from an nvidia-smi CSV."""
  ticks = {}
  with open(path, newline="") as f:
    rows = csv.reader(f, skipinitialspace=True)
    header = [h.strip().split(" ")[0] for h in next(rows)]
    for row in rows:
      rec = dict(zip(header, row))
      t = dt.datetime.strptime(rec["timestamp"].strip(), "%Y/%m/%d %H:%M:%S.%f")
      # nvidia-smi stamps each GPU's row a few ms apart; dcgm-exporter gives one scrape one
      # time: the tick's whole second (the simulator runs at 1 s).
      ts = float(round(t.replace(tzinfo=dt.timezone.utc).timestamp()))
      labels = {"gpu": rec["index"].strip(), "Hostname": host}
      if rec.get("uuid"):
        labels["UUID"] = rec["uuid"].strip()
      if rec.get("name"):
        labels["modelName"] = rec["name"].strip()
      values = {}
      for col, metric in COLUMNS.items():
        if col in rec and number(rec[col]) is not None:
          values[metric] = number(rec[col])
      used, total = number(rec.get("memory.used", "")), number(rec.get("memory.total", ""))
      if used is not None and total is not None:
        values["DCGM_FI_DEV_FB_FREE"] = total - used
      ticks.setdefault(ts, []).append((labels, values))
  return sorted(ticks.items())


def label_text(labels):
  return ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))


class Proc:
  def __init__(self, name, argv):
    self.name = name
    self.out = tempfile.TemporaryFile()
    self.log = tempfile.TemporaryFile()
    self.p = subprocess.Popen(argv, stdout=self.out, stderr=self.log)

  def stdout(self):
    self.out.seek(0)
    return self.out.read().decode("utf-8", "replace")

  def output(self):
    self.log.seek(0)
    return self.stdout() + self.log.read().decode("utf-8", "replace")

  def stop(self):
    if self.p.poll() is None:
      self.p.terminate()
      try:
        self.p.wait(10)
      except subprocess.TimeoutExpired:
        self.p.kill()
        self.p.wait()


def wait_for(what, fn, timeout_s):
  deadline = time.monotonic() + timeout_s
  while time.monotonic() < deadline:
    try:
      if fn():
        return
    except OSError:
      pass
    time.sleep(0.1)
  raise Failure(f"timed out after {timeout_s} s waiting for {what}")


def get(url, timeout=10):
  with urllib.request.urlopen(url, timeout=timeout) as r:
    return r.status, r.read().decode("utf-8")


def start_prometheus(args, tsdb, config, procs):
  port = free_port()
  cfg = os.path.join(os.path.dirname(tsdb), "prometheus.yml")
  with open(cfg, "w") as f:
    f.write(config)
  prom = Proc("prometheus", [
      args.prometheus, f"--config.file={cfg}", f"--storage.tsdb.path={tsdb}",
      "--storage.tsdb.retention.time=100y", f"--web.listen-address=127.0.0.1:{port}",
      "--log.level=warn"
  ])
  procs.append(prom)
  url = f"http://127.0.0.1:{port}"
  wait_for("Prometheus /-/ready", lambda: get(url + "/-/ready", 2)[0] == 200, 30)
  return url


def run_ww(args, argv, check=True):
  r = subprocess.run([args.wattwatch] + argv, capture_output=True, text=True, timeout=120)
  if check and r.returncode != 0:
    raise Failure(f"wattwatch {' '.join(argv)} exited {r.returncode}:\n{r.stderr}")
  return r


def verdicts(report):
  """What must agree: per GPU its samples and state shares, hang episodes, checkpoints."""
  gpus = {}
  for h in report["hosts"]:
    for g in h["gpus"]:
      total = sum(g["seconds"].values()) or 1
      gpus[(h["host"], g["gpu"])] = (g["samples"],
                                     {k: v / total for k, v in g["seconds"].items()})
  hangs = [(e["start"], e["end"], sorted((c["host"], c["gpu"]) for c in e["culprits"]))
           for e in report["hang_episodes"]]
  ckpts = [(c["start"], c["end"], c["all_ranks"]) for c in report["checkpoints"]]
  return gpus, hangs, ckpts


def iso_s(text):
  return dt.datetime.fromisoformat(text.rstrip("Z")).replace(tzinfo=dt.timezone.utc).timestamp()


def compare(name, want, got, sample_s, min_samples_ratio=1.0):
  wg, wh, wc = verdicts(want)
  gg, gh, gc = verdicts(got)
  if set(wg) != set(gg):
    raise Failure(f"{name}: GPUs differ: {sorted(wg)} vs {sorted(gg)}")
  for k in wg:
    (ws, wshare), (gs, gshare) = wg[k], gg[k]
    if gs < ws * min_samples_ratio or gs > ws:
      raise Failure(f"{name}: {k}: {gs} samples, the reference has {ws}")
    for state in wshare:
      if abs(wshare[state] - gshare.get(state, 0)) > 0.02:
        raise Failure(f"{name}: {k} {state}: share {gshare.get(state, 0):.3f}, "
                      f"reference {wshare[state]:.3f}")
  if len(wh) != len(gh):
    raise Failure(f"{name}: {len(gh)} hang episodes, the reference has {len(wh)}: {gh} vs {wh}")
  for (ws, we, wcul), (gs, ge, gcul) in zip(wh, gh):
    if abs(iso_s(ws) - iso_s(gs)) > sample_s or abs(iso_s(we) - iso_s(ge)) > sample_s:
      raise Failure(f"{name}: hang {gs}..{ge}, reference {ws}..{we}")
    if wcul != gcul:
      raise Failure(f"{name}: culprits {gcul}, reference {wcul}")
  if [(c[2]) for c in wc] != [(c[2]) for c in gc]:
    raise Failure(f"{name}: checkpoints {gc}, reference {wc}")
  for (ws, we, _), (gs, ge, _) in zip(wc, gc):
    if abs(iso_s(ws) - iso_s(gs)) > sample_s or abs(iso_s(we) - iso_s(ge)) > sample_s:
      raise Failure(f"{name}: checkpoint {gs}..{ge}, reference {ws}..{we}")


def backfill(args, tmp, procs):
  t0 = time.monotonic()
  sim_dir = os.path.join(tmp, "sim")
  run_ww(args, ["simulate", "multi-host", "--interval-ms", "1000", "--out-dir", sim_dir])
  csvs = sorted(os.path.join(sim_dir, f) for f in os.listdir(sim_dir) if f.endswith(".csv"))
  # The same scenario (the simulator is deterministic) as promtool's OpenMetrics input.
  om_dir = os.path.join(tmp, "om")
  run_ww(args, ["simulate", "multi-host", "--interval-ms", "1000", "--format", "openmetrics",
                "--out-dir", om_dir])
  oms = [os.path.join(om_dir, f) for f in os.listdir(om_dir)]
  if len(oms) != 1:
    raise Failure(f"simulate --format openmetrics wrote {oms}, expected one file")
  om = oms[0]
  tsdb = os.path.join(tmp, "tsdb")
  r = subprocess.run([args.promtool, "tsdb", "create-blocks-from", "openmetrics", om, tsdb],
                     capture_output=True, text=True, timeout=120)
  if r.returncode != 0:
    raise Failure(f"promtool create-blocks-from openmetrics: {r.stdout}{r.stderr}")
  url = start_prometheus(args, tsdb, "global: {}\n", procs)
  t_ready = time.monotonic()

  want = json.loads(run_ww(args, ["triage", "--json"] + csvs).stdout)
  start, end = want["start"] + "Z", want["end"] + "Z"
  got = json.loads(
      run_ww(args, ["triage", "--json", "--prometheus", url, "--start", start, "--end", end,
                    "--selector", '{Hostname=~"node.*"}']).stdout)
  compare("triage --prometheus", want, got, 1.0)
  unix_start, unix_end = str(int(iso_s(start))), str(int(iso_s(end)))
  got_step = json.loads(
      run_ww(args, ["triage", "--json", "--prometheus", url, "--start", unix_start, "--end",
                    unix_end, "--step", "1s"]).stdout)
  compare("triage --prometheus --step 1s", want, got_step, 1.0)

  # A saved response as a file: one document per metric, concatenated (curl >> incident.json).
  saved = os.path.join(tmp, "incident.json")
  with open(saved, "w") as f:
    for metric in ("DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED",
                   "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_POWER_MGMT_LIMIT", "DCGM_FI_DEV_SM_CLOCK",
                   "DCGM_FI_DEV_MEM_COPY_UTIL", "DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DEV_MEM_CLOCK"):
      q = urllib.parse.urlencode({"query": metric, "start": unix_start, "end": unix_end,
                                  "step": "1"})
      f.write(get(f"{url}/api/v1/query_range?{q}")[1] + "\n")
  got_file = json.loads(run_ww(args, ["triage", "--json", saved]).stdout)
  compare("triage incident.json", want, got_file, 1.0)

  # No series: the selector and what the server has, exit 2.
  r = run_ww(args, ["triage", "--prometheus", url, "--start", start, "--end", end,
                    "--selector", '{Hostname="nope"}'], check=False)
  if r.returncode != 2 or "no DCGM series matched" not in r.stderr or \
      'Hostname="nope"' not in r.stderr or "DCGM_FI_DEV_POWER_USAGE" not in r.stderr:
    raise Failure(f"no-series error: exit {r.returncode}: {r.stderr}")
  # A bad query: Prometheus's own words come back.
  r = run_ww(args, ["triage", "--prometheus", url, "--start", start, "--end", end,
                    "--selector", '{Hostname=~"("}'], check=False)
  if r.returncode != 2 or "bad_data" not in r.stderr:
    raise Failure(f"bad selector: exit {r.returncode}: {r.stderr}")
  print(f"backfill: {len(want['hosts'])} hosts, {len(want['hang_episodes'])} hang episode(s), "
        f"{len(want['checkpoints'])} checkpoint(s) agree; setup {t_ready - t0:.1f} s, "
        f"queries {time.monotonic() - t_ready:.1f} s")


class ReplayedExporter:
  """dcgm-exporter stand-in: /metrics serves tick k of the trace at k s after start()."""

  def __init__(self, ticks):
    self.bodies = []
    for _, gpus in ticks:
      lines = []
      for labels, values in gpus:
        for metric, v in sorted(values.items()):
          lines.append(f"{metric}{{{label_text(labels)}}} {v:g}")
      self.bodies.append("\n".join(lines) + "\n")
    self.t0 = None
    handler = self._handler()
    self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    self.url = f"http://127.0.0.1:{self.server.server_address[1]}/metrics"
    self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

  def start(self):
    self.t0 = time.monotonic()
    self.thread.start()

  def tick(self):
    return int(time.monotonic() - self.t0)

  def done(self):
    return self.tick() >= len(self.bodies)

  def _handler(self):
    outer = self

    class Handler(http.server.BaseHTTPRequestHandler):

      def do_GET(self):
        k = min(outer.tick(), len(outer.bodies) - 1)
        body = outer.bodies[k].encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

      def log_message(self, *a):
        pass

    return Handler

  def stop(self):
    self.server.shutdown()
    self.server.server_close()


def scrape(args, tmp, procs):
  t0 = time.monotonic()
  sim_dir = os.path.join(tmp, "sim")
  truth_path = os.path.join(tmp, "truth.json")
  run_ww(args, ["simulate", "hang-spin", "--interval-ms", "1000", "--gpus-per-host", "4",
                "--out-dir", sim_dir, "--truth-json", truth_path])
  with open(truth_path) as f:
    truth = json.load(f)
  hang_start = iso_s(truth["hang_episodes"][0]["start"])
  culprits = sorted(c["gpu"] for c in truth["hang_episodes"][0]["culprits"])
  csv_path = os.path.join(sim_dir, sorted(f for f in os.listdir(sim_dir) if f.endswith(".csv"))[0])
  # Training up to the hang, then the spin: enough for both to confirm it at --confirm-s.
  ticks = [t for t in read_csv_ticks(csv_path, "node0")
           if hang_start - args.lead_s <= t[0] < hang_start + args.spin_s]
  exporter = ReplayedExporter(ticks)
  config = ("global: {scrape_interval: 1s, scrape_timeout: 900ms}\nscrape_configs:\n"
            "  - job_name: dcgm\n"
            f"    static_configs: [{{targets: ['{urllib.parse.urlsplit(exporter.url).netloc}']}}]\n")
  url = start_prometheus(args, os.path.join(tmp, "tsdb"), config, procs)
  events = os.path.join(tmp, "events.jsonl")
  exporter.start()
  wall_start = time.time()
  watch = Proc("watch", [
      args.wattwatch, "watch", "--source", f"dcgm-exporter:{exporter.url}", "--interval-ms",
      "1000", "--listen", "none", "--events", events, "--confirm-s", str(args.confirm_s),
      "--json"
  ])
  procs.append(watch)
  wait_for("the replay to end", exporter.done, len(ticks) + 30)
  wall_end = time.time()
  watch.stop()
  try:
    summary = json.loads(watch.stdout())
  except ValueError:
    raise Failure(f"watch --json printed no summary:\n{watch.output()}")
  exporter.stop()
  prom_labels = os.path.join(tmp, "prom_labels.csv")
  got = json.loads(
      run_ww(args, ["triage", "--json", "--prometheus", url, "--start", f"{wall_start:.3f}",
                    "--end", f"{wall_end:.3f}", "--hang-confirm-s", str(args.confirm_s),
                    "--labels", prom_labels]).stdout)
  prom_samples = sum(g["samples"] for h in got["hosts"] for g in h["gpus"])
  if abs(prom_samples - summary["samples"]) > 0.1 * summary["samples"] + 8:
    raise Failure(f"samples: watch {summary['samples']}, prometheus {prom_samples}")
  if not summary["hangs"]:
    raise Failure(f"watch confirmed no hang: {summary}")
  if not got["hang_episodes"]:
    raise Failure(f"triage over Prometheus found no hang: {got}")
  watch_culprits = sorted(int("".join(ch for ch in c.split("/")[-1] if ch.isdigit()))
                          for c in summary["hangs"][0]["culprits"])
  prom_culprits = sorted(c["gpu"] for c in got["hang_episodes"][0]["culprits"])
  if watch_culprits != prom_culprits or prom_culprits != culprits:
    raise Failure(f"culprits: watch {watch_culprits}, prometheus {prom_culprits}, truth {culprits}")
  ws, ps = iso_s(summary["hangs"][0]["start"]), iso_s(got["hang_episodes"][0]["start"] + "Z")
  if abs(ws - ps) > 3:
    raise Failure(f"hang start: watch {summary['hangs'][0]['start']}, prometheus "
                  f"{got['hang_episodes'][0]['start']}")
  print(f"scrape: {len(ticks)} scrapes at 1 s; watch {summary['samples']} and prometheus "
        f"{prom_samples} samples; both confirm the hang of GPU(s) {prom_culprits} "
        f"{abs(ws - ps):.1f} s apart; {time.monotonic() - t0:.1f} s")


def main():
  ap = argparse.ArgumentParser()
  ap.add_argument("--wattwatch", required=True)
  ap.add_argument("--prometheus", default=shutil.which("prometheus"))
  ap.add_argument("--promtool", default=shutil.which("promtool"))
  ap.add_argument("--lead-s", type=float, default=20, help="scrape: training before the hang")
  ap.add_argument("--spin-s", type=float, default=25, help="scrape: seconds of the hang")
  ap.add_argument("--confirm-s", type=float, default=10)
  ap.add_argument("mode", choices=["backfill", "scrape"])
  args = ap.parse_args()
  if not args.prometheus or not args.promtool:
    print("skipped: no prometheus/promtool (Debian package prometheus)")
    return SKIP
  procs = []
  tmp = tempfile.mkdtemp(prefix="ww_prom_e2e_")
  t0 = time.monotonic()
  try:
    (backfill if args.mode == "backfill" else scrape)(args, tmp, procs)
  except Failure as e:
    print(f"FAIL: {e}")
    for p in procs:
      p.stop()
      print(f"--- {p.name} output:\n{p.output()[-3000:]}")
    return 1
  finally:
    for p in procs:
      p.stop()
    shutil.rmtree(tmp, ignore_errors=True)
  print(f"PASS {args.mode} in {time.monotonic() - t0:.1f} s")
  return 0


if __name__ == "__main__":
  sys.exit(main())
