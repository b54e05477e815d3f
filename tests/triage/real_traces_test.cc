// The classifier on real nvidia-smi logs (../shared/traces/real, read in place): 8x H100 DDP
// training where rank 0 saves checkpoints while ranks 1-7 spin in NCCL at 100 % utilization, and
// 4x A100 inference. Intervals below are SOURCES.md's, in seconds from the first row.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "support/support.h"
#include "telemetry/replay/nvsmi_log.h"
#include "triage/engine.h"
#include "triage/run.h"

namespace ww {
namespace {

const std::string kDir = ::ww::testing::SharedDir() + "/traces/real/";

struct Collected : triage::TriageObserver {
  std::vector<triage::LabeledSample> labels;
  void OnLabel(const triage::LabeledSample& l) override { labels.push_back(l); }
};

struct TraceResult {
  Collected labels;
  std::vector<triage::HangEpisode> hangs;
  std::vector<triage::CheckpointEpisode> checkpoints;
  int64_t first_ms = 0;
};

TraceResult TriageFile(const std::string& file, const std::string& dir = kDir) {
  TraceResult r;
  auto src = OpenReplay({dir + file});
  EXPECT_TRUE(src.ok()) << src.status().message();
  if (!src.ok()) return r;
  triage::TriageEngine engine({}, &r.labels);
  EXPECT_TRUE(triage::RunToEnd(**src, engine).ok());
  r.hangs = engine.hang_episodes();
  r.checkpoints = engine.checkpoints();
  r.first_ms = engine.first_timestamp_ms();
  return r;
}

// A derived copy of a real trace without its memory.used column (the last one), in a temp dir:
// the shape of logs from teams whose query left memory out.
std::string WithoutMemoryColumn(const std::string& file, const ::ww::testing::TempDir& dir) {
  std::string out;
  for (const std::string& line : ::ww::testing::Lines(::ww::testing::ReadFile(kDir + file))) {
    out += line.substr(0, line.rfind(',')) + "\n";
  }
  return dir.Write(file, out);
}

// Share of samples (all GPUs) inside the intervals that carry `want`.
double ShareIn(const TraceResult& r, const std::vector<std::pair<double, double>>& intervals,
               GpuState want, std::map<std::string, int>* by_state = nullptr) {
  int64_t hit = 0, total = 0;
  for (const auto& l : r.labels.labels) {
    const double t = static_cast<double>(l.timestamp_ms - r.first_ms) / 1000.0;
    for (auto [a, b] : intervals) {
      if (t >= a && t < b) {
        ++total;
        if (l.state == want) ++hit;
        if (by_state) ++(*by_state)[std::string(StateName(l.state))];
      }
    }
  }
  return total ? static_cast<double>(hit) / static_cast<double>(total) : 0;
}

class RealTraces : public ::testing::Test {
 protected:
  void SetUp() override { WW_REQUIRE_SHARED_FILE(kDir); }
};

TEST_F(RealTraces, NoHangInAnyFile) {
  for (const char* f :
       {"grantwilkins_training_profile_ckpt1.csv", "grantwilkins_training_profile_ckpt100.csv",
        "grantwilkins_training_profile_ckpt500.csv", "grantwilkins_training_profile_ckpt1000.csv",
        "grantwilkins_energy-inference_llama2-70b_2024-04-05_nvidia-smi.csv"}) {
    TraceResult r = TriageFile(f);
    EXPECT_TRUE(r.hangs.empty()) << f << ": " << r.hangs.size() << " hang(s), first at +"
                                 << (r.hangs.empty() ? 0
                                                     : (r.hangs[0].start_ms - r.first_ms) / 1000);
    EXPECT_GT(r.labels.labels.size(), 40000u) << f;
  }
}

TEST_F(RealTraces, Ckpt100WaitsAreCheckpoints) {
  TraceResult r = TriageFile("grantwilkins_training_profile_ckpt100.csv");
  std::map<std::string, int> by;
  const double share = ShareIn(r,
                               {{137, 153},
                                {177, 194},
                                {218, 234},
                                {258, 275},
                                {299, 327},
                                {351, 407},
                                {431, 486},
                                {510, 566},
                                {590, 645}},
                               GpuState::kCheckpoint, &by);
  EXPECT_GE(share, 0.90) << "idle " << by["idle"] << ", communication " << by["communication"];
  // Training between the waits is compute, not a checkpoint.
  EXPECT_GE(ShareIn(r, {{115, 135}, {155, 175}}, GpuState::kCompute), 0.6);
}

TEST_F(RealTraces, Ckpt1000WaitsAreCheckpoints) {
  TraceResult r = TriageFile("grantwilkins_training_profile_ckpt1000.csv");
  EXPECT_GE(ShareIn(r, {{348.9, 364.6}, {601, 616.4}}, GpuState::kCheckpoint), 0.90);
  EXPECT_GE(ShareIn(r, {{120, 340}}, GpuState::kCompute), 0.8);
}

TEST_F(RealTraces, Ckpt500GapWithoutProcessIsIdle) {
  TraceResult r = TriageFile("grantwilkins_training_profile_ckpt500.csv");
  EXPECT_GE(ShareIn(r, {{403, 528}}, GpuState::kIdle), 0.99);
}

TEST_F(RealTraces, WithoutMemoryTheEndOfRunTailIsIdleAndRankZeroSavesStayCheckpoints) {
  // The field failure: the idle tail after a DDP run (0 %, idle-floor power, no memory column)
  // reported as "all ranks saving". Nothing shows memory held there, so it is idle; the rank-0
  // saves keep their evidence (peers spinning on a live quiet rank).
  ::ww::testing::TempDir tmp;
  const std::string f = "grantwilkins_training_profile_ckpt100.csv";
  WithoutMemoryColumn(f, tmp);
  TraceResult r = TriageFile(f, tmp.path() + "/");
  EXPECT_TRUE(r.hangs.empty());
  std::map<std::string, int> by;
  EXPECT_GE(ShareIn(r,
                    {{137, 153},
                     {177, 194},
                     {218, 234},
                     {258, 275},
                     {299, 327},
                     {351, 407},
                     {431, 486},
                     {510, 566},
                     {590, 645}},
                    GpuState::kCheckpoint),
            0.90);
  EXPECT_GE(ShareIn(r, {{668, 697}}, GpuState::kIdle, &by), 0.99)
      << "checkpoint " << by["checkpoint"];
  for (const auto& c : r.checkpoints) {
    EXPECT_FALSE(c.all_ranks) << "no all-rank save without memory evidence, at +"
                              << (c.start_ms - r.first_ms) / 1000 << " s";
  }

  const std::string f500 = "grantwilkins_training_profile_ckpt500.csv";
  WithoutMemoryColumn(f500, tmp);
  TraceResult r500 = TriageFile(f500, tmp.path() + "/");
  EXPECT_TRUE(r500.hangs.empty());
  EXPECT_GE(ShareIn(r500, {{403, 528}}, GpuState::kIdle), 0.99) << "the no-process gap";
  EXPECT_GE(ShareIn(r500, {{232.5, 246}, {364.5, 379}}, GpuState::kCheckpoint), 0.90);

  const std::string f1000 = "grantwilkins_training_profile_ckpt1000.csv";
  WithoutMemoryColumn(f1000, tmp);
  TraceResult r1000 = TriageFile(f1000, tmp.path() + "/");
  EXPECT_TRUE(r1000.hangs.empty());
  EXPECT_GE(ShareIn(r1000, {{348.9, 364.6}, {601, 616.4}}, GpuState::kCheckpoint), 0.90);
  EXPECT_GE(ShareIn(r1000, {{670, 690}}, GpuState::kIdle), 0.99);
}

TEST_F(RealTraces, EndOfRunTailIsIdleWithMemoryToo) {
  TraceResult r = TriageFile("grantwilkins_training_profile_ckpt100.csv");
  EXPECT_GE(ShareIn(r, {{668, 697}}, GpuState::kIdle), 0.99);
}

TEST_F(RealTraces, OneGpuDcgmiDmonLogHasNoCollectivesAndNoCheckpoint) {
  // One V100 running a small Keras LSTM (../shared/traces/formats): today's reading at the
  // dmon default 1 s ended in a 1m09s "all ranks saving" and 2.1 % communication.
  const std::string f = ::ww::testing::SharedDir() +
                        "/traces/formats/mertside_GV100-baseline-LSTM-1380-0.dcgmi-dmon.txt";
  WW_REQUIRE_SHARED_FILE(f);
  for (const char* interval : {"50", "1000"}) {
    SCOPED_TRACE(interval);
    const auto run = ::ww::testing::RunWattwatch(
        "triage --json --interval-ms " + std::string(interval) + " " + f, false);
    ASSERT_EQ(run.exit_code, 0) << run.output;
    const auto j = nlohmann::json::parse(run.output);
    EXPECT_TRUE(j["checkpoints"].empty()) << j["checkpoints"].dump();
    EXPECT_TRUE(j["hang_episodes"].empty());
    const auto& gpu = j["hosts"][0]["gpus"][0];
    EXPECT_EQ(gpu["seconds"]["communication"].get<double>(), 0.0);
    EXPECT_EQ(gpu["seconds"]["checkpoint"].get<double>(), 0.0);
  }
}

TEST_F(RealTraces, Ckpt1LongSpinOnSavingRankIsCheckpointNotHang) {
  // ~550 s of ranks 1-7 at 100 % utilization and ~150 W while rank 0 saves: the signature that
  // fools utilization dashboards. It must read as checkpoint, never hang.
  TraceResult r = TriageFile("grantwilkins_training_profile_ckpt1.csv");
  EXPECT_TRUE(r.hangs.empty());
  EXPECT_GE(ShareIn(r, {{120, 660}}, GpuState::kCheckpoint), 0.6);
}

// A synthetic clock (dmon or a CSV without time) starts at 0 ms: a GPU's first sample at 0 is
// its start, not "not sampled yet" (its span decides whether "no hang" can be said for it).
TEST(EngineStats, AGpuFirstSampledAtTimeZeroSpansFromZero) {
  triage::TriageEngine engine;
  for (int64_t t = 0; t <= 40000; t += 1000) {
    GpuSample s;
    s.timestamp_ms = t;
    s.power_w = 300;
    s.power_limit_w = 700;
    s.util_gpu_pct = 100;
    engine.Add(s);
  }
  engine.Finish();
  const auto stats = engine.gpu_stats();
  ASSERT_EQ(stats.size(), 1u);
  EXPECT_EQ(stats[0].first_ms, 0);
  EXPECT_EQ(stats[0].last_ms, 40000);
}

}  // namespace
}  // namespace ww
