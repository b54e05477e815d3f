// The classifier against the simulator's ground truth, over every scenario kind, four GPU models
// (one absent from the model table), power caps, and 100 ms, 1 s, 15 s and 30 s sampling (the
// last two as dcgm-exporter and W&B log, with and without DCGM's activity counters).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>

#include "telemetry/gpu_models.h"
#include "triage/evidence.h"
#include "triage/scenario_eval.h"

namespace ww::testing {
namespace {

struct Case {
  std::string scenario;
  std::string model;
  int64_t interval_ms;
  double power_cap_w;
  uint64_t seed;
  bool activity = false;  // samples carry DCGM's activity counters (as dcgm-exporter logs them)
};

std::vector<Case> AllCases() {
  std::vector<Case> cases;
  // The fourth is a board the table does not know: triage works from its power.limit alone.
  const std::vector<std::string> models = {"h100", "a100", "b300", "Acme Tensor X1:600:30"};
  uint64_t seed = 11;
  // Scenarios added later draw their seeds after all the others (`later`), so the cases
  // that were there keep theirs.
  const std::vector<std::string> later = {"host-crash", "eval-pass"};
  auto is_later = [&](const std::string& s) {
    return std::find(later.begin(), later.end(), s) != later.end();
  };
  for (const auto& s : sim::ScenarioNames()) {
    if (is_later(s)) continue;
    for (const auto& m : models) {
      // nvidia-smi at 100 ms; at 1 s, 15 s and 30 s both without activity counters (nvidia-smi,
      // W&B) and with them (dcgm-exporter, dcgmi dmon).
      cases.push_back({s, m, 100, 0, seed++, false});
      for (int64_t iv : {1000, 15000, 30000}) {
        for (bool act : {false, true}) cases.push_back({s, m, iv, 0, seed++, act});
      }
    }
  }
  // Boards whose waits were measured in public hang threads (gpu_models.cc): a V100 at ~23 % of
  // its limit, a T4 at 57 %, a GB200 at ~21 %. Every scenario at 1 s; the hangs, a save, healthy
  // work and steady mid-power compute also at 100 ms, 15 s and 30 s.
  for (const std::string m : {"v100", "t4", "gb200"}) {
    for (const auto& s : sim::ScenarioNames()) {
      if (!is_later(s)) cases.push_back({s, m, 1000, 0, seed++, false});
    }
    for (const std::string s : {"hang-spin", "hang-exit", "partial-hang", "checkpoint-rank0",
                                "healthy", "steady-midpower"}) {
      for (int64_t iv : {100, 15000, 30000}) cases.push_back({s, m, iv, 0, seed++, false});
    }
  }
  // Power caps throttle compute: a capped H100 and a capped B300.
  for (const auto& s : {"healthy", "hang-spin", "checkpoint-rank0", "starvation"}) {
    cases.push_back({s, "h100", 100, 450, seed++, false});
    cases.push_back({s, "b300", 1000, 800, seed++, true});
  }
  // The later scenarios, as the others: every model and interval, and the measured boards at 1 s.
  for (const auto& s : later) {
    for (const auto& m : models) {
      cases.push_back({s, m, 100, 0, seed++, false});
      for (int64_t iv : {1000, 15000, 30000}) {
        for (bool act : {false, true}) cases.push_back({s, m, iv, 0, seed++, act});
      }
    }
    for (const std::string m : {"v100", "t4", "gb200"}) cases.push_back({s, m, 1000, 0, seed++});
  }
  // AMD and Intel boards (issue 33): an MI300X and a Gaudi 3 at 1 s (the MI250X: below).
  for (const std::string m : {"mi300x", "gaudi3"}) {
    for (const std::string s : {"healthy", "hang-spin", "hang-exit", "checkpoint-rank0"}) {
      cases.push_back({s, m, 1000, 0, seed++, false});
    }
  }
  return cases;
}

class ScenarioTest : public ::testing::TestWithParam<Case> {};

TEST_P(ScenarioTest, MatchesGroundTruth) {
  const Case& c = GetParam();
  sim::ScenarioOptions o;
  o.model = c.model;
  o.interval_ms = c.interval_ms;
  o.power_cap_w = c.power_cap_w;
  o.seed = c.seed;
  o.activity_counters = c.activity;
  auto config = sim::MakeScenario(c.scenario, o);
  ASSERT_TRUE(config.ok()) << config.status().message();
  const ScenarioScore s = RunAndScore(*config);
  std::string per_phase;
  for (const auto& [k, v] : s.f1_by_phase) per_phase += fmt::format(" {}={:.3f}", k, v);
  SCOPED_TRACE(
      Describe(*config) + ": F1" + per_phase + " | mismatches:" + s.confusion +
      fmt::format(" | comm share {:.3f} vs truth {:.3f}", s.comm_share, s.truth_comm_share));

  RecordProperty("macro_f1", fmt::format("{:.4f}", s.macro_f1));
  EXPECT_GE(s.macro_f1, 0.95);
  // At 30 s sampling a scenario of ~40 min has ~80 ticks of 8 GPUs; a one-GPU job has an eighth.
  const bool one_gpu = config->hosts * config->gpus_per_host == 1;
  EXPECT_GT(s.scored_samples,
            c.interval_ms >= 15000 ? (one_gpu ? 20 : 200) : (one_gpu ? 150 : 1000));
  // Hangs: every one found, confirmed within 30 s + 2 intervals of its start (a stall off the GPU
  // and a partial hang: within 60 s + 2 intervals of the longest checkpoint allowed), with the
  // right culprits; and no hang where there is none.
  const int64_t slack_ms = std::max<int64_t>(5000, 2 * c.interval_ms);
  ASSERT_EQ(s.found.size(), s.truth.size());
  const int64_t allowed_ms =
      (config->max_checkpoint_s > 0 ? static_cast<int64_t>((config->max_checkpoint_s + 60) * 1000)
                                    : 30000) +
      2 * c.interval_ms;
  for (size_t i = 0; i < s.truth.size(); ++i) {
    const auto& f = s.found[i];
    const auto& t = s.truth[i];
    EXPECT_LE(f.detected_at_ms, t.start_ms + allowed_ms);
    EXPECT_NEAR(static_cast<double>(f.start_ms), static_cast<double>(t.start_ms), slack_ms);
    EXPECT_NEAR(static_cast<double>(f.end_ms), static_cast<double>(t.end_ms), slack_ms);
    EXPECT_EQ(f.culprits, t.culprits);
    EXPECT_FALSE(f.reasons.empty());
  }
  // Stragglers: the slow rank named, how much slower, and why when its clocks say so; nobody
  // else, and nobody in a scenario without one.
  std::string named;
  for (const auto& st : s.stragglers) {
    named += fmt::format(" {}/{} x{:.2f} '{}'", st.key.host, st.key.gpu, st.slowdown, st.throttle);
  }
  // At 15-30 s the power split cannot time the ranks: DCGM's activity counters do (averaged over
  // the interval), and without them nobody is named and the summary says why.
  const bool coarse_blind = c.interval_ms > 2000 && !c.activity;
  // A board that waits as high as collectives draw (a T4): power cannot time the ranks.
  const auto table_board = LookupGpuModel(config->model.name);
  const bool waits_high =
      table_board && table_board->spin_hi_w >=
                         table_board->idle_w + 0.33 * (table_board->tdp_w - table_board->idle_w);
  const bool board_blind = !c.activity && waits_high;
  if (board_blind) {
    EXPECT_TRUE(s.stragglers.empty()) << named;
    if (config->straggler_rank >= 0) {
      EXPECT_NE(s.stragglers_unknown.find("waits in a collective"), std::string::npos)
          << s.stragglers_unknown;
    }
  } else if (config->straggler_rank >= 0 && coarse_blind) {
    EXPECT_TRUE(s.stragglers.empty()) << named;
    EXPECT_NE(s.stragglers_unknown.find("without DCGM activity counters"), std::string::npos)
        << s.stragglers_unknown;
  } else if (config->straggler_rank >= 0) {
    // The figures for the record (slowdown measured against the truth).
    std::printf("straggler %s: truth x%.3f, named:%s\n", Describe(*config).c_str(),
                config->straggler_slowdown, named.c_str());
    EXPECT_EQ(s.stragglers_unknown, "");
    ASSERT_EQ(s.stragglers.size(), 1u) << named;
    const int rank = s.stragglers[0].key.host * config->gpus_per_host + s.stragglers[0].key.gpu;
    EXPECT_EQ(rank, config->straggler_rank) << named;
    EXPECT_NEAR(s.stragglers[0].slowdown / config->straggler_slowdown, 1, 0.2) << named;
    EXPECT_EQ(s.stragglers[0].throttle.find("power cap") != std::string::npos,
              config->straggler_throttled)
        << named;
  } else if (config->straggler_rank < 0) {
    EXPECT_TRUE(s.stragglers.empty()) << named;
  }
  // The communication share is measured where the sampling resolves steps, and said to be
  // unknown (with the reason) where it does not, never a wrong number.
  // A board that waits above the level collectives draw (a T4) cannot have its split measured.
  if (waits_high) {
    EXPECT_NE(s.comm_share_unknown.find("waits in a collective"), std::string::npos)
        << s.comm_share_unknown;
  } else if (c.interval_ms >= 15000) {
    EXPECT_NE(s.comm_share_unknown.find("not sampled"), std::string::npos) << s.comm_share_unknown;
  } else {
    EXPECT_EQ(s.comm_share_unknown, "");
    if (s.truth_comm_share > 0) {
      // A straggler's peers wait in short spins between compute and the collective: three power
      // levels within one ~1 s average blur the split a little more.
      EXPECT_NEAR(s.comm_share, s.truth_comm_share, config->straggler_rank >= 0 ? 0.08 : 0.05);
    }
  }
  // A job of one GPU has no peer to talk to.
  if (config->hosts * config->gpus_per_host == 1) {
    for (const auto& g : s.gpus) {
      EXPECT_EQ(g.seconds[static_cast<size_t>(GpuState::kCommunication)], 0.0);
    }
  }
  // Every field the log lacks is missing from the evidence, and something is said about it.
  const std::map<std::string, std::string> signal_of = {
      {"memory.used", "memory"}, {"power.draw", "power"}, {"utilization.gpu", "utilization"}};
  for (const auto& g : s.gpus) {
    const triage::GpuEvidence e = triage::DescribeEvidence(g.signals, g.samples, {});
    for (const std::string& dropped : config->drop_fields) {
      auto it = signal_of.find(dropped);
      if (it == signal_of.end()) continue;
      EXPECT_EQ(std::count(e.signals.begin(), e.signals.end(), it->second), 0) << dropped;
      // Without power, DCGM's activity counters still tell a spin from compute: then nothing is
      // indistinct, but the evidence names what stood in for the missing field.
      const bool activity_stands_in =
          dropped == "power.draw" &&
          std::count(e.signals.begin(), e.signals.end(), std::string("activity")) == 1;
      if (!activity_stands_in) {
        EXPECT_FALSE(e.cannot_tell_apart.empty()) << dropped;
      }
      EXPECT_EQ(std::count(e.missing.begin(), e.missing.end(), dropped), 1) << dropped;
    }
  }
}

// An MI250X reads its package's power on the first GCD and none on the second: the hang is still
// found from the first GCDs' power (and every GCD's utilization), over its whole span. What power
// cannot give on the second GCDs (their culprit, their compute/communication split) is not
// asserted: the package's reading would have to be shared with the sibling, which triage does
// not do yet.
TEST(ScenarioMi250x, HangFoundWithTheSecondGcdWithoutPower) {
  for (const std::string scenario : {"hang-spin", "hang-exit"}) {
    SCOPED_TRACE(scenario);
    sim::ScenarioOptions o;
    o.model = "mi250x";
    o.interval_ms = 1000;
    o.seed = 7;
    auto config = sim::MakeScenario(scenario, o);
    ASSERT_TRUE(config.ok()) << config.status().message();
    const ScenarioScore s = RunAndScore(*config);
    ASSERT_EQ(s.found.size(), s.truth.size());
    for (size_t i = 0; i < s.truth.size(); ++i) {
      EXPECT_NEAR(static_cast<double>(s.found[i].start_ms),
                  static_cast<double>(s.truth[i].start_ms), 5000);
      EXPECT_NEAR(static_cast<double>(s.found[i].end_ms), static_cast<double>(s.truth[i].end_ms),
                  5000);
    }
    EXPECT_GE(s.f1_by_phase.at("hang"), 0.9);
  }
}

INSTANTIATE_TEST_SUITE_P(Sim, ScenarioTest, ::testing::ValuesIn(AllCases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           std::string n =
                               fmt::format("{}_{}_{}ms_cap{}{}", info.param.scenario,
                                           info.param.model.substr(0, 4), info.param.interval_ms,
                                           static_cast<int>(info.param.power_cap_w),
                                           info.param.activity ? "_dcgm" : "");
                           for (char& ch : n) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return n;
                         });

}  // namespace
}  // namespace ww::testing
