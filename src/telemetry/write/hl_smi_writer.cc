// `hl-smi --query-aip=timestamp,module_id,name,utilization.aip,power.draw,power.max,memory.used,
// memory.total,temperature.aip --format=csv -l N`, read back by the hl-smi reader.
#include <fmt/format.h>

#include <cmath>
#include <ctime>

#include "telemetry/write/sample_writers.h"
#include "telemetry/write/writer_support.h"

namespace ww::write {
namespace {

// hl-smi prints its timestamp as `date` does, in 27 characters: the year loses its last digit
// ("Tue Nov 18 11:29:21 UTC 202"); the reader recovers it. Whole values with their units (no
// nounits), N/A for what it did not read.
class HlSmiWriter final : public TextWriter {
 public:
  HlSmiWriter(std::FILE* out, const WriterContext& ctx) : TextWriter(out), ctx_(ctx) {}

  void WriteTick(const std::vector<GpuSample>& samples) override {
    if (samples.empty()) return;
    text_.clear();
    if (!header_written_) {
      text_ =
          "timestamp, module_id, name, utilization.aip [%], power.draw [W], power.max [W], "
          "memory.used [MiB], memory.total [MiB], temperature.aip [C]\n";
      header_written_ = true;
    }
    const std::time_t t = static_cast<std::time_t>(TickMs(samples) / 1000);
    std::tm tm{};
    gmtime_r(&t, &tm);
    char date[64];
    std::strftime(date, sizeof(date), "%a %b %d %H:%M:%S UTC %Y", &tm);
    const std::string stamp = std::string(date).substr(0, 27);
    auto num = [](const std::optional<double>& v, const char* unit) {
      return v ? fmt::format("{} {}", static_cast<int64_t>(std::lround(*v)), unit)
               : std::string("N/A");
    };
    for (const GpuSample& s : samples) {
      fmt::format_to(std::back_inserter(text_), "{}, {}, {}, {}, {}, {}, {}, {}, {}\n", stamp,
                     s.key.gpu, ctx_.model_name, num(s.util_gpu_pct, "%"), num(s.power_w, "W"),
                     num(s.power_limit_w, "W"), num(s.mem_used_mib, "MiB"),
                     num(s.mem_total_mib, "MiB"), num(s.temperature_c, "C"));
    }
    Write(text_);
  }

 private:
  WriterContext ctx_;
  std::string text_;
  bool header_written_ = false;
};

}  // namespace

const WriterRow kHlSmiWriters[1] = {
    {.order = 135,
     .extension = ".csv",
     .whole_seconds_because = "hl-smi's timestamps have 1 s resolution",
     .help = "Intel Gaudi hl-smi --query-aip CSV in a loop (-l), the year cut as hl-smi cuts it:",
     .example = "hang-spin --model gaudi3 --interval-ms 1000 --format {} --out hl.csv",
     .make = Make<HlSmiWriter>},
};

}  // namespace ww::write
