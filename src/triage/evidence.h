// What a GPU's states rest on, pure: the signals its samples carried in, the states those signals
// cannot tell apart out. A log without power.draw (GeForce boards, MIG, a query that left it out)
// still classifies, but a rank spinning in a hung collective then reads like compute; the report
// says so (text and the JSON `evidence` object) instead of giving a confident verdict.
// No I/O, no state: table-tested in tests/triage/evidence_test.cc.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/state.h"
#include "triage/engine.h"
#include "triage/options.h"

namespace ww::triage {

// One set of states the signals cannot separate, and why, in words for the user.
struct Indistinct {
  std::vector<GpuState> states;  // in enum order
  std::string why;
  // The job-level verdict (hang or not) depends on it: said in the summary, not only the JSON.
  bool affects_hang = false;
};

struct GpuEvidence {
  // The signals that count (present in at least evidence_min_signal_share of the samples), by
  // their JSON names: power, utilization, memory, memory_utilization, activity.
  std::vector<std::string> signals;
  std::vector<Indistinct> cannot_tell_apart;
  // The fields a verdict would have used but the log lacks, by their nvidia-smi names
  // (memory.used, power.draw, utilization.gpu), in that order; power.limit in place of
  // power.draw when power was logged but never placed in the board's range (no idle reading, no
  // power.limit or known model: PowerCalibration::placed).
  std::vector<std::string> missing;
  // True when `state` is in one of the sets: its seconds are a guess.
  bool Undetermined(GpuState state) const;
};

GpuEvidence DescribeEvidence(const SignalCounts& signals, int64_t samples,
                             const TriageOptions& options);

// One line per host whose GPUs lack a field, for the text summary: "node0: no memory.used: idle
// and checkpoint told apart by power only". GPUs are named when only some of the host's lack it.
// keys and evidence are parallel; host_names by GpuKey::host.
std::vector<std::string> HostEvidenceLines(const std::vector<GpuKey>& keys,
                                           const std::vector<GpuEvidence>& evidence,
                                           const std::vector<std::string>& host_names);

}  // namespace ww::triage
