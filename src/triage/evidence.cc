#include "triage/evidence.h"

#include <algorithm>

namespace ww::triage {

bool GpuEvidence::Undetermined(GpuState state) const {
  for (const Indistinct& d : cannot_tell_apart) {
    if (std::find(d.states.begin(), d.states.end(), state) != d.states.end()) return true;
  }
  return false;
}

GpuEvidence DescribeEvidence(const SignalCounts& s, int64_t samples, const TriageOptions& options) {
  GpuEvidence e;
  if (samples <= 0) return e;
  auto used = [&](int64_t n) {
    return static_cast<double>(n) >=
           options.evidence_min_signal_share * static_cast<double>(samples);
  };
  const bool power = used(s.power), util = used(s.utilization), memory = used(s.memory),
             activity = used(s.activity);
  if (power) e.signals.push_back("power");
  if (util) e.signals.push_back("utilization");
  if (memory) e.signals.push_back("memory");
  if (used(s.memory_utilization)) e.signals.push_back("memory_utilization");
  if (activity) e.signals.push_back("activity");
  // Only the states that still get samples matter; a GPU lost for its whole log tells nothing.
  if (static_cast<double>(s.lost) >= static_cast<double>(samples)) return e;

  if (!power && !activity && util) {
    // A spinning collective reads 100 % utilization; only its low power gives it away.
    e.cannot_tell_apart.push_back(
        {{GpuState::kCompute, GpuState::kCommunication, GpuState::kCheckpoint, GpuState::kHang},
         "no power reading (power.draw) nor activity counters: a rank spinning in a collective "
         "(a hang, peers waiting on a checkpoint) reads 100 % utilization like compute, so hangs "
         "cannot be told from compute",
         true});
  }
  if (!util && power) {
    // Power alone: working power is busy, anything lower is "no kernels".
    e.cannot_tell_apart.push_back(
        {{GpuState::kIdle, GpuState::kCheckpoint, GpuState::kHang},
         "no utilization.gpu: a rank spinning at low power in a collective reads like one without "
         "kernels, so hangs cannot be told from checkpoints or idle time",
         true});
  }
  if (!memory && (power || util)) {
    e.cannot_tell_apart.push_back(
        {{GpuState::kIdle, GpuState::kCheckpoint},
         "no memory.used: a GPU without a process cannot be told from a rank holding its model "
         "without kernels, and a rank's exit is not seen",
         false});
  }
  return e;
}

}  // namespace ww::triage
