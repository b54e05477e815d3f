// A W&B power panel pivoted by pandas (a column of watts per GPU), read back by the wide reader
// with --wide power.
#include <fmt/format.h>

#include "telemetry/write/sample_writers.h"
#include "telemetry/write/writer_support.h"

namespace ww::write {
namespace {

// A W&B system-metrics power panel as pandas writes it after a pivot
// (`df.pivot(index="timestamp", columns="gpu", values="power").reset_index().to_csv()`): the
// unnamed index first, `timestamp` in epoch seconds, then one column `GPU N` of watts per GPU;
// an empty cell for a missing reading. Read back with --wide power.
class WidePowerWriter final : public TextWriter {
 public:
  explicit WidePowerWriter(std::FILE* out) : TextWriter(out) {}

  void WriteTick(const std::vector<GpuSample>& samples) override {
    if (samples.empty()) return;
    if (gpus_.empty()) {
      std::string head = ",timestamp";
      for (const GpuSample& s : samples) {
        gpus_.push_back(s.key.gpu);
        fmt::format_to(std::back_inserter(head), ",GPU {}", s.key.gpu);
      }
      head += '\n';
      Write(head);
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
    Write(line_);
  }

 private:
  std::vector<uint16_t> gpus_;
  std::string line_;
  int64_t rows_ = 0;
};

}  // namespace

const WriterRow kWideWriters[1] = {
    {.name = "wide-power",
     .order = 130,
     .extension = ".csv",
     .help = "a W&B power panel pivoted by pandas, ,timestamp,GPU 0,... (triage --wide power)",
     .make = Make<WidePowerWriter>},
};

}  // namespace ww::write
