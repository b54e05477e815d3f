// Row-per-instant formats: nvidia-smi CSV, W&B system metrics CSV, the default nvidia-smi table
// in a loop, a home-made script's CSV; and the format names and factory.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ctime>

#include "core/timefmt.h"
#include "telemetry/write/nvsmi_writer.h"
#include "telemetry/write/sample_writers.h"

namespace ww::write {

// In dcgm_writers.cc: the DCGM and Prometheus formats (nullptr for the others).
std::unique_ptr<SampleWriter> MakeDcgmWriter(OutputFormat format, std::FILE* out,
                                             const WriterContext& context);

namespace {

int64_t TickMs(const std::vector<GpuSample>& samples) {
  int64_t at_ms = samples.front().timestamp_ms;
  for (const GpuSample& s : samples) at_ms = std::min(at_ms, s.timestamp_ms);
  return at_ms;
}

bool WriteAll(std::FILE* out, const std::string& text) {
  return std::fwrite(text.data(), 1, text.size(), out) == text.size();
}

// ---------------------------------------------------------------- nvidia-smi CSV

class NvsmiCsvSampleWriter final : public SampleWriter {
 public:
  NvsmiCsvSampleWriter(std::FILE* out, const WriterContext& ctx, NvsmiColumns columns)
      : writer_(out, columns), ctx_(ctx) {
    writer_.WriteHeader();
  }
  void WriteTick(const std::vector<GpuSample>& samples) override {
    for (const GpuSample& s : samples) writer_.WriteRow(s, ctx_.model_name, ctx_.uuid(s.key));
  }
  Status Finish() override { return Status::Ok(); }

 private:
  NvsmiCsvWriter writer_;
  WriterContext ctx_;
};

// ---------------------------------------------------------------- W&B

// A run's system metrics as the W&B UI and `run.history(stream="system").to_csv(index=False)`
// export them: `_runtime` (s since the run started), `_timestamp` (epoch s), then per GPU
// system.gpu.N.{gpu, memory, memoryAllocated, memoryAllocatedBytes, powerWatts, powerPercent,
// temp, smClock, memoryClock}; one row per sampling instant, an empty cell for a missing value.
class WandbCsvWriter final : public SampleWriter {
 public:
  // jsonl: one JSON object a tick, as `run.history(stream="system")` rows are saved with
  // `df.to_json(orient="records", lines=True)`: absent readings have no key.
  WandbCsvWriter(std::FILE* out, const WriterContext& ctx, bool jsonl = false)
      : out_(out), ctx_(ctx), jsonl_(jsonl) {}

  void WriteTick(const std::vector<GpuSample>& samples) override {
    if (samples.empty()) return;
    if (!header_written_ && !jsonl_) {
      std::string head = "_runtime,_timestamp";
      for (const GpuSample& s : samples) {
        for (const char* f : {"gpu", "memory", "memoryAllocated", "memoryAllocatedBytes",
                              "powerWatts", "powerPercent", "temp", "smClock", "memoryClock"}) {
          fmt::format_to(std::back_inserter(head), ",system.gpu.{}.{}", s.key.gpu, f);
        }
      }
      head += '\n';
      ok_ &= WriteAll(out_, head);
      header_written_ = true;
    }
    const int64_t at_ms = TickMs(samples);
    const double runtime_s = static_cast<double>(at_ms - ctx_.start_unix_ms) / 1000.0;
    const double unix_s = static_cast<double>(at_ms) / 1000.0;
    line_ = jsonl_ ? fmt::format(R"({{"_runtime": {}, "_timestamp": {})", runtime_s, unix_s)
                   : fmt::format("{},{}", runtime_s, unix_s);
    uint16_t gpu = 0;
    int field = 0;
    static constexpr const char* kKeys[] = {
        "gpu",          "memory", "memoryAllocated", "memoryAllocatedBytes", "powerWatts",
        "powerPercent", "temp",   "smClock",         "memoryClock"};
    auto cell = [&](std::optional<double> v) {
      const char* key = kKeys[field++ % 9];
      if (jsonl_) {
        if (v)
          fmt::format_to(std::back_inserter(line_), R"(, "system.gpu.{}.{}": {})", gpu, key, *v);
        return;
      }
      line_ += ',';
      if (v) fmt::format_to(std::back_inserter(line_), "{}", *v);
    };
    for (const GpuSample& s : samples) {
      gpu = s.key.gpu;
      cell(s.util_gpu_pct);
      cell(s.util_mem_pct);
      std::optional<double> allocated_pct, bytes, power_pct;
      if (s.mem_used_mib && s.mem_total_mib && *s.mem_total_mib > 0) {
        allocated_pct = 100.0 * *s.mem_used_mib / *s.mem_total_mib;
      }
      if (s.mem_used_mib) bytes = *s.mem_used_mib * 1048576.0;
      if (s.power_w && s.power_limit_w && *s.power_limit_w > 0) {
        power_pct = 100.0 * *s.power_w / *s.power_limit_w;
      }
      cell(allocated_pct);
      cell(bytes);
      cell(s.power_w);
      cell(power_pct);
      cell(s.temperature_c);
      cell(s.sm_clock_mhz);
      cell(s.mem_clock_mhz);
    }
    line_ += jsonl_ ? "}\n" : "\n";
    ok_ &= WriteAll(out_, line_);
  }
  Status Finish() override { return ok_ ? Status::Ok() : Status::IoError("short write"); }

 private:
  std::FILE* out_;
  WriterContext ctx_;
  bool jsonl_;
  bool header_written_ = false;
  bool ok_ = true;
  std::string line_;
};

// ---------------------------------------------------------------- nvidia-smi table

// Driver 550's banner and column header, and the processes table's header (as printed).
constexpr const char* kSmiBanner = R"(       
+-----------------------------------------------------------------------------------------+
| NVIDIA-SMI 550.127.05             Driver Version: 550.127.05     CUDA Version: 12.4     |
|-----------------------------------------+------------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |
|                                         |                        |               MIG M. |
|=========================================+========================+======================|
)";
constexpr const char* kSmiProcessesHeader =
    R"(                                                                                         
+-----------------------------------------------------------------------------------------+
| Processes:                                                                              |
|  GPU   GI   CI        PID   Type   Process name                              GPU Memory |
|        ID   ID                                                               Usage      |
|=========================================================================================|
)";

// The default `nvidia-smi` output of driver 550 (the wide layout), as `nvidia-smi -l N` prints
// it: the date line (ctime, UTC here), the banner, one three-row block per GPU, the processes
// table. Cell widths are the driver's: 41, 24 and 22 characters between the `|`.
class SmiTableWriter final : public SampleWriter {
 public:
  SmiTableWriter(std::FILE* out, const WriterContext& ctx) : out_(out), ctx_(ctx) {}

  void WriteTick(const std::vector<GpuSample>& samples) override {
    if (samples.empty()) return;
    const int64_t at_ms = TickMs(samples);
    text_.clear();
    if (ctx_.interleave_job_lines) {
      // What a training script prints between the tables in the same .out.
      fmt::format_to(std::back_inserter(text_), "[rank0] iteration {:>6} | elapsed {:.1f} s\n",
                     tables_, static_cast<double>(at_ms - ctx_.start_unix_ms) / 1000.0);
    }
    const std::time_t t = static_cast<std::time_t>(at_ms / 1000);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char date[64];
    std::strftime(date, sizeof(date), "%a %b %e %H:%M:%S %Y", &tm);
    text_ += date;
    text_ += kSmiBanner;
    std::string name = ctx_.model_name;
    if (name.size() > 28) name = name.substr(0, 25) + "...";
    for (const GpuSample& s : samples) {
      text_ += '|';
      text_ += Cell(fmt::format("{:>4}  {}", s.key.gpu, name), "On  ", 41);
      text_ += '|';
      text_ += Cell("", SimulatedPciBusId(s.key.gpu) + " Off ", 24);
      text_ += '|';
      text_ += Cell("", "0 ", 22);
      text_ += "|\n|";
      const std::string temp = s.temperature_c ? fmt::format("{:.0f}C", *s.temperature_c) : "N/A";
      const std::string perf = s.pstate ? fmt::format("P{}", *s.pstate) : "N/A";
      const std::string power = s.power_w ? fmt::format("{:.0f}W", *s.power_w) : "N/A";
      const std::string cap = s.power_limit_w ? fmt::format("{:.0f}W", *s.power_limit_w) : "N/A";
      text_ += Cell(fmt::format(" N/A  {:>4}    {:<4}", temp, perf),
                    fmt::format("{:>5} / {:>5} ", power, cap), 41);
      text_ += '|';
      const std::string used = s.mem_used_mib ? fmt::format("{:.0f}MiB", *s.mem_used_mib) : "N/A";
      const std::string total =
          s.mem_total_mib ? fmt::format("{:.0f}MiB", *s.mem_total_mib) : "N/A";
      text_ += Cell("", fmt::format("{:>9} / {:>9} ", used, total), 24);
      text_ += '|';
      const std::string util = s.util_gpu_pct ? fmt::format("{:.0f}%", *s.util_gpu_pct) : "N/A";
      text_ += Cell("", fmt::format("{:>4}      Default ", util), 22);
      text_ += "|\n|";
      text_ += Cell("", "", 41);
      text_ += '|';
      text_ += Cell("", "", 24);
      text_ += '|';
      text_ += Cell("", "Disabled ", 22);
      text_ +=
          "|\n+-----------------------------------------+------------------------+----------------"
          "------+\n";
    }
    text_ += kSmiProcessesHeader;
    bool any = false;
    for (const GpuSample& s : samples) {
      // A CUDA context alone holds ~500 MiB; below 100 MiB the driver's own is all there is.
      if (!s.mem_used_mib || *s.mem_used_mib < 100) continue;
      any = true;
      const std::string mem = fmt::format("{:.0f}MiB", *s.mem_used_mib);
      fmt::format_to(std::back_inserter(text_), "|{}|\n",
                     Cell(fmt::format("  {:>3}   N/A  N/A  {:>9}      C   python", s.key.gpu,
                                      2100000 + s.key.host * 100 + s.key.gpu),
                          mem + " ", 89));
    }
    if (!any) {
      text_ += Cell("|  No running processes found", "|", 91);
      text_ += '\n';
    }
    text_ +=
        "+-----------------------------------------------------------------------------------------"
        "+"
        "\n";
    ok_ &= WriteAll(out_, text_);
    ++tables_;
  }
  Status Finish() override { return ok_ ? Status::Ok() : Status::IoError("short write"); }

 private:
  // left-aligned text, then right-aligned text, in a cell of `width` characters.
  static std::string Cell(const std::string& left, const std::string& right, size_t width) {
    std::string out = left;
    if (out.size() + right.size() < width) out.append(width - out.size() - right.size(), ' ');
    out += right;
    return out;
  }

  std::FILE* out_;
  WriterContext ctx_;
  std::string text_;
  int64_t tables_ = 0;
  bool ok_ = true;
};

// ---------------------------------------------------------------- a home-made script's CSV

// What people's own loggers write (a pynvml loop with csv.writer): epoch seconds from
// time.time(), one row per GPU per sample, their own column names with units in them, an empty
// cell for a reading that failed. The power limit (nvmlDeviceGetEnforcedPowerLimit) is logged:
// without it or a GPU name, triage calibrates the power range from what it saw.
class CustomCsvWriter final : public SampleWriter {
 public:
  explicit CustomCsvWriter(std::FILE* out) : out_(out) {
    ok_ &= WriteAll(out_, "ts,gpu_id,power_w,power_limit_w,util_pct,mem_used_mib,temp_c\n");
  }

  void WriteTick(const std::vector<GpuSample>& samples) override {
    line_.clear();
    for (const GpuSample& s : samples) {
      fmt::format_to(std::back_inserter(line_), "{}.{:03},{}", s.timestamp_ms / 1000,
                     s.timestamp_ms % 1000, s.key.gpu);
      for (const auto* v :
           {&s.power_w, &s.power_limit_w, &s.util_gpu_pct, &s.mem_used_mib, &s.temperature_c}) {
        line_ += ',';
        if (*v) fmt::format_to(std::back_inserter(line_), "{}", **v);
      }
      line_ += '\n';
    }
    ok_ &= WriteAll(out_, line_);
  }
  Status Finish() override { return ok_ ? Status::Ok() : Status::IoError("short write"); }

 private:
  std::FILE* out_;
  std::string line_;
  bool ok_ = true;
};

// A home-made script's CSV with one row per tick and a column per GPU and field
// (`time,gpu0_power_w,gpu0_power_limit_w,gpu0_util_pct,...,gpu1_power_w,...`), the time
// as ISO 8601 UTC with ms. The GPUs are those of the first tick.
class CustomCsvWideWriter final : public SampleWriter {
 public:
  explicit CustomCsvWideWriter(std::FILE* out) : out_(out) {}

  void WriteTick(const std::vector<GpuSample>& samples) override {
    if (samples.empty()) return;
    if (gpus_.empty()) {
      std::string head = "time";
      for (const GpuSample& s : samples) {
        gpus_.push_back(s.key.gpu);
        for (const char* f : {"power_w", "power_limit_w", "util_pct", "mem_used_mib", "temp_c"}) {
          fmt::format_to(std::back_inserter(head), ",gpu{}_{}", s.key.gpu, f);
        }
      }
      head += '\n';
      ok_ &= WriteAll(out_, head);
    }
    line_ = FormatIsoMs(TickMs(samples), true);
    for (uint16_t gpu : gpus_) {
      const GpuSample* s = nullptr;
      for (const GpuSample& x : samples) {
        if (x.key.gpu == gpu) s = &x;
      }
      for (auto member : {&GpuSample::power_w, &GpuSample::power_limit_w, &GpuSample::util_gpu_pct,
                          &GpuSample::mem_used_mib, &GpuSample::temperature_c}) {
        line_ += ',';  // an absent GPU or reading: an empty cell
        if (s != nullptr && (s->*member)) {
          fmt::format_to(std::back_inserter(line_), "{}", *(s->*member));
        }
      }
    }
    line_ += '\n';
    ok_ &= WriteAll(out_, line_);
  }
  Status Finish() override { return ok_ ? Status::Ok() : Status::IoError("short write"); }

 private:
  std::FILE* out_;
  std::vector<uint16_t> gpus_;
  std::string line_;
  bool ok_ = true;
};

// ---------------------------------------------------------------- nvidia-smi in a shell loop

// `while true; do nvidia-smi --query-gpu=name,pci.bus_id,timestamp,utilization.gpu,power.draw,
// memory.used --format=csv; sleep N; done`: without `noheader` the header comes before every
// sample, and without `index` the GPUs are told apart by their bus ids.
class NvsmiLoopWriter final : public SampleWriter {
 public:
  NvsmiLoopWriter(std::FILE* out, const WriterContext& ctx) : out_(out), ctx_(ctx) {}

  void WriteTick(const std::vector<GpuSample>& samples) override {
    text_ = "name, pci.bus_id, timestamp, utilization.gpu [%], power.draw [W], memory.used [MiB]\n";
    for (const GpuSample& s : samples) {
      fmt::format_to(std::back_inserter(text_), "{}, {}, ", ctx_.model_name,
                     SimulatedPciBusId(s.key.gpu));
      AppendNvsmiTimestamp(text_, s.timestamp_ms);
      if (s.util_gpu_pct) {
        fmt::format_to(std::back_inserter(text_), ", {} %", std::lround(*s.util_gpu_pct));
      } else {
        text_ += ", [N/A]";
      }
      if (s.power_w) {
        fmt::format_to(std::back_inserter(text_), ", {:.2f} W", *s.power_w);
      } else {
        text_ += ", [N/A]";
      }
      if (s.mem_used_mib) {
        fmt::format_to(std::back_inserter(text_), ", {} MiB\n", std::lround(*s.mem_used_mib));
      } else {
        text_ += ", [N/A]\n";
      }
    }
    ok_ &= WriteAll(out_, text_);
  }
  Status Finish() override { return ok_ ? Status::Ok() : Status::IoError("short write"); }

 private:
  std::FILE* out_;
  WriterContext ctx_;
  std::string text_;
  bool ok_ = true;
};

// ---------------------------------------------------------------- gpustat

// `while sleep N; do gpustat --show-power; done` (gpustat's print_formatted, wookayin/gpustat
// gpustat/core.py): the host line (host name padded to the GPU lines' name width + 3, the query
// time in the C locale's date-time format, the driver version), then per GPU
// `[i] NAME | TT°C, UUU %, PPP / LLL W | UUUUU / TTTTT MB | user:python/PID(NNNM)`. gpustat
// prints whole watts and MiB (it divides NVML's mW and bytes, rounding down) and `??` for
// what NVML did not give.
class GpustatWriter final : public SampleWriter {
 public:
  GpustatWriter(std::FILE* out, const WriterContext& ctx) : out_(out), ctx_(ctx) {}

  void WriteTick(const std::vector<GpuSample>& samples) override {
    if (samples.empty()) return;
    const int64_t at_ms = TickMs(samples);
    const std::time_t t = static_cast<std::time_t>(at_ms / 1000);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char date[64];
    std::strftime(date, sizeof(date), "%a %b %e %H:%M:%S %Y", &tm);
    const std::string host = ctx_.hosts.empty() ? "node" : ctx_.hosts[samples.front().key.host];
    const size_t width = std::max<size_t>(16, ctx_.model_name.size());
    text_ = fmt::format("{:<{}}  {}  535.104.05\n", host, width + 3, date);
    auto num = [](const std::optional<double>& v, int w) {
      return v ? fmt::format("{:>{}}", static_cast<int64_t>(std::floor(*v)), w)
               : fmt::format("{:>{}}", "??", w);
    };
    for (const GpuSample& s : samples) {
      fmt::format_to(
          std::back_inserter(text_), "[{}] {:<{}} |{}°C, {} %, {} / {} W | {} / {} MB |", s.key.gpu,
          ctx_.model_name, width, num(s.temperature_c, 3),
          num(s.util_gpu_pct ? std::optional<double>(std::round(*s.util_gpu_pct)) : std::nullopt,
              3),
          num(s.power_w, 3), num(s.power_limit_w, 3), num(s.mem_used_mib, 5),
          num(s.mem_total_mib, 5));
      if (s.mem_used_mib && *s.mem_used_mib > 0) {
        fmt::format_to(std::back_inserter(text_), " user:python/{}({}M)", 4000 + s.key.gpu,
                       static_cast<int64_t>(*s.mem_used_mib));
      }
      text_ += '\n';
    }
    ok_ &= WriteAll(out_, text_);
  }
  Status Finish() override { return ok_ ? Status::Ok() : Status::IoError("short write"); }

 private:
  std::FILE* out_;
  WriterContext ctx_;
  std::string text_;
  bool ok_ = true;
};

// ---------------------------------------------------------------- W&B panel pivoted wide

// A W&B system-metrics power panel as pandas writes it after a pivot
// (`df.pivot(index="timestamp", columns="gpu", values="power").reset_index().to_csv()`): the
// unnamed index first, `timestamp` in epoch seconds, then one column `GPU N` of watts per GPU;
// an empty cell for a missing reading. Read back with --wide power.
class WidePowerWriter final : public SampleWriter {
 public:
  explicit WidePowerWriter(std::FILE* out) : out_(out) {}

  void WriteTick(const std::vector<GpuSample>& samples) override {
    if (samples.empty()) return;
    if (gpus_.empty()) {
      std::string head = ",timestamp";
      for (const GpuSample& s : samples) {
        gpus_.push_back(s.key.gpu);
        fmt::format_to(std::back_inserter(head), ",GPU {}", s.key.gpu);
      }
      head += '\n';
      ok_ &= WriteAll(out_, head);
    }
    const int64_t at_ms = TickMs(samples);
    line_ = fmt::format("{},{}.{:03}", rows_++, at_ms / 1000, at_ms % 1000);
    for (uint16_t gpu : gpus_) {
      line_ += ',';
      for (const GpuSample& x : samples) {
        if (x.key.gpu == gpu && x.power_w)
          fmt::format_to(std::back_inserter(line_), "{}", *x.power_w);
      }
    }
    line_ += '\n';
    ok_ &= WriteAll(out_, line_);
  }
  Status Finish() override { return ok_ ? Status::Ok() : Status::IoError("short write"); }

 private:
  std::FILE* out_;
  std::vector<uint16_t> gpus_;
  std::string line_;
  int64_t rows_ = 0;
  bool ok_ = true;
};

// ---------------------------------------------------------------- LLview

// LLview's GPU_<jobid>_node.dat (FZJ-JSC/LLview, jobreport_datafiles_gpu.yaml, dataset
// GPU_node_dat): its header and format_str, nodeid `<host>_<gpu two digits>`, every host of the
// job in one table; units as the .dat holds them (memory GiB, power W, PCIe/NVLink GiB/s).
// LLview writes every value; an absent reading is written as 0 there, here as `-` so that
// "absent" survives the round trip.
class LlviewWriter final : public SampleWriter {
 public:
  LlviewWriter(std::FILE* out, const WriterContext& ctx) : out_(out), ctx_(ctx) {
    ok_ &= WriteAll(out_,
                    "jobid              ts       nodeid  gpu_usage gpu_memu     gpu_pu   gpu_temp  "
                    "gpu_memur gpu_sclk  gpu_clk gpu_clkr gpu_pfst gpu_pcie_tx gpu_pcie_rx "
                    "gpu_nvlink_tx gpu_nvlink_rx\n");
  }

  void WriteTick(const std::vector<GpuSample>& samples) override {
    text_.clear();
    auto f = [](const std::optional<double>& v, double scale, int w, int prec) {
      return v ? fmt::format("{:>{}.{}f}", *v / scale, w, prec) : fmt::format("{:>{}}", "-", w);
    };
    constexpr double kGiB = 1024.0 * 1024 * 1024;
    for (const GpuSample& s : samples) {
      const std::string host = s.key.host < ctx_.hosts.size() ? ctx_.hosts[s.key.host] : "node";
      fmt::format_to(
          std::back_inserter(text_),
          "{:<10} {:>10} {:>12} {} {} {} {} {} {} {} {:>8} {:>8} {} {} {} {}\n", "9438058",
          s.timestamp_ms / 1000, fmt::format("{}_{:02}", host, s.key.gpu),
          f(s.util_gpu_pct, 1, 10, 3), f(s.mem_used_mib, 1024, 7, 3), f(s.power_w, 1, 10, 3),
          f(s.temperature_c, 1, 10, 3), f(s.util_mem_pct, 1, 10, 3), f(s.sm_clock_mhz, 1, 8, 0),
          f(s.mem_clock_mhz, 1, 8, 0),
          s.clock_event_reasons ? std::to_string(*s.clock_event_reasons) : "-",
          s.pstate ? std::to_string(*s.pstate) : "-", f(s.pcie_tx_bytes_per_s, kGiB, 11, 3),
          f(s.pcie_rx_bytes_per_s, kGiB, 11, 3), f(s.nvlink_tx_bytes_per_s, kGiB, 11, 3),
          f(s.nvlink_rx_bytes_per_s, kGiB, 11, 3));
    }
    ok_ &= WriteAll(out_, text_);
  }
  Status Finish() override { return ok_ ? Status::Ok() : Status::IoError("short write"); }

 private:
  std::FILE* out_;
  WriterContext ctx_;
  std::string text_;
  bool ok_ = true;
};

struct FormatName {
  OutputFormat format;
  const char* name;
  const char* extension;
};
const FormatName kFormats[] = {
    {OutputFormat::kNvidiaSmiCsv, "nvidia-smi", ".csv"},
    {OutputFormat::kDcgmiDmon, "dcgmi-dmon", ".dmon"},
    {OutputFormat::kDcgmExporter, "dcgm-exporter", ".prom"},
    {OutputFormat::kDcgmExporterCurl, "dcgm-exporter-curl", ".prom"},
    {OutputFormat::kPrometheusJson, "prometheus-json", ".json"},
    {OutputFormat::kOpenMetrics, "openmetrics", ".om"},
    {OutputFormat::kWandb, "wandb", ".csv"},
    {OutputFormat::kWandbJsonl, "wandb-jsonl", ".jsonl"},
    {OutputFormat::kSmiTable, "smi-table", ".txt"},
    {OutputFormat::kCustomCsv, "custom-csv", ".csv"},
    {OutputFormat::kCustomCsvWide, "custom-csv-wide", ".csv"},
    {OutputFormat::kNvidiaSmiLoop, "nvidia-smi-loop", ".csv"},
    {OutputFormat::kGpustat, "gpustat", ".log"},
    {OutputFormat::kWidePower, "wide-power", ".csv"},
    {OutputFormat::kLlview, "llview", ".dat"},
};

}  // namespace

Result<OutputFormat> ParseOutputFormat(std::string_view name) {
  for (const FormatName& f : kFormats) {
    if (name == f.name) return f.format;
  }
  return Status::InvalidInput(
      fmt::format("--format {}: unknown; formats: {}", name, OutputFormatNames()));
}

const char* OutputFormatName(OutputFormat f) {
  for (const FormatName& n : kFormats) {
    if (n.format == f) return n.name;
  }
  return "?";
}

const char* OutputFormatExtension(OutputFormat f) {
  for (const FormatName& n : kFormats) {
    if (n.format == f) return n.extension;
  }
  return "";
}

std::string OutputFormatNames() {
  std::string out;
  for (const FormatName& f : kFormats) {
    if (!out.empty()) out += ", ";
    out += f.name;
  }
  return out;
}

bool OutputFormatIsJobWide(OutputFormat f) {
  return f == OutputFormat::kPrometheusJson || f == OutputFormat::kOpenMetrics ||
         f == OutputFormat::kLlview;
}

Status CheckOutputInterval(OutputFormat f, int64_t interval_ms) {
  if (f == OutputFormat::kSmiTable && interval_ms % 1000 != 0) {
    return Status::InvalidInput(fmt::format(
        "--format smi-table: --interval-ms {} is not whole seconds (the table's date line has "
        "1 s resolution; nvidia-smi -l takes seconds)",
        interval_ms));
  }
  if ((f == OutputFormat::kGpustat || f == OutputFormat::kLlview) && interval_ms % 1000 != 0) {
    return Status::InvalidInput(fmt::format(
        "--format {}: --interval-ms {} is not whole seconds (its times have 1 s resolution)",
        OutputFormatName(f), interval_ms));
  }
  return Status::Ok();
}

std::unique_ptr<SampleWriter> MakeSampleWriter(OutputFormat format, std::FILE* out,
                                               const WriterContext& context) {
  switch (format) {
    case OutputFormat::kNvidiaSmiCsv:
      return std::make_unique<NvsmiCsvSampleWriter>(
          out, context,
          context.nvsmi_minimal_columns ? NvsmiColumns::kMinimal : NvsmiColumns::kFull);
    case OutputFormat::kWandb:
      return std::make_unique<WandbCsvWriter>(out, context);
    case OutputFormat::kWandbJsonl:
      return std::make_unique<WandbCsvWriter>(out, context, /*jsonl=*/true);
    case OutputFormat::kSmiTable:
      return std::make_unique<SmiTableWriter>(out, context);
    case OutputFormat::kCustomCsv:
      return std::make_unique<CustomCsvWriter>(out);
    case OutputFormat::kCustomCsvWide:
      return std::make_unique<CustomCsvWideWriter>(out);
    case OutputFormat::kNvidiaSmiLoop:
      return std::make_unique<NvsmiLoopWriter>(out, context);
    case OutputFormat::kGpustat:
      return std::make_unique<GpustatWriter>(out, context);
    case OutputFormat::kWidePower:
      return std::make_unique<WidePowerWriter>(out);
    case OutputFormat::kLlview:
      return std::make_unique<LlviewWriter>(out, context);
    default:
      return MakeDcgmWriter(format, out, context);
  }
}

}  // namespace ww::write
