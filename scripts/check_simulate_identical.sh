#!/usr/bin/env bash
# Proves a change to the simulator left its outputs alone: runs `wattwatch simulate` of two
# binaries with the same arguments and compares, byte for byte, every log file, the truth CSV
# (--truth), the truth JSON (--truth-json), stdout, stderr and the exit code.
#
# Runs: every scenario (names from `OLD_BIN simulate --help`, its "Scenarios:" line) x seeds 1
# and 7 x --interval-ms 100 and 1000 x every --format (from the help's "--format" line). A format
# that refuses an interval is compared too (its message and exit code). Outputs of a run that
# matches are deleted as the check goes, so it needs little disk.
#
# usage: scripts/check_simulate_identical.sh OLD_BIN NEW_BIN [OUT_DIR]
# Exit: 0 all identical; 1 some output differs (each one named); 2 usage or OLD_BIN lists nothing.
set -uo pipefail

# shellcheck source=scripts/identical_args.sh
source "$(dirname "$0")/identical_args.sh" simulate "$@"
mkdir -p "$OUT"

help=$("$OLD" simulate --help 2>&1)
scenarios=$(sed -n 's/^Scenarios: *//p' <<< "$help")
formats=$(sed -n 's/^ *--format TEXT *output format: \([^(]*\).*/\1/p' <<< "$help" | tr -d ',')
if [ -z "$scenarios" ] || [ -z "$formats" ]; then
  echo "$0: no 'Scenarios:' line or no --format list in '$OLD simulate --help'" >&2
  exit 2
fi
if [ "$scenarios" != "$("$NEW" simulate --help 2>&1 | sed -n 's/^Scenarios: *//p')" ]; then
  echo "note: NEW_BIN lists other scenarios; checking OLD_BIN's" >&2
fi

checked=0
differ=()
for scenario in $scenarios; do
  for seed in 1 7; do
    for interval in 100 1000; do
      for format in $formats; do
        name=$scenario-seed$seed-$interval-$format
        for side in old new; do
          bin=$(side_bin "$side")
          dir=$OUT/$side/$name
          mkdir -p "$dir/logs"
          # The paths printed on stdout differ by side; run from the side's directory.
          (cd "$dir" && "$bin" simulate "$scenario" --seed "$seed" --interval-ms "$interval" \
            --format "$format" --out-dir logs --truth truth.csv --truth-json truth.json \
            > stdout 2> stderr
           echo $? > rc)
        done
        if diff -r -q "$OUT/old/$name" "$OUT/new/$name" > /dev/null; then
          rm -rf "${OUT:?}/old/$name" "${OUT:?}/new/$name"
        else
          differ+=("$name")
          echo "DIFFERS $name  (diff -r $OUT/old/$name $OUT/new/$name)"
        fi
        checked=$((checked + 1))
      done
    done
  done
done

echo "checked $checked runs (logs, truth csv, truth json, stdout, stderr, exit code each)"
if [ ${#differ[@]} -gt 0 ]; then
  echo "${#differ[@]} runs differ: ${differ[*]}"
  exit 1
fi
echo "all identical"
