#include "telemetry/gpu_models.h"

#include <algorithm>
#include <cctype>
#include <string>

namespace ww {

const std::vector<GpuModel>& KnownGpuModels() {
  // TDPs are the SXM boards' default limits from NVIDIA's data sheets; idle floors are typical
  // readings with no process (H100: ~70 W as in the real traces, A100: ~55 W).
  static const std::vector<GpuModel> models = {
      {"NVIDIA B300 SXM6 AC", "b300", 1100, 140, 2032, 345, 3996, 275040},
      {"NVIDIA B200", "b200", 1000, 130, 1965, 345, 3996, 183359},
      {"NVIDIA H200", "h200", 700, 75, 1980, 345, 3201, 143771},
      {"NVIDIA H100 80GB HBM3", "h100", 700, 70, 1980, 345, 2619, 81559},
      {"NVIDIA A100-SXM4-80GB", "a100", 400, 55, 1410, 210, 1593, 81920},
      {"NVIDIA L40S", "l40s", 350, 35, 2520, 210, 9001, 46068},
  };
  return models;
}

PowerLimitRange PlausiblePowerLimits(const GpuModel& model) {
  return {kMinPowerLimitFracOfTdp * model.tdp_w, kMaxPowerLimitFracOfTdp * model.tdp_w};
}

std::optional<GpuModel> LookupGpuModel(std::string_view name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (const GpuModel& m : KnownGpuModels()) {
    if (lower.find(m.match) != std::string::npos) return m;
  }
  return std::nullopt;
}

}  // namespace ww
