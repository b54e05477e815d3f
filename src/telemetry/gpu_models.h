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

// The power limits a board of a known model can be set to: NVIDIA's SXM boards allow limits from
// roughly a third of the default (H100: 200-700 W, A100: 150-400 W, B200: 400-1000 W) up to the
// default TDP. The range is kept wide (a quarter of the TDP to 10 % above it) so that an odd but
// real setting is not called implausible; a logged limit outside it is a misread or a unit slip
// (a 2000 W H100), not a board setting.
inline constexpr double kMinPowerLimitFracOfTdp = 0.25;
inline constexpr double kMaxPowerLimitFracOfTdp = 1.10;

struct PowerLimitRange {
  double min_w;
  double max_w;
};
PowerLimitRange PlausiblePowerLimits(const GpuModel& model);

const std::vector<GpuModel>& KnownGpuModels();

// The table entry whose `match` occurs in name (case-insensitive), if any.
std::optional<GpuModel> LookupGpuModel(std::string_view name);

}  // namespace ww
