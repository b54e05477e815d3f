// Renders a triage result for people (text) and machines (JSON). The JSON names are a contract
// other tools read: hosts[].gpus[].seconds.<state>, hang_episodes[].{start, detected_at, end,
// gpus, culprits, reasons}, wasted_gpu_hours.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "triage/engine.h"
#include "triage/evidence.h"
#include "triage/snapshot.h"

namespace ww::report {

struct TriageReport {
  std::vector<std::string> hosts;  // indexed by GpuKey::host
  // The file each host was read from, when the host names are not plain file names (same-named
  // files from different folders): listed in the summary and JSON. Else empty.
  std::vector<std::string> host_paths;
  std::vector<triage::GpuStats> gpus;
  std::vector<triage::GpuEvidence> evidence;  // per entry of gpus
  std::vector<triage::TriageEvent> events;
  std::vector<triage::HangEpisode> hang_episodes;
  std::vector<triage::CheckpointEpisode> checkpoints;
  std::vector<triage::Straggler> stragglers;
  // Why no straggler could be judged (coarse sampling without activity counters), or "".
  std::string stragglers_unknown;
  // Why the log cannot say whether the job hung (it spans less than a hang takes to confirm),
  // or "" when it can; and the same per GPU (by index into gpus) for a GPU sampled too briefly
  // in a longer log.
  std::string hang_unknown;
  std::vector<std::string> gpu_hang_unknown;
  // The job's hang verdict (JSON `hang_verdict`): confirmed with an episode; for a log too short
  // to confirm one, the one-snapshot verdict (`snapshot`); unknown when the signals cannot show a
  // hang; else none.
  triage::HangVerdict hang_verdict = triage::HangVerdict::kNone;
  std::optional<triage::SnapshotVerdict> snapshot;
  std::vector<std::string> warnings;  // documented skips from the readers
  std::vector<std::string> notes;     // from the engine
  int64_t first_ms = 0;
  int64_t last_ms = 0;
  bool with_zone = false;  // print timestamps with "Z" (the input carried a zone)

  double wasted_gpu_hours() const;
  // Job-wide communication share of training time; nullopt without training, or when a GPU's
  // is unknown (comm_share_unknown() says why).
  std::optional<double> comm_share() const;
  // The reason the communication share is unknown (the first GPU with training time whose share
  // is), or "" when it is measured.
  std::string comm_share_unknown() const;
};

// Collects a finished engine's results. Checkpoints shorter than 50 ms (0.0 s as printed: one
// tick between two evaluations) are not listed.
TriageReport MakeReport(const triage::TriageEngine& engine, std::vector<std::string> hosts,
                        std::vector<std::string> warnings);

std::string RenderText(const TriageReport& report, bool color = false);
// A host's name as the report prints it ("node1"; "host3" past the list).
std::string HostName(const TriageReport& report, uint16_t host);
nlohmann::json RenderJson(const TriageReport& report);

}  // namespace ww::report
