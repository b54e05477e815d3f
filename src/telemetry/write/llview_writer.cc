// LLview's per-GPU job table (GPU_<jobid>_node.dat, every host of the job in one file), read back
// by the llview reader.
#include <fmt/format.h>

#include <string>

#include "telemetry/write/sample_writers.h"
#include "telemetry/write/writer_support.h"

namespace ww::write {
namespace {

// LLview's GPU_<jobid>_node.dat (FZJ-JSC/LLview, jobreport_datafiles_gpu.yaml, dataset
// GPU_node_dat): its header and format_str, nodeid `<host>_<gpu two digits>`, every host of the
// job in one table; units as the .dat holds them (memory GiB, power W, PCIe/NVLink GiB/s).
// LLview writes every value; an absent reading is written as 0 there, here as `-` so that
// "absent" survives the round trip.
class LlviewWriter final : public TextWriter {
 public:
  LlviewWriter(std::FILE* out, const WriterContext& ctx) : TextWriter(out), ctx_(ctx) {
    Write(
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
    Write(text_);
  }

 private:
  WriterContext ctx_;
  std::string text_;
};

}  // namespace

const WriterRow kLlviewWriters[1] = {
    {.order = 140,
     .extension = ".dat",
     .job_wide = true,
     .whole_seconds_because = "its times have 1 s resolution",
     .help = "an LLview GPU_<jobid>_node.dat, every host in one file (whole seconds):",
     .example = "multi-host --interval-ms 60000 --format {} --out job.dat",
     .make = Make<LlviewWriter>},
};

}  // namespace ww::write
