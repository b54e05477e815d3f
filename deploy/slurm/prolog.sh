#!/bin/bash
# wattwatch gate as a job-step prolog: refuses a step whose ranks would run different numbers of
# optimizer steps (the epoch-end deadlock) or that fails another gate check, before any GPU time
# is spent on it. See docs/deploy.md#slurm and docs/gate.md.
#
# srun runs it before launching a step, as the job's user, on the node where srun runs:
#   per job:    srun --prolog=/usr/local/libexec/wattwatch/prolog.sh ...  (deploy/slurm/train.sbatch)
#   site-wide:  SrunProlog=/usr/local/libexec/wattwatch/prolog.sh         (slurm.conf)
# A non-zero exit cancels the step. Not slurmd's Prolog=: a failing Prolog drains the node and
# holds the job, for what is a problem of the job's data, not of the node.
#
# Opt-in per job: WATTWATCH_JOB_SPEC=/path/job.yaml (without it this does nothing).
#   WATTWATCH_GATE_ARGS  extra gate flags, e.g. "--strict"
#   WATTWATCH            the binary (default /usr/local/bin/wattwatch)
# The gate runs once per job: later steps of the same job reuse a pass.
set -euo pipefail

spec=${WATTWATCH_JOB_SPEC:-}
if [[ -z $spec ]]; then
  exit 0
fi
wattwatch=${WATTWATCH:-/usr/local/bin/wattwatch}
job=${SLURM_JOB_ID:-nojob}
stamp="${TMPDIR:-/tmp}/wattwatch-gate-${job}.passed"
if [[ -e $stamp ]]; then
  exit 0
fi
report="${SLURM_SUBMIT_DIR:-$PWD}/wattwatch-gate-${job}.txt"
read -r -a extra <<< "${WATTWATCH_GATE_ARGS:-}"

rc=0
"$wattwatch" gate "${extra[@]}" "$spec" > "$report" 2>&1 || rc=$?
cat "$report" >&2
case $rc in
  0)
    touch "$stamp"
    echo "wattwatch gate: $spec passed (report: $report)" >&2
    ;;
  1)
    echo "wattwatch gate: $spec FAILED a check; step cancelled (report: $report)" >&2
    ;;
  2)
    echo "wattwatch gate: cannot read $spec or its data; step cancelled (report: $report)" >&2
    ;;
  *)
    echo "wattwatch gate: '$wattwatch gate' exited $rc; step cancelled (report: $report)" >&2
    ;;
esac
exit "$rc"
