#include "watch/kill_sequence.h"

#include <signal.h>
#include <spdlog/spdlog.h>

#include <algorithm>

#include "watch/actions.h"

namespace ww::watch {

KillSequence::KillSequence(KillTarget* target, Clock* clock, KillOptions options, EventSink event)
    : target_(target), clock_(clock), o_(std::move(options)), event_(std::move(event)) {}

bool KillSequence::WaitExit(double seconds, const std::atomic<bool>* stop) {
  const int64_t poll_ns = std::max<int64_t>(1, o_.poll_interval_ms) * 1'000'000;
  const int64_t deadline_ns = clock_->NowMonotonicNs() + static_cast<int64_t>(seconds * 1e9);
  for (;;) {
    if (target_->exited()) return true;
    if (stop->load()) return false;
    const int64_t now_ns = clock_->NowMonotonicNs();
    if (now_ns >= deadline_ns) return false;
    clock_->SleepUntilMonotonicNs(std::min(deadline_ns, now_ns + poll_ns));
  }
}

KillOutcome KillSequence::Run(const std::atomic<bool>* stop) {
  const pid_t pid = target_->pid();
  if (!o_.pyspy_path.empty()) {
    spdlog::warn("diagnostics: py-spy dump of process {} and its children", pid);
    auto rc = RunCommand({o_.pyspy_path, "dump", "--pid", std::to_string(pid), "--subprocesses"},
                         {}, o_.diag_timeout_s, o_.diag_output);
    nlohmann::json ev = {{"event", "diagnostics"}, {"tool", "py-spy"}, {"pid", pid}};
    if (rc.ok()) {
      ev["exit_code"] = *rc;
    } else {
      ev["error"] = rc.status().message();
    }
    if (!o_.diag_output.empty()) ev["output"] = o_.diag_output;
    event_(ev);
  } else if (o_.diag_signal) {
    spdlog::warn("diagnostics: py-spy not installed; sending signal {} to the job",
                 *o_.diag_signal);
    target_->SignalGroup(*o_.diag_signal);
    event_({{"event", "diagnostics"}, {"signal", *o_.diag_signal}, {"pid", pid}});
    WaitExit(o_.diag_signal_wait_s, stop);
  }
  // A stop request does not cancel the SIGTERM: the hang is confirmed and the job must go.
  if (target_->exited()) return KillOutcome::kExitedBeforeTerm;
  spdlog::warn("stopping the job: SIGTERM to process group {}", pid);
  event_({{"event", "kill"}, {"signal", "SIGTERM"}, {"pgid", pid}});
  target_->SignalGroup(SIGTERM);
  if (WaitExit(o_.kill_grace_s, stop)) return KillOutcome::kExitedAfterTerm;
  if (stop->load()) return KillOutcome::kStopped;
  spdlog::warn("job still running {:.0f} s after SIGTERM: SIGKILL", o_.kill_grace_s);
  event_({{"event", "kill"}, {"signal", "SIGKILL"}, {"pgid", pid}});
  target_->SignalGroup(SIGKILL);
  return KillOutcome::kSigkilled;
}

const char* KillOutcomeName(KillOutcome outcome) {
  switch (outcome) {
    case KillOutcome::kExitedBeforeTerm:
      return "exited_before_term";
    case KillOutcome::kExitedAfterTerm:
      return "exited_after_term";
    case KillOutcome::kSigkilled:
      return "sigkilled";
    case KillOutcome::kStopped:
      return "stopped";
  }
  return "?";
}

}  // namespace ww::watch
