#include "telemetry/write/nvsmi_writer.h"

#include <fmt/format.h>

#include "core/timefmt.h"

namespace ww {
namespace {

void AppendValue(std::string& out, const std::optional<double>& v, const char* fmt_spec,
                 const char* unit) {
  out += ", ";
  if (!v) {
    out += "[N/A]";
    return;
  }
  fmt::format_to(std::back_inserter(out), fmt::runtime(fmt_spec), *v);
  out += unit;
}

}  // namespace

void AppendNvsmiTimestamp(std::string& out, int64_t unix_ms) {
  std::string iso = FormatIsoMs(unix_ms);  // 2024-04-05T06:17:19.635
  iso[4] = '/';
  iso[7] = '/';
  iso[10] = ' ';
  out += iso;
}

void NvsmiCsvWriter::WriteHeader() {
  if (columns_ == NvsmiColumns::kMinimal) {
    std::fputs("timestamp, power.draw [W], utilization.gpu [%], memory.used [MiB]\n", out_);
    return;
  }
  std::fputs(
      "timestamp, index, name, uuid, power.draw [W], power.limit [W], utilization.gpu [%], "
      "utilization.memory [%], clocks.current.sm [MHz], clocks.current.memory [MHz], "
      "temperature.gpu, memory.used [MiB], memory.total [MiB], pstate, "
      "clocks_event_reasons.sw_power_cap\n",
      out_);
}

void NvsmiCsvWriter::WriteRow(const GpuSample& s, const std::string& name,
                              const std::string& uuid) {
  line_.clear();
  AppendNvsmiTimestamp(line_, s.timestamp_ms);
  if (columns_ == NvsmiColumns::kMinimal) {
    AppendValue(line_, s.power_w, "{:.2f}", " W");
    AppendValue(line_, s.util_gpu_pct, "{:.0f}", " %");
    AppendValue(line_, s.mem_used_mib, "{:.0f}", " MiB");
  } else {
    fmt::format_to(std::back_inserter(line_), ", {}, {}, {}", s.key.gpu, name, uuid);
    AppendValue(line_, s.power_w, "{:.2f}", " W");
    AppendValue(line_, s.power_limit_w, "{:.2f}", " W");
    AppendValue(line_, s.util_gpu_pct, "{:.0f}", " %");
    AppendValue(line_, s.util_mem_pct, "{:.0f}", " %");
    AppendValue(line_, s.sm_clock_mhz, "{:.0f}", " MHz");
    AppendValue(line_, s.mem_clock_mhz, "{:.0f}", " MHz");
    AppendValue(line_, s.temperature_c, "{:.0f}", "");
    AppendValue(line_, s.mem_used_mib, "{:.0f}", " MiB");
    AppendValue(line_, s.mem_total_mib, "{:.0f}", " MiB");
    line_ += s.pstate ? fmt::format(", P{}", *s.pstate) : std::string(", [N/A]");
    if (!s.clock_event_reasons) {
      line_ += ", [N/A]";
    } else {
      line_ += (*s.clock_event_reasons & 0x4) ? ", Active" : ", Not Active";
    }
  }
  line_ += '\n';
  std::fwrite(line_.data(), 1, line_.size(), out_);
}

}  // namespace ww
