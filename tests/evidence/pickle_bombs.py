#!/usr/bin/env python3
"""Flight Recorder dumps that are small on disk but huge when references are followed.

CPython's pickle writes an object once and refers to it again by memo (BINGET), so sharing is
free to the writer: a reader that deep-copies references pays the expansion.
  shared-string: one --size byte str used as every string field of --refs entries (and of their
                 frame), as the issue's 16 MB x 100 dump.
  shared-frames: one frames list of --frames torch frames under --refs entries (the same entry
                 dict, and so the same list): a reader that walks the list per entry does
                 refs x frames steps (the issue's 8 MB dump: 2M entries).
"""
import argparse
import pickle


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--kind", choices=["shared-string", "shared-frames"], required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--size", type=int, default=16 << 20)
    p.add_argument("--refs", type=int, default=100)
    p.add_argument("--frames", type=int, default=1000)
    a = p.parse_args()
    if a.kind == "shared-string":
        s = "x" * a.size
        frame = {"name": s, "filename": s, "line": 1}
        entries = [{"record_id": i, "pg_id": 0, "process_group": (s, s), "collective_seq_id": i,
                    "profiling_name": s, "state": s, "is_p2p": False, "frames": [frame]}
                   for i in range(a.refs)]
    else:
        frame = {"name": "all_reduce", "filename": "/site-packages/torch/distributed/c10d.py",
                 "line": 1}
        frames = [frame] * a.frames
        entry = {"record_id": 0, "pg_id": 0, "process_group": ("0", "default_pg"),
                 "collective_seq_id": 1, "profiling_name": "nccl:all_reduce", "state": "started",
                 "is_p2p": False, "frames": frames}
        entries = [entry] * a.refs
    with open(a.out, "wb") as f:
        pickle.dump({"version": "2.10", "entries": entries}, f, protocol=4)


if __name__ == "__main__":
    main()
