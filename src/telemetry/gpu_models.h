// Known GPU models: board power limits and idle floors that seed the triage calibration and drive
// the simulator. A model missing here still works: triage calibrates from the trace itself.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

namespace ww {

struct GpuModel {
  std::string_view name;   // as nvidia-smi prints it
  std::string_view match;  // lower-case substring that identifies the model in a name
  double tdp_w;            // default board power limit
  double idle_w;           // no process, clocks down
  double max_sm_clock_mhz;
  double idle_sm_clock_mhz;
  double mem_clock_mhz;
  double memory_total_mib;
};

const std::vector<GpuModel>& KnownGpuModels();

// The table entry whose `match` occurs in name (case-insensitive), if any.
std::optional<GpuModel> LookupGpuModel(std::string_view name);

}  // namespace ww
