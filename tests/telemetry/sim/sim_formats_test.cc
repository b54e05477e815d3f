// The simulator writes every format of issue 13, and triage of each gives the same verdicts as
// triage of the nvidia-smi CSV of the same simulation: for every scenario, at the intervals each
// format really has, the same hang episodes (count; start and end within one interval), the same
// culprits, and every GPU's state shares within 0.02. Formats are recognized from the content.
//
// In process (writer -> file -> reader -> TriageEngine), not through the CLI: ~100 runs would
// cost a process start each under ASan. The nvidia-smi reference of a (scenario, interval) is
// simulated and triaged once and shared by the formats.
//
// prometheus-json (a saved query_range response) is a file input: detected from its content and
// read by wattwatch's reader, as `wattwatch triage incident.json` reads it. openmetrics is what
// promtool backfills into a Prometheus TSDB (read back over the HTTP API in prom_e2e.py); here
// its series are read back per timestamp through the dcgm-exporter decoder (the same DCGM field
// mapping), and promtool itself must accept the file.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

#include "report/triage_report.h"
#include "support/support.h"
#include "telemetry/ingest/dcgm_exporter.h"
#include "telemetry/ingest/open.h"
#include "telemetry/ingest/prom_text.h"
#include "telemetry/sim/simulator.h"
#include "triage/run.h"

namespace ww::sim_formats {
namespace {

using OutputFormat = const sim::OutputFormat*;

// The writer of `simulate --format NAME`.
OutputFormat Writer(std::string_view name) {
  auto format = sim::ParseOutputFormat(name);
  if (!format.ok()) {
    ADD_FAILURE() << format.status().message();
    std::abort();
  }
  return *format;
}

constexpr uint64_t kSeed = 7;
constexpr double kShareTolerance = 0.02;

// What the comparison looks at, from one triage run.
struct Verdict {
  std::vector<triage::HangEpisode> hangs;
  std::map<std::pair<uint16_t, uint16_t>, std::array<double, kNumGpuStates>> shares;
  int64_t first_ms = 0;
  std::vector<std::string> formats;  // what each file was recognized as
  std::string inputs;                // and what was read of it, for failure messages
};

Result<Verdict> TriageSource(TelemetrySource& source) {
  triage::TriageEngine engine;
  Status st = triage::RunToEnd(source, engine);
  if (!st.ok()) return st;
  Verdict v;
  v.hangs = engine.hang_episodes();
  v.first_ms = engine.first_timestamp_ms();
  for (const triage::GpuStats& g : engine.gpu_stats()) {
    auto& share = v.shares[{g.key.host, g.key.gpu}];
    const double total = g.total_seconds();
    for (int i = 0; i < kNumGpuStates; ++i) share[i] = total > 0 ? g.seconds[i] / total : 0;
  }
  return v;
}

Result<Verdict> TriageFiles(const std::vector<std::string>& paths, int64_t interval_ms,
                            const std::string& wide_metric = "") {
  IngestOptions io;
  io.replay.interval_ms = interval_ms;
  io.wide_metric = wide_metric;
  io.replay.triage_fields_only = true;
  auto in = OpenTelemetryFiles(paths, io);
  if (!in.ok()) return in.status();
  auto v = TriageSource(*in->source);
  if (!v.ok()) return v.status();
  for (const auto& d : in->inputs) {
    v->formats.push_back(d.format);
    v->inputs += d.Text() + "; ";
  }
  return v;
}

// A source over samples already read, one batch per timestamp.
class BatchSource final : public TelemetrySource {
 public:
  BatchSource(std::vector<std::string> hosts, std::vector<std::vector<GpuSample>> batches,
              std::vector<GpuInfo> gpus)
      : hosts_(std::move(hosts)), batches_(std::move(batches)), gpus_(std::move(gpus)) {}
  Status Next(std::vector<GpuSample>* out) override {
    if (next_ < batches_.size()) {
      out->insert(out->end(), batches_[next_].begin(), batches_[next_].end());
      ++next_;
    }
    return Status::Ok();
  }
  const std::vector<std::string>& hosts() const override { return hosts_; }
  std::vector<GpuInfo> gpus() const override { return gpus_; }

 private:
  std::vector<std::string> hosts_;
  std::vector<std::vector<GpuSample>> batches_;
  std::vector<GpuInfo> gpus_;
  size_t next_ = 0;
};

// Prometheus-held series: host -> time (ms) -> sample lines without timestamps, decoded per
// (host, time) as one dcgm-exporter scrape.
using HeldSeries = std::map<std::string, std::map<int64_t, std::vector<std::string>>>;

Result<std::unique_ptr<TelemetrySource>> DecodeHeld(const HeldSeries& held) {
  std::vector<std::string> hosts;
  std::vector<std::vector<GpuSample>> merged;
  std::map<int64_t, size_t> batch_at;
  std::vector<GpuInfo> gpus;
  std::string why;
  for (const auto& [host, by_time] : held) {
    const auto host_index = static_cast<uint16_t>(hosts.size());
    hosts.push_back(host);
    ingest::DcgmScrapeDecoder decoder(host_index);
    for (const auto& [ms, lines] : by_time) {
      for (const std::string& line : lines) {
        const auto r = decoder.Line(line, &why);
        if (r == ingest::DcgmScrapeDecoder::LineResult::kMalformed ||
            r == ingest::DcgmScrapeDecoder::LineResult::kRepeated) {
          return Status::InvalidInput(fmt::format("{} at {}: '{}': {}", host, ms, line, why));
        }
      }
      auto [it, fresh] = batch_at.try_emplace(ms, merged.size());
      if (fresh) merged.emplace_back();
      decoder.End(ms, &merged[it->second]);
    }
    for (const auto& [gpu, info] : decoder.infos()) gpus.push_back(info);
  }
  std::vector<std::vector<GpuSample>> batches;
  for (const auto& [ms, index] : batch_at) batches.push_back(std::move(merged[index]));
  return std::unique_ptr<TelemetrySource>(
      std::make_unique<BatchSource>(std::move(hosts), std::move(batches), std::move(gpus)));
}

// OpenMetrics text: samples `name{labels} value seconds`, families one after the other.
Result<std::unique_ptr<TelemetrySource>> ReadOpenMetrics(const std::string& path) {
  HeldSeries held;
  ingest::PromSample sample;
  std::vector<ingest::PromLabel> labels;
  std::deque<std::string> scratch;
  std::string error;
  const auto lines = testing::Lines(testing::ReadFile(path));
  if (lines.empty() || lines.back() != "# EOF") return Status::InvalidInput(path + ": no # EOF");
  for (const std::string& line : lines) {
    if (line.empty() || line[0] == '#') continue;
    const size_t cut = line.rfind(' ');
    const std::string body = line.substr(0, cut);
    const auto ms = std::llround(std::stod(line.substr(cut + 1)) * 1000);
    if (!ingest::ParsePromLine(body, &sample, &error) ||
        !ingest::ParsePromLabels(sample.label_block, &labels, &scratch, &error)) {
      return Status::InvalidInput(fmt::format("{}: '{}': {}", path, line, error));
    }
    std::string host;
    for (const auto& l : labels) {
      if (l.name == "Hostname") host = std::string(l.value);
    }
    held[host][ms].push_back(body);
  }
  return DecodeHeld(held);
}

struct Written {
  std::vector<std::string> paths;
  int64_t interval_ms = 0;
};

Result<Written> Simulate(const std::string& scenario, int64_t interval_ms, OutputFormat format,
                         const std::string& dir, bool interleave = false,
                         const std::string& model = "") {
  sim::ScenarioOptions o;
  o.model = model;
  o.interval_ms = interval_ms;
  o.seed = kSeed;
  auto config = sim::MakeScenario(scenario, o);
  if (!config.ok()) return config.status();
  sim::WriteOptions w;
  w.format = format;
  w.out_dir = dir;
  w.interleave_job_lines = interleave;
  auto paths = sim::WriteScenario(*config, w);
  if (!paths.ok()) return paths.status();
  return Written{*paths, interval_ms};
}

// The nvidia-smi CSV verdict of (scenario, interval, board), computed once for all formats.
const Verdict& Reference(const std::string& scenario, int64_t interval_ms,
                         const std::string& model = "") {
  static std::map<std::tuple<std::string, int64_t, std::string>, Verdict> cache;
  auto it = cache.find({scenario, interval_ms, model});
  if (it != cache.end()) return it->second;
  testing::TempDir dir;
  auto w = Simulate(scenario, interval_ms, Writer("nvidia-smi"), dir.path(), false, model);
  EXPECT_TRUE(w.ok()) << w.status().message();
  Verdict v;
  if (w.ok()) {
    auto t = TriageFiles(w->paths, 0);
    EXPECT_TRUE(t.ok()) << t.status().message();
    if (t.ok()) v = std::move(*t);
  }
  return cache.emplace(std::make_tuple(scenario, interval_ms, model), std::move(v)).first->second;
}

// The reference of a layout that carries power alone (a W&B power panel pivoted wide): the same
// nvidia-smi CSV with every other field (and the GPU names, which calibrate power) removed, so
// the comparison is of the reader, within what the layout's fields allow. What the layout lacks
// is named in evidence.missing (WidePowerNamesWhatItLacksInEvidence).
const Verdict& PowerOnlyReference(const std::string& scenario, int64_t interval_ms) {
  static std::map<std::pair<std::string, int64_t>, Verdict> cache;
  auto it = cache.find({scenario, interval_ms});
  if (it != cache.end()) return it->second;
  testing::TempDir dir;
  auto w = Simulate(scenario, interval_ms, Writer("nvidia-smi"), dir.path());
  EXPECT_TRUE(w.ok()) << w.status().message();
  Verdict v;
  if (w.ok()) {
    auto in = OpenTelemetryFiles(w->paths, {});
    EXPECT_TRUE(in.ok()) << in.status().message();
    if (in.ok()) {
      std::vector<std::vector<GpuSample>> batches;
      for (;;) {
        std::vector<GpuSample> batch;
        EXPECT_TRUE(in->source->Next(&batch).ok());
        if (batch.empty()) break;
        // An empty cell of the frame is no sample at all.
        std::vector<GpuSample> power_only;
        for (const GpuSample& s : batch) {
          if (!s.power_w) continue;
          GpuSample p;
          p.timestamp_ms = s.timestamp_ms;
          p.key = s.key;
          p.power_w = s.power_w;
          power_only.push_back(p);
        }
        if (!power_only.empty()) batches.push_back(std::move(power_only));
      }
      std::vector<GpuInfo> keys_only;
      for (const GpuInfo& g : in->source->gpus()) keys_only.push_back(GpuInfo{g.key, "", "", ""});
      BatchSource source(in->source->hosts(), std::move(batches), std::move(keys_only));
      auto t = TriageSource(source);
      EXPECT_TRUE(t.ok()) << t.status().message();
      if (t.ok()) v = std::move(*t);
    }
  }
  return cache.emplace(std::make_pair(scenario, interval_ms), std::move(v)).first->second;
}

std::string Gpu(const std::pair<uint16_t, uint16_t>& k) {
  return fmt::format("{}/GPU{}", k.first, k.second);
}

// Compares a format's verdict with the CSV's; returns the largest share difference.
double ExpectSameVerdict(const Verdict& want, const Verdict& got, int64_t interval_ms,
                         bool synthetic_times) {
  // dcgmi dmon rows carry no time: its samples start at 0, so times are compared from the first.
  const int64_t offset = synthetic_times ? want.first_ms - got.first_ms : 0;
  if (!synthetic_times) {
    EXPECT_NEAR(got.first_ms, want.first_ms, 50);
  }
  EXPECT_EQ(got.hangs.size(), want.hangs.size());
  for (size_t i = 0; i < std::min(got.hangs.size(), want.hangs.size()); ++i) {
    const auto& g = got.hangs[i];
    const auto& w = want.hangs[i];
    SCOPED_TRACE(fmt::format("hang {}", i));
    EXPECT_LE(std::abs(g.start_ms + offset - w.start_ms), interval_ms);
    EXPECT_LE(std::abs(g.end_ms + offset - w.end_ms), interval_ms);
    EXPECT_EQ(g.culprits, w.culprits);
    EXPECT_EQ(g.gpus.size(), w.gpus.size());
  }
  EXPECT_EQ(got.shares.size(), want.shares.size());
  double worst = 0;
  for (const auto& [key, share] : want.shares) {
    auto it = got.shares.find(key);
    if (it == got.shares.end()) {
      ADD_FAILURE() << Gpu(key) << " missing";
      continue;
    }
    // Compute and communication are compared as one: formats with DCGM's SM activity (dmon,
    // dcgm-exporter) see a straggler's peers' short waits as spins, which the CSV's ~1 s power
    // average blurs into compute (issue 14); the split is the counters' to improve.
    auto training = [](const auto& sh) {
      return sh[static_cast<int>(GpuState::kCompute)] +
             sh[static_cast<int>(GpuState::kCommunication)];
    };
    EXPECT_LE(std::abs(training(it->second) - training(share)), kShareTolerance) << Gpu(key);
    for (int s = 0; s < kNumGpuStates; ++s) {
      if (s == static_cast<int>(GpuState::kCompute) ||
          s == static_cast<int>(GpuState::kCommunication)) {
        continue;
      }
      const double d = std::abs(it->second[s] - share[s]);
      worst = std::max(worst, d);
      EXPECT_LE(d, kShareTolerance) << Gpu(key) << " " << kGpuStateNames[s] << ": " << it->second[s]
                                    << " vs CSV " << share[s];
    }
  }
  return worst;
}

enum class ReadBy { kFiles, kOpenMetrics };

void CheckFormat(OutputFormat format, const std::vector<int64_t>& intervals_ms,
                 ReadBy read_by = ReadBy::kFiles,
                 const std::vector<std::string>& scenarios = sim::ScenarioNames(),
                 const std::string& model = "") {
  const auto t0 = std::chrono::steady_clock::now();
  // Formats without times in the file: read back with --interval-ms.
  const bool synthetic_times =
      format == Writer("dcgmi-dmon") || format == Writer("dcgm-exporter-curl");
  std::string read_with;
  for (int64_t interval_ms : intervals_ms) {
    double worst = 0;
    int hangs = 0;
    for (const std::string& scenario : scenarios) {
      SCOPED_TRACE(fmt::format("{} {} at {} ms", format->name, scenario, interval_ms));
      const Verdict& want = format == Writer("wide-power")
                                ? PowerOnlyReference(scenario, interval_ms)
                                : Reference(scenario, interval_ms, model);
      testing::TempDir dir;
      // Every other scenario's table sits between a training script's lines, as in a .out.
      const bool interleave = format == Writer("smi-table") && scenario.size() % 2 == 0;
      auto w = Simulate(scenario, interval_ms, format, dir.path(), interleave, model);
      ASSERT_TRUE(w.ok()) << w.status().message();
      Result<Verdict> got = Status::Internal("unread");
      const ReadBy how = read_by;
      read_with = how == ReadBy::kFiles ? "wattwatch's reader" : "the test's DCGM decoder";
      if (how == ReadBy::kFiles) {
        got = TriageFiles(w->paths, synthetic_times ? interval_ms : 0,
                          format == Writer("wide-power") ? "power" : "");
      } else {
        ASSERT_EQ(w->paths.size(), 1u);
        auto source = ReadOpenMetrics(w->paths[0]);
        ASSERT_TRUE(source.ok()) << source.status().message();
        got = TriageSource(**source);
      }
      if (format == Writer("wide-power") && want.shares.empty()) {
        // A job without power readings leaves a power frame empty: refused, not read as zeros.
        ASSERT_FALSE(got.ok());
        EXPECT_NE(got.status().message().find("no samples"), std::string::npos);
        continue;
      }
      ASSERT_TRUE(got.ok()) << got.status().message();
      if (how == ReadBy::kFiles) {
        // Recognized from the content, not taken for some other format.
        // (a column per GPU is one more layout of the custom-csv reader, JSON lines of wandb's)
        std::string want_format = format->name;
        if (format == Writer("custom-csv-wide")) want_format = "custom-csv";
        if (format == Writer("wandb-jsonl")) want_format = "wandb";
        if (format == Writer("dcgm-exporter-curl")) want_format = "dcgm-exporter";
        if (format == Writer("nvidia-smi-loop")) want_format = "nvidia-smi";
        if (format == Writer("wide-power")) want_format = "wide";
        if (std::string_view(format->name).starts_with("amd-smi")) want_format = "amd-smi";
        if (std::string_view(format->name).starts_with("rocm-smi")) want_format = "rocm-smi";
        for (const std::string& f : got->formats) EXPECT_EQ(f, want_format) << got->inputs;
      }
      worst = std::max(worst, ExpectSameVerdict(want, *got, interval_ms, synthetic_times));
      hangs += static_cast<int>(want.hangs.size());
    }
    std::cout << fmt::format(
        "[ format ] {} at {} ms{}: {} scenarios, {} hangs, largest share difference {:.4f}, read "
        "by {}\n",
        format->name, interval_ms, model.empty() ? "" : " on " + model, scenarios.size(), hangs,
        worst, read_with);
  }
  std::cout << fmt::format(
      "[ format ] {}: {:.1f} s\n", format->name,
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

// Intervals: dcgmi dmon's -d and nvidia-smi tables and home-made loggers at 1 s; dcgm-exporter
// (30 s default collection), the Prometheus views of it at 1 s, 15 s (a common scrape interval)
// and 30 s; W&B samples system metrics at ~15 s, and at 1 s when asked.
TEST(SimFormats, DcgmiDmonSameVerdictsAsCsv) { CheckFormat(Writer("dcgmi-dmon"), {1000}); }

TEST(SimFormats, DcgmExporterSameVerdictsAsCsv) {
  CheckFormat(Writer("dcgm-exporter"), {1000, 15000, 30000});
}

TEST(SimFormats, DcgmExporterWithoutTimestampsSameVerdictsAsCsv) {
  CheckFormat(Writer("dcgm-exporter-curl"), {1000, 15000, 30000});
}

TEST(SimFormats, PrometheusJsonSameVerdictsAsCsv) {
  CheckFormat(Writer("prometheus-json"), {1000, 15000, 30000});
}

TEST(SimFormats, OpenMetricsSameVerdictsAsCsv) {
  CheckFormat(Writer("openmetrics"), {1000, 15000, 30000}, ReadBy::kOpenMetrics);
}

TEST(SimFormats, WandbSameVerdictsAsCsv) { CheckFormat(Writer("wandb"), {1000, 15000}); }

TEST(SimFormats, WandbJsonLinesSameVerdictsAsCsv) {
  CheckFormat(Writer("wandb-jsonl"), {1000, 15000});
}

TEST(SimFormats, SmiTableSameVerdictsAsCsv) { CheckFormat(Writer("smi-table"), {1000}); }

TEST(SimFormats, CustomCsvSameVerdictsAsCsv) { CheckFormat(Writer("custom-csv"), {1000}); }

TEST(SimFormats, CustomCsvOneColumnPerGpuSameVerdictsAsCsv) {
  CheckFormat(Writer("custom-csv-wide"), {1000});
}

// Issue 30's layouts: nvidia-smi in a shell loop (the header before every sample, GPUs by bus
// id), gpustat with its host lines (1 s dates), W&B power pivoted one column per GPU (power
// only: compared with the CSV reduced to power, PowerOnlyReference; what it lacks is in
// evidence.missing, checked below), LLview job tables (60 s).
TEST(SimFormats, NvidiaSmiLoopSameVerdictsAsCsv) { CheckFormat(Writer("nvidia-smi-loop"), {1000}); }

TEST(SimFormats, GpustatSameVerdictsAsCsv) { CheckFormat(Writer("gpustat"), {1000}); }

// hl-smi logs of a Gaudi 3, against the nvidia-smi CSV of the same Gaudi 3 run.
TEST(SimFormats, HlSmiSameVerdictsAsCsv) {
  CheckFormat(Writer("hl-smi"), {1000}, ReadBy::kFiles, sim::ScenarioNames(), "gaudi3");
}

TEST(SimFormats, WidePowerSameVerdictsAsCsv) { CheckFormat(Writer("wide-power"), {1000, 30000}); }

TEST(SimFormats, LlviewSameVerdictsAsCsv) { CheckFormat(Writer("llview"), {1000, 60000}); }

// The AMD formats (ingest/amd_smi.h) on an MI300X, a few scenarios each, not the whole matrix
// (scripts/check_vendor_formats.py runs that): a spinning hang, a straggler, a rank-0
// checkpoint, a host crash.
const std::vector<std::string> kAmdScenarios = {"hang-spin", "straggler", "checkpoint-rank0",
                                                "host-crash"};

TEST(SimFormats, AmdSmiCsvSameVerdictsAsCsv) {
  CheckFormat(Writer("amd-smi-csv"), {1000}, ReadBy::kFiles, kAmdScenarios, "mi300x");
}

TEST(SimFormats, AmdSmiJsonSameVerdictsAsCsv) {
  CheckFormat(Writer("amd-smi-json"), {1000}, ReadBy::kFiles, kAmdScenarios, "mi300x");
}

TEST(SimFormats, AmdSmiMonitorSameVerdictsAsCsv) {
  CheckFormat(Writer("amd-smi-monitor"), {1000}, ReadBy::kFiles, kAmdScenarios, "mi300x");
}

TEST(SimFormats, RocmSmiCsvSameVerdictsAsCsv) {
  CheckFormat(Writer("rocm-smi-csv"), {1000}, ReadBy::kFiles, kAmdScenarios, "mi300x");
}

TEST(SimFormats, RocmSmiJsonSameVerdictsAsCsv) {
  CheckFormat(Writer("rocm-smi-json"), {1000}, ReadBy::kFiles, kAmdScenarios, "mi300x");
}

TEST(SimFormats, WidePowerNamesWhatItLacksInEvidence) {
  testing::TempDir dir;
  auto w = Simulate("healthy", 30000, Writer("wide-power"), dir.path());
  ASSERT_TRUE(w.ok()) << w.status().message();
  IngestOptions io;
  io.wide_metric = "power";
  auto in = OpenTelemetryFiles(w->paths, io);
  ASSERT_TRUE(in.ok()) << in.status().message();
  triage::TriageEngine engine;
  ASSERT_TRUE(triage::RunToEnd(*in->source, engine).ok());
  const auto report = report::MakeReport(engine, in->source->hosts(), in->source->warnings());
  const auto j = report::RenderJson(report);
  const std::string text = j.dump();
  EXPECT_NE(text.find("utilization.gpu"), std::string::npos) << text.substr(0, 2000);
  EXPECT_NE(text.find("memory.used"), std::string::npos);
}

TEST(SimFormats, BadFormatIntervalAndPathsAreClearErrors) {
  auto bad = sim::ParseOutputFormat("prometheus");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("prometheus-json, openmetrics"), std::string::npos);
  testing::TempDir dir;
  auto table = Simulate("healthy", 500, Writer("smi-table"), dir.path());
  ASSERT_FALSE(table.ok());
  EXPECT_NE(table.status().message().find("--interval-ms 500 is not whole seconds"),
            std::string::npos);
  sim::ScenarioOptions o;
  o.interval_ms = 15000;
  auto config = sim::MakeScenario("multi-host", o);
  ASSERT_TRUE(config.ok());
  sim::WriteOptions w;
  w.format = Writer("prometheus-json");
  w.out_paths = {dir / "a.json", dir / "b.json"};
  auto two = sim::WriteScenario(*config, w);
  ASSERT_FALSE(two.ok());
  EXPECT_NE(two.status().message().find("every host into one file"), std::string::npos);
  w.out_paths = {dir / "job.json"};
  auto one = sim::WriteScenario(*config, w);
  ASSERT_TRUE(one.ok()) << one.status().message();
  // Both hosts' series are in the one response, with the labels a Prometheus scrape adds.
  const auto j = nlohmann::json::parse(testing::ReadFile(dir / "job.json"));
  std::set<std::string> instances;
  for (const auto& r : j["data"]["result"]) instances.insert(r["metric"]["instance"]);
  EXPECT_EQ(instances, (std::set<std::string>{"node0:9400", "node1:9400"}));
  EXPECT_EQ(j["data"]["result"][0]["metric"]["job"], "dcgm-exporter");
}

// promtool accepts the OpenMetrics file and backfills every sample of it into a TSDB.
TEST(SimFormats, OpenMetricsIsBackfilledByPromtool) {
  if (!std::filesystem::exists("/usr/bin/promtool")) {
    GTEST_SKIP() << "promtool not installed (Debian package prometheus)";
  }
  testing::TempDir dir;
  auto w = Simulate("multi-host", 15000, Writer("openmetrics"), dir.path());
  ASSERT_TRUE(w.ok()) << w.status().message();
  ASSERT_EQ(w->paths.size(), 1u);
  const std::string tsdb = dir / "tsdb";
  auto made = testing::RunCapture("promtool tsdb create-blocks-from openmetrics " + w->paths[0] +
                                  " " + tsdb);
  ASSERT_EQ(made.exit_code, 0) << made.output;
  // promtool 2.42's dump opens the TSDB read-only and wants a WAL directory, empty after a
  // backfill.
  std::filesystem::create_directories(tsdb + "/wal");
  auto dump = testing::RunCapture("promtool tsdb dump " + tsdb, false);
  ASSERT_EQ(dump.exit_code, 0) << dump.output;
  auto count = [](const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  };
  const std::string file = testing::ReadFile(w->paths[0]);
  const size_t written = count(file, "\nDCGM_FI_DEV_POWER_USAGE{");
  EXPECT_GT(written, 16u * 20u);  // 2 hosts x 8 GPUs, minutes at 15 s
  EXPECT_EQ(count(dump.output, "__name__=\"DCGM_FI_DEV_POWER_USAGE\""), written);
  EXPECT_NE(dump.output.find("instance=\"node1:9400\""), std::string::npos);
}

}  // namespace
}  // namespace ww::sim_formats
