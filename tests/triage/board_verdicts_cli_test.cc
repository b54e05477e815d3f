// Verdicts that need the board, through the binary: the nvidia-smi tables people paste while a
// job hangs (../shared/traces/hangs, read in place), the dcgm-exporter scrapes of
// ../shared/traces/formats (one snapshot each), and a home-made CSV of steady mid-power compute
// with no name, limit or memory, which a range learned from the log alone once called a hang.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "support/support.h"

namespace ww {
namespace {

nlohmann::json TriageJson(const std::string& args, int want_exit = 0) {
  const auto run = ::ww::testing::RunWattwatch("triage --json " + args, false);
  EXPECT_EQ(run.exit_code, want_exit) << run.output.substr(0, 3000);
  return nlohmann::json::parse(run.output, nullptr, false);
}

TEST(HangSnapshots, PastedTablesAreSuspectedWithEachGpuAgainstItsBoard) {
  const std::string dir = ::ww::testing::SharedDir() + "/traces/hangs/";
  struct Case {
    std::string file, board, reading;
  };
  for (const Case& c :
       {Case{"accelerate_233_t4_stuck.txt", "Tesla T4", "41 W of 70 W (59 %)"},
        Case{"pytorch_22671_v100_freeze.txt", "Tesla V100-SXM2-16GB", "76 W of 300 W (25 %)"}}) {
    SCOPED_TRACE(c.file);
    const auto j = TriageJson(dir + c.file);
    ASSERT_FALSE(j.is_discarded());
    EXPECT_EQ(j["hang_verdict"], "suspected") << j.dump(1);
    EXPECT_TRUE(j["hang_episodes"].empty()) << "one snapshot confirms nothing";
    ASSERT_TRUE(j.contains("hang_suspected"));
    EXPECT_FALSE(j["hang_suspected"]["reasons"].empty());
    EXPECT_TRUE(j["hang_suspected"]["culprits"].empty()) << "every rank waits";
    ASSERT_EQ(j["snapshot"]["gpus"].size(), 3u);
    for (const auto& g : j["snapshot"]["gpus"]) {
      EXPECT_EQ(g["state"], "waiting");
      EXPECT_EQ(g["board"], c.board);
    }
    EXPECT_NE(j["snapshot"]["gpus"][0]["reading"].get<std::string>().find(c.reading),
              std::string::npos)
        << j["snapshot"].dump(1);

    const auto text = ::ww::testing::RunWattwatch("triage " + dir + c.file, false);
    EXPECT_EQ(text.exit_code, 0);
    EXPECT_NE(text.output.find("Suspected hang (one snapshot, not confirmed)"), std::string::npos)
        << text.output;
    EXPECT_NE(text.output.find("wattwatch check"), std::string::npos) << "how to confirm it";
    // --fail-on-hang exits 3 on a confirmed hang only.
    EXPECT_EQ(::ww::testing::RunWattwatch("triage --fail-on-hang " + dir + c.file).exit_code, 0);
  }
}

TEST(HangSnapshots, ScrapesOfWorkAndIdleAreNotSuspected) {
  const std::string dir = ::ww::testing::SharedDir() + "/traces/formats/";
  // A loaded T4 (91 %, 68.2 W): work. Two idle L4s (0 %, 16.4 W): idle.
  for (const std::string f : {"cncf_ericsson-ccd_accelerator_metrics.md",
                              "cncf_kops_TestObservability_AcceleratorMetrics_ViaDCGM_output.md"}) {
    SCOPED_TRACE(f);
    const auto j = TriageJson(dir + f);
    ASSERT_FALSE(j.is_discarded());
    EXPECT_EQ(j["hang_verdict"], "none") << j.dump(1);
    EXPECT_FALSE(j.contains("hang_suspected"));
  }
}

TEST(HangVerdictField, AlwaysPresentOnLongLogs) {
  const std::string dir = ::ww::testing::SharedDir() + "/traces/real/";
  const auto j = TriageJson(dir + "grantwilkins_training_profile_ckpt1000.csv");
  EXPECT_EQ(j["hang_verdict"], "none");
  EXPECT_FALSE(j.contains("snapshot"));
}

// 8 GPUs logged by a team's own script: training at ~300 W alternating with a filler FP32 GEMM at
// ~410 W every minute, 100 % utilization throughout, 55-65 °C, a reading at 0 % between phases;
// no name, no power.limit, no memory. The shape the issue reports from real 8xH100 logs.
std::string HomeMadeCsv(bool with_name_and_limit) {
  std::string out = with_name_and_limit
                        ? "timestamp, gpu_index, name, power_limit_W, temperature_C, "
                          "utilization_gpu_percent, power_W\n"
                        : "timestamp, gpu_index, temperature_C, utilization_gpu_percent, power_W\n";
  const int64_t t0 = 1740830400;  // 2025-03-01T12:00:00Z
  for (int s = 0; s < 600; ++s) {
    const bool filler = (s / 60) % 2 == 1;
    const bool between = s % 60 == 0 && s > 0;
    for (int g = 0; g < 8; ++g) {
      const double jitter = 6 * std::sin(0.7 * s + g);
      const double power = between ? 293 + jitter / 3 : (filler ? 410 : 300) + jitter;
      const double util = between ? 0 : 100;
      const double temp = (filler ? 62 : 57) + (g % 3) + (s % 7) * 0.1;
      const std::string ts = fmt::format("2025-03-01 12:{:02d}:{:02d}.000", (s / 60) % 60, s % 60);
      (void)t0;
      out += with_name_and_limit
                 ? fmt::format("{}, {}, NVIDIA H100 80GB HBM3, 700, {:.0f}, {:.0f}, {:.1f}\n", ts,
                               g, temp, util, power)
                 : fmt::format("{}, {}, {:.0f}, {:.0f}, {:.1f}\n", ts, g, temp, util, power);
    }
  }
  return out;
}

TEST(SteadyMidPowerCompute, IsNotAHangWithOrWithoutItsBoard) {
  ::ww::testing::TempDir tmp;
  const std::string blind = tmp.Write("homemade.csv", HomeMadeCsv(false));
  const auto j = TriageJson("--fail-on-hang " + blind);
  ASSERT_FALSE(j.is_discarded());
  EXPECT_TRUE(j["hang_episodes"].empty()) << j["hang_episodes"].dump(1);
  // The log cannot place its power: it says so rather than calling a verdict.
  EXPECT_EQ(j["hang_verdict"], "unknown");
  EXPECT_NE(j["hosts"][0]["gpus"][0]["evidence"]["missing"].dump().find("power.limit"),
            std::string::npos)
      << j["hosts"][0]["gpus"][0]["evidence"].dump();

  const std::string named = tmp.Write("named.csv", HomeMadeCsv(true));
  const auto k = TriageJson("--fail-on-hang " + named);
  ASSERT_FALSE(k.is_discarded());
  EXPECT_TRUE(k["hang_episodes"].empty()) << k["hang_episodes"].dump(1);
  EXPECT_EQ(k["hang_verdict"], "none");
  // Placed against the H100's range, 300-410 W at 100 % is work (compute, and at 300 W near
  // the level collectives draw, some of it split off as communication): never a wait.
  const auto& sec = k["hosts"][0]["gpus"][0]["seconds"];
  EXPECT_GT(sec["compute"].get<double>() + sec["communication"].get<double>(), 550) << sec.dump();
  EXPECT_EQ(sec["hang"].get<double>(), 0.0);
}

}  // namespace
}  // namespace ww

namespace ww {
namespace {

TEST(CheckCommand, ConfirmsSuspectsOrClearsFromTheSourceItSamples) {
  ::ww::testing::TempDir tmp;
  // A simulated 8-GPU hang: 60 s of the log from the hang's start confirm it (exit 3).
  const auto sim = ::ww::testing::RunWattwatch(
      "simulate hang-exit --force --seed 3 --out " + tmp.path() + "/hang.csv", true);
  ASSERT_EQ(sim.exit_code, 0) << sim.output;
  const auto whole = ::ww::testing::RunWattwatch(
      "check --json --seconds 3600 --source replay:" + tmp.path() + "/hang.csv", false);
  EXPECT_EQ(whole.exit_code, 3) << whole.output.substr(0, 2000);
  const auto j = nlohmann::json::parse(whole.output, nullptr, false);
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(j["hang_verdict"], "confirmed");
  EXPECT_FALSE(j["hang_episodes"].empty());

  // A pasted table of hung T4s: suspected, exit 0.
  const auto t4 = ::ww::testing::RunWattwatch(
      "check --seconds 30 --source replay:" + ::ww::testing::SharedDir() +
          "/traces/hangs/accelerate_233_t4_stuck.txt",
      false);
  EXPECT_EQ(t4.exit_code, 0) << t4.output;
  EXPECT_NE(t4.output.find("Suspected hang (one snapshot, not confirmed)"), std::string::npos)
      << t4.output;

  // Healthy work: none.
  ASSERT_EQ(::ww::testing::RunWattwatch(
                "simulate healthy --force --seed 3 --out " + tmp.path() + "/ok.csv", true)
                .exit_code,
            0);
  const auto ok = ::ww::testing::RunWattwatch(
      "check --json --seconds 3600 --source replay:" + tmp.path() + "/ok.csv", false);
  EXPECT_EQ(ok.exit_code, 0);
  EXPECT_EQ(nlohmann::json::parse(ok.output, nullptr, false)["hang_verdict"], "none");

  // Bad sources and flags: exit 2 with a message.
  EXPECT_EQ(::ww::testing::RunWattwatch("check --source replay:/nonexistent.csv").exit_code, 2);
  EXPECT_EQ(::ww::testing::RunWattwatch("check --seconds 0").exit_code, 2);
  const auto help = ::ww::testing::RunWattwatch("check --help");
  EXPECT_NE(help.output.find("Slurm epilog"), std::string::npos);
  EXPECT_NE(help.output.find("livenessProbe"), std::string::npos);
}

}  // namespace
}  // namespace ww

namespace ww {
namespace {

// A molecular-dynamics code on 8 H100s: hours at 100 % utilization and ~190 W (27 % of the limit,
// inside the wait band by power alone), but with 4 % memory-controller utilization: small
// CPU-coupled kernels moving memory. A rank waiting in a collective moves none.
TEST(WorkThatLooksLikeASpin, MemoryTrafficMakesItWorkNotAHang) {
  ::ww::testing::TempDir tmp;
  auto csv = [](double mem_util) {
    std::string out =
        "timestamp, index, name, power.draw [W], power.limit [W], utilization.gpu [%], "
        "utilization.memory [%], memory.used [MiB]\n";
    for (int s = 0; s < 300; ++s) {
      for (int g = 0; g < 8; ++g) {
        const bool idle = s < 10;
        out += fmt::format(
            "2025/03/01 12:{:02d}:{:02d}.{:03d}, {}, NVIDIA H100 80GB HBM3, {:.1f} W, "
            "700.00 W, {} %, {:.0f} %, {} MiB\n",
            s / 60, s % 60, g, g, idle ? 72.0 : 190 + 3 * std::sin(s + g), idle ? 0 : 100,
            idle ? 0 : mem_util, idle ? 17 : 9000);
      }
    }
    return out;
  };
  const std::string md = tmp.Write("md.csv", csv(4));
  const auto j = TriageJson("--fail-on-hang " + md);
  ASSERT_FALSE(j.is_discarded());
  EXPECT_TRUE(j["hang_episodes"].empty()) << j["hang_episodes"].dump(1);
  EXPECT_EQ(j["hang_verdict"], "none");
  // The same readings with the memory controller idle are a wait: all 8 ranks, a hang.
  const std::string wait = tmp.Write("wait.csv", csv(0));
  const auto k = TriageJson("--fail-on-hang " + wait, 3);
  ASSERT_FALSE(k.is_discarded());
  EXPECT_EQ(k["hang_verdict"], "confirmed");
}

}  // namespace
}  // namespace ww
