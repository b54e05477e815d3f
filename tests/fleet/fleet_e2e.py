#!/usr/bin/env python3
"""End-to-end: `wattwatch fleet` against the real Prometheus (Debian package) on 127.0.0.1.

Four dcgm-exporter stand-ins (small HTTP servers here) serve the simulator's samples
(`wattwatch simulate --format dcgm-exporter`, one scrape per second of wall time, with an
`hpc_job` label added to every series as dcgm-exporter's job mapping does) for three jobs on four
hosts; Prometheus scrapes them every second. Two fleet replicas (--shard 0/2 and 1/2) read
Prometheus every second:

  job hang  gpu-a        hang-spin: every rank spins in a collective 20 s in
  job ckpt  gpu-b,gpu-c  checkpoint-rank0: rank 0 on gpu-b saves for 35 s (the simulator's
                         150 s save, cut) while gpu-b's other ranks and all of gpu-c spin
  job ok    gpu-d        healthy; GPU 3 of gpu-d carries no hpc_job (unattributed)

Checks: wattwatch_job_hang_active{job=hang} is 1 within the engine's confirmation time + 3 scrape
intervals of the hang's start (the engine's time: its hang_confirmed event's newest sample minus
`since`, itself at most --hang-confirm-s + the engine's 6 s look-ahead + 2 s; the culprit is the
simulator's), and is never 1 for ckpt or ok (polled every 0.25 s, and the events files); ckpt shows checkpoint GPUs
(so the test cannot pass by seeing nothing); the two shards split the jobs as FNV-1a 64 of the
job id mod 2 says (no overlap, union = all); Prometheus stopped mid-run for ~6 s: no verdict of
/jobs changes, wattwatch_fleet_query_errors_total rises and prometheus_up reads 0, and the
replicas read on once it is back; SIGTERM stops each replica with exit 0 within 5 s.

Usage: fleet_e2e.py --wattwatch BIN [--prometheus BIN]. Exit 0 pass, 1 fail, 77 skipped.
Standard library only; every process started is stopped, the temporary directory removed.
"""

import argparse
import datetime as dt
import http.server
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

SKIP = 77
CONFIRM_S = 10
SCRAPE_S = 1.0


class Failure(Exception):
  pass


def free_port():
  with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]


def shard_hash(text):
  """FNV-1a 64 of the bytes, then MurmurHash3's fmix64 (src/fleet/jobs.h)."""
  m = (1 << 64) - 1
  h = 14695981039346656037
  for b in text.encode():
    h ^= b
    h = (h * 1099511628211) & m
  h ^= h >> 33
  h = (h * 0xff51afd7ed558ccd) & m
  h ^= h >> 33
  h = (h * 0xc4ceb9fe1a85ec53) & m
  return h ^ (h >> 33)


def iso_s(text):
  return dt.datetime.fromisoformat(text.rstrip("Z")).replace(tzinfo=dt.timezone.utc).timestamp()


LINE = re.compile(r'^(DCGM_FI_[A-Z0-9_]+)\{(.*)\} (\S+) (\d+)$')


def read_scrapes(path):
  """{timestamp_ms: [(metric, labels text, value)]} from `simulate --format dcgm-exporter`."""
  out = {}
  with open(path) as f:
    for line in f:
      m = LINE.match(line.strip())
      if m:
        out.setdefault(int(m.group(4)), []).append((m.group(1), m.group(2), m.group(3)))
  return out


def body(lines, host, job, unattributed_gpus=()):
  text = []
  for metric, labels, value in lines:
    labels = re.sub(r'Hostname="[^"]*"', f'Hostname="{host}"', labels)
    gpu = re.search(r'gpu="(\d+)"', labels).group(1)
    if int(gpu) not in unattributed_gpus:
      labels += f',hpc_job="{job}"'
    text.append(f"{metric}{{{labels}}} {value}")
  return ("\n".join(text) + "\n").encode()


class Exporter:
  """dcgm-exporter stand-in: /metrics serves body k at k s after start() (no timestamps)."""

  def __init__(self, bodies):
    self.bodies = bodies
    self.t0 = None
    outer = self

    class Handler(http.server.BaseHTTPRequestHandler):

      def do_GET(self):
        k = min(int(time.monotonic() - outer.t0), len(outer.bodies) - 1)
        data = outer.bodies[k]
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

      def log_message(self, *a):
        pass

    self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    self.target = f"127.0.0.1:{self.server.server_address[1]}"
    self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

  def start(self, t0):
    self.t0 = t0
    self.thread.start()

  def stop(self):
    self.server.shutdown()
    self.server.server_close()


class Proc:

  def __init__(self, name, argv):
    self.name = name
    self.log = tempfile.TemporaryFile()
    self.out = tempfile.TemporaryFile()
    self.p = subprocess.Popen(argv, stdout=self.out, stderr=self.log)

  def output(self):
    self.log.seek(0)
    return self.log.read().decode("utf-8", "replace")

  def stop(self, timeout=10):
    if self.p.poll() is None:
      self.p.send_signal(signal.SIGTERM)
      try:
        self.p.wait(timeout)
      except subprocess.TimeoutExpired:
        self.p.kill()
        self.p.wait()
    return self.p.returncode


def get(url, timeout=2):
  with urllib.request.urlopen(url, timeout=timeout) as r:
    return r.read().decode()


def metrics(addr):
  """{(name, frozenset(labels)): value}"""
  out = {}
  for line in get(f"http://{addr}/metrics").splitlines():
    if not line or line.startswith("#"):
      continue
    m = re.match(r'^([a-z_]+)(?:\{(.*)\})? (\S+)$', line)
    if not m:
      continue
    labels = frozenset(re.findall(r'([a-z_]+)="([^"]*)"', m.group(2) or ""))
    out[(m.group(1), labels)] = float(m.group(3))
  return out


def job_value(ms, name, job, **extra):
  return ms.get((name, frozenset({("job", job), *extra.items()})))


def wait_for(what, fn, timeout_s):
  deadline = time.monotonic() + timeout_s
  while time.monotonic() < deadline:
    try:
      v = fn()
      if v:
        return v
    except (OSError, ValueError):
      pass
    time.sleep(0.1)
  raise Failure(f"timed out after {timeout_s} s waiting for {what}")


def simulate(args, tmp, scenario, hosts, name):
  d = os.path.join(tmp, name)
  truth = os.path.join(tmp, name + ".truth.csv")
  r = subprocess.run([args.wattwatch, "simulate", scenario, "--hosts", str(hosts),
                      "--gpus-per-host", "4", "--interval-ms", "1000", "--format",
                      "dcgm-exporter", "--out-dir", d, "--truth", truth],
                     capture_output=True, text=True, timeout=60)
  if r.returncode != 0:
    raise Failure(f"simulate {scenario}: {r.stderr}")
  return [read_scrapes(os.path.join(d, f"node{h}.prom")) for h in range(hosts)], truth


def first_state(truth, state, host="node0", gpu="0", after=None):
  with open(truth) as f:
    next(f)
    for line in f:
      h, ts, g, st = line.strip().split(",")
      t = iso_s(ts)
      if h == host and g == gpu and st == state and (after is None or t > after):
        return t
  raise Failure(f"{truth}: no {state}")


def engine_confirm_s(args, tmp, scrapes):
  """Offline triage of these samples: (detected_at - start, start, culprit GPUs)."""
  path = os.path.join(tmp, "hang_only.prom")
  with open(path, "w") as f:
    for ts, lines in sorted(scrapes.items()):
      for metric, labels, value in lines:
        f.write(f"{metric}{{{labels}}} {value} {ts}\n")
  r = subprocess.run([args.wattwatch, "triage", "--json", "--hang-confirm-s", str(CONFIRM_S),
                      path], capture_output=True, text=True, timeout=60)
  h = json.loads(r.stdout)["hang_episodes"][0]
  return (iso_s(h["detected_at"]) - iso_s(h["start"]), iso_s(h["start"]),
          sorted(c["gpu"] for c in h["culprits"]))


def run(args, tmp, procs, exporters):
  t_begin = time.monotonic()
  hang_host, hang_truth = simulate(args, tmp, "hang-spin", 1, "hang")
  ckpt_hosts, ckpt_truth = simulate(args, tmp, "checkpoint-rank0", 2, "ckpt")
  ok_host, _ = simulate(args, tmp, "healthy", 1, "ok")

  # Shortened windows of each trace, one scrape a second.
  total_s = 95
  hs = sorted(hang_host[0])
  spin_ms = int(first_state(hang_truth, "hang") * 1000)
  hang_from = hs.index(min(t for t in hs if t >= spin_ms - 20000))
  hang_ticks = hs[hang_from:hang_from + total_s]
  _, start_s, culprit_gpus = engine_confirm_s(args, tmp,
                                              {t: hang_host[0][t] for t in hang_ticks})
  hang_begins_at = (start_s * 1000 - hang_ticks[0]) / 1000  # wall s after the exporters start

  cs = sorted(ckpt_hosts[0])
  first_ckpt = first_state(ckpt_truth, "checkpoint")
  long_ckpt = first_state(ckpt_truth, "checkpoint", after=first_ckpt + 30)  # the 150 s save
  resume = first_state(ckpt_truth, "communication", after=long_ckpt)
  lead = [t for t in cs if long_ckpt * 1000 - 15000 <= t < long_ckpt * 1000 + 35000]
  tail = [t for t in cs if t >= resume * 1000]
  ckpt_ticks = (lead + tail)[:total_s]
  ok_ticks = sorted(ok_host[0])[60:60 + total_s]

  jobs = {"hang": None, "ckpt": None, "ok": None}
  # Job ids whose hashes put both shards to work (the split is checked against FNV-1a 64).
  for suffix in range(100):
    names = {k: f"{k}-{suffix}" for k in jobs}
    shards = {shard_hash(v) % 2 for v in names.values()}
    if shards == {0, 1}:
      jobs = names
      break
  bodies = {
      "gpu-a": [body(hang_host[0][t], "gpu-a", jobs["hang"]) for t in hang_ticks],
      "gpu-b": [body(ckpt_hosts[0][t], "gpu-b", jobs["ckpt"]) for t in ckpt_ticks],
      "gpu-c": [body(ckpt_hosts[1][t], "gpu-c", jobs["ckpt"]) for t in ckpt_ticks],
      "gpu-d": [body(ok_host[0][t], "gpu-d", jobs["ok"], unattributed_gpus=(3,))
                for t in ok_ticks],
  }
  for host, b in bodies.items():
    exporters[host] = Exporter(b)
  targets = ", ".join(f"'{e.target}'" for e in exporters.values())
  prom_port = free_port()
  prom_dir = os.path.join(tmp, "prom")
  os.makedirs(prom_dir)
  cfg = os.path.join(prom_dir, "prometheus.yml")
  with open(cfg, "w") as f:
    f.write(f"global: {{scrape_interval: 1s, scrape_timeout: 900ms}}\nscrape_configs:\n"
            f"  - job_name: dcgm\n    static_configs: [{{targets: [{targets}]}}]\n")
  prom_argv = [args.prometheus, f"--config.file={cfg}", f"--storage.tsdb.path={prom_dir}/tsdb",
               f"--web.listen-address=127.0.0.1:{prom_port}", "--log.level=warn"]
  prom_url = f"http://127.0.0.1:{prom_port}"
  prom = Proc("prometheus", prom_argv)
  procs.append(prom)
  wait_for("Prometheus ready", lambda: get(prom_url + "/-/ready"), 30)

  fleets = {}
  for k in (0, 1):
    ready = os.path.join(tmp, f"ready{k}")
    fleets[k] = (Proc(f"fleet {k}/2", [
        args.wattwatch, "fleet", "--prometheus", prom_url, "--interval-s", "1",
        "--lookback-s", "120", "--shard", f"{k}/2", "--hang-confirm-s", str(CONFIRM_S),
        "--retries", "1", "--retry-backoff-s", "0.2", "--timeout-s", "2",
        "--listen", "127.0.0.1:0", "--ready-file", ready,
        "--events", os.path.join(tmp, f"events{k}.jsonl")]), ready)
    procs.append(fleets[k][0])
  addrs = {}
  for k, (p, ready) in fleets.items():
    addrs[k] = wait_for(f"fleet {k}/2 ready file",
                        lambda: open(ready).read().strip() if os.path.exists(ready) else "", 20)

  t0 = time.monotonic()
  t_wall0 = time.time()
  for e in exporters.values():
    e.start(t0)
  owner = {j: shard_hash(j) % 2 for j in jobs.values()}

  hang_seen_at = None
  ever_hang = {j: False for j in jobs.values()}
  ckpt_seen = False
  outage = None  # (t_stop, jobs before, errors before)
  after_outage_ok = False
  while time.monotonic() - t0 < 80:
    now = time.monotonic() - t0
    for k, addr in addrs.items():
      ms = metrics(addr)
      for j in jobs.values():
        v = job_value(ms, "wattwatch_job_hang_active", j)
        if v is not None and owner[j] != k:
          raise Failure(f"shard {k}/2 exports job {j}, which the shard hash puts on shard {owner[j]}")
        if v == 1:
          ever_hang[j] = True
          if j == jobs["hang"] and hang_seen_at is None:
            hang_seen_at = now
            hang_seen_wall = time.time()
      if (job_value(ms, "wattwatch_job_gpus", jobs["ckpt"], state="checkpoint") or 0) > 0:
        ckpt_seen = True
      if owner[jobs["ok"]] == k and now > 20:
        un = ms.get(("wattwatch_fleet_unattributed_gpus", frozenset()))
        if un != 1:
          raise Failure(f"unattributed GPUs {un}, expected 1 (gpu-d/GPU3)")
    if ever_hang[jobs["ckpt"]] or ever_hang[jobs["ok"]]:
      raise Failure(f"hang_active for a job that does not hang at {now:.1f} s: {ever_hang}")
    if outage is None and hang_seen_at is not None and now > 42:
      before = {k: verdicts(addrs[k]) for k in addrs}
      errors = {k: errors_of(addrs[k]) for k in addrs}
      prom.stop()
      outage = (now, before, errors)
      time.sleep(1)
      continue
    if outage is not None and prom.p.poll() is not None:
      if now - outage[0] >= 6:
        for k in addrs:
          after = verdicts(addrs[k])
          if after != outage[1][k]:
            raise Failure(f"verdicts changed while Prometheus was out: {outage[1][k]} -> {after}")
          ms = metrics(addrs[k])
          if errors_of(addrs[k]) <= outage[2][k]:
            raise Failure(f"shard {k}/2: query errors did not rise while Prometheus was out")
          if ms.get(("wattwatch_fleet_prometheus_up", frozenset())) != 0:
            raise Failure(f"shard {k}/2: prometheus_up is not 0 while Prometheus is out")
        prom = Proc("prometheus", prom_argv)
        procs.append(prom)
        wait_for("Prometheus ready again", lambda: get(prom_url + "/-/ready"), 30)
        outage_end = time.monotonic() - t0
    if outage is not None and prom.p.poll() is None and not after_outage_ok:
      if all(metrics(a).get(("wattwatch_fleet_prometheus_up", frozenset())) == 1
             for a in addrs.values()):
        after_outage_ok = time.monotonic() - t0 > outage[0] + 6
    time.sleep(0.25)

  if hang_seen_at is None:
    raise Failure("wattwatch_job_hang_active never 1 for the hanging job")
  if not ckpt_seen:
    raise Failure("the checkpoint job never showed a GPU in checkpoint")
  if outage is None or not after_outage_ok:
    raise Failure("the outage did not happen or the replicas did not recover")
  docs = {k: json.loads(get(f"http://{a}/jobs")) for k, a in addrs.items()}
  jobs_by_shard = {k: {j["job"] for j in d["jobs"]} for k, d in docs.items()}
  by_id = {j["job"]: j for d in docs.values() for j in d["jobs"]}
  h = by_id.get(jobs["hang"], {})
  if h.get("verdict") != "hang" or not any("spinning in a collective" in r
                                            for r in h.get("reasons", [])):
    raise Failure(f"/jobs for the hanging job: {h}")
  if by_id.get(jobs["ckpt"], {}).get("verdict") == "hang" or \
      by_id.get(jobs["ok"], {}).get("verdict") == "hang":
    raise Failure(f"/jobs: {by_id}")
  for a in addrs.values():
    urllib.request.urlopen(f"http://{a}/healthz", timeout=2)  # 200 once cycles succeed
  if jobs_by_shard[0] & jobs_by_shard[1] or jobs_by_shard[0] | jobs_by_shard[1] != set(
      jobs.values()):
    raise Failure(f"shards: {jobs_by_shard}, jobs {sorted(jobs.values())}")
  for k, (p, _) in fleets.items():
    t = time.monotonic()
    rc = p.stop(timeout=5)
    if rc != 0 or time.monotonic() - t > 5:
      raise Failure(f"fleet {k}/2 exited {rc} after SIGTERM in {time.monotonic() - t:.1f} s")
  events = []
  for k in (0, 1):
    with open(os.path.join(tmp, f"events{k}.jsonl")) as f:
      events += [json.loads(l) for l in f]
  confirmed = [e for e in events if e.get("event") == "hang_confirmed"]
  if [e["job_id"] for e in confirmed] != [jobs["hang"]] or confirmed[0]["historical"]:
    raise Failure(f"hang_confirmed events: {confirmed}")
  c = confirmed[0]
  since = c["since_ms"] / 1000
  engine_s = c["confirmed_with_samples_until_ms"] / 1000 - since
  if engine_s > CONFIRM_S + 6 + 2:
    raise Failure(f"the engine confirmed {engine_s:.1f} s after the hang began: over "
                  f"--hang-confirm-s {CONFIRM_S} + 6 s look-ahead + 2 s")
  latency = hang_seen_wall - since
  if latency > engine_s + 3 * SCRAPE_S:
    raise Failure(f"hang_active {latency:.1f} s after the hang began; the bound is engine "
                  f"{engine_s:.1f} s + 3 scrapes of {SCRAPE_S:g} s")
  if abs(since - (t_wall0 + hang_begins_at)) > 3:
    raise Failure(f"hang since {c['since']}, the trace's starts {hang_begins_at:.1f} s in")
  if c["culprits"] != [f"gpu-a/GPU{g}" for g in culprit_gpus]:
    raise Failure(f"culprits {c['culprits']}, the simulator's: {culprit_gpus}")
  print(f"hang_active {latency:.1f} s after the hang began (engine {engine_s:.1f} s, bound "
        f"{engine_s + 3 * SCRAPE_S:.1f} s), culprits {c['culprits']}; shards "
        f"{sorted(jobs_by_shard[0])} / {sorted(jobs_by_shard[1])}; outage at {outage[0]:.1f} s "
        f"held every verdict; {time.monotonic() - t_begin:.1f} s in all")


def verdicts(addr):
  return {j["job"]: j["verdict"] for j in json.loads(get(f"http://{addr}/jobs"))["jobs"]}


def errors_of(addr):
  return metrics(addr).get(("wattwatch_fleet_query_errors_total", frozenset()), 0)


def main():
  ap = argparse.ArgumentParser()
  ap.add_argument("--wattwatch", required=True)
  ap.add_argument("--prometheus", default=shutil.which("prometheus"))
  args = ap.parse_args()
  if not args.prometheus:
    print("skipped: no prometheus (Debian package prometheus)")
    return SKIP
  procs, exporters = [], {}
  tmp = tempfile.mkdtemp(prefix="ww_fleet_e2e_")
  try:
    run(args, tmp, procs, exporters)
  except Failure as e:
    print(f"FAIL: {e}")
    for p in procs:
      p.stop()
      print(f"--- {p.name}:\n{p.output()[-3000:]}")
    return 1
  finally:
    for p in procs:
      p.stop()
    for e in exporters.values():
      if e.t0 is not None:
        e.stop()
    shutil.rmtree(tmp, ignore_errors=True)
  print("PASS")
  return 0


if __name__ == "__main__":
  sys.exit(main())
