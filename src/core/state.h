// The states wattwatch tells apart. Names are part of the output contract (labels CSV, JSON,
// Prometheus label values): keep them exactly.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

namespace ww {

enum class GpuState : uint8_t {
  kIdle = 0,       // no work: no process, or a process holding the GPU without kernels
  kCompute,        // kernels doing math: utilization high, power high
  kCommunication,  // collectives moving data, or waiting briefly on a slower rank
  kDataStarved,    // work in bursts with gaps: the GPU waits on the input pipeline
  kCheckpoint,     // a rank saves state; peers wait in a collective
  kHang,           // the job is stuck: every rank spins in a collective or has exited
};

inline constexpr int kNumGpuStates = 6;

inline constexpr std::array<std::string_view, kNumGpuStates> kGpuStateNames = {
    "idle", "compute", "communication", "data_starved", "checkpoint", "hang"};

constexpr std::string_view StateName(GpuState s) { return kGpuStateNames[static_cast<size_t>(s)]; }

inline std::optional<GpuState> ParseStateName(std::string_view name) {
  for (size_t i = 0; i < kGpuStateNames.size(); ++i) {
    if (kGpuStateNames[i] == name) return static_cast<GpuState>(i);
  }
  return std::nullopt;
}

}  // namespace ww
