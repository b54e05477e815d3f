#!/usr/bin/env python3
"""Writes the tokenizer benchmark's two corpora as JSON lines ({"text": ...}):

  prose.jsonl  English prose: the license texts of /usr/share/common-licenses and git's release
               notes (/usr/share/doc/git/RelNotes), one paragraph per record.
  code.jsonl   source code: Python's standard library (/usr/lib/python3.11) and libstdc++'s
               headers (/usr/include/c++/12/bits), 40 lines per record.

Real text rather than generated text, so piece frequencies (and so the cache hit rate) are
those of real corpora. Deterministic for a given Debian bookworm image (files sorted by name).
Usage: tokenizer_corpus.py OUT_DIR [MEGABYTES per corpus, default 2]
"""
import glob
import json
import os
import sys


def files(patterns):
    seen, out = set(), []
    for pattern in patterns:
        for path in sorted(glob.glob(pattern)):
            real = os.path.realpath(path)
            if os.path.isfile(real) and real not in seen:
                seen.add(real)
                out.append(real)
    return out


def write(path, records, limit_bytes):
    total = 0
    with open(path, "w", encoding="utf-8") as f:
        for text in records:
            if not text.strip():
                continue
            f.write(json.dumps({"text": text}, ensure_ascii=False) + "\n")
            total += len(text.encode("utf-8"))
            if total >= limit_bytes:
                break
    if total < limit_bytes // 4:
        sys.exit(f"tokenizer_corpus.py: only {total} bytes for {path}; source files missing?")
    return total


def prose_records():
    for path in files(["/usr/share/common-licenses/*", "/usr/share/doc/git/RelNotes/*.txt"]):
        with open(path, encoding="utf-8", errors="replace") as f:
            for para in f.read().split("\n\n"):
                yield para.strip("\n")


def code_records():
    for path in files(["/usr/lib/python3.11/*.py", "/usr/include/c++/12/bits/*.h"]):
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().split("\n")
        for i in range(0, len(lines), 40):
            yield "\n".join(lines[i:i + 40]) + "\n"


def main():
    out = sys.argv[1]
    mb = float(sys.argv[2]) if len(sys.argv) > 2 else 2.0
    os.makedirs(out, exist_ok=True)
    limit = int(mb * 1e6)
    p = write(os.path.join(out, "prose.jsonl"), prose_records(), limit)
    c = write(os.path.join(out, "code.jsonl"), code_records(), limit)
    print(f"prose {p} bytes, code {c} bytes in {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
