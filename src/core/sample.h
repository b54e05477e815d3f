// GpuSample: one reading of one GPU at one instant. Every field is optional: a field that the
// source does not log, that the device does not support, or whose read failed is absent, never 0.
// Units live in the names. Value type; no thread-safety concerns.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ww {

// Identifies a GPU across a job: the host (index into the job's host list) and the GPU's index
// within that host.
struct GpuKey {
  uint16_t host = 0;
  uint16_t gpu = 0;
  friend bool operator==(const GpuKey&, const GpuKey&) = default;
  // NOLINTNEXTLINE(modernize-use-nullptr): clang-tidy 14 flags the defaulted <=> itself.
  friend auto operator<=>(const GpuKey&, const GpuKey&) = default;
};

struct GpuSample {
  int64_t timestamp_ms = 0;  // ms since the Unix epoch (local wall time when the log had no zone)
  GpuKey key;

  std::optional<double> power_w;          // ~1 s average board power (nvidia-smi power.draw)
  std::optional<double> power_instant_w;  // instantaneous board power
  std::optional<double> power_limit_w;    // enforced power limit
  std::optional<double> util_gpu_pct;     // busy fraction of the last sample period, 0..100
  std::optional<double> util_mem_pct;     // memory-controller busy fraction, 0..100
  std::optional<double> sm_clock_mhz;
  std::optional<double> mem_clock_mhz;
  std::optional<double> temperature_c;
  std::optional<double> mem_used_mib;
  std::optional<double> mem_total_mib;
  std::optional<int> pstate;                    // 0 (P0) .. 15
  std::optional<uint64_t> clock_event_reasons;  // NVML clocks_event_reasons bitmask
  std::optional<uint64_t> energy_mj;            // cumulative energy counter since driver load
  std::optional<double> pcie_tx_bytes_per_s;
  std::optional<double> pcie_rx_bytes_per_s;
  std::optional<double> nvlink_tx_bytes_per_s;
  std::optional<double> nvlink_rx_bytes_per_s;
  // DCGM PROF GR_ENGINE_ACTIVE (dmon GRACT): share of the interval the graphics/compute engine
  // was busy, 0..1. A rank spinning in a collective keeps it ~1 with SM activity ~0.
  std::optional<double> gr_engine_active_ratio;
  std::optional<double> sm_activity_ratio;      // GPM, 0..1
  std::optional<double> sm_occupancy_ratio;     // GPM, 0..1
  std::optional<double> tensor_activity_ratio;  // GPM, 0..1
  std::optional<double> dram_bw_util_ratio;     // GPM, 0..1
  std::optional<double>
      power_mean_w;  // exact mean power since the previous reading (energy counter)
  // The driver reported the GPU lost (nvidia-smi `[GPU is lost]`, NVML_ERROR_GPU_IS_LOST, what
  // Xid 79 leaves): no reading now and none to come until a reset. Not the same as absent fields.
  bool gpu_lost = false;
};

// What a source knows about a GPU beyond its readings.
struct GpuInfo {
  GpuKey key;
  std::string name;  // e.g. "NVIDIA H100 80GB HBM3"; empty when unknown
  std::string uuid;
  std::string pci_bus_id;
};

}  // namespace ww
