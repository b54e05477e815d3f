#!/usr/bin/python3
"""Reference for bench/gate.sh: the same per-rank step count as `wattwatch gate`, written the
straightforward way in Python + numpy (numpy reads the .idx; first-fit packing per rank with a
max segment tree, since first-fit has no vectorized form). Prints the steps per rank as JSON.
Usage: gate_reference.py PREFIX WORLD SEQ_LEN MBS GA   (contiguous sharding, greedy, drop_last)"""
import json
import struct
import sys

import numpy as np

prefix, world, seq_len, mbs, ga = sys.argv[1], *map(int, sys.argv[2:6])
with open(prefix + ".idx", "rb") as f:
    header = f.read(34)
    assert header[:9] == b"MMIDIDX\x00\x00"
    n = struct.unpack("<Q", header[18:26])[0]
    sizes = np.frombuffer(f.read(4 * n), dtype=np.int32)
per_rank = n // world


def first_fit_bins(lengths, cap):
    m = len(lengths)
    leaves = 1
    while leaves < m:
        leaves *= 2
    tree = [cap] * (2 * leaves)
    used = 0
    for length in lengths:
        length = min(int(length), cap)
        if length == 0:
            continue
        node = 1
        while node < leaves:
            node = 2 * node if tree[2 * node] >= length else 2 * node + 1
        tree[node] -= length
        used = max(used, node - leaves + 1)
        node //= 2
        while node:
            tree[node] = max(tree[2 * node], tree[2 * node + 1])
            node //= 2
    return used


steps = []
for rank in range(world):
    bins = first_fit_bins(sizes[rank * per_rank:(rank + 1) * per_rank], seq_len)
    steps.append((bins // mbs) // ga)
print(json.dumps(steps))
