#!/usr/bin/env python3
"""deploy/slurm/ under a real slurmctld and slurmd (tests/deploy/slurm_cluster.py).

The shipped files run as shipped: prolog.sh is installed as docs/deploy.md says (into a
temporary prefix), and train.sbatch is submitted with three substitutions, each of which must
match exactly once: the training command (torchrun ... train.py) becomes a stand-in that prints
steps (tests/deploy/slurm_train_standin.py), `wattwatch run` gets `--source replay:TRACE --speed
50` (a simulated trace instead of NVML), and `--listen 0.0.0.0:9401` becomes 127.0.0.1:0 (a
single node has no peers, and a shared test machine may have 9401 taken). The job spec is
job.yaml in the submit directory, where train.sbatch looks by default. sbatch gets --nodes=1
(the cluster has one node; it claims 64 CPUs and 8 GPUs, so the script's other #SBATCH lines
stand).

Scenarios (one fresh cluster each):
  gate-fail     the spec fails steps_equal: the job ends FAILED with the gate's exit code 1
                before the training command starts; the gate's report is in the submit dir
  hang-requeue  the spec passes; the replay hangs: the watcher kills the stand-in, srun returns
                3, the script requeues the job once (SLURM_RESTART_COUNT=1 on the restart), the
                second hang ends the job FAILED with exit code 4; the events file holds both
                hangs and names the trace's culprit GPU
  requeue-exit  the same with RequeueExit=3 in slurm.conf: the script exits 3 and Slurm
                requeues it (no `scontrol requeue`)
  taskprolog    the site-wide gate: TaskProlog=prolog.sh stops the failing job before its batch
                script runs
  healthy       a healthy replay: exit 0, COMPLETED, no requeue, no hang event

Usage: slurm_e2e.py --wattwatch BIN --deploy DIR SCENARIO...
Exit codes: 0 pass, 1 fail, 77 skipped (Slurm or munge not installed; under CI=true that fails
instead). Standard library only; run as root.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import slurm_cluster  # noqa: E402

SKIP = 77
SPEED = 50
HERE = os.path.dirname(os.path.abspath(__file__))
FINAL_STATES = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY",
                "BOOT_FAIL", "DEADLINE", "PREEMPTED"}


class Failure(Exception):
  pass


def log(msg):
  print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def check(cond, msg):
  if not cond:
    raise Failure(msg)


def substitute_once(text, old, new, what):
  n = text.count(old)
  if n != 1:
    raise Failure(f"train.sbatch: expected {what} once ({old!r}), found it {n} times; "
                  "update tests/deploy/slurm_e2e.py with the script")
  return text.replace(old, new)


def write_corpus(path, lengths):
  """A jsonl corpus: one {"input_ids": [...]} per sample."""
  with open(path, "w") as f:
    for i, n in enumerate(lengths):
      f.write(json.dumps({"input_ids": [(i + k) % 1000 for k in range(n)]}) + "\n")


def write_spec(path, sharding, packing):
  with open(path, "w") as f:
    f.write(f"""world_size: 4
micro_batch_size: 1
grad_accum: 2
seq_len: 64
data:
  format: jsonl
  paths: [corpus.jsonl]
sharding: {sharding}
packing: {packing}
packing_scope: rank
drop_last: true
""")


class Job:
  """One submission of train.sbatch into a fresh submit directory."""

  def __init__(self, args, cluster, work, trace=None, hang=True, spec_passes=True):
    self.args, self.cluster, self.work = args, cluster, work
    self.submit = os.path.join(work, "submit")
    os.makedirs(os.path.join(self.submit, "tmp"))
    # The install step of docs/deploy.md, into a temporary prefix.
    self.prolog = os.path.join(work, "prefix", "libexec", "wattwatch", "prolog.sh")
    subprocess.run(["install", "-D", "-m", "0755",
                    os.path.join(args.deploy, "slurm", "prolog.sh"), self.prolog], check=True)
    # The corpus: 64 samples. Strided over 4 ranks without packing every rank gets 16 samples of
    # 32 tokens: 8 steps each. Contiguous with greedy packing, rank 0 packs 16 samples of 4
    # tokens into 1 sequence (0 steps), ranks 1-3 hold 32-token samples: the epoch-end deadlock.
    lengths = [4] * 16 + [32] * 48 if not spec_passes else [32] * 64
    write_corpus(os.path.join(self.submit, "corpus.jsonl"), lengths)
    write_spec(os.path.join(self.submit, "job.yaml"), "strided" if spec_passes else "contiguous",
               "none" if spec_passes else "greedy")
    with open(os.path.join(args.deploy, "slurm", "train.sbatch")) as f:
      script = f.read()
    standin = (f"{sys.executable} {HERE}/slurm_train_standin.py --started-dir {self.submit} "
               + ("--steps 12 --step-s 0.1 --hang" if hang else "--steps 30 --step-s 0.1"))
    torchrun = ('-- torchrun --nnodes "$SLURM_NNODES" --nproc-per-node 8 \\\n'
                '       --rdzv-backend c10d --rdzv-endpoint "$HEAD_NODE:29500" '
                '--rdzv-id "$SLURM_JOB_ID" \\\n'
                "       train.py --config config.yaml'")
    script = substitute_once(script, torchrun, f"-- {standin}'", "the torchrun command")
    if trace:
      run = 'exec "$WATTWATCH" run'
      script = substitute_once(script, f"{run} \\\n",
                               f"{run} --source replay:{trace} --speed {SPEED} \\\n",
                               "the `wattwatch run` line")
    script = substitute_once(script, "--listen 0.0.0.0:9401", "--listen 127.0.0.1:0",
                             "the --listen address")
    with open(os.path.join(self.submit, "train.sbatch"), "w") as f:
      f.write(script)
    self.env = cluster.env(WATTWATCH=args.wattwatch, WATTWATCH_PROLOG=self.prolog,
                           TMPDIR=os.path.join(self.submit, "tmp"))
    self.id = None

  def sbatch(self, *extra):
    argv = ["sbatch", "--parsable", "--nodes=1", *extra, "train.sbatch"]
    shown = ("SLURM_CONF", "WW_SLURM_CLUSTER", "TMPDIR", "WATTWATCH", "WATTWATCH_PROLOG",
             "WATTWATCH_JOB_SPEC")
    assigned = " ".join(f"{k}={self.env[k]}" for k in shown if k in self.env)
    log(f"(cd {self.submit} && {assigned} {' '.join(argv)})")
    r = self.cluster.run(argv, cwd=self.submit, env=self.env)
    self.id = r.stdout.strip().split(";")[0]
    self.submitted = time.monotonic()
    return self.id

  def wait_final(self, timeout_s):
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
      info = self.cluster.job(self.id)
      if info:
        state = (info.get("JobState"), info.get("Restarts"))
        if state != last:
          log(f"job {self.id}: {info.get('JobState')} restarts {info.get('Restarts')} "
              f"exit {info.get('ExitCode')} reason {info.get('Reason')}")
          last = state
        if info.get("JobState") in FINAL_STATES:
          self.elapsed_s = time.monotonic() - self.submitted
          return info
      time.sleep(0.3)
    raise Failure(f"job {self.id} not finished after {timeout_s} s: {self.cluster.job(self.id)}\n"
                  f"{self.output()}\n{self.cluster.logs()}")

  def output(self):
    path = os.path.join(self.submit, f"sft-qwen3-32b-{self.id}.out")
    try:
      with open(path, errors="replace") as f:
        return f.read()
    except OSError:
      return f"(no job output {path})"

  def started(self):
    return sorted(f for f in os.listdir(self.submit) if f.startswith(f"standin-{self.id}-"))

  def events(self):
    d = os.path.join(self.submit, "wattwatch-events")
    path = os.path.join(d, f"{self.id}-{self.cluster.node}.jsonl")
    if not os.path.exists(path):
      return path, []
    with open(path) as f:
      return path, [json.loads(line) for line in f if line.strip()]


def simulate(args, work, scenario):
  out = os.path.join(work, "trace-" + scenario)
  truth = os.path.join(out, "truth.json")
  subprocess.run([args.wattwatch, "simulate", scenario, "--gpus-per-host", "8", "--interval-ms",
                  "1000", "--out-dir", out, "--truth-json", truth], check=True,
                 capture_output=True)
  with open(truth) as f:
    return os.path.join(out, "node0.csv"), json.load(f)


class Cluster:
  """slurm_cluster.SlurmCluster that fails the scenario when stopping it had to kill anything
  (a slurmstepd or a job task outliving the daemons), or when a process of it survives."""

  def __init__(self, work, extra_conf=()):
    # The guardian also removes the scenario's work directory if this script is killed.
    self.cluster = slurm_cluster.SlurmCluster(extra_conf=extra_conf, guard_dirs=[work])

  def __enter__(self):
    self.cluster.start()
    log(f"cluster up: {self.cluster.path('slurm.conf')} (node {self.cluster.node} idle)")
    return self.cluster

  def __exit__(self, exc_type, exc, tb):
    root = self.cluster.root
    self.cluster.stop()
    if exc_type is None:
      check(not self.cluster.leftovers,
            f"processes outlived the cluster's daemons: {self.cluster.leftovers}")
      left = slurm_cluster.processes_with_marker(root)
      check(not left,
            f"processes of the cluster alive: {[slurm_cluster.describe(p) for p in left]}")
      check(not os.path.exists(root), f"{root} not removed")
    return False


def expect_gate_report(job, exit_code):
  report = os.path.join(job.submit, f"wattwatch-gate-{job.id}.txt")
  check(os.path.exists(report), f"no gate report {report}")
  with open(report) as f:
    text = f.read()
  check(re.search(r"^steps_equal\s+FAIL\s", text, re.M), f"report lacks steps_equal FAIL:\n{text}")
  check(f"result: fail (exit {exit_code})" in text, f"report lacks the result line:\n{text}")
  return text


def scenario_gate_fail(args, work):
  with Cluster(work) as cluster:
    trace, _ = simulate(args, work, "healthy")
    job = Job(args, cluster, work, trace=trace, hang=False, spec_passes=False)
    job.sbatch()
    info = job.wait_final(60)
    out = job.output()
    check(info["JobState"] == "FAILED" and info["ExitCode"] == "1:0",
          f"want FAILED 1:0 (the gate's code), got {info['JobState']} {info['ExitCode']}\n{out}")
    check(info["Restarts"] == "0", f"a refused job must not be requeued: {info['Restarts']}")
    check(job.started() == [], f"the training command started: {job.started()}\n{out}")
    path, ev = job.events()
    check(not ev, f"wattwatch run must not have started: {path}")
    expect_gate_report(job, 1)
    check("FAILED a check; training not started" in out and "steps_equal" in out,
          f"the job output must carry the gate's verdict and table:\n{out}")
    log(f"gate-fail: FAILED 1:0 in {job.elapsed_s:.1f} s, stand-in never started, report "
        f"wattwatch-gate-{job.id}.txt")


def scenario_taskprolog(args, work):
  # The site-wide gate: slurmstepd runs prolog.sh before every task. The job spec comes with
  # the submission (sbatch exports the environment), as a site would have users pass it.
  prolog = os.path.join(work, "site", "prolog.sh")
  subprocess.run(["install", "-D", "-m", "0755", os.path.join(args.deploy, "slurm", "prolog.sh"),
                  prolog], check=True)
  with Cluster(work, extra_conf=[f"TaskProlog={prolog}"]) as cluster:
    trace, _ = simulate(args, work, "healthy")
    job = Job(args, cluster, work, trace=trace, hang=False, spec_passes=False)
    job.env["WATTWATCH_JOB_SPEC"] = os.path.join(job.submit, "job.yaml")
    job.sbatch()
    info = job.wait_final(60)
    out = job.output()
    check(info["JobState"] == "FAILED" and info["ExitCode"] == "1:0",
          f"want FAILED 1:0, got {info['JobState']} {info['ExitCode']}\n{out}")
    check("TaskProlog failed status=1" in out, f"slurmstepd must report the TaskProlog:\n{out}")
    check(job.started() == [], f"the training command started: {job.started()}")
    check(not os.path.exists(os.path.join(job.submit, "wattwatch-events")),
          "the batch script must not have run (it creates wattwatch-events/)")
    expect_gate_report(job, 1)
    log(f"taskprolog: FAILED 1:0 in {job.elapsed_s:.1f} s before the batch script ran")


def hang_scenario(args, work, extra_conf, site_requeue):
  with Cluster(work, extra_conf=extra_conf) as cluster:
    trace, truth = simulate(args, work, "hang-exit")
    episodes = truth["hang_episodes"]
    check(len(episodes) == 1, f"trace truth: want one hang episode, got {episodes}")
    culprits = sorted(f"{c['host']}/GPU{c['gpu']}" for c in episodes[0]["culprits"])
    job = Job(args, cluster, work, trace=trace, hang=True, spec_passes=True)
    job.sbatch()
    info = job.wait_final(180)
    out = job.output()
    check(info["JobState"] == "FAILED" and info["ExitCode"] == "4:0",
          f"want FAILED 4:0 after a second hang, got {info['JobState']} {info['ExitCode']}\n{out}")
    check(info["Restarts"] == "1", f"want exactly one requeue, got {info['Restarts']}\n{out}")
    check(job.started() == [f"standin-{job.id}-0.started", f"standin-{job.id}-1.started"],
          f"the stand-in must have started twice (restart 0 and 1): {job.started()}")
    check(out.count("wattwatch killed the job for a hang") == 2, f"two hangs in the output:\n{out}")
    check("hung again after a requeue: not requeued again (exit 4)" in out, out)
    check(out.count("passed (report:") == 1, f"the gate runs once per job, not per restart:\n{out}")
    # Who requeued: slurmctld logs "Requeuing JobId=N" either way; after RequeueExit it follows
    # the batch script's "_job_complete: JobId=N WEXITSTATUS 3", after `scontrol requeue` the
    # script never completes (the requeue ends it).
    with open(cluster.path("log", "slurmctld.log")) as f:
      ctld = [l for l in f if f"JobId={job.id} " in l or l.rstrip().endswith(f"JobId={job.id}")]
    first = next((i for i, l in enumerate(ctld) if f"Requeuing JobId={job.id}" in l), None)
    check(first is not None, "slurmctld never requeued the job:\n" + "".join(ctld))
    exited_3 = any(f"JobId={job.id} WEXITSTATUS 3" in l for l in ctld[:first])
    if site_requeue:
      check("slurm.conf's RequeueExit requeues the job" in out and exited_3,
            "Slurm's RequeueExit, not the script, must requeue:\n" + out + "".join(ctld))
    else:
      check("requeueing the job once" in out and not exited_3,
            "the script's scontrol requeue must requeue:\n" + out + "".join(ctld))
    path, ev = job.events()
    hangs = [e for e in ev if e.get("event") == "hang_confirmed"]
    kills = [e for e in ev if e.get("event") == "kill"]
    check(len(hangs) == 2, f"{path}: want 2 hang_confirmed, got {len(hangs)}")
    check(len(kills) >= 2, f"{path}: want a kill per hang, got {len(kills)}")
    for h in hangs:
      check(h.get("job_id") == job.id, f"hang event job_id {h.get('job_id')} != {job.id}")
      check(sorted(h.get("culprits", [])) == culprits,
            f"hang event culprits {h.get('culprits')} != the trace's {culprits}")
    log(f"{'requeue-exit' if site_requeue else 'hang-requeue'}: FAILED 4:0 after 1 requeue in "
        f"{job.elapsed_s:.1f} s; both hangs name {culprits}")


def scenario_hang_requeue(args, work):
  hang_scenario(args, work, [], site_requeue=False)


def scenario_requeue_exit(args, work):
  hang_scenario(args, work, ["RequeueExit=3"], site_requeue=True)


def scenario_healthy(args, work):
  with Cluster(work) as cluster:
    trace, _ = simulate(args, work, "healthy")
    job = Job(args, cluster, work, trace=trace, hang=False, spec_passes=True)
    job.sbatch()
    info = job.wait_final(60)
    out = job.output()
    check(info["JobState"] == "COMPLETED" and info["ExitCode"] == "0:0",
          f"want COMPLETED 0:0, got {info['JobState']} {info['ExitCode']}\n{out}")
    check(info["Restarts"] == "0", f"no requeue: {info['Restarts']}")
    check("training finished" in out and "training done" in out, out)
    check(job.started() == [f"standin-{job.id}-0.started"], f"{job.started()}")
    path, ev = job.events()
    names = [e.get("event") for e in ev]
    check("watch_started" in names, f"{path}: the watcher did not run: {names}")
    check("hang_confirmed" not in names and "kill" not in names, f"{path}: {names}")
    exited = [e for e in ev if e.get("event") == "child_exited"]
    check(exited, f"{path}: no child_exited event: {names}")
    log(f"healthy: COMPLETED 0:0 in {job.elapsed_s:.1f} s, no hang, no requeue")


SCENARIOS = {
    "gate-fail": scenario_gate_fail,
    "taskprolog": scenario_taskprolog,
    "hang-requeue": scenario_hang_requeue,
    "requeue-exit": scenario_requeue_exit,
    "healthy": scenario_healthy,
}


def main():
  p = argparse.ArgumentParser()
  p.add_argument("--wattwatch", required=True)
  p.add_argument("--deploy", required=True)
  p.add_argument("--keep", action="store_true", help="keep the work directory")
  p.add_argument("scenarios", nargs="+", choices=sorted(SCENARIOS))
  args = p.parse_args()
  args.wattwatch = os.path.abspath(args.wattwatch)
  args.deploy = os.path.abspath(args.deploy)
  ci = os.environ.get("CI") == "true"
  missing = slurm_cluster.missing_binaries()
  if missing:
    msg = f"Slurm not installed (missing {' '.join(missing)}): apt-get install slurm-wlm munge"
    print(("FAIL in CI: " if ci else "SKIP: ") + msg, flush=True)
    return 1 if ci else SKIP
  if os.geteuid() != 0:
    print(("FAIL in CI: " if ci else "SKIP: ") + "must run as root", flush=True)
    return 1 if ci else SKIP
  t0 = time.monotonic()
  for name in args.scenarios:
    t = time.monotonic()
    work = tempfile.mkdtemp(prefix=f"wwslurm-e2e-{name}-")
    try:
      SCENARIOS[name](args, work)
    except (Failure, slurm_cluster.ClusterError, subprocess.CalledProcessError) as e:
      print(f"FAIL: {name}: {e}", flush=True)
      return 1
    finally:
      if args.keep:
        log(f"kept {work}")
      else:
        shutil.rmtree(work, ignore_errors=True)
    log(f"{name}: passed in {time.monotonic() - t:.1f} s")
  log(f"all passed in {time.monotonic() - t0:.1f} s")
  return 0


if __name__ == "__main__":
  sys.exit(main())
