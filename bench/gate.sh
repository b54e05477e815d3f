#!/usr/bin/env bash
# Benchmark of the whole `wattwatch gate` command: 1 M pretokenized samples (Megatron), 16
# ranks, greedy packing per rank. Reports the median wall time of RUNS runs, the per-reader
# figures from the gate's own JSON, and the ratio to a straightforward Python/numpy reference
# computing the same steps per rank (the script also checks that both agree).
# Usage: bench/gate.sh [BUILD_DIR] [RUNS]   (BUILD_DIR defaults to build/release)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="${1:-build/release}"
runs="${2:-7}"
bin="$build/wattwatch"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

/usr/bin/python3 "$here/gate_make_corpus.py" "$work/corpus" 1000000 >/dev/null
cat > "$work/job.yaml" <<YAML
world_size: 16
micro_batch_size: 1
grad_accum: 4
seq_len: 4096
data: {format: megatron, paths: [corpus]}
sharding: contiguous
packing: greedy
packing_scope: rank
model: {params: 32.76e9, max_position_embeddings: 40960, vocab_size: 151936}
YAML

times=()
for _ in $(seq "$runs"); do
  start=$(date +%s.%N)
  set +e
  "$bin" gate "$work/job.yaml" --json > "$work/out.json"
  rc=$?
  set -e
  end=$(date +%s.%N)
  [[ $rc -le 1 ]] || { echo "gate failed with exit $rc"; exit 1; }
  times+=("$(echo "$end - $start" | bc -l)")
done
median=$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')

ref_start=$(date +%s.%N)
ref_steps=$(/usr/bin/python3 "$here/gate_reference.py" "$work/corpus" 16 4096 1 4)
ref_end=$(date +%s.%N)
ref=$(echo "$ref_end - $ref_start" | bc -l)

/usr/bin/python3 - "$work/out.json" "$ref_steps" "$median" "$ref" <<'PY'
import json, sys
out = json.load(open(sys.argv[1]))
ref_steps = json.loads(sys.argv[2])
median, ref = float(sys.argv[3]), float(sys.argv[4])
steps = out["checks"][0]["details"]["steps_per_rank"]
assert steps == ref_steps, f"gate {steps} != reference {ref_steps}"
print(f"gate, 1M samples, 16 ranks, greedy per rank: median {median:.3f} s "
      f"(reference Python/numpy {ref:.2f} s, {ref / median:.0f}x slower); steps agree: {steps[0]}..{steps[-1]}")
for s in out["summary"]["sources"]:
    print(f"  reader {s['format']}: {s['bytes_read'] / 1e6:.1f} MB in {s['seconds'] * 1e3:.1f} ms "
          f"= {s['mb_per_s']:.0f} MB/s ({s['samples']} samples)")
PY
