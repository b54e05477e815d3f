#include "watch/hang_policy.h"

#include <fmt/format.h>

namespace ww::watch {

const char* HangVerdictName(HangVerdict v) {
  switch (v) {
    case HangVerdict::kNoCandidate:
      return "no_candidate";
    case HangVerdict::kWaiting:
      return "waiting";
    case HangVerdict::kConfirm:
      return "confirm";
    case HangVerdict::kDismiss:
      return "dismiss";
  }
  return "?";
}

HangDecision DecideHang(int64_t now_ms, std::optional<int64_t> candidate_start_ms,
                        const std::vector<ProbeState>& probes, const HangPolicyOptions& options) {
  HangDecision d;
  if (!candidate_start_ms) return d;
  for (const ProbeState& p : probes) {
    if (p.last_moved_ms != INT64_MIN && p.last_moved_ms >= *candidate_start_ms) {
      d.verdict = HangVerdict::kDismiss;
      d.reasons.push_back(
          fmt::format("{} moved {:.0f} s into the GPU wait{}: {}", p.kind,
                      static_cast<double>(p.last_moved_ms - *candidate_start_ms) / 1000.0,
                      p.last_move_was_write ? " (writes: a checkpoint)" : "", p.last_move_detail));
      return d;
    }
  }
  bool process_watched = false;
  for (const ProbeState& p : probes) process_watched |= p.watches_process && p.available;
  d.quiet_s = static_cast<double>(now_ms - *candidate_start_ms) / 1000.0;
  d.needed_s = process_watched ? options.confirm_proc_s : options.confirm_s;
  if (d.quiet_s < d.needed_s) {
    d.verdict = HangVerdict::kWaiting;
    return d;
  }
  d.verdict = HangVerdict::kConfirm;
  for (const ProbeState& p : probes) {
    if (!p.available) {
      d.reasons.push_back(fmt::format("{}: no signal ({})", p.kind, p.last_detail));
    } else if (p.last_moved_ms == INT64_MIN) {
      d.reasons.push_back(
          fmt::format("{}: no progress since the watch began; {}", p.kind, p.last_detail));
    } else {
      d.reasons.push_back(fmt::format("{}: no progress for {:.0f} s; {}", p.kind,
                                      static_cast<double>(now_ms - p.last_moved_ms) / 1000.0,
                                      p.last_detail));
    }
  }
  if (probes.empty()) {
    d.reasons.push_back(
        fmt::format("no progress probe configured: confirmed on GPU telemetry alone after {:.0f} s "
                    "(--progress-log, --heartbeat or --pid make this faster and surer)",
                    d.needed_s));
  } else if (process_watched) {
    d.reasons.push_back(fmt::format(
        "the job's processes moved nothing for {:.0f} s (--confirm-proc-s)", d.quiet_s));
  }
  return d;
}

}  // namespace ww::watch
