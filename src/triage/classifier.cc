#include "triage/classifier.h"

#include <algorithm>

namespace ww::triage {

ProcState ClassifyProc(std::optional<double> mem_used_mib, double peak_mem_mib,
                       const Thresholds& t) {
  if (!mem_used_mib) return ProcState::kUnknown;
  const double m = *mem_used_mib;
  const bool had_model = peak_mem_mib >= t.loaded_mem_mib;
  if (had_model && m < t.released_mem_frac * peak_mem_mib) {
    return m < t.process_mem_mib ? ProcState::kNone : ProcState::kReleased;
  }
  if (m < t.process_mem_mib) return ProcState::kNone;
  if (m < t.loaded_mem_mib) return ProcState::kContext;
  return ProcState::kLoaded;
}

LocalClass ClassifyLocal(const LocalInput& in, const Thresholds& t) {
  const bool no_process = in.proc == ProcState::kNone || in.proc == ProcState::kReleased;
  if (!in.util_pct) {
    // Power alone: working power means kernels; otherwise nothing we can call busy.
    if (in.power_frac && *in.power_frac >= t.busy_power_frac) return LocalClass::kBusy;
    return no_process ? LocalClass::kGone : LocalClass::kLow;
  }
  const double u = *in.util_pct;
  if (no_process && u < t.busy_util_pct) return LocalClass::kGone;
  if (u >= t.spin_util_pct && in.sm_activity) {
    // The SMs say what the engine's "busy" is: polling (a spin) or work.
    const double sm = *in.sm_activity;
    if (sm < t.spin_sm_activity_max) return LocalClass::kSpin;
    if (sm >= t.spin_sm_activity_band_max) return LocalClass::kBusy;
    if (in.tensor_activity) {
      const bool waiting = *in.tensor_activity < t.spin_tensor_activity_max &&
                           (!in.dram_activity || *in.dram_activity < t.spin_dram_activity_max);
      return waiting ? LocalClass::kSpin : LocalClass::kBusy;
    }
    // NCCL's few SMs or light kernels: power decides, below.
  }
  if (u >= t.spin_util_pct && in.power_frac &&
      *in.power_frac < std::max(t.spin_power_frac, in.spin_power_frac.value_or(0)) &&
      (!in.spin_ceiling_frac || *in.power_frac < *in.spin_ceiling_frac)) {
    return LocalClass::kSpin;
  }
  if (u >= t.busy_util_pct) return LocalClass::kBusy;
  if (u < t.low_util_pct) return LocalClass::kLow;
  return LocalClass::kPartial;
}

bool MovesData(std::optional<double> util_mem_pct, std::optional<double> link_bytes_per_s,
               const Thresholds& t) {
  return (util_mem_pct && *util_mem_pct >= t.spin_mem_util_max_pct) ||
         (link_bytes_per_s && *link_bytes_per_s >= t.spin_link_bytes_per_s_max);
}

bool IsStarved(const WindowStats& w, LocalClass now, ProcState proc, const Thresholds& t) {
  if (proc == ProcState::kNone || proc == ProcState::kReleased) return false;
  // A spin is allowed: a burst after a gap starts at low power (power is a ~1 s average) with
  // utilization already pegged. A long spin reads ~100 % and fails the band below.
  if (now == LocalClass::kGone) return false;
  if (w.samples < t.starve_min_samples || w.util_samples == 0) return false;
  // The GPU works part of the time...
  const double mean_util = w.util_sum / w.util_samples;
  if (mean_util < t.starve_util_lo_pct || mean_util > t.starve_util_hi_pct) return false;
  // ...in repeated bursts and gaps (fine sampling), or with utilization that keeps reading in
  // between (coarse sampling averages a burst and a gap into one reading). One change of phase
  // (training stops for a checkpoint) is neither.
  if (w.transitions >= t.starve_min_transitions && w.busy > 0 && w.low > 0) return true;
  return std::max(w.partial, w.midband) * 100 >= w.samples * t.starve_partial_pct;
}

std::optional<PowerBandEdges> BandEdges(double floor_w, double compute_level_w,
                                        double design_range_w, const Thresholds& t) {
  const double span = compute_level_w - floor_w;
  if (!(design_range_w > 0) || !(span >= t.eval_min_span_frac * design_range_w)) {
    return std::nullopt;
  }
  return PowerBandEdges{floor_w + t.eval_rest_frac * span, floor_w + t.eval_high_frac * span};
}

PowerBand PlacePowerBand(double power_w, double floor_w, double compute_level_w,
                         double design_range_w, const Thresholds& t) {
  return PlacePowerBand(power_w, BandEdges(floor_w, compute_level_w, design_range_w, t));
}

JobMode ClassifyJob(const JobCounts& c) {
  if (c.active == 0) return JobMode::kNoJob;
  const int alive = c.active - c.gone;
  if (alive == 0) return JobMode::kNoJob;
  if (c.spin > 0) {
    if (c.spin + c.gone + c.blind == c.active) return JobMode::kHangCandidate;
    if (c.busy + c.partial + c.starved > 0) return JobMode::kStragglerWait;
    // Starved-quiet ranks are waited on only when the spinning ranks outnumber them: one rank
    // spinning while three starved ones are quiet (a 4-GPU inference server between bursts at
    // 15 s) is no save.
    if (c.starved_quiet > c.spin) return JobMode::kStragglerWait;
    return JobMode::kCheckpointWait;  // the rest are alive without kernels
  }
  if (c.low == alive) return JobMode::kAllQuiet;  // (a starved-quiet rank is working here)
  return JobMode::kWorking;
}

GpuState DecideState(LocalClass local, bool starved, JobMode mode, bool trained, bool loaded) {
  if (local == LocalClass::kGone) return GpuState::kIdle;
  // A starved-quiet rank its peers wait on (ClassifyJob) is saving.
  if (starved && !(local == LocalClass::kLow && mode == JobMode::kCheckpointWait && loaded)) {
    return GpuState::kDataStarved;
  }
  switch (local) {
    case LocalClass::kSpin:
      return mode == JobMode::kCheckpointWait ? GpuState::kCheckpoint : GpuState::kCommunication;
    case LocalClass::kBusy:
      return GpuState::kCompute;
    case LocalClass::kPartial:
      return GpuState::kCompute;
    case LocalClass::kLow:
      if (mode == JobMode::kCheckpointWait && loaded) return GpuState::kCheckpoint;
      if (mode == JobMode::kAllQuiet && trained && loaded) return GpuState::kCheckpoint;
      return GpuState::kIdle;
    case LocalClass::kGone:
      break;
  }
  return GpuState::kIdle;
}

double ComputeShare(double power_w, double comm_level_w, double compute_level_w) {
  if (compute_level_w <= comm_level_w + 1e-9) return 1.0;
  // Deliberately not clamped to [0, 1]: sensor noise around either level then cancels when
  // shares are summed into seconds (clamping would bias the sum towards the middle). Only
  // outliers (transients far outside the two levels) are bounded.
  return std::clamp((power_w - comm_level_w) / (compute_level_w - comm_level_w), -0.25, 1.25);
}

}  // namespace ww::triage
