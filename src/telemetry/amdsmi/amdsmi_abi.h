// The part of the AMD SMI C ABI (libamd_smi.so, ROCm/amdsmi) that wattwatch calls, declared by the
// project so nothing links against ROCm and the build needs no ROCm headers.
//
// Pinned to amdsmi library version 24.7 (AMDSMI_LIB_VERSION_YEAR 24, _MAJOR 7), as declared in
// ROCm/amdsmi include/amd_smi/amdsmi.h at commit 0ceca28 (October 2024). Every struct below has
// that header's layout, reserved tails included, since the library writes whole structs. Layouts
// change between majors (25.x grew amdsmi_power_info_t to 64-bit fields), so AmdSmiLib::Load
// checks amdsmi_get_lib_version and refuses any other year.major (see kAmdSmiPinned*).
// Units, as that header documents them: power_info in W, power_cap_info in uW, vram_usage in MB,
// activity in %, temperature metric in degrees C, clock info in MHz, energy in counter ticks of
// counter_resolution uJ.
#pragma once

#include <cstdint>

extern "C" {

typedef uint32_t amdsmi_status_t;  // an enum in the header; 32 bits on every ABI it targets
inline constexpr amdsmi_status_t AMDSMI_STATUS_SUCCESS = 0;
inline constexpr amdsmi_status_t AMDSMI_STATUS_INVAL = 1;
inline constexpr amdsmi_status_t AMDSMI_STATUS_NOT_SUPPORTED = 2;
inline constexpr amdsmi_status_t AMDSMI_STATUS_NOT_YET_IMPLEMENTED = 3;
inline constexpr amdsmi_status_t AMDSMI_STATUS_FAIL_LOAD_MODULE = 4;
inline constexpr amdsmi_status_t AMDSMI_STATUS_NO_PERM = 10;
inline constexpr amdsmi_status_t AMDSMI_STATUS_INIT_ERROR = 18;
inline constexpr amdsmi_status_t AMDSMI_STATUS_NOT_FOUND = 31;
inline constexpr amdsmi_status_t AMDSMI_STATUS_NOT_INIT = 32;
inline constexpr amdsmi_status_t AMDSMI_STATUS_DRIVER_NOT_LOADED = 34;
inline constexpr amdsmi_status_t AMDSMI_STATUS_NO_DATA = 40;
inline constexpr amdsmi_status_t AMDSMI_STATUS_UNKNOWN_ERROR = 0xFFFFFFFF;

inline constexpr uint64_t AMDSMI_INIT_AMD_GPUS = 1U << 1;

typedef void* amdsmi_processor_handle;
typedef void* amdsmi_socket_handle;

// amdsmi_temperature_type_t / amdsmi_temperature_metric_t / amdsmi_clk_type_t: C enums (int).
typedef int amdsmi_temperature_type_t;
inline constexpr amdsmi_temperature_type_t AMDSMI_TEMPERATURE_TYPE_EDGE = 0;
inline constexpr amdsmi_temperature_type_t AMDSMI_TEMPERATURE_TYPE_HOTSPOT = 1;  // = JUNCTION
typedef int amdsmi_temperature_metric_t;
inline constexpr amdsmi_temperature_metric_t AMDSMI_TEMP_CURRENT = 0;
typedef int amdsmi_clk_type_t;
inline constexpr amdsmi_clk_type_t AMDSMI_CLK_TYPE_GFX = 0;  // = AMDSMI_CLK_TYPE_SYS
inline constexpr amdsmi_clk_type_t AMDSMI_CLK_TYPE_MEM = 4;  // SYS, DF, DCEF, SOC, MEM

inline constexpr int AMDSMI_MAX_STRING_LENGTH = 64;
inline constexpr int AMDSMI_NORMAL_STRING_LENGTH = 32;
inline constexpr int AMDSMI_256_LENGTH = 256;

typedef struct {
  uint32_t year;
  uint32_t major;
  uint32_t minor;
  uint32_t release;
  const char* build;
} amdsmi_version_t;

typedef struct {
  uint32_t current_socket_power;  // W; 0xFFFF (or 0) where the ASIC reports only the average
  uint32_t average_socket_power;  // W
  uint32_t gfx_voltage;           // mV
  uint32_t soc_voltage;           // mV
  uint32_t mem_voltage;           // mV
  uint32_t power_limit;           // W
  uint32_t reserved[11];
} amdsmi_power_info_t;

typedef struct {
  uint64_t power_cap;          // uW
  uint64_t default_power_cap;  // uW
  uint64_t dpm_cap;            // MHz
  uint64_t min_power_cap;      // uW
  uint64_t max_power_cap;      // uW
  uint64_t reserved[3];
} amdsmi_power_cap_info_t;

typedef struct {
  uint32_t gfx_activity;  // %
  uint32_t umc_activity;  // %
  uint32_t mm_activity;   // %
  uint32_t reserved[13];
} amdsmi_engine_usage_t;

typedef struct {
  uint32_t vram_total;  // MB
  uint32_t vram_used;   // MB
  uint32_t reserved[2];
} amdsmi_vram_usage_t;

typedef struct {
  uint32_t clk;  // MHz
  uint32_t min_clk;
  uint32_t max_clk;
  uint8_t clk_locked;
  uint8_t clk_deep_sleep;
  uint32_t reserved[4];
} amdsmi_clk_info_t;

typedef struct {
  char market_name[AMDSMI_256_LENGTH];
  uint32_t vendor_id;
  char vendor_name[AMDSMI_MAX_STRING_LENGTH];
  uint32_t subvendor_id;
  uint64_t device_id;
  uint32_t rev_id;
  char asic_serial[AMDSMI_NORMAL_STRING_LENGTH];
  uint32_t oam_id;
  uint32_t num_of_compute_units;
  uint64_t target_graphics_version;
  uint32_t reserved[15];
} amdsmi_asic_info_t;

typedef struct {
  char model_number[AMDSMI_256_LENGTH];
  char product_serial[AMDSMI_NORMAL_STRING_LENGTH];
  char fru_id[AMDSMI_NORMAL_STRING_LENGTH];
  char product_name[AMDSMI_256_LENGTH];
  char manufacturer_name[AMDSMI_MAX_STRING_LENGTH];
  uint32_t reserved[32];
} amdsmi_board_info_t;

}  // extern "C"

// The amdsmi version whose layouts are declared above.
inline constexpr uint32_t kAmdSmiPinnedYear = 24;
inline constexpr uint32_t kAmdSmiPinnedMajor = 7;

// Sizes as amdsmi 24.7 lays them out on x86-64 and aarch64 (LP64).
static_assert(sizeof(amdsmi_power_info_t) == 68);
static_assert(sizeof(amdsmi_power_cap_info_t) == 64);
static_assert(sizeof(amdsmi_engine_usage_t) == 64);
static_assert(sizeof(amdsmi_vram_usage_t) == 16);
static_assert(sizeof(amdsmi_clk_info_t) == 32);
static_assert(sizeof(amdsmi_asic_info_t) == 456);
static_assert(sizeof(amdsmi_board_info_t) == 768);
