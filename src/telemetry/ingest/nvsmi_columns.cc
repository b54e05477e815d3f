// The nvidia-smi reader's column names (nvsmi_columns.h): --query-gpu and dmon names, value
// ranges and destinations, and the header tests.
#include "telemetry/ingest/nvsmi_columns.h"

#include <map>
#include <unordered_map>

#include "core/strings.h"
#include "telemetry/ingest/nvsmi_log.h"

namespace ww {
namespace ingest::nvsmi {
namespace {

// NVML clock event reason bits (nvml.h: nvmlClocksEventReason*).
const std::map<std::string, uint64_t, std::less<>>& ReasonBits() {
  static const std::map<std::string, uint64_t, std::less<>> bits = {
      {"gpu_idle", 0x1},
      {"applications_clocks_setting", 0x2},
      {"sw_power_cap", 0x4},
      {"hw_slowdown", 0x8},
      {"sync_boost", 0x10},
      {"sw_thermal_slowdown", 0x20},
      {"hw_thermal_slowdown", 0x40},
      {"hw_power_brake_slowdown", 0x80},
      {"display_clock_setting", 0x100},
  };
  return bits;
}

}  // namespace

Column MapCsvName(std::string_view raw) {
  Column c;
  c.name = std::string(TrimSpace(raw));
  std::string name = AsciiLower(c.name);
  if (auto bracket = name.find('['); bracket != std::string::npos) name.resize(bracket);
  name = std::string(TrimSpace(name));
  static const std::unordered_map<std::string, Col> kNames = {
      {"timestamp", Col::kTimestamp},
      {"index", Col::kIndex},
      {"name", Col::kName},
      {"gpu_name", Col::kName},
      {"uuid", Col::kUuid},
      {"gpu_uuid", Col::kUuid},
      {"pci.bus_id", Col::kBusId},
      {"gpu_bus_id", Col::kBusId},
      {"power.draw", Col::kPowerAvg},
      {"power.draw.average", Col::kPowerAvg},
      {"power.draw.instant", Col::kPowerInstant},
      {"power.limit", Col::kPowerLimit},
      {"enforced.power.limit", Col::kEnforcedLimit},
      {"power.limit.enforced", Col::kEnforcedLimit},
      {"utilization.gpu", Col::kUtilGpu},
      {"utilization.memory", Col::kUtilMem},
      {"clocks.sm", Col::kClockSm},
      {"clocks.current.sm", Col::kClockSm},
      {"clocks.mem", Col::kClockMem},
      {"clocks.memory", Col::kClockMem},
      {"clocks.current.memory", Col::kClockMem},
      {"temperature.gpu", Col::kTemp},
      {"memory.used", Col::kMemUsed},
      {"memory.total", Col::kMemTotal},
      {"pstate", Col::kPstate},
      {"clocks_event_reasons.active", Col::kReasonsMask},
      {"clocks_throttle_reasons.active", Col::kReasonsMask},
  };
  if (auto it = kNames.find(name); it != kNames.end()) {
    c.col = it->second;
    return c;
  }
  for (std::string_view prefix : {"clocks_event_reasons.", "clocks_throttle_reasons."}) {
    if (name.rfind(prefix, 0) == 0) {
      auto it = ReasonBits().find(std::string_view(name).substr(prefix.size()));
      if (it != ReasonBits().end()) {
        c.col = Col::kReasonBit;
        c.bit = it->second;
      }
    }
  }
  return c;
}

Column MapDmonName(std::string_view raw) {
  Column c;
  c.name = std::string(raw);
  static const std::unordered_map<std::string, Col> kNames = {
      {"date", Col::kDate},    {"time", Col::kTime},    {"gpu", Col::kIndex},
      {"idx", Col::kIndex},    {"pwr", Col::kPowerAvg}, {"gtemp", Col::kTemp},
      {"sm", Col::kUtilGpu},   {"mem", Col::kUtilMem},  {"mclk", Col::kClockMem},
      {"pclk", Col::kClockSm}, {"fb", Col::kMemUsed},
  };
  if (auto it = kNames.find(AsciiLower(raw)); it != kNames.end()) c.col = it->second;
  return c;
}

PlausibleRange RangeFor(Col col) {
  switch (col) {
    case Col::kPowerAvg:
    case Col::kPowerInstant:
    case Col::kPowerLimit:
    case Col::kEnforcedLimit:
      return kPowerRangeW;
    case Col::kUtilGpu:
    case Col::kUtilMem:
      return kPercentRange;
    case Col::kClockSm:
    case Col::kClockMem:
      return kClockRangeMhz;
    case Col::kTemp:
      return kTemperatureRangeC;
    case Col::kMemUsed:
    case Col::kMemTotal:
      return kMemoryRangeMib;
    default:
      return {-1e300, 1e300};
  }
}

std::optional<double> GpuSample::*MemberFor(Col col) {
  switch (col) {
    case Col::kPowerAvg:
      return &GpuSample::power_w;
    case Col::kPowerInstant:
      return &GpuSample::power_instant_w;
    case Col::kPowerLimit:
      return &GpuSample::power_limit_w;
    case Col::kEnforcedLimit:
      return &GpuSample::power_limit_w;
    case Col::kUtilGpu:
      return &GpuSample::util_gpu_pct;
    case Col::kUtilMem:
      return &GpuSample::util_mem_pct;
    case Col::kClockSm:
      return &GpuSample::sm_clock_mhz;
    case Col::kClockMem:
      return &GpuSample::mem_clock_mhz;
    case Col::kTemp:
      return &GpuSample::temperature_c;
    case Col::kMemUsed:
      return &GpuSample::mem_used_mib;
    case Col::kMemTotal:
      return &GpuSample::mem_total_mib;
    default:
      return nullptr;
  }
}

bool LooksLikeHeaderLine(std::string_view t) {
  int known = 0, fields = 0;
  size_t pos = 0;
  while (pos <= t.size()) {
    size_t comma = t.find(',', pos);
    if (comma == std::string_view::npos) comma = t.size();
    ++fields;
    if (MapCsvName(t.substr(pos, comma - pos)).col != Col::kIgnore) ++known;
    pos = comma + 1;
  }
  return known >= 2 && known * 2 >= fields;
}

}  // namespace ingest::nvsmi

bool LooksLikeNvsmiCsvHeader(std::string_view line) {
  const std::string l = AsciiLower(line);
  for (const char* name : {"power.draw", "utilization.gpu", "utilization.memory", "memory.used",
                           "temperature.gpu", "clocks.", "pci.bus_id", "enforced.power.limit",
                           "power.limit", "clocks_event_reasons", "clocks_throttle_reasons"}) {
    if (l.find(name) != std::string::npos) return true;
  }
  return false;
}

}  // namespace ww
