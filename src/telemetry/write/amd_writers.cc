// AMD Instinct logs as amd-smi and rocm-smi write them (ROCm/amdsmi amdsmi_cli/
// amdsmi_commands.py and amdsmi_logger.py; ROCm/rocm_smi_lib python_smi_tools/rocm_smi.py), read
// back by the amd-smi and rocm-smi readers (ingest/amd_smi.h). Absent readings are written `N/A`.
#include <fmt/format.h>

#include <cmath>
#include <ctime>
#include <nlohmann/json.hpp>

#include "telemetry/write/sample_writers.h"
#include "telemetry/write/writer_support.h"

namespace ww::write {
namespace {

// amd-smi prints whole numbers (gpu_metrics' W, %, C, MHz; VRAM as bytes // 1024**2).
std::string Whole(const std::optional<double>& v) {
  return v ? fmt::format("{}", static_cast<int64_t>(std::llround(*v))) : "N/A";
}

// `amd-smi monitor -p -t -u -m -v --csv --watch N --file F`: the watch output, a timestamp
// (epoch s) first, the header once.
class AmdSmiCsvWriter final : public TextWriter {
 public:
  explicit AmdSmiCsvWriter(std::FILE* out) : TextWriter(out) {
    Write(
        "timestamp,gpu,power_usage,hotspot_temperature,memory_temperature,gfx,gfx_clock,mem,"
        "mem_clock,vram_used,vram_total\n");
  }
  void WriteTick(const std::vector<GpuSample>& samples) override {
    if (samples.empty()) return;
    const int64_t at_s = TickMs(samples) / 1000;
    text_.clear();
    for (const GpuSample& s : samples) {
      fmt::format_to(std::back_inserter(text_), "{},{},{},{},N/A,{},{},{},{},{},{}\n", at_s,
                     s.key.gpu, Whole(s.power_w), Whole(s.temperature_c), Whole(s.util_gpu_pct),
                     Whole(s.sm_clock_mhz), Whole(s.util_mem_pct), Whole(s.mem_clock_mhz),
                     Whole(s.mem_used_mib), Whole(s.mem_total_mib));
    }
    Write(text_);
  }

 private:
  std::string text_;
};

// `amd-smi monitor -p -t -u -m -v --watch N` on a terminal (amdsmi_logger.py's tabular output):
// each poll the heading, then a row per GPU, columns right-aligned to the widths amd-smi pads
// them to, readings with their units ("171 W", "32 °C").
class AmdSmiMonitorWriter final : public TextWriter {
 public:
  explicit AmdSmiMonitorWriter(std::FILE* out) : TextWriter(out) {}
  void WriteTick(const std::vector<GpuSample>& samples) override {
    if (samples.empty()) return;
    const int64_t at_s = TickMs(samples) / 1000;
    text_ = fmt::format("{:>10}  GPU{:>7}{:>10}{:>10}{:>10}{:>11}{:>10}{:>11}{:>11}{:>12}\n",
                        "TIMESTAMP", "POWER", "GPU_TEMP", "MEM_TEMP", "GFX_UTIL", "GFX_CLOCK",
                        "MEM_UTIL", "MEM_CLOCK", "VRAM_USED", "VRAM_TOTAL");
    auto with = [](const std::optional<double>& v, const char* unit) {
      return v ? fmt::format("{} {}", Whole(v), unit) : std::string("N/A");
    };
    for (const GpuSample& s : samples) {
      fmt::format_to(std::back_inserter(text_),
                     "{:>10}  {:>3}{:>7}{:>10}{:>10}{:>10}{:>11}{:>10}{:>11}{:>11}{:>12}\n", at_s,
                     s.key.gpu, with(s.power_w, "W"), with(s.temperature_c, "\u00b0C"), "N/A",
                     with(s.util_gpu_pct, "%"), with(s.sm_clock_mhz, "MHz"),
                     with(s.util_mem_pct, "%"), with(s.mem_clock_mhz, "MHz"),
                     with(s.mem_used_mib, "MB"), with(s.mem_total_mib, "MB"));
    }
    Write(text_);
  }

 private:
  std::string text_;
};

// `amd-smi metric -u -p -t -m --json --watch N --file F`: one JSON array of the whole run
// (amd-smi writes it at the end), each GPU's object per poll with `{"value", "unit"}` readings.
class AmdSmiJsonWriter final : public TextWriter {
 public:
  explicit AmdSmiJsonWriter(std::FILE* out) : TextWriter(out) { Write("["); }
  void WriteTick(const std::vector<GpuSample>& samples) override {
    if (samples.empty()) return;
    const int64_t at_s = TickMs(samples) / 1000;
    for (const GpuSample& s : samples) {
      auto value = [](const std::optional<double>& v, const char* unit) {
        if (!v) return nlohmann::ordered_json("N/A");
        return nlohmann::ordered_json{{"value", std::llround(*v)}, {"unit", unit}};
      };
      nlohmann::ordered_json j;
      j["timestamp"] = at_s;
      j["gpu"] = s.key.gpu;
      j["usage"] = {{"gfx_activity", value(s.util_gpu_pct, "%")},
                    {"umc_activity", value(s.util_mem_pct, "%")},
                    {"mm_activity", "N/A"}};
      j["power"] = {{"socket_power", value(s.power_w, "W")},
                    {"gfx_voltage", "N/A"},
                    {"soc_voltage", "N/A"},
                    {"mem_voltage", "N/A"},
                    {"throttle_status", "N/A"},
                    {"power_management", "ENABLED"}};
      j["temperature"] = {{"edge", value(s.temperature_c, "C")},
                          {"hotspot", value(s.temperature_c, "C")},
                          {"mem", "N/A"}};
      j["mem_usage"] = {{"total_vram", value(s.mem_total_mib, "MB")},
                        {"used_vram", value(s.mem_used_mib, "MB")},
                        {"free_vram", s.mem_total_mib && s.mem_used_mib
                                          ? value(*s.mem_total_mib - *s.mem_used_mib, "MB")
                                          : nlohmann::ordered_json("N/A")}};
      std::string text = j.dump(4);
      // Indented as json.dumps(list, indent=4) indents the list's items.
      std::string indented = "    ";
      for (char c : text) {
        indented += c;
        if (c == '\n') indented += "    ";
      }
      Write(fmt::format("{}\n{}", first_ ? "" : ",", indented));
      first_ = false;
    }
  }
  Status Finish() override {
    Write("\n]\n");
    return TextWriter::Finish();
  }

 private:
  bool first_ = true;
};

// `date` as a shell loop prints it before each rocm-smi call: "Fri Apr  5 06:17:19 UTC 2024".
std::string DateLine(int64_t unix_ms) {
  const std::time_t t = static_cast<std::time_t>(unix_ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char date[64];
  std::strftime(date, sizeof(date), "%a %b %e %H:%M:%S UTC %Y", &tm);
  return date;
}

// rocm-smi's readings of one GPU as --json and --csv hold them: strings, power and
// temperatures with a decimal (the library's µW and m°C divided), the rest whole.
std::vector<std::pair<std::string, std::string>> RocmValues(const GpuSample& s,
                                                            const char* power_key) {
  auto dec = [](const std::optional<double>& v) {
    return v ? fmt::format("{:.1f}", *v) : std::string("N/A");
  };
  auto bytes = [](const std::optional<double>& mib) {
    return mib ? fmt::format("{}", std::llround(*mib * 1024 * 1024)) : std::string("N/A");
  };
  std::string allocated = "N/A";
  if (s.mem_used_mib && s.mem_total_mib && *s.mem_total_mib > 0) {
    allocated = fmt::format("{}", static_cast<int64_t>(*s.mem_used_mib / *s.mem_total_mib * 100));
  }
  return {
      {"Temperature (Sensor edge) (C)", dec(s.temperature_c)},
      {"Temperature (Sensor junction) (C)", dec(s.temperature_c)},
      {"Temperature (Sensor memory) (C)", "N/A"},
      {power_key, dec(s.power_w)},
      {"Max Graphics Package Power (W)", dec(s.power_limit_w)},
      {"GPU use (%)", Whole(s.util_gpu_pct)},
      {"GPU Memory Allocated (VRAM%)", allocated},
      {"GPU Memory Read/Write Activity (%)", Whole(s.util_mem_pct)},
      {"VRAM Total Memory (B)", bytes(s.mem_total_mib)},
      {"VRAM Total Used Memory (B)", bytes(s.mem_used_mib)},
  };
}

// `while true; do date; rocm-smi --showtemp --showpower --showmaxpower --showuse --showmemuse
// --showmeminfo vram --csv; sleep N; done` (MI300: "Current Socket Graphics Package Power").
class RocmSmiCsvWriter final : public TextWriter {
 public:
  explicit RocmSmiCsvWriter(std::FILE* out) : TextWriter(out) {}
  void WriteTick(const std::vector<GpuSample>& samples) override {
    if (samples.empty()) return;
    text_ = DateLine(TickMs(samples)) + "\n";
    bool header = true;
    for (const GpuSample& s : samples) {
      const auto values = RocmValues(s, "Current Socket Graphics Package Power (W)");
      if (header) {
        text_ += "device";
        for (const auto& [k, v] : values) text_ += "," + k;
        text_ += "\n";
        header = false;
      }
      text_ += fmt::format("card{}", s.key.gpu);
      for (const auto& [k, v] : values) text_ += "," + v;
      text_ += "\n";
    }
    Write(text_);
  }

 private:
  std::string text_;
};

// The same loop with --json (MI200 and older: "Average Graphics Package Power"): one line
// `{"card0": {"KEY": "VALUE", ...}, ...}` after each date.
class RocmSmiJsonWriter final : public TextWriter {
 public:
  explicit RocmSmiJsonWriter(std::FILE* out) : TextWriter(out) {}
  void WriteTick(const std::vector<GpuSample>& samples) override {
    if (samples.empty()) return;
    // json.dumps' default separators: ", " and ": ".
    std::string doc = "{";
    for (const GpuSample& s : samples) {
      doc += fmt::format("{}\"card{}\": {{", doc.size() > 1 ? ", " : "", s.key.gpu);
      bool first = true;
      for (const auto& [k, v] : RocmValues(s, "Average Graphics Package Power (W)")) {
        doc += fmt::format("{}{}: {}", first ? "" : ", ", nlohmann::json(k).dump(),
                           nlohmann::json(v).dump());
        first = false;
      }
      doc += "}";
    }
    doc += "}";
    Write(DateLine(TickMs(samples)) + "\n" + doc + "\n");
  }
};

}  // namespace

const WriterRow kAmdSmiWriters[3] = {
    {.name = "amd-smi-csv",
     .order = 150,
     .extension = ".csv",
     .whole_seconds_because = "amd-smi's timestamps are whole seconds",
     .help = "amd-smi monitor --csv --watch (epoch-second timestamps):",
     .example = "hang-spin --hosts 2 --format {} --out-dir amd/",
     .make = Make<AmdSmiCsvWriter>},
    {.name = "amd-smi-json",
     .order = 160,
     .extension = ".json",
     .whole_seconds_because = "amd-smi's timestamps are whole seconds",
     .help = "amd-smi metric --json --watch, one array per run:",
     .make = Make<AmdSmiJsonWriter>},
    {.name = "amd-smi-monitor",
     .order = 165,
     .extension = ".txt",
     .whole_seconds_because = "amd-smi's timestamps are whole seconds",
     .help = "amd-smi monitor --watch as printed on a terminal, the heading every poll:",
     .make = Make<AmdSmiMonitorWriter>},
};

const WriterRow kRocmSmiWriters[2] = {
    {.name = "rocm-smi-csv",
     .order = 170,
     .extension = ".csv",
     .whole_seconds_because = "its date lines have 1 s resolution",
     .help = "rocm-smi --showpower --showuse --showmemuse --showtemp --csv in a loop, date lines:",
     .make = Make<RocmSmiCsvWriter>},
    {.name = "rocm-smi-json",
     .order = 180,
     .extension = ".json",
     .whole_seconds_because = "its date lines have 1 s resolution",
     .help = "the same loop with --json, a document per poll:",
     .make = Make<RocmSmiJsonWriter>},
};

}  // namespace ww::write
