// NvmlSource: live GPU telemetry from NVML, as a TelemetrySource (one host: this machine).
//
// Three parts, each in its own file: the readers (nvml_readers.h; one per GPU, plus one for Xid
// events), which call NVML through the entry-point table (nvml_api.h) so every message names the
// symbol actually bound; the DeadlinePool (deadline_pool.h) that runs them with a deadline per
// tick; and the pure arithmetic from NVML's units to a GpuSample (derive.h). nvml_source.cc opens
// NVML and turns each round into samples.
//
// Next() runs every reader that is not still stuck in an earlier call and waits at most the call
// deadline for them. A GPU whose NVML call has not returned by then (a hung driver call is a known
// failure mode) is reported stale for that tick: its sample carries no readings, last_status()
// says which call blocked, and the others are sampled as usual. While its call stays stuck the
// GPU stays stale without delaying later ticks; when the call returns the GPU recovers on the
// next tick. A stuck reader is detached at destruction: it owns (by shared_ptr) everything it
// touches, including the dlopen'd library, so process exit never waits for it and the library is
// never unmapped under it.
//
// Readings follow house rule 2: a field the device does not support, or whose read failed, is
// absent, never 0. Derived values (mean power from the energy counter, PCIe/NVLink rates, GPM
// ratios) need two readings and are absent on the first tick; see derive.h.
//
// Open() itself runs NVML's loading, nvmlInit and enumeration on a thread with init_deadline_ms;
// per-GPU identity (name, UUID, PCI id, architecture) and Xid registration happen in each GPU's
// first run, under the call deadline, so gpus() fills in after the first Next().
//
// Ownership: the caller owns the source; the clock must outlive it. Thread-safety: Next() and
// the accessors are called by one thread at a time (the TelemetrySource contract).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "core/sample.h"
#include "core/status.h"
#include "telemetry/live_gpu_source.h"
#include "telemetry/nvml/nvml_api.h"

namespace ww::nvml {

// The readings NVML can provide, for support reporting (`wattwatch devices`).
enum class NvmlField : int {
  kPowerDraw,          // nvmlDeviceGetPowerUsage, ~1 s average
  kPowerInstant,       // field NVML_FI_DEV_POWER_INSTANT
  kEnergy,             // nvmlDeviceGetTotalEnergyConsumption (mean power derives from it)
  kPowerLimit,         // nvmlDeviceGetEnforcedPowerLimit
  kUtilization,        // nvmlDeviceGetUtilizationRates (gpu and memory)
  kSmClock,            // nvmlDeviceGetClockInfo(NVML_CLOCK_SM)
  kMemClock,           // nvmlDeviceGetClockInfo(NVML_CLOCK_MEM)
  kClockEventReasons,  // nvmlDeviceGetCurrentClocksEventReasons
  kTemperature,        // nvmlDeviceGetTemperature(NVML_TEMPERATURE_GPU)
  kMemory,             // nvmlDeviceGetMemoryInfo(_v2)
  kPstate,             // nvmlDeviceGetPerformanceState
  kPcieTx,             // field NVML_FI_DEV_PCIE_COUNT_TX_BYTES
  kPcieRx,             // field NVML_FI_DEV_PCIE_COUNT_RX_BYTES
  kNvlinkTx,           // field NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX (all links)
  kNvlinkRx,           // field NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX (all links)
  kGpm,                // nvmlGpm*: SM activity, SM occupancy, tensor activity, DRAM bandwidth
  kXid,                // nvmlEventTypeXidCriticalError events
  kCount,
};
inline constexpr int kNvmlFieldCount = static_cast<int>(NvmlField::kCount);
// Stable short name, e.g. "power.draw", "pcie.tx", "gpm".
const char* NvmlFieldName(NvmlField field);

// kSupported: answered NVML_SUCCESS at least once; kUnsupported: NVML_ERROR_NOT_SUPPORTED, or
// the library lacks the entry point.
using Support = FieldSupport;

// What happened to one GPU in the last tick; lost is NVML_ERROR_GPU_IS_LOST.
using NvmlGpuStatus = LiveGpuStatus;

// What every command that opens NVML sets; CLI11 flags bind straight to these fields, so each
// default lives here once.
struct NvmlSourceOptions {
  std::string library_path;  // --nvml-lib; empty: $WATTWATCH_NVML_LIB, else libnvidia-ml.so.1
  std::string hostname;      // --hostname; empty: gethostname()
  Clock* clock = nullptr;    // nullptr: SystemClock()
  // --deadline-ms: the longest a tick waits for a GPU's calls before reporting it stale.
  // 0: derived from sampling_interval_ms (see EffectiveCallDeadlineMs).
  int64_t call_deadline_ms = 0;
  // How often the caller means to call Next(); only used to derive the call deadline.
  int64_t sampling_interval_ms = 500;
  // Loading NVML, nvmlInit and enumerating GPUs: slower than a read (nvmlInit attaches every GPU,
  // seconds without persistence mode), but a hung driver still must not hang the process.
  int64_t init_deadline_ms = 30000;
};

// call_deadline_ms when set, else the sampling interval within [20, 1000] ms: a tick never waits
// longer than it lasts, nor less than a healthy driver call can take.
int64_t EffectiveCallDeadlineMs(const NvmlSourceOptions& options);

class NvmlSource final : public LiveGpuSource {
 public:
  // Loads NVML and enumerates GPUs. kUnavailable, with one message that says what is missing and
  // how to point wattwatch at a library, when there is no library, no driver, or no GPU.
  static Result<std::unique_ptr<NvmlSource>> Open(const NvmlSourceOptions& options);
  ~NvmlSource() override;

  // Reads every GPU once and appends one GpuSample per GPU (stale and lost GPUs included, with
  // no readings). Never blocks longer than about call_deadline_ms.
  Status Next(std::vector<GpuSample>* out) override;
  const std::vector<std::string>& hosts() const override;
  std::vector<GpuInfo> gpus() const override;
  std::vector<std::string> warnings() const override;
  // Stale GPU-samples so far, wall time of the last Next(), and when a Next() last returned at
  // least one GPU's readings.
  SourceHealth health() const override;

  size_t gpu_count() const;
  // Per GPU, for the last Next().
  const std::vector<NvmlGpuStatus>& last_status() const override;
  Support support(size_t gpu, NvmlField field) const;
  // "hopper", "ampere", ... or "" when NVML does not say.
  std::string architecture(size_t gpu) const override;
  uint32_t unsupported_sample_fields(size_t gpu) const override;
  std::vector<std::pair<std::string, FieldSupport>> field_support(size_t gpu) const override;
  LiveBackendInfo backend_info() const override;
  const std::string& driver_version() const;
  const NvmlLib& lib() const;
  // The same as health().last_read_latency_us and health().samples_stale.
  int64_t last_tick_latency_us() const;
  uint64_t stale_samples() const;

  struct Impl;

 private:
  explicit NvmlSource(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ww::nvml
