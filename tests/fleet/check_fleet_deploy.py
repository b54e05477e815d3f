#!/usr/bin/env python3
"""Checks of the fleet service's deploy files (standard library; PyYAML and systemd-analyze
where present, else that check is skipped).

  unit        deploy/systemd/wattwatch-fleet.service: systemd-analyze verify without a warning,
              and `security` exposure at most 2.5
  k8s         deploy/kubernetes/fleet-deployment.yaml: parses, selector matches the pod labels,
              the port the probes and annotations name is the one --listen binds
  cli         every `wattwatch fleet` flag in those files, docs/fleet.md and the dashboard
              exists in `wattwatch fleet --help`
  dashboard   deploy/grafana/wattwatch-fleet-dashboard.json: a row, and every query uses only
              metrics the fleet exports (or `up`)
Usage: check_fleet_deploy.py ROOT WATTWATCH. Exit 0 pass, 1 fail, 77 when every check skipped.
"""

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

FLEET_METRICS = {
    "wattwatch_job_gpus", "wattwatch_job_hang_active", "wattwatch_job_hang_seconds",
    "wattwatch_job_wasted_gpu_seconds_total", "wattwatch_job_comm_share",
    "wattwatch_job_hang_culprit", "wattwatch_job_last_sample_timestamp_seconds",
    "wattwatch_fleet_jobs_tracked", "wattwatch_fleet_jobs_closed_total",
    "wattwatch_fleet_other_shard_jobs", "wattwatch_fleet_unattributed_gpus",
    "wattwatch_fleet_cycles_total", "wattwatch_fleet_query_requests_total",
    "wattwatch_fleet_query_errors_total", "wattwatch_fleet_query_retries_total",
    "wattwatch_fleet_partial_responses_total", "wattwatch_fleet_prometheus_up",
    "wattwatch_fleet_last_success_timestamp_seconds", "wattwatch_fleet_data_behind_seconds",
    "wattwatch_fleet_gap_seconds_total", "wattwatch_fleet_samples_read_total",
    "wattwatch_fleet_samples_unattributed_total", "wattwatch_fleet_scrape_interval_seconds",
    "wattwatch_fleet_shard_info", "wattwatch_build_info", "up",
    "wattwatch_fleet_cycles_failed_total", "wattwatch_fleet_unusable_answers_total",
    "wattwatch_fleet_answer_warnings_total", "wattwatch_fleet_samples_out_of_range_total",
    "wattwatch_fleet_hosts_listed", "wattwatch_fleet_query_pages_total"}
HISTOGRAMS = {"wattwatch_fleet_query_duration_seconds",
              "wattwatch_fleet_evaluation_duration_seconds"}


class Failure(Exception):
  pass


def fleet_calls(text):
  text = re.sub(r"\\\n", " ", text)
  calls = []
  for line in text.splitlines():
    line = re.sub(r"^\s*#\s?", "", line)
    line = re.sub(r"^ExecStart=", "", line)
    m = re.search(r"wattwatch\s+fleet\b(.*)", line)
    if m:
      try:
        calls.append(shlex.split(m.group(1), comments=True))
      except ValueError:
        calls.append(m.group(1).split())
  return calls


def check_cli(root, binary):
  res = subprocess.run([binary, "fleet", "--help"], capture_output=True, text=True)
  if res.returncode != 0:
    raise Failure(f"wattwatch fleet --help exited {res.returncode}")
  known = set(re.findall(r"(--[a-z][a-z0-9-]*)", res.stdout))
  files = ["deploy/systemd/wattwatch-fleet.service", "docs/fleet.md", "bench/fleet_scale.sh"]
  seen, errors = 0, []
  for rel in files:
    path = os.path.join(root, rel)
    if not os.path.exists(path):
      continue
    for args in fleet_calls(open(path).read()):
      seen += 1
      for a in args:
        m = re.match(r"--[a-z][a-z0-9-]*", a)  # prose: `--start/--end`, `--shard K/N`
        if m and m.group(0) not in known:
          errors.append(f"{rel}: {m.group(0)} is not in `wattwatch fleet --help`")
  k8s = os.path.join(root, "deploy/kubernetes/fleet-deployment.yaml")
  cmd = re.findall(r"^\s+- (--[a-z-]+)", open(k8s).read(), re.M)
  seen += 1
  errors += [f"fleet-deployment.yaml: {f} unknown" for f in cmd if f not in known]
  if errors:
    raise Failure("\n".join(errors))
  if seen < 4:
    raise Failure(f"only {seen} `wattwatch fleet` invocations found")
  print(f"cli: {seen} invocations, every flag exists")


def check_unit(root, binary):
  analyze = shutil.which("systemd-analyze")
  if not analyze:
    print("unit: SKIP (no systemd-analyze)")
    return False
  path = os.path.join(root, "deploy/systemd/wattwatch-fleet.service")
  text = open(path).read()
  exe = re.search(r"^ExecStart=(\S+)", text, re.M).group(1)
  with tempfile.TemporaryDirectory() as tmp:
    unit = os.path.join(tmp, "wattwatch-fleet.service")
    with open(unit, "w") as f:
      f.write(text.replace(exe, os.path.abspath(binary)))
    r = subprocess.run([analyze, "verify", unit], capture_output=True, text=True)
    if r.returncode != 0 or r.stdout.strip() or r.stderr.strip():
      raise Failure(f"systemd-analyze verify: {r.stdout}{r.stderr}")
    r = subprocess.run([analyze, "security", "--offline=true", "--threshold=25", unit],
                       capture_output=True, text=True)
    m = re.search(r"Overall exposure level for \S+: ([\d.]+)", r.stdout)
    if r.returncode != 0 or not m:
      raise Failure(f"systemd-analyze security: {r.stdout[-2000:]}{r.stderr}")
  print(f"unit: verify clean, exposure {m.group(1)}")
  return True


def check_k8s(root):
  try:
    import yaml
  except ImportError:
    print("k8s: SKIP (no PyYAML)")
    return False
  docs = list(yaml.safe_load_all(open(os.path.join(root, "deploy/kubernetes/fleet-deployment.yaml"))))
  deps = [d for d in docs if d.get("kind") == "Deployment"]
  svc = [d for d in docs if d.get("kind") == "Service"]
  if not deps or not svc:
    raise Failure("fleet-deployment.yaml: no Deployment or no Service")
  for d in deps:
    tmpl = d["spec"]["template"]
    sel = d["spec"]["selector"]["matchLabels"]
    if any(tmpl["metadata"]["labels"].get(k) != v for k, v in sel.items()):
      raise Failure(f"{d['metadata']['name']}: selector {sel} does not match the pod labels")
    c = tmpl["spec"]["containers"][0]
    argv = c["command"]
    if argv[:2] != ["wattwatch", "fleet"]:
      raise Failure(f"container command {argv[:2]}")
    listen = argv[argv.index("--listen") + 1]
    port = int(listen.rsplit(":", 1)[1])
    if c["ports"][0]["containerPort"] != port or \
        tmpl["metadata"]["annotations"]["prometheus.io/port"] != str(port):
      raise Failure("ports, annotations and --listen disagree")
    shard = argv[argv.index("--shard") + 1]
    if d["spec"]["replicas"] != 1:
      raise Failure("a shard runs one replica (two with one --shard would both alert)")
  if not all(svc[0]["spec"]["selector"].get(k) == v
             for k, v in {"app": "wattwatch-fleet"}.items()):
    raise Failure("the Service does not select the fleet pods")
  print(f"k8s: {len(deps)} Deployment(s), shard {shard}, port {port}")
  return True


def check_dashboard(root):
  d = json.load(open(os.path.join(root, "deploy/grafana/wattwatch-fleet-dashboard.json")))
  panels = d["panels"]
  if not any(p.get("type") == "row" for p in panels):
    raise Failure("the fleet dashboard has no row")
  exprs = [t["expr"] for p in panels for t in p.get("targets", [])]
  if len(exprs) < 6:
    raise Failure(f"only {len(exprs)} queries")
  for e in exprs:
    for name in re.findall(r"\b((?:wattwatch|up)[a-z_]*)\b", re.sub(r'"[^"]*"', "", e)):
      base = re.sub(r"_(bucket|sum|count)$", "", name)
      if name not in FLEET_METRICS and base not in HISTOGRAMS:
        raise Failure(f"dashboard query uses {name}, which the fleet does not export: {e}")
  print(f"dashboard: {len(exprs)} queries, all on fleet metrics")


def main():
  root, binary = sys.argv[1], sys.argv[2]
  try:
    check_cli(root, binary)
    check_dashboard(root)
    check_unit(root, binary)
    check_k8s(root)
  except Failure as e:
    print(f"FAIL: {e}")
    return 1
  return 0


if __name__ == "__main__":
  sys.exit(main())
