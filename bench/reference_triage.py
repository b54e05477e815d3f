#!/usr/bin/env python3
"""The straightforward pandas version of per-sample thresholds: the reference wattwatch's triage
throughput is compared against in bench/triage_throughput.sh.

Reads an nvidia-smi CSV log, strips units, and labels every sample by fixed thresholds on
utilization and power (spin = util >= 90 % at low power; compute = util >= 50 %; else idle),
then sums seconds per GPU and state.
"""
import sys

import numpy as np
import pandas as pd


def main():
    df = pd.read_csv(sys.argv[1], skipinitialspace=True)
    df.columns = [c.split(" [")[0].strip() for c in df.columns]
    ts = pd.to_datetime(df["timestamp"], format="%Y/%m/%d %H:%M:%S.%f")
    power = pd.to_numeric(df["power.draw"].str.replace(" W", "", regex=False), errors="coerce")
    util = pd.to_numeric(df["utilization.gpu"].str.replace(" %", "", regex=False), errors="coerce")
    limit = pd.to_numeric(df["power.limit"].str.replace(" W", "", regex=False), errors="coerce")
    frac = power / limit
    state = np.where((util >= 90) & (frac < 0.25), "spin",
                     np.where(util >= 50, "compute", "idle"))
    df = pd.DataFrame({"gpu": df["index"], "ts": ts, "state": state})
    df["dt"] = df.groupby("gpu")["ts"].diff().dt.total_seconds().fillna(0)
    print(df.groupby(["gpu", "state"])["dt"].sum().unstack(fill_value=0).round(1).to_string())


if __name__ == "__main__":
    main()
