// The classifier on real nvidia-smi logs (../shared/traces/real, read in place): 8x H100 DDP
// training where rank 0 saves checkpoints while ranks 1-7 spin in NCCL at 100 % utilization, and
// 4x A100 inference. Intervals below are SOURCES.md's, in seconds from the first row.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "support/support.h"
#include "telemetry/ingest/open.h"
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
  IngestOptions io;
  io.format = *ParseInputFormat("nvidia-smi");
  auto in = OpenTelemetryFiles({dir + file}, io);
  EXPECT_TRUE(in.ok()) << in.status().message();
  if (!in.ok()) return r;
  triage::TriageEngine engine({}, &r.labels);
  EXPECT_TRUE(triage::RunToEnd(*in->source, engine).ok());
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

// A derived copy of a real 8-GPU trace (no index column: a GPU is its row's place in the tick)
// that keeps every `every`-th tick (every 300th of 100 ms ticks: 30 s sampling), optionally
// without rank 0's rows, in a temp dir.
std::string Resampled(const std::string& file, int every, bool drop_rank0,
                      const ::ww::testing::TempDir& dir) {
  const auto lines = ::ww::testing::Lines(::ww::testing::ReadFile(kDir + file));
  std::string out = lines.at(0) + "\n";
  for (size_t i = 1; i < lines.size(); ++i) {
    const size_t tick = (i - 1) / 8, rank = (i - 1) % 8;
    if (tick % static_cast<size_t>(every) != 0 || (drop_rank0 && rank == 0)) continue;
    out += lines[i] + "\n";
  }
  return dir.Write(fmt::format("every{}{}_{}", every, drop_rank0 ? "_no_rank0" : "", file), out);
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

TEST_F(RealTraces, ThirtySecondSamplingSeesTheRankZeroSaveAndAHang) {
  // Logged every 30 s, without a name or a power.limit column: before, fewer than 16 readings
  // per GPU left power uncalibrated for 8 minutes, so ranks 1-7 spinning at ~150 W read as
  // compute (71 % compute, no checkpoint; a real hang not found).
  ::ww::testing::TempDir tmp;
  const std::string f = "grantwilkins_training_profile_ckpt1.csv";
  const std::string coarse = Resampled(f, 300, false, tmp);
  TraceResult r = TriageFile(std::filesystem::path(coarse).filename(), tmp.path() + "/");
  EXPECT_TRUE(r.hangs.empty()) << "rank 0 saves while the others wait: not a hang";
  std::map<std::string, int> by;
  EXPECT_GE(ShareIn(r, {{180, 640}}, GpuState::kCheckpoint, &by), 0.6)
      << "compute " << by["compute"] << ", communication " << by["communication"] << ", idle "
      << by["idle"];

  // Without rank 0 the seven others spin for minutes with nobody saving or computing in the
  // logs: a hang, found at 30 s sampling within 30 s + 2 intervals of where it is at 100 ms.
  const std::string fine = Resampled(f, 1, true, tmp);
  const std::string coarse7 = Resampled(f, 300, true, tmp);
  TraceResult rf = TriageFile(std::filesystem::path(fine).filename(), tmp.path() + "/");
  TraceResult rc = TriageFile(std::filesystem::path(coarse7).filename(), tmp.path() + "/");
  ASSERT_FALSE(rf.hangs.empty());
  ASSERT_FALSE(rc.hangs.empty()) << "the hang is missed at 30 s";
  EXPECT_EQ(rc.hangs[0].gpus.size(), 7u);
  EXPECT_LE(rc.hangs[0].detected_at_ms, rf.hangs[0].start_ms + 30'000 + 2 * 30'000);
}

TEST_F(RealTraces, CoarseCheckpointsAreListedWithTheTimeTheirReadingsStandFor) {
  // ckpt100 every 15 s: a 15 s rank-0 save is one reading. Before, such checkpoints showed in the
  // shares (6.6 %) but were listed as none (a first reading equal to the last: "0.0 s").
  ::ww::testing::TempDir tmp;
  const std::string every15 =
      Resampled("grantwilkins_training_profile_ckpt100.csv", 150, false, tmp);
  TraceResult r = TriageFile(std::filesystem::path(every15).filename(), tmp.path() + "/");
  EXPECT_TRUE(r.hangs.empty());
  // Rank 0's readings alternate training and saves, which its window reads as starvation: quiet
  // while the others spin, it is still the rank they wait on. Before: 3 of the 9 saves listed,
  // rank 0 72.7 % starved and its peers' waits `communication`.
  EXPECT_GE(r.checkpoints.size(), 8u) << "the nine rank-0 saves";
  for (const auto& c : r.checkpoints) {
    EXPECT_GE(c.covered_ms(), 14'000) << c.start_ms;
    EXPECT_LE(c.covered_ms(), 120'000) << c.start_ms;
    EXPECT_THAT(c.writers, ::testing::ElementsAre(GpuKey{0, 0})) << "rank 0 saves";
  }

  // ckpt1 every 1 s: as the job ends, GPU2 and GPU4-6 read 0 % holding memory in the last
  // reading of the wait. Before, they were listed as savers with GPU0.
  const std::string every1 = Resampled("grantwilkins_training_profile_ckpt1.csv", 10, false, tmp);
  TraceResult fine = TriageFile(std::filesystem::path(every1).filename(), tmp.path() + "/");
  EXPECT_TRUE(fine.hangs.empty());
  ASSERT_FALSE(fine.checkpoints.empty());
  for (const auto& c : fine.checkpoints) {
    EXPECT_THAT(c.writers, ::testing::ElementsAre(GpuKey{0, 0})) << c.start_ms;
  }
}

TEST_F(RealTraces, APauseOfAFewReadingsIsNoCheckpoint) {
  // ckpt1000 without power.draw: every rank at 0 % for two 100 ms readings before a save (a
  // barrier) was listed as "all ranks saving" for 0.1 s; the saves themselves cannot be seen.
  ::ww::testing::TempDir tmp;
  const auto lines = ::ww::testing::Lines(
      ::ww::testing::ReadFile(kDir + "grantwilkins_training_profile_ckpt1000.csv"));
  std::string out = "timestamp, utilization.gpu [%], memory.used [MiB]\n";
  for (size_t i = 1; i < lines.size(); ++i) {
    // timestamp, power.draw [W], utilization.gpu [%], memory.used [MiB]
    const size_t a = lines[i].find(','), b = lines[i].find(',', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    out += lines[i].substr(0, a) + lines[i].substr(b) + "\n";
  }
  tmp.Write("nopower.csv", out);
  TraceResult r = TriageFile("nopower.csv", tmp.path() + "/");
  EXPECT_TRUE(r.hangs.empty());
  for (const auto& c : r.checkpoints) {
    EXPECT_GE(c.covered_ms(), 2000) << "listed: " << c.start_ms << " .. " << c.end_ms;
  }
}

TEST_F(RealTraces, AGpuWithoutPowerNeitherHidesTheCheckpointsNorIsAStraggler) {
  // One GPU's power.draw reads [N/A] all along (a driver that stopped reporting it): the other
  // ranks' checkpoint waits stay checkpoints, and the GPU is not named a straggler for computing
  // "all the time" (a default, not a measurement). Before: 0 checkpoints, GPU5 2.67x slower.
  ::ww::testing::TempDir tmp;
  const std::string f = "grantwilkins_training_profile_ckpt100.csv";
  const auto lines = ::ww::testing::Lines(::ww::testing::ReadFile(kDir + f));
  std::string out = lines.at(0) + "\n";
  for (size_t i = 1; i < lines.size(); ++i) {
    std::string line = lines[i];
    if ((i - 1) % 8 == 5) {
      // timestamp, power.draw [W], utilization.gpu [%], memory.used [MiB]
      const size_t a = line.find(','), b = line.find(',', a + 1);
      if (a != std::string::npos && b != std::string::npos)
        line.replace(a + 1, b - a - 1, " [N/A]");
    }
    out += line + "\n";
  }
  tmp.Write("na_gpu5.csv", out);
  const auto run =
      ::ww::testing::RunWattwatch("triage --json " + tmp.path() + "/na_gpu5.csv", false);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  const auto j = nlohmann::json::parse(run.output);
  EXPECT_TRUE(j["stragglers"].empty()) << j["stragglers"].dump();
  EXPECT_TRUE(j["hang_episodes"].empty());
  EXPECT_GE(j["checkpoints"].size(), 8u) << "the nine rank-0 saves";
  // The [N/A] readings are a documented skip, counted.
  bool counted = false;
  for (const auto& w : j["warnings"]) {
    counted =
        counted || w.get<std::string>().find("power.draw [W]: not available") != std::string::npos;
  }
  EXPECT_TRUE(counted) << j["warnings"].dump();
}

TEST_F(RealTraces, OneRankCutFromTheJobSaysToPassTheWorldSize) {
  // GPU3 of ckpt1 alone: 9 minutes pegged at ~150 W while rank 0 saved. As a job of one GPU that
  // is compute (small kernels look the same), but the summary says what it would be as one rank.
  ::ww::testing::TempDir tmp;
  const auto lines = ::ww::testing::Lines(
      ::ww::testing::ReadFile(kDir + "grantwilkins_training_profile_ckpt1.csv"));
  std::string out = lines.at(0) + "\n";
  for (size_t i = 1; i < lines.size(); ++i) {
    if ((i - 1) % 8 == 3) out += lines[i] + "\n";
  }
  tmp.Write("gpu3.csv", out);
  const auto run = ::ww::testing::RunWattwatch("triage " + tmp.path() + "/gpu3.csv", false);
  ASSERT_EQ(run.exit_code, 0) << run.output;
  EXPECT_NE(run.output.find("No hang."), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("pass --world-size N"), std::string::npos) << run.output;
  // Told it is one rank of eight, it is not a job of one GPU: no such note.
  const auto ranked =
      ::ww::testing::RunWattwatch("triage --world-size 8 " + tmp.path() + "/gpu3.csv", false);
  EXPECT_EQ(ranked.output.find("pass --world-size N"), std::string::npos) << ranked.output;
}

TEST_F(RealTraces, MidTrainingStartWithoutLimitOrNameIsNotAHang) {
  // A logger started after launch (no idle reading) that logs neither power.limit nor the
  // name: the lowest reading (~530 W, compute) is no floor. Before, power was scaled against a
  // made-up 3.7 kW top and steady compute read as a spinning 8-GPU hang.
  ::ww::testing::TempDir tmp;
  const std::string f = "grantwilkins_training_profile_ckpt1000.csv";
  const auto lines = ::ww::testing::Lines(::ww::testing::ReadFile(kDir + f));
  std::string out = lines.at(0) + "\n";
  // Ticks from 150 s to 340 s (training, before the first save at ~349 s), utilization pegged.
  for (size_t i = 1 + 8 * 1500; i < lines.size() && i < 1 + 8 * 3400; ++i) {
    std::string line = lines[i];
    const size_t a = line.find(','), b = line.find(',', a + 1), c = line.find(',', b + 1);
    if (c != std::string::npos) line.replace(b + 1, c - b - 1, " 100 %");
    out += line + "\n";
  }
  tmp.Write("midtrain.csv", out);
  const auto run = ::ww::testing::RunWattwatch(
      "triage --json --fail-on-hang " + tmp.path() + "/midtrain.csv", false);
  EXPECT_EQ(run.exit_code, 0) << run.output.substr(0, 2000);
  const auto j = nlohmann::json::parse(run.output);
  EXPECT_TRUE(j["hang_episodes"].empty());
  const auto& ev = j["hosts"][0]["gpus"][0]["evidence"];
  EXPECT_NE(ev["missing"].dump().find("power.limit"), std::string::npos) << ev.dump();
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
