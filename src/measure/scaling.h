// `wattwatch scaling`: the strong-scaling table from measured throughput at several GPU counts.
// Baseline is the smallest GPU count; for each count: speedup over the baseline, efficiency
// against linear (speedup / (gpus / baseline gpus)), tokens/s per GPU, and the tokens/s each GPU
// added since the previous count bought. Counts whose efficiency falls under a threshold are
// flagged: past that point more GPUs mostly buy waiting.
//
// Input is CSV with a header naming `gpus` and `tokens_per_s` (any order, other columns
// ignored). Triage JSON carries no throughput figure, so it is not an input.
// Thread-safety: pure functions; RunScalingCommand reads its file through the Env it is given.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/env.h"
#include "core/status.h"

namespace ww::measure {

struct ScalingPoint {
  int64_t gpus = 0;
  double tokens_per_s = 0;
  int line = 0;  // 1-based line in the input, for messages
};

// Parses and validates the CSV; the result is sorted by GPU count. InvalidInput names
// `source:line` and the field for a missing header, a GPU count that is not a positive integer,
// a throughput that is not a positive finite number, a duplicate count, or fewer than 2 rows.
Result<std::vector<ScalingPoint>> ParseScalingCsv(std::string_view text, const std::string& source);

struct ScalingRow {
  int64_t gpus = 0;
  double tokens_per_s = 0;
  double speedup = 1;        // tokens_per_s / baseline tokens_per_s
  double ideal_speedup = 1;  // gpus / baseline gpus
  double efficiency = 1;     // speedup / ideal_speedup
  double tokens_per_s_per_gpu = 0;
  // (tokens_per_s - previous tokens_per_s) / (gpus - previous gpus); nullopt for the baseline.
  std::optional<double> marginal_tokens_per_s_per_gpu;
  bool below_threshold = false;
};

struct ScalingReport {
  double min_efficiency = 0.8;
  std::vector<ScalingRow> rows;
  bool any_below_threshold = false;
};

// `points` sorted by GPU count, at least one.
ScalingReport ComputeScaling(const std::vector<ScalingPoint>& points, double min_efficiency);

// {"min_efficiency", "baseline_gpus", "rows": [{gpus, tokens_per_s, speedup, ideal_speedup,
//  efficiency, tokens_per_s_per_gpu, marginal_tokens_per_s_per_gpu, below_threshold}],
//  "any_below_threshold"}
nlohmann::json ScalingToJson(const ScalingReport& report);
std::string FormatScaling(const ScalingReport& report);
// 0, or 1 when an efficiency falls under the threshold.
int ScalingExitCode(const ScalingReport& report);

// `wattwatch scaling RUNS.csv`: the command's flags, which the CLI binds straight to these fields.
struct ScalingCommandOptions {
  std::string runs_path;
  double min_efficiency = 0.8;  // flag GPU counts whose efficiency falls under this (0..1)
  bool json = false;            // ScalingToJson instead of the table
};

// Reads and parses the CSV (at most 16 MiB), computes the table and renders it into *out.
// Returns ScalingExitCode; an error Status is unusable input (exit 2), naming file:line and field.
Result<int> RunScalingCommand(Env* env, const ScalingCommandOptions& options, std::string* out);

}  // namespace ww::measure
