// The exposition: number and label formatting, histograms, the metric contract
// of docs/watch.md, and `promtool check metrics` (the Debian package's real
// promtool) on it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <clocale>
#include <cmath>

#include "export/prom_text.h"
#include "export/watch_metrics.h"
#include "support/support.h"

namespace ww::exporter {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(PromText, NumbersAreLocaleIndependent) {
  const char* old = std::setlocale(LC_NUMERIC, nullptr);
  std::string saved = old ? old : "C";
  // A decimal comma locale, when installed, must not change the output.
  std::setlocale(LC_NUMERIC, "de_DE.UTF-8");
  EXPECT_EQ(exposition::FormatValue(0.25), "0.25");
  EXPECT_EQ(exposition::FormatValue(1e-7), "1e-07");
  EXPECT_EQ(exposition::FormatValue(3), "3");
  std::setlocale(LC_NUMERIC, saved.c_str());
  EXPECT_EQ(exposition::FormatValue(NAN), "NaN");
  EXPECT_EQ(exposition::FormatValue(INFINITY), "+Inf");
  EXPECT_EQ(exposition::FormatValue(-INFINITY), "-Inf");
}

TEST(PromText, LabelValuesAreEscapedAndEmptyOnesDropped) {
  exposition::TextWriter w;
  w.Family("m", "gauge", "help with \\ and\nnewline");
  w.Sample("m", {{"host", "a\"b\\c\nd"}, {"job_id", ""}}, 1);
  EXPECT_EQ(
      w.text(),
      "# HELP m help with \\\\ and\\nnewline\n# TYPE m gauge\nm{host=\"a\\\"b\\\\c\\nd\"} 1\n");
}

TEST(PromText, HistogramIsCumulative) {
  exposition::Histogram h({0.1, 1});
  h.Observe(0.05);
  h.Observe(0.5);
  h.Observe(0.5);
  h.Observe(7);
  exposition::TextWriter w;
  h.Write(w, "lat", {{"host", "x"}});
  EXPECT_THAT(w.text(), HasSubstr("lat_bucket{host=\"x\",le=\"0.1\"} 1\n"));
  EXPECT_THAT(w.text(), HasSubstr("lat_bucket{host=\"x\",le=\"1\"} 3\n"));
  EXPECT_THAT(w.text(), HasSubstr("lat_bucket{host=\"x\",le=\"+Inf\"} 4\n"));
  EXPECT_THAT(w.text(), HasSubstr("lat_sum{host=\"x\"} 8.05\n"));
  EXPECT_THAT(w.text(), HasSubstr("lat_count{host=\"x\"} 4\n"));
  EXPECT_DOUBLE_EQ(h.QuantileUpperBound(0.5), 1);
  EXPECT_TRUE(std::isinf(h.QuantileUpperBound(0.99)));
}

WatchMetrics Populated() {
  WatchMetrics m({"node7", "job-42", "0.1.0"});
  m.SetHostNames({"node7"});
  GpuSample s;
  s.key = {0, 3};
  s.timestamp_ms = 1000;
  s.power_w = 612.5;
  s.util_gpu_pct = 100;
  m.OnSample(s);
  GpuSample absent;  // a GPU without power or utilization readings
  absent.key = {0, 4};
  m.OnSample(absent);
  m.OnLiveState({0, 3}, GpuState::kCompute);
  m.OnLabel({0, 3}, 1000, GpuState::kCompute);
  m.OnLabel({0, 3}, 1100, GpuState::kCompute);
  m.OnLabel({0, 3}, 1200, GpuState::kCommunication);
  m.OnLabel({0, 3}, 60000,
            GpuState::kIdle);  // after a gap of > 10 s: not counted
  m.SetHang(true, 75, 300);
  m.ObserveSampleDuration(0.00004);
  m.ObserveTickLateness(0.0002);
  m.AddDropped(2);
  m.SetLastSampleUnixS(1700000000.5);
  return m;
}

TEST(WatchMetrics, ExportsTheContract) {
  const std::string t = Populated().Render();
  EXPECT_THAT(
      t,
      HasSubstr(
          "wattwatch_gpu_state{host=\"node7\",job_id=\"job-42\",gpu=\"3\",state=\"compute\"} 1\n"));
  EXPECT_THAT(
      t, HasSubstr(
             "wattwatch_gpu_state{host=\"node7\",job_id=\"job-42\",gpu=\"3\",state=\"hang\"} 0\n"));
  EXPECT_THAT(
      t,
      HasSubstr("wattwatch_gpu_power_watts{host=\"node7\",job_id=\"job-42\",gpu=\"3\"} 612.5\n"));
  EXPECT_THAT(
      t,
      HasSubstr("wattwatch_gpu_utilization_ratio{host=\"node7\",job_id=\"job-42\",gpu=\"3\"} 1\n"));
  // Absent readings are absent series, never 0.
  EXPECT_THAT(
      t, Not(HasSubstr("wattwatch_gpu_power_watts{host=\"node7\",job_id=\"job-42\",gpu=\"4\"}")));
  EXPECT_THAT(t, HasSubstr("wattwatch_gpu_state_seconds_total{host=\"node7\",job_id=\"job-42\",gpu="
                           "\"3\",state=\"compute\"} 0.1\n"));
  // A label covers the time since the GPU's previous one.
  EXPECT_THAT(t, HasSubstr("wattwatch_gpu_state_seconds_total{host=\"node7\",job_id=\"job-42\",gpu="
                           "\"3\",state=\"communication\"} 0.1\n"));
  EXPECT_THAT(t, HasSubstr("wattwatch_gpu_state_seconds_total{host=\"node7\",job_id=\"job-42\",gpu="
                           "\"3\",state=\"idle\"} 0\n"));
  EXPECT_THAT(t, HasSubstr("wattwatch_hang_active{host=\"node7\",job_id=\"job-42\"} 1\n"));
  EXPECT_THAT(t, HasSubstr("wattwatch_hang_seconds{host=\"node7\",job_id=\"job-42\"} 75\n"));
  EXPECT_THAT(
      t, HasSubstr("wattwatch_wasted_gpu_seconds_total{host=\"node7\",job_id=\"job-42\"} 300\n"));
  EXPECT_THAT(t,
              HasSubstr("wattwatch_samples_dropped_total{host=\"node7\",job_id=\"job-42\"} 2\n"));
  EXPECT_THAT(t, HasSubstr("wattwatch_last_sample_timestamp_seconds{host=\"node7\",job_id=\"job-"
                           "42\"} 1700000000.5\n"));
  EXPECT_THAT(
      t,
      HasSubstr("wattwatch_sample_duration_seconds_count{host=\"node7\",job_id=\"job-42\"} 1\n"));
  EXPECT_THAT(
      t, HasSubstr("wattwatch_build_info{host=\"node7\",job_id=\"job-42\",version=\"0.1.0\"} 1\n"));
}

TEST(WatchMetrics, WastedCounterNeverGoesDown) {
  WatchMetrics m({"h", "", "v"});
  m.SetHang(true, 10, 500);
  m.SetHang(false, 0, 100);
  EXPECT_THAT(m.Render(), HasSubstr("wattwatch_wasted_gpu_seconds_total{host=\"h\"} 500\n"));
}

TEST(WatchMetrics, PromtoolAcceptsTheExposition) {
  ww::testing::TempDir dir;
  const std::string path = dir / "metrics.prom";
  ww::testing::WriteFile(path, Populated().Render());
  const auto r = ww::testing::RunCapture("promtool check metrics < " + path);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "") << "promtool lint findings";
}

TEST(MetricsSnapshot, ServesTheLastPublished) {
  MetricsSnapshot s;
  EXPECT_FALSE(s.healthy());
  s.Publish("a 1\n", "{\"x\":1}", true);
  auto m = s.metrics();
  s.Publish("a 2\n", "{}", false);
  EXPECT_EQ(*m,
            "a 1\n");  // a reader keeps its copy while a new one is published
  EXPECT_EQ(*s.metrics(), "a 2\n");
  EXPECT_FALSE(s.healthy());
}

}  // namespace
}  // namespace ww::exporter
