// The subset of NVML's C ABI that wattwatch uses, declared here so nvml.h is never needed and
// libnvidia-ml is never linked (it is dlopen'd, see nvml_api.h). Only what is used is declared.
//
// Matched against NVIDIA's nvml.h as shipped in NVIDIA/DCGM sdk/nvidia/nvml/nvml.h
// (NVML_API_VERSION 12, header copyright 1993-2026), cross-checked against the CUDA 12 nvml.h
// copies in go-nvml and pynvml. Layouts are pinned by the static_asserts at the bottom.
// Units are NVML's: power in mW, energy in mJ, memory in bytes, clocks in MHz, NVLink counters in
// KiB, PCIe counters in bytes, field timestamps in microseconds since 1970.
//
// Thread-safety: plain declarations. NVML itself documents its entry points as thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ww::nvml {

// C enums are 4-byte ints on every ABI NVML ships for; int keeps the ABI exact in C++.
using nvmlReturn_t = int;
using nvmlClockType_t = int;
using nvmlTemperatureSensors_t = int;
using nvmlPstates_t = int;
using nvmlValueType_t = int;
using nvmlDeviceArchitecture_t = unsigned int;

struct nvmlDevice_st;
using nvmlDevice_t = nvmlDevice_st*;
struct nvmlEventSet_st;
using nvmlEventSet_t = nvmlEventSet_st*;
struct nvmlGpmSample_st;
using nvmlGpmSample_t = nvmlGpmSample_st*;

// nvmlReturn_t values.
inline constexpr nvmlReturn_t NVML_SUCCESS = 0;
inline constexpr nvmlReturn_t NVML_ERROR_UNINITIALIZED = 1;
inline constexpr nvmlReturn_t NVML_ERROR_INVALID_ARGUMENT = 2;
inline constexpr nvmlReturn_t NVML_ERROR_NOT_SUPPORTED = 3;
inline constexpr nvmlReturn_t NVML_ERROR_NO_PERMISSION = 4;
inline constexpr nvmlReturn_t NVML_ERROR_NOT_FOUND = 6;
inline constexpr nvmlReturn_t NVML_ERROR_INSUFFICIENT_SIZE = 7;
inline constexpr nvmlReturn_t NVML_ERROR_DRIVER_NOT_LOADED = 9;
inline constexpr nvmlReturn_t NVML_ERROR_TIMEOUT = 10;
inline constexpr nvmlReturn_t NVML_ERROR_LIBRARY_NOT_FOUND = 12;
inline constexpr nvmlReturn_t NVML_ERROR_FUNCTION_NOT_FOUND = 13;
inline constexpr nvmlReturn_t NVML_ERROR_GPU_IS_LOST = 15;
inline constexpr nvmlReturn_t NVML_ERROR_RESET_REQUIRED = 16;
inline constexpr nvmlReturn_t NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18;
inline constexpr nvmlReturn_t NVML_ERROR_NO_DATA = 21;
inline constexpr nvmlReturn_t NVML_ERROR_ARGUMENT_VERSION_MISMATCH = 25;
inline constexpr nvmlReturn_t NVML_ERROR_UNKNOWN = 999;

// nvmlClockType_t
inline constexpr nvmlClockType_t NVML_CLOCK_SM = 1;
inline constexpr nvmlClockType_t NVML_CLOCK_MEM = 2;
// nvmlTemperatureSensors_t
inline constexpr nvmlTemperatureSensors_t NVML_TEMPERATURE_GPU = 0;
// nvmlPstates_t: NVML_PSTATE_0 = 0 .. NVML_PSTATE_15 = 15, NVML_PSTATE_UNKNOWN = 32.
inline constexpr nvmlPstates_t NVML_PSTATE_15 = 15;
inline constexpr nvmlPstates_t NVML_PSTATE_UNKNOWN = 32;
// nvmlDeviceArchitecture_t
inline constexpr nvmlDeviceArchitecture_t NVML_DEVICE_ARCH_AMPERE = 7;
inline constexpr nvmlDeviceArchitecture_t NVML_DEVICE_ARCH_ADA = 8;
inline constexpr nvmlDeviceArchitecture_t NVML_DEVICE_ARCH_HOPPER = 9;
inline constexpr nvmlDeviceArchitecture_t NVML_DEVICE_ARCH_BLACKWELL = 10;
inline constexpr nvmlDeviceArchitecture_t NVML_DEVICE_ARCH_UNKNOWN = 0xffffffffu;

// nvmlValueType_t
inline constexpr nvmlValueType_t NVML_VALUE_TYPE_DOUBLE = 0;
inline constexpr nvmlValueType_t NVML_VALUE_TYPE_UNSIGNED_INT = 1;
inline constexpr nvmlValueType_t NVML_VALUE_TYPE_UNSIGNED_LONG = 2;
inline constexpr nvmlValueType_t NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3;
inline constexpr nvmlValueType_t NVML_VALUE_TYPE_SIGNED_LONG_LONG = 4;
inline constexpr nvmlValueType_t NVML_VALUE_TYPE_SIGNED_INT = 5;
inline constexpr nvmlValueType_t NVML_VALUE_TYPE_UNSIGNED_SHORT = 6;

// Field identifiers (nvmlDeviceGetFieldValues).
inline constexpr unsigned int NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX = 138;  // KiB, cumulative
inline constexpr unsigned int NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX = 139;  // KiB, cumulative
inline constexpr unsigned int NVML_FI_DEV_POWER_INSTANT = 186;              // mW
inline constexpr unsigned int NVML_FI_DEV_PCIE_COUNT_TX_BYTES = 197;  // bytes; "can be wrapped"
inline constexpr unsigned int NVML_FI_DEV_PCIE_COUNT_RX_BYTES = 198;  // bytes; "can be wrapped"
// NVLink throughput fields: scopeId UINT_MAX sums all links.
inline constexpr unsigned int kNvmlScopeAllLinks = 0xffffffffu;

// Event types (nvmlDeviceRegisterEvents).
inline constexpr unsigned long long nvmlEventTypeXidCriticalError = 0x0000000000000008ULL;

// GPM metric ids (nvmlGpmMetricId_t); values are percentages 0.0 - 100.0.
inline constexpr unsigned int NVML_GPM_METRIC_SM_UTIL = 2;
inline constexpr unsigned int NVML_GPM_METRIC_SM_OCCUPANCY = 3;
inline constexpr unsigned int NVML_GPM_METRIC_ANY_TENSOR_UTIL = 5;
inline constexpr unsigned int NVML_GPM_METRIC_DRAM_BW_UTIL = 10;
// The metrics[] array length changed across releases (98, 210, 333) without a version bump; the
// library reads only numMetrics entries, so the largest known length is always safe to pass.
inline constexpr unsigned int NVML_GPM_METRIC_MAX = 333;
inline constexpr unsigned int NVML_GPM_METRICS_GET_VERSION = 1;
inline constexpr unsigned int NVML_GPM_SUPPORT_VERSION = 1;

inline constexpr unsigned int NVML_DEVICE_NAME_V2_BUFFER_SIZE = 96;
inline constexpr unsigned int NVML_DEVICE_UUID_BUFFER_SIZE = 80;
inline constexpr unsigned int NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE = 80;

struct nvmlUtilization_t {
  unsigned int gpu;     // % of the last sample period with a kernel running
  unsigned int memory;  // % of the last sample period with device memory read or written
};

struct nvmlMemory_t {  // v1, bytes
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
};

struct nvmlMemory_v2_t {  // bytes; used excludes the driver-reserved amount
  unsigned int version;
  unsigned long long total;
  unsigned long long reserved;
  unsigned long long free;
  unsigned long long used;
};
// NVML_STRUCT_VERSION(Memory, 2)
inline constexpr unsigned int nvmlMemory_v2 =
    static_cast<unsigned int>(sizeof(nvmlMemory_v2_t)) | (2u << 24);

struct nvmlPciInfo_t {
  char busIdLegacy[16];
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pciDeviceId;
  unsigned int pciSubSystemId;
  char busId[32];
};

union nvmlValue_t {
  double dVal;
  int siVal;
  unsigned int uiVal;
  unsigned long ulVal;
  unsigned long long ullVal;
  signed long long sllVal;
  unsigned short usVal;
};

struct nvmlFieldValue_t {
  unsigned int fieldId;
  unsigned int scopeId;
  long long timestamp;  // CPU timestamp of the value, microseconds since 1970
  long long latencyUsec;
  nvmlValueType_t valueType;
  nvmlReturn_t nvmlReturn;  // check before reading value
  nvmlValue_t value;
};

struct nvmlEventData_t {
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData;  // the Xid for nvmlEventTypeXidCriticalError
  unsigned int gpuInstanceId;
  unsigned int computeInstanceId;
};

struct nvmlGpmSupport_t {
  unsigned int version;  // NVML_GPM_SUPPORT_VERSION
  unsigned int isSupportedDevice;
};

struct nvmlGpmMetric_t {
  unsigned int metricId;
  nvmlReturn_t nvmlReturn;
  double value;
  struct {
    char* shortName;
    char* longName;
    char* unit;
  } metricInfo;
};

struct nvmlGpmMetricsGet_t {
  unsigned int version;  // NVML_GPM_METRICS_GET_VERSION
  unsigned int numMetrics;
  nvmlGpmSample_t sample1;
  nvmlGpmSample_t sample2;
  nvmlGpmMetric_t metrics[NVML_GPM_METRIC_MAX];
};

static_assert(sizeof(nvmlFieldValue_t) == 40 && offsetof(nvmlFieldValue_t, value) == 32);
static_assert(offsetof(nvmlFieldValue_t, valueType) == 24);
static_assert(sizeof(nvmlEventData_t) == 32 && offsetof(nvmlEventData_t, eventData) == 16);
static_assert(sizeof(nvmlMemory_v2_t) == 40 && nvmlMemory_v2 == 0x02000028u);
static_assert(sizeof(nvmlPciInfo_t) == 68 && offsetof(nvmlPciInfo_t, busId) == 36);
static_assert(sizeof(nvmlGpmMetric_t) == 40 && offsetof(nvmlGpmMetricsGet_t, metrics) == 24);
static_assert(sizeof(nvmlUtilization_t) == 8 && sizeof(nvmlMemory_t) == 24);

}  // namespace ww::nvml
