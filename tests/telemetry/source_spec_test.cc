// `--source` specs (src/telemetry/source_spec.h), every form: nvml (through the fake
// libnvidia-ml.so.1 on the production dlopen path, and without a library), replay:A and
// replay:A,B (one host per file, merged in time order), sim:NAME, and the bad specs, each with
// an error that says what is wrong.
#include "telemetry/source_spec.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "telemetry/fake_nvml_script.h"
#include "telemetry/nvml/nvml_source.h"
#include "telemetry/test_files.h"

namespace ww::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// `ticks` ticks of `gpus` GPUs, 100 ms apart, starting `offset_ms` after kBaseMs.
std::string Log(int ticks, int gpus, int64_t offset_ms = 0) {
  std::string s = "timestamp, index, power.draw [W], utilization.gpu [%], memory.used [MiB]\n";
  for (int t = 0; t < ticks; ++t) {
    for (int g = 0; g < gpus; ++g) {
      s +=
          fmt::format("{}, {}, {:.2f} W, 90 %, 70000 MiB\n", Ts(offset_ms + t * 100), g, 300.0 + g);
    }
  }
  return s;
}

// Every sample of a source, drained.
Result<std::vector<GpuSample>> Drain(TelemetrySource& source) {
  std::vector<GpuSample> all;
  for (;;) {
    std::vector<GpuSample> batch;
    if (Status st = source.Next(&batch); !st.ok()) return st;
    if (batch.empty()) return all;
    all.insert(all.end(), batch.begin(), batch.end());
  }
}

TEST(SourceSpecTest, ReplayOfOneFileIsOneHostNamedAfterIt) {
  TempDir dir;
  const std::string a = dir.Write("node7.csv", Log(3, 2));
  auto opened = OpenSourceSpec("replay:" + a, {});
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  EXPECT_FALSE(opened->live) << "a replay is paced by --speed, not sampled on a schedule";
  EXPECT_EQ(opened->nvml, nullptr);
  auto samples = Drain(*opened->source);
  ASSERT_TRUE(samples.ok()) << samples.status().message();
  EXPECT_EQ(samples->size(), 6u);
  EXPECT_THAT(opened->source->hosts(), ElementsAre("node7"));
}

TEST(SourceSpecTest, ReplayOfTwoFilesIsTwoHostsMergedInTimeOrder) {
  TempDir dir;
  const std::string a = dir.Write("node0.csv", Log(3, 2));
  const std::string b = dir.Write("node1.csv", Log(3, 1, 50));
  auto opened = OpenSourceSpec("replay:" + a + "," + b, {});
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  EXPECT_THAT(opened->source->hosts(), ElementsAre("node0", "node1"));
  auto samples = Drain(*opened->source);
  ASSERT_TRUE(samples.ok()) << samples.status().message();
  ASSERT_EQ(samples->size(), 9u);
  std::set<int> hosts;
  for (size_t i = 0; i < samples->size(); ++i) {
    hosts.insert((*samples)[i].key.host);
    if (i > 0) {
      EXPECT_GE((*samples)[i].timestamp_ms, (*samples)[i - 1].timestamp_ms) << i;
    }
  }
  EXPECT_EQ(hosts, (std::set<int>{0, 1}));
}

TEST(SourceSpecTest, ReplaySkipsEmptyListEntries) {
  TempDir dir;
  const std::string a = dir.Write("a.csv", Log(2, 1));
  const std::string b = dir.Write("b.csv", Log(2, 1));
  auto opened = OpenSourceSpec("replay:," + a + ",," + b + ",", {});
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  EXPECT_THAT(opened->source->hosts(), ElementsAre("a", "b"));
}

TEST(SourceSpecTest, ReplayWithoutFilesSaysItNeedsOne) {
  for (const char* spec : {"replay:", "replay:,", "replay:,,,"}) {
    auto opened = OpenSourceSpec(spec, {});
    ASSERT_FALSE(opened.ok()) << spec;
    EXPECT_EQ(opened.status().code(), StatusCode::kInvalidInput) << spec;
    EXPECT_THAT(opened.status().message(), HasSubstr("needs at least one file")) << spec;
  }
}

TEST(SourceSpecTest, ReplayOfAMissingFileNamesIt) {
  TempDir dir;
  const std::string good = dir.Write("node0.csv", Log(2, 1));
  const std::string missing = dir.path() + "/no-such-node.csv";
  auto opened = OpenSourceSpec("replay:" + good + "," + missing, {});
  ASSERT_FALSE(opened.ok());
  EXPECT_THAT(opened.status().message(), HasSubstr("no-such-node.csv"));
}

TEST(SourceSpecTest, ReplayOfAFileThatIsNoLogNamesIt) {
  TempDir dir;
  const std::string junk = dir.Write("notes.txt", "this is not an nvidia-smi log\nat all\n");
  auto opened = OpenSourceSpec("replay:" + junk, {});
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.status().code(), StatusCode::kInvalidInput);
  EXPECT_THAT(opened.status().message(), HasSubstr("notes.txt"));
}

TEST(SourceSpecTest, SimOfAKnownScenarioIsAReplayLikeSource) {
  auto opened = OpenSourceSpec("sim:healthy", {});
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  EXPECT_FALSE(opened->live);
  EXPECT_EQ(opened->nvml, nullptr);
  std::vector<GpuSample> batch;
  ASSERT_TRUE(opened->source->Next(&batch).ok());
  EXPECT_FALSE(batch.empty());
  EXPECT_FALSE(opened->source->hosts().empty());
}

TEST(SourceSpecTest, SimOfAnUnknownScenarioNamesIt) {
  for (const char* spec : {"sim:no-such-scenario", "sim:"}) {
    auto opened = OpenSourceSpec(spec, {});
    ASSERT_FALSE(opened.ok()) << spec;
    EXPECT_EQ(opened.status().code(), StatusCode::kInvalidInput) << spec;
    EXPECT_THAT(opened.status().message(), HasSubstr("--source")) << spec;
  }
  auto opened = OpenSourceSpec("sim:no-such-scenario", {});
  EXPECT_THAT(opened.status().message(), HasSubstr("no-such-scenario"));
}

TEST(SourceSpecTest, UnknownFormsListTheKnownOnes) {
  for (const char* spec :
       {"", "nvml2", "NVML", "Replay:a.csv", "replay", "sim", "dcgm:0", " nvml", "file.csv"}) {
    auto opened = OpenSourceSpec(spec, {});
    ASSERT_FALSE(opened.ok()) << "'" << spec << "'";
    EXPECT_EQ(opened.status().code(), StatusCode::kInvalidInput) << spec;
    EXPECT_THAT(opened.status().message(), HasSubstr(fmt::format("unknown source '{}'", spec)));
    EXPECT_THAT(opened.status().message(),
                HasSubstr("expected auto, nvml, amdsmi, rocm-smi, dcgm-exporter:URL, "
                          "replay:FILE[,FILE...] or sim:SCENARIO"));
  }
}

TEST(SourceSpecTest, DcgmExporterIsLiveAndNamesAnExporterThatDoesNotAnswer) {
  auto bad = OpenSourceSpec("dcgm-exporter:localhost:9400", {});
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidInput);
  auto gone = OpenSourceSpec("dcgm-exporter:http://127.0.0.1:1/metrics", {});
  EXPECT_EQ(gone.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(gone.status().message(), HasSubstr("dcgm-exporter at http://127.0.0.1:1/metrics"));
}

TEST(SourceSpecTest, NvmlWithoutALibraryIsUnavailableAndSaysHowToPointAtOne) {
  SourceSpecOptions o;
  o.nvml_lib = "/nonexistent/libnvidia-ml.so.1";
  auto opened = OpenSourceSpec("nvml", o);
  ASSERT_FALSE(opened.ok());
  EXPECT_EQ(opened.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(opened.status().message(), HasSubstr("/nonexistent/libnvidia-ml.so.1"));
}

TEST(SourceSpecTest, NvmlIsLiveAndExposesTheNvmlSource) {
  ScriptFakeNvml("gpus 2\n");
  SourceSpecOptions o;
  o.nvml_lib = FAKE_NVML_LIB;
  o.hostname = "gpu-node-3";
  o.call_deadline_ms = 2000;
  auto opened = OpenSourceSpec("nvml", o);
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  EXPECT_TRUE(opened->live);
  ASSERT_NE(opened->nvml, nullptr);
  EXPECT_EQ(static_cast<TelemetrySource*>(opened->nvml), opened->source.get());
  EXPECT_EQ(opened->nvml->gpu_count(), 2u);
  EXPECT_THAT(opened->source->hosts(), ElementsAre("gpu-node-3"));
  std::vector<GpuSample> batch;
  ASSERT_TRUE(opened->source->Next(&batch).ok());
  EXPECT_EQ(batch.size(), 2u);
}

TEST(SourceSpecTest, HelpListsEveryForm) {
  const std::string help = SourceSpecHelp();
  for (const char* form : {"auto", "nvml", "amdsmi", "rocm-smi"})
    EXPECT_THAT(help, HasSubstr(form));
  EXPECT_THAT(help, HasSubstr("replay:FILE[,FILE...]"));
  EXPECT_THAT(help, HasSubstr("sim:SCENARIO"));
}

}  // namespace
}  // namespace ww::testing
