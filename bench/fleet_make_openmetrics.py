#!/usr/bin/env python3
"""OpenMetrics input for `promtool tsdb create-blocks-from openmetrics`: dcgm-exporter series of
GPUS GPUs (8 per host, one host per job, label hpc_job) sampled every STEP s for HOURS hours.
Jobs: most train (power 480-560 W, utilization 95-100 %, memory held), every 10th hangs for the
last 20 minutes (flat ~150 W at 100 %: an NCCL spin), every 25th is idle. Deterministic.

Usage: fleet_make_openmetrics.py GPUS OUT [--step-s 30] [--hours 1] [--end UNIX_S]
Prints the start and end Unix seconds of the data on stdout ("START END").
"""
import argparse
import random
import time

ap = argparse.ArgumentParser()
ap.add_argument("gpus", type=int)
ap.add_argument("out")
ap.add_argument("--step-s", type=int, default=30)
ap.add_argument("--hours", type=float, default=1)
ap.add_argument("--end", type=int, default=int(time.time()) // 3600 * 3600 - 3600)
a = ap.parse_args()
steps = int(a.hours * 3600 / a.step_s)
end = a.end
start = end - (steps - 1) * a.step_s
hosts = (a.gpus + 7) // 8
hang_from = end - 20 * 60

def kind(job):
  return "hang" if job % 10 == 3 else "idle" if job % 25 == 7 else "train"

families = [("DCGM_FI_DEV_POWER_USAGE", "gauge"), ("DCGM_FI_DEV_GPU_UTIL", "gauge"),
            ("DCGM_FI_DEV_FB_USED", "gauge"), ("DCGM_FI_DEV_FB_FREE", "gauge"),
            ("DCGM_FI_DEV_POWER_MGMT_LIMIT", "gauge")]
with open(a.out, "w") as f:
  for name, typ in families:
    f.write(f"# TYPE {name} {typ}\n")
    for h in range(hosts):
      k = kind(h)
      for g in range(min(8, a.gpus - h * 8)):
        rng = random.Random(h * 8 + g)
        labels = (f'gpu="{g}",Hostname="node{h:05d}",hpc_job="job{h:05d}",'
                  f'modelName="NVIDIA H100 80GB HBM3",UUID="GPU-{h:05d}-{g}"')
        lines = []
        for i in range(steps):
          t = start + i * a.step_s
          hung = k == "hang" and t >= hang_from
          if name == "DCGM_FI_DEV_POWER_USAGE":
            v = 70 + rng.random() if k == "idle" else 150 + rng.random() if hung else \
                480 + 80 * rng.random()
          elif name == "DCGM_FI_DEV_GPU_UTIL":
            v = 0 if k == "idle" else 100 if hung else 95 + rng.randrange(6)
          elif name == "DCGM_FI_DEV_FB_USED":
            v = 0 if k == "idle" else 61000 + rng.randrange(200)
          elif name == "DCGM_FI_DEV_FB_FREE":
            v = 81559 if k == "idle" else 20000
          else:
            v = 700
          lines.append(f"{name}{{{labels}}} {v:.6g} {t}\n")
        f.write("".join(lines))
  f.write("# EOF\n")
print(start, end)
