#!/usr/bin/python3
"""Writes a dense Megatron MMIDIDX corpus of about SIZE bytes for `wattwatch iobench`: document
lengths drawn like gate_make_corpus.py's (lognormal, 16..16384 tokens), int32 token ids below
65536 from os.urandom. Unlike gate_make_corpus.py's sparse .bin (which the gate never reads), every
byte here is on disk: a read of a hole never touches the disk, so a sparse corpus would make any
cold figure a lie. Needs only the standard library. Usage: iobench_make_corpus.py PREFIX SIZE_BYTES"""
import array
import os
import random
import struct
import sys

prefix = sys.argv[1]
target_bytes = int(float(sys.argv[2]))
item = 4  # int32 tokens (dtype code 4), as Qwen's 151936 ids need
rng = random.Random(42)
lengths = array.array("i")
total_tokens = 0
while total_tokens * item < target_bytes:
    n = min(16384, max(16, int(rng.lognormvariate(6.5, 1.0))))
    lengths.append(n)
    total_tokens += n
n = len(lengths)
pointers = array.array("q", [0] * n)
acc = 0
for i, length in enumerate(lengths):
    pointers[i] = acc
    acc += length * item
with open(prefix + ".idx", "wb") as f:
    f.write(b"MMIDIDX\x00\x00")
    f.write(struct.pack("<QBQQ", 1, 4, n, n + 1))
    f.write(lengths.tobytes())
    f.write(pointers.tobytes())
    f.write(array.array("q", range(n + 1)).tobytes())
    f.flush()
    os.fsync(f.fileno())
chunk_tokens = 1 << 22
with open(prefix + ".bin", "wb") as f:
    left = total_tokens
    while left > 0:
        k = min(chunk_tokens, left)
        buf = bytearray(k * item)
        buf[0::4] = os.urandom(k)  # little-endian int32 < 65536: two random low bytes
        buf[1::4] = os.urandom(k)
        f.write(buf)
        left -= k
    f.flush()
    os.fsync(f.fileno())
print(f"{prefix}: {n} samples, {total_tokens} tokens, {total_tokens * item} bytes of tokens")
