#include "watch/hang_policy.h"

#include <fmt/format.h>

#include <algorithm>

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
                        const std::vector<ProbeState>& probes, const HangPolicyOptions& options,
                        bool needs_process_probe, std::string_view thermal_hold) {
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
  // Peers that cannot be read now, and how long the shortest-lived of those outages has lasted.
  std::vector<const ProbeState*> unknown_peers;
  int64_t unknown_since_ms = INT64_MIN;
  for (const ProbeState& p : probes) {
    if (!p.sees_other_hosts || p.available) continue;
    unknown_peers.push_back(&p);
    const int64_t since = p.unavailable_since_ms == INT64_MIN ? now_ms : p.unavailable_since_ms;
    unknown_since_ms = std::max(unknown_since_ms, since);
  }
  d.quiet_s = static_cast<double>(now_ms - *candidate_start_ms) / 1000.0;
  d.needed_s = process_watched ? options.confirm_proc_s : options.confirm_s;
  if (needs_process_probe && !process_watched) {
    d.verdict = HangVerdict::kWaiting;
    d.reasons.push_back(
        "the GPUs alone cannot tell this from work (one GPU's small kernels, or every rank "
        "quiet for less than --max-checkpoint-s): waiting for a process probe to show nothing "
        "moving");
    return d;
  }
  double unknown_s = 0;
  if (!unknown_peers.empty()) {
    // The local processes cannot see a remote checkpoint: that is what the peer is for.
    d.needed_s = std::max(options.confirm_s, options.peer_unknown_s);
    unknown_s = static_cast<double>(now_ms - unknown_since_ms) / 1000.0;
  }
  const bool peers_out_long_enough = unknown_peers.empty() || unknown_s >= d.needed_s;
  if (d.quiet_s < d.needed_s || !peers_out_long_enough) {
    d.verdict = HangVerdict::kWaiting;
    for (const ProbeState* p : unknown_peers) {
      d.reasons.push_back(fmt::format(
          "{} unreachable ({}): a checkpoint over there cannot be ruled out; confirming only "
          "after {:.0f} s without it (--peer-unknown-s)",
          p->kind, p->last_detail, d.needed_s));
    }
    return d;
  }
  if (!thermal_hold.empty()) {
    // A spinning rank still as hot as it computes is working (triage/thermal.h): no kill for it.
    d.verdict = HangVerdict::kWaiting;
    d.reasons.emplace_back(thermal_hold);
    return d;
  }
  d.verdict = HangVerdict::kConfirm;
  if (needs_process_probe) {
    d.reasons.push_back(fmt::format(
        "no kernels that move anything, no I/O, no log lines: the job's processes showed no "
        "progress for {:.0f} s",
        d.quiet_s));
  }
  for (const ProbeState& p : probes) {
    if (!p.available && p.sees_other_hosts) {
      const int64_t since = p.unavailable_since_ms == INT64_MIN ? now_ms : p.unavailable_since_ms;
      d.reasons.push_back(fmt::format(
          "{}: unreachable for {:.0f} s ({}); confirmed without it after {:.0f} s "
          "(--peer-unknown-s), as the GPUs and every other probe agree",
          p.kind, static_cast<double>(now_ms - since) / 1000.0, p.last_detail, d.needed_s));
    } else if (!p.available) {
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
  } else if (process_watched && unknown_peers.empty()) {
    d.reasons.push_back(fmt::format(
        "the job's processes moved nothing for {:.0f} s (--confirm-proc-s)", d.quiet_s));
  }
  return d;
}

}  // namespace ww::watch
