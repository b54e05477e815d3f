#!/usr/bin/env python3
"""A training stand-in for the Slurm tests: prints `step N` lines, then either exits 0 (a job
that finishes) or stops printing and sleeps (a job hung in a collective, until something kills
it). Before the first step it writes STARTED_DIR/standin-JOB-RESTART.started, so a test can tell
whether (and how often) the training command started at all.

Usage: slurm_train_standin.py --started-dir DIR --steps N --step-s S [--hang]
"""

import argparse
import os
import sys
import time


def main():
  p = argparse.ArgumentParser()
  p.add_argument("--started-dir", required=True)
  p.add_argument("--steps", type=int, required=True)
  p.add_argument("--step-s", type=float, required=True)
  p.add_argument("--hang", action="store_true", help="after the steps, go silent instead of exit")
  a = p.parse_args()
  job = os.environ.get("SLURM_JOB_ID", "nojob")
  restart = os.environ.get("SLURM_RESTART_COUNT", "0")
  with open(os.path.join(a.started_dir, f"standin-{job}-{restart}.started"), "w") as f:
    f.write(f"{os.getpid()}\n")
  for step in range(1, a.steps + 1):
    print(f"step {step} loss {2.0 / step:.4f}", flush=True)
    time.sleep(a.step_s)
  if not a.hang:
    print("training done", flush=True)
    return 0
  print("entering the epoch-end collective", flush=True)
  while True:  # what a rank stuck in NCCL looks like from outside: alive, silent
    time.sleep(3600)


if __name__ == "__main__":
  sys.exit(main())
