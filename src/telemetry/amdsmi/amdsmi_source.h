// AmdSmiSource: live AMD GPU telemetry from the AMD SMI library (amdsmi_api.h), or where it is
// absent from the older ROCm SMI library (rocm_smi_api.h), as a LiveGpuSource (one host: this
// machine), built like NvmlSource: one reader per GPU, run each tick by the DeadlinePool
// (telemetry/nvml/deadline_pool.h) with a deadline, so a hung library call makes that GPU stale for
// the tick (its sample carries no readings, last_status() names the call) while the other GPUs keep
// being sampled.
//
// A GPU is one AMD SMI processor handle, enumerated socket by socket: on an MI250X each of the
// two GCDs of a package is its own GPU, as ROCm counts them (HIP_VISIBLE_DEVICES, rocm-smi). The
// package's power is reported by one GCD only; the other answers N/A (0xFFFF) or 0 W, and its
// power is then absent, never 0 W (see docs/amd.md for the whole mapping).
//
// Readings follow house rule 2: a field the library answers AMDSMI_STATUS_NOT_SUPPORTED for, or
// N/A (0xFFFF), or whose call failed, is absent, never 0.
//
// Ownership: the caller owns the source; the clock must outlive it; a reader stuck in a call owns
// the library (shared_ptr), so it is never unmapped under it. Thread-safety: one thread at a time.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "core/status.h"
#include "telemetry/amdsmi/amdsmi_api.h"
#include "telemetry/live_gpu_source.h"

namespace ww::amdsmi {

// The readings AMD SMI can provide, for support reporting; names as NvmlFieldName's.
enum class AmdField : int {
  kPowerDraw,     // amdsmi_get_power_info average_socket_power
  kPowerInstant,  // amdsmi_get_power_info current_socket_power
  kEnergy,        // amdsmi_get_energy_count
  kPowerLimit,    // amdsmi_get_power_cap_info power_cap
  kUtilization,   // amdsmi_get_gpu_activity gfx_activity, umc_activity
  kSmClock,       // amdsmi_get_clock_info(GFX)
  kMemClock,      // amdsmi_get_clock_info(MEM)
  kTemperature,   // amdsmi_get_temp_metric(HOTSPOT, else EDGE, CURRENT)
  kMemory,        // amdsmi_get_gpu_vram_usage
  kCount,
};
inline constexpr int kAmdFieldCount = static_cast<int>(AmdField::kCount);
const char* AmdFieldName(AmdField field);

enum class AmdLibrary : uint8_t {
  kAmdSmiElseRocmSmi,  // AMD SMI; when it cannot be used, ROCm SMI (ROCm < 6.0, Debian)
  kAmdSmi,
  kRocmSmi,
};

struct AmdSmiSourceOptions {
  AmdLibrary library = AmdLibrary::kAmdSmiElseRocmSmi;
  std::string library_path;  // --amdsmi-lib; empty: $WATTWATCH_AMDSMI_LIB, else libamd_smi.so
  // empty: $WATTWATCH_ROCM_SMI_LIB, else librocm_smi64.so.1
  std::string rocm_smi_library_path;
  std::string hostname;          // empty: gethostname()
  Clock* clock = nullptr;        // nullptr: SystemClock()
  int64_t call_deadline_ms = 0;  // 0: the sampling interval within [20, 1000] ms
  int64_t sampling_interval_ms = 500;
  int64_t init_deadline_ms = 30000;  // loading, amdsmi_init and enumeration
};

class AmdSmiSource final : public LiveGpuSource {
 public:
  // kUnavailable, with one message that says what is missing and how to point wattwatch at a
  // library, when there is no library, an incompatible version, no driver or no GPU.
  static Result<std::unique_ptr<AmdSmiSource>> Open(const AmdSmiSourceOptions& options);
  ~AmdSmiSource() override;

  Status Next(std::vector<GpuSample>* out) override;
  const std::vector<std::string>& hosts() const override;
  std::vector<GpuInfo> gpus() const override;
  std::vector<std::string> warnings() const override;
  SourceHealth health() const override;

  const std::vector<LiveGpuStatus>& last_status() const override;
  uint32_t unsupported_sample_fields(size_t gpu) const override;
  std::vector<std::pair<std::string, FieldSupport>> field_support(size_t gpu) const override;
  std::string architecture(size_t gpu) const override;
  LiveBackendInfo backend_info() const override;

  FieldSupport support(size_t gpu, AmdField field) const;
  size_t gpu_count() const;

  struct Impl;

 private:
  explicit AmdSmiSource(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ww::amdsmi
