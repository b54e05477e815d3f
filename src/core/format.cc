#include "core/format.h"

#include <fmt/format.h>

namespace ww {

std::string FormatBytes(double bytes, int decimals) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int unit = 0;
  while (bytes >= 1024 && unit < 5) {
    bytes /= 1024;
    ++unit;
  }
  if (unit == 0) return fmt::format("{:.0f} B", bytes);
  return fmt::format("{:.{}f} {}", bytes, decimals, kUnits[unit]);
}

std::string GpuLabel(std::string_view host, int gpu) { return fmt::format("{}/GPU{}", host, gpu); }

std::string GpuLabelForHostIndex(int host_index, int gpu) {
  return fmt::format("host{}/GPU{}", host_index, gpu);
}

}  // namespace ww
