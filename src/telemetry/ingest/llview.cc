// The llview format: LLview/JuRepTool per-GPU job tables (JSC): LLview's columns, how its header
// is recognized, and the format's registry row. The table itself is read by ws_table.cc.
#include <memory>
#include <string_view>
#include <utility>

#include "core/sample_ranges.h"
#include "core/strings.h"
#include "telemetry/ingest/format.h"
#include "telemetry/ingest/ws_columns.h"
#include "telemetry/ingest/ws_table.h"

namespace ww::ingest {
namespace ws_table {

constexpr double kGiB = 1024.0 * 1024 * 1024;

// LLview's per-GPU job table (see ws_table.h for where each meaning and unit comes from).
const std::map<std::string, Column, std::less<>>& LlviewColumns() {
  static const std::map<std::string, Column, std::less<>> kColumns = [] {
    std::map<std::string, Column, std::less<>> m;
    auto value = [&](const char* name, std::optional<double> GpuSample::*member, double scale,
                     double lo, double hi, const char* unit) {
      Column c;
      c.kind = Kind::kValue;
      c.name = name;
      c.member = member;
      c.scale = scale;
      c.lo = lo;
      c.hi = hi;
      c.unit = unit;
      m[name] = c;
    };
    auto ignore = [&](const char* name) {
      Column c;
      c.name = name;
      m[name] = c;
    };
    ignore("jobid");
    m["ts"] = Column{Kind::kTime, "ts", nullptr, 1, 0, 0, "epoch s"};
    m["nodeid"] = Column{Kind::kId, "nodeid", nullptr, 1, 0, 0, "<host>_<gpu>"};
    value("gpu_usage", &GpuSample::util_gpu_pct, 1, kPercentRange.lo, kPercentRange.hi, "%");
    value("gpu_memu", &GpuSample::mem_used_mib, 1024, kMemoryRangeMib.lo, kMemoryRangeMib.hi,
          "GiB");
    value("gpu_pu", &GpuSample::power_w, 1, kPowerRangeW.lo, kPowerRangeW.hi, "W");
    value("gpu_temp", &GpuSample::temperature_c, 1, kTemperatureRangeC.lo, kTemperatureRangeC.hi,
          "C");
    value("gpu_memur", &GpuSample::util_mem_pct, 1, kPercentRange.lo, kPercentRange.hi, "%");
    value("gpu_sclk", &GpuSample::sm_clock_mhz, 1, kClockRangeMhz.lo, kClockRangeMhz.hi, "MHz");
    value("gpu_clk", &GpuSample::mem_clock_mhz, 1, kClockRangeMhz.lo, kClockRangeMhz.hi, "MHz");
    value("gpu_pcie_tx", &GpuSample::pcie_tx_bytes_per_s, kGiB, kLinkRangeBytesPerS.lo,
          kLinkRangeBytesPerS.hi, "GiB/s");
    value("gpu_pcie_rx", &GpuSample::pcie_rx_bytes_per_s, kGiB, kLinkRangeBytesPerS.lo,
          kLinkRangeBytesPerS.hi, "GiB/s");
    value("gpu_nvlink_tx", &GpuSample::nvlink_tx_bytes_per_s, kGiB, kLinkRangeBytesPerS.lo,
          kLinkRangeBytesPerS.hi, "GiB/s");
    value("gpu_nvlink_rx", &GpuSample::nvlink_rx_bytes_per_s, kGiB, kLinkRangeBytesPerS.lo,
          kLinkRangeBytesPerS.hi, "GiB/s");
    m["gpu_clkr"] = Column{Kind::kReasons, "gpu_clkr", nullptr, 1, 0, 0, "NVML reason bits"};
    m["gpu_pfst"] = Column{Kind::kPstate, "gpu_pfst", nullptr, 1, 0, 0, "P-state"};
    // LLview attributes whose unit its source leaves undocumented for this table: not read.
    for (const char* n :
         {"gpu_active", "gpu_memf", "gpu_memt", "gpu_link", "gpu_pciw", "gpu_rtp_d", "gpu_rtp_s",
          "gpu_rtpd", "gpu_eadm_d", "gpu_eadm_s", "gpu_eaom_d", "gpu_eaom_s", "gpu_evdm_d",
          "gpu_evdm_s", "gpu_evom_d", "gpu_evom_s", "gpuid", "node"}) {
      ignore(n);
    }
    return m;
  }();
  return kColumns;
}

}  // namespace ws_table

bool LooksLikeLlviewHeader(std::string_view line) {
  const auto toks = SplitWhitespace(TrimSpace(line));
  if (toks.size() < 3) return false;
  bool ts = false, nodeid = false;
  int gpu = 0;
  for (auto t : toks) {
    const std::string l = AsciiLower(t);
    ts |= l == "ts";
    nodeid |= l == "nodeid";
    if (l == "gpu_usage" || l == "gpu_pu") ++gpu;
  }
  return ts && nodeid && gpu > 0;
}

// --format llview: recognized by its header.
namespace {
constexpr DetectRule kLlviewDetect[] = {
    {50, DetectRule::kLine,
     [](const DetectLine& l) { return l.index == 0 && LooksLikeLlviewHeader(l.text); }},
};
}  // namespace

extern const Format kLlviewFormat;
const Format kLlviewFormat{"llview", "LLview/JuRepTool per-GPU job tables (JSC)", kLlviewDetect,
                           [](const OpenRequest& r, std::unique_ptr<LineReader> lines) {
                             return OpenWhitespaceTable(std::move(lines), r.host, r.host_index,
                                                        r.reader, /*llview=*/true,
                                                        r.options.multiple_files);
                           },
                           write::kLlviewWriters};

}  // namespace ww::ingest
