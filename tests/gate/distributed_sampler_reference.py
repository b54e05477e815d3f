#!/usr/bin/env python3
"""Per-rank index lists of torch.utils.data.DistributedSampler, the reference the gate's
`sharding: strided` models (tests/gate/distributed_sampler_test.cc compares them).

Input (argv[1]): one combination per line, "SIZE WORLD DROP_LAST SHUFFLE" (0/1 flags).
Output (stdout): one line per rank, "SIZE WORLD DROP_LAST SHUFFLE RANK LEN COUNT [I ...]": LEN is
len(sampler), COUNT the number of indices iterating it yields, and the indices follow when
SHUFFLE is 0 (with shuffle only the counts are compared: the order is torch's permutation).
Exit 3 when torch cannot be imported, 2 on bad input.
"""
import sys

try:
    from torch.utils.data import DistributedSampler
except ImportError as e:  # the caller turns this into a skip (or a failure in CI)
    print(f"distributed_sampler_reference: cannot import torch: {e}", file=sys.stderr)
    sys.exit(3)


class Sized:
    """All DistributedSampler reads of a dataset is its length."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n


def main():
    if len(sys.argv) != 2:
        print("usage: distributed_sampler_reference.py COMBOS.txt", file=sys.stderr)
        return 2
    out = sys.stdout
    with open(sys.argv[1], encoding="ascii") as f:
        for lineno, line in enumerate(f, 1):
            fields = line.split()
            if not fields:
                continue
            try:
                size, world, drop_last, shuffle = (int(x) for x in fields)
            except ValueError:
                print(f"{sys.argv[1]}:{lineno}: expected SIZE WORLD DROP_LAST SHUFFLE",
                      file=sys.stderr)
                return 2
            for rank in range(world):
                s = DistributedSampler(Sized(size), num_replicas=world, rank=rank,
                                       shuffle=bool(shuffle), seed=0,
                                       drop_last=bool(drop_last))
                s.set_epoch(0)
                indices = list(iter(s))
                head = f"{size} {world} {drop_last} {shuffle} {rank} {len(s)} {len(indices)}"
                if shuffle:
                    out.write(head + "\n")
                else:
                    out.write(head + "".join(f" {i}" for i in indices) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
