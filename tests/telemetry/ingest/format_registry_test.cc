// The format registry (src/telemetry/ingest/formats.cc): every list of formats is made from its
// rows, so these tests check the rows themselves and the lists written by hand, the docs'; and
// that what each writer row (`simulate --format`) writes is read back by the format it is
// attached to.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <deque>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "support/support.h"
#include "telemetry/ingest/format.h"
#include "telemetry/ingest/open.h"
#include "telemetry/ingest/prom_text.h"
#include "telemetry/sim/output_format.h"
#include "telemetry/sim/simulator.h"

namespace ww::format_registry {
namespace {

using ::testing::HasSubstr;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST(FormatRegistry, DocsListEveryFormatInRegistryOrder) {
  std::string list = "auto";
  for (const ingest::Format* f : ingest::Formats()) list += std::string("|") + f->name;
  const std::string docs = ReadAll(testing::SourceDir() + "/docs/triage.md");
  ASSERT_FALSE(docs.empty());
  EXPECT_THAT(docs, HasSubstr("`--format " + list + "`"))
      << "docs/triage.md's --format list drifted from src/telemetry/ingest/formats.cc";
}

TEST(FormatRegistry, NamesParseBackAndAreUnique) {
  std::set<std::string> names;
  for (const ingest::Format* f : ingest::Formats()) {
    EXPECT_TRUE(names.insert(f->name).second) << f->name;
    auto parsed = ParseInputFormat(f->name);
    ASSERT_TRUE(parsed.ok()) << f->name;
    EXPECT_EQ(*parsed, f);
    EXPECT_STREQ(InputFormatName(f), f->name);
    EXPECT_THAT(InputFormatNames(), HasSubstr(f->name));
    EXPECT_THAT(InputFormatHelp(), HasSubstr(f->what));
    EXPECT_NE(f->open, nullptr) << f->name;
  }
  auto automatic = ParseInputFormat("auto");
  ASSERT_TRUE(automatic.ok());
  EXPECT_EQ(*automatic, nullptr);
  EXPECT_STREQ(InputFormatName(nullptr), "auto");
  auto unknown = ParseInputFormat("csvish");
  ASSERT_FALSE(unknown.ok());
  EXPECT_THAT(unknown.status().message(), HasSubstr(InputFormatNames()));
}

// Detection asks the rules of all formats in one priority order: two equal priorities would
// leave the order to the registry's row order.
TEST(FormatRegistry, DetectionPrioritiesAreUniqueAndOnePathReader) {
  std::set<int> priorities;
  int path_readers = 0;
  for (const ingest::Format* f : ingest::Formats()) {
    path_readers += f->opens_path;
    EXPECT_FALSE(f->detect.empty()) << f->name << " is never recognized";
    for (const ingest::DetectRule& r : f->detect) {
      EXPECT_TRUE(priorities.insert(r.priority).second)
          << f->name << ": priority " << r.priority << " taken twice";
    }
  }
  EXPECT_EQ(path_readers, 1);  // binary and unreadable files go to exactly one reader
}

TEST(FormatRegistry, WriterNamesParseBackOrdersAreUniqueDefaultFirst) {
  std::set<std::string> names;
  std::set<int> orders;
  int previous = -1;
  for (const sim::OutputFormat& f : sim::OutputFormats()) {
    EXPECT_TRUE(names.insert(f.name).second) << f.name;
    EXPECT_TRUE(orders.insert(f.writer->order).second) << f.name << ": order taken twice";
    EXPECT_GT(f.writer->order, previous) << f.name;
    previous = f.writer->order;
    auto parsed = sim::ParseOutputFormat(f.name);
    ASSERT_TRUE(parsed.ok()) << f.name;
    EXPECT_EQ(*parsed, &f);
    EXPECT_THAT(sim::OutputFormatNames(), HasSubstr(f.name));
    if (f.writer->help != nullptr) {
      EXPECT_THAT(sim::OutputFormatHelp(), HasSubstr(f.name));
    }
    EXPECT_NE(f.writer->make, nullptr) << f.name;
    EXPECT_EQ(f.writer->extension[0], '.') << f.name;
    bool attached = false;  // the row is one of its reader's
    for (const write::WriterRow& w : f.reader->writers) attached |= &w == f.writer;
    EXPECT_TRUE(attached) << f.name;
  }
  EXPECT_EQ(&sim::DefaultOutputFormat(), &sim::OutputFormats().front());
  EXPECT_THAT(sim::OutputFormatHelp(), HasSubstr("(default)"));
  auto unknown = sim::ParseOutputFormat("prometheus");
  ASSERT_FALSE(unknown.ok());
  EXPECT_THAT(unknown.status().message(), HasSubstr(sim::OutputFormatNames()));
}

TEST(FormatRegistry, DocsTableListsEveryWriter) {
  const std::string docs = ReadAll(testing::SourceDir() + "/docs/triage.md");
  ASSERT_FALSE(docs.empty());
  for (const sim::OutputFormat& f : sim::OutputFormats()) {
    EXPECT_THAT(docs, HasSubstr(fmt::format("| `{}` | `DIR/", f.name)))
        << "docs/triage.md's simulate --format table lacks " << f.name;
  }
}

// What a Prometheus server serves of an OpenMetrics file once promtool has backfilled it: the
// query_range JSON of its series (labels as written, values in time order).
std::string AsQueryRange(const std::string& open_metrics) {
  std::map<std::string, nlohmann::json> series;  // by the sample's name and labels
  ingest::PromSample sample;
  std::vector<ingest::PromLabel> labels;
  std::deque<std::string> scratch;
  std::string error;
  for (const std::string& line : testing::Lines(open_metrics)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t cut = line.rfind(' ');
    const std::string body = line.substr(0, cut);
    if (!ingest::ParsePromLine(body, &sample, &error) ||
        !ingest::ParsePromLabels(sample.label_block, &labels, &scratch, &error)) {
      ADD_FAILURE() << line << ": " << error;
      return "";
    }
    nlohmann::json& s = series[body.substr(0, body.rfind(' '))];
    if (s.is_null()) {
      s["metric"]["__name__"] = std::string(sample.name);
      for (const auto& l : labels) s["metric"][std::string(l.name)] = std::string(l.value);
    }
    s["values"].push_back({std::stod(line.substr(cut + 1)), body.substr(body.rfind(' ') + 1)});
  }
  nlohmann::json result = nlohmann::json::array();
  for (auto& [key, s] : series) result.push_back(std::move(s));
  return R"({"status":"success","data":{"resultType":"matrix","result":)" + result.dump() + "}}\n";
}

// What one reading of files gave: samples per GPU and the sum of power, and the formats named.
struct ReadBack {
  std::map<std::pair<uint16_t, uint16_t>, int> samples;
  double power_w = 0;
  std::vector<std::string> formats;
};

Result<ReadBack> Read(const std::vector<std::string>& paths, const ingest::Format* format,
                      const std::string& wide_metric) {
  IngestOptions io;
  io.format = format;
  io.replay.interval_ms = 1000;  // for formats without times; the files' own times otherwise
  io.wide_metric = wide_metric;
  auto in = OpenTelemetryFiles(paths, io);
  if (!in.ok()) return in.status();
  ReadBack r;
  for (const auto& d : in->inputs) r.formats.push_back(d.format);
  std::vector<GpuSample> batch;
  for (;;) {
    batch.clear();
    if (Status st = in->source->Next(&batch); !st.ok()) return st;
    if (batch.empty()) break;
    for (const GpuSample& s : batch) {
      ++r.samples[{s.key.host, s.key.gpu}];
      r.power_w += s.power_w.value_or(0);
    }
  }
  return r;
}

// Every writer's files, forced through the format its row is attached to and recognized from the
// content, give the samples (every GPU of every host, every tick) and the power of the
// nvidia-smi CSV of the same simulation. OpenMetrics goes in as Prometheus serves it back.
TEST(FormatRegistry, EveryWriterIsReadBackByItsFormat) {
  sim::ScenarioOptions o;
  o.interval_ms = 1000;
  o.hosts = 2;
  o.gpus_per_host = 2;
  auto config = sim::MakeScenario("healthy", o);
  ASSERT_TRUE(config.ok()) << config.status().message();
  std::optional<ReadBack> reference;
  for (const sim::OutputFormat& f : sim::OutputFormats()) {
    SCOPED_TRACE(f.name);
    testing::TempDir dir;
    sim::WriteOptions w;
    w.format = &f;
    w.out_dir = dir.path();
    auto paths = sim::WriteScenario(*config, w);
    ASSERT_TRUE(paths.ok()) << paths.status().message();
    ASSERT_EQ(paths->size(), f.writer->job_wide ? 1u : 2u);
    for (const std::string& p : *paths) EXPECT_TRUE(p.ends_with(f.writer->extension)) << p;
    if (std::string_view(f.name) == "openmetrics") {
      const std::string served = dir / "served.json";
      std::ofstream(served) << AsQueryRange(testing::ReadFile((*paths)[0]));
      *paths = {served};
    }
    // A frame of one column per GPU says what its columns hold.
    const std::string wide_metric = std::string_view(f.reader->name) == "wide" ? "power" : "";
    for (const ingest::Format* format : {f.reader, static_cast<const ingest::Format*>(nullptr)}) {
      auto got = Read(*paths, format, wide_metric);
      ASSERT_TRUE(got.ok()) << got.status().message();
      for (const std::string& name : got->formats) EXPECT_EQ(name, f.reader->name);
      if (!reference) reference = *got;  // the default writer: nvidia-smi CSV
      EXPECT_EQ(got->samples, reference->samples);
      EXPECT_EQ(got->samples.size(), 4u);
      EXPECT_NEAR(got->power_w, reference->power_w, 0.01 * reference->power_w);
    }
  }
}

}  // namespace
}  // namespace ww::format_registry
