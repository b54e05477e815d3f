// AmdSmiLib: libamd_smi loaded with dlopen (never linked), every entry point listed once in
// WW_AMDSMI_ENTRY_POINTS and called through one table, as NvmlLib does for NVML (nvml_api.h), so
// the project's fake library (tests/fake_amdsmi) stands in for ROCm without a rebuild.
//
// Ownership: Load() returns a shared_ptr; whoever holds the last reference shuts AMD SMI down and
// dlcloses it; a reader stuck in a call keeps its reference. Thread-safety: the table is immutable
// after Load(); AMD SMI documents its calls as thread-safe.
#pragma once

#include <memory>
#include <string>

#include "core/status.h"
#include "telemetry/amdsmi/amdsmi_abi.h"

namespace ww::amdsmi {

// X(member, symbol, required, parameter list); every function returns amdsmi_status_t.
#define WW_AMDSMI_ENTRY_POINTS(X)                                                                  \
  X(Init, "amdsmi_init", true, (uint64_t))                                                         \
  X(ShutDown, "amdsmi_shut_down", true, (void))                                                    \
  X(GetLibVersion, "amdsmi_get_lib_version", true, (amdsmi_version_t*))                            \
  X(StatusCodeToString, "amdsmi_status_code_to_string", false, (amdsmi_status_t, const char**))    \
  X(GetSocketHandles, "amdsmi_get_socket_handles", true, (uint32_t*, amdsmi_socket_handle*))       \
  X(GetProcessorHandles, "amdsmi_get_processor_handles", true,                                     \
    (amdsmi_socket_handle, uint32_t*, amdsmi_processor_handle*))                                   \
  X(GetGpuAsicInfo, "amdsmi_get_gpu_asic_info", false,                                             \
    (amdsmi_processor_handle, amdsmi_asic_info_t*))                                                \
  X(GetGpuBoardInfo, "amdsmi_get_gpu_board_info", false,                                           \
    (amdsmi_processor_handle, amdsmi_board_info_t*))                                               \
  X(GetGpuBdfId, "amdsmi_get_gpu_bdf_id", false, (amdsmi_processor_handle, uint64_t*))             \
  X(GetPowerInfo, "amdsmi_get_power_info", false, (amdsmi_processor_handle, amdsmi_power_info_t*)) \
  X(GetPowerCapInfo, "amdsmi_get_power_cap_info", false,                                           \
    (amdsmi_processor_handle, uint32_t, amdsmi_power_cap_info_t*))                                 \
  X(GetGpuActivity, "amdsmi_get_gpu_activity", false,                                              \
    (amdsmi_processor_handle, amdsmi_engine_usage_t*))                                             \
  X(GetGpuVramUsage, "amdsmi_get_gpu_vram_usage", false,                                           \
    (amdsmi_processor_handle, amdsmi_vram_usage_t*))                                               \
  X(GetTempMetric, "amdsmi_get_temp_metric", false,                                                \
    (amdsmi_processor_handle, amdsmi_temperature_type_t, amdsmi_temperature_metric_t, int64_t*))   \
  X(GetClockInfo, "amdsmi_get_clock_info", false,                                                  \
    (amdsmi_processor_handle, amdsmi_clk_type_t, amdsmi_clk_info_t*))                              \
  X(GetEnergyCount, "amdsmi_get_energy_count", false,                                              \
    (amdsmi_processor_handle, uint64_t*, float*, uint64_t*))

inline constexpr const char* kDefaultAmdSmiLibrary = "libamd_smi.so";
inline constexpr const char* kAmdSmiLibraryEnv = "WATTWATCH_AMDSMI_LIB";
inline constexpr const char* kAmdSmiHowToPoint =
    "Install ROCm's amd-smi-lib, or point wattwatch at the library with --amdsmi-lib PATH or "
    "WATTWATCH_AMDSMI_LIB=PATH (e.g. /opt/rocm/lib/libamd_smi.so).";

class AmdSmiLib {
 public:
// NOLINTNEXTLINE(bugprone-macro-parentheses)
#define WW_AMDSMI_MEMBER(member, sym, required, params) amdsmi_status_t(*member) params = nullptr;
  WW_AMDSMI_ENTRY_POINTS(WW_AMDSMI_MEMBER)
#undef WW_AMDSMI_MEMBER

  // Loads explicit_path if non-empty, else $WATTWATCH_AMDSMI_LIB, else libamd_smi.so; resolves
  // the table, checks the library version against the pinned ABI and calls
  // amdsmi_init(AMDSMI_INIT_AMD_GPUS). kUnavailable with what is missing and how to point
  // wattwatch at a library.
  static Result<std::shared_ptr<AmdSmiLib>> Load(const std::string& explicit_path);
  ~AmdSmiLib();
  AmdSmiLib(const AmdSmiLib&) = delete;
  AmdSmiLib& operator=(const AmdSmiLib&) = delete;

  // "AMDSMI_STATUS_NOT_SUPPORTED=2" with the library's own text when it has one.
  std::string ErrorText(amdsmi_status_t rc) const;
  const std::string& path() const { return path_; }
  // "24.7.0.0"
  const std::string& version() const { return version_; }

 private:
  AmdSmiLib() = default;
  void* handle_ = nullptr;
  bool initialized_ = false;
  std::string path_;
  std::string version_;
};

std::string AmdSmiStatusName(amdsmi_status_t rc);

}  // namespace ww::amdsmi
