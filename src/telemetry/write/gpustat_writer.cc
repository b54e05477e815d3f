// `gpustat --show-power` in a loop, read back by the gpustat reader.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "telemetry/write/sample_writers.h"
#include "telemetry/write/writer_support.h"

namespace ww::write {
namespace {

// `while sleep N; do gpustat --show-power; done` (gpustat's print_formatted, wookayin/gpustat
// gpustat/core.py): the host line (host name padded to the GPU lines' name width + 3, the query
// time in the C locale's date-time format, the driver version), then per GPU
// `[i] NAME | TT°C, UUU %, PPP / LLL W | UUUUU / TTTTT MB | user:python/PID(NNNM)`. gpustat
// prints whole watts and MiB (it divides NVML's mW and bytes, rounding down) and `??` for
// what NVML did not give.
class GpustatWriter final : public TextWriter {
 public:
  GpustatWriter(std::FILE* out, const WriterContext& ctx) : TextWriter(out), ctx_(ctx) {}

  void WriteTick(const std::vector<GpuSample>& samples) override {
    if (samples.empty()) return;
    const int64_t at_ms = TickMs(samples);
    const std::string date = CtimeUtc(at_ms);
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
    Write(text_);
  }

 private:
  WriterContext ctx_;
  std::string text_;
};

}  // namespace

const WriterRow kGpustatWriters[1] = {
    {.order = 120,
     .extension = ".log",
     .whole_seconds_because = "its times have 1 s resolution",
     .help = "gpustat --show-power in a loop, host lines with dates (whole seconds):",
     .example = "hang-spin --interval-ms 2000 --format {} --out gpu.log",
     .make = Make<GpustatWriter>},
};

}  // namespace ww::write
