// The plausible range of each kind of GpuSample reading, written once: every telemetry reader
// rejects a value outside it as a bad cell (counted, never recorded), and NVML derivation takes a
// mean power above the power cap for a counter reset. Both bounds are plausible values. The DCGM
// field table (telemetry/fields.h) gives each field its range from here.
// Constants only; any thread.
#pragma once

namespace ww {

struct PlausibleRange {
  double lo, hi;
};

// Board power and power limits. No single GPU board draws 5 kW (a B300 is rated 1.4 kW).
inline constexpr PlausibleRange kPowerRangeW{0, 5000};
inline constexpr PlausibleRange kPercentRange{0, 100};
inline constexpr PlausibleRange kClockRangeMhz{0, 20000};
inline constexpr PlausibleRange kTemperatureRangeC{-60, 200};
inline constexpr PlausibleRange kMemoryRangeMib{0, 16.0 * 1024 * 1024};  // 16 TiB
// DCGM's profiling ratios (SM active, tensor active, ...) overshoot 1 a little.
inline constexpr PlausibleRange kActivityRange{0, 1.05};
inline constexpr PlausibleRange kLinkRangeBytesPerS{0, 1e13};  // PCIe and NVLink traffic
// 64-bit counters and bit masks (energy in mJ, clock event reasons) as a double holds them.
inline constexpr PlausibleRange kCounterRange{0, 1.8e19};

}  // namespace ww
