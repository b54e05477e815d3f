#include "triage/evidence.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

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
  // Power logged in most samples, but never placed in the board's range: what is missing is
  // the limit (or the model's name) that would place it.
  const bool unplaced = !power && used(s.power + s.power_unplaced);
  // ... or placed nowhere: its readings cannot be watts (kilowatts under a [W] header).
  const bool not_watts = unplaced && used(s.power_not_watts);
  if (!memory) e.missing.push_back("memory.used");
  if (!power)
    e.missing.push_back(not_watts ? "power.unit" : unplaced ? "power.limit" : "power.draw");
  if (!util) e.missing.push_back("utilization.gpu");
  // Only the states that still get samples matter; a GPU lost for its whole log tells nothing.
  if (static_cast<double>(s.lost) >= static_cast<double>(samples)) return e;

  if (!power && !activity && util) {
    // A spinning collective reads 100 % utilization; only its low power gives it away.
    e.cannot_tell_apart.push_back(
        {{GpuState::kCompute, GpuState::kCommunication, GpuState::kCheckpoint, GpuState::kHang},
         not_watts
             ? "power.draw cannot be watts (see the note): a rank spinning in a collective reads "
               "100 % utilization like compute, so hangs cannot be told from compute (fix the "
               "column's unit)"
         : unplaced
             ? "power.draw never read idle or spread out, and no power.limit or GPU name logged: "
               "flat power at full utilization is compute on one board and a spinning collective "
               "on a larger one, so hangs cannot be told from compute (log power.limit or name)"
             : "no power reading (power.draw) nor activity counters: a rank spinning in a "
               "collective (a hang, peers waiting on a checkpoint) reads 100 % utilization like "
               "compute, so hangs cannot be told from compute",
         true});
  }
  if (!power && !util && !activity) {
    // Nothing places a reading: no utilization, and power unplaced (or absent).
    e.cannot_tell_apart.push_back(
        {{GpuState::kIdle, GpuState::kCompute, GpuState::kCommunication, GpuState::kCheckpoint,
          GpuState::kHang},
         unplaced ? "no utilization.gpu, and power.draw never read idle with no power.limit or GPU "
                    "name logged: power alone, never low, cannot say whether the board works, "
                    "waits or idles (log utilization.gpu, power.limit or name)"
                  : "neither power.draw nor utilization.gpu: nothing says what the board did",
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

namespace {

// What a missing field costs the verdicts, in words (what the engine does without it).
std::string Consequence(const std::string& field, bool activity) {
  if (field == "memory.used") {
    return "no memory.used: idle and checkpoint told apart by power only (quiet ranks are a "
           "checkpoint only while peers wait on them; a process exit is not seen)";
  }
  if (field == "power.limit") {
    return activity ? "power.draw not placed in the board's range (no idle reading, no "
                      "power.limit or GPU name logged): spin and compute told apart by activity "
                      "counters"
                    : "power.draw not placed in the board's range (no idle reading, no "
                      "power.limit or GPU name logged): spin and compute not told apart (no "
                      "hang, checkpoint wait or communication can be seen; log power.limit or "
                      "name)";
  }
  if (field == "power.unit") {
    return activity ? "power.draw cannot be watts: spin and compute told apart by activity "
                      "counters"
                    : "power.draw cannot be watts: spin and compute not told apart (no hang, "
                      "checkpoint wait or communication can be seen; fix the column's unit)";
  }
  if (field == "power.draw") {
    return activity ? "no power.draw: spin and compute told apart by activity counters"
                    : "no power.draw: spin and compute not told apart (a rank waiting in a "
                      "collective reads as compute: no hang, checkpoint wait or communication "
                      "can be seen)";
  }
  return "no utilization.gpu: kernels seen from power only (a spin reads as no kernels)";
}

}  // namespace

std::vector<std::string> HostEvidenceLines(const std::vector<GpuKey>& keys,
                                           const std::vector<GpuEvidence>& evidence,
                                           const std::vector<std::string>& host_names) {
  std::map<uint16_t, int> gpus_on_host;
  for (GpuKey k : keys) ++gpus_on_host[k.host];
  // host -> field -> the GPUs lacking it; and whether they have activity counters
  std::map<uint16_t, std::map<std::string, std::vector<GpuKey>>> lacking;
  std::map<uint16_t, bool> activity;
  for (size_t i = 0; i < keys.size() && i < evidence.size(); ++i) {
    const GpuEvidence& e = evidence[i];
    if (e.signals.empty()) continue;  // no sample, or lost all along: nothing to say
    for (const std::string& f : e.missing) lacking[keys[i].host][f].push_back(keys[i]);
    if (std::find(e.signals.begin(), e.signals.end(), "activity") != e.signals.end()) {
      activity[keys[i].host] = true;
    }
  }
  std::vector<std::string> out;
  for (const auto& [host, fields] : lacking) {
    const std::string name =
        host < host_names.size() ? host_names[host] : fmt::format("host{}", host);
    std::string line = name + ":";
    bool first = true;
    for (const char* f :
         {"memory.used", "power.draw", "power.limit", "power.unit", "utilization.gpu"}) {
      auto it = fields.find(f);
      if (it == fields.end()) continue;
      std::string which;
      if (static_cast<int>(it->second.size()) < gpus_on_host[host]) {
        for (GpuKey k : it->second)
          which += fmt::format("{}GPU{}", which.empty() ? "" : ",", k.gpu);
        which = fmt::format(" ({})", which);
      }
      line += (first ? " " : "; ") + Consequence(f, activity[host]) + which;
      first = false;
    }
    out.push_back(std::move(line));
  }
  return out;
}

}  // namespace ww::triage
