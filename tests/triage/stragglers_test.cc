// FindStragglers: table tests of "consistently slower, the others wait for it", chunk by chunk,
// with the clock-event reasons that explain it.
#include "triage/stragglers.h"

#include <gtest/gtest.h>

namespace ww::triage {
namespace {

// Ranks 0..n-1 over `chunks` chunks of 60 s: each computes `compute_s` and waits the rest.
std::vector<RankTiming> Job(const std::vector<double>& compute_s, int chunks, double train_s = 60) {
  std::vector<RankTiming> out;
  for (int c = 0; c < chunks; ++c) {
    for (size_t g = 0; g < compute_s.size(); ++g) {
      RankTiming r;
      r.key = {0, static_cast<uint16_t>(g)};
      r.chunk = c;
      r.compute_s = compute_s[g] * train_s / 60;
      r.wait_s = train_s - r.compute_s;
      out.push_back(r);
    }
  }
  return out;
}

struct Row {
  const char* why;
  std::vector<RankTiming> chunks;
  std::vector<int> want_gpus;
  double want_slowdown;  // of the first
};

TEST(StragglersTest, Table) {
  auto slow_in_one_chunk = Job({40, 40, 40, 40}, 4);
  slow_in_one_chunk[3 * 4 + 2].compute_s = 56;  // rank 2 slower in the last chunk only
  slow_in_one_chunk[3 * 4 + 2].wait_s = 4;
  const std::vector<Row> rows = {
      {"all ranks alike: nobody", Job({40, 40, 40, 40}, 4), {}, 0},
      {"rank 2 computes 1.3x as long, the others wait for it", Job({40, 40, 52, 40}, 4), {2}, 1.3},
      {"silicon varies by a few %: not a straggler", Job({40, 41, 42, 40}, 4), {}, 0},
      {"slow in one chunk of four (a hang's late rank): not consistent", slow_in_one_chunk, {}, 0},
      {"too little training to say", Job({40, 40, 52, 40}, 1, 20), {}, 0},
      {"one GPU has no peer", Job({52}, 4), {}, 0},
      {"two stragglers", Job({40, 51, 52, 40, 40, 40}, 3), {1, 2}, 1.275},
      {"slower in two chunks only: not enough to call it consistent",
       Job({40, 40, 52, 40}, 2),
       {},
       0},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.why);
    const auto got = FindStragglers(r.chunks);
    ASSERT_EQ(got.size(), r.want_gpus.size());
    for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i].key.gpu, r.want_gpus[i]);
    if (!got.empty()) {
      EXPECT_NEAR(got[0].slowdown, r.want_slowdown, 0.01);
      EXPECT_EQ(got[0].throttle, "") << "no clock reasons logged";
    }
  }
}

TEST(StragglersTest, ARankWithoutPowerIsNeverNamed) {
  // Rank 5's power.draw reads [N/A]: its busy samples default to all compute. Timing it from
  // that would name it 2.5x slower than its peers; without a power split it times nothing.
  StragglerTracker t;
  for (int64_t at = 0; at < 600'000; at += 100) {
    for (uint16_t g = 0; g < 8; ++g) {
      const bool no_power = g == 5;
      t.AddTraining({0, g}, at, no_power ? 0.1 : 0.04, no_power ? 0 : 0.06, {}, !no_power);
    }
  }
  EXPECT_TRUE(t.Find().empty());
}

TEST(StragglersTest, SlowRankThatDoesNotMakeOthersWaitIsNotAStraggler) {
  // Rank 2 computes longer but also waits as long as the others: the step is not its to hold.
  auto chunks = Job({40, 40, 40, 40}, 4, 60);
  for (auto& r : chunks) {
    if (r.key.gpu == 2) r.compute_s = 52;  // its total is longer; its wait share unchanged
  }
  EXPECT_TRUE(FindStragglers(chunks).empty());
}

TEST(StragglersTest, ThrottlingIsNamedFromClockReasons) {
  StragglerTracker power, thermal, neither;
  for (int64_t t = 0; t < 240'000; t += 1000) {
    for (uint16_t g = 0; g < 4; ++g) {
      const bool slow = g == 1;
      for (StragglerTracker* tr : {&power, &thermal, &neither}) {
        tr->AddTraining({0, g}, t, slow ? 0.85 : 0.6, slow ? 0.15 : 0.4);
      }
      power.AddClockReasons({0, g}, t, slow ? kClockReasonSwPowerCap : 0, true);
      thermal.AddClockReasons({0, g}, t, slow ? kClockReasonHwThermal : 0, true);
      // Every board power capped alike (a cluster-wide cap) explains nobody's slowdown.
      neither.AddClockReasons({0, g}, t, kClockReasonSwPowerCap, true);
    }
  }
  for (auto [tracker, want] :
       {std::pair{&power, "power cap"}, {&thermal, "thermal"}, {&neither, ""}}) {
    SCOPED_TRACE(want);
    const auto got = tracker->Find();
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].key.gpu, 1);
    EXPECT_NEAR(got[0].slowdown, 0.85 / 0.6, 0.01);
    if (*want) {
      EXPECT_NE(got[0].throttle.find(want), std::string::npos) << got[0].throttle;
    } else {
      EXPECT_EQ(got[0].throttle, "");
    }
  }
}

TEST(StragglersTest, ClockReasonsOutsideWorkAreNotCounted) {
  StragglerTracker t;
  t.AddClockReasons({0, 0}, 0, kClockReasonSwPowerCap, /*busy=*/false);
  t.AddClockReasons({0, 0}, 0, std::nullopt, true);
  EXPECT_TRUE(t.timings().empty());
}

}  // namespace
}  // namespace ww::triage

namespace ww::triage {
namespace {

// Coarse sampling (30 s, as dcgm-exporter scrapes) of 8 ranks over 6 minutes: rank `slow`
// computes `slowdown` times as long per step; the others wait in the collective with NCCL's
// floor (one CTA per channel resident: SM ~0.15, tensor 0, DRAM ~0). Each interval's counters
// are the step's compute share times the compute level plus the rest times the floor.
struct CoarseJob {
  int slow = 3;
  double slowdown = 1.3;
  double peer_compute_share = 0.55;  // of each step, on a rank that is not slow
  bool tensor = true, dram = true, sm = true;
  double engine = 1.0;  // GR engine active on every rank (a collective's kernel keeps it busy)
  double tensor_compute = 0.6, sm_compute = 0.9, sm_floor = 0.15, dram_compute = 0.45;
  // The slow rank's tensor level while computing, over the others' (a memory-bound straggler's
  // tensor pipe stalls: its level drops, its SM activity does not).
  double slow_tensor_factor = 1.0;
};

StragglerTracker Feed(const CoarseJob& j, double interval_s = 30) {
  StragglerTracker t;
  const int64_t dt_ms = static_cast<int64_t>(interval_s * 1000);
  for (int64_t at = 0; at < 360'000; at += dt_ms) {
    for (uint16_t g = 0; g < 8; ++g) {
      const bool slow = g == j.slow;
      const double b = j.peer_compute_share * (slow ? j.slowdown : 1);
      ActivityReading a;
      if (j.tensor) a.tensor = j.tensor_compute * b * (slow ? j.slow_tensor_factor : 1);
      if (j.sm) a.sm = j.sm_compute * b + j.sm_floor * (1 - b);
      if (j.dram) a.dram = j.dram_compute * b + 0.005 * (1 - b);
      a.engine = j.engine;
      // The engine's power split of a coarse sample is a guess; the tracker must not use it.
      t.AddTraining({0, g}, at, 0.9 * interval_s, 0.1 * interval_s, a);
    }
  }
  return t;
}

TEST(StragglersActivityTest, NamedFromIntervalAveragedCounters) {
  const CoarseJob job;
  const auto got = Feed(job).Find();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].key.gpu, 3);
  EXPECT_TRUE(got[0].from_activity);
  // Tensor activity has no floor in a collective: its ratio is the slowdown itself.
  EXPECT_NEAR(got[0].slowdown, 1.3, 0.01);
  EXPECT_EQ(Feed(job).UnknownReason(), "");
}

TEST(StragglersActivityTest, SmFloorUnderstatesButNeverInventsAStraggler) {
  CoarseJob sm_only;
  sm_only.tensor = sm_only.dram = false;
  const auto got = Feed(sm_only).Find();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].key.gpu, 3);
  // (0.15 + 0.75 * 0.715) / (0.15 + 0.75 * 0.55) = 1.22: below the true 1.30, within 10 %.
  const double want = (0.15 + 0.75 * 0.715) / (0.15 + 0.75 * 0.55);
  EXPECT_NEAR(got[0].slowdown, want, 0.01);
  EXPECT_LT(got[0].slowdown, 1.3);
  // A rank 8 % slower (silicon, not a straggler) reads ~6 % higher through the floor: nobody.
  CoarseJob mild = sm_only;
  mild.slowdown = 1.08;
  EXPECT_TRUE(Feed(mild).Find().empty());
  // The floor does not make a rank of an even job a straggler.
  CoarseJob even;
  even.slowdown = 1.0;
  EXPECT_TRUE(Feed(even).Find().empty());
}

TEST(StragglersActivityTest, StallsTheTensorPipeDoesNotSeeShowInSmActivity) {
  // A memory-bound straggler: its tensor level falls as its compute stretches, so the tensor
  // ratio reads ~1.0; SM activity (warps resident, stalled or not) still shows it: the estimate
  // is the best of the lower bounds.
  CoarseJob mem;
  mem.slow_tensor_factor = 1 / 1.3;
  const auto got = Feed(mem).Find();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].key.gpu, 3);
  EXPECT_GT(got[0].slowdown, 1.15);
  EXPECT_LE(got[0].slowdown, 1.3 + 0.01);
}

TEST(StragglersActivityTest, NoTensorMathFallsBackToOtherCounters) {
  // FP32 training: tensor activity ~0 on every rank is noise, not a signal.
  CoarseJob fp32;
  fp32.tensor_compute = 0.001;
  const auto got = Feed(fp32).Find();
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].key.gpu, 3);
  EXPECT_GT(got[0].slowdown, 1.15);
}

TEST(StragglersActivityTest, BusierRankNextToIdlePeersHoldsNobodyUp) {
  // The others' engine is idle off compute (no collective kernel waiting): not waiting for it.
  CoarseJob idle_peers;
  idle_peers.engine = 0.6;
  EXPECT_TRUE(Feed(idle_peers).Find().empty());
}

TEST(StragglersActivityTest, CoarseWithoutCountersSaysWhyInsteadOfSilence) {
  StragglerTracker t;
  for (int64_t at = 0; at < 360'000; at += 30'000) {
    for (uint16_t g = 0; g < 8; ++g) t.AddTraining({0, g}, at, g == 3 ? 27 : 20, g == 3 ? 3 : 10);
  }
  EXPECT_TRUE(t.Find().empty()) << "one power reading per 30 s times nothing";
  const std::string why = t.UnknownReason();
  EXPECT_NE(why.find("every 30 s without DCGM activity counters"), std::string::npos) << why;
  // Fine sampling and one-GPU jobs have nothing unknown to say.
  EXPECT_EQ(Feed(CoarseJob{}, 1.0).UnknownReason(), "");
  StragglerTracker one;
  for (int64_t at = 0; at < 360'000; at += 30'000) one.AddTraining({0, 0}, at, 20, 10);
  EXPECT_EQ(one.UnknownReason(), "");
}

}  // namespace
}  // namespace ww::triage
