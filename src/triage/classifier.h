// The decision logic, pure: features in, classes and states out. No I/O, no clocks, no state, so
// it is table-tested and the same code serves offline triage and the live watcher.
//
// Two levels:
//   1. Per GPU (ClassifyLocal): what this board is doing now, from utilization, power relative to
//      its calibrated range, and whether a process holds memory.
//   2. Per job (ClassifyJob): what the job is doing, from every GPU's local class. A spinning GPU
//      means "waiting in a collective"; who it waits on decides whether that is communication
//      (a rank still computing), a checkpoint (a live rank holding memory, not computing) or a
//      hang (nobody left working).
#pragma once

#include <optional>

#include "core/state.h"

namespace ww::triage {

struct Thresholds {
  double spin_util_pct = 90;  // a spinning collective reads (nearly) 100 %
  // ... at low power: below this share of [floor, top], or below the board's own threshold
  // learned from the trace (calibration.h) where that is higher. 0.28: an A100 spins at ~0.25
  // of its range (~35 % of its limit), an H100 at ~0.12; collectives moving data sit at ~0.33.
  double spin_power_frac = 0.28;
  double busy_util_pct = 50;       // at or above: kernels run most of the sample period
  double low_util_pct = 20;        // below: no kernels to speak of (a saving rank reads 0-10 %)
  double process_mem_mib = 300;    // below: no process (the driver alone holds ~0-130 MiB)
  double released_mem_frac = 0.3;  // below this share of the GPU's peak: the process let go
  double loaded_mem_mib = 2048;    // a peak above this means a model was loaded
  double comm_level_frac = 0.33;   // NCCL moving data draws ~1/3 of the board's design range
  double starve_util_lo_pct = 15;  // mean utilization of a starving GPU sits in between
  double starve_util_hi_pct = 85;
  int starve_min_transitions = 2;  // busy<->low flips in the window that mean bursts with gaps
  // Coarse sampling averages a burst and a gap into one in-between reading: this share (%) of
  // partial readings in the window means starvation too.
  int starve_partial_pct = 30;
  int starve_min_samples = 3;     // a window with fewer samples says nothing about a pattern
  double busy_power_frac = 0.45;  // without utilization, power at this share of the range: kernels
  // DCGM's SM activity (the share of SMs with a warp, averaged over its interval) below this at
  // pegged utilization: a polling kernel on a few SMs, i.e. a spin, whatever the power says.
  // Averaged over 15-30 s this is the better signal: power there is one ~1 s reading of it.
  double spin_sm_activity_max = 0.08;
  // A rank inside an NCCL collective keeps one CTA per channel resident, waiting or moving data
  // (16-32 of an H100's 132 SMs): SM activity ~0.1-0.25, tensor activity ~0; compute reads
  // ~0.8-0.95 SM. Up to this SM activity, tensor activity below spin_tensor_activity_max and
  // DRAM activity below spin_dram_activity_max (a transfer streams its buffers through DRAM; a
  // wait polls one flag) say spin; without a tensor reading the band is left to power.
  double spin_sm_activity_band_max = 0.3;
  double spin_tensor_activity_max = 0.05;
  double spin_dram_activity_max = 0.1;
  // At or above these, a pegged low-power reading moves memory or bytes (MovesData): a rank
  // waiting in a collective polls a flag and moves neither; a molecular-dynamics or CFD code
  // pegged at 25-30 % of its limit keeps a few percent of memory utilization and steady PCIe
  // traffic. Such a "spin" never makes a hang or a checkpoint wait (job_eval.h).
  double spin_mem_util_max_pct = 3;
  double spin_link_bytes_per_s_max = 50e6;
  // Bursts and gaps whose power never leaves the middle are work, not starvation (an evaluation
  // pass: forward-only batches at moderate power with host-side gaps shorter than power's ~1 s
  // average). Power is placed on [floor, the GPU's compute level], and readings at utilization
  // below pegged are looked at: a starving GPU's waits last long enough to fall to its rest (at or
  // below eval_rest_frac) or its gaps still read a training step's power (at or above
  // eval_high_frac); an evaluation pass does neither. Only where the GPU's compute level stands at
  // least eval_min_span_frac of the board's design range above its floor (the log showed real
  // work to compare with).
  double eval_rest_frac = 0.25;
  double eval_high_frac = 0.6;
  double eval_min_span_frac = 0.3;
  // Where sampling resolves bursts (at most this interval), one run of high readings is allowed:
  // the end of the training step before the pass, its power lagging into the first gaps.
  double eval_lag_run_max_interval_s = 2;
  // Or, without the starvation pattern (gaps shorter than the debounce): at least this many dips
  // of utilization below spin_util_pct in the window. A training GPU reads pegged utilization
  // through its collectives; an evaluation pass dips between batches.
  int eval_min_dips = 3;
};

// The reading moved memory or bytes over PCIe/NVLink (each when logged): Thresholds above.
bool MovesData(std::optional<double> util_mem_pct, std::optional<double> link_bytes_per_s,
               const Thresholds& t);

// What the memory reading says about the process on this GPU.
enum class ProcState : uint8_t {
  kUnknown,   // memory.used not logged
  kNone,      // no process
  kContext,   // a CUDA context, no model (launch, data prep, or peers' contexts)
  kLoaded,    // model in memory
  kReleased,  // held a model earlier, let most of it go: the process exited
};

ProcState ClassifyProc(std::optional<double> mem_used_mib, double peak_mem_mib,
                       const Thresholds& t);

enum class LocalClass : uint8_t {
  kGone,     // no process (none, or released)
  kLow,      // process alive (or unknown), no kernels
  kPartial,  // kernels part of the sample period
  kSpin,     // pegged utilization at low power: waiting in a collective
  kBusy,     // kernels most of the period at working power
};

struct LocalInput {
  std::optional<double> util_pct;
  std::optional<double> power_frac;  // power normalized to [floor, top]
  ProcState proc = ProcState::kUnknown;
  // The board's own spin threshold (power fraction), learned from the trace; used where it is
  // above Thresholds::spin_power_frac.
  std::optional<double> spin_power_frac;
  // No board waits in a collective above this power fraction (an unknown board: the highest
  // measured spin of any board); a pegged reading above it is work. nullopt: no ceiling.
  std::optional<double> spin_ceiling_frac;
  std::optional<double> sm_activity;      // DCGM SM activity, 0..1, when logged
  std::optional<double> tensor_activity;  // DCGM tensor pipe activity, 0..1, when logged
  std::optional<double> dram_activity;    // DCGM DRAM activity, 0..1, when logged
};

LocalClass ClassifyLocal(const LocalInput& in, const Thresholds& t);

// Counts over a centered window of one GPU's local classes.
struct WindowStats {
  int samples = 0;
  int busy = 0;  // kBusy or kSpin
  int low = 0;
  int partial = 0;
  int transitions = 0;  // busy<->low flips between consecutive samples
  // Readings between low_util_pct and spin_util_pct: kernels part of the period. At 15-30 s
  // sampling a starving GPU reads 30-70 % (bursts and waits averaged into one reading) where a
  // training GPU reads ~100 % (collectives count as busy), so these mean starvation too.
  int midband = 0;
  double util_sum = 0;
  int util_samples = 0;
  // Power readings against the GPU's compute level (PowerBand): how many could not be placed, how
  // many sat at rest while utilization read below pegged (a wait for input), how many reached the
  // compute level while utilization read below pegged (the power of a training step that just
  // ended), and in how many runs. All placed, no rest and no such reading (where sampling
  // resolves bursts: at most one run, the end of the training before an evaluation pass) in a
  // bursty window is bursty work.
  int power_unplaced = 0;
  int power_rest = 0;
  int power_high = 0;
  int power_high_runs = 0;
  int dips = 0;  // utilization falling below spin_util_pct from pegged
};

// Where one power reading sits between the GPU's floor and its compute level (Thresholds::eval_*).
enum class PowerBand : uint8_t { kUnknown, kRest, kMiddle, kHigh };
// The band's edges in watts for one calibration (the engine keeps them while it holds): at or
// below rest_w is rest, at or above high_w high. nullopt where the compute level stands less than
// eval_min_span_frac of the design range above the floor (no real work seen to compare with).
struct PowerBandEdges {
  double rest_w;
  double high_w;
};
std::optional<PowerBandEdges> BandEdges(double floor_w, double compute_level_w,
                                        double design_range_w, const Thresholds& t);
inline PowerBand PlacePowerBand(double power_w, const std::optional<PowerBandEdges>& edges) {
  if (!edges || !(power_w == power_w)) return PowerBand::kUnknown;  // (NaN: not logged)
  if (power_w <= edges->rest_w) return PowerBand::kRest;
  return power_w >= edges->high_w ? PowerBand::kHigh : PowerBand::kMiddle;
}
PowerBand PlacePowerBand(double power_w, double floor_w, double compute_level_w,
                         double design_range_w, const Thresholds& t);

// A bursty window (starved: IsStarved; or dipping, Thresholds::eval_min_dips) whose power stayed
// in the middle: work in bursts (an evaluation pass), not a GPU waiting for its input nor a rank
// splitting its time with collectives (Thresholds::eval_*). interval_s: the sample spacing.
// Inline: GpuWindows asks it for every sample, and nearly every answer is the first line's.
inline bool IsBurstyWork(const WindowStats& w, bool starved, double interval_s,
                         const Thresholds& t) {
  if (!starved && w.dips < t.eval_min_dips) return false;
  // Every sample of the window placed, none at rest, none reaching the compute level but the
  // training step before the pass where sampling resolves it.
  const bool resolves_bursts = interval_s <= t.eval_lag_run_max_interval_s;
  return w.samples >= t.starve_min_samples && w.power_unplaced == 0 && w.power_rest == 0 &&
         (resolves_bursts ? w.power_high_runs <= 1 : w.power_high == 0);
}

// Bursts separated by waits while a process is alive: the input pipeline can't keep up.
bool IsStarved(const WindowStats& w, LocalClass now, ProcState proc, const Thresholds& t);

enum class JobMode : uint8_t {
  kNoJob,           // no GPU of the job is active
  kWorking,         // ranks compute; nobody waits for long
  kStragglerWait,   // some ranks spin while others still compute
  kCheckpointWait,  // ranks spin while live ranks hold memory without computing
  kAllQuiet,        // every live rank holds memory without kernels (all-rank checkpoint, or
                    // before training)
  kHangCandidate,   // every active rank spins or has exited: nobody left to make progress
};

struct JobCounts {
  int active = 0;  // GPUs of the job with a recent sample
  int spin = 0;
  int busy = 0;
  int partial = 0;
  int low = 0;   // alive, no kernels
  int gone = 0;  // exited after having worked in this job
  int starved = 0;
  // Starved by its window but quiet now holding memory, at sampling coarser than a step: with
  // more peers spinning than such ranks, it is a rank they wait on (a checkpoint wait);
  // otherwise it counts as starved (working).
  int starved_quiet = 0;
  // Busy by utilization alone (no power, no activity counters): computing or spinning, unknown.
  // Such ranks neither block a checkpoint wait nor make one: the job's mode comes from the rest.
  int blind = 0;
};

JobMode ClassifyJob(const JobCounts& c);

// The state of one GPU's sample, given its local class and the job's mode.
// trained: the job computed before (a quiet period after training is a checkpoint, before it is
// start-up). loaded: the GPU holds a model (not only a context).
GpuState DecideState(LocalClass local, bool starved, JobMode mode, bool trained, bool loaded);

// For a busy sample: the share of the sample period spent computing rather than communicating,
// by where power sits between the communication level and the GPU's compute level. Power is a
// ~1 s average, so a sample mixing both reads in between; the split keeps seconds right. The
// result may lie slightly outside [0, 1] (noise), so that sums of shares are unbiased.
double ComputeShare(double power_w, double comm_level_w, double compute_level_w);

}  // namespace ww::triage
