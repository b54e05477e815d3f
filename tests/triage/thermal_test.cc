// Temperature as evidence about a wait (src/triage/thermal.h): the per-GPU levels, the hold rule,
// and, through the binary, logs whose temperature agrees or disagrees with their power.
#include "triage/thermal.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "support/support.h"

namespace ww::triage {
namespace {

const ThermalThresholds kT;

TEST(ThermalLevels, InformativeOnlyWhereTheColumnFollowsTheLoad) {
  ThermalLevels follows;
  for (int i = 0; i < 40; ++i) follows.AddWork(64 + i % 3);
  for (int i = 0; i < 5; ++i) follows.AddQuiet(35);
  const auto l = follows.Informative(kT);
  ASSERT_TRUE(l.has_value());
  EXPECT_EQ(l->work_c, 65);
  EXPECT_EQ(l->quiet_c, 35);

  ThermalLevels constant;  // a logger that writes one number, or a sensor stuck
  for (int i = 0; i < 40; ++i) constant.AddWork(50);
  for (int i = 0; i < 40; ++i) constant.AddQuiet(50);
  EXPECT_FALSE(constant.Informative(kT).has_value()) << "a flat column is no evidence";

  ThermalLevels noise;  // readings that do not follow the work (the same spread either way)
  for (int i = 0; i < 64; ++i) noise.AddWork(55 + (i * 7) % 10);
  for (int i = 0; i < 64; ++i) noise.AddQuiet(55 + (i * 3) % 10);
  EXPECT_FALSE(noise.Informative(kT).has_value());

  ThermalLevels few;  // computing only: nothing to say how much cooler it runs idle
  for (int i = 0; i < 40; ++i) few.AddWork(65);
  few.AddQuiet(35);
  few.AddQuiet(35);
  EXPECT_FALSE(few.Informative(kT).has_value()) << "two quiet readings";
  few.AddQuiet(35);
  EXPECT_TRUE(few.Informative(kT).has_value()) << "three";

  ThermalLevels garbage;
  for (double v : {-5.0, 200.0, std::nan(""), HUGE_VAL}) garbage.AddWork(v);
  EXPECT_FALSE(garbage.Informative(kT).has_value()) << "no board reads these: ignored";
}

TEST(ThermalHold, HoldsOnlyABoardThatBeganItsWaitHotAndStayedHot) {
  struct Row {
    ThermalReading r;
    bool hold;
    const char* why;
  };
  // now, onset, work, quiet, waited
  const Row rows[] = {
      {{65, 65, 65, 35, 30}, true, "as hot as it computes, not cooling: still working"},
      {{67, 64, 65, 35, 30}, true, "warming: drawing more than before, not a wait"},
      {{64.6, 65, 65, 35, 30}, true, "0.4 °C: a sensor's step, not cooling"},
      {{63.4, 65, 65, 35, 30}, false, "cooled 1.6 °C: it stopped computing"},
      {{48, 65, 65, 35, 30}, false, "a waiting board cooling toward its quiet level"},
      {{44, 44, 65, 35, 30}, false, "began its wait cool (after a save): nothing to cool from"},
      {{64, 64, 65, 35, 30}, true, "began within 1 °C of its working level"},
      {{NAN, 65, 65, 35, 30}, false, "no reading now"},
      {{65, NAN, 65, 35, 30}, false, "no reading at the onset"},
      {{65, 65, NAN, NAN, 30}, false, "no working level"},
  };
  for (const Row& row : rows) {
    const auto why = ThermalHold(row.r, "node0/GPU1", kT);
    EXPECT_EQ(why.has_value(), row.hold) << row.why;
    if (why) {
      EXPECT_NE(why->find("node0/GPU1"), std::string::npos) << *why;
      EXPECT_NE(why->find("cools"), std::string::npos) << *why;
    }
  }
  EXPECT_TRUE(CoolingReason(8, 66, 48, 35, kT).has_value());
  EXPECT_FALSE(CoolingReason(8, 66, 65, 35, kT).has_value()) << "1 °C is no cooling";
  EXPECT_FALSE(CoolingReason(0, 66, 48, 35, kT).has_value());
  EXPECT_DOUBLE_EQ(ThermalSmoothingWeight(1, kT), 0.1);
  EXPECT_DOUBLE_EQ(ThermalSmoothingWeight(30, kT), 1);
}

// ---- Through the binary ----

// 8 H100s at 1 s, logged by nvidia-smi with temperature.gpu: 20 s idle (a context), training at
// ~600 W for 120 s, then every rank pegged at 120 W (where an H100 waits in a collective) for
// 240 s. The temperature after the onset is `temp_after(s)` (s: seconds since it); before, it
// follows the load (35 °C idle, 66 °C training).
std::string EightH100s(const std::function<double(double)>& temp_after, bool save_first = false) {
  std::string out =
      "timestamp, index, name, power.draw [W], power.limit [W], utilization.gpu [%], "
      "memory.used [MiB], temperature.gpu\n";
  const int onset = save_first ? 200 : 140;
  for (int s = 0; s < onset + 240; ++s) {
    for (int g = 0; g < 8; ++g) {
      double power = 600 + 8 * std::sin(0.9 * s + g), util = 100, temp = 66, mem = 70000;
      if (s < 20) {
        power = 75, util = 0, temp = 35, mem = 520;
      } else if (save_first && s >= 140) {
        if (s < onset) {
          // Every rank saves its shard: no kernels, memory held, cooling.
          power = 90, util = 0, temp = 40 + 26 * std::exp(-(s - 140) / 20.0);
        } else {
          power = 120 + g, temp = 41;
        }
      } else if (s >= onset) {
        power = 120 + g;
        temp = temp_after(s - onset);
      }
      const int t = 1740830400 + s;  // 2025-03-01T12:00:00Z
      out += fmt::format(
          "2025/03/01 12:{:02d}:{:02d}.000, {}, NVIDIA H100 80GB HBM3, {:.1f} W, "
          "700.00 W, {:.0f} %, {:.0f} MiB, {:.0f}\n",
          (t / 60) % 60, t % 60, g, power, util, mem, std::round(temp));
    }
  }
  return out;
}

nlohmann::json Triage(const std::string& path, int want_exit) {
  const auto run = ::ww::testing::RunWattwatch("triage --json --fail-on-hang " + path, false);
  EXPECT_EQ(run.exit_code, want_exit) << run.output.substr(0, 3000);
  return nlohmann::json::parse(run.output, nullptr, false);
}

// Seconds from a hang's start to its confirmation (both within one hour: "...T12:MM:SS.mmm").
double ConfirmedAfterS(const nlohmann::json& j) {
  const auto& e = j["hang_episodes"][0];
  auto s = [](const std::string& iso) {
    return std::stod(iso.substr(14, 2)) * 60 + std::stod(iso.substr(17, 6));
  };
  return s(e["detected_at"].get<std::string>()) - s(e["start"].get<std::string>());
}

TEST(ThermalEvidence, ABoardAsHotAsItComputesIsNotConfirmedWaiting) {
  ::ww::testing::TempDir tmp;
  // Power says every rank waits at 120 W; the boards stay at 66 °C for 4 minutes, as hot as they
  // ran training. One of the two is wrong, and a kill on it would be a false hang.
  const auto j = Triage(tmp.Write("hot.csv", EightH100s([](double) { return 66; })), 0);
  ASSERT_FALSE(j.is_discarded());
  EXPECT_TRUE(j["hang_episodes"].empty()) << j["hang_episodes"].dump(1);
  EXPECT_EQ(j["hang_verdict"], "unknown");
  const std::string why = j.value("hang_unknown", "");
  EXPECT_NE(why.find("as hot as when it computed (66 °C; 35 °C without kernels)"),
            std::string::npos)
      << why;
  EXPECT_NE(why.find("7 more GPUs likewise"), std::string::npos) << why;
  const auto text = ::ww::testing::RunWattwatch("triage " + tmp.path() + "/hot.csv", false);
  EXPECT_NE(text.output.find("Hang unknown: the log ends during"), std::string::npos)
      << text.output;
}

TEST(ThermalEvidence, BoardsThatCoolAreConfirmedWithTheCoolingAsAReason) {
  ::ww::testing::TempDir tmp;
  // A real wait: the boards cool toward ~42 °C (time constant 20 s).
  const auto j = Triage(
      tmp.Write("cooling.csv", EightH100s([](double s) { return 42 + 24 * std::exp(-s / 20.0); })),
      3);
  ASSERT_EQ(j["hang_episodes"].size(), 1u) << j.dump(1).substr(0, 2000);
  EXPECT_EQ(j["hang_verdict"], "confirmed");
  EXPECT_LE(ConfirmedAfterS(j), 31);
  EXPECT_NE(j["hang_episodes"][0]["reasons"].dump().find("cooled from 66 °C to"), std::string::npos)
      << j["hang_episodes"][0]["reasons"].dump(1);
}

TEST(ThermalEvidence, ASlowCoolingBoardIsConfirmedOnTimeAVerySlowOneLater) {
  ::ww::testing::TempDir tmp;
  // Time constant 5 minutes: 2.3 °C of cooling in the first 30 s, enough.
  const auto slow = Triage(
      tmp.Write("slow.csv", EightH100s([](double s) { return 42 + 24 * std::exp(-s / 300.0); })),
      3);
  ASSERT_EQ(slow["hang_episodes"].size(), 1u) << slow.dump(1).substr(0, 2000);
  EXPECT_LE(ConfirmedAfterS(slow), 31);
  // 20 minutes (no real board: a generator's lag): held until it has cooled 1.5 °C, then
  // confirmed. Temperature delays a confirmation; it never drops a wait that cools.
  const auto glacial =
      Triage(tmp.Write("glacial.csv",
                       EightH100s([](double s) { return 42 + 24 * std::exp(-s / 1200.0); })),
             3);
  ASSERT_EQ(glacial["hang_episodes"].size(), 1u) << glacial.dump(1).substr(0, 2000);
  const double after = ConfirmedAfterS(glacial);
  EXPECT_GT(after, 40) << "held while it had not cooled";
  EXPECT_LT(after, 150) << "and confirmed once it had";
}

TEST(ThermalEvidence, ATemperatureThatSaysNothingChangesNothing) {
  ::ww::testing::TempDir tmp;
  // A column stuck at one value (a logger's placeholder): no evidence; the hang stands on power.
  std::string flat = EightH100s([](double) { return 50; });
  for (const std::string from : {", 66\n", ", 35\n"}) {
    for (size_t p = flat.find(from); p != std::string::npos; p = flat.find(from, p)) {
      flat.replace(p, from.size(), ", 50\n");
    }
  }
  const auto j = Triage(tmp.Write("flat.csv", flat), 3);
  ASSERT_EQ(j["hang_episodes"].size(), 1u);
  EXPECT_LE(ConfirmedAfterS(j), 31);
  EXPECT_EQ(j["hang_episodes"][0]["reasons"].dump().find("cooled"), std::string::npos);
}

TEST(ThermalEvidence, AWaitAfterASaveHasNothingToCoolFrom) {
  ::ww::testing::TempDir tmp;
  // Every rank saves for 60 s (cooling to ~41 °C), then every rank waits at 41 °C: confirmed on
  // time; the temperature neither holds it nor is given as a reason.
  const auto j = Triage(tmp.Write("save.csv", EightH100s([](double) { return 41; }, true)), 3);
  ASSERT_EQ(j["hang_episodes"].size(), 1u) << j.dump(1).substr(0, 2000);
  EXPECT_LE(ConfirmedAfterS(j), 31);
}

}  // namespace
}  // namespace ww::triage
