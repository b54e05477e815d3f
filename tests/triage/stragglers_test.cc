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
