#!/usr/bin/python3
"""Writes the gate benchmark corpus: a Megatron MMIDIDX pair with N samples whose lengths drift
across the corpus (later shards hold longer documents, as when ranks tokenize different sources),
so per-rank packing gives unequal step counts. The .bin is sparse (zeros): the gate reads only
its size and a small sample. Usage: gate_make_corpus.py PREFIX [N]"""
import struct
import sys

import numpy as np

prefix = sys.argv[1]
n = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
rng = np.random.default_rng(42)
drift = np.linspace(0.8, 1.2, n)
lengths = np.clip(rng.lognormal(mean=6.5, sigma=1.0, size=n) * drift, 16, 16384).astype(np.int32)
item = 4  # int32 tokens (dtype code 4): Qwen's 151936 ids do not fit uint16
pointers = np.zeros(n, dtype=np.int64)
pointers[1:] = np.cumsum(lengths[:-1].astype(np.int64) * item)
with open(prefix + ".idx", "wb") as f:
    f.write(b"MMIDIDX\x00\x00")
    f.write(struct.pack("<Q", 1))
    f.write(struct.pack("<B", 4))
    f.write(struct.pack("<Q", n))
    f.write(struct.pack("<Q", n + 1))
    f.write(lengths.tobytes())
    f.write(pointers.tobytes())
    f.write(np.arange(n + 1, dtype=np.int64).tobytes())
with open(prefix + ".bin", "wb") as f:
    f.truncate(int(lengths.astype(np.int64).sum()) * item)
print(f"{prefix}: {n} samples, {int(lengths.sum())} tokens")
