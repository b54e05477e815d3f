// The DCGM family: `dcgmi dmon` text, dcgm-exporter scrapes, and the same series as Prometheus
// stores them (a query_range response, OpenMetrics for backfilling).
#include <fmt/format.h>

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>

#include "telemetry/fields.h"
#include "telemetry/write/sample_writers.h"
#include "telemetry/write/writer_support.h"

namespace ww::write {
namespace {

// ---------------------------------------------------------------- dcgmi dmon

// dcgmi dmon's columns for the fields the simulator has, by DCGM field id (the DCGM field
// table gives each its tag and sample member). The power limit (160) calibrates the power range
// when, as here, the log names no GPU model. Units as dcgmi prints them on its second header line
// (only some fields have one).
struct DmonColumn {
  int field_id;
  const char* unit;
  int width;
  int decimals;
};
const DmonColumn kDmonColumns[] = {
    {155, "W", 12, 3},  // power draw
    {160, "W", 12, 3},  // power limit
    {203, "", 12, 0},   // GPU utilization
    {204, "", 12, 0},   // memory utilization
    {252, "", 12, 0},   // framebuffer used
    {250, "", 12, 0},   // framebuffer total
    {150, "C", 7, 0},   // temperature
    {100, "", 7, 0},    // SM clock
    {101, "", 7, 0},    // memory clock
    // The PROF activity fields, averaged by DCGM over its interval.
    {1001, "", 7, 3},   // graphics engine active
    {1002, "", 7, 3},   // SM active
    {1003, "", 7, 3},   // SM occupancy
    {1004, "", 7, 3},   // tensor pipe active
    {1005, "", 7, 3},   // DRAM active
    {1009, "", 14, 0},  // PCIe TX bytes/s
    {1010, "", 14, 0},  // PCIe RX bytes/s
    {1011, "", 14, 0},  // NVLink TX bytes/s
    {1012, "", 14, 0},  // NVLink RX bytes/s
};
// dcgmi repeats its two header lines, after a blank line, every 15 rows (as in the real log).
constexpr int kDmonRowsPerHeader = 15;

class DcgmiDmonWriter final : public SampleWriter {
 public:
  explicit DcgmiDmonWriter(std::FILE* out) : out_(out) {
    for (const DmonColumn& c : kDmonColumns) fields_.push_back(&DcgmFieldById(c.field_id));
  }

  void WriteTick(const std::vector<GpuSample>& samples) override {
    for (const GpuSample& s : samples) {
      if (rows_ % kDmonRowsPerHeader == 0) WriteHeader();
      line_ = fmt::format("     GPU {:<2}", s.key.gpu);
      for (size_t i = 0; i < fields_.size(); ++i) {
        const DmonColumn& c = kDmonColumns[i];
        const auto& v = s.*fields_[i]->member;
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
    for (size_t i = 0; i < fields_.size(); ++i) {
      const DmonColumn& c = kDmonColumns[i];
      fmt::format_to(std::back_inserter(head), "{:>{}}", fields_[i]->dmon_tag, c.width);
      fmt::format_to(std::back_inserter(units), "{:>{}}", c.unit, c.width);
    }
    head += '\n';
    units += '\n';
    std::fputs(head.c_str(), out_);
    std::fputs(units.c_str(), out_);
  }

  std::FILE* out_;
  std::vector<const DcgmFieldDef*> fields_;  // kDmonColumns' rows of the DCGM field table
  int64_t rows_ = 0;
  std::string line_;
};

// ---------------------------------------------------------------- DCGM metric series

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
// dcp-metrics-included.csv) in the order it prints them, with its HELP texts, from the DCGM
// field table; a series is written only for readings the sample has. FB_FREE is derived
// (total - used).
std::span<const DcgmFieldDef* const> Metrics() { return DcgmExporterFields(); }

std::optional<double> MetricValue(size_t i, const GpuSample& s) {
  const DcgmFieldDef& m = *Metrics()[i];
  if (m.member != nullptr) return s.*m.member;
  if (m.kind == DcgmFieldKind::kFbFree) return FbFree(s);
  if (m.kind == DcgmFieldKind::kReasons) return ClockEventReasons(s);
  return std::nullopt;
}

// dcgm-exporter prints gauges with Go's %f for floats and as integers for int fields.
std::string ExporterValue(const DcgmFieldDef& m, double v) {
  return m.printed == DcgmPrinted::kInt ? fmt::format("{:.0f}", v) : fmt::format("{:.6f}", v);
}
// Prometheus' JSON and OpenMetrics: the shortest text that reads back as the same number.
std::string PromValue(const DcgmFieldDef& m, double v) {
  return m.printed == DcgmPrinted::kInt ? fmt::format("{:.0f}", v) : fmt::format("{}", v);
}

constexpr const char* kDriverVersion = "550.127.05";
constexpr const char* kDriverVersionLabel = "DCGM_FI_DRIVER_VERSION";

// The labels dcgm-exporter puts on every series of a GPU, in its order.
std::string ExporterLabels(const WriterContext& ctx, GpuKey key) {
  return fmt::format(
      "gpu=\"{}\",UUID=\"{}\",pci_bus_id=\"{}\",device=\"nvidia{}\",modelName=\"{}\","
      "Hostname=\"{}\",{}=\"{}\"",
      key.gpu, ctx.uuid(key), SimulatedPciBusId(key.gpu), key.gpu, ctx.model_name,
      ctx.hosts.at(key.host), kDriverVersionLabel, kDriverVersion);
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
    for (size_t i = 0; i < Metrics().size(); ++i) {
      bool header = false;
      for (const GpuSample& s : samples) {
        const auto v = MetricValue(i, s);
        if (!v) continue;  // a field the GPU does not report has no series
        if (!header) {
          fmt::format_to(std::back_inserter(text_), "# HELP {0} {1}\n# TYPE {0} gauge\n",
                         Metrics()[i]->name, Metrics()[i]->help);
          header = true;
        }
        fmt::format_to(std::back_inserter(text_), "{}{{{}}} {}", Metrics()[i]->name,
                       ExporterLabels(ctx_, s.key), ExporterValue(*Metrics()[i], *v));
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
      for (size_t i = 0; i < Metrics().size(); ++i) {
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
      const DcgmFieldDef& m = *Metrics()[s->metric];
      nlohmann::json metric = {{"__name__", m.name},
                               {"gpu", std::to_string(s->key.gpu)},
                               {"UUID", ctx_.uuid(s->key)},
                               {"pci_bus_id", SimulatedPciBusId(s->key.gpu)},
                               {"device", fmt::format("nvidia{}", s->key.gpu)},
                               {"modelName", ctx_.model_name},
                               {"Hostname", ctx_.hosts.at(s->key.host)},
                               {kDriverVersionLabel, kDriverVersion},
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
    size_t family = Metrics().size();
    for (const Series* s : series_.Sorted()) {
      const DcgmFieldDef& m = *Metrics()[s->metric];
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
