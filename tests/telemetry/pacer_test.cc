// The pacer (src/telemetry/pacer.h) on a ManualClock, one named case each: live ticks on time, a
// little late, late by whole ticks (skipped and counted, grid phase kept); replay at a speed
// (waits 1/speed of the sample gaps), as fast as possible, late and out-of-order batches; and the
// sliced wait that sees a stop flag.
#include "telemetry/pacer.h"

#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "core/clock.h"

namespace ww {
namespace {

constexpr int64_t kMs = 1'000'000;

// One live tick the way the loops run it: wait until due, start, do `work_ms` of work.
TickStart LiveTick(ManualClock& clock, Pacer& pacer, int64_t work_ms) {
  EXPECT_TRUE(WaitUntil(clock, pacer.DueNs(), 50 * kMs, nullptr));
  const TickStart t = pacer.Begin();
  clock.AdvanceNs(work_ms * kMs);
  return t;
}

TEST(PacerLive, FirstTickIsDueAtOnce) {
  ManualClock clock;
  clock.AdvanceNs(7 * kMs);
  Pacer pacer = Pacer::Live(clock, 100);
  EXPECT_TRUE(pacer.live());
  EXPECT_EQ(pacer.DueNs(), 7 * kMs);
}

TEST(PacerLive, OnTimeTicksFollowTheGridAndDropNothing) {
  ManualClock clock;
  Pacer pacer = Pacer::Live(clock, 100);
  for (int i = 0; i < 5; ++i) {
    const TickStart t = LiveTick(clock, pacer, 10);
    EXPECT_EQ(t.lateness_ns, 0) << "tick " << i;
    EXPECT_EQ(t.dropped_ticks, 0u) << "tick " << i;
  }
  // Ticks started at 0, 100, ..., 400 ms; the sixth is due at 500 ms.
  EXPECT_EQ(pacer.DueNs(), 500 * kMs);
  EXPECT_EQ(pacer.ticks(), 5u);
  EXPECT_EQ(pacer.dropped_ticks(), 0u);
}

TEST(PacerLive, LateByLessThanATickKeepsTheGridAndDropsNothing) {
  ManualClock clock;
  Pacer pacer = Pacer::Live(clock, 100);
  LiveTick(clock, pacer, 160);  // the tick due at 0 runs until 160 ms: the one due at 100 is late
  const TickStart t = pacer.Begin();
  EXPECT_EQ(t.lateness_ns, 60 * kMs);
  EXPECT_EQ(t.dropped_ticks, 0u);
  // The next one stays on the grid (200 ms), not 100 ms after the late start.
  EXPECT_EQ(pacer.DueNs(), 200 * kMs);
}

TEST(PacerLive, LateByThreeTicksSkipsThemAndCountsThreeDropped) {
  ManualClock clock;
  Pacer pacer = Pacer::Live(clock, 100);
  LiveTick(clock, pacer, 450);  // a stall: the tick due at 100 ms starts at 450 ms
  const TickStart t = pacer.Begin();
  EXPECT_EQ(t.lateness_ns, 350 * kMs);
  EXPECT_EQ(t.dropped_ticks, 3u) << "the grid points 200, 300 and 400 ms were overrun";
  EXPECT_EQ(pacer.dropped_ticks(), 3u);
  // No burst: the next tick is the first grid point still ahead.
  EXPECT_EQ(pacer.DueNs(), 500 * kMs);
  const TickStart next = LiveTick(clock, pacer, 10);
  EXPECT_EQ(next.lateness_ns, 0);
  EXPECT_EQ(next.dropped_ticks, 0u);
}

TEST(PacerLive, LateByExactlyOneTickDropsThatTick) {
  ManualClock clock;
  Pacer pacer = Pacer::Live(clock, 100);
  LiveTick(clock, pacer, 200);  // the tick due at 100 starts when the one due at 200 is due
  const TickStart t = pacer.Begin();
  EXPECT_EQ(t.lateness_ns, 100 * kMs);
  EXPECT_EQ(t.dropped_ticks, 1u);
  EXPECT_EQ(pacer.DueNs(), 300 * kMs);
}

TEST(PacerLive, DroppedTicksAddUpOverARun) {
  ManualClock clock;
  Pacer pacer = Pacer::Live(clock, 100);
  // Work per tick in ms, with two stalls: 350 ms overruns two grid points, 220 ms one.
  const std::vector<int64_t> work_ms = {10, 10, 350, 10, 10, 220, 10, 10};
  uint64_t dropped = 0;
  for (int64_t w : work_ms) dropped += LiveTick(clock, pacer, w).dropped_ticks;
  EXPECT_EQ(dropped, 2u + 1u);
  EXPECT_EQ(pacer.dropped_ticks(), 3u);
  EXPECT_EQ(pacer.ticks(), work_ms.size());
  // Every tick ran, plus the dropped ones, covers the grid: 8 + 3 grid points from 0 ms.
  EXPECT_EQ(pacer.DueNs(), static_cast<int64_t>(work_ms.size() + 3) * 100 * kMs);
}

TEST(PacerLive, IntervalBelowOneMsIsOneMs) {
  ManualClock clock;
  Pacer pacer = Pacer::Live(clock, 0);
  EXPECT_EQ(pacer.interval_ns(), kMs);
  pacer.Begin();
  EXPECT_EQ(pacer.DueNs(), kMs);
}

// Replays batches stamped sample_ms, waiting for each; returns the clock at each Begin().
std::vector<int64_t> ReplayAt(ManualClock& clock, Pacer& pacer,
                              const std::vector<int64_t>& sample_ms) {
  std::vector<int64_t> started;
  for (int64_t t : sample_ms) {
    EXPECT_TRUE(WaitUntil(clock, pacer.DueNs(t), 50 * kMs, nullptr));
    const TickStart s = pacer.Begin();
    EXPECT_EQ(s.lateness_ns, 0);
    EXPECT_EQ(s.dropped_ticks, 0u);
    started.push_back(clock.NowMonotonicNs());
  }
  return started;
}

TEST(PacerReplay, AtSpeed20SleepsOneTwentiethOfTheSampleGaps) {
  ManualClock clock;
  clock.AdvanceNs(1000 * kMs);
  Pacer pacer = Pacer::Replay(clock, 20);
  EXPECT_FALSE(pacer.live());
  // Gaps of 100 ms, 100 ms, 2 s and 40 ms of sample time.
  const auto started = ReplayAt(clock, pacer, {50'000, 50'100, 50'200, 52'200, 52'240});
  const std::vector<int64_t> want = {1000 * kMs, 1005 * kMs, 1010 * kMs, 1110 * kMs, 1112 * kMs};
  EXPECT_EQ(started, want);
}

TEST(PacerReplay, AtSpeedOneFollowsSampleTime) {
  ManualClock clock;
  Pacer pacer = Pacer::Replay(clock, 1);
  const auto started = ReplayAt(clock, pacer, {10'000, 10'250, 11'000});
  const std::vector<int64_t> want = {0, 250 * kMs, 1000 * kMs};
  EXPECT_EQ(started, want);
}

TEST(PacerReplay, SpeedZeroIsAsFastAsPossible) {
  ManualClock clock;
  Pacer pacer = Pacer::Replay(clock, 0);
  EXPECT_EQ(pacer.speed(), 0);
  const auto started = ReplayAt(clock, pacer, {0, 1'000, 3'600'000, 7'200'000});
  EXPECT_EQ(started, std::vector<int64_t>(4, 0)) << "no batch waits";
}

TEST(PacerReplay, NegativeOrNanSpeedIsAsFastAsPossible) {
  ManualClock clock;
  for (double speed : {-3.0, std::numeric_limits<double>::quiet_NaN()}) {
    Pacer pacer = Pacer::Replay(clock, speed);
    EXPECT_EQ(pacer.speed(), 0);
    EXPECT_EQ(pacer.DueNs(0), clock.NowMonotonicNs());
    EXPECT_EQ(pacer.DueNs(60'000), clock.NowMonotonicNs());
  }
}

TEST(PacerReplay, ALateBatchIsDeliveredAtOnceAndNothingIsDropped) {
  ManualClock clock;
  Pacer pacer = Pacer::Replay(clock, 10);
  pacer.DueNs(0);
  pacer.Begin();
  clock.AdvanceNs(500 * kMs);  // the consumer took 500 ms over a batch
  // The batch 1 s of sample time later was due 100 ms after the first: 400 ms late.
  EXPECT_EQ(pacer.DueNs(1'000), 100 * kMs);
  const TickStart t = pacer.Begin();
  EXPECT_EQ(t.lateness_ns, 400 * kMs);
  EXPECT_EQ(t.dropped_ticks, 0u);
  EXPECT_EQ(pacer.dropped_ticks(), 0u);
  // Later batches stay anchored to the first one: sample time does not shift.
  EXPECT_EQ(pacer.DueNs(10'000), 1000 * kMs);
}

TEST(PacerReplay, SampleTimeGoingBackIsDueAtOnce) {
  ManualClock clock;
  Pacer pacer = Pacer::Replay(clock, 2);
  EXPECT_EQ(pacer.DueNs(5'000), 0);
  pacer.Begin();
  clock.AdvanceNs(10 * kMs);
  // A second host's log starting a little earlier: due "before" the anchor, so not waited for.
  const int64_t due = pacer.DueNs(4'000);
  EXPECT_EQ(due, -500 * kMs);
  EXPECT_TRUE(WaitUntil(clock, due, 50 * kMs, nullptr));
  EXPECT_EQ(clock.NowMonotonicNs(), 10 * kMs);
  EXPECT_EQ(pacer.Begin().lateness_ns, 510 * kMs);
}

TEST(PacerReplay, HugeSampleGapsDoNotOverflow) {
  ManualClock clock;
  Pacer pacer = Pacer::Replay(clock, 0.01);
  pacer.DueNs(INT64_MIN / 4);
  const int64_t due = pacer.DueNs(INT64_MAX / 4);
  EXPECT_GT(due, 0);
}

TEST(WaitUntil, ReachesTheDeadlineInSlices) {
  ManualClock clock;
  int asked = 0;
  EXPECT_TRUE(WaitUntil(clock, 230 * kMs, 50 * kMs, [&] {
    ++asked;
    return false;
  }));
  EXPECT_EQ(clock.NowMonotonicNs(), 230 * kMs);
  EXPECT_EQ(asked, 6) << "asked at 0, 50, 100, 150, 200 and 230 ms";
}

TEST(WaitUntil, StopsWithinASliceOfTheStopFlag) {
  ManualClock clock;
  EXPECT_FALSE(WaitUntil(clock, 10'000 * kMs, 100 * kMs,
                         [&] { return clock.NowMonotonicNs() >= 250 * kMs; }));
  EXPECT_EQ(clock.NowMonotonicNs(), 300 * kMs);
}

TEST(WaitUntil, APassedDeadlineDoesNotSleep) {
  ManualClock clock;
  clock.AdvanceNs(5 * kMs);
  EXPECT_TRUE(WaitUntil(clock, kMs, 50 * kMs, nullptr));
  EXPECT_EQ(clock.NowMonotonicNs(), 5 * kMs);
}

}  // namespace
}  // namespace ww
