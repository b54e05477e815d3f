// The DCGM field table (fields.h): one row per DCGM field, in the order the readers list them.
#include "telemetry/fields.h"

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <unordered_map>
#include <vector>

namespace ww {
namespace {

using K = DcgmFieldKind;
using P = DcgmPrinted;

// DCGM's units and ids (dcgm_fields.h); the HELP texts as dcgm-exporter prints them. The two
// clock-reason names are one field (112) under its old and new name: exporters write either.
// The bit mask and the energy counter are 64-bit integers that reach a reader as doubles.
// Columns: name, id, dmon tag, kind, member, range, unit, exporter order, printed as, HELP.
const DcgmFieldDef kFields[] = {
    {"DCGM_FI_DEV_POWER_USAGE", 155, "POWER", K::kValue, &GpuSample::power_w, kPowerRangeW, "W", 4,
     P::kFloat, "Power draw (in W)."},
    {"DCGM_FI_DEV_POWER_USAGE_INSTANT", 157, nullptr, K::kValue, &GpuSample::power_instant_w,
     kPowerRangeW, "W", 0, P::kFloat, nullptr},
    {"DCGM_FI_DEV_ENFORCED_POWER_LIMIT", 158, nullptr, K::kEnforcedLimit, &GpuSample::power_limit_w,
     kPowerRangeW, "W", 0, P::kFloat, nullptr},
    {"DCGM_FI_DEV_POWER_MGMT_LIMIT", 160, "PMLMT", K::kMgmtLimit, &GpuSample::power_limit_w,
     kPowerRangeW, "W", 0, P::kFloat, nullptr},
    {"DCGM_FI_DEV_GPU_UTIL", 203, "GPUTL", K::kUtil, &GpuSample::util_gpu_pct, kPercentRange, "%",
     5, P::kInt, "GPU utilization (in %)."},
    {"DCGM_FI_DEV_MEM_COPY_UTIL", 204, "MCUTL", K::kValue, &GpuSample::util_mem_pct, kPercentRange,
     "%", 6, P::kInt, "Memory utilization (in %)."},
    {"DCGM_FI_DEV_SM_CLOCK", 100, "SMCLK", K::kValue, &GpuSample::sm_clock_mhz, kClockRangeMhz,
     "MHz", 1, P::kInt, "SM clock frequency (in MHz)."},
    {"DCGM_FI_DEV_MEM_CLOCK", 101, "MMCLK", K::kValue, &GpuSample::mem_clock_mhz, kClockRangeMhz,
     "MHz", 2, P::kInt, "Memory clock frequency (in MHz)."},
    {"DCGM_FI_DEV_GPU_TEMP", 150, "TMPTR", K::kValue, &GpuSample::temperature_c, kTemperatureRangeC,
     "C", 3, P::kInt, "GPU temperature (in C)."},
    {"DCGM_FI_DEV_FB_USED", 252, "FBUSD", K::kValue, &GpuSample::mem_used_mib, kMemoryRangeMib,
     "MiB", 8, P::kInt, "Framebuffer memory used (in MiB)."},
    {"DCGM_FI_DEV_FB_TOTAL", 250, "FBTTL", K::kValue, &GpuSample::mem_total_mib, kMemoryRangeMib,
     "MiB", 0, P::kInt, nullptr},
    {"DCGM_FI_DEV_FB_FREE", 251, nullptr, K::kFbFree, nullptr, kMemoryRangeMib, "MiB", 7, P::kInt,
     "Framebuffer memory free (in MiB)."},
    {"DCGM_FI_DEV_FB_RESERVED", 253, nullptr, K::kFbReserved, nullptr, kMemoryRangeMib, "MiB", 0,
     P::kInt, nullptr},
    {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", 156, "TOTEC", K::kEnergy, nullptr, kCounterRange, "mJ",
     0, P::kInt, nullptr},
    {"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", 112, nullptr, K::kReasons, nullptr, kCounterRange,
     "bitmask", 0, P::kInt, nullptr},
    {"DCGM_FI_DEV_CLOCKS_EVENT_REASONS", 112, nullptr, K::kReasons, nullptr, kCounterRange,
     "bitmask", 9, P::kInt, "Current clock event reasons."},
    {"DCGM_FI_PROF_GR_ENGINE_ACTIVE", 1001, "GRACT", K::kGrActive,
     &GpuSample::gr_engine_active_ratio, kActivityRange, "ratio", 10, P::kFloat,
     "Ratio of time the graphics engine is active."},
    {"DCGM_FI_PROF_SM_ACTIVE", 1002, "SMACT", K::kValue, &GpuSample::sm_activity_ratio,
     kActivityRange, "ratio", 11, P::kFloat,
     "The ratio of cycles an SM has at least 1 warp assigned."},
    {"DCGM_FI_PROF_SM_OCCUPANCY", 1003, "SMOCC", K::kValue, &GpuSample::sm_occupancy_ratio,
     kActivityRange, "ratio", 12, P::kFloat, "The ratio of number of warps resident on an SM."},
    {"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", 1004, "TENSO", K::kValue, &GpuSample::tensor_activity_ratio,
     kActivityRange, "ratio", 13, P::kFloat, "Ratio of cycles the tensor (HMMA) pipe is active."},
    {"DCGM_FI_PROF_DRAM_ACTIVE", 1005, "DRAMA", K::kValue, &GpuSample::dram_bw_util_ratio,
     kActivityRange, "ratio", 14, P::kFloat,
     "Ratio of cycles the device memory interface is active sending or receiving data."},
    {"DCGM_FI_PROF_PCIE_TX_BYTES", 1009, "PCITX", K::kValue, &GpuSample::pcie_tx_bytes_per_s,
     kLinkRangeBytesPerS, "bytes/s", 15, P::kFloat,
     "The rate of data transmitted over the PCIe bus in bytes/s."},
    {"DCGM_FI_PROF_PCIE_RX_BYTES", 1010, "PCIRX", K::kValue, &GpuSample::pcie_rx_bytes_per_s,
     kLinkRangeBytesPerS, "bytes/s", 16, P::kFloat,
     "The rate of data received over the PCIe bus in bytes/s."},
    {"DCGM_FI_PROF_NVLINK_TX_BYTES", 1011, "NVLTX", K::kValue, &GpuSample::nvlink_tx_bytes_per_s,
     kLinkRangeBytesPerS, "bytes/s", 17, P::kFloat,
     "The rate of data transmitted over NVLink in bytes/s."},
    {"DCGM_FI_PROF_NVLINK_RX_BYTES", 1012, "NVLRX", K::kValue, &GpuSample::nvlink_rx_bytes_per_s,
     kLinkRangeBytesPerS, "bytes/s", 18, P::kFloat,
     "The rate of data received over NVLink in bytes/s."},
};
// Readers keep a bit per field (a scrape's fields seen, the fields a file used).
static_assert(std::size(kFields) <= 64);

}  // namespace

std::span<const DcgmFieldDef> DcgmFields() { return kFields; }

int DcgmFieldIndex(std::string_view name) {
  static const std::unordered_map<std::string_view, int> kByName = [] {
    std::unordered_map<std::string_view, int> m;
    for (size_t i = 0; i < std::size(kFields); ++i) m.emplace(kFields[i].name, static_cast<int>(i));
    return m;
  }();
  auto it = kByName.find(name);
  return it == kByName.end() ? -1 : it->second;
}

const DcgmFieldDef& DcgmFieldOf(std::optional<double> GpuSample::*member) {
  for (const DcgmFieldDef& f : kFields) {
    if (f.member == member) return f;
  }
  // A programming error (a member no row fills), caught by tests/telemetry/fields_test.cc.
  std::abort();
}

const DcgmFieldDef& DcgmFieldById(int id) {
  for (const DcgmFieldDef& f : kFields) {
    if (f.id == id) return f;
  }
  std::abort();  // a programming error, as in DcgmFieldOf
}

const DcgmFieldDef* DcgmFieldByDmonTag(std::string_view tag) {
  for (const DcgmFieldDef& f : kFields) {
    if (f.dmon_tag != nullptr && tag == f.dmon_tag) return &f;
  }
  return nullptr;
}

std::span<const DcgmFieldDef* const> DcgmExporterFields() {
  static const std::vector<const DcgmFieldDef*> kWritten = [] {
    std::vector<const DcgmFieldDef*> v;
    for (const DcgmFieldDef& f : kFields) {
      if (f.exporter_order > 0) v.push_back(&f);
    }
    std::sort(v.begin(), v.end(), [](const DcgmFieldDef* a, const DcgmFieldDef* b) {
      return a->exporter_order < b->exporter_order;
    });
    return v;
  }();
  return kWritten;
}

namespace {
// AMD: ROCm/device-metrics-exporter's docs/configuration/metricslist.md (power in W, activity in
// %, VRAM in MB as amd-smi counts them: MiB). Gaudi: the habanalabs_* names of Intel's Prometheus
// Metric Exporter (docs.habana.ai): power and its default limit in mW, memory in bytes.
constexpr double kMibPerByte = 1.0 / (1024.0 * 1024.0);
constexpr ExporterSeriesDef kExporterSeries[] = {
    {"amd", "gpu_power_usage", "DCGM_FI_DEV_POWER_USAGE", 1},
    {"amd", "gpu_gfx_activity", "DCGM_FI_DEV_GPU_UTIL", 1},
    {"amd", "gpu_umc_activity", "DCGM_FI_DEV_MEM_COPY_UTIL", 1},
    {"amd", "gpu_used_vram", "DCGM_FI_DEV_FB_USED", 1},
    {"amd", "gpu_total_vram", "DCGM_FI_DEV_FB_TOTAL", 1},
    {"amd", "gpu_edge_temperature", "DCGM_FI_DEV_GPU_TEMP", 1},      // MI2xx
    {"amd", "gpu_junction_temperature", "DCGM_FI_DEV_GPU_TEMP", 1},  // MI3xx (never both)
    {"gaudi", "habanalabs_power_mW", "DCGM_FI_DEV_POWER_USAGE", 0.001},
    {"gaudi", "habanalabs_power_default_limit_mW", "DCGM_FI_DEV_POWER_MGMT_LIMIT", 0.001},
    {"gaudi", "habanalabs_utilization", "DCGM_FI_DEV_GPU_UTIL", 1},
    {"gaudi", "habanalabs_memory_used_bytes", "DCGM_FI_DEV_FB_USED", kMibPerByte},
    {"gaudi", "habanalabs_memory_total_bytes", "DCGM_FI_DEV_FB_TOTAL", kMibPerByte},
    {"gaudi", "habanalabs_temperature_onchip", "DCGM_FI_DEV_GPU_TEMP", 1},
};
}  // namespace

std::span<const ExporterSeriesDef> ExporterSeries() { return kExporterSeries; }

const ExporterSeriesDef* ExporterSeriesByName(std::string_view name) {
  for (const ExporterSeriesDef& s : kExporterSeries) {
    if (name == s.name) return &s;
  }
  return nullptr;
}

}  // namespace ww
