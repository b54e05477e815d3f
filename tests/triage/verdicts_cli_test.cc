// The real binary on the honest-verdict scenarios (issue 14): a job of one GPU has no collectives
// unless --world-size says the log is part of a larger job; an end-of-run tail without memory.used
// is idle and the summary says what the missing column costs; a stall off the GPU is a hang only
// past --max-checkpoint-s; --drop-columns refuses a field it cannot leave out.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/support.h"

namespace ww::testing::verdicts_cli {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

class VerdictsCli : public TestDirFixture {
 protected:
  // Simulates `scenario` at 1 s with extra flags into dir_/name and returns its node0.csv.
  std::string Simulate(const std::string& scenario, const std::string& name,
                       const std::string& flags = "") {
    const std::string out = (dir_ / name).string();
    const CommandResult r =
        RunWattwatch("simulate " + scenario + " --interval-ms 1000 --out-dir " + out + " " + flags);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return out + "/node0.csv";
  }
  nlohmann::json TriageJson(const std::string& args, int want_exit = 0) {
    const CommandResult r = RunWattwatch("triage --json " + args, /*merge_stderr=*/false);
    EXPECT_EQ(r.exit_code, want_exit) << r.output;
    return nlohmann::json::parse(r.output, nullptr, /*allow_exceptions=*/false);
  }
};

double Seconds(const nlohmann::json& j, const char* state) {
  double s = 0;
  for (const auto& h : j["hosts"]) {
    for (const auto& g : h["gpus"]) s += g["seconds"][state].get<double>();
  }
  return s;
}

TEST_F(VerdictsCli, OneGpuIsNoCollectiveUnlessWorldSizeSaysTheJobIsLarger) {
  // hang-spin on one GPU: it computes, then reads pegged at low power for minutes. Alone that is
  // small kernels as much as a wait; as one rank of a 16-rank job it waits on peers.
  const std::string log = Simulate("hang-spin", "one", "--gpus-per-host 1");
  const auto alone = TriageJson(log);
  ASSERT_TRUE(alone.is_object());
  EXPECT_TRUE(alone["hang_episodes"].empty());
  EXPECT_EQ(Seconds(alone, "communication"), 0.0);
  EXPECT_EQ(Seconds(alone, "hang"), 0.0);
  EXPECT_GT(Seconds(alone, "compute"), 200.0) << "the pegged stretch is compute";

  const auto part = TriageJson("--world-size 16 " + log);
  ASSERT_TRUE(part.is_object());
  ASSERT_EQ(part["hang_episodes"].size(), 1u) << "a rank of a 16-rank job spinning: a hang";
  EXPECT_GT(Seconds(part, "hang"), 200.0);
}

TEST_F(VerdictsCli, EndOfRunTailWithoutMemoryIsIdleAndTheSummarySaysWhy) {
  const std::string log = Simulate("end-tail", "tail");
  const CommandResult text = RunWattwatch("triage --color never " + log);
  ASSERT_EQ(text.exit_code, 0) << text.output;
  EXPECT_THAT(text.output, Not(HasSubstr("all ranks saving")));
  EXPECT_THAT(text.output, HasSubstr("\n  node0: no memory.used: idle and checkpoint told apart by "
                                     "power only"));
  EXPECT_THAT(text.output, HasSubstr("saved while 7 GPUs")) << "the rank-0 save keeps its evidence";

  const auto j = TriageJson(log);
  ASSERT_TRUE(j.is_object());
  const auto& evidence = j["hosts"][0]["gpus"][0]["evidence"];
  EXPECT_EQ(evidence["missing"], nlohmann::json::array({"memory.used"}));
  // The 3-minute tail of 8 GPUs is idle: at least 8 x 170 s of it.
  EXPECT_GT(Seconds(j, "idle"), 8 * 170.0);
}

TEST_F(VerdictsCli, ALogEndingInAQuietHeldStretchSaysItIsUnresolved) {
  // end-tail-held: after training every rank stays quiet holding memory until the log ends.
  // Idle by the rule (nothing shows training resumed), but a live incident looks the same: the
  // notes say so, with when it started.
  const std::string log = Simulate("end-tail-held", "held");
  const auto j = TriageJson(log);
  ASSERT_TRUE(j.is_object());
  EXPECT_TRUE(j["hang_episodes"].empty());
  std::string notes = j["notes"].dump();
  EXPECT_THAT(notes, HasSubstr("every rank quiet holding its memory"));
  EXPECT_THAT(notes, HasSubstr("unresolved"));
  // A tail without memory.used shows nothing held: no such note.
  const auto bare = TriageJson(Simulate("end-tail", "bare"));
  ASSERT_TRUE(bare.is_object());
  EXPECT_THAT(bare["notes"].dump(), Not(HasSubstr("every rank quiet holding its memory")));
}

TEST_F(VerdictsCli, StallOffTheGpuIsAHangPastMaxCheckpoint) {
  const std::string log = Simulate("off-gpu-stall", "stall");
  const auto patient = TriageJson(log);
  ASSERT_TRUE(patient.is_object());
  EXPECT_TRUE(patient["hang_episodes"].empty()) << "7 minutes is under the default 1800 s";
  EXPECT_LT(Seconds(patient, "checkpoint"), 8 * 60.0)
      << "the stall is not counted as a checkpoint (only the 30 s sharded save is)";

  const auto j = TriageJson("--max-checkpoint-s 300 --fail-on-hang " + log, 3);
  ASSERT_TRUE(j.is_object());
  ASSERT_EQ(j["hang_episodes"].size(), 1u);
  const auto& h = j["hang_episodes"][0];
  EXPECT_TRUE(h["culprits"].empty());
  EXPECT_THAT(h["reasons"][0].get<std::string>(), HasSubstr("a stall off the GPU"));
  EXPECT_EQ(j["checkpoints"].size(), 1u) << "the sharded save before it";
}

TEST_F(VerdictsCli, DropColumnsRefusesAFieldItCannotLeaveOut) {
  const CommandResult r = RunWattwatch(
      "simulate healthy --drop-columns memory.used,clocks.sm --out " + (dir_ / "x.csv").string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.output, HasSubstr("--drop-columns: 'clocks.sm' is not a field"));
}

}  // namespace
}  // namespace ww::testing::verdicts_cli
