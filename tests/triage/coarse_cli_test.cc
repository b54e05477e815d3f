// The real binary on what coarse or short telemetry can and cannot say (issue 14): stragglers
// at dcgm-exporter's 30 s from its activity counters (a throttled one named so from the scrapes'
// clock event reasons), "unknown" with the reason without them, no
// straggler on any real trace; a log shorter than a hang takes to confirm says the hang verdict
// is unknown instead of "No hang." (the one-scrape dcgm-exporter samples in
// ../shared/traces/formats, read in place, and a simulated log cut short).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/exit_codes.h"
#include "support/support.h"

namespace ww::testing::coarse_cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const std::string kFormats = SharedDir() + "/traces/formats/";
const std::string kReal = SharedDir() + "/traces/real/";

class CoarseCli : public TestDirFixture {
 protected:
  nlohmann::json TriageJson(const std::string& args) {
    const CommandResult r = RunWattwatch("triage --json " + args, /*merge_stderr=*/false);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return nlohmann::json::parse(r.output, nullptr, /*allow_exceptions=*/false);
  }
  // Simulates `scenario` into dir_/name; returns the log of node0 and the truth JSON.
  std::pair<std::string, nlohmann::json> Simulate(const std::string& scenario,
                                                  const std::string& name,
                                                  const std::string& flags) {
    const std::string out = (dir_ / name).string();
    const CommandResult r = RunWattwatch("simulate " + scenario + " --out-dir " + out +
                                         " --truth-json " + out + "/truth.json " + flags);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    std::string log;
    for (const auto& e : std::filesystem::directory_iterator(out)) {
      if (e.path().stem() == "node0") log = e.path().string();
    }
    return {log, nlohmann::json::parse(ReadFile(out + "/truth.json"), nullptr, false)};
  }
};

TEST_F(CoarseCli, StragglerAtThirtySecondsFromDcgmExporterActivity) {
  for (const char* scenario : {"straggler", "straggler-throttled"}) {
    SCOPED_TRACE(scenario);
    const auto [log, truth] =
        Simulate(scenario, scenario, "--interval-ms 30000 --format dcgm-exporter --seed 5");
    ASSERT_TRUE(truth.contains("straggler")) << truth.dump();
    const auto j = TriageJson(log);
    ASSERT_TRUE(j.is_object());
    ASSERT_EQ(j["stragglers"].size(), 1u) << j["stragglers"].dump();
    const auto& s = j["stragglers"][0];
    EXPECT_EQ(s["gpu"], truth["straggler"]["gpu"]);
    EXPECT_NEAR(s["slowdown"].get<double>() / truth["straggler"]["slowdown"].get<double>(), 1, 0.2);
    // The power cap shows in the scrapes' DCGM_FI_DEV_CLOCKS_EVENT_REASONS; the straggler that
    // is merely slow is not called throttled.
    if (std::string(scenario) == "straggler-throttled") {
      EXPECT_THAT(s.value("throttle", ""), HasSubstr("power cap")) << s.dump();
    } else {
      EXPECT_FALSE(s.contains("throttle")) << s.dump();
    }
    EXPECT_EQ(s["timed_by"], "activity_counters");
    EXPECT_FALSE(j.contains("stragglers_unknown"));
  }
}

TEST_F(CoarseCli, StragglerAtThirtySecondsWithoutCountersIsUnknownWithTheReason) {
  // W&B logs no DCGM counters: one power reading per 30 s cannot time the ranks.
  const auto [log, truth] = Simulate("straggler", "wandb", "--interval-ms 30000 --format wandb");
  const auto j = TriageJson(log);
  ASSERT_TRUE(j.is_object());
  EXPECT_TRUE(j["stragglers"].empty()) << j["stragglers"].dump();
  ASSERT_TRUE(j.contains("stragglers_unknown"));
  EXPECT_THAT(j["stragglers_unknown"].get<std::string>(),
              HasSubstr("without DCGM activity counters"));
  EXPECT_EQ(j["hosts"][0]["gpus"][0]["evidence"]["stragglers_unknown"], j["stragglers_unknown"]);
  const CommandResult text = RunWattwatch("triage --color never " + log);
  EXPECT_THAT(text.output, HasSubstr("note: stragglers unknown: training sampled every 30 s"));
  EXPECT_THAT(text.output, Not(HasSubstr("Stragglers:")));
}

TEST_F(CoarseCli, NoStragglerOnAnyRealTrace) {
  WW_REQUIRE_SHARED_FILE(kReal);
  std::vector<std::string> runs;
  for (const char* f :
       {"grantwilkins_training_profile_ckpt1.csv", "grantwilkins_training_profile_ckpt100.csv",
        "grantwilkins_training_profile_ckpt500.csv", "grantwilkins_training_profile_ckpt1000.csv",
        "grantwilkins_energy-inference_llama2-70b_2024-04-05_nvidia-smi.csv"}) {
    runs.push_back(kReal + f);
  }
  for (const char* f : {"cncf_kops_TestObservability_AcceleratorMetrics_ViaDCGM_output.md",
                        "cncf_ericsson-ccd_accelerator_metrics.md"}) {
    runs.push_back(kFormats + f);
  }
  // The V100 dmon log at its own 50 ms, at the dmon default 1 s, and read as 30 s scrapes
  // (coarse with activity counters).
  const std::string dmon = kFormats + "mertside_GV100-baseline-LSTM-1380-0.dcgmi-dmon.txt";
  for (const char* iv : {"50", "1000", "30000"})
    runs.push_back("--interval-ms " + std::string(iv) + " " + dmon);
  for (const std::string& args : runs) {
    SCOPED_TRACE(args);
    const auto j = TriageJson(args);
    ASSERT_TRUE(j.is_object());
    EXPECT_TRUE(j["stragglers"].empty()) << j["stragglers"].dump();
  }
}

// One scrape is a snapshot (issue 29): each GPU is placed against its board (a loaded T4 at
// 68.2 W and 91 %: working; two idle L4s: idle), so no hang is suspected, but nothing is confirmed
// either, and the text says why.
TEST_F(CoarseCli, OneScrapeIsASnapshotNotAConfirmation) {
  for (const char* f : {"cncf_kops_TestObservability_AcceleratorMetrics_ViaDCGM_output.md",
                        "cncf_ericsson-ccd_accelerator_metrics.md"}) {
    SCOPED_TRACE(f);
    const std::string path = kFormats + f;
    WW_REQUIRE_SHARED_FILE(path);
    const CommandResult text = RunWattwatch("triage --color never " + path);
    ASSERT_EQ(text.exit_code, 0) << text.output;
    EXPECT_THAT(text.output, Not(HasSubstr("No hang.")));
    EXPECT_THAT(text.output, HasSubstr("No hang in this snapshot (not a confirmation: the log "
                                       "spans 0.0 s (1 sample), too short to tell whether the job "
                                       "hung"));
    EXPECT_THAT(text.output, HasSubstr("at least 30 s of samples are needed"));
    const auto j = TriageJson(path);
    ASSERT_TRUE(j.is_object());
    EXPECT_EQ(j["hang_verdict"], "none");
    EXPECT_THAT(j["hang_unknown"].get<std::string>(), HasSubstr("1 sample"));
    EXPECT_FALSE(j["snapshot"]["gpus"].empty());
    EXPECT_TRUE(j["hang_episodes"].empty());
    // A snapshot confirms nothing: --fail-on-hang exits 0.
    EXPECT_EQ(RunWattwatch("triage --fail-on-hang " + path).exit_code, 0);
  }
}

TEST_F(CoarseCli, ASimulatedLogCutShortIsUnknownAndTheWholeOneIsNot) {
  const auto [log, truth] = Simulate("hang-spin", "cut", "--interval-ms 1000");
  // The first 10 s (8 GPUs a tick, after the header).
  const std::vector<std::string> lines = Lines(ReadFile(log));
  ASSERT_GT(lines.size(), 81u);
  std::string head;
  for (size_t i = 0; i < 81; ++i) head += lines[i] + "\n";
  const std::string cut = (dir_ / "cut10s.csv").string();
  WriteFile(cut, head);
  const auto short_j = TriageJson(cut);
  ASSERT_TRUE(short_j.is_object());
  // Its first 10 s are the launch: no process yet, so no hang in that snapshot.
  EXPECT_EQ(short_j["hang_verdict"], "none");
  EXPECT_THAT(short_j["hang_unknown"].get<std::string>(), HasSubstr("80 samples"));
  const CommandResult text = RunWattwatch("triage --color never --fail-on-hang " + cut);
  EXPECT_EQ(text.exit_code, 0) << text.output;
  EXPECT_THAT(text.output, HasSubstr("not a confirmation: the log spans 9.0 s (80 samples)"));
  // The whole log: a hang found and confirmed.
  const CommandResult full = RunWattwatch("triage --json --fail-on-hang " + log, false);
  EXPECT_EQ(full.exit_code, kExitHang);
  const auto full_j = nlohmann::json::parse(full.output, nullptr, false);
  ASSERT_TRUE(full_j.is_object());
  EXPECT_FALSE(full_j["hang_episodes"].empty());
  EXPECT_EQ(full_j["hang_verdict"], "confirmed");
  EXPECT_FALSE(full_j.contains("hang_unknown"));
}

TEST_F(CoarseCli, AGpuSampledBrieflyInALongLogIsSaidToBe) {
  // healthy at 1 s, with GPU 7's rows only in the last 10 s of the log.
  const auto [log, truth] = Simulate("healthy", "late", "--interval-ms 1000");
  const std::vector<std::string> lines = Lines(ReadFile(log));
  ASSERT_GT(lines.size(), 200u);
  std::string kept = lines[0] + "\n";
  const size_t tail_from = lines.size() - 80;
  for (size_t i = 1; i < lines.size(); ++i) {
    const bool gpu7 = (i - 1) % 8 == 7;
    if (!gpu7 || i >= tail_from) kept += lines[i] + "\n";
  }
  const std::string path = (dir_ / "late.csv").string();
  WriteFile(path, kept);
  const auto j = TriageJson(path);
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["hang_verdict"], "none") << "the log is long enough";
  EXPECT_FALSE(j.contains("snapshot"));
  for (const auto& g : j["hosts"][0]["gpus"]) {
    EXPECT_EQ(g.contains("hang_unknown"), g["gpu"] == 7) << g.dump();
  }
  const CommandResult text = RunWattwatch("triage --color never " + path);
  EXPECT_THAT(text.output, HasSubstr("/GPU7: sampled for 9.0 s (10 samples), too short to tell "
                                     "whether it hung"));
}

}  // namespace
}  // namespace ww::testing::coarse_cli
