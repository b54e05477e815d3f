#!/usr/bin/env python3
"""End-to-end: the real Prometheus scrapes replayed watchers and evaluates deploy/'s alert rules.

Two simulated jobs of two hosts each run at once, one watcher per host:
  e2e-hang  hang-spin:        every rank spins in a collective; WattwatchJobHang must fire within
                              a bound derived from the scenario's ground truth;
  e2e-ckpt  checkpoint-rank0: rank 0 (node0) saves a checkpoint for 150 s while the ranks on
                              node1 spin, so node1's watcher may confirm a "hang"; the job rule must
                              never be pending or firing.
Then one watcher is stopped and WattwatchWatcherDown must fire, and everything must shut down
cleanly (SIGTERM -> exit 0 within 10 s).

Time: the watchers replay at --speed 20, so 20 s of trace pass per real second. The rules are
loaded from a copy in which every `for:` is divided by the speed, so each alert's hold time covers
the same stretch of trace as in production. Range windows ([15m], [1d]) and the 60 s staleness
threshold are not scaled; the hang rule uses none of them.

Ports: Prometheus only starts scraping targets a few seconds after it learns them (its discovery
and scrape managers apply updates on 5 s tickers), which is 100+ s of trace at speed 20. So the
watchers' ports are picked first (bind 127.0.0.1:0, close), Prometheus is started and seen
scraping them (down), and only then the watchers start, on those ports; their --ready-file
confirms the address.

Usage: prometheus_e2e.py --wattwatch BIN --rules deploy/prometheus/wattwatch-rules.yml
Exit codes: 0 pass, 1 fail, 77 skipped (no prometheus binary, or no `wattwatch watch` yet).
Standard library only.
"""

import argparse
import csv
import ctypes
import datetime as dt
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

SKIP = 77
SPEED = 20
# The watcher's default --confirm-s (the contract): seconds of trace before a spin is a hang.
CONFIRM_S = 60.0
SCRAPE_INTERVAL_S = 1.0
EVAL_INTERVAL_S = 1.0
# Process start-up, the first scrape's random offset within its interval, and a loaded machine.
SLACK_S = 3.0
SHUTDOWN_S = 10.0
HANG_JOB = "e2e-hang"
CKPT_JOB = "e2e-ckpt"
HOSTS = ("node0", "node1")


class Failure(Exception):
  pass


def log(msg):
  print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


_libc = ctypes.CDLL(None, use_errno=True)


def _die_with_parent():
  # PR_SET_PDEATHSIG: children die with this script even when ctest SIGKILLs it on timeout.
  _libc.prctl(1, signal.SIGKILL, 0, 0, 0)


def parse_duration_s(text):
  """A Prometheus duration (1m, 90s, 1h30m, 500ms) in seconds."""
  units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800, "y": 31536000}
  parts = re.findall(r"(\d+)(ms|s|m|h|d|w|y)", text)
  if not parts or "".join(n + u for n, u in parts) != text:
    raise ValueError(f"not a Prometheus duration: {text!r}")
  return sum(int(n) * units[u] for n, u in parts)


def scale_rules(src_path, dst_path, speed):
  """Copies the rules, dividing every `for:` by speed. Returns {alert: scaled for in seconds}."""
  out, scaled, alert = [], {}, None
  for line in open(src_path, encoding="utf-8"):
    m = re.match(r"^\s*- alert:\s*(\S+)\s*$", line)
    if m:
      alert = m.group(1)
    m = re.match(r"^(\s*for:\s*)(\S+)(\s*)$", line)
    if m:
      seconds = parse_duration_s(m.group(2)) / speed
      scaled[alert] = seconds
      line = f"{m.group(1)}{max(1, round(seconds * 1000))}ms{m.group(3)}"
    out.append(line)
  if not scaled:
    raise Failure(f"{src_path}: no `for:` lines to scale")
  with open(dst_path, "w", encoding="utf-8") as f:
    f.writelines(out)
  return scaled


def free_port():
  with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]


def http_get(url, timeout=2.0):
  with urllib.request.urlopen(url, timeout=timeout) as r:
    return r.status, r.read().decode("utf-8", "replace")


def trace_span_s(csv_path):
  """Seconds from the first to the last timestamp of an nvidia-smi CSV log."""
  def stamp(row):
    return dt.datetime.strptime(row[0].strip(), "%Y/%m/%d %H:%M:%S.%f")

  with open(csv_path, newline="") as f:
    rows = [r for r in csv.reader(f) if r and not r[0].startswith("timestamp")]
  return stamp(rows[0]), (stamp(rows[-1]) - stamp(rows[0])).total_seconds()


class Prometheus:
  def __init__(self, url):
    self.url = url

  def api(self, path, **params):
    query = ("?" + urllib.parse.urlencode(params)) if params else ""
    status, body = http_get(f"{self.url}/api/v1/{path}{query}")
    doc = json.loads(body)
    if status != 200 or doc.get("status") != "success":
      raise Failure(f"GET /api/v1/{path}: {status} {body[:300]}")
    return doc["data"]

  def query(self, expr):
    return self.api("query", query=expr)["result"]

  def alerts(self):
    return self.api("alerts")["alerts"]


class Run:
  """Owns every process and the temporary directory; close() leaves nothing behind."""

  def __init__(self, keep_tmp):
    self.tmp = tempfile.mkdtemp(prefix="wattwatch-prom-e2e-")
    self.keep_tmp = keep_tmp
    self.procs = {}  # name -> (Popen, log path)

  def start(self, name, argv):
    log_path = os.path.join(self.tmp, f"{name}.log")
    with open(log_path, "wb") as out:
      proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                              preexec_fn=_die_with_parent)
    self.procs[name] = (proc, log_path)
    return proc

  def tail(self, name, lines=25):
    try:
      with open(self.procs[name][1], encoding="utf-8", errors="replace") as f:
        return "".join(f.readlines()[-lines:])
    except OSError:
      return ""

  def check_alive(self):
    for name, (proc, _) in self.procs.items():
      if proc.poll() is not None:
        raise Failure(f"{name} exited early with {proc.returncode}:\n{self.tail(name)}")

  def stop(self, name):
    """SIGTERM, then the exit code within SHUTDOWN_S (None if it had to be killed)."""
    proc, _ = self.procs[name]
    if proc.poll() is None:
      proc.send_signal(signal.SIGTERM)
    try:
      return proc.wait(timeout=SHUTDOWN_S)
    except subprocess.TimeoutExpired:
      proc.kill()
      proc.wait()
      return None

  def close(self):
    for name, (proc, _) in self.procs.items():
      if proc.poll() is None:
        proc.kill()
        proc.wait()
    if not self.keep_tmp:
      shutil.rmtree(self.tmp, ignore_errors=True)


def simulate(args, scenario, out_dir):
  os.makedirs(out_dir)
  truth = os.path.join(out_dir, "truth.json")
  cmd = [args.wattwatch, "simulate", scenario, "--hosts", "2", "--gpus-per-host", "4",
         "--interval-ms", "1000", "--out-dir", out_dir, "--truth-json", truth]
  res = subprocess.run(cmd, capture_output=True, text=True)
  if res.returncode != 0:
    raise Failure(f"{' '.join(cmd)} exited {res.returncode}: {res.stderr}")
  with open(truth, encoding="utf-8") as f:
    return json.load(f)


def wait_for(what, predicate, timeout_s, run, interval_s=0.2):
  deadline = time.monotonic() + timeout_s
  while True:
    run.check_alive()
    try:
      value = predicate()
      if value:
        return value
    except (OSError, urllib.error.URLError, ValueError):
      pass
    if time.monotonic() > deadline:
      raise Failure(f"timed out after {timeout_s:.0f} s waiting for {what}")
    time.sleep(interval_s)


def alert_of(alerts, name, **labels):
  return [a for a in alerts if a["labels"].get("alertname") == name and
          all(a["labels"].get(k) == v for k, v in labels.items())]


def main():
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--wattwatch", required=True, help="the wattwatch binary")
  parser.add_argument("--rules", required=True, help="deploy/prometheus/wattwatch-rules.yml")
  parser.add_argument("--prometheus", default=shutil.which("prometheus") or "/usr/bin/prometheus")
  parser.add_argument("--dashboard", help="also run this Grafana dashboard's queries")
  parser.add_argument("--keep-tmp", action="store_true", help="keep the temporary directory")
  args = parser.parse_args()

  if not os.access(args.prometheus, os.X_OK):
    print(f"SKIP: no Prometheus at {args.prometheus} (Debian package `prometheus`)")
    return SKIP
  helped = subprocess.run([args.wattwatch, "watch", "--help"], capture_output=True, text=True)
  # A binary without the subcommand prints its top-level help for `watch --help` and exits 0.
  if helped.returncode != 0 or "Usage: wattwatch watch " not in helped.stdout:
    print(f"SKIP: `{args.wattwatch} watch --help` is not the watch command's help "
          f"(rc {helped.returncode}); the watcher is not built into this binary")
    return SKIP

  run = Run(args.keep_tmp)
  rc = 1
  try:
    rc = scenario_run(args, run)
  except Failure as e:
    log(f"FAIL: {e}")
    for name in run.procs:
      log(f"--- last lines of {name} ---\n{run.tail(name)}")
  finally:
    run.close()
  if not args.keep_tmp and os.path.exists(run.tmp):
    log(f"FAIL: temporary directory {run.tmp} left behind")
    rc = 1
  return rc


def check_dashboard(prom, path, window):
  """Every panel query of the dashboard runs on the real series and returns something."""
  with open(path, encoding="utf-8") as f:
    dash = json.load(f)
  empty, ran = [], 0

  def panels(items):
    for p in items:
      yield p
      yield from panels(p.get("panels", []))

  for p in panels(dash["panels"]):
    for t in p.get("targets", []):
      expr = (t["expr"].replace("$job_id", ".*").replace("$host", ".*")
              .replace("$__rate_interval", "5s").replace("$__range", window.strip("[]")))
      ran += 1
      if not prom.query(expr):
        empty.append(f"{p['title']}: {expr}")
  if empty:
    raise Failure("dashboard queries with no data on live watchers:\n  " + "\n  ".join(empty))
  log(f"all {ran} dashboard queries return data")


def scenario_run(args, run):
  tmp = run.tmp
  log(f"temporary directory {tmp}")
  truth = {name: simulate(args, scen, os.path.join(tmp, name))
           for name, scen in (("hang", "hang-spin"), ("ckpt", "checkpoint-rank0"))}
  if len(truth["hang"]["hang_episodes"]) != 1 or truth["ckpt"]["hang_episodes"]:
    raise Failure(f"unexpected simulator ground truth: {truth}")
  trace_start, hang_span_s = trace_span_s(os.path.join(tmp, "hang", "node0.csv"))
  hang_start = dt.datetime.strptime(truth["hang"]["hang_episodes"][0]["start"],
                                    "%Y-%m-%dT%H:%M:%S.%f")
  hang_start_s = (hang_start - trace_start).total_seconds()
  _, ckpt_span_s = trace_span_s(os.path.join(tmp, "ckpt", "node0.csv"))

  rules = os.path.join(tmp, "wattwatch-rules.yml")
  scaled_for_s = scale_rules(args.rules, rules, SPEED)
  job_hang_for_s = scaled_for_s["WattwatchJobHang"]
  # Real seconds from the watchers' start: the hang begins (trace time / speed), the watcher
  # confirms it (--confirm-s of trace), the rule holds (its scaled for:); then a scrape of each
  # host and an evaluation must land, and the pending->firing step is itself an evaluation.
  bound_s = ((hang_start_s + CONFIRM_S) / SPEED + job_hang_for_s + 2 * SCRAPE_INTERVAL_S +
             2 * EVAL_INTERVAL_S + SLACK_S)
  log(f"hang starts {hang_start_s:.1f} s into the trace ({hang_start_s / SPEED:.2f} s real); "
      f"JobHang for: {job_hang_for_s:.2f} s real; bound {bound_s:.2f} s after the watchers start; "
      f"the hang trace ends at {hang_span_s / SPEED:.1f} s, the checkpoint trace at "
      f"{ckpt_span_s / SPEED:.1f} s")

  ports = {(job, host): free_port() for job in (HANG_JOB, CKPT_JOB) for host in HOSTS}
  targets = [f"127.0.0.1:{p}" for p in ports.values()]
  prom_port = free_port()
  config = os.path.join(tmp, "prometheus.yml")
  with open(config, "w", encoding="utf-8") as f:
    f.write(f"""global:
  scrape_interval: {SCRAPE_INTERVAL_S:g}s
  scrape_timeout: {SCRAPE_INTERVAL_S:g}s
  evaluation_interval: {EVAL_INTERVAL_S:g}s
rule_files:
  - {json.dumps(rules)}
scrape_configs:
  - job_name: wattwatch
    static_configs:
      - targets: {json.dumps(targets)}
""")
  run.start("prometheus", [
      args.prometheus, f"--config.file={config}", f"--storage.tsdb.path={tmp}/tsdb",
      f"--web.listen-address=127.0.0.1:{prom_port}", "--log.level=warn"])
  prom = Prometheus(f"http://127.0.0.1:{prom_port}")
  wait_for("Prometheus /-/ready", lambda: http_get(f"{prom.url}/-/ready")[0] == 200, 30, run)

  groups = prom.api("rules")["groups"]
  loaded = {r["name"]: r.get("duration") for g in groups for r in g["rules"]}
  if abs(loaded.get("WattwatchJobHang", -1) - job_hang_for_s) > 0.01:
    raise Failure(f"Prometheus loaded WattwatchJobHang with for={loaded.get('WattwatchJobHang')}"
                  f" s, expected {job_hang_for_s} s; rules: {loaded}")

  def scraping():
    active = prom.api("targets")["activeTargets"]
    seen = {t["labels"]["instance"] for t in active if not t["lastScrape"].startswith("0001")}
    return seen >= set(targets)

  wait_for("Prometheus to scrape all four (not yet started) targets", scraping, 30, run)

  t0 = time.monotonic()
  for (job, host), port in ports.items():
    scen_dir = os.path.join(tmp, "hang" if job == HANG_JOB else "ckpt")
    run.start(f"{job}-{host}", [
        args.wattwatch, "watch", "--source", f"replay:{scen_dir}/{host}.csv",
        "--speed", str(SPEED), "--listen", f"127.0.0.1:{port}",
        "--ready-file", os.path.join(tmp, f"{job}-{host}.ready"),
        "--host", host, "--job-id", job, "--linger"])
  for (job, host), port in ports.items():
    ready = os.path.join(tmp, f"{job}-{host}.ready")

    def ready_line(ready=ready):
      with open(ready, encoding="utf-8") as f:
        line = f.read().strip()
      return line if line.endswith(":" + str(port)) else None

    wait_for(f"{ready} to name port {port}", ready_line, 10, run, 0.05)
  log(f"watchers ready after {time.monotonic() - t0:.2f} s")

  # Poll the alerts until the checkpoint trace is over and a few evaluations have passed.
  ckpt_end_s = ckpt_span_s / SPEED + 2 * SCRAPE_INTERVAL_S + 3 * EVAL_INTERVAL_S
  hang_fired_s = None
  ckpt_seen = []
  polls = 0
  while True:
    now_s = time.monotonic() - t0
    run.check_alive()
    alerts = prom.alerts()
    polls += 1
    for a in alert_of(alerts, "WattwatchJobHang", job_id=CKPT_JOB):
      ckpt_seen.append((round(now_s, 2), a["state"], a["labels"], a.get("value")))
    if hang_fired_s is None:
      firing = [a for a in alert_of(alerts, "WattwatchJobHang", job_id=HANG_JOB)
                if a["state"] == "firing"]
      if firing:
        hang_fired_s = now_s
        log(f"WattwatchJobHang firing for {HANG_JOB} {now_s:.2f} s after the watchers started "
            f"({now_s - hang_start_s / SPEED:.2f} s after the hang began in replay; bound "
            f"{bound_s:.2f} s): {firing[0]['annotations'].get('summary')}")
      elif now_s > bound_s:
        raise Failure(f"WattwatchJobHang did not fire for {HANG_JOB} within {bound_s:.2f} s; "
                      f"alerts: {json.dumps(alerts)[:2000]}")
    if ckpt_seen:
      raise Failure(f"WattwatchJobHang became {ckpt_seen[0][1]} for {CKPT_JOB} at "
                    f"{ckpt_seen[0][0]} s: {ckpt_seen[0]}")
    if now_s > ckpt_end_s and hang_fired_s is not None:
      break
    time.sleep(0.5)
  log(f"{polls} polls of /api/v1/alerts over {now_s:.1f} s: no WattwatchJobHang for {CKPT_JOB}")

  # The same from Prometheus's own record (ALERTS is written at every evaluation, pending or
  # firing), which also covers the moments between two polls.
  window = f"[{int(time.monotonic() - t0) + 30}s]"
  hist = prom.query(f'ALERTS{{alertname="WattwatchJobHang",job_id="{CKPT_JOB}"}}')
  hist += prom.query(f'count_over_time(ALERTS{{alertname="WattwatchJobHang",'
                     f'job_id="{CKPT_JOB}"}}{window})')
  if hist:
    raise Failure(f"ALERTS has WattwatchJobHang for {CKPT_JOB}: {hist}")

  # Not vacuous: the checkpoint was exported, and the series the rule reads were scraped.
  ckpt = prom.query(f'max_over_time(wattwatch_gpu_state{{job_id="{CKPT_JOB}",'
                    f'state="checkpoint"}}{window}) == 1')
  if not ckpt:
    raise Failure(f"no watcher of {CKPT_JOB} ever exported wattwatch_gpu_state"
                  f'{{state="checkpoint"}} == 1')
  log("checkpoint exported by: " + ", ".join(
      sorted(f"{r['metric']['host']}/GPU{r['metric'].get('gpu')}" for r in ckpt)))
  spun = prom.query(f'max by (host) (max_over_time(wattwatch_hang_active{{job_id="{CKPT_JOB}"}}'
                    f'{window}))')
  log(f"{CKPT_JOB} max hang_active by host (1 = that host alone confirmed a hang the job rule "
      "had to veto): " + ", ".join(f"{r['metric']['host']}={r['value'][1]}" for r in spun))
  if len(spun) != 2:
    raise Failure(f"expected hang_active from both hosts of {CKPT_JOB}, got {spun}")

  if args.dashboard:
    check_dashboard(prom, args.dashboard, window)

  # A watcher that stops: SIGTERM it (exit 0), and WattwatchWatcherDown must fire for its target.
  victim = f"{CKPT_JOB}-node1"
  victim_target = f"127.0.0.1:{ports[(CKPT_JOB, 'node1')]}"
  before = alert_of(prom.alerts(), "WattwatchWatcherDown", instance=victim_target)
  rc = run.stop(victim)
  if rc != 0:
    raise Failure(f"{victim} exited {rc} on SIGTERM (expected 0):\n{run.tail(victim)}")
  del run.procs[victim]
  t_stop = time.monotonic()
  if before:
    # Only when the watcher exports the trace's own sample times as last_sample_timestamp: then
    # the staleness part of the rule fires for every replayed watcher and this check proves less.
    log(f"note: WattwatchWatcherDown was already {before[0]['state']} for {victim_target} before "
        "the stop (the replayed samples' timestamps are old)")
  down_bound_s = scaled_for_s["WattwatchWatcherDown"] + 2 * SCRAPE_INTERVAL_S + \
      2 * EVAL_INTERVAL_S + SLACK_S

  def down_firing():
    return [a for a in alert_of(prom.alerts(), "WattwatchWatcherDown", instance=victim_target)
            if a["state"] == "firing" and a["labels"].get("host") == "node1"]

  fired = wait_for(f"WattwatchWatcherDown for {victim_target}", down_firing, down_bound_s, run, 0.5)
  log(f"WattwatchWatcherDown firing {time.monotonic() - t_stop:.2f} s after the stop (bound "
      f"{down_bound_s:.2f} s): {fired[0]['annotations'].get('summary')}")

  # Clean shutdown: watchers first, Prometheus last.
  for name in [n for n in run.procs if n != "prometheus"] + ["prometheus"]:
    t = time.monotonic()
    rc = run.stop(name)
    if rc != 0:
      raise Failure(f"{name} exited {rc} on SIGTERM within {SHUTDOWN_S:.0f} s (expected 0; None ="
                    f" killed):\n{run.tail(name)}")
    log(f"{name} exited 0 {time.monotonic() - t:.2f} s after SIGTERM")
  log(f"PASS: hang alert after {hang_fired_s:.2f} s (bound {bound_s:.2f} s); no hang alert on the "
      "rank-0 checkpoint; watcher-down alert; clean shutdown")
  return 0


if __name__ == "__main__":
  sys.exit(main())
