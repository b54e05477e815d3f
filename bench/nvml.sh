#!/usr/bin/env bash
# Benchmark of live NVML sampling, all against the fake libnvidia-ml.so.1 with 8 Hopper GPUs and
# every field scripted, in one run:
#   1. nvml_bench (Google Benchmark): wattwatch's CPU per GPU-sample (NvmlSource::Next, all
#      threads) and the floor of making the same calls inline with no deadline machinery.
#   2. The reference: bench/nvml_ctypes_poller.py, a pynvml-style ctypes poller reading the same
#      fields from the same library the way nvitop and gpustat do, as fast as it can.
#   3. `wattwatch record --interval-ms 100` for DURATION s on 8 GPUs: CPU % of one core and peak
#      RSS, against the Python poller doing the same 10 Hz job.
# Prints the figures and the ratios. Targets: <= 20 us per GPU-sample; 8 GPUs at 10 Hz under 1 %
# of one core; record's peak RSS under 16 MB.
# Usage: bench/nvml.sh [BUILD_DIR] [DURATION_S]   (BUILD_DIR: a Release build with
#        -DWATTWATCH_BENCH=ON; defaults to build/release)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="${1:-build/release}"
duration="${2:-20}"
lib="$build/tests/fake_nvml/libnvidia-ml.so.1"
for f in "$build/wattwatch" "$build/bench/nvml_bench" "$lib"; do
  [ -e "$f" ] || { echo "nvml.sh: missing $f (cmake --build $build --target wattwatch nvml_bench fake_nvml)" >&2; exit 2; }
done
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

cat > "$work/script.txt" <<'EOF'
gpus 8
gpu * name "NVIDIA H100 80GB HBM3" arch hopper
set * power_mw 547120
set * power_limit_mw 700000
set * util_gpu 91
set * util_mem 40
set * sm_mhz 1980
set * mem_mhz 2619
set * clock_reasons 0x4
set * temp_c 45
set * mem_used_mib 41285
set * mem_total_mib 81559
set * pcie_tx_bytes_per_s 2000000000
set * nvlink_tx_kib_per_s 1000000
set * gpm_sm_util 80
set * gpm_tensor_util 60
EOF
export FAKE_NVML_SCRIPT="$work/script.txt" WATTWATCH_NVML_LIB="$lib"

echo "== 1. Google Benchmark (8 GPUs, fake NVML)"
"$build/bench/nvml_bench" --benchmark_format=json --benchmark_out="$work/gb.json" \
  --benchmark_out_format=json >/dev/null 2>"$work/gb.err" || { cat "$work/gb.err"; exit 1; }

echo "== 2. Python ctypes poller, as fast as it can (nvitop/gpustat style)"
/usr/bin/env python3 "$here/nvml_ctypes_poller.py" "$lib" 8 5 > "$work/py_fast.json"

echo "== 3. 8 GPUs at 10 Hz for ${duration} s: wattwatch record vs the Python poller"
# CPU and peak RSS of each child, measured by the parent through wait4's rusage.
/usr/bin/env python3 - "$build/wattwatch" "$here/nvml_ctypes_poller.py" "$lib" "$duration" "$work" \
  > "$work/tenhz.json" <<'PY'
import json, os, resource, subprocess, sys, time
ww, poller, lib, duration, work = sys.argv[1:]
def run(cmd):
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    cpu = ru.ru_utime + ru.ru_stime
    return {"cpu_s": cpu, "wall_s": wall, "core_pct": 100 * cpu / wall,
            "peak_rss_mib": ru.ru_maxrss / 1024, "status": status}
rec = run([ww, "record", "--interval-ms", "100", "--duration-s", duration,
           "--out", os.path.join(work, "rec.csv")])
py = run([sys.executable, poller, lib, "8", duration, "100"])
rows = sum(1 for _ in open(os.path.join(work, "rec.csv"))) - 1
print(json.dumps({"record": rec, "python": py, "record_rows": rows}))
PY

/usr/bin/env python3 - "$work" <<'PY'
import json, sys
work = sys.argv[1]
gb = {b["name"].split("/")[0]: b for b in json.load(open(f"{work}/gb.json"))["benchmarks"]}
src = gb["BM_NvmlSourceTick"]["cpu_us_per_gpu_sample"]
direct = gb["BM_DirectSequential"]["cpu_us_per_gpu_sample"]
py = json.load(open(f"{work}/py_fast.json"))["cpu_us_per_gpu_sample"]
t = json.load(open(f"{work}/tenhz.json"))
r, p = t["record"], t["python"]
print()
print(f"CPU per GPU-sample, all fields, 8 GPUs (fake NVML):")
print(f"  wattwatch NvmlSource::Next       {src:8.2f} us   (target <= 20 us)")
print(f"  same calls inline, no deadlines  {direct:8.2f} us   (library floor)")
print(f"  Python ctypes poller (reference) {py:8.2f} us")
print(f"  ratio Python / wattwatch         {py / src:8.1f} x")
print(f"8 GPUs at 10 Hz for {r['wall_s']:.1f} s ({t['record_rows']} CSV rows):")
print(f"  wattwatch record   {r['core_pct']:6.3f} % of one core, peak RSS {r['peak_rss_mib']:6.1f} MiB"
      f"   (targets < 1 %, < 16 MB)")
print(f"  Python poller      {p['core_pct']:6.3f} % of one core, peak RSS {p['peak_rss_mib']:6.1f} MiB")
print(f"  ratio Python / wattwatch CPU     {p['cpu_s'] / max(r['cpu_s'], 1e-9):8.1f} x")
PY
