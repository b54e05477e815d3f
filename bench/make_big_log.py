#!/usr/bin/env python3
"""Tiles a simulated nvidia-smi log into a large one (for throughput benchmarks).

usage: make_big_log.py BLOCK.csv OUT.csv TARGET_BYTES

BLOCK.csv is a `wattwatch simulate` log; it is repeated with timestamps shifted so time keeps
increasing, until OUT.csv holds at least TARGET_BYTES.
"""
import datetime
import sys


def main():
    block, out, target = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with open(block) as f:
        header = f.readline()
        rows = [line.split(", ", 1) for line in f]
    fmt = "%Y/%m/%d %H:%M:%S.%f"
    t0 = datetime.datetime.strptime(rows[0][0], fmt)
    offsets = [(datetime.datetime.strptime(r[0], fmt) - t0) for r in rows]
    span = offsets[-1] + datetime.timedelta(milliseconds=100)
    written = 0
    rep = 0
    with open(out, "w") as f:
        f.write(header)
        while written < target:
            base = t0 + span * rep
            chunk = []
            for off, r in zip(offsets, rows):
                ts = (base + off).strftime(fmt)[:-3]
                chunk.append(ts + ", " + r[1])
            text = "".join(chunk)
            f.write(text)
            written += len(text)
            rep += 1
    print(f"{out}: {written / 1e6:.0f} MB, {rep} copies of {block}")


if __name__ == "__main__":
    main()
