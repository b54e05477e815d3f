// The default `nvidia-smi` table in a loop (`nvidia-smi -l N`, as in a Slurm job's .out), read
// back by the smi-table reader.
#include <fmt/format.h>

#include "telemetry/write/sample_writers.h"
#include "telemetry/write/writer_support.h"

namespace ww::write {
namespace {

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
class SmiTableWriter final : public TextWriter {
 public:
  SmiTableWriter(std::FILE* out, const WriterContext& ctx) : TextWriter(out), ctx_(ctx) {}

  void WriteTick(const std::vector<GpuSample>& samples) override {
    if (samples.empty()) return;
    const int64_t at_ms = TickMs(samples);
    text_.clear();
    if (ctx_.interleave_job_lines) {
      // What a training script prints between the tables in the same .out.
      fmt::format_to(std::back_inserter(text_), "[rank0] iteration {:>6} | elapsed {:.1f} s\n",
                     tables_, static_cast<double>(at_ms - ctx_.start_unix_ms) / 1000.0);
    }
    const std::string date = CtimeUtc(at_ms);
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
    Write(text_);
    ++tables_;
  }

 private:
  // left-aligned text, then right-aligned text, in a cell of `width` characters.
  static std::string Cell(const std::string& left, const std::string& right, size_t width) {
    std::string out = left;
    if (out.size() + right.size() < width) out.append(width - out.size() - right.size(), ' ');
    out += right;
    return out;
  }

  WriterContext ctx_;
  std::string text_;
  int64_t tables_ = 0;
};

}  // namespace

const WriterRow kSmiTableWriters[1] = {
    {.order = 80,
     .extension = ".txt",
     .whole_seconds_because =
         "the table's date line has 1 s resolution; nvidia-smi -l takes seconds",
     .help = "the default nvidia-smi table in a loop (whole seconds):",
     .example = "checkpoint-all --interval-ms 1000 --format {} --out job.out",
     .make = Make<SmiTableWriter>},
};

}  // namespace ww::write
