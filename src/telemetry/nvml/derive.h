// Pure arithmetic between what NVML answers and a GpuSample: unit conversions (mW -> W,
// bytes -> MiB, KiB -> bytes, percent -> ratio), mean power from the energy counter, rates of
// cumulative counters with wrap-around at their width, and the checks that tell a counter reset
// (driver reload) from traffic. No I/O, no clock, no library: the readers in nvml_readers.cc fill
// RawReadings; everything after that is here, table-tested (tests/telemetry/nvml/derive_test.cc).
// Value types and free functions; no shared state.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/sample.h"
#include "telemetry/nvml/nvml_abi.h"

namespace ww::nvml {

// GPM needs its two samples more than 100 ms apart (NVML GPM documentation).
inline constexpr int64_t kGpmMinGapNs = 100'000'000;
// A counter delta beyond its field's plausible range (the DCGM field table's: power draw's for
// mean power, NVLink's for NVLink traffic) is a reset (driver reload), not power or traffic.
// PCIe's bound is tighter than its field's range: no PCIe link moves 1 TB/s.
inline constexpr double kMaxPlausiblePcieBytesPerS = 1e12;

// One reading of a cumulative NVML counter.
struct CounterRead {
  uint64_t value = 0;
  int bits = 64;             // the counter wraps at 2^bits (from the NVML value type)
  int64_t timestamp_us = 0;  // NVML's timestamp of the value; 0 when not given
  int64_t read_ns = 0;       // our monotonic time of the read
};

// What one tick read from one GPU, in NVML's units; absent = unsupported or failed.
struct RawReadings {
  std::optional<unsigned> power_mw, power_instant_mw, power_limit_mw;
  std::optional<unsigned> util_gpu_pct, util_mem_pct, sm_clock_mhz, mem_clock_mhz, temperature_c;
  std::optional<unsigned long long> energy_mj;
  int64_t energy_read_ns = 0;  // monotonic time of the energy read
  std::optional<unsigned long long> clock_event_reasons;
  std::optional<unsigned long long> mem_used_bytes, mem_total_bytes;
  std::optional<int> pstate;
  std::optional<CounterRead> pcie_tx_bytes, pcie_rx_bytes, nvlink_tx_kib, nvlink_rx_kib;
  std::optional<double> gpm_sm_pct, gpm_occupancy_pct, gpm_tensor_pct, gpm_dram_bw_pct;
};

// What the previous readings of one GPU leave for the next derivation.
struct DeriveState {
  std::optional<uint64_t> energy_mj;
  int64_t energy_read_ns = 0;
  std::optional<CounterRead> pcie_tx_bytes, pcie_rx_bytes, nvlink_tx_kib, nvlink_rx_kib;
};

// What a derivation found that the user should hear about.
struct DeriveNotes {
  bool energy_went_back = false;  // the energy counter moved implausibly (driver reload)
  uint64_t energy_from_mj = 0, energy_to_mj = 0;
  bool counter_jumped = false;  // a PCIe/NVLink counter moved implausibly (reset)
};

// Fills the reading fields of *sample (not timestamp or key) from `raw` and the GPU's previous
// readings, and moves *state on to `raw`. Derived values need two readings: absent the first time.
DeriveNotes DeriveSample(const RawReadings& raw, DeriveState* state, GpuSample* sample);

// The pieces, each on its own.
std::optional<double> MilliwattsToWatts(const std::optional<unsigned>& mw);
double BytesToMib(uint64_t bytes);
std::optional<double> PercentToRatio(const std::optional<double>& pct);

struct MeanPower {
  std::optional<double> watts;  // absent: no time passed, or implausible
  bool implausible = false;     // the counter went back or jumped beyond any board's power
};
// Exact mean power between two energy-counter reads: delta mJ / delta ms, with the delta wrapping
// at 2^64 as NVML's counter does.
MeanPower MeanPowerFromEnergy(uint64_t prev_mj, int64_t prev_read_ns, uint64_t cur_mj,
                              int64_t cur_read_ns);

struct CounterRate {
  std::optional<double> bytes_per_s;  // absent: widths differ, no time passed, or implausible
  bool implausible = false;           // faster than max_bytes_per_s: a reset, not traffic
};
// Rate of a cumulative counter between two reads, in bytes/s (unit_bytes per counter unit: 1 for
// bytes, 1024 for KiB), wrapping at the counter's width. Time is NVML's timestamps when both
// reads carry increasing ones, else our read times.
CounterRate RateBetween(const CounterRead& prev, const CounterRead& cur, double unit_bytes,
                        double max_bytes_per_s);

// An NVML field value as an unsigned counter and the width it wraps at; nullopt for a negative
// value or a type that cannot be a counter.
struct CounterValue {
  uint64_t value = 0;
  int bits = 64;
};
std::optional<CounterValue> FieldCounterValue(const nvmlFieldValue_t& v);

// A GPM metric in percent, or nullopt when it failed or lies outside 0..100.
std::optional<double> GpmPercent(nvmlReturn_t rc, double value);
// A performance state 0..15, or nullopt (NVML_PSTATE_UNKNOWN and anything else).
std::optional<int> PstateNumber(nvmlPstates_t p);
// "hopper", "ampere", ...; "" when unknown; "arch12" for one newer than this table.
std::string ArchitectureName(nvmlDeviceArchitecture_t a);

}  // namespace ww::nvml
