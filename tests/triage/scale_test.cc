// Job-level evaluation scales with the GPUs of a job, not with their square (issue 31 item 14:
// 90 s of a 10k-GPU job took 106 s). No timing here: the engine counts the GPU views and count
// slots it looks at (TriageEngine::job_eval_steps), and the work per sample must stay flat as
// the job grows fourfold. And the incremental count must equal the pass it replaced.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "telemetry/sim/simulator.h"
#include "triage/engine.h"
#include "triage/job_eval.h"

namespace ww::triage {
namespace {

struct Work {
  int64_t samples = 0;
  int64_t steps = 0;
  size_t hangs = 0;
  size_t hang_gpus = 0;
  double per_sample() const { return static_cast<double>(steps) / static_cast<double>(samples); }
};

// hang-spin on `hosts` hosts of 8 GPUs at 1 s: training, then every rank hangs. Each host's
// clock is offset by 15 ms a host (real hosts do not sample in the same millisecond), and each
// tick comes in time order, as the merged files of a job do.
Work RunHangSpin(int hosts) {
  sim::ScenarioOptions o;
  o.hosts = hosts;
  o.gpus_per_host = 8;
  o.interval_ms = 1000;
  auto config = sim::MakeScenario("hang-spin", o);
  EXPECT_TRUE(config.ok());
  sim::Simulator simulator(*config);
  TriageEngine engine;
  Work w;
  std::vector<GpuSample> samples;
  std::vector<sim::TruthLabel> truth;
  while (simulator.NextTick(&samples, &truth)) {
    for (GpuSample& s : samples) s.timestamp_ms += 15 * s.key.host;
    std::stable_sort(samples.begin(), samples.end(), [](const GpuSample& a, const GpuSample& b) {
      return a.timestamp_ms < b.timestamp_ms;
    });
    for (const GpuSample& s : samples) engine.Add(s);
    w.samples += static_cast<int64_t>(samples.size());
    samples.clear();
    truth.clear();
  }
  engine.Finish();
  w.steps = engine.job_eval_steps();
  w.hangs = engine.hang_episodes().size();
  if (w.hangs > 0) w.hang_gpus = engine.hang_episodes().front().gpus.size();
  return w;
}

TEST(ScaleTest, WorkPerSampleStaysFlatAsTheJobGrows) {
  const Work small = RunHangSpin(16);  // 128 GPUs
  const Work large = RunHangSpin(64);  // 512 GPUs
  // Both see the hang, over every GPU (the path where the engine looks at the job the most).
  ASSERT_EQ(small.hangs, 1u);
  ASSERT_EQ(large.hangs, 1u);
  EXPECT_EQ(small.hang_gpus, 128u);
  EXPECT_EQ(large.hang_gpus, 512u);
  // A pass over every GPU per sample made this 128 and 512 (and the tick quadratic).
  EXPECT_LT(small.per_sample(), 32) << small.steps << " steps for " << small.samples;
  EXPECT_LT(large.per_sample(), 32) << large.steps << " steps for " << large.samples;
  EXPECT_LT(large.per_sample(), 1.5 * small.per_sample());
}

// SlotCounter against CountSlots, at the sizes below and above where its bookkeeping starts,
// with slots renewed in any order and counts at times going back as well as forward.
TEST(ScaleTest, SlotCounterCountsWhatCountSlotsCounts) {
  std::mt19937_64 rng(31);
  for (size_t n : {size_t{5}, SlotCounter::kScanUpTo, SlotCounter::kScanUpTo + 1, size_t{400}}) {
    SlotCounter counter;
    std::vector<CountSlot> slots;
    int64_t now_ms = 1000;
    auto random_slot = [&] {
      CountSlot s;
      if (rng() % 10 != 0) s.active_until_ms = now_ms + static_cast<int64_t>(rng() % 6000) - 1000;
      s.bucket = static_cast<uint8_t>(rng() % SlotCounter::kBucketCount);
      s.live_unloaded = rng() % 50 == 0;
      return s;
    };
    for (int step = 0; step < 20000; ++step) {
      if (slots.size() < n) {
        slots.push_back(random_slot());
        counter.Set(slots.size() - 1, slots.back());
        continue;
      }
      const size_t i = rng() % n;
      slots[i] = random_slot();
      counter.Set(i, slots[i]);
      // Mostly forward, sometimes back (a late host), sometimes the same time again.
      now_ms += static_cast<int64_t>(rng() % 40) - (rng() % 8 == 0 ? 300 : 5);
      const bool one_gpu = rng() % 16 == 0;
      const JobCounts want = CountSlots(slots, now_ms, one_gpu);
      const JobCounts got = counter.Count(now_ms, one_gpu);
      ASSERT_EQ(got.active, want.active) << n << " slots, step " << step;
      ASSERT_EQ(got.spin, want.spin);
      ASSERT_EQ(got.busy, want.busy);
      ASSERT_EQ(got.partial, want.partial);
      ASSERT_EQ(got.low, want.low);
      ASSERT_EQ(got.gone, want.gone);
      ASSERT_EQ(got.starved, want.starved);
      ASSERT_EQ(got.starved_quiet, want.starved_quiet);
      ASSERT_EQ(got.blind, want.blind);
      const bool any_unloaded = std::any_of(slots.begin(), slots.end(), [&](const CountSlot& s) {
        return s.live_unloaded && now_ms <= s.active_until_ms;
      });
      ASSERT_EQ(counter.live_ranks_hold_memory(), want.active > want.gone && !any_unloaded);
    }
  }
}

}  // namespace
}  // namespace ww::triage
