// RocmSmiLib: ROCm SMI (librocm_smi64.so.1), the older AMD library, loaded with dlopen as AMD SMI
// and NVML are, for hosts whose ROCm has no libamd_smi (Debian packages only librocm-smi64-1).
// Every entry point is listed once in WW_RSMI_ENTRY_POINTS.
//
// ABI: the status codes and calls of include/rocm_smi/rocm_smi.h (ROCm/rocm_smi_lib; Debian 12
// ships 5.2.3). Only calls with scalar outputs are used, so no struct layout depends on the
// library's version: rsmi_dev_power_ave_get / rsmi_dev_power_cap_get (uW),
// rsmi_dev_busy_percent_get / rsmi_dev_memory_busy_percent_get (%), rsmi_dev_memory_usage_get /
// rsmi_dev_memory_total_get (bytes), rsmi_dev_temp_metric_get (millidegrees C),
// rsmi_dev_name_get, rsmi_dev_pci_id_get (same BDF id layout as amdsmi's).
//
// Ownership and thread-safety: as AmdSmiLib (amdsmi_api.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/status.h"

namespace ww::amdsmi {

using rsmi_status_t = uint32_t;  // an enum in rocm_smi.h
inline constexpr rsmi_status_t kRsmiSuccess = 0;
inline constexpr rsmi_status_t kRsmiNotSupported = 2;
inline constexpr rsmi_status_t kRsmiPermission = 4;
inline constexpr rsmi_status_t kRsmiInitError = 8;
inline constexpr rsmi_status_t kRsmiNotYetImplemented = 9;
inline constexpr int kRsmiTempTypeEdge = 0;
inline constexpr int kRsmiTempTypeJunction = 1;
inline constexpr int kRsmiTempCurrent = 0;
inline constexpr int kRsmiMemTypeVram = 0;

// X(member, symbol, required, parameter list); every function returns rsmi_status_t.
#define WW_RSMI_ENTRY_POINTS(X)                                                                \
  X(Init, "rsmi_init", true, (uint64_t))                                                       \
  X(ShutDown, "rsmi_shut_down", true, (void))                                                  \
  X(StatusString, "rsmi_status_string", false, (rsmi_status_t, const char**))                  \
  X(NumMonitorDevices, "rsmi_num_monitor_devices", true, (uint32_t*))                          \
  X(DevNameGet, "rsmi_dev_name_get", false, (uint32_t, char*, size_t))                         \
  X(DevPciIdGet, "rsmi_dev_pci_id_get", false, (uint32_t, uint64_t*))                          \
  X(DevPowerAveGet, "rsmi_dev_power_ave_get", false, (uint32_t, uint32_t, uint64_t*))          \
  X(DevPowerCapGet, "rsmi_dev_power_cap_get", false, (uint32_t, uint32_t, uint64_t*))          \
  X(DevBusyPercentGet, "rsmi_dev_busy_percent_get", false, (uint32_t, uint32_t*))              \
  X(DevMemoryBusyPercentGet, "rsmi_dev_memory_busy_percent_get", false, (uint32_t, uint32_t*)) \
  X(DevMemoryUsageGet, "rsmi_dev_memory_usage_get", false, (uint32_t, int, uint64_t*))         \
  X(DevMemoryTotalGet, "rsmi_dev_memory_total_get", false, (uint32_t, int, uint64_t*))         \
  X(DevTempMetricGet, "rsmi_dev_temp_metric_get", false, (uint32_t, uint32_t, int, int64_t*))

inline constexpr const char* kDefaultRocmSmiLibrary = "librocm_smi64.so.1";
inline constexpr const char* kRocmSmiLibraryEnv = "WATTWATCH_ROCM_SMI_LIB";

class RocmSmiLib {
 public:
// NOLINTNEXTLINE(bugprone-macro-parentheses)
#define WW_RSMI_MEMBER(member, sym, required, params) rsmi_status_t(*member) params = nullptr;
  WW_RSMI_ENTRY_POINTS(WW_RSMI_MEMBER)
#undef WW_RSMI_MEMBER

  // Loads explicit_path if non-empty, else $WATTWATCH_ROCM_SMI_LIB, else librocm_smi64.so.1;
  // resolves the table and calls rsmi_init(0). kUnavailable with what is missing.
  static Result<std::shared_ptr<RocmSmiLib>> Load(const std::string& explicit_path);
  ~RocmSmiLib();
  RocmSmiLib(const RocmSmiLib&) = delete;
  RocmSmiLib& operator=(const RocmSmiLib&) = delete;

  // "RSMI_STATUS_NOT_SUPPORTED: This function is not supported ... (2)".
  std::string ErrorText(rsmi_status_t rc) const;
  const std::string& path() const { return path_; }

 private:
  RocmSmiLib() = default;
  void* handle_ = nullptr;
  bool initialized_ = false;
  std::string path_;
};

}  // namespace ww::amdsmi
