// The live watcher's hang confirmation: pure decision logic (house rule 6), table-tested.
//
// The GPUs alone say "every rank spins or is gone" (the triage engine's hang candidate). Progress
// probes then decide: any probe that moved after the candidate began means the job is alive (a
// checkpoint, a slow step) and the candidate is dismissed. Otherwise the hang is confirmed once the
// candidate has lasted confirm_s (default 30 s), or confirm_proc_s (default 15 s) when a process
// probe is reading the job's processes and sees nothing move.
//
// A probe that sees other hosts (a --peer) is the one signal that can tell a remote rank-0
// checkpoint from a hang; while it cannot be read, what it would say is unknown, never "no
// progress". The hang is then confirmed only once the candidate has lasted peer_unknown_s (default
// 300 s, at least confirm_s), the peer has been unreachable that long, and no other signal moved;
// the reasons say that it was confirmed without the peer.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ww::watch {

struct HangPolicyOptions {
  double confirm_s = 30;
  double confirm_proc_s = 15;
  double peer_unknown_s = 300;  // with a peer unreachable: how long before confirming without it
};

struct ProbeState {
  std::string kind;
  bool available = false;  // the last poll read its signal
  bool watches_process = false;
  bool sees_other_hosts = false;  // a peer: unknown, not quiet, while it cannot be read
  int64_t last_moved_ms = INT64_MIN;
  int64_t unavailable_since_ms = INT64_MIN;  // since when it has not been read; MIN: it is
  bool last_move_was_write = false;
  std::string last_detail;       // the last poll's detail
  std::string last_move_detail;  // what moved last time it moved
};

enum class HangVerdict { kNoCandidate, kWaiting, kConfirm, kDismiss };

struct HangDecision {
  HangVerdict verdict = HangVerdict::kNoCandidate;
  double quiet_s = 0;   // how long the candidate has lasted with no progress
  double needed_s = 0;  // how long it must last
  // kConfirm: the probes' evidence; kDismiss: what moved; kWaiting: why longer than usual
  std::vector<std::string> reasons;
};

// needs_process_probe: telemetry alone cannot call this candidate (a job of one GPU pegged at low
// power, every rank quiet holding memory for less than --max-checkpoint-s): it is confirmed only
// by a process probe that is read and sees nothing move for confirm_proc_s; without one it waits.
// thermal_hold (HangCandidate::thermal_hold): a spinning rank is still as hot as it computes, so
// what would be a confirmation waits, with that reason; progress still dismisses.
HangDecision DecideHang(int64_t now_ms, std::optional<int64_t> candidate_start_ms,
                        const std::vector<ProbeState>& probes, const HangPolicyOptions& options,
                        bool needs_process_probe = false, std::string_view thermal_hold = {});

const char* HangVerdictName(HangVerdict v);

}  // namespace ww::watch
