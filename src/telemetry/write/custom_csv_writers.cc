// Home-made logging scripts' CSVs: a row per GPU and sample, or a row per sample with a column per
// GPU and field; both read back by the custom-csv reader.
#include <fmt/format.h>

#include "core/timefmt.h"
#include "telemetry/write/sample_writers.h"
#include "telemetry/write/writer_support.h"

namespace ww::write {
namespace {

// What people's own loggers write (a pynvml loop with csv.writer): epoch seconds from
// time.time(), one row per GPU per sample, their own column names with units in them, an empty
// cell for a reading that failed. The power limit (nvmlDeviceGetEnforcedPowerLimit) is logged:
// without it or a GPU name, triage calibrates the power range from what it saw.
class CustomCsvWriter final : public TextWriter {
 public:
  explicit CustomCsvWriter(std::FILE* out) : TextWriter(out) {
    Write("ts,gpu_id,power_w,power_limit_w,util_pct,mem_used_mib,temp_c\n");
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
    Write(line_);
  }

 private:
  std::string line_;
};

// A home-made script's CSV with one row per tick and a column per GPU and field
// (`time,gpu0_power_w,gpu0_power_limit_w,gpu0_util_pct,...,gpu1_power_w,...`), the time
// as ISO 8601 UTC with ms. The GPUs are those of the first tick.
class CustomCsvWideWriter final : public TextWriter {
 public:
  explicit CustomCsvWideWriter(std::FILE* out) : TextWriter(out) {}

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
      Write(head);
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
    Write(line_);
  }

 private:
  std::vector<uint16_t> gpus_;
  std::string line_;
};

}  // namespace

const WriterRow kCustomCsvWriters[2] = {
    {.order = 90,
     .extension = ".csv",
     .help = "a home-made logger: ts,gpu_id,power_w,power_limit_w,util_pct,...",
     .example = "healthy --interval-ms 1000 --format {} --out gpu.csv",
     .make = Make<CustomCsvWriter>},
    {.name = "custom-csv-wide",
     .order = 100,
     .extension = ".csv",
     .make = Make<CustomCsvWideWriter>},
};

}  // namespace ww::write
