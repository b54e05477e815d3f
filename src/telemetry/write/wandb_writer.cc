// W&B system metrics as people export them: the run's CSV, or its rows saved as JSON lines; both
// read back by the wandb reader.
#include <fmt/format.h>

#include "telemetry/write/sample_writers.h"
#include "telemetry/write/writer_support.h"

namespace ww::write {
namespace {

// A run's system metrics as the W&B UI and `run.history(stream="system").to_csv(index=False)`
// export them: `_runtime` (s since the run started), `_timestamp` (epoch s), then per GPU
// system.gpu.N.{gpu, memory, memoryAllocated, memoryAllocatedBytes, powerWatts, powerPercent,
// temp, smClock, memoryClock}; one row per sampling instant, an empty cell for a missing value.
class WandbCsvWriter final : public TextWriter {
 public:
  // jsonl: one JSON object a tick, as `run.history(stream="system")` rows are saved with
  // `df.to_json(orient="records", lines=True)`: absent readings have no key.
  WandbCsvWriter(std::FILE* out, const WriterContext& ctx, bool jsonl = false)
      : TextWriter(out), ctx_(ctx), jsonl_(jsonl) {}

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
      Write(head);
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
    Write(line_);
  }

 private:
  WriterContext ctx_;
  bool jsonl_;
  bool header_written_ = false;
  std::string line_;
};

}  // namespace

const WriterRow kWandbWriters[2] = {
    {.order = 60,
     .extension = ".csv",
     .help = "W&B system metrics CSV export (W&B samples every ~15 s):",
     .example = "starvation --interval-ms 15000 --format {} --out run.csv",
     .make = Make<WandbCsvWriter>},
    {.name = "wandb-jsonl",
     .order = 70,
     .extension = ".jsonl",
     .make = Make<WandbCsvWriter, /*jsonl=*/true>},
};

}  // namespace ww::write
