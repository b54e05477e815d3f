#!/usr/bin/env python3
"""A real one-node Slurm cluster on this machine, for tests: munged, slurmctld and slurmd.

Everything lives in one temporary directory: a fresh MUNGE key and munged's socket, log, pid and
seed files; slurm.conf, gres.conf, state and spool directories and the daemons' logs. The
daemons talk over 127.0.0.1 on two free ports (slurmctld itself listens on every address: Slurm
22.05 has no option to bind it to one). No cgroups: proctrack/linuxproc, task/none.

Client commands (sbatch, srun, squeue, scontrol, sinfo) reach this cluster through `env()`:
SLURM_CONF names the temporary slurm.conf, whose AuthInfo names the temporary munged socket (the
auth/munge and cred/munge plugins read the socket from there; libmunge has no environment
variable for it).

Cleanup, whatever happens: every process the cluster starts carries WW_SLURM_CLUSTER=<its dir>
in its environment (the daemons directly; slurmstepd, batch scripts and job tasks inherit it from
slurmd and from the submitting environment). stop() cancels the jobs, stops the daemons' process
groups (SIGTERM, then SIGKILL), kills whatever process still carries the marker, and removes the
directory; it runs from the context manager, atexit and on SIGTERM/SIGINT/SIGHUP. A guardian
process (this file with --guard) does the same marker sweep if the test itself is SIGKILLed
(ctest's timeout).

  with SlurmCluster() as cluster:            # waits until sinfo shows the node idle
      subprocess.run(["sbatch", ...], env=cluster.env())

Standard library only. Run as root (SlurmUser=root, jobs run as the submitting user).
Usage as a script: slurm_cluster.py [--conf LINE]... [--hold] [--keep]: starts a cluster,
prints the environment to use it, and (with --hold) stops it on Ctrl-C.
"""

import atexit
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

MARKER = "WW_SLURM_CLUSTER"
# The binaries the cluster needs: Debian packages slurm-wlm (slurmctld, slurmd, slurm-client)
# and munge.
DAEMONS = ("munged", "slurmctld", "slurmd")
CLIENTS = ("sbatch", "srun", "squeue", "scontrol", "sinfo", "scancel")

_libc = ctypes.CDLL(None, use_errno=True)


class ClusterError(Exception):
  pass


def log(msg):
  print(f"[{time.strftime('%H:%M:%S')}] slurm_cluster: {msg}", flush=True)


def missing_binaries():
  return [b for b in DAEMONS + CLIENTS if shutil.which(b, path=_path()) is None]


def _path():
  # munged, slurmctld and slurmd live in /usr/sbin, which a non-login PATH may lack.
  path = os.environ.get("PATH", "/usr/bin:/bin")
  for extra in ("/usr/sbin", "/sbin"):
    if extra not in path.split(":"):
      path += ":" + extra
  return path


def free_port():
  with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]


def processes_with_marker(value):
  """PIDs of live processes whose environment has MARKER=value (this process excluded)."""
  needle = f"{MARKER}={value}".encode()
  found = []
  for entry in os.listdir("/proc"):
    if not entry.isdigit() or int(entry) == os.getpid():
      continue
    try:
      with open(f"/proc/{entry}/environ", "rb") as f:
        env = f.read().split(b"\0")
      with open(f"/proc/{entry}/stat", "rb") as f:
        state = f.read().rsplit(b")", 1)[1].split()[0]
    except OSError:
      continue  # gone, or not ours to read
    if needle in env and state != b"Z":
      found.append(int(entry))
  return found


def describe(pid):
  try:
    with open(f"/proc/{pid}/cmdline", "rb") as f:
      cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    return f"{pid} {cmd}"
  except OSError:
    return f"{pid} (gone)"


def sweep(value, grace_s=3.0):
  """SIGTERM, then SIGKILL, every process carrying the marker. Returns those that were found."""
  found = processes_with_marker(value)
  described = [describe(p) for p in found]
  for sig in (signal.SIGTERM, signal.SIGKILL):
    for pid in processes_with_marker(value):
      try:
        os.kill(pid, sig)
      except ProcessLookupError:
        pass
    deadline = time.monotonic() + grace_s
    while processes_with_marker(value) and time.monotonic() < deadline:
      time.sleep(0.1)
  return described


def guard(parent_pid, value, dirs):
  """The guardian: waits until the test process is gone, then sweeps and removes the dirs."""
  while True:
    try:
      os.kill(parent_pid, 0)
    except ProcessLookupError:
      break
    time.sleep(0.5)
  left = sweep(value)
  if left:
    print(f"slurm_cluster guardian: killed what the test left: {left}", file=sys.stderr)
  for d in dirs:
    shutil.rmtree(d, ignore_errors=True)


class SlurmCluster:
  """One controller and one compute node (this machine's short hostname) on 127.0.0.1.

  guard_dirs: more directories for the guardian to remove if the test is killed.
  extra_conf: more slurm.conf lines (e.g. "RequeueExit=3"). cred_expire_s: Slurm's credential
  lifetime, which is also how long a requeued job waits before it starts again (default 120 s;
  tests use 5). node_cpus/node_gpus: what the node claims to have (SlurmdParameters=
  config_overrides lets it claim more than the machine has; the GPUs are count-only GRES).
  """

  def __init__(self, extra_conf=(), cred_expire_s=5, node_cpus=64, node_gpus=8, keep=False,
               guard_dirs=()):
    self.extra_conf = list(extra_conf)
    self.cred_expire_s = cred_expire_s
    self.node_cpus = node_cpus
    self.node_gpus = node_gpus
    self.keep = keep
    self.guard_dirs = list(guard_dirs)  # also removed by the guardian if the test is killed
    self.root = None
    self.node = socket.gethostname().split(".")[0]
    self._daemons = {}  # name -> Popen
    self._guardian = None
    self._stopped = False
    self._old_handlers = {}
    self.leftovers = []  # processes stop() had to kill after the daemons were gone

  # -- lifecycle ---------------------------------------------------------------------------------

  def __enter__(self):
    self.start()
    return self

  def __exit__(self, *exc):
    self.stop()
    return False

  def start(self):
    missing = missing_binaries()
    if missing:
      raise ClusterError(f"missing {' '.join(missing)} (Debian packages slurm-wlm and munge; "
                         "scripts/install-deps.sh)")
    if os.geteuid() != 0:
      raise ClusterError("must run as root (slurmd starts jobs as their users)")
    # Short path: munged's socket path must fit in sockaddr_un (108 bytes).
    self.root = tempfile.mkdtemp(prefix="wwslurm-", dir="/tmp")
    os.chmod(self.root, 0o700)
    atexit.register(self.stop)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
      self._old_handlers[sig] = signal.signal(sig, self._on_signal)
    self._guardian = subprocess.Popen(
        [sys.executable, os.path.abspath(__file__), "--guard",
         str(os.getpid()), self.root, *self.guard_dirs],
        start_new_session=True, stdin=subprocess.DEVNULL)
    try:
      self._write_config()
      self._start_munged()
      self._start_slurm()
      self.wait_idle()
    except BaseException:
      self.stop()
      raise

  def _on_signal(self, signum, frame):
    log(f"signal {signum}: stopping the cluster")
    self.stop()
    raise SystemExit(128 + signum)

  def path(self, *parts):
    return os.path.join(self.root, *parts)

  def env(self, **extra):
    """The environment for client commands and the jobs they submit."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    env.update(PATH=_path(), SLURM_CONF=self.path("slurm.conf"), **{MARKER: self.root})
    env.update(extra)
    return env

  def _write_config(self):
    for d in ("munge", "state", "spool", "log", "run"):
      os.makedirs(self.path(d), mode=0o700)
    self.ctld_port, self.slurmd_port = free_port(), free_port()
    while self.slurmd_port == self.ctld_port:
      self.slurmd_port = free_port()
    # A fresh MUNGE key: 1024 random bytes, readable by its owner only (munged checks).
    key = self.path("munge", "munge.key")
    with open(os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o400), "wb") as f:
      f.write(os.urandom(1024))
    conf = [
        f"ClusterName=ww{os.getpid()}",
        f"SlurmctldHost={self.node}(127.0.0.1)",
        f"SlurmctldPort={self.ctld_port}",
        f"SlurmdPort={self.slurmd_port}",
        "SlurmUser=root",
        "SlurmdUser=root",
        "AuthType=auth/munge",
        "CredType=cred/munge",
        f"AuthInfo=socket={self.path('munge', 'munge.socket')},cred_expire={self.cred_expire_s}",
        # Bind slurmd and the clients to what the node name resolves to, not every address.
        "CommunicationParameters=NoInAddrAny",
        f"StateSaveLocation={self.path('state')}",
        f"SlurmdSpoolDir={self.path('spool')}",
        f"SlurmctldPidFile={self.path('run', 'slurmctld.pid')}",
        f"SlurmdPidFile={self.path('run', 'slurmd.pid')}",
        f"SlurmctldLogFile={self.path('log', 'slurmctld.log')}",
        f"SlurmdLogFile={self.path('log', 'slurmd.log')}",
        "SlurmctldDebug=info",
        "SlurmdDebug=info",
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        "JobCompType=jobcomp/none",
        "SwitchType=switch/none",
        "MpiDefault=none",
        "SchedulerType=sched/builtin",
        # The main scheduling loop, which starts requeued jobs once their BeginTime (now +
        # cred_expire) passes, runs every 60 s by default; every 2 s here.
        "SchedulerParameters=sched_interval=2",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core",
        "GresTypes=gpu",
        "SlurmdParameters=config_overrides",
        "ReturnToService=2",
        "KillWait=5",
        "MinJobAge=600",
        "InactiveLimit=0",
        "SlurmdTimeout=120",
        "MessageTimeout=20",
        f"NodeName={self.node} NodeAddr=127.0.0.1 CPUs={self.node_cpus} "
        f"Gres=gpu:{self.node_gpus} State=UNKNOWN",
        "PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP",
    ] + self.extra_conf
    with open(self.path("slurm.conf"), "w") as f:
      f.write("# written by tests/deploy/slurm_cluster.py\n" + "\n".join(conf) + "\n")
    # Slurm 22.05 drops GPUs without File= from the node, so each GPU gets a stand-in device
    # file (a plain file: task/none binds nothing, and nothing opens them).
    os.makedirs(self.path("dev"))
    for i in range(self.node_gpus):
      open(self.path("dev", f"nvidia{i}"), "w").close()
    with open(self.path("gres.conf"), "w") as f:
      files = f"{self.path('dev')}/nvidia[0-{self.node_gpus - 1}]"
      f.write(f"NodeName={self.node} Name=gpu File={files}\n")

  def _spawn(self, name, argv):
    logf = open(self.path("log", f"{name}.stdio"), "wb")
    env = self.env()
    proc = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=logf,
                            stderr=subprocess.STDOUT, start_new_session=True,
                            preexec_fn=lambda: _libc.prctl(1, signal.SIGKILL, 0, 0, 0))
    logf.close()
    self._daemons[name] = proc
    return proc

  def _start_munged(self):
    m = lambda f: self.path("munge", f)
    self._spawn("munged", [
        shutil.which("munged", path=_path()), "--foreground", "--force",
        f"--socket={m('munge.socket')}", f"--key-file={m('munge.key')}",
        f"--log-file={m('munged.log')}", f"--pid-file={m('munged.pid')}",
        f"--seed-file={m('munged.seed')}"
    ])
    deadline = time.monotonic() + 20
    while not os.path.exists(m("munge.socket")):
      self._check_alive("munged", m("munged.log"))
      if time.monotonic() > deadline:
        raise ClusterError("munged did not create its socket in 20 s:\n" +
                           self._tail(m("munged.log")))
      time.sleep(0.1)

  def _start_slurm(self):
    conf = self.path("slurm.conf")
    # -i: ignore state files (there are none); -D: foreground, so the process group is ours.
    self._spawn("slurmctld", [shutil.which("slurmctld", path=_path()), "-D", "-i", "-f", conf])
    self._spawn("slurmd", [shutil.which("slurmd", path=_path()), "-D", "-f", conf])

  def _check_alive(self, name, logfile):
    proc = self._daemons[name]
    if proc.poll() is not None:
      raise ClusterError(f"{name} exited {proc.returncode}:\n{self._tail(logfile)}\n"
                         f"{self._tail(self.path('log', name + '.stdio'))}")

  def _tail(self, path, lines=30):
    try:
      with open(path, errors="replace") as f:
        return f"--- {path}\n" + "".join(f.readlines()[-lines:])
    except OSError:
      return f"--- {path}: absent"

  def logs(self):
    return "\n".join(
        self._tail(self.path("log", f))
        for f in ("slurmctld.log", "slurmd.log", "slurmctld.stdio", "slurmd.stdio"))

  def run(self, argv, check=True, timeout=30, **kwargs):
    """A client command against this cluster; returns CompletedProcess (text)."""
    r = subprocess.run(argv, env=kwargs.pop("env", self.env()), capture_output=True, text=True,
                       timeout=timeout, **kwargs)
    if check and r.returncode != 0:
      raise ClusterError(f"{' '.join(argv)} exited {r.returncode}: {r.stderr.strip()}")
    return r

  def wait_idle(self, timeout_s=60):
    deadline = time.monotonic() + timeout_s
    last = ""
    while time.monotonic() < deadline:
      self._check_alive("slurmctld", self.path("log", "slurmctld.log"))
      self._check_alive("slurmd", self.path("log", "slurmd.log"))
      r = self.run(["sinfo", "-h", "-N", "-o", "%N %t"], check=False, timeout=15)
      last = (r.stdout + r.stderr).strip()
      if r.returncode == 0 and last.split() == [self.node, "idle"]:
        return
      time.sleep(0.3)
    raise ClusterError(f"node {self.node} not idle after {timeout_s} s (sinfo: {last!r})\n" +
                       self.logs())

  def job(self, job_id):
    """`scontrol show job -o` as a dict (JobState, ExitCode, Restarts, ...), or None."""
    r = self.run(["scontrol", "show", "job", "-o", str(job_id)], check=False)
    if r.returncode != 0:
      return None
    fields = {}
    for token in r.stdout.split():
      if "=" in token:
        k, v = token.split("=", 1)
        fields.setdefault(k, v)
    return fields

  def stop(self):
    if self._stopped or self.root is None:
      return
    self._stopped = True
    try:
      if "slurmctld" in self._daemons and self._daemons["slurmctld"].poll() is None:
        self.run(["scancel", "--full", "--quiet", "-u", "root"], check=False, timeout=15)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
          r = self.run(["squeue", "-h", "-o", "%i"], check=False, timeout=10)
          if r.returncode != 0 or not r.stdout.strip():
            break
          time.sleep(0.3)
      for name in ("slurmd", "slurmctld", "munged"):
        proc = self._daemons.get(name)
        if proc is None:
          continue
        for sig, wait_s in ((signal.SIGTERM, 10), (signal.SIGKILL, 5)):
          if proc.poll() is not None:
            break
          try:
            os.killpg(proc.pid, sig)
          except ProcessLookupError:
            break
          try:
            proc.wait(wait_s)
          except subprocess.TimeoutExpired:
            pass
      # Anything else of ours (a slurmstepd, a job's task) is a leak: kill it and say so.
      self.leftovers = sweep(self.root)
      if self.leftovers:
        log(f"killed processes left after the daemons stopped: {self.leftovers}")
    finally:
      if self._guardian is not None:
        self._guardian.kill()
        self._guardian.wait()
      for sig, handler in self._old_handlers.items():
        signal.signal(sig, handler)
      if self.keep:
        log(f"kept {self.root}")
      else:
        shutil.rmtree(self.root, ignore_errors=True)


def main(argv):
  if len(argv) >= 4 and argv[1] == "--guard":  # --guard PID CLUSTER_DIR [DIR...]
    guard(int(argv[2]), argv[3], argv[3:])
    return 0
  extra = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--conf"]
  with SlurmCluster(extra_conf=extra, keep="--keep" in argv) as c:
    print(f"export SLURM_CONF={c.path('slurm.conf')} {MARKER}={c.root}", flush=True)
    if "--hold" in argv:
      try:
        while True:
          time.sleep(1)
      except KeyboardInterrupt:
        pass
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv))
