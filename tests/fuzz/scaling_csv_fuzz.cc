// Fuzzes the `wattwatch scaling` CSV parser and the table built from whatever it accepts.
#include <cstdint>
#include <string_view>

#include "measure/scaling.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto points = ww::measure::ParseScalingCsv(
      std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.csv");
  if (!points.ok()) return 0;
  const auto report = ww::measure::ComputeScaling(*points, 0.8);
  (void)ww::measure::FormatScaling(report);
  (void)ww::measure::ScalingToJson(report).dump();
  return 0;
}
