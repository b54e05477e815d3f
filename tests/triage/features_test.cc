// Direct tests of one GPU's features over windows (src/triage/features.h): when a sample's
// features are final, how utilization is smoothed, when a spin is sustained, what starvation looks
// like in the window, and that history stays bounded. Synthetic H100 samples at 100 ms.
#include "triage/features.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <vector>

namespace ww::triage {
namespace {

constexpr int64_t kStepMs = 100;

// An H100 sample: a model in memory, util and power as given.
GpuSample S(int64_t t_ms, double util_pct, double power_w) {
  GpuSample s;
  s.timestamp_ms = t_ms;
  s.util_gpu_pct = util_pct;
  s.power_w = power_w;
  s.power_limit_w = 700;
  s.mem_used_mib = 70000;
  return s;
}
GpuSample Busy(int64_t t_ms) { return S(t_ms, 100, 620); }
GpuSample Spin(int64_t t_ms) { return S(t_ms, 100, 110); }
GpuSample Quiet(int64_t t_ms) { return S(t_ms, 0, 90); }

// Feeds samples at kStepMs from t=0 (what(t_ms) makes each), then drains at the end; returns the
// features of every sample, in order.
std::vector<SampleFeatures> Feed(int64_t duration_ms, const std::function<GpuSample(int64_t)>& what,
                                 const TriageOptions& options = {}) {
  GpuWindows w("NVIDIA H100 80GB HBM3", options);
  std::vector<SampleFeatures> out;
  SampleFeatures f;
  for (int64_t t = 0; t < duration_ms; t += kStepMs) {
    EXPECT_TRUE(w.Add(what(t)));
    while (w.NextReady(&f)) out.push_back(f);
  }
  while (w.next_unclassified_ms()) out.push_back(w.ClassifyNextAtEnd());
  return out;
}

const SampleFeatures& At(const std::vector<SampleFeatures>& fs, int64_t t_ms) {
  return fs.at(static_cast<size_t>(t_ms / kStepMs));
}

TEST(GpuWindowsTest, FeaturesComeOutOnceTheCenteredWindowIsComplete) {
  GpuWindows w("NVIDIA H100 80GB HBM3", {});
  SampleFeatures f;
  // window_s 12: a sample is final once 6 s of its future are in.
  for (int64_t t = 0; t < 6000; t += kStepMs) {
    ASSERT_TRUE(w.Add(Busy(t)));
    EXPECT_FALSE(w.NextReady(&f)) << "at " << t << " ms the first sample lacks its future";
  }
  ASSERT_TRUE(w.Add(Busy(6000)));
  ASSERT_TRUE(w.NextReady(&f));
  EXPECT_EQ(f.t_ms, 0);
  EXPECT_FALSE(w.NextReady(&f)) << "one new sample completes one window";
  EXPECT_EQ(w.next_unclassified_ms(), 100);
}

TEST(GpuWindowsTest, EverySampleComesOutOnceInOrder) {
  const auto fs = Feed(20'000, Busy);
  ASSERT_EQ(fs.size(), 200u);
  for (size_t i = 0; i < fs.size(); ++i) EXPECT_EQ(fs[i].t_ms, static_cast<int64_t>(i) * kStepMs);
}

TEST(GpuWindowsTest, RejectsSamplesOutOfOrder) {
  GpuWindows w("", {});
  EXPECT_TRUE(w.Add(Busy(1000)));
  EXPECT_FALSE(w.Add(Busy(1000))) << "a repeated timestamp";
  EXPECT_FALSE(w.Add(Busy(900))) << "a sample from the past";
  EXPECT_EQ(w.held_samples(), 1u);
}

TEST(GpuWindowsTest, LongGapCountsAsNoData) {
  GpuWindows w("", {});
  SampleFeatures f;
  w.Add(Busy(0));
  w.Add(Busy(100));
  w.Add(Busy(20'100));  // 20 s later: more than max_gap_s (10 s)
  w.Add(Busy(40'000));
  std::vector<SampleFeatures> fs;
  while (w.NextReady(&f)) fs.push_back(f);
  while (w.next_unclassified_ms()) fs.push_back(w.ClassifyNextAtEnd());
  ASSERT_EQ(fs.size(), 4u);
  EXPECT_EQ(fs[0].dt_s, 0) << "the first sample stands for no time";
  EXPECT_DOUBLE_EQ(fs[1].dt_s, 0.1);
  EXPECT_EQ(fs[2].dt_s, 0) << "a 20 s hole is not 20 s of compute";
}

TEST(GpuWindowsTest, SmoothingHidesALoneCopyKernelReading) {
  // A saving rank: no kernels, but one 100 ms reading of 30 % (a copy kernel) at t=10 s.
  const auto fs = Feed(20'000, [](int64_t t) { return t == 10'000 ? S(t, 30, 95) : Quiet(t); });
  EXPECT_EQ(At(fs, 10'000).cls, LocalClass::kLow)
      << "one reading averaged over +-0.5 s is below low_util_pct: still no kernels";
}

TEST(GpuWindowsTest, SmoothingKeepsSustainedPartialWork) {
  const auto fs = Feed(20'000, [](int64_t t) { return S(t, 35, 200); });
  EXPECT_EQ(At(fs, 10'000).cls, LocalClass::kPartial);
}

TEST(GpuWindowsTest, SmoothingWindowIsAnOption) {
  // With +-2 s of smoothing, two readings of 45 % among zeros average below 20 %... and with
  // +-0 s each stands alone as partial work.
  auto two = [](int64_t t) { return t == 10'000 || t == 10'100 ? S(t, 45, 150) : Quiet(t); };
  TriageOptions wide;
  wide.util_smoothing_half_s = 2;
  EXPECT_EQ(At(Feed(20'000, two, wide), 10'000).cls, LocalClass::kLow);
  TriageOptions none;
  none.util_smoothing_half_s = 0;
  EXPECT_EQ(At(Feed(20'000, two, none), 10'000).cls, LocalClass::kPartial);
}

TEST(GpuWindowsTest, ShortSpinIsABlipLongSpinIsSustainedFromItsFirstSample) {
  // Busy, then 0.5 s of spin (an ordinary all-reduce), busy, then 5 s of spin.
  auto what = [](int64_t t) {
    if (t >= 5000 && t < 5500) return Spin(t);
    if (t >= 10'000 && t < 15'000) return Spin(t);
    return Busy(t);
  };
  const auto fs = Feed(30'000, what);
  EXPECT_EQ(At(fs, 5000).cls, LocalClass::kSpin);
  EXPECT_FALSE(At(fs, 5000).sustained_spin) << "shorter than min_spin_s: a collective";
  EXPECT_FALSE(At(fs, 5400).sustained_spin);
  EXPECT_TRUE(At(fs, 10'000).sustained_spin)
      << "the window sees the future: a long wait is known from its first sample";
  EXPECT_TRUE(At(fs, 14'900).sustained_spin) << "the end of a long run is still part of it";
  EXPECT_FALSE(At(fs, 20'000).sustained_spin) << "busy samples are no spin";
}

TEST(GpuWindowsTest, BurstsAndGapsAreStarvationSteadyWorkIsNot) {
  // 1 s bursts and 1 s gaps: the input pipeline cannot keep up.
  auto bursts = [](int64_t t) { return (t / 1000) % 2 == 0 ? Busy(t) : Quiet(t); };
  const auto starved = Feed(60'000, bursts);
  EXPECT_TRUE(At(starved, 30'000).starved);
  EXPECT_TRUE(At(starved, 31'500).starved) << "the gaps of a starving GPU are starvation too";
  const auto steady = Feed(60'000, Busy);
  EXPECT_FALSE(At(steady, 30'000).starved);
  // One change of phase (training stops for a checkpoint) is not starvation.
  const auto phase = Feed(60'000, [](int64_t t) { return t < 30'000 ? Busy(t) : Quiet(t); });
  EXPECT_FALSE(At(phase, 30'000).starved);
  EXPECT_FALSE(At(phase, 29'900).starved);
}

// Training at full power until 30 s, then an evaluation pass: 0.7 s batches, kernels for 0.5 s of
// each at moderate power, the host's share between them (power, a ~1 s average, stays between).
GpuSample TrainThenEval(int64_t t) {
  if (t < 30'000) return Busy(t);
  const int64_t u = (t - 30'000) % 700;
  return u < 500 ? S(t, 100, 300) : S(t, 0, 260);
}

TEST(GpuWindowsTest, AnEvaluationPassIsBurstyWorkNotStarvation) {
  const auto fs = Feed(90'000, TrainThenEval);
  for (int64_t t : {40'000, 50'000, 60'000, 80'000}) {
    EXPECT_TRUE(At(fs, t).bursty_work) << t << " ms: batches at moderate power are work";
    EXPECT_EQ(At(fs, t).compute_share, 1) << t << " ms: no gradients move between batches";
  }
  EXPECT_FALSE(At(fs, 20'000).bursty_work) << "training is not bursty";
  // Starvation: bursts of training at full power, waits that fall to the model held.
  auto bursts = [](int64_t t) { return (t / 1000) % 2 == 0 ? Busy(t) : Quiet(t); };
  const auto starved = Feed(60'000, bursts);
  EXPECT_TRUE(At(starved, 30'000).starved);
  EXPECT_FALSE(At(starved, 30'000).bursty_work) << "a starving GPU's bursts reach full power";
  // Short waits that never reach rest, but bursts that reach the compute level: starving.
  auto short_waits = [](int64_t t) {
    const int64_t u = t % 2500;
    return u < 2000 ? Busy(t) : S(t, 0, 450);
  };
  const auto fast = Feed(60'000, short_waits);
  EXPECT_FALSE(At(fast, 30'000).bursty_work) << "each gap reads the step's lagging power";
}

TEST(GpuWindowsTest, BurstyWorkNeedsAComputeLevelToCompareWith) {
  // The same pass in a log without training, on a board of unknown name without a limit: the
  // compute level is the pass's own, so its bursts are not "moderate": starvation, as before.
  auto eval_only = [](int64_t t) {
    GpuSample s = TrainThenEval(t + 30'000);
    s.power_limit_w.reset();
    return s;
  };
  GpuWindows w("", {});
  std::vector<SampleFeatures> out;
  SampleFeatures f;
  for (int64_t t = 0; t < 60'000; t += kStepMs) {
    ASSERT_TRUE(w.Add(eval_only(t)));
    while (w.NextReady(&f)) out.push_back(f);
  }
  for (const SampleFeatures& g : out) EXPECT_FALSE(g.bursty_work) << g.t_ms;
}

TEST(GpuWindowsTest, ComputeShareOnlyForBusySamplesWithPower) {
  auto what = [](int64_t t) {
    if (t == 10'000) {
      GpuSample s = Busy(t);
      s.power_w.reset();
      return s;
    }
    return t < 20'000 ? Busy(t) : Quiet(t);
  };
  const auto fs = Feed(40'000, what);
  EXPECT_GT(At(fs, 5000).compute_share, 0.5) << "busy at full power: computing";
  EXPECT_EQ(At(fs, 10'000).compute_share, 1) << "no power reading: no split, all compute";
  EXPECT_TRUE(std::isnan(At(fs, 10'000).power_w)) << "a missing reading is not 0 W";
  EXPECT_EQ(At(fs, 30'000).compute_share, 1) << "a quiet sample has no share to split";
}

TEST(GpuWindowsTest, HistoryStaysBoundedByTheWindow) {
  GpuWindows w("NVIDIA H100 80GB HBM3", {});
  SampleFeatures f;
  for (int64_t t = 0; t < 600'000; t += kStepMs) {
    w.Add(Busy(t));
    while (w.NextReady(&f)) {
    }
  }
  // 12 s of window at 100 ms is ~120 samples plus the 6 s not yet final; ten minutes are 6000.
  EXPECT_LT(w.held_samples(), 250u);
  EXPECT_NEAR(w.interval_s(), 0.1, 1e-9);
}

TEST(GpuWindowsTest, CoarseLogWidensTheWindow) {
  // At 5 s per sample, min_half_window_intervals (2.5) makes the half window 12.5 s, not 6 s.
  GpuWindows w("", {});
  SampleFeatures f;
  for (int64_t t = 0; t <= 10'000; t += 5000) {
    w.Add(Busy(t));
    EXPECT_FALSE(w.NextReady(&f)) << t;
  }
  w.Add(Busy(15'000));
  EXPECT_TRUE(w.NextReady(&f)) << "15 s after the first sample: past the 12.5 s half window";
  EXPECT_EQ(f.t_ms, 0);
}

}  // namespace
}  // namespace ww::triage
