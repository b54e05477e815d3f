#!/usr/bin/env python3
"""Issue 33's acceptance, measured: every simulator scenario written in the AMD and Gaudi tools'
layouts, on their boards, triaged, and compared with the nvidia-smi CSV of the same run (same
scenario, board, seed and interval) and with the simulator's ground truth.

  scripts/check_vendor_formats.py BUILD/wattwatch [--intervals 1000,5000] [--seeds 1,2]

Pairs: MI300X in amd-smi-csv, amd-smi-json, amd-smi-monitor, rocm-smi-csv, rocm-smi-json;
Gaudi 3 (gaudi3) in hl-smi. Per run: the hang verdict, the episodes (count, culprits, detection
time within one interval) against the nvidia-smi run; macro-F1 of the labels against the truth
(compute and communication one phase, samples within max(2 intervals, 2 s) of a truth change
left out, as tests/triage/scenario_eval.cc scores); a hang the truth has and the run misses; a
hang the truth does not have. Prints one line per run and a summary; exit 1 on any mismatch,
missed or false hang, or macro-F1 below 0.95.
"""
import argparse
import csv
import datetime
import json
import os
import re
import subprocess
import sys
import tempfile

PAIRS = [("mi300x", f) for f in
         ("amd-smi-csv", "amd-smi-json", "amd-smi-monitor", "rocm-smi-csv", "rocm-smi-json")]
PAIRS += [("gaudi3", "hl-smi")]
# Scenarios whose hang is a wait past --max-checkpoint-s (their ScenarioConfig::max_checkpoint_s):
# triaged with it, as tests/triage/scenario_eval.cc does.
MAX_CHECKPOINT_S = {"off-gpu-stall": 300, "partial-hang": 300}


def ms(ts):
  return int(datetime.datetime.fromisoformat(ts).replace(
      tzinfo=datetime.timezone.utc).timestamp() * 1000)


def scenarios(ww):
  out = subprocess.run([ww, "simulate", "--help"], capture_output=True, text=True).stdout
  m = re.search(r"^Scenarios: (.*)$", out, re.M)
  return m.group(1).split()


def run(ww, scenario, model, fmt, interval, seed, tmp):
  d = os.path.join(tmp, f"{scenario}-{model}-{fmt}-{interval}-{seed}")
  os.makedirs(d)
  sim = subprocess.run([ww, "simulate", scenario, "--model", model, "--format", fmt,
                        "--interval-ms", str(interval), "--seed", str(seed), "--out-dir", d,
                        "--truth", os.path.join(d, "truth.csv"),
                        "--truth-json", os.path.join(d, "truth.json"), "--force"],
                       capture_output=True, text=True)
  if sim.returncode != 0:
    return None, f"simulate: {sim.stderr.strip()}"
  logs = sorted(os.path.join(d, f) for f in os.listdir(d) if not f.startswith("truth"))
  labels = os.path.join(d, "labels.out")
  res = os.path.join(d, "triage.out")
  extra = []
  if scenario in MAX_CHECKPOINT_S:
    extra = ["--max-checkpoint-s", str(MAX_CHECKPOINT_S[scenario])]
  t = subprocess.run([ww, "triage", *logs, "--labels", labels, "--json-out", res, *extra],
                     capture_output=True, text=True)
  if t.returncode not in (0, 3) or not os.path.exists(res):
    return None, f"triage exit {t.returncode}: {t.stderr.strip()[-300:]}"
  doc = json.load(open(res))
  truth = json.load(open(os.path.join(d, "truth.json")))
  return {"doc": doc, "truth_rows": list(csv.DictReader(open(os.path.join(d, "truth.csv")))),
          "labels": list(csv.DictReader(open(labels))), "truth": truth}, None


def macro_f1(truth_rows, label_rows, interval):
  merge = {"communication": "work", "compute": "work"}
  per_gpu = {}
  for r in truth_rows:
    per_gpu.setdefault((r["host"], r["gpu"]), []).append((ms(r["timestamp"]), r["state"]))
  guard = max(2 * interval, 2000)
  keep = {}
  for key, rows in per_gpu.items():
    rows.sort()
    changes = [rows[i][0] for i in range(1, len(rows)) if merge.get(rows[i][1], rows[i][1]) !=
               merge.get(rows[i - 1][1], rows[i - 1][1])]
    ci = 0
    for t, s in rows:
      while ci < len(changes) and changes[ci] < t - guard:
        ci += 1
      if ci < len(changes) and abs(changes[ci] - t) <= guard:
        continue
      keep[(key, round(t / interval))] = merge.get(s, s)
  got = {}
  for r in label_rows:
    got[((r["host"], r["gpu"]), round(ms(r["timestamp"]) / interval))] = merge.get(r["state"],
                                                                                   r["state"])
  classes = sorted(set(keep.values()))
  scores = []
  for c in classes:
    tp = sum(1 for k, v in keep.items() if v == c and got.get(k) == c)
    fp = sum(1 for k, v in keep.items() if v != c and got.get(k) == c)
    fn = sum(1 for k, v in keep.items() if v == c and got.get(k) != c)
    scores.append(0.0 if tp == 0 else 2 * tp / (2 * tp + fp + fn))
  unmatched = sum(1 for k in keep if k not in got)
  return (sum(scores) / len(scores) if scores else 1.0), unmatched, len(keep)


def episodes(doc):
  return [(sorted((c["host"], c["gpu"]) for c in h.get("culprits", [])),
           ms(h["detected_at"]) if h.get("detected_at") else None)
          for h in doc.get("hang_episodes", [])]


def main():
  ap = argparse.ArgumentParser()
  ap.add_argument("wattwatch")
  ap.add_argument("--intervals", default="1000,5000")
  ap.add_argument("--seeds", default="1")
  a = ap.parse_args()
  intervals = [int(x) for x in a.intervals.split(",")]
  seeds = [int(x) for x in a.seeds.split(",")]
  bad, n, worst_f1 = [], 0, 1.0
  hangs_truth = hangs_found = 0
  with tempfile.TemporaryDirectory() as tmp:
    for scenario in scenarios(a.wattwatch):
      for interval in intervals:
        for seed in seeds:
          refs = {}
          for model, fmt in PAIRS:
            if model not in refs:
              refs[model], err = run(a.wattwatch, scenario, model, "nvidia-smi", interval, seed, tmp)
              if err:
                bad.append(f"{scenario} {model} nvidia-smi {interval} ms: {err}")
            ref = refs[model]
            got, err = run(a.wattwatch, scenario, model, fmt, interval, seed, tmp)
            n += 1
            where = f"{scenario} {model} {fmt} {interval} ms seed {seed}"
            if err or ref is None:
              bad.append(f"{where}: {err or 'no reference'}")
              continue
            f1, unmatched, scored = macro_f1(got["truth_rows"], got["labels"], interval)
            worst_f1 = min(worst_f1, f1)
            problems = []
            if got["doc"]["hang_verdict"] != ref["doc"]["hang_verdict"]:
              problems.append(f"verdict {got['doc']['hang_verdict']} vs nvidia-smi "
                              f"{ref['doc']['hang_verdict']}")
            ge, re_ = episodes(got["doc"]), episodes(ref["doc"])
            if [c for c, _ in ge] != [c for c, _ in re_]:
              problems.append(f"episodes/culprits {ge} vs nvidia-smi {re_}")
            else:
              for (_, t1), (_, t2) in zip(ge, re_):
                if t1 is not None and t2 is not None and abs(t1 - t2) > interval + 1000:
                  problems.append(f"detected {abs(t1 - t2)} ms apart from nvidia-smi")
            truth_hangs = len(got["truth"].get("hang_episodes", []))
            hangs_truth += truth_hangs
            hangs_found += min(truth_hangs, len(ge))
            if truth_hangs and not ge:
              problems.append("the truth's hang is missed")
            if not truth_hangs and got["doc"]["hang_verdict"] == "confirmed":
              problems.append("false hang")
            if f1 < 0.95:
              problems.append(f"macro-F1 {f1:.3f}")
            if unmatched > scored * 0.02:
              problems.append(f"{unmatched} of {scored} truth samples without a label")
            print(f"{where}: verdict {got['doc']['hang_verdict']}, {len(ge)} hang(s), macro-F1 "
                  f"{f1:.3f}" + ("" if not problems else "  <-- " + "; ".join(problems)))
            if problems:
              bad.append(f"{where}: " + "; ".join(problems))
  print(f"\n{n} runs, {len(bad)} with a problem; truth hangs {hangs_truth}, found {hangs_found}; "
        f"lowest macro-F1 {worst_f1:.3f}")
  for b in bad:
    print("PROBLEM:", b)
  return 1 if bad else 0


if __name__ == "__main__":
  sys.exit(main())
