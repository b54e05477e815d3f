#include "core/format.h"

#include <fmt/format.h>

#include <cmath>

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

std::string FormatDuration(double seconds, bool compact) {
  if (!(seconds < 60)) {
    // NaN and huge values stay printable (a clock jump in a log must not make llround overflow).
    const double s = seconds > 1e15 ? 1e15 : seconds;
    if (!(s >= 0)) return compact ? "?" : "? s";
    const int64_t t = std::llround(s);
    if (t < 3600) return fmt::format("{}m{:02d}s", t / 60, t % 60);
    if (compact) return fmt::format("{}h{:02d}m", t / 3600, (t / 60) % 60);
    return fmt::format("{}h{:02d}m{:02d}s", t / 3600, (t / 60) % 60, t % 60);
  }
  return compact ? fmt::format("{:.0f}s", seconds) : fmt::format("{:.1f} s", seconds);
}

std::string GpuLabel(std::string_view host, int gpu) { return fmt::format("{}/GPU{}", host, gpu); }

std::string GpuLabelForHostIndex(int host_index, int gpu) {
  return fmt::format("host{}/GPU{}", host_index, gpu);
}

}  // namespace ww
