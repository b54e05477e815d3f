#!/usr/bin/env python3
"""The portable tarball (make dist, scripts/make-dist.sh), unpacked where a user would unpack it.

  dist_test.py DIST_DIR SOURCE_DIR SHARED_DIR BUILD_BINARY

Checks:
- the tarball holds the binary, the units, the site defaults, the rules, the dashboards, the
  Slurm prolog, a man page per command, the completion and PORTABLE.txt, under one `wattwatch/`;
- `ldd` of its binary lists only glibc's libraries and the vDSO (asserted name by name), and the
  newest GLIBC_ symbol version it imports is the one PORTABLE.txt states;
- unpacked into a temporary folder outside the source tree and run from there with
  LD_LIBRARY_PATH empty, it prints the build tree's --help, and `triage --json` on each real
  trace of SHARED_DIR/traces/real gives the build tree binary's JSON and exit code;
- its NVML stays dlopen'ed: `devices` without a driver is the normal "no NVML" answer;
- its units name /opt/wattwatch/bin/wattwatch and pass `systemd-analyze verify` (where present).
Exit: 0 pass, 1 fail, 77 skip (no tarball: `make dist` not run; WATTWATCH_REQUIRE_DIST=1 makes
that a failure, as `make test` sets it).
"""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_deploy  # noqa: E402

GLIBC = re.compile(r"^(linux-vdso|linux-gate|libc|libm|libdl|libpthread|librt|libresolv|libutil)"
                   r"\.so(\.\d+)*$|^ld-linux[-a-z0-9_]*\.so(\.\d+)*$")


def run(args, **kw):
  return subprocess.run(args, capture_output=True, text=True, timeout=300, **kw)


def version_key(v):
  return tuple(int(x) for x in v.split("."))


def main():
  dist, source, shared, build_bin = sys.argv[1:5]
  tarballs = sorted(glob.glob(os.path.join(dist, "wattwatch-*-linux-*.tar.gz")))
  if not tarballs:
    msg = f"no tarball in {dist}: run `make dist`"
    if os.environ.get("WATTWATCH_REQUIRE_DIST") == "1":
      print("FAIL:", msg)
      return 1
    print("SKIP:", msg)
    return 77
  errors = []
  with tempfile.TemporaryDirectory(prefix="ww-dist-") as tmp:
    if os.path.realpath(tmp).startswith(os.path.realpath(source) + os.sep):
      print(f"FAIL: the temporary folder {tmp} is inside the source tree")
      return 1
    with tarfile.open(tarballs[-1]) as tar:
      names = tar.getnames()
      bad = [n for n in names if n != "wattwatch" and not n.startswith("wattwatch/")]
      if bad:
        errors.append(f"entries outside wattwatch/: {bad[:5]}")
      # (Every entry was checked to be under wattwatch/ above; the "data" filter, which also
      # refuses links out and device files, is there from Python 3.11.4 and in Debian's backports.)
      if hasattr(tarfile, "data_filter"):
        tar.extractall(tmp, filter="data")
      else:
        tar.extractall(tmp)  # noqa: S202
    root = os.path.join(tmp, "wattwatch")
    ww = os.path.join(root, "bin", "wattwatch")
    env = {**os.environ, "LD_LIBRARY_PATH": ""}
    env.pop("LD_PRELOAD", None)

    # What it ships.
    for rel in ["bin/wattwatch", "PORTABLE.txt", "lib/systemd/system/wattwatch.service",
                "lib/systemd/system/wattwatch-fleet.service", "etc/default/wattwatch",
                "etc/default/wattwatch-fleet", "share/wattwatch/prometheus/wattwatch-rules.yml",
                "share/wattwatch/grafana/wattwatch-dashboard.json",
                "share/wattwatch/slurm/prolog.sh", "share/bash-completion/completions/wattwatch",
                "share/man/man1/wattwatch.1.gz", "share/man/man1/wattwatch-triage.1.gz"]:
      if not os.path.exists(os.path.join(root, rel)):
        errors.append(f"the tarball has no {rel}")
    commands = check_deploy.help_commands(ww, cwd=tmp, env=env)
    if len(commands) < 10:
      errors.append(f"the tarball's wattwatch --help lists {len(commands)} commands")
    for c in commands:
      if not os.path.exists(os.path.join(root, f"share/man/man1/wattwatch-{c}.1.gz")):
        errors.append(f"no man page for {c}")

    # Only glibc.
    ldd = run(["ldd", ww], env=env)
    libs = []
    for line in ldd.stdout.splitlines():
      name = line.split()[0] if line.split() else ""
      libs.append(os.path.basename(name))
    if ldd.returncode != 0 or not libs:
      errors.append(f"ldd failed: {ldd.stdout}{ldd.stderr}")
    outside = [lib for lib in libs if not GLIBC.match(lib)]
    if outside:
      errors.append(f"ldd lists libraries outside glibc: {outside}")
    if "libc.so.6" not in libs:
      errors.append(f"ldd does not list libc.so.6 (a fully static binary cannot dlopen NVML): {libs}")
    syms = run(["objdump", "-T", ww]).stdout
    needed = sorted(set(re.findall(r"GLIBC_(\d+(?:\.\d+)+)", syms)), key=version_key)
    text = open(os.path.join(root, "PORTABLE.txt")).read()
    if not needed or f"runs on glibc {needed[-1]} or newer" not in text:
      errors.append(f"PORTABLE.txt does not state glibc {needed[-1] if needed else '?'}: {text[:300]}")

    # Same behaviour as the build tree's binary, from outside the source tree.
    for args in (["--help"], ["triage", "--help"]):
      a = run([ww] + args, cwd=tmp, env=env)
      b = run([build_bin] + args, cwd=tmp)
      if (a.returncode, a.stdout) != (b.returncode, b.stdout):
        errors.append(f"`{' '.join(args)}` differs from the build tree's")
    traces = sorted(glob.glob(os.path.join(shared, "traces", "real", "*.csv")))
    if not traces:
      errors.append(f"no real traces in {shared}/traces/real")
    for trace in traces:
      outs = []
      for binary, e in ((ww, env), (build_bin, None)):
        r = run([binary, "triage", trace, "--json"], cwd=tmp, env=e)
        try:
          doc = json.loads(r.stdout)
        except json.JSONDecodeError:
          doc = None
          errors.append(f"{os.path.basename(binary)} triage {trace}: no JSON: {r.stderr[-300:]}")
        outs.append((r.returncode, doc))
      if outs[0] != outs[1]:
        errors.append(f"triage {os.path.basename(trace)}: the tarball's verdict differs "
                      f"(exit {outs[0][0]} vs {outs[1][0]})")
      else:
        print(f"ok: {os.path.basename(trace)}: exit {outs[0][0]}, same JSON")

    # NVML is still loaded at run time: without it, the normal answer.
    d = run([ww, "devices", "--nvml-lib", os.path.join(tmp, "no-such-libnvidia-ml.so.1")],
            cwd=tmp, env=env)
    if d.returncode == 0 or "NVML" not in (d.stdout + d.stderr) or d.returncode < 0:
      errors.append(f"devices without NVML: exit {d.returncode}: {d.stdout}{d.stderr}")

    # No SentencePiece in the portable build: a tokenizer.model is refused with what to use.
    model = os.path.join(tmp, "tokenizer.model")
    with open(model, "wb") as f:
      f.write(b"\x0a\x05hello")
    corpus = os.path.join(tmp, "c.jsonl")
    with open(corpus, "w") as f:
      f.write('{"text": "hi"}\n')
    t = run([ww, "tokenize", "--tokenizer", model, corpus], cwd=tmp, env=env)
    if t.returncode != 2 or "portable build" not in t.stderr or "tokenizer.json" not in t.stderr:
      errors.append(f"tokenize of a tokenizer.model: exit {t.returncode}: {t.stderr[-300:]}")

    # The units, as installed under /opt/wattwatch.
    for unit in ("wattwatch.service", "wattwatch-fleet.service"):
      path = os.path.join(root, "lib/systemd/system", unit)
      body = open(path).read() if os.path.exists(path) else ""
      if "ExecStart=/opt/wattwatch/bin/wattwatch" not in body:
        errors.append(f"{unit} does not run /opt/wattwatch/bin/wattwatch")
      if "EnvironmentFile=-/opt/wattwatch/etc/default/" not in body:
        errors.append(f"{unit} does not read /opt/wattwatch/etc/default/")
      analyze = shutil.which("systemd-analyze")
      if analyze and body:
        try:
          check_deploy.systemd_verify(analyze, path, ww, tmp)
        except check_deploy.Failure as e:
          errors.append(f"{unit}: {e}")

  for e in errors:
    print("FAIL:", e)
  if errors:
    return 1
  print(f"ok: {os.path.basename(tarballs[-1])}: {len(traces)} real traces, "
        f"{len(commands)} man pages, glibc {needed[-1]} or newer")
  return 0


if __name__ == "__main__":
  sys.exit(main())
