#!/usr/bin/env python3
"""Static checks of deploy/: the files only use what the watcher's contract provides.

  check_deploy.py grafana DASHBOARD.json   dashboard parses; its queries use contract metrics,
                                           labels and states only, and cover every panel topic
  check_deploy.py rules RULES.yml TEST.yml alerts use contract metrics + `up`; each alert has
                                           summary/description and a plain `for:` line
  check_deploy.py k8s DAEMONSET.yaml       manifests parse and the DaemonSet is wired up
  check_deploy.py systemd UNIT BINARY      `systemd-analyze verify` and `security` on the unit
  check_deploy.py cli DEPLOY_DIR BINARY    every wattwatch flag used in deploy/ exists in --help

Exit codes: 0 pass, 1 fail, 77 skipped (a tool or module this check needs is missing).
"""

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

SKIP = 77

# The contract of `wattwatch watch` (docs/deploy.md, "Metrics").
COUNTERS = {"wattwatch_gpu_state_seconds_total", "wattwatch_wasted_gpu_seconds_total",
            "wattwatch_samples_dropped_total"}
GAUGES = {"wattwatch_gpu_state", "wattwatch_gpu_power_watts", "wattwatch_gpu_utilization_ratio",
          "wattwatch_hang_active", "wattwatch_hang_seconds",
          "wattwatch_last_sample_timestamp_seconds", "wattwatch_build_info"}
HISTOGRAMS = {"wattwatch_sample_duration_seconds", "wattwatch_tick_lateness_seconds"}
CONTRACT_METRICS = (COUNTERS | GAUGES |
                    {h + s for h in HISTOGRAMS for s in ("_bucket", "_sum", "_count")})
STATES = {"idle", "compute", "communication", "data_starved", "checkpoint", "hang"}
# The watcher's labels, plus what Prometheus adds (job, instance) and the histogram's le.
LABELS = {"host", "job_id", "gpu", "state", "version", "le", "job", "instance", "__name__"}

KEYWORDS = {"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring",
            "group_left", "group_right", "inf", "nan", "atan2", "start", "end"}
GROUPING = r"\b(by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)"


class Failure(Exception):
  pass


def strip_strings(expr):
  return re.sub(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`', '""', expr)


def promql_refs(expr):
  """(metric names, label names, {label: [matcher values]}) used by a PromQL expression.

  Not a parser: enough for the expressions in deploy/ (selectors, grouping clauses, functions).
  """
  expr = re.sub(r"#[^\n]*", "", expr)
  labels, values = set(), {}
  for body in re.findall(r"\{([^}]*)\}", expr):
    for name, _, value in re.findall(r'([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"',
                                      body):
      labels.add(name)
      values.setdefault(name, []).append(value)
  bare = strip_strings(expr)
  bare = re.sub(r"\{[^}]*\}", " ", bare)
  for _, names in re.findall(GROUPING, bare):
    labels.update(n.strip() for n in names.split(",") if n.strip())
  bare = re.sub(GROUPING, " ", bare)
  bare = re.sub(r"\[[^\]]*\]", " ", bare)
  metrics = set()
  for m in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", bare):
    word = m.group(0)
    before = bare[m.start() - 1] if m.start() else " "
    after = bare[m.end():].lstrip()
    if before.isdigit() or before in "$." or word.lower() in KEYWORDS or after.startswith("("):
      continue
    metrics.add(word)
  return metrics, labels, values


def check_refs(where, expr, allowed_metrics):
  metrics, labels, values = promql_refs(expr)
  errors = []
  for m in sorted(metrics - allowed_metrics):
    errors.append(f"{where}: metric {m!r} is not in the watcher's contract")
  for l in sorted(labels - LABELS):
    errors.append(f"{where}: label {l!r} is not in the watcher's contract")
  for value in values.get("state", []):
    for state in re.split(r"\|", value):
      if state and state not in STATES:
        errors.append(f"{where}: state {state!r} is not one of {sorted(STATES)}")
  return metrics, errors


def walk_panels(panels):
  for p in panels:
    yield p
    yield from walk_panels(p.get("panels", []))


def cmd_grafana(path):
  with open(path, encoding="utf-8") as f:
    dash = json.load(f)
  errors, used = [], set()
  exprs = 0
  for p in walk_panels(dash.get("panels", [])):
    for t in p.get("targets", []):
      exprs += 1
      metrics, errs = check_refs(f"panel {p.get('title')!r}", t["expr"], CONTRACT_METRICS)
      used |= metrics
      errors += errs
  for var in dash.get("templating", {}).get("list", []):
    if var.get("type") != "query":
      continue
    query = var["query"]["query"] if isinstance(var["query"], dict) else var["query"]
    m = re.fullmatch(r"label_values\((.*),\s*([A-Za-z_]\w*)\)", query.strip())
    if not m:
      errors.append(f"variable {var['name']}: expected label_values(SELECTOR, LABEL): {query}")
      continue
    metrics, errs = check_refs(f"variable {var['name']}", m.group(1), CONTRACT_METRICS)
    used |= metrics
    errors += errs
    if m.group(2) not in LABELS:
      errors.append(f"variable {var['name']}: label {m.group(2)!r} not in the contract")
  # What the dashboard is for: states per GPU, power, hangs, waste, and the watcher's own health.
  for needed in ("wattwatch_gpu_state", "wattwatch_gpu_power_watts", "wattwatch_hang_active",
                 "wattwatch_wasted_gpu_seconds_total", "wattwatch_sample_duration_seconds_bucket",
                 "wattwatch_samples_dropped_total", "wattwatch_last_sample_timestamp_seconds"):
    if needed not in used:
      errors.append(f"no panel shows {needed}")
  if not any(p.get("type") == "state-timeline" and "wattwatch_gpu_state" in t["expr"]
             for p in walk_panels(dash["panels"]) for t in p.get("targets", [])):
    errors.append("no state-timeline panel of wattwatch_gpu_state")
  ids = [p["id"] for p in walk_panels(dash["panels"])]
  if len(ids) != len(set(ids)):
    errors.append("panel ids are not unique")
  if errors:
    raise Failure("\n".join(errors))
  print(f"{path}: {exprs} queries, metrics used: {', '.join(sorted(used))}")


def load_yaml_all(path):
  try:
    import yaml  # pylint: disable=import-outside-toplevel
  except ImportError:
    print("SKIP: python3-yaml is not installed")
    sys.exit(SKIP)
  with open(path, encoding="utf-8") as f:
    return [d for d in yaml.safe_load_all(f) if d is not None]


def cmd_rules(rules_path, test_path):
  (doc,) = load_yaml_all(rules_path)
  allowed = CONTRACT_METRICS | {"up"}
  errors, alerts = [], []
  for group in doc["groups"]:
    for rule in group["rules"]:
      name = rule.get("alert") or rule.get("record")
      alerts.append(name)
      _, errs = check_refs(name, rule["expr"], allowed)
      errors += errs
      if "alert" in rule:
        ann = rule.get("annotations", {})
        for key in ("summary", "description"):
          if not ann.get(key):
            errors.append(f"{name}: no {key} annotation")
        if "for" not in rule:
          errors.append(f"{name}: no for:")
  # The e2e test scales `for:` lines textually: each must be a plain duration on its own line.
  text = open(rules_path, encoding="utf-8").read()
  for line in re.findall(r"^\s*for:.*$", text, re.M):
    if not re.fullmatch(r"\s*for: (\d+(ms|s|m|h|d|w|y))+", line):
      errors.append(f"`for:` line is not a plain duration: {line.strip()!r}")
  if len(re.findall(r"^\s*for:", text, re.M)) != sum(1 for a in alerts if a):
    errors.append("every alert needs exactly one `for:` line")
  for needed in ("WattwatchJobHang", "WattwatchWatcherDown", "WattwatchDataStarved",
                 "WattwatchWastedGpuHours"):
    if needed not in alerts:
      errors.append(f"alert {needed} is missing")
  # The unit tests' input series must be contract metrics too, or they test a fiction.
  (tests,) = load_yaml_all(test_path)
  fires, quiet = set(), set()
  for case in tests["tests"]:
    for series in case.get("input_series", []):
      metric = series["series"].split("{", 1)[0].strip()
      if metric not in allowed:
        errors.append(f"{test_path}: input series {metric!r} is not in the contract")
    for t in case.get("alert_rule_test", []):
      (fires if t.get("exp_alerts") else quiet).add(t["alertname"])
  for a in alerts:
    if a not in fires:
      errors.append(f"{test_path}: no case where {a} fires")
    if a not in quiet:
      errors.append(f"{test_path}: no case where {a} must stay quiet")
  if errors:
    raise Failure("\n".join(errors))
  print(f"{rules_path}: alerts {', '.join(alerts)}; each fires and stays quiet in {test_path}")


def cmd_k8s(path):
  docs = load_yaml_all(path)
  by_kind = {d["kind"]: d for d in docs}
  errors = []
  ds = by_kind.get("DaemonSet")
  if not ds:
    raise Failure("no DaemonSet")
  spec = ds["spec"]
  tmpl = spec["template"]
  sel = spec["selector"]["matchLabels"]
  if any(tmpl["metadata"]["labels"].get(k) != v for k, v in sel.items()):
    errors.append("DaemonSet selector does not match the pod template's labels")
  (c,) = tmpl["spec"]["containers"]
  env = {e["name"]: e.get("value") for e in c.get("env", [])}
  if env.get("NVIDIA_VISIBLE_DEVICES") != "all":
    errors.append("container needs NVIDIA_VISIBLE_DEVICES=all")
  if any("nvidia.com/gpu" in str(v) for v in c.get("resources", {}).values()):
    errors.append("the watcher must not request nvidia.com/gpu (it would take a GPU from jobs)")
  args = c.get("args", [])
  if args[:1] != ["watch"] or "--listen" not in args:
    errors.append(f"container args should run `watch --listen ...`: {args}")
  else:
    listen = args[args.index("--listen") + 1]
    port = int(listen.rsplit(":", 1)[1])
    ports = {p["name"]: p["containerPort"] for p in c.get("ports", [])}
    if ports.get("metrics") != port:
      errors.append(f"--listen {listen} but the metrics containerPort is {ports.get('metrics')}")
    ann = tmpl["metadata"].get("annotations", {})
    if ann.get("prometheus.io/port") != str(port):
      errors.append("prometheus.io/port annotation does not match --listen")
  if c.get("readinessProbe", {}).get("httpGet", {}).get("path") != "/healthz":
    errors.append("readinessProbe should use /healthz")
  sc = c.get("securityContext", {})
  if sc.get("allowPrivilegeEscalation") is not False or sc.get("privileged"):
    errors.append("container must not be privileged or allow privilege escalation")
  pm = by_kind.get("PodMonitor")
  if pm and pm["spec"]["selector"]["matchLabels"].items() - tmpl["metadata"]["labels"].items():
    errors.append("PodMonitor selector does not match the pods")
  if errors:
    raise Failure("\n".join(errors))
  print(f"{path}: {', '.join(d['kind'] for d in docs)} parse and fit together")


def help_commands(binary, **kw):
  """The subcommands `binary --help` lists (its "Subcommands:" section), in order."""
  out = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=60, **kw).stdout
  commands = []
  on = False
  for line in out.splitlines():
    if line.startswith("Subcommands:"):
      on = True
    elif on and re.match(r"^  [a-z]", line):
      commands.append(line.split()[0])
  return commands


def systemd_verify(analyze, unit_path, binary, tmp):
  """`systemd-analyze verify` of the unit with its ExecStart pointed at `binary` (verify checks
  that ExecStart is executable; the unit's own path may not exist here). The copy is written to
  the folder `tmp` and its path returned; raises Failure on any output: verify exits 0 on unknown
  keys but warns, and a misspelt hardening option would be silently lost."""
  text = open(unit_path, encoding="utf-8").read()
  exec_start = re.search(r"^ExecStart=(\S+)", text, re.M).group(1)
  unit = os.path.join(tmp, os.path.basename(unit_path))
  with open(unit, "w", encoding="utf-8") as f:
    f.write(text.replace(exec_start, os.path.abspath(binary)))
  res = subprocess.run([analyze, "verify", unit], capture_output=True, text=True)
  if res.returncode != 0 or res.stderr.strip() or res.stdout.strip():
    raise Failure(f"systemd-analyze verify {unit_path}: rc {res.returncode}\n"
                  f"{res.stdout}{res.stderr}")
  return unit


def cmd_systemd(unit_path, binary):
  analyze = shutil.which("systemd-analyze")
  if not analyze:
    print("SKIP: systemd-analyze is not installed")
    return SKIP
  text = open(unit_path, encoding="utf-8").read()
  with tempfile.TemporaryDirectory() as tmp:
    unit = systemd_verify(analyze, unit_path, binary, tmp)
    res = subprocess.run([analyze, "security", "--offline=true", "--threshold=25", unit],
                         capture_output=True, text=True)
    overall = re.search(r"Overall exposure level for \S+: ([\d.]+)", res.stdout)
    if res.returncode != 0 or not overall:
      raise Failure(f"systemd-analyze security: exposure above 2.5 or no verdict:\n"
                    f"{res.stdout[-3000:]}{res.stderr}")
  for key in ("NoNewPrivileges=yes", "ProtectSystem=strict", "DynamicUser=yes",
              "DeviceAllow=char-nvidia* rw"):
    if key not in text:
      raise Failure(f"{unit_path}: {key} is missing")
  print(f"{unit_path}: verify clean; exposure {overall.group(1)} (systemd-analyze security)")
  return 0


def wattwatch_invocations(path):
  """(subcommand, [args]) of every wattwatch call in a shell script, unit file or manifest."""
  text = open(path, encoding="utf-8").read()
  calls = []
  if path.endswith((".yaml", ".yml")):
    for doc in load_yaml_all(path):
      for c in (doc.get("spec", {}).get("template", {}).get("spec", {}).get("containers", [])):
        if c.get("args"):
          calls.append((c["args"][0], c["args"][1:]))
    return calls
  if path.endswith(".service"):
    text = re.sub(r"^#[ \t]?", "", text, flags=re.M)  # the drop-in example in comments counts too
  text = re.sub(r"\\\n", " ", text)  # continued lines
  for line in text.splitlines():
    line = line.strip()
    if line.startswith("#") and not path.endswith(".service"):
      continue
    line = re.sub(r"^ExecStart=", "", line)
    m = re.search(r'(?:^|[\s"\'/{}$])(?i:wattwatch)\}?"?\s+(watch|run|gate)\b(.*)', line)
    if not m:
      continue
    try:
      words = shlex.split(m.group(2), comments=True)
    except ValueError:
      words = m.group(2).split()
    args = []
    for w in words:
      if w in ("--", "|", "||", "&&", ";", "&") or w.startswith(("|", ";", ">")):
        break
      args.append(w)
    calls.append((m.group(1), args))
  return calls


def cmd_cli(deploy_dir, binary):
  helps = {}
  for sub in ("watch", "run", "gate"):
    res = subprocess.run([binary, sub, "--help"], capture_output=True, text=True)
    # An unknown subcommand's --help prints the top-level help and exits 0.
    if res.returncode != 0 or f"Usage: wattwatch {sub} " not in res.stdout:
      print(f"SKIP: `wattwatch {sub} --help` is not that command's help (not implemented yet?)")
      return SKIP
    helps[sub] = set(re.findall(r"(--[a-z][a-z0-9-]*)", res.stdout))
  errors, seen = [], 0
  for root, _, files in os.walk(deploy_dir):
    for name in files:
      path = os.path.join(root, name)
      if not name.endswith((".sh", ".sbatch", ".service", ".yaml", ".yml")):
        continue
      for sub, args in wattwatch_invocations(path):
        seen += 1
        for a in args:
          flag = a.split("=", 1)[0]
          if flag.startswith("--") and flag not in helps[sub]:
            errors.append(f"{path}: `wattwatch {sub} {flag}` is not in `wattwatch {sub} --help`")
  if seen < 4:
    errors.append(f"found only {seen} wattwatch invocations under {deploy_dir}")
  if errors:
    raise Failure("\n".join(errors))
  print(f"{deploy_dir}: {seen} wattwatch invocations, every flag exists")
  return 0


def main(argv):
  if len(argv) < 3:
    print(__doc__)
    return 2
  cmd, args = argv[1], argv[2:]
  try:
    if cmd == "grafana":
      cmd_grafana(*args)
    elif cmd == "rules":
      cmd_rules(*args)
    elif cmd == "k8s":
      cmd_k8s(*args)
    elif cmd == "systemd":
      return cmd_systemd(*args)
    elif cmd == "cli":
      return cmd_cli(*args)
    else:
      print(__doc__)
      return 2
  except Failure as e:
    print(f"FAIL:\n{e}")
    return 1
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv))
