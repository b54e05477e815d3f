// KillSequence: how `wattwatch run` stops a job it confirmed hung. Diagnostics first (py-spy dump
// of the job's processes, or --diag-signal), then SIGTERM to the job's process group, then SIGKILL
// once kill_grace_s has passed with the job still there. Every wait is on the Clock, so a test
// drives the grace period with a ManualClock instead of waiting it out.
//
// Ownership: borrows the target, the clock and the stop flag (all must outlive Run).
// Thread-safety: Run on one thread (the watcher's kill thread); the stop flag from any.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "core/clock.h"

namespace ww::watch {

// The job as the kill sequence sees it: ChildProcess in production, a scripted job in tests.
class KillTarget {
 public:
  virtual ~KillTarget() = default;
  virtual pid_t pid() const = 0;
  // Whether the job's leader is known to have exited (the watcher's loop reaps it).
  virtual bool exited() const = 0;
  // To the job's whole process group.
  virtual void SignalGroup(int sig) const = 0;
};

struct KillOptions {
  double kill_grace_s = 30;        // between SIGTERM and SIGKILL
  std::optional<int> diag_signal;  // sent first when py-spy is not installed; nullopt: none
  double diag_signal_wait_s = 2;   // time the job gets to write its stacks after diag_signal
  std::string pyspy_path;          // py-spy to run for stacks; empty: not installed
  std::string diag_output;         // where py-spy's dump goes; empty: stderr
  double diag_timeout_s = 30;      // py-spy's own time limit
  int64_t poll_interval_ms = 20;   // how often the wait looks whether the job exited
};

enum class KillOutcome {
  kExitedBeforeTerm,  // the job went during diagnostics: no signal needed
  kExitedAfterTerm,   // SIGTERM was enough
  kSigkilled,         // still there kill_grace_s after SIGTERM
  kStopped,           // the watcher shut down mid-sequence
};

class KillSequence {
 public:
  // `event` receives each step as a JSON event (diagnostics, kill) as it happens.
  using EventSink = std::function<void(nlohmann::json)>;
  KillSequence(KillTarget* target, Clock* clock, KillOptions options, EventSink event);

  // Runs the whole sequence; returns when the job exited, SIGKILL was sent, or *stop turned true.
  KillOutcome Run(const std::atomic<bool>* stop);

 private:
  // Waits up to `seconds` of clock time for the job to exit; true when it did.
  bool WaitExit(double seconds, const std::atomic<bool>* stop);

  KillTarget* target_;
  Clock* clock_;
  KillOptions o_;
  EventSink event_;
};

const char* KillOutcomeName(KillOutcome outcome);

}  // namespace ww::watch
