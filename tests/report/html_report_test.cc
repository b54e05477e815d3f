// The HTML report's data reduction and page: buckets stay bounded and keep the true min/max and
// state counts however long the run; the page embeds a parseable timeline, carries the episodes
// with their reasons, loads nothing from the network, and stays small for a long 16-GPU log.
#include "report/html_report.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <regex>

#include "report/labels_writer.h"
#include "telemetry/sim/simulator.h"
#include "triage/run.h"

namespace ww::report {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

nlohmann::json EmbeddedData(const std::string& page) {
  const std::string open = "<script type=\"application/json\" id=\"ww-data\">";
  const size_t a = page.find(open);
  EXPECT_NE(a, std::string::npos);
  const size_t b = page.find("</script>", a);
  return nlohmann::json::parse(page.substr(a + open.size(), b - a - open.size()));
}

GpuSample Sample(int64_t t_ms, uint16_t gpu, double power_w, double util) {
  GpuSample s;
  s.timestamp_ms = t_ms;
  s.key = {0, gpu};
  s.power_w = power_w;
  s.util_gpu_pct = util;
  s.power_limit_w = 700;
  return s;
}

TEST(TimelineCollectorTest, LongRunStaysBoundedAndKeepsExtremesAndCounts) {
  TimelineCollector tl;
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> power(100, 600);
  const int64_t t0 = 1'700'000'000'000;
  const int kSamples = 200'000;  // 5.5 h at 100 ms: forces several coarsenings
  double true_min = 1e9, true_max = -1;
  int64_t hang_labels = 0;
  for (int i = 0; i < kSamples; ++i) {
    const int64_t t = t0 + int64_t{i} * 100;
    double p = power(rng);
    if (i == 123'456) p = 31;  // one dip and one spike must survive every merge
    if (i == 654) p = 699;
    true_min = std::min(true_min, p);
    true_max = std::max(true_max, p);
    tl.AddSample(Sample(t, 0, p, i % 100));
    const GpuState st = i >= 150'000 && i < 150'010 ? GpuState::kHang : GpuState::kCompute;
    hang_labels += st == GpuState::kHang;
    tl.OnLabel({t, {0, 0}, st});
  }
  const auto& lane = tl.lanes().at(GpuKey{0, 0});
  EXPECT_LE(lane.buckets.size(), TimelineCollector::kMaxBuckets);
  EXPECT_GE(lane.buckets.size(), TimelineCollector::kMaxBuckets / 2);
  EXPECT_GE(tl.bucket_ms() * static_cast<int64_t>(lane.buckets.size()), int64_t{kSamples} * 100);
  double mn = 1e9, mx = -1;
  uint64_t labels = 0, hangs = 0;
  int hang_dominant = 0;
  for (const auto& b : lane.buckets) {
    ASSERT_TRUE(b.has_power());
    mn = std::min<double>(mn, b.power_min_w);
    mx = std::max<double>(mx, b.power_max_w);
    for (auto n : b.state_samples) labels += n;
    hangs += b.state_samples[static_cast<size_t>(GpuState::kHang)];
    hang_dominant += b.dominant_state() == static_cast<int>(GpuState::kHang);
  }
  EXPECT_FLOAT_EQ(mn, static_cast<float>(true_min));
  EXPECT_FLOAT_EQ(mx, static_cast<float>(true_max));
  EXPECT_EQ(labels, static_cast<uint64_t>(kSamples));
  EXPECT_EQ(hangs, static_cast<uint64_t>(hang_labels));
  // 1 s of hang inside one 3.2 s bucket: a minority there, so that bucket stays compute.
  EXPECT_EQ(tl.bucket_ms(), 3200);
  EXPECT_EQ(hang_dominant, 0);
}

TEST(TimelineCollectorTest, BucketPlacementFollowsTime) {
  TimelineCollector tl;
  tl.AddSample(Sample(1000, 0, 100, 0));
  tl.AddSample(Sample(1050, 0, 300, 100));  // same 100 ms bucket
  tl.AddSample(Sample(1450, 1, 200, 50));   // another GPU, bucket 4
  const auto& a = tl.lanes().at(GpuKey{0, 0}).buckets;
  ASSERT_EQ(a.size(), 1u);
  EXPECT_EQ(a[0].power_min_w, 100);
  EXPECT_EQ(a[0].power_max_w, 300);
  EXPECT_EQ(a[0].util_min_pct, 0);
  EXPECT_EQ(a[0].util_max_pct, 100);
  const auto& b = tl.lanes().at(GpuKey{0, 1}).buckets;
  ASSERT_EQ(b.size(), 5u);
  EXPECT_FALSE(b[0].has_power());  // gap: no reading, never a zero
  EXPECT_TRUE(b[4].has_power());
}

TEST(TimelineCollectorTest, HangWinsATieSoShortHangsStayVisible) {
  TimelineBucket b;
  b.state_samples[static_cast<size_t>(GpuState::kCompute)] = 3;
  b.state_samples[static_cast<size_t>(GpuState::kHang)] = 3;
  EXPECT_EQ(b.dominant_state(), static_cast<int>(GpuState::kHang));
  b.state_samples[static_cast<size_t>(GpuState::kCompute)] = 4;
  EXPECT_EQ(b.dominant_state(), static_cast<int>(GpuState::kCompute));
  EXPECT_EQ(TimelineBucket{}.dominant_state(), -1);
}

// Runs a simulated scenario through the engine as `triage --html` does.
struct Triaged {
  TriageReport report;
  std::unique_ptr<TimelineCollector> timeline;
  std::vector<sim::TruthHang> truth;
};

Triaged RunScenario(const std::string& name) {
  auto cfg = sim::MakeScenario(name, {});
  EXPECT_TRUE(cfg.ok());
  sim::Simulator probe(*cfg);
  Triaged t;
  auto source = sim::MakeSimSource(*cfg);
  t.timeline = std::make_unique<TimelineCollector>();
  RecordingSource rec(source.get(), t.timeline.get());
  ObserverFanout fan;
  fan.Add(t.timeline.get());
  triage::TriageEngine engine({}, &fan);
  EXPECT_TRUE(triage::RunToEnd(rec, engine).ok());
  t.report = MakeReport(engine, source->hosts(), {});
  // Truth hangs come out as the simulator runs; run a twin to its end.
  std::vector<GpuSample> s;
  std::vector<sim::TruthLabel> l;
  while (probe.NextTick(&s, &l)) {
    s.clear();
    l.clear();
  }
  t.truth = probe.truth_hangs();
  return t;
}

TEST(HtmlReportTest, PageCarriesLanesEpisodesAndSummary) {
  Triaged t = RunScenario("hang-exit");
  ASSERT_FALSE(t.report.hang_episodes.empty());
  const std::string page = RenderHtml(t.report, *t.timeline);
  const nlohmann::json d = EmbeddedData(page);
  ASSERT_EQ(d["lanes"].size(), t.report.gpus.size());
  const auto& lane0 = d["lanes"][0];
  const size_t n = d["n"].get<size_t>();
  EXPECT_EQ(lane0["s"].get<std::string>().size(), n);
  EXPECT_EQ(lane0["pmax"].size(), n);
  EXPECT_GT(lane0["limit_w"].get<double>(), 0);
  // Levels are ordered as the classifier sees them: idle < spin ceiling < compute.
  const auto& lv = lane0["levels"];
  EXPECT_LT(lv["idle_w"].get<double>(), lv["spin_max_w"].get<double>());
  EXPECT_LT(lv["spin_max_w"].get<double>(), lv["compute_w"].get<double>());
  // The hang is drawn where the engine found it, with the culprit the simulator planted.
  ASSERT_EQ(d["hangs"].size(), t.report.hang_episodes.size());
  const auto& h = d["hangs"][0];
  EXPECT_EQ(h["start"].get<int64_t>(), t.report.hang_episodes[0].start_ms);
  ASSERT_FALSE(h["reasons"].empty());
  ASSERT_EQ(t.truth.size(), 1u);
  ASSERT_EQ(h["culprits"].size(), t.truth[0].culprits.size());
  const int culprit_lane = h["culprits"][0].get<int>();
  EXPECT_EQ(d["lanes"][culprit_lane]["label"].get<std::string>(),
            "node0/GPU" + std::to_string(t.truth[0].culprits[0].gpu));
  // Lanes are red (state 5) during the hang on the GPUs that wait.
  const int64_t t0 = d["t0"], bucket = d["bucket_ms"];
  const int64_t mid = (t.report.hang_episodes[0].start_ms + t.report.hang_episodes[0].end_ms) / 2;
  const size_t mid_bucket = static_cast<size_t>((mid - t0) / bucket);
  int red = 0;
  for (const auto& lane : d["lanes"]) red += lane["s"].get<std::string>()[mid_bucket] == '5';
  EXPECT_GE(red, static_cast<int>(d["lanes"].size()) - 1);
  // Summary table and episode list are static HTML, readable without the script.
  EXPECT_THAT(page, HasSubstr("<table class=\"summary\">"));
  EXPECT_THAT(page, HasSubstr("GPU-hours wasted"));
  EXPECT_THAT(page, HasSubstr(t.report.hang_episodes[0].reasons[0].substr(0, 20)));
}

TEST(HtmlReportTest, SelfContainedAndScriptSafe) {
  Triaged t = RunScenario("healthy");
  t.report.hosts = {"</script><script>alert(1)</script>"};
  const std::string page = RenderHtml(t.report, *t.timeline);
  // No network: nothing is fetched from anywhere when the page is viewed.
  EXPECT_THAT(page, Not(HasSubstr("http://")));
  EXPECT_THAT(page, Not(HasSubstr("https://")));
  EXPECT_THAT(page, Not(HasSubstr("<link")));
  EXPECT_THAT(page, Not(HasSubstr("src=")));
  // A hostile host name neither closes the data block nor injects markup.
  EXPECT_THAT(page, Not(HasSubstr("<script>alert")));
  const nlohmann::json d = EmbeddedData(page);
  EXPECT_EQ(d["lanes"][0]["label"].get<std::string>().rfind("</script>", 0), 0u);
  EXPECT_TRUE(d["hangs"].empty());
}

TEST(HtmlReportTest, HoursOf16GpusAt100MsStayUnder5MB) {
  // 16 GPUs x 3 h at 100 ms = 1.7 M samples: about 1 GB as nvidia-smi CSV with all columns.
  TimelineCollector tl;
  std::mt19937 rng(3);
  std::uniform_real_distribution<double> power(80, 700), util(0, 100);
  const int64_t t0 = 1'700'000'000'000;
  const int64_t ticks = 3 * 3600 * 10;
  for (int64_t i = 0; i < ticks; ++i) {
    for (uint16_t g = 0; g < 16; ++g) {
      GpuSample s = Sample(t0 + i * 100, g, power(rng), util(rng));
      s.key.host = g / 8;
      s.key.gpu = g % 8;
      tl.AddSample(s);
      tl.OnLabel({s.timestamp_ms, s.key, static_cast<GpuState>(rng() % kNumGpuStates)});
    }
  }
  TriageReport r;
  r.hosts = {"node0", "node1"};
  r.first_ms = t0;
  r.last_ms = t0 + ticks * 100;
  const std::string page = RenderHtml(r, tl);
  EXPECT_LT(page.size(), 5u << 20);
  const nlohmann::json d = EmbeddedData(page);
  EXPECT_EQ(d["lanes"].size(), 16u);
  // Still fine enough to zoom: several thousand buckets per lane.
  EXPECT_GE(d["n"].get<int>(), 4000);
}

TEST(HtmlReportTest, PageBudgetMergesBucketsForManyGpus) {
  TimelineCollector tl;
  for (int64_t i = 0; i < 3000; ++i) {
    for (uint16_t g = 0; g < 64; ++g) tl.AddSample(Sample(i * 100, g, 100 + g, 50));
  }
  TriageReport r;
  HtmlOptions o;
  o.max_total_buckets = 64 * 1000;
  const nlohmann::json d = EmbeddedData(RenderHtml(r, tl, o));
  EXPECT_LE(d["n"].get<size_t>() * d["lanes"].size(), o.max_total_buckets);
  EXPECT_EQ(d["lanes"][63]["pmin"][0].get<int>(), 163);
}

TEST(HtmlReportTest, UnwritablePathIsAnIoErrorNamingTheFile) {
  TimelineCollector tl;
  Status st = WriteHtmlReport("/nonexistent-dir/x.html", TriageReport{}, tl);
  EXPECT_EQ(st.code(), StatusCode::kIoError);
  EXPECT_THAT(st.message(), HasSubstr("/nonexistent-dir/x.html"));
}

}  // namespace
}  // namespace ww::report
