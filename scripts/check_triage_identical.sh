#!/usr/bin/env bash
# Proves a change to triage left its outputs alone: runs `wattwatch triage` of two binaries on the
# same inputs and compares, byte for byte, the JSON (--json-out), the labels CSV (--labels), the
# text summary (stdout, --color never) and the exit code.
#
# Inputs: every simulator scenario (names from `OLD_BIN simulate --help`), simulated once by
# OLD_BIN into OUT_DIR/sim/ (so only triage differs) with seeds 1 and 7 at 100 ms and seed 1 at
# 1000 ms (coarse sampling takes other paths), each triaged over all its node*.csv; and every real
# trace in ../shared/traces/real/*.csv (or $WW_REAL_TRACES), each triaged alone.
#
# usage: scripts/check_triage_identical.sh OLD_BIN NEW_BIN [OUT_DIR]
# Exit: 0 all identical; 1 some output differs (each one named); 2 usage or a run that failed.
set -uo pipefail

# shellcheck source=scripts/identical_args.sh
source "$(dirname "$0")/identical_args.sh" triage "$@"
REPO=$(cd "$(dirname "$0")/.." && pwd)
REAL_DIR=${WW_REAL_TRACES:-$REPO/../shared/traces/real}
mkdir -p "$OUT/sim" "$OUT/old" "$OUT/new"

scenarios=$("$OLD" simulate --help 2>&1 | sed -n 's/^Scenarios: *//p')
if [ -z "$scenarios" ]; then
  echo "$0: no 'Scenarios:' line in '$OLD simulate --help'" >&2
  exit 2
fi
new_scenarios=$("$NEW" simulate --help 2>&1 | sed -n 's/^Scenarios: *//p')
if [ "$scenarios" != "$new_scenarios" ]; then
  echo "note: NEW_BIN lists other scenarios ($new_scenarios); checking OLD_BIN's" >&2
fi

checked=0
differ=()
failed=0

# triage NAME FILE...: runs both binaries on the files, compares the four outputs.
triage() {
  local name=$1
  shift
  local side bin
  for side in old new; do
    bin=$(side_bin "$side")
    "$bin" triage "$@" --json-out "$OUT/$side/$name.json" --labels "$OUT/$side/$name.labels.csv" \
      --color never > "$OUT/$side/$name.txt" 2> "$OUT/$side/$name.err"
    echo $? > "$OUT/$side/$name.rc"
  done
  if [ "$(cat "$OUT/old/$name.rc")" != 0 ]; then
    echo "FAILED  $name: OLD_BIN exited $(cat "$OUT/old/$name.rc"): $(head -c 300 "$OUT/old/$name.err")"
    failed=1
  fi
  local what
  for what in json labels.csv txt rc err; do
    if ! cmp -s "$OUT/old/$name.$what" "$OUT/new/$name.$what"; then
      differ+=("$name.$what")
      echo "DIFFERS $name.$what  (diff $OUT/old/$name.$what $OUT/new/$name.$what)"
    fi
  done
  checked=$((checked + 1))
}

for scenario in $scenarios; do
  for variant in "seed1 --seed 1" "seed7 --seed 7" "seed1-1000ms --seed 1 --interval-ms 1000"; do
    read -r tag args <<< "$variant"
    dir=$OUT/sim/$scenario-$tag
    # shellcheck disable=SC2086  # args are words on purpose
    if ! "$OLD" simulate "$scenario" $args --out-dir "$dir" 2> "$OUT/sim/$scenario-$tag.err"; then
      echo "FAILED  simulate $scenario $args: $(cat "$OUT/sim/$scenario-$tag.err")"
      failed=1
      continue
    fi
    triage "sim-$scenario-$tag" "$dir"/node*.csv
  done
done

shopt -s nullglob
real=("$REAL_DIR"/*.csv)
if [ ${#real[@]} -eq 0 ]; then
  echo "FAILED  no real traces in $REAL_DIR"
  failed=1
fi
for f in "${real[@]}"; do
  triage "real-$(basename "$f" .csv)" "$f"
done

echo "checked $checked inputs (json, labels, text summary, exit code, stderr each); outputs in $OUT"
if [ ${#differ[@]} -gt 0 ]; then
  echo "${#differ[@]} outputs differ: ${differ[*]}"
  exit 1
fi
if [ $failed -ne 0 ]; then
  exit 2
fi
echo "all identical"
