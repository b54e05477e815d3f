// The DCGM family: `dcgmi dmon` text, dcgm-exporter scrapes, and the same series as Prometheus
// stores them (a query_range response, OpenMetrics for backfilling).
#include <fmt/format.h>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "telemetry/write/sample_writers.h"
#include "telemetry/write/writer_support.h"

namespace ww::write {
namespace {

// ---------------------------------------------------------------- dcgmi dmon

// dcgmi dmon's columns for the fields the simulator has, by DCGM field id:
// 155 POWER, 160 PMLMT (the power limit, which calibrates the power range when, as here, the log
// names no GPU model), 203 GPUTL, 204 MCUTL, 252 FBUSD, 250 FBTTL, 150 TMPTR, 100 SMCLK, 101 MMCLK.
// Units as dcgmi prints them on its second header line (only some fields have one).
struct DmonColumn {
  const char* name;
  const char* unit;
  std::optional<double> GpuSample::*member;
  int width;
  int decimals;
};
const DmonColumn kDmonColumns[] = {
    {"POWER", "W", &GpuSample::power_w, 12, 3},
    {"PMLMT", "W", &GpuSample::power_limit_w, 12, 3},
    {"GPUTL", "", &GpuSample::util_gpu_pct, 12, 0},
    {"MCUTL", "", &GpuSample::util_mem_pct, 12, 0},
    {"FBUSD", "", &GpuSample::mem_used_mib, 12, 0},
    {"FBTTL", "", &GpuSample::mem_total_mib, 12, 0},
    {"TMPTR", "C", &GpuSample::temperature_c, 7, 0},
    {"SMCLK", "", &GpuSample::sm_clock_mhz, 7, 0},
    {"MMCLK", "", &GpuSample::mem_clock_mhz, 7, 0},
    // The PROF activity fields (1001-1005, 1009-1012), averaged by DCGM over its interval.
    {"GRACT", "", &GpuSample::gr_engine_active_ratio, 7, 3},
    {"SMACT", "", &GpuSample::sm_activity_ratio, 7, 3},
    {"SMOCC", "", &GpuSample::sm_occupancy_ratio, 7, 3},
    {"TENSO", "", &GpuSample::tensor_activity_ratio, 7, 3},
    {"DRAMA", "", &GpuSample::dram_bw_util_ratio, 7, 3},
    {"PCITX", "", &GpuSample::pcie_tx_bytes_per_s, 14, 0},
    {"PCIRX", "", &GpuSample::pcie_rx_bytes_per_s, 14, 0},
    {"NVLTX", "", &GpuSample::nvlink_tx_bytes_per_s, 14, 0},
    {"NVLRX", "", &GpuSample::nvlink_rx_bytes_per_s, 14, 0},
};
// dcgmi repeats its two header lines, after a blank line, every 15 rows (as in the real log).
constexpr int kDmonRowsPerHeader = 15;

class DcgmiDmonWriter final : public SampleWriter {
 public:
  explicit DcgmiDmonWriter(std::FILE* out) : out_(out) {}

  void WriteTick(const std::vector<GpuSample>& samples) override {
    for (const GpuSample& s : samples) {
      if (rows_ % kDmonRowsPerHeader == 0) WriteHeader();
      line_ = fmt::format("     GPU {:<2}", s.key.gpu);
      for (const DmonColumn& c : kDmonColumns) {
        const auto& v = s.*c.member;
        const std::string text = v ? fmt::format("{:.{}f}", *v, c.decimals) : "N/A";
        fmt::format_to(std::back_inserter(line_), "{:>{}}", text, c.width);
      }
      line_ += '\n';
      std::fwrite(line_.data(), 1, line_.size(), out_);
      ++rows_;
    }
  }
  Status Finish() override { return Status::Ok(); }

 private:
  void WriteHeader() {
    std::string head = rows_ == 0 ? "" : "\n";
    head += "# Entity  ";
    std::string units = "      Id  ";
    for (const DmonColumn& c : kDmonColumns) {
      fmt::format_to(std::back_inserter(head), "{:>{}}", c.name, c.width);
      fmt::format_to(std::back_inserter(units), "{:>{}}", c.unit, c.width);
    }
    head += '\n';
    units += '\n';
    std::fputs(head.c_str(), out_);
    std::fputs(units.c_str(), out_);
  }

  std::FILE* out_;
  int64_t rows_ = 0;
  std::string line_;
};

// ---------------------------------------------------------------- DCGM metric series

enum class Value { kInt, kFloat };

// Readings a series holds that are not one optional<double> member of the sample.
std::optional<double> FbFree(const GpuSample& s) {
  if (!s.mem_used_mib || !s.mem_total_mib) return std::nullopt;
  return std::max(0.0, *s.mem_total_mib - *s.mem_used_mib);
}
// The NVML clock event reasons bitmask as DCGM field 112 (an int64) carries it: a throttled
// straggler says so in a scrape as in an nvidia-smi log.
std::optional<double> ClockEventReasons(const GpuSample& s) {
  if (!s.clock_event_reasons) return std::nullopt;
  return static_cast<double>(*s.clock_event_reasons);
}

// dcgm-exporter's counters (etc/default-counters.csv, and the PROF ratios and byte rates of
// dcp-metrics-included.csv) in the order it prints them, with its HELP texts; a series is
// written only for readings the sample has. FB_FREE is derived (total - used).
struct MetricDef {
  const char* name;
  const char* help;
  std::optional<double> GpuSample::*member;  // nullptr: `derive` reads it
  Value kind;
  std::optional<double> (*derive)(const GpuSample&) = nullptr;
};
const MetricDef kMetrics[] = {
    {"DCGM_FI_DEV_SM_CLOCK", "SM clock frequency (in MHz).", &GpuSample::sm_clock_mhz, Value::kInt},
    {"DCGM_FI_DEV_MEM_CLOCK", "Memory clock frequency (in MHz).", &GpuSample::mem_clock_mhz,
     Value::kInt},
    {"DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).", &GpuSample::temperature_c, Value::kInt},
    {"DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", &GpuSample::power_w, Value::kFloat},
    {"DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", &GpuSample::util_gpu_pct, Value::kInt},
    {"DCGM_FI_DEV_MEM_COPY_UTIL", "Memory utilization (in %).", &GpuSample::util_mem_pct,
     Value::kInt},
    {"DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB).", nullptr, Value::kInt, FbFree},
    {"DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", &GpuSample::mem_used_mib,
     Value::kInt},
    {"DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "Current clock event reasons.", nullptr, Value::kInt,
     ClockEventReasons},
    {"DCGM_FI_PROF_GR_ENGINE_ACTIVE", "Ratio of time the graphics engine is active.",
     &GpuSample::gr_engine_active_ratio, Value::kFloat},
    {"DCGM_FI_PROF_SM_ACTIVE", "The ratio of cycles an SM has at least 1 warp assigned.",
     &GpuSample::sm_activity_ratio, Value::kFloat},
    {"DCGM_FI_PROF_SM_OCCUPANCY", "The ratio of number of warps resident on an SM.",
     &GpuSample::sm_occupancy_ratio, Value::kFloat},
    {"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "Ratio of cycles the tensor (HMMA) pipe is active.",
     &GpuSample::tensor_activity_ratio, Value::kFloat},
    {"DCGM_FI_PROF_DRAM_ACTIVE",
     "Ratio of cycles the device memory interface is active sending or receiving data.",
     &GpuSample::dram_bw_util_ratio, Value::kFloat},
    {"DCGM_FI_PROF_PCIE_TX_BYTES", "The rate of data transmitted over the PCIe bus in bytes/s.",
     &GpuSample::pcie_tx_bytes_per_s, Value::kFloat},
    {"DCGM_FI_PROF_PCIE_RX_BYTES", "The rate of data received over the PCIe bus in bytes/s.",
     &GpuSample::pcie_rx_bytes_per_s, Value::kFloat},
    {"DCGM_FI_PROF_NVLINK_TX_BYTES", "The rate of data transmitted over NVLink in bytes/s.",
     &GpuSample::nvlink_tx_bytes_per_s, Value::kFloat},
    {"DCGM_FI_PROF_NVLINK_RX_BYTES", "The rate of data received over NVLink in bytes/s.",
     &GpuSample::nvlink_rx_bytes_per_s, Value::kFloat},
};
constexpr size_t kNumMetrics = sizeof(kMetrics) / sizeof(kMetrics[0]);

std::optional<double> MetricValue(size_t i, const GpuSample& s) {
  if (kMetrics[i].member == nullptr) return kMetrics[i].derive(s);
  return s.*kMetrics[i].member;
}

// dcgm-exporter prints gauges with Go's %f for floats and as integers for int fields.
std::string ExporterValue(const MetricDef& m, double v) {
  return m.kind == Value::kInt ? fmt::format("{:.0f}", v) : fmt::format("{:.6f}", v);
}
// Prometheus' JSON and OpenMetrics: the shortest text that reads back as the same number.
std::string PromValue(const MetricDef& m, double v) {
  return m.kind == Value::kInt ? fmt::format("{:.0f}", v) : fmt::format("{}", v);
}

constexpr const char* kDriverVersion = "550.127.05";

// The labels dcgm-exporter puts on every series of a GPU, in its order.
std::string ExporterLabels(const WriterContext& ctx, GpuKey key) {
  return fmt::format(
      "gpu=\"{}\",UUID=\"{}\",pci_bus_id=\"{}\",device=\"nvidia{}\",modelName=\"{}\","
      "Hostname=\"{}\",DCGM_FI_DRIVER_VERSION=\"{}\"",
      key.gpu, ctx.uuid(key), SimulatedPciBusId(key.gpu), key.gpu, ctx.model_name,
      ctx.hosts.at(key.host), kDriverVersion);
}

// ---------------------------------------------------------------- dcgm-exporter scrapes

// One scrape per tick, as `curl -s node:9400/metrics` prints it, every sample line stamped
// with the scrape's time in ms (the exposition format's optional timestamp, as a scraper that
// keeps the time writes it, and what the dcgm-exporter reader takes a scrape's time from).
// Without timestamps (`while sleep N; do curl -s node:9400/metrics; done > gpu.prom`, as most
// people have it): the lines as the exporter serves them, read back with --interval-ms.
class DcgmExporterWriter final : public SampleWriter {
 public:
  DcgmExporterWriter(std::FILE* out, const WriterContext& ctx, bool timestamps)
      : out_(out), ctx_(ctx), timestamps_(timestamps) {}

  void WriteTick(const std::vector<GpuSample>& samples) override {
    if (samples.empty()) return;
    int64_t at_ms = samples.front().timestamp_ms;
    for (const GpuSample& s : samples) at_ms = std::min(at_ms, s.timestamp_ms);
    text_.clear();
    for (size_t i = 0; i < kNumMetrics; ++i) {
      bool header = false;
      for (const GpuSample& s : samples) {
        const auto v = MetricValue(i, s);
        if (!v) continue;  // a field the GPU does not report has no series
        if (!header) {
          fmt::format_to(std::back_inserter(text_), "# HELP {0} {1}\n# TYPE {0} gauge\n",
                         kMetrics[i].name, kMetrics[i].help);
          header = true;
        }
        fmt::format_to(std::back_inserter(text_), "{}{{{}}} {}", kMetrics[i].name,
                       ExporterLabels(ctx_, s.key), ExporterValue(kMetrics[i], *v));
        if (timestamps_) fmt::format_to(std::back_inserter(text_), " {}", at_ms);
        text_ += '\n';
      }
    }
    std::fwrite(text_.data(), 1, text_.size(), out_);
  }
  Status Finish() override { return Status::Ok(); }

 private:
  std::FILE* out_;
  WriterContext ctx_;
  bool timestamps_;
  std::string text_;
};

// ---------------------------------------------------------------- Prometheus' view

// Series as Prometheus stores a scrape of dcgm-exporter: the exporter's labels plus the
// `instance` and `job` the scrape adds; values of every tick, in time order.
struct Series {
  size_t metric;
  GpuKey key;
  std::vector<std::pair<int64_t, double>> points;  // (unix ms, value)
};

class SeriesCollector {
 public:
  void Add(const std::vector<GpuSample>& samples) {
    if (samples.empty()) return;
    int64_t at_ms = samples.front().timestamp_ms;
    for (const GpuSample& s : samples) at_ms = std::min(at_ms, s.timestamp_ms);
    for (const GpuSample& s : samples) {
      for (size_t i = 0; i < kNumMetrics; ++i) {
        const auto v = MetricValue(i, s);
        if (!v) continue;
        const uint64_t id = (static_cast<uint64_t>(i) << 32) |
                            (static_cast<uint64_t>(s.key.host) << 16) | s.key.gpu;
        auto [it, fresh] = index_.try_emplace(id, series_.size());
        if (fresh) series_.push_back({i, s.key, {}});
        series_[it->second].points.emplace_back(at_ms, *v);
      }
    }
  }
  // By metric, then host, then GPU: one metric family's series together, as OpenMetrics wants.
  std::vector<const Series*> Sorted() const {
    std::vector<const Series*> out;
    for (const auto& [id, index] : index_) out.push_back(&series_[index]);
    return out;
  }

 private:
  std::vector<Series> series_;
  std::map<uint64_t, size_t> index_;
};

std::string Instance(const WriterContext& ctx, GpuKey key) {
  return ctx.hosts.at(key.host) + ":9400";
}
constexpr const char* kJob = "dcgm-exporter";

// A saved /api/v1/query_range response (`curl -G .../query_range --data-urlencode
// 'query={__name__=~"DCGM_FI_.*"}' ... > incident.json`), step = the scrape interval.
class PrometheusJsonWriter final : public SampleWriter {
 public:
  PrometheusJsonWriter(std::FILE* out, const WriterContext& ctx) : out_(out), ctx_(ctx) {}

  void WriteTick(const std::vector<GpuSample>& samples) override { series_.Add(samples); }

  Status Finish() override {
    nlohmann::json result = nlohmann::json::array();
    for (const Series* s : series_.Sorted()) {
      const MetricDef& m = kMetrics[s->metric];
      nlohmann::json metric = {{"__name__", m.name},
                               {"gpu", std::to_string(s->key.gpu)},
                               {"UUID", ctx_.uuid(s->key)},
                               {"pci_bus_id", SimulatedPciBusId(s->key.gpu)},
                               {"device", fmt::format("nvidia{}", s->key.gpu)},
                               {"modelName", ctx_.model_name},
                               {"Hostname", ctx_.hosts.at(s->key.host)},
                               {"DCGM_FI_DRIVER_VERSION", kDriverVersion},
                               {"instance", Instance(ctx_, s->key)},
                               {"job", kJob}};
      nlohmann::json values = nlohmann::json::array();
      for (const auto& [ms, v] : s->points) {
        // Prometheus writes the time as a JSON number of seconds (ms precision).
        values.push_back({static_cast<double>(ms) / 1000.0, PromValue(m, v)});
      }
      result.push_back({{"metric", std::move(metric)}, {"values", std::move(values)}});
    }
    // The envelope in Prometheus's own key order (status, then data with resultType before
    // result): readers that sniff the first bytes (wattwatch's detection) see what a real
    // response starts with. Labels stay sorted by name, as Prometheus prints them.
    const std::string text =
        R"({"status":"success","data":{"resultType":"matrix","result":)" + result.dump() + "}}\n";
    if (std::fwrite(text.data(), 1, text.size(), out_) != text.size()) {
      return Status::IoError("short write");
    }
    return Status::Ok();
  }

 private:
  std::FILE* out_;
  WriterContext ctx_;
  SeriesCollector series_;
};

// OpenMetrics text as `promtool tsdb create-blocks-from openmetrics` reads it: one metric
// family at a time (families must not interleave), each series' samples in time order,
// timestamps in seconds, `# EOF` last.
class OpenMetricsWriter final : public SampleWriter {
 public:
  OpenMetricsWriter(std::FILE* out, const WriterContext& ctx) : out_(out), ctx_(ctx) {}

  void WriteTick(const std::vector<GpuSample>& samples) override { series_.Add(samples); }

  Status Finish() override {
    std::string text;
    size_t family = kNumMetrics;
    for (const Series* s : series_.Sorted()) {
      const MetricDef& m = kMetrics[s->metric];
      if (s->metric != family) {
        family = s->metric;
        fmt::format_to(std::back_inserter(text), "# HELP {0} {1}\n# TYPE {0} gauge\n", m.name,
                       m.help);
      }
      const std::string series =
          fmt::format("{}{{{},instance=\"{}\",job=\"{}\"}}", m.name, ExporterLabels(ctx_, s->key),
                      Instance(ctx_, s->key), kJob);
      for (const auto& [ms, v] : s->points) {
        fmt::format_to(std::back_inserter(text), "{} {} {}.{:03}\n", series, PromValue(m, v),
                       ms / 1000, ms % 1000);
      }
      if (text.size() > (1 << 20)) Flush(text);
    }
    text += "# EOF\n";
    Flush(text);
    return ok_ ? Status::Ok() : Status::IoError("short write");
  }

 private:
  void Flush(std::string& text) {
    if (std::fwrite(text.data(), 1, text.size(), out_) != text.size()) ok_ = false;
    text.clear();
  }

  std::FILE* out_;
  WriterContext ctx_;
  SeriesCollector series_;
  bool ok_ = true;
};

}  // namespace

std::string SimulatedPciBusId(int gpu) {
  static const int kHgxBuses[] = {0x18, 0x2a, 0x3a, 0x5d, 0x9a, 0xab, 0xba, 0xdb};
  const int bus = gpu < 8 ? kHgxBuses[gpu] : 0x20 + gpu;
  return fmt::format("00000000:{:02X}:00.0", bus);
}

const WriterRow kDcgmiDmonWriters[1] = {
    {.order = 10,
     .extension = ".dmon",
     .help = "dcgmi dmon text, no timestamps (triage it with the same --interval-ms):",
     .example = "hang-spin --interval-ms 1000 --format {} --out gpu.dmon",
     .make = Make<DcgmiDmonWriter>},
};

const WriterRow kDcgmExporterWriters[2] = {
    {.order = 20,
     .extension = ".prom",
     .help = "one /metrics scrape per interval, stamped with the scrape time:",
     .example = "hang-exit --interval-ms 30000 --format {} --out gpu.prom",
     .make = Make<DcgmExporterWriter, /*timestamps=*/true>},
    {.name = "dcgm-exporter-curl",
     .order = 30,
     .extension = ".prom",
     .make = Make<DcgmExporterWriter, /*timestamps=*/false>},
};

// OpenMetrics is read back through Prometheus: promtool backfills it, and Prometheus serves its
// series as the query_range JSON the prometheus-json reader reads.
const WriterRow kPromJsonWriters[2] = {
    {.order = 40,
     .extension = ".json",
     .job_wide = true,
     .help = "a saved /api/v1/query_range response, every host in one file:",
     .example = "multi-host --interval-ms 15000 --format {} --out incident.json",
     .make = Make<PrometheusJsonWriter>},
    {.name = "openmetrics",
     .order = 50,
     .extension = ".om",
     .job_wide = true,
     .help = "input of promtool tsdb create-blocks-from openmetrics, every host in one file:",
     .example = "field-report --interval-ms 15000 --format {} --out job.om",
     .make = Make<OpenMetricsWriter>},
};

}  // namespace ww::write
