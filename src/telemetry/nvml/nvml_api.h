// NvmlLib: libnvidia-ml loaded with dlopen (never linked), every entry point listed once in
// WW_NVML_ENTRY_POINTS and called through one table, so a test or a fake library can stand in for
// the driver without a rebuild. Versioned symbols are preferred, with the older name as fallback.
//
// Ownership: Load() returns a shared_ptr; whoever holds the last reference shuts NVML down and
// dlcloses it. A worker thread stuck inside an NVML call keeps its reference, so the library is
// never unmapped under it. Thread-safety: the table is immutable after Load(); NVML documents its
// calls as thread-safe.
#pragma once

#include <memory>
#include <string>

#include "core/status.h"
#include "telemetry/nvml/nvml_abi.h"

namespace ww::nvml {

// X(member, symbol, fallback symbol or nullptr, required, return type, parameter list)
// Every NVML function wattwatch calls, once. `required` ones must resolve for Load() to succeed.
#define WW_NVML_ENTRY_POINTS(X)                                                                   \
  X(Init, "nvmlInit_v2", "nvmlInit", true, nvmlReturn_t, (void))                                  \
  X(Shutdown, "nvmlShutdown", nullptr, true, nvmlReturn_t, (void))                                \
  X(ErrorString, "nvmlErrorString", nullptr, false, const char*, (nvmlReturn_t))                  \
  X(SystemGetDriverVersion, "nvmlSystemGetDriverVersion", nullptr, false, nvmlReturn_t,           \
    (char*, unsigned int))                                                                        \
  X(DeviceGetCount, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount", true, nvmlReturn_t,            \
    (unsigned int*))                                                                              \
  X(DeviceGetHandleByIndex, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex", true,  \
    nvmlReturn_t, (unsigned int, nvmlDevice_t*))                                                  \
  X(DeviceGetName, "nvmlDeviceGetName", nullptr, false, nvmlReturn_t,                             \
    (nvmlDevice_t, char*, unsigned int))                                                          \
  X(DeviceGetUUID, "nvmlDeviceGetUUID", nullptr, false, nvmlReturn_t,                             \
    (nvmlDevice_t, char*, unsigned int))                                                          \
  X(DeviceGetPciInfo, "nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetPciInfo_v2", false, nvmlReturn_t,  \
    (nvmlDevice_t, nvmlPciInfo_t*))                                                               \
  X(DeviceGetArchitecture, "nvmlDeviceGetArchitecture", nullptr, false, nvmlReturn_t,             \
    (nvmlDevice_t, nvmlDeviceArchitecture_t*))                                                    \
  X(DeviceGetPowerUsage, "nvmlDeviceGetPowerUsage", nullptr, false, nvmlReturn_t,                 \
    (nvmlDevice_t, unsigned int*))                                                                \
  X(DeviceGetTotalEnergyConsumption, "nvmlDeviceGetTotalEnergyConsumption", nullptr, false,       \
    nvmlReturn_t, (nvmlDevice_t, unsigned long long*))                                            \
  X(DeviceGetEnforcedPowerLimit, "nvmlDeviceGetEnforcedPowerLimit", nullptr, false, nvmlReturn_t, \
    (nvmlDevice_t, unsigned int*))                                                                \
  X(DeviceGetUtilizationRates, "nvmlDeviceGetUtilizationRates", nullptr, false, nvmlReturn_t,     \
    (nvmlDevice_t, nvmlUtilization_t*))                                                           \
  X(DeviceGetClockInfo, "nvmlDeviceGetClockInfo", nullptr, false, nvmlReturn_t,                   \
    (nvmlDevice_t, nvmlClockType_t, unsigned int*))                                               \
  X(DeviceGetCurrentClocksEventReasons, "nvmlDeviceGetCurrentClocksEventReasons",                 \
    "nvmlDeviceGetCurrentClocksThrottleReasons", false, nvmlReturn_t,                             \
    (nvmlDevice_t, unsigned long long*))                                                          \
  X(DeviceGetTemperature, "nvmlDeviceGetTemperature", nullptr, false, nvmlReturn_t,               \
    (nvmlDevice_t, nvmlTemperatureSensors_t, unsigned int*))                                      \
  X(DeviceGetMemoryInfoV2, "nvmlDeviceGetMemoryInfo_v2", nullptr, false, nvmlReturn_t,            \
    (nvmlDevice_t, nvmlMemory_v2_t*))                                                             \
  X(DeviceGetMemoryInfo, "nvmlDeviceGetMemoryInfo", nullptr, false, nvmlReturn_t,                 \
    (nvmlDevice_t, nvmlMemory_t*))                                                                \
  X(DeviceGetPerformanceState, "nvmlDeviceGetPerformanceState", nullptr, false, nvmlReturn_t,     \
    (nvmlDevice_t, nvmlPstates_t*))                                                               \
  X(DeviceGetFieldValues, "nvmlDeviceGetFieldValues", nullptr, false, nvmlReturn_t,               \
    (nvmlDevice_t, int, nvmlFieldValue_t*))                                                       \
  X(DeviceGetSupportedEventTypes, "nvmlDeviceGetSupportedEventTypes", nullptr, false,             \
    nvmlReturn_t, (nvmlDevice_t, unsigned long long*))                                            \
  X(DeviceRegisterEvents, "nvmlDeviceRegisterEvents", nullptr, false, nvmlReturn_t,               \
    (nvmlDevice_t, unsigned long long, nvmlEventSet_t))                                           \
  X(EventSetCreate, "nvmlEventSetCreate", nullptr, false, nvmlReturn_t, (nvmlEventSet_t*))        \
  X(EventSetWait, "nvmlEventSetWait_v2", "nvmlEventSetWait", false, nvmlReturn_t,                 \
    (nvmlEventSet_t, nvmlEventData_t*, unsigned int))                                             \
  X(EventSetFree, "nvmlEventSetFree", nullptr, false, nvmlReturn_t, (nvmlEventSet_t))             \
  X(GpmQueryDeviceSupport, "nvmlGpmQueryDeviceSupport", nullptr, false, nvmlReturn_t,             \
    (nvmlDevice_t, nvmlGpmSupport_t*))                                                            \
  X(GpmSampleAlloc, "nvmlGpmSampleAlloc", nullptr, false, nvmlReturn_t, (nvmlGpmSample_t*))       \
  X(GpmSampleFree, "nvmlGpmSampleFree", nullptr, false, nvmlReturn_t, (nvmlGpmSample_t))          \
  X(GpmSampleGet, "nvmlGpmSampleGet", nullptr, false, nvmlReturn_t,                               \
    (nvmlDevice_t, nvmlGpmSample_t))                                                              \
  X(GpmMetricsGet, "nvmlGpmMetricsGet", nullptr, false, nvmlReturn_t, (nvmlGpmMetricsGet_t*))

// The default library name and the environment variable that overrides it.
inline constexpr const char* kDefaultNvmlLibrary = "libnvidia-ml.so.1";
inline constexpr const char* kNvmlLibraryEnv = "WATTWATCH_NVML_LIB";

// How to point wattwatch at a library; appended to every "cannot use NVML" message.
inline constexpr const char* kNvmlHowToPoint =
    "Install the NVIDIA driver, or point wattwatch at the library with --nvml-lib PATH or "
    "WATTWATCH_NVML_LIB=PATH (e.g. /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1).";

// One enumerator per entry point, in table order: NvmlEntry::kDeviceGetPowerUsage, ...
enum class NvmlEntry : int {
#define WW_NVML_ENUM(member, sym, fallback, required, ret, params) k##member,
  WW_NVML_ENTRY_POINTS(WW_NVML_ENUM)
#undef WW_NVML_ENUM
      kCount,
};
inline constexpr int kNvmlEntryCount = static_cast<int>(NvmlEntry::kCount);

class NvmlLib {
 public:
// `ret` and `params` are a return type and a parenthesized parameter list: they cannot be wrapped
// in parentheses as bugprone-macro-parentheses asks.
// NOLINTNEXTLINE(bugprone-macro-parentheses)
#define WW_NVML_MEMBER(member, sym, fallback, required, ret, params) ret(*member) params = nullptr;
  WW_NVML_ENTRY_POINTS(WW_NVML_MEMBER)
#undef WW_NVML_MEMBER

  // Loads the library: explicit_path if non-empty, else $WATTWATCH_NVML_LIB, else
  // libnvidia-ml.so.1 from the loader's search path; resolves the table and calls nvmlInit.
  // Errors (kUnavailable) say what is missing and how to point wattwatch at a library.
  static Result<std::shared_ptr<NvmlLib>> Load(const std::string& explicit_path);

  // Shuts NVML down and closes the library.
  ~NvmlLib();
  NvmlLib(const NvmlLib&) = delete;
  NvmlLib& operator=(const NvmlLib&) = delete;

  // "Not Supported (NVML_ERROR_NOT_SUPPORTED=3)"-style text for a return code.
  std::string ErrorText(nvmlReturn_t rc) const;
  // The path or name that was dlopen'd, and the symbol actually bound for an entry point
  // (e.g. "nvmlInit_v2", or the fallback name), for `wattwatch devices` and tests.
  const std::string& path() const { return path_; }
  // By member name ("Init"); "" when the library lacks it or the name is not an entry point.
  std::string BoundSymbol(const std::string& member) const;
  // The symbol bound for an entry point, or its preferred name when none was: what a message
  // about a call through this table names. A string literal from the table (static lifetime).
  const char* Symbol(NvmlEntry entry) const {
    return bound_[static_cast<int>(entry)] != nullptr ? bound_[static_cast<int>(entry)]
                                                      : kPreferred[static_cast<int>(entry)];
  }

 private:
  static constexpr const char* kPreferred[kNvmlEntryCount] = {
#define WW_NVML_SYMBOL(member, sym, fallback, required, ret, params) sym,
      WW_NVML_ENTRY_POINTS(WW_NVML_SYMBOL)
#undef WW_NVML_SYMBOL
  };
  NvmlLib() = default;
  void* handle_ = nullptr;
  bool initialized_ = false;
  std::string path_;
  const char* bound_[kNvmlEntryCount] = {};  // symbol bound per entry; nullptr: not exported
};

// Compile-time facts of one entry point: its function type and member, so a caller names an entry
// once (NvmlEntry::kX) and gets both the function and the symbol that was bound for it.
template <NvmlEntry E>
struct NvmlEntryTraits;
#define WW_NVML_TRAITS(member, sym, fallback, required, ret, params)   \
  template <>                                                          \
  struct NvmlEntryTraits<NvmlEntry::k##member> {                       \
    using Fn = ret(*) params; /* NOLINT(bugprone-macro-parentheses) */ \
    static constexpr Fn NvmlLib::*kMember = &NvmlLib::member;          \
  };
WW_NVML_ENTRY_POINTS(WW_NVML_TRAITS)
#undef WW_NVML_TRAITS

// Name of an nvmlReturn_t code ("NVML_ERROR_GPU_IS_LOST"), or "NVML_ERROR_<n>".
std::string NvmlReturnName(nvmlReturn_t rc);

}  // namespace ww::nvml
