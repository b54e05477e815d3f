#!/usr/bin/env bash
# The field report's negative result on this machine's disk: one corpus read cold (pages dropped
# from the page cache) and warm, by `wattwatch iobench`, next to a raw O_DIRECT dd read of the same
# .bin as a reference for what the disk itself delivers sequentially.
# Usage: bench/iobench.sh [BUILD_DIR] [SIZE_BYTES] [READERS] [WORK_DIR]
#   BUILD_DIR defaults to build/release, SIZE_BYTES to 2e9, READERS to 4, WORK_DIR to a new
#   directory under ${TMPDIR:-/tmp} (it must be on the disk you want to measure, not tmpfs).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
build="${1:-build/release}"
size="${2:-2e9}"
readers="${3:-4}"
if [[ -n "${4:-}" ]]; then
  work="$4"
  mkdir -p "$work"
else
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT  # only a directory this script made
fi
bin="$build/wattwatch"

echo "file system of $work: $(stat -f -c %T "$work")"
/usr/bin/python3 "$here/iobench_make_corpus.py" "$work/corpus" "$size"
echo "MemAvailable: $(awk '/MemAvailable/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo)"

echo; echo "== reference: dd, sequential, O_DIRECT (bypasses the page cache), 4 MiB blocks"
dd if="$work/corpus.bin" of=/dev/null bs=4M iflag=direct 2>&1 | tail -1

for r in 1 "$readers"; do
  echo; echo "== wattwatch iobench, $r reader(s), need 53000 tok/s (the field report's 16 x B300 job)"
  set +e
  "$bin" iobench "$work/corpus" --readers "$r" --need-tokens-per-s 53000
  echo "exit $?"
  set -e
done

echo; echo "== planning for a node whose page cache is smaller than the corpus (--mem-budget-bytes 1e9)"
set +e
"$bin" iobench "$work/corpus" --readers "$readers" --order shuffled --mem-budget-bytes 1000000000 \
  --need-tokens-per-s 53000 --json | /usr/bin/python3 -c '
import json, sys
j = json.load(sys.stdin)
print({k: j[k] for k in ("size_bytes", "mem_available_bytes", "fits_in_page_cache")},
      "steady state:", j["verdict"]["steady_state"],
      "cold tok/s: %.0f" % j["cold"]["tokens_per_s"], "warm tok/s: %.0f" % j["warm"]["tokens_per_s"])'
set -e
