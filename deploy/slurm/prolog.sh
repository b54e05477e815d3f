#!/bin/bash
# wattwatch gate before a job's training starts: refuses a job whose ranks would run different
# numbers of optimizer steps (the epoch-end deadlock) or that fails another gate check, before
# any GPU time is spent on it. See docs/deploy.md#slurm and docs/gate.md.
#
# Two ways to run it (both tested under slurmctld and slurmd, tests/deploy/slurm_e2e.py):
#   per job:    the batch script runs it before srun and exits with its code (train.sbatch)
#   site-wide:  TaskProlog=/usr/local/libexec/wattwatch/prolog.sh in slurm.conf: slurmstepd runs
#               it before every task, the batch script included, and a non-zero exit stops the
#               task before it executes (the job ends FAILED with this script's exit code)
# Not as `srun --prolog` or SrunProlog=: srun starts the step's tasks even when its prolog fails
# (and kills them a moment later). Not slurmd's Prolog=: a failing Prolog drains the node and
# holds the job, for what is a problem of the job's data, not of the node.
#
# Opt-in per job: WATTWATCH_JOB_SPEC=/path/job.yaml (without it this does nothing).
#   WATTWATCH_GATE_ARGS  extra gate flags, e.g. "--strict"
#   WATTWATCH            the binary (default /usr/local/bin/wattwatch)
# The gate runs once per job: later steps and tasks of the job, and its restarts after a
# requeue, reuse a pass (a stamp in $TMPDIR named after the cluster and the job id).
# Exit codes: the gate's (0 pass, 1 a check failed, 2 the spec or its data cannot be read).
# Prints nothing on stdout (a TaskProlog's stdout sets the task's environment).
set -euo pipefail

spec=${WATTWATCH_JOB_SPEC:-}
if [[ -z $spec ]]; then
  exit 0
fi
wattwatch=${WATTWATCH:-/usr/local/bin/wattwatch}
job=${SLURM_JOB_ID:-nojob}
stamp="${TMPDIR:-/tmp}/wattwatch-gate-${SLURM_CLUSTER_NAME:-cluster}-${job}.passed"
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
    echo "wattwatch gate: $spec FAILED a check; training not started (report: $report)" >&2
    ;;
  2)
    echo "wattwatch gate: cannot read $spec or its data; training not started (report: $report)" >&2
    ;;
  *)
    echo "wattwatch gate: '$wattwatch gate' exited $rc; training not started (report: $report)" >&2
    ;;
esac
exit "$rc"
