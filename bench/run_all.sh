#!/usr/bin/env bash
# Runs every whole-command benchmark against its reference in the same run (see bench/README.md).
# usage: bench/run_all.sh [BUILD_DIR]   (a Release build configured with -DWATTWATCH_BENCH=ON)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build/release}
echo "== triage throughput (1 GB log, 16 GPUs at 100 ms) vs pandas"; bench/triage_throughput.sh "$BUILD"
echo "== gate (1 M samples, 16 ranks, greedy packing) vs numpy";   bench/gate.sh "$BUILD"
echo "== NVML sampling cost (fake library, 8 GPUs) vs Python ctypes"; bench/nvml.sh "$BUILD"
echo "== tokenizer (Qwen3) vs tokenizers.js / Rust binding";        bench/tokenizer.sh "$BUILD"
echo "== watch: tick slip idle vs wrk at 500 scrapes/s";               bench/watch_load.sh "$BUILD"
