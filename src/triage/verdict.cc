#include "triage/verdict.h"

#include <fmt/format.h>

#include <cmath>

#include "core/format.h"
#include "core/timefmt.h"

namespace ww::triage {

SampleState FinalSampleState(GpuState decided, const SampleContext& c) {
  SampleState out;
  out.state = decided;
  if (c.mode == JobMode::kAllQuiet && out.state == GpuState::kCheckpoint) {
    // Not yet: idle unless training resumes after it (QuietTracker).
    out.state = GpuState::kIdle;
    out.quiet_held = c.quiet_may_checkpoint && c.proc_loaded;
  }
  if (c.one_gpu && (out.state == GpuState::kCommunication || out.state == GpuState::kCompute)) {
    // No peer to talk to: all of it is compute, whatever the power.
    out.state = GpuState::kCompute;
    out.compute_share = 1;
  } else if (out.state == GpuState::kCompute) {
    out.compute_share = c.compute_share;
    // A sample is labelled by what took most of its period; its seconds are split by the share.
    out.state = out.compute_share >= 0.5 ? GpuState::kCompute : GpuState::kCommunication;
  }
  if (c.in_active_hang) out.state = GpuState::kHang;
  return out;
}

bool QuietMayBeCheckpoint(JobMode mode, bool trained, double trained_s, bool one_gpu,
                          std::span<const GpuView> views, int64_t now_ms,
                          const TriageOptions& options) {
  return QuietMayBeCheckpoint(mode, trained, trained_s, one_gpu, true, options) &&
         LiveRanksHoldMemory(views, now_ms, options);
}

bool QuietMayBeCheckpoint(JobMode mode, bool trained, double trained_s, bool one_gpu,
                          bool live_ranks_hold_memory, const TriageOptions& options) {
  return mode == JobMode::kAllQuiet && trained &&
         trained_s >= options.min_training_before_quiet_s && !one_gpu && live_ranks_hold_memory;
}

JobMode CheckpointMode(JobMode mode, bool hang_active) {
  return hang_active ? JobMode::kHangCandidate : mode;
}

bool TooShortToTell(double span_s, double confirm_s) { return span_s < confirm_s; }

std::string TooShortReason(double span_s, int64_t samples, const char* who, double confirm_s) {
  return fmt::format(
      "{} ({} sample{}), too short to tell whether {} hung: a hang is confirmed after {:.0f} s "
      "of spinning with nobody working, so at least {:.0f} s of samples are needed",
      FormatDuration(span_s), samples, samples == 1 ? "" : "s", who, confirm_s,
      std::ceil(confirm_s) + 1);
}

HangVerdict DecideLogVerdict(const LogVerdictInput& in) {
  if (in.hang_seen) return HangVerdict::kConfirmed;
  if (in.snapshot != nullptr) return in.snapshot->verdict;
  if (in.no_gpus || in.held_by_temperature) return HangVerdict::kUnknown;
  // No hang seen: unknown where some GPU's signals cannot show one.
  return in.blind ? HangVerdict::kUnknown : HangVerdict::kNone;
}

std::string LiveJobVerdict(bool hang_active, const std::array<int, kNumGpuStates>& gpu_states) {
  if (hang_active) return "hang";
  if (gpu_states[static_cast<size_t>(GpuState::kCheckpoint)] > 0) return "checkpoint";
  int best = -1;
  int best_n = 0;
  // Ties go to the earlier state in this order: what the job is doing before how it waits.
  for (GpuState s : {GpuState::kCompute, GpuState::kCommunication, GpuState::kDataStarved,
                     GpuState::kIdle, GpuState::kHang}) {
    const int n = gpu_states[static_cast<size_t>(s)];
    if (n > best_n) {
      best_n = n;
      best = static_cast<int>(s);
    }
  }
  return best < 0 ? "unknown" : std::string(StateName(static_cast<GpuState>(best)));
}

std::vector<std::string> LiveJobReasons(const LiveReasonsInput& in) {
  if (in.hang_reasons != nullptr) return *in.hang_reasons;
  std::vector<std::string> out;
  int total = 0;
  std::string parts;
  for (size_t i = 0; i < in.gpu_states.size(); ++i) {
    if (in.gpu_states[i] == 0) continue;
    total += in.gpu_states[i];
    parts += fmt::format("{}{} {}", parts.empty() ? "" : ", ", in.gpu_states[i], kGpuStateNames[i]);
  }
  if (total > 0) {
    out.push_back(fmt::format("{} GPU(s) on {} host(s) at {}: {}", total, in.hosts,
                              FormatIsoMs(in.last_ms, true), parts));
  }
  if (in.candidate_start_ms) {
    out.push_back(fmt::format(
        "every rank spins or is gone since {} ({:.0f} s): a hang once it lasts {:.0f} s",
        FormatIsoMs(*in.candidate_start_ms, true),
        static_cast<double>(in.last_ms - *in.candidate_start_ms) / 1000.0, in.hang_confirm_s));
  }
  return out;
}

}  // namespace ww::triage
