// Scores the triage engine against the simulator's ground truth: macro-F1 over phases (compute
// and communication counted as one phase, samples within +-2 intervals (at least 2 s) of a truth
// phase change left out),
// hang detection latency, false hangs, culprits and communication share.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "telemetry/sim/simulator.h"
#include "triage/engine.h"

namespace ww::testing {

struct ScenarioScore {
  double macro_f1 = 0;
  std::map<std::string, double> f1_by_phase;
  std::vector<triage::HangEpisode> found;
  std::vector<sim::TruthHang> truth;
  double comm_share = 0;           // classifier, job-wide
  double truth_comm_share = 0;     // simulator
  std::string comm_share_unknown;  // why the engine reports the share as unknown, if it does
  std::vector<triage::Straggler> stragglers;
  std::string stragglers_unknown;  // why the engine judged no straggler, if it says
  int64_t scored_samples = 0;
  std::string confusion;               // "truth->label: count" for mismatches, for failure messages
  std::vector<triage::GpuStats> gpus;  // the engine's per-GPU results (seconds, signals)
  std::vector<triage::CheckpointEpisode> checkpoints;
};

// options.max_checkpoint_s is replaced by the scenario's own when it sets one.
ScenarioScore RunAndScore(const sim::ScenarioConfig& config,
                          const triage::TriageOptions& options = {});

std::string Describe(const sim::ScenarioConfig& c);

}  // namespace ww::testing
