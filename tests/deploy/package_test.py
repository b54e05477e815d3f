#!/usr/bin/env python3
"""The .deb (cmake/package.cmake), installed on this machine and purged again.

  package_test.py BUILD_DIR

Builds the package with cpack from BUILD_DIR, runs lintian on it (no error allowed), then as root
(or through passwordless sudo): `dpkg -i`; the installed `wattwatch --version`, `man
wattwatch-triage`, `systemd-analyze verify` of the installed units, `promtool check rules` of the
installed rules; the service users and state folders made and no service enabled; `dpkg -r`
leaves only the conffiles, `dpkg -P` leaves the machine's files, users and groups as they were
before (listed and compared). The package is purged whatever happens.
Exit: 0 pass, 1 fail, 77 skip (not root and no sudo, no dpkg/cpack, or wattwatch already
installed here: the test never touches an install it did not make).
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_deploy  # noqa: E402  (the deploy checks' systemd verify)

# What dpkg, apt and man-db keep about packages changes with any install: not the package's files.
IGNORED = ("/var/lib/dpkg/", "/var/cache/", "/var/lib/apt/", "/var/log/", "/var/lib/man-db/",
           "/etc/ld.so.cache")
ROOTS = ("/usr", "/etc", "/var/lib", "/opt")


def run(args, **kw):
  return subprocess.run(args, capture_output=True, text=True, **kw)


def snapshot():
  files = set()
  for root in ROOTS:
    for d, dirs, names in os.walk(root):
      if any((d + "/").startswith(i) for i in IGNORED):
        dirs[:] = []
        continue
      for n in names + [x for x in dirs if os.path.islink(os.path.join(d, x))]:
        p = os.path.join(d, n)
        if not p.startswith(IGNORED):
          files.add(p)
      files.add(d + "/")
  users = {l.split(":")[0] for l in open("/etc/passwd")}
  groups = {l.split(":")[0] for l in open("/etc/group")}
  return files, users, groups


def main():
  build = os.path.abspath(sys.argv[1])
  for tool in ("dpkg", "cpack", "dpkg-deb"):
    if not shutil.which(tool):
      print(f"SKIP: no {tool}")
      return 77
  sudo = []
  if os.geteuid() != 0:
    if shutil.which("sudo") and run(["sudo", "-n", "true"]).returncode == 0:
      sudo = ["sudo", "-n"]
    else:
      print("SKIP: installing a package needs root (or passwordless sudo)")
      return 77
  if run(["dpkg-query", "-W", "-f=${Status}", "wattwatch"]).stdout.startswith("install ok"):
    print("SKIP: a wattwatch package is installed on this machine already; not touching it")
    return 77
  errors = []
  with tempfile.TemporaryDirectory() as out:
    res = run(["cpack", "-G", "DEB", "-B", out], cwd=build)
    debs = [os.path.join(out, f) for f in os.listdir(out) if f.endswith(".deb")]
    if res.returncode != 0 or len(debs) != 1:
      print(f"cpack failed: rc {res.returncode}\n{res.stdout[-2000:]}{res.stderr[-2000:]}")
      return 1
    deb = debs[0]
    print(f"built {os.path.basename(deb)} ({os.path.getsize(deb)} bytes)")
    depends = run(["dpkg-deb", "-f", deb, "Depends"]).stdout.strip()
    if "libc6" not in depends:
      errors.append(f"Depends not computed from the binary: {depends!r}")
    if shutil.which("lintian"):
      res = run(["lintian", "--fail-on", "error", deb])
      if res.returncode != 0:
        errors.append(f"lintian: rc {res.returncode}\n{res.stdout}")
      print(f"lintian: {len(re.findall(r'^E: ', res.stdout, re.M))} errors, "
            f"{len(re.findall(r'^W: ', res.stdout, re.M))} warnings")
    else:
      print("note: lintian not installed, not run")
    before = snapshot()
    installed = False
    try:
      res = run(sudo + ["dpkg", "-i", deb], env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
      installed = True
      if res.returncode != 0:
        errors.append(f"dpkg -i: rc {res.returncode}\n{res.stdout[-2000:]}{res.stderr[-2000:]}")
        raise RuntimeError
      version = run(["/usr/bin/wattwatch", "--version"]).stdout.strip()
      if not re.match(r"wattwatch \d+\.\d+\.\d+ \(commit \S+, \S+ build\)$", version):
        errors.append(f"installed --version: {version!r}")
      page = run(["man", "-w", "wattwatch-triage"]).stdout.strip()
      if page != "/usr/share/man/man1/wattwatch-triage.1.gz":
        errors.append(f"man -w wattwatch-triage: {page!r}")
      text = run(["man", "wattwatch-triage"], env={**os.environ, "MANPAGER": "cat", "MANWIDTH": "80"}).stdout
      if "--hang-confirm-s" not in re.sub(r".\x08", "", text):
        errors.append("man wattwatch-triage does not show triage's flags")
      analyze = shutil.which("systemd-analyze")
      for unit in ("wattwatch.service", "wattwatch-fleet.service"):
        path = f"/usr/lib/systemd/system/{unit}"
        if analyze:
          with tempfile.TemporaryDirectory() as tmp:
            try:  # (ExecStart already names the installed binary)
              check_deploy.systemd_verify(analyze, path, "/usr/bin/wattwatch", tmp)
            except check_deploy.Failure as e:
              errors.append(str(e))
        if os.path.lexists(f"/etc/systemd/system/multi-user.target.wants/{unit}"):
          errors.append(f"{unit} was enabled by the package")
      promtool = shutil.which("promtool")
      for rules in ("wattwatch-rules.yml", "wattwatch-fleet-rules.yml"):
        if promtool:
          res = run([promtool, "check", "rules", f"/usr/share/wattwatch/prometheus/{rules}"])
          if res.returncode != 0:
            errors.append(f"promtool check rules {rules}: {res.stdout}{res.stderr}")
      for user in ("wattwatch", "wattwatch-fleet"):
        if run(["getent", "passwd", user]).returncode != 0:
          errors.append(f"no service user {user} after install")
        if not os.path.isdir(f"/var/lib/{user}"):
          errors.append(f"no state folder /var/lib/{user} after install")
      res = run(sudo + ["dpkg", "-r", "wattwatch"])
      if res.returncode != 0:
        errors.append(f"dpkg -r: rc {res.returncode} {res.stderr}")
      if os.path.exists("/usr/bin/wattwatch") or not os.path.exists("/etc/default/wattwatch"):
        errors.append("dpkg -r: the binary should be gone and the conffiles kept")
      res = run(sudo + ["dpkg", "-P", "wattwatch"])
      installed = False
      if res.returncode != 0:
        errors.append(f"dpkg -P: rc {res.returncode} {res.stderr}")
      after = snapshot()
      for what, b, a in zip(("files", "users", "groups"), before, after):
        if a - b:
          errors.append(f"left behind after dpkg -P ({what}): {sorted(a - b)[:20]}")
        if b - a:
          errors.append(f"gone after dpkg -P that were there before ({what}): {sorted(b - a)[:20]}")
    except RuntimeError:
      pass
    finally:
      if installed:
        run(sudo + ["dpkg", "-P", "wattwatch"])
  if errors:
    print("\n".join(errors))
    return 1
  print("dpkg -i, checks, dpkg -r and dpkg -P: the machine is as before")
  return 0


if __name__ == "__main__":
  sys.exit(main())
