// The live watcher's hang confirmation: pure decision logic (house rule 6),
// table-tested.
//
// The GPUs alone say "every rank spins or is gone" (the triage engine's hang
// candidate). Progress probes then decide: any probe that moved after the
// candidate began means the job is alive (a checkpoint, a slow step) and the
// candidate is dismissed. Otherwise the hang is confirmed once the candidate
// has lasted confirm_s (default 60 s), or confirm_proc_s (default 30 s) when a
// process probe is reading the job's processes and sees nothing move.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ww::watch {

struct HangPolicyOptions {
  double confirm_s = 60;
  double confirm_proc_s = 30;
};

struct ProbeState {
  std::string kind;
  bool available = false;  // the last poll read its signal
  bool watches_process = false;
  int64_t last_moved_ms = INT64_MIN;
  bool last_move_was_write = false;
  std::string last_detail;       // the last poll's detail
  std::string last_move_detail;  // what moved last time it moved
};

enum class HangVerdict { kNoCandidate, kWaiting, kConfirm, kDismiss };

struct HangDecision {
  HangVerdict verdict = HangVerdict::kNoCandidate;
  double quiet_s = 0;                // how long the candidate has lasted with no progress
  double needed_s = 0;               // how long it must last
  std::vector<std::string> reasons;  // for kConfirm: the probes' evidence; kDismiss: what moved
};

HangDecision DecideHang(int64_t now_ms, std::optional<int64_t> candidate_start_ms,
                        const std::vector<ProbeState>& probes, const HangPolicyOptions& options);

const char* HangVerdictName(HangVerdict v);

}  // namespace ww::watch
