// nvidia-smi `--query-gpu=... --format=csv` logs: as `-lms N` writes them (the header once), and
// as a shell loop around it writes them (the header before every sample, GPUs by bus id); both
// are read back by the nvidia-smi reader.
#include <fmt/format.h>

#include <cmath>

#include "telemetry/write/nvsmi_writer.h"
#include "telemetry/write/sample_writers.h"
#include "telemetry/write/writer_support.h"

namespace ww::write {
namespace {

class NvsmiCsvSampleWriter final : public SampleWriter {
 public:
  NvsmiCsvSampleWriter(std::FILE* out, const WriterContext& ctx)
      : writer_(out, ctx.nvsmi_minimal_columns ? NvsmiColumns::kMinimal : NvsmiColumns::kFull),
        ctx_(ctx) {
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

// `while true; do nvidia-smi --query-gpu=name,pci.bus_id,timestamp,utilization.gpu,power.draw,
// memory.used --format=csv; sleep N; done`: without `noheader` the header comes before every
// sample, and without `index` the GPUs are told apart by their bus ids.
class NvsmiLoopWriter final : public TextWriter {
 public:
  NvsmiLoopWriter(std::FILE* out, const WriterContext& ctx) : TextWriter(out), ctx_(ctx) {}

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
    Write(text_);
  }

 private:
  WriterContext ctx_;
  std::string text_;
};

}  // namespace

// The CSV is simulate's default: the first in order.
const WriterRow kNvidiaSmiWriters[2] = {
    {.order = 0,
     .extension = ".csv",
     .help = "nvidia-smi --query-gpu=... --format=csv, one file per host",
     .make = Make<NvsmiCsvSampleWriter>},
    {.name = "nvidia-smi-loop",
     .order = 110,
     .extension = ".csv",
     .help = "nvidia-smi --query-gpu=name,pci.bus_id,... --format=csv in a shell loop: the\n"
             "header before every sample, GPUs by bus id",
     .make = Make<NvsmiLoopWriter>},
};

}  // namespace ww::write
