// TriageOptions: every threshold the triage engine decides by, in one place, with its unit in the
// name. The per-sample thresholds of the classifier are `thresholds`; the rest are about time:
// windows, debounces, how long a state must last to count. Defaults are the values the simulator
// scenarios and the real traces were tuned on (tests/triage); change them only with those tests.
// Plain value type; copy freely.
#pragma once

#include "triage/classifier.h"

namespace ww::triage {

struct TriageOptions {
  Thresholds thresholds;
  // Spin with nobody working this long is a hang. 29, not 30: power.draw is a ~1 s average, so
  // a spin is seen up to a second after it began; this confirms 30 s after the real start, as
  // the watcher's --confirm-s does (detected_at <= start + 30 s at 100 ms sampling).
  double hang_confirm_s = 29;
  double window_s = 12;     // centered window for burst/gap patterns
  double min_run_s = 0.3;   // a burst or gap shorter than this is a blip
  double min_spin_s = 1.0;  // a shorter spin is an ordinary collective
  double debounce_s = 2;    // a hang candidate survives interruptions shorter than this
  // A longer gap in a GPU's samples (and longer than stale_intervals of its spacing) is no data.
  double max_gap_s = 10;
  // No GPU of the job sampled for longer than this (or stale_intervals of the sample spacing):
  // a gap in the input. Open episodes end where it starts; nothing is counted across it.
  double job_gap_s = 30;
  double stale_s = 5;  // a GPU silent this long is left out of job decisions
  // No checkpoint takes longer than this: peers spinning on quiet ranks (a partial hang: one
  // pipeline stage or communicator stuck) or every rank quiet holding memory after training (a
  // stall off the GPU: a data loader deadlock, a hung filesystem) for longer is a hang, labelled
  // from the moment the wait began (samples are held back that long to allow it).
  double max_checkpoint_s = 1800;
  double culprit_margin_s = 1.5;  // ranks that started spinning this close to the last one
  // A GPU of the job that fell silent (no sample past its stale limit: a node that crashed, a
  // logger that died) at most this long before its peers began waiting is part of their hang:
  // named as the one that stopped reporting, its GPU-hours counted to the hang's end. The
  // confirmation window: a rank cannot train that long after a peer has gone, as every step
  // needs its collectives.
  double stopped_reporting_window_s = 30;
  // Utilization is averaged over +-this around a sample to tell "no kernels" from "some": a saving
  // rank's copy kernels make single 100 ms readings of 10-30 %, which alone would read as work.
  double util_smoothing_half_s = 0.5;
  // The centered window reaches at least this many sample intervals to each side, so a coarse
  // log (1 s samples) still has enough samples in it to see bursts and gaps.
  double min_half_window_intervals = 2.5;
  // A GPU counts as stale after at least this many sample intervals without a sample (stale_s is
  // too short for a coarse log: one late row would drop the GPU from the job).
  double stale_intervals = 3;
  // Sample spacing is tracked as an EWMA with this weight for the newest gap, each gap capped at
  // max_interval_s: one long pause in a log (a restart) must not make the windows huge.
  double interval_ewma_weight = 0.05;
  double max_interval_s = 60;
  // Above this sample spacing the communication share is reported as unknown, with the reason:
  // power.draw averages ~1 s, so a reading every 15 s samples 1 s of the 15 and the split of
  // the other 14 is a guess (measured: off by up to 0.6 at 30 s on the simulator).
  double comm_share_max_interval_s = 2.0;
  // Every process of the job gone this long: the job is over, and a relaunch starts afresh (a
  // quiet period before its first compute is start-up again, not a checkpoint).
  double job_end_s = 5;
  // A checkpoint that resumes within this of the previous one's end is the same checkpoint (a
  // saving rank's bursts of copy kernels briefly look like work); an open one closes after this
  // long without checkpoint evidence.
  double checkpoint_merge_s = 3;
  // A checkpoint lasts at least this long, one sample interval included (a reading stands for
  // the interval before it): every rank quiet holding memory for less between two stretches of
  // training is a pause at a step boundary (logging, a barrier before the save), not a save, and
  // a shorter wait on a quiet rank is not listed as a checkpoint. Real saves take seconds: the
  // shortest in the real traces is 15 s.
  double min_checkpoint_s = 2;
  // A spin still unconfirmed when the input ends gets a note for the user from this long on;
  // shorter ones are ordinary waits not worth a line.
  double unconfirmed_spin_note_s = 5;
  // A log that ends in this long of every rank quiet holding memory (after training) gets a note:
  // idle by the rule, but a stall or a save still in progress to an operator. A minute: longer
  // than the gaps between steps and the saves of small models, shorter than a stuck job's wait.
  double unresolved_quiet_note_s = 60;
  // A signal (power, utilization, memory, ...) counts as logged for a GPU when at least this share
  // of its samples carry it; below, the states it separates are reported as not told apart.
  double evidence_min_signal_share = 0.5;
  // Host clocks (host_clock.h): a host moment is at least this share of a host's GPUs starting
  // or stopping work within this window; moments of two hosts further apart than max_host_skew_s
  // are not the same moment; offsets within skew_agree_s of the median agree, and at least
  // min_skew_matches must; a skew above skew_warn_s gets a note (sampling jitter and the 1 s
  // power average keep honest clocks within about a second).
  double host_moment_gpu_share = 0.75;
  double host_moment_window_s = 1.0;
  double max_host_skew_s = 120;
  double skew_agree_s = 1.0;
  int min_skew_matches = 2;
  double skew_warn_s = 2.0;
  // Every rank quiet holding memory counts as a checkpoint only after this many GPU-seconds of
  // training: a moment of kernels while weights load, then quiet, is start-up (the real H100
  // traces: a 2.7 s quiet stretch after load-time copies, before the first step).
  double min_training_before_quiet_s = 10;
  // Ranks in the whole job; 0 (or fewer than the GPUs the input shows holding the job): those.
  // A job of one GPU has no peer to wait on: no `communication`, and its pegged low-power stretches
  // (small kernels keep utilization pegged at low power too) are no hang on telemetry alone. A log
  // of one node of a larger job says so with world_size above its GPU count: its ranks then wait on
  // peers the log does not show, and one GPU of a 16-rank job spinning is a collective again.
  int world_size = 0;
  // false: the engine never confirms a hang by itself; the caller (the live watcher, which also
  // has progress probes) calls ConfirmHangCandidate or DismissHangCandidate.
  bool auto_confirm = true;
};

}  // namespace ww::triage
