#!/usr/bin/env python3
"""The install rules (cmake/install.cmake), through `cmake --install` into a DESTDIR.

  install_test.py BUILD_DIR SOURCE_DIR

Checks, on what a package would ship:
- the installed tree holds exactly the expected files (binary, units, defaults, rules,
  dashboards, Slurm prolog, man pages, completion, docs); nothing else;
- `wattwatch --version` of the installed binary names the project's version (CMakeLists.txt
  project()), a commit and the build type;
- every command `wattwatch --help` lists has a man page that `man -l` renders without a warning;
- the bash completion parses, offers every long flag each command's --help lists (a flag in the
  CLI but not in the completion fails here), and completes a prefix when sourced;
- the installed units name the installed binary and pass `systemd-analyze verify`; the installed
  rules pass `promtool check rules` (each skipped with a note when its tool is missing).
Exit: 0 pass, 1 fail, 77 skip (no help2man: the build wrote no man pages).
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_deploy  # noqa: E402  (the deploy checks' systemd verify)


def run(args, **kw):
  return subprocess.run(args, capture_output=True, text=True, **kw)


def main():
  build, source = sys.argv[1], sys.argv[2]
  if not os.path.exists(os.path.join(build, "generated", "man", "wattwatch.1.gz")):
    print("SKIP: no man pages in the build (help2man missing)")
    return 77
  errors = []
  with tempfile.TemporaryDirectory() as dest:
    res = run(["cmake", "--install", build, "--prefix", "/usr"], env={**os.environ, "DESTDIR": dest})
    if res.returncode != 0:
      print(res.stdout, res.stderr)
      return 1
    files = set()
    for root, _, names in os.walk(dest):
      for n in names:
        files.add(os.path.relpath(os.path.join(root, n), dest))
    ww = os.path.join(dest, "usr/bin/wattwatch")
    commands = check_deploy.help_commands(ww)
    if len(commands) < 10:
      errors.append(f"wattwatch --help lists {len(commands)} commands: {commands}")
    docs = {f"usr/share/doc/wattwatch/docs/{os.path.relpath(os.path.join(r, n), os.path.join(source, 'docs'))}"
            for r, _, ns in os.walk(os.path.join(source, "docs")) for n in ns}
    want = {
        "usr/bin/wattwatch",
        "usr/lib/systemd/system/wattwatch.service",
        "usr/lib/systemd/system/wattwatch-fleet.service",
        "etc/default/wattwatch",
        "etc/default/wattwatch-fleet",
        "usr/share/wattwatch/prometheus/wattwatch-rules.yml",
        "usr/share/wattwatch/prometheus/wattwatch-fleet-rules.yml",
        "usr/share/wattwatch/prometheus/prometheus.yml",
        "usr/share/wattwatch/grafana/wattwatch-dashboard.json",
        "usr/share/wattwatch/grafana/wattwatch-fleet-dashboard.json",
        "usr/share/wattwatch/kubernetes/daemonset.yaml",
        "usr/share/wattwatch/kubernetes/fleet-deployment.yaml",
        "usr/share/wattwatch/slurm/prolog.sh",
        "usr/share/wattwatch/slurm/train.sbatch",
        "usr/share/bash-completion/completions/wattwatch",
        "usr/share/doc/wattwatch/README.md",
        "usr/share/man/man1/wattwatch.1.gz",
        "usr/share/doc/wattwatch/copyright",
        "usr/share/doc/wattwatch/changelog.gz",
    } | {f"usr/share/man/man1/wattwatch-{c}.1.gz" for c in commands} | docs
    if files - want:
      errors.append(f"installed but not expected: {sorted(files - want)}")
    if want - files:
      errors.append(f"expected but not installed: {sorted(want - files)}")
    if not os.access(ww, os.X_OK) or not os.access(os.path.join(dest, "usr/share/wattwatch/slurm/prolog.sh"), os.X_OK):
      errors.append("the binary or the Slurm prolog is not executable")

    version = re.search(r"project\(wattwatch VERSION (\S+)", open(os.path.join(source, "CMakeLists.txt")).read()).group(1)
    out = run([ww, "--version"]).stdout.strip()
    if not re.fullmatch(rf"wattwatch {re.escape(version)} \(commit ([0-9a-f]{{7,}}(-dirty)?|unknown), \S+ build\)", out):
      errors.append(f"--version: {out!r} (want version {version}, a commit and the build type)")

    man = shutil.which("man")
    for c in commands + [None]:
      page = os.path.join(dest, "usr/share/man/man1", f"wattwatch-{c}.1.gz" if c else "wattwatch.1.gz")
      if not man or not os.path.exists(page):
        continue
      res = run([man, "--warnings", "-l", page], env={**os.environ, "MANWIDTH": "100", "MAN_KEEP_FORMATTING": "0"})
      # "cannot adjust line": a word longer than the line (a CSV header, a URL), cosmetic.
      warnings = [w for w in res.stderr.splitlines() if w.strip() and "cannot adjust line" not in w]
      rendered = re.sub(r".\x08", "", res.stdout)  # overstrike bold/underline
      if res.returncode != 0 or warnings:
        errors.append(f"man -l {os.path.basename(page)}: rc {res.returncode} {warnings[:3]}")
      elif c and not re.search(rf"wattwatch\s+{c}\b", rendered):
        errors.append(f"{os.path.basename(page)} does not show 'wattwatch {c}'")

    completion = os.path.join(dest, "usr/share/bash-completion/completions/wattwatch")
    text = open(completion).read()
    if run(["bash", "-n", completion]).returncode != 0:
      errors.append("the completion script does not parse")
    for c in commands:
      m = re.search(rf'^    {re.escape(c)}\) opts="([^"]*)"', text, re.M)
      offered = set(m.group(1).split()) if m else set()
      helped = set(re.findall(r"^\s+(?:-\w, ?)?(--[a-z0-9][a-z0-9-]*)", run([ww, c, "--help"]).stdout, re.M))
      if helped - offered:
        errors.append(f"completion of '{c}' lacks {sorted(helped - offered)}")
      if c not in text.split('compgen -W "')[1].split('"')[0].split():
        errors.append(f"completion does not offer the command '{c}'")
    res = run(["bash", "-c", f'source "{completion}"; COMP_WORDS=(wattwatch triage --json-o); COMP_CWORD=2; '
               '_wattwatch; printf "%s\\n" "${COMPREPLY[@]}"'])
    if res.stdout.split() != ["--json-out"]:
      errors.append(f"completing 'wattwatch triage --json-o' gave {res.stdout.split()} {res.stderr}")

    analyze = shutil.which("systemd-analyze")
    for unit in ("wattwatch.service", "wattwatch-fleet.service"):
      path = os.path.join(dest, "usr/lib/systemd/system", unit)
      body = open(path).read()
      if not re.search(r"^ExecStart=/usr/bin/wattwatch ", body, re.M) or "/usr/local/bin" in body:
        errors.append(f"{unit}: ExecStart does not name /usr/bin/wattwatch")
      if not analyze:
        continue
      # The installed path lives under DESTDIR here: verify runs on a copy naming that binary.
      with tempfile.TemporaryDirectory() as tmp:
        try:
          check_deploy.systemd_verify(analyze, path, ww, tmp)
        except check_deploy.Failure as e:
          errors.append(str(e))
    promtool = shutil.which("promtool")
    if promtool:
      for rules in ("wattwatch-rules.yml", "wattwatch-fleet-rules.yml"):
        res = run([promtool, "check", "rules", os.path.join(dest, "usr/share/wattwatch/prometheus", rules)])
        if res.returncode != 0:
          errors.append(f"promtool check rules {rules}: {res.stdout}{res.stderr}")
  if errors:
    print("\n".join(errors))
    return 1
  print(f"installed {len(files)} files; {len(commands)} commands with man pages and completion")
  return 0


if __name__ == "__main__":
  sys.exit(main())
