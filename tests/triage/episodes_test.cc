// Direct tests of the episode trackers (src/triage/episodes.h): a hang candidate's life (confirm,
// debounce, end, dismiss, the caller's confirmation), an over-long checkpoint called a hang,
// checkpoints merged and closed, and the end of a job. Job evaluations are fed by hand, one a
// second unless a case needs finer steps.
#include "triage/episodes.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <vector>

namespace ww::triage {
namespace {

using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using L = LocalClass;
using M = JobMode;

GpuView V(uint16_t gpu, LocalClass cls, int64_t now_ms, int64_t spin_since_ms = 0) {
  GpuView v;
  v.key = {0, gpu};
  v.classified = true;
  v.in_job = true;
  v.cur_ms = now_ms;
  v.interval_s = 1;
  v.cls = cls;
  v.sustained_spin = cls == L::kSpin;
  v.spin_since_ms = spin_since_ms;
  v.last_power_w = 110;
  v.last_power_frac = 0.07;
  return v;
}

// Two GPUs spinning since t=0, as seen at now_ms.
std::vector<GpuView> Spinning(int64_t now_ms) {
  return {V(0, L::kSpin, now_ms), V(1, L::kSpin, now_ms)};
}
std::vector<GpuView> Working(int64_t now_ms) {
  return {V(0, L::kBusy, now_ms), V(1, L::kBusy, now_ms)};
}

// These tests count in 45 s confirmations whatever the default (TriageOptions::hang_confirm_s).
TriageOptions Confirm45() {
  TriageOptions o;
  o.hang_confirm_s = 45;
  return o;
}

// Feeds `mode` every step_ms over [from_ms, to_ms); returns the last update.
HangUpdate Feed(HangTracker& h, JobMode mode, int64_t from_ms, int64_t to_ms,
                int64_t step_ms = 1000) {
  HangUpdate last;
  for (int64_t t = from_ms; t < to_ms; t += step_ms) {
    last = h.Update(mode, mode == M::kWorking ? Working(t) : Spinning(t), t);
    EXPECT_FALSE(last.confirmed && last.ended) << t;
  }
  return last;
}

TEST(HangTrackerTest, ConfirmsAfterHangConfirmS) {
  HangTracker h(Confirm45());
  EXPECT_FALSE(Feed(h, M::kHangCandidate, 0, 45'000).confirmed);
  ASSERT_TRUE(h.candidate());
  EXPECT_EQ(h.candidate()->start_ms, 0);
  EXPECT_THAT(h.candidate()->gpus, ElementsAre(GpuKey{0, 0}, GpuKey{0, 1}));
  EXPECT_EQ(h.held_from_ms(), 0) << "samples since the start may still become hang";
  EXPECT_EQ(h.active(), nullptr);

  const HangUpdate u = h.Update(M::kHangCandidate, Spinning(45'000), 45'000);
  EXPECT_TRUE(u.confirmed);
  ASSERT_NE(h.active(), nullptr);
  EXPECT_EQ(h.active()->start_ms, 0);
  EXPECT_EQ(h.active()->detected_at_ms, 45'000);
  EXPECT_FALSE(h.candidate()) << "a confirmed hang is no longer a candidate";
  EXPECT_FALSE(h.held_from_ms()) << "nothing to hold back once confirmed";
  EXPECT_TRUE(h.InActiveHang({0, 1}));
  EXPECT_FALSE(h.InActiveHang({0, 2}));
  EXPECT_THAT(h.active()->reasons, ::testing::Contains(HasSubstr("flat for 45 s")));
  EXPECT_FALSE(h.Update(M::kHangCandidate, Spinning(46'000), 46'000).confirmed) << "confirmed once";
}

// The engine calls once a sample (naming the GPU sampled), a tick's GPUs one after another; a
// tick's spin samples must each count once in the evidence, as with one call a tick: the mean
// power fraction of 3 GPUs at 0.05 and one at 0.45 is 0.15 either way (counting the GPUs sampled
// earlier in the tick again at every later sample gave 0.09).
TEST(HangTrackerTest, EachSpinSampleCountsOnceWhetherCalledPerSampleOrPerTick) {
  auto views_at = [](int64_t t, size_t sampled_through) {
    std::vector<GpuView> v;
    for (uint16_t g = 0; g < 4; ++g) {
      v.push_back(V(g, L::kSpin, g <= sampled_through ? t : t - 1000));
      v.back().last_power_w = g == 3 ? 500 : 100;
      v.back().last_power_frac = g == 3 ? 0.45 : 0.05;
    }
    return v;
  };
  HangTracker per_sample(Confirm45()), per_tick(Confirm45());
  for (int64_t t = 1000; t <= 46'000; t += 1000) {
    for (size_t k = 0; k < 4; ++k) {
      const std::vector<GpuView> v = views_at(t, k);
      per_sample.Update(M::kHangCandidate, v, t, {}, &v[k]);
    }
    per_tick.Update(M::kHangCandidate, views_at(t, 3), t);
  }
  ASSERT_NE(per_sample.active(), nullptr);
  ASSERT_NE(per_tick.active(), nullptr);
  EXPECT_THAT(per_tick.active()->reasons, Contains(HasSubstr("0.15 of their power range")));
  EXPECT_EQ(per_sample.active()->reasons, per_tick.active()->reasons);
}

TEST(HangTrackerTest, InterruptionShorterThanDebounceKeepsTheCandidate) {
  HangTracker h(Confirm45());
  Feed(h, M::kHangCandidate, 0, 10'000);
  // 1.5 s of work (debounce_s is 2), in 500 ms steps.
  EXPECT_FALSE(Feed(h, M::kWorking, 10'000, 11'500, 500).ended);
  Feed(h, M::kHangCandidate, 11'500, 45'000);
  ASSERT_TRUE(h.candidate());
  EXPECT_EQ(h.candidate()->start_ms, 0) << "the blip did not restart the clock";
  EXPECT_TRUE(h.Update(M::kHangCandidate, Spinning(45'000), 45'000).confirmed);
}

TEST(HangTrackerTest, WorkLongerThanDebounceEndsAnUnconfirmedCandidate) {
  HangTracker h({});
  Feed(h, M::kHangCandidate, 0, 10'000);
  EXPECT_FALSE(h.Update(M::kWorking, Working(10'000), 10'000).ended);
  EXPECT_FALSE(h.Update(M::kWorking, Working(11'000), 11'000).ended);
  const HangUpdate u = h.Update(M::kWorking, Working(12'000), 12'000);
  EXPECT_TRUE(u.ended);
  EXPECT_FALSE(u.hang_ended) << "it never was a hang";
  EXPECT_FALSE(h.candidate());
  EXPECT_TRUE(h.episodes().empty());
}

TEST(HangTrackerTest, ConfirmedHangEndsWhereTheWorkResumed) {
  HangTracker h({});
  Feed(h, M::kHangCandidate, 0, 60'000);
  ASSERT_NE(h.active(), nullptr);
  Feed(h, M::kWorking, 60'000, 62'000);
  const HangUpdate u = h.Update(M::kWorking, Working(62'000), 62'000);
  EXPECT_TRUE(u.ended);
  EXPECT_TRUE(u.hang_ended);
  ASSERT_EQ(h.episodes().size(), 1u);
  EXPECT_EQ(h.episodes()[0].end_ms, 60'000) << "the hang ended when work came back, not later";
  EXPECT_FALSE(h.episodes()[0].ongoing);
  EXPECT_EQ(h.active(), nullptr);
}

TEST(HangTrackerTest, EveryoneGoneEndsItAtOnce) {
  HangTracker h({});
  Feed(h, M::kHangCandidate, 0, 50'000);
  const HangUpdate u = h.Update(M::kNoJob, {}, 50'000);
  EXPECT_TRUE(u.hang_ended) << "the watchdog tore the job down: no debounce";
  EXPECT_EQ(h.episodes().at(0).end_ms, 50'000);
}

TEST(HangTrackerTest, WithoutAutoConfirmTheCallerDecides) {
  TriageOptions o;
  o.auto_confirm = false;
  HangTracker h(o);
  Feed(h, M::kHangCandidate, 0, 120'000);
  EXPECT_EQ(h.active(), nullptr) << "the watcher's progress probes have the last word";
  ASSERT_TRUE(h.candidate());
  EXPECT_TRUE(h.Confirm(120'000, Spinning(120'000), {"no step logged for 120 s"}));
  ASSERT_NE(h.active(), nullptr);
  EXPECT_EQ(h.active()->reasons.back(), "no step logged for 120 s")
      << "the caller's reasons come after the telemetry's";
  EXPECT_FALSE(h.Confirm(121'000, Spinning(121'000), {})) << "nothing left to confirm";
}

TEST(HangTrackerTest, DismissDropsOnlyAnUnconfirmedCandidate) {
  TriageOptions o;
  o.auto_confirm = false;
  HangTracker h(o);
  EXPECT_FALSE(h.Dismiss()) << "no candidate";
  Feed(h, M::kHangCandidate, 0, 10'000);
  EXPECT_TRUE(h.Dismiss());
  EXPECT_FALSE(h.candidate());
  // The GPUs still spin: a new candidate starts with the next evaluation.
  h.Update(M::kHangCandidate, Spinning(10'000), 10'000);
  ASSERT_TRUE(h.candidate());
  EXPECT_EQ(h.candidate()->start_ms, 10'000);
  h.Confirm(20'000, Spinning(20'000), {});
  EXPECT_FALSE(h.Dismiss()) << "a confirmed hang is not taken back";
  EXPECT_NE(h.active(), nullptr);
}

TEST(HangTrackerTest, OverlongCheckpointWaitIsAHangBlamingTheSaver) {
  TriageOptions o;
  o.max_checkpoint_s = 10;
  o.hang_confirm_s = 5;
  HangTracker h(o);
  auto views = [](int64_t t) {
    return std::vector<GpuView>{V(0, L::kLow, t), V(1, L::kSpin, t), V(2, L::kSpin, t)};
  };
  for (int64_t t = 0; t < 10'000; t += 1000) h.Update(M::kCheckpointWait, views(t), t);
  EXPECT_FALSE(h.candidate()) << "a checkpoint shorter than max_checkpoint_s is a checkpoint";
  EXPECT_EQ(h.held_from_ms(), 0) << "the wait may still turn out a hang from its start";
  h.Update(M::kCheckpointWait, views(10'000), 10'000);
  // Past max_checkpoint_s the wait was a hang from its start, and hang_confirm_s of it is over.
  ASSERT_NE(h.active(), nullptr);
  EXPECT_EQ(h.active()->start_ms, 0);
  EXPECT_EQ(h.active()->detected_at_ms, 10'000);
  EXPECT_THAT(h.active()->culprits, ElementsAre(GpuKey{0, 0}));
  EXPECT_THAT(h.active()->reasons.front(),
              HasSubstr("2 ranks spun for 10 s on 1 rank that holds memory without kernels"));
  EXPECT_THAT(h.active()->reasons, Contains(HasSubstr("GPU0 hold memory without kernels while "
                                                      "the others wait for them")));
  EXPECT_THAT(h.active()->reasons, Contains(HasSubstr("2 of 3 GPUs at >= 90 % utilization")));
}

// ---- Stalls off the GPU, one-GPU jobs, candidates only probes can confirm ----

HangContext QuietSince(int64_t since_ms) {
  HangContext c;
  c.quiet_since_ms = since_ms;
  return c;
}

std::vector<GpuView> QuietViews(int64_t t) { return {V(0, L::kLow, t), V(1, L::kLow, t)}; }

TEST(HangTrackerTest, EveryRankQuietPastMaxCheckpointIsAStallOffTheGpu) {
  TriageOptions o;
  o.max_checkpoint_s = 10;
  o.hang_confirm_s = 5;  // the quiet stretch itself is the confirmation once it is this long
  HangTracker h(o);
  for (int64_t t = 0; t < 10'000; t += 1000)
    h.Update(M::kAllQuiet, QuietViews(t), t, QuietSince(0));
  EXPECT_FALSE(h.candidate()) << "offline, a quiet stretch shorter than max_checkpoint_s is none";
  h.Update(M::kAllQuiet, QuietViews(10'000), 10'000, QuietSince(0));
  ASSERT_NE(h.active(), nullptr);
  EXPECT_EQ(h.active()->start_ms, 0) << "a hang since the ranks went quiet";
  EXPECT_TRUE(h.active()->culprits.empty()) << "no rank on the GPU stands out";
  EXPECT_THAT(h.active()->reasons.front(), HasSubstr("a stall off the GPU"));
  EXPECT_THAT(h.active()->reasons, Contains(HasSubstr("look at the processes")));
}

TEST(HangTrackerTest, LiveQuietStretchIsACandidateOnlyProbesConfirm) {
  TriageOptions o;
  o.max_checkpoint_s = 100;
  o.auto_confirm = false;
  HangTracker h(o);
  h.Update(M::kAllQuiet, QuietViews(5000), 5000, QuietSince(2000));
  ASSERT_TRUE(h.candidate());
  EXPECT_EQ(h.candidate()->start_ms, 2000);
  EXPECT_TRUE(h.candidate()->needs_process_probe);
  // A probe saw writes (a checkpoint): dismissed; the next candidate starts no earlier.
  EXPECT_TRUE(h.Dismiss());
  h.Update(M::kAllQuiet, QuietViews(6000), 6000, QuietSince(2000));
  ASSERT_TRUE(h.candidate());
  EXPECT_EQ(h.candidate()->start_ms, 5000);
  // Past max_checkpoint_s telemetry alone suffices.
  h.Update(M::kAllQuiet, QuietViews(102'000), 102'000, QuietSince(2000));
  ASSERT_TRUE(h.candidate());
  EXPECT_FALSE(h.candidate()->needs_process_probe);
}

TEST(HangTrackerTest, OneGpuSpinIsNoHangOnTelemetryAlone) {
  HangContext one;
  one.one_gpu = true;
  one.one_gpu_spinning = true;
  const std::vector<GpuView> spin = {V(0, L::kSpin, 0)};
  HangTracker offline({});
  for (int64_t t = 0; t < 120'000; t += 1000) offline.Update(M::kHangCandidate, spin, t, one);
  EXPECT_FALSE(offline.candidate());
  EXPECT_EQ(offline.active(), nullptr) << "small kernels look the same";

  TriageOptions live;
  live.auto_confirm = false;
  HangTracker watched(live);
  for (int64_t t = 0; t < 120'000; t += 1000) watched.Update(M::kWorking, spin, t, one);
  ASSERT_TRUE(watched.candidate()) << "the watcher's probes may still confirm it";
  EXPECT_TRUE(watched.candidate()->needs_process_probe);
  EXPECT_EQ(watched.active(), nullptr);
}

TEST(HangTrackerTest, CheckpointWaitClockRestartsAfterWork) {
  TriageOptions o;
  o.max_checkpoint_s = 10;
  HangTracker h(o);
  const std::vector<GpuView> none;
  for (int64_t t = 0; t < 9000; t += 1000) h.Update(M::kCheckpointWait, none, t);
  h.Update(M::kWorking, none, 9000);
  for (int64_t t = 10'000; t < 19'000; t += 1000) h.Update(M::kCheckpointWait, none, t);
  EXPECT_FALSE(h.candidate()) << "two 9 s checkpoints are not one 18 s wait";
}

TEST(HangTrackerTest, EndOfInputNotesALongUnconfirmedSpin) {
  HangTracker h(Confirm45());
  Feed(h, M::kHangCandidate, 0, 21'000);
  const HangUpdate u = h.End(20'000, /*ongoing=*/true);
  EXPECT_TRUE(u.ended);
  EXPECT_FALSE(u.hang_ended);
  ASSERT_EQ(h.notes().size(), 1u);
  EXPECT_THAT(h.notes()[0], HasSubstr("the log ends during 20 s of spin"));
  EXPECT_THAT(h.notes()[0], HasSubstr("(45 s needed)"));

  HangTracker short_spin({});
  Feed(short_spin, M::kHangCandidate, 0, 4000);
  short_spin.End(4000, true);
  EXPECT_TRUE(short_spin.notes().empty()) << "under unconfirmed_spin_note_s: not worth a line";
}

TEST(HangTrackerTest, EndOfInputClosesAConfirmedHangAsOngoing) {
  HangTracker h({});
  Feed(h, M::kHangCandidate, 0, 50'000);
  const HangUpdate u = h.End(49'000, true);
  EXPECT_TRUE(u.hang_ended);
  ASSERT_EQ(h.episodes().size(), 1u);
  EXPECT_TRUE(h.episodes()[0].ongoing);
  EXPECT_EQ(h.episodes()[0].end_ms, 49'000);
  EXPECT_FALSE(h.End(50'000, true).ended) << "nothing left open";
}

// A host that stopped reporting (a crashed node, a dead logger) while its peers spin: host 1's two
// GPUs were last heard, computing, at silent_ms; host 0's two GPUs spin from spin_ms on.
std::vector<GpuView> HostStopped(int64_t now_ms, int64_t silent_ms, int64_t spin_ms) {
  std::vector<GpuView> v = {V(0, L::kSpin, now_ms, spin_ms), V(1, L::kSpin, now_ms, spin_ms)};
  for (uint16_t gpu : {0, 1}) {
    GpuView g = V(gpu, L::kBusy, silent_ms - 3000);  // classified a window behind
    g.key = {1, gpu};
    g.heard_ms = silent_ms;
    v.push_back(g);
  }
  return v;
}

TEST(HangTrackerTest, AHostThatStoppedReportingBeforeTheWaitIsInTheHangAndBlamed) {
  HangTracker h({});
  h.SetHostNames({"node0", "node1"});
  // node1 last heard at 0; its peers spin from 2 s on (past its stale limit from 5 s on).
  for (int64_t t = 6'000; t <= 40'000; t += 1000) {
    h.Update(M::kHangCandidate, HostStopped(t, 0, 2'000), t);
  }
  ASSERT_NE(h.active(), nullptr);
  const HangEpisode& e = *h.active();
  EXPECT_THAT(e.gpus, ElementsAre(GpuKey{0, 0}, GpuKey{0, 1}, GpuKey{1, 0}, GpuKey{1, 1}))
      << "the silent host's GPUs are members: its GPU-hours count";
  EXPECT_THAT(e.stopped_reporting, ElementsAre(GpuKey{1, 0}, GpuKey{1, 1}));
  EXPECT_THAT(e.culprits, ElementsAre(GpuKey{1, 0}, GpuKey{1, 1}))
      << "it was computing when last heard, before the others began waiting";
  EXPECT_THAT(e.reasons, Contains(HasSubstr("node1/GPU0, node1/GPU1 stopped reporting 6.0 s "
                                            "before the others began waiting")));
  EXPECT_THAT(e.reasons, Contains(HasSubstr("2 of 4 GPUs at >= 90 % utilization")));
  EXPECT_THAT(e.reasons, ::testing::Not(Contains(HasSubstr("all ranks entered the wait"))));
  // The peers spin on for an hour: the hang stays open, four GPUs wide.
  for (int64_t t = 41'000; t <= 3'606'000; t += 5000) {
    h.Update(M::kHangCandidate, HostStopped(t, 0, 2'000), t);
  }
  h.End(3'606'000, true, HostStopped(3'606'000, 0, 2'000));
  ASSERT_EQ(h.episodes().size(), 1u);
  EXPECT_EQ(h.episodes()[0].end_ms, 3'606'000) << "not closed 30 s after node1's last sample";
  EXPECT_NEAR(h.episodes()[0].wasted_gpu_hours(), 4.0, 0.01);
}

TEST(HangTrackerTest, AHostSilentLongBeforeTheWaitIsNotPartOfIt) {
  HangTracker h({});
  // node1 last heard 40 s before its peers began waiting (past stopped_reporting_window_s: they
  // went on without it, so its log ended for another reason).
  for (int64_t t = 40'000; t <= 80'000; t += 1000) {
    h.Update(M::kHangCandidate, HostStopped(t, 0, 40'000), t);
  }
  ASSERT_NE(h.active(), nullptr);
  EXPECT_THAT(h.active()->gpus, ElementsAre(GpuKey{0, 0}, GpuKey{0, 1}));
  EXPECT_THAT(h.active()->stopped_reporting, IsEmpty());
  EXPECT_THAT(h.active()->culprits, IsEmpty());
}

TEST(HangTrackerTest, AMemberThatFallsSilentDuringTheHangIsNamedNotBlamed) {
  HangTracker h({});
  h.SetHostNames({"node0", "node1"});
  // All four spin from 0; node1 is last heard at 60 s, after the confirmation.
  auto views = [](int64_t t) {
    std::vector<GpuView> v = Spinning(t);
    for (uint16_t gpu : {0, 1}) {
      GpuView g = V(gpu, L::kSpin, std::min<int64_t>(t, 60'000));
      g.key = {1, gpu};
      g.heard_ms = g.cur_ms;
      v.push_back(g);
    }
    return v;
  };
  for (int64_t t = 0; t <= 200'000; t += 1000) h.Update(M::kHangCandidate, views(t), t);
  h.End(200'000, true, views(200'000));
  ASSERT_EQ(h.episodes().size(), 1u);
  const HangEpisode& e = h.episodes()[0];
  EXPECT_EQ(e.gpus.size(), 4u);
  EXPECT_EQ(e.end_ms, 200'000);
  EXPECT_THAT(e.stopped_reporting, ElementsAre(GpuKey{1, 0}, GpuKey{1, 1}));
  EXPECT_THAT(e.culprits, IsEmpty()) << "it was waiting like the others when it went quiet";
  EXPECT_THAT(e.reasons, Contains(HasSubstr("stopped reporting 1m00s into the wait")));
}

TEST(HangTrackerTest, EveryoneFallingSilentNamesNobody) {
  HangTracker h({});
  Feed(h, M::kHangCandidate, 0, 50'000);
  // The input stops for every GPU (the end of the logs): no host stopped on its own.
  h.End(80'000, true, Spinning(49'000));
  ASSERT_EQ(h.episodes().size(), 1u);
  EXPECT_THAT(h.episodes()[0].stopped_reporting, IsEmpty());
}

// ---- CheckpointTracker ----

std::vector<GpuView> Saving(int64_t t) {
  return {V(0, L::kLow, t), V(1, L::kSpin, t), V(2, L::kSpin, t)};
}

TEST(CheckpointTrackerTest, RanksWaitingOnASaverAreOneCheckpoint) {
  CheckpointTracker c({});
  for (int64_t t = 0; t < 5000; t += 1000) c.Update(M::kWorking, Working(t), t);
  for (int64_t t = 5000; t <= 20'000; t += 1000) c.Update(M::kCheckpointWait, Saving(t), t);
  for (int64_t t = 21'000; t < 30'000; t += 1000) c.Update(M::kWorking, Working(t), t);
  ASSERT_EQ(c.episodes().size(), 1u);
  EXPECT_EQ(c.episodes()[0].start_ms, 5000);
  EXPECT_EQ(c.episodes()[0].end_ms, 20'000);
  EXPECT_FALSE(c.episodes()[0].all_ranks);
  EXPECT_THAT(c.episodes()[0].writers, ElementsAre(GpuKey{0, 0})) << "the quiet rank saves";
}

// The ckpt1 trace at 1 s: as the job ended, GPU2 read 0 % holding memory in the last reading of
// a 4-minute wait on GPU0 and was listed among the savers.
TEST(CheckpointTrackerTest, ARankQuietForAMomentOfALongWaitDidNotSave) {
  CheckpointTracker c({});
  for (int64_t t = 0; t <= 60'000; t += 1000) c.Update(M::kCheckpointWait, Saving(t), t);
  std::vector<GpuView> exiting = Saving(61'000);
  exiting[2].cls = L::kLow;
  c.Update(M::kCheckpointWait, exiting, 61'000);
  c.Finish();
  ASSERT_EQ(c.episodes().size(), 1u);
  EXPECT_THAT(c.episodes()[0].writers, ElementsAre(GpuKey{0, 0}, GpuKey{0, 2}));
  EXPECT_THAT(c.episodes()[0].writer_readings, ElementsAre(62, 1))
      << "one count per reading, however many evaluations see it";
  EXPECT_THAT(SaverRanks(c.episodes()[0]), ElementsAre(GpuKey{0, 0}));

  // Two ranks saving shards, each quiet for most of the wait: both saved.
  CheckpointTracker two({});
  for (int64_t t = 0; t <= 20'000; t += 1000) {
    std::vector<GpuView> v = Saving(t);
    if (t >= 5000) v[1].cls = L::kLow;
    two.Update(M::kCheckpointWait, v, t);
    two.Update(M::kCheckpointWait, v, t);  // a second GPU's sample at the same time
  }
  two.Finish();
  ASSERT_EQ(two.episodes().size(), 1u);
  EXPECT_THAT(SaverRanks(two.episodes()[0]), ElementsAre(GpuKey{0, 0}, GpuKey{0, 1}));

  EXPECT_THAT(SaverRanks(CheckpointEpisode{}), IsEmpty()) << "a wait with no quiet rank seen";
}

// One reading at 15 s sampling stands for the 15 s before it: a checkpoint of 15 s, not 0 s.
TEST(CheckpointTrackerTest, AReadingCoversItsInterval) {
  CheckpointTracker c({});
  std::vector<GpuView> v = Saving(30'000);
  for (GpuView& g : v) g.interval_s = 15;
  c.Update(M::kCheckpointWait, v, 30'000);
  c.Update(M::kWorking, Working(45'000), 45'000);
  c.Finish();
  ASSERT_EQ(c.episodes().size(), 1u);
  EXPECT_EQ(c.episodes()[0].start_ms, c.episodes()[0].end_ms);
  EXPECT_EQ(c.episodes()[0].covered_ms(), 15'000);
}

TEST(QuietTrackerTest, QuietBetweenTwoStretchesOfTrainingIsACheckpoint) {
  QuietTracker q({});
  for (int64_t t = 0; t <= 9000; t += 1000) {
    EXPECT_FALSE(q.Update(M::kAllQuiet, true, QuietViews(t), t).resolved);
  }
  EXPECT_EQ(q.since_ms(), 0);
  EXPECT_FALSE(q.Update(M::kWorking, false, Working(10'000), 10'000).resolved)
      << "work must last checkpoint_merge_s: a moment of it may be teardown";
  EXPECT_FALSE(q.Update(M::kHangCandidate, false, Spinning(11'000), 11'000).resolved);
  const QuietUpdate u = q.Update(M::kWorking, false, Working(13'000), 13'000);
  ASSERT_TRUE(u.resolved);
  EXPECT_TRUE(u.checkpoint);
  EXPECT_EQ(u.start_ms, 0);
  EXPECT_EQ(u.end_ms, 9000);
  EXPECT_THAT(u.writers, ElementsAre(GpuKey{0, 0}, GpuKey{0, 1}));
  EXPECT_FALSE(q.since_ms());

  CheckpointTracker c({});
  c.AddAllRanks(u);
  ASSERT_EQ(c.episodes().size(), 1u);
  EXPECT_TRUE(c.episodes()[0].all_ranks) << "every rank quiet: a sharded save";
}

// The real ckpt1000 trace without power: every rank quiet for two 100 ms readings before a step
// (a barrier ahead of the save) was listed as "all ranks saving" for 0.1 s.
TEST(QuietTrackerTest, AQuietOfAFewReadingsBetweenStepsIsNoCheckpoint) {
  auto views = [](int64_t t, double interval_s) {
    std::vector<GpuView> v = QuietViews(t);
    for (GpuView& g : v) g.interval_s = interval_s;
    return v;
  };
  QuietTracker fine({});
  fine.Update(M::kAllQuiet, true, views(1000, 0.1), 1000);
  fine.Update(M::kAllQuiet, true, views(1100, 0.1), 1100);
  QuietUpdate pause;
  for (int64_t t = 1200; t <= 5000 && !pause.resolved; t += 100) {
    pause = fine.Update(M::kWorking, false, Working(t), t);
  }
  ASSERT_TRUE(pause.resolved) << "training resumed for checkpoint_merge_s";
  EXPECT_FALSE(pause.checkpoint) << "0.2 s of quiet is a pause between steps, not a save";

  QuietTracker edge({});  // 1.9 s of readings at 100 ms: 2.0 s with the last interval
  for (int64_t t = 0; t <= 1900; t += 100) edge.Update(M::kAllQuiet, true, views(t, 0.1), t);
  edge.Update(M::kWorking, false, Working(2000), 2000);
  EXPECT_TRUE(edge.Update(M::kWorking, false, Working(5000), 5000).checkpoint);

  QuietTracker coarse({});  // one reading at 30 s sampling stands for 30 s of quiet
  coarse.Update(M::kAllQuiet, true, views(30'000, 30), 30'000);
  coarse.Update(M::kWorking, false, Working(60'000), 60'000);
  const QuietUpdate save = coarse.Update(M::kWorking, false, Working(90'000), 90'000);
  ASSERT_TRUE(save.resolved);
  EXPECT_TRUE(save.checkpoint);
}

TEST(QuietTrackerTest, QuietUntilTheProcessesExitOrTheLogEndsIsIdle) {
  QuietTracker exit({});
  exit.Update(M::kAllQuiet, true, QuietViews(0), 0);
  exit.Update(M::kWorking, false, Working(500), 500);  // the killed job's last 0.3 s of kernels
  const QuietUpdate gone = exit.Update(M::kNoJob, false, {}, 1000);
  EXPECT_TRUE(gone.resolved);
  EXPECT_FALSE(gone.checkpoint);

  QuietTracker end({});
  end.Update(M::kAllQuiet, true, QuietViews(0), 0);
  const QuietUpdate u = end.End();
  EXPECT_TRUE(u.resolved);
  EXPECT_FALSE(u.checkpoint) << "nothing shows training resumed";

  QuietTracker no_evidence({});  // e.g. no memory.used: nothing to show memory is held
  EXPECT_FALSE(no_evidence.Update(M::kAllQuiet, false, QuietViews(0), 0).resolved);
  EXPECT_FALSE(no_evidence.since_ms());
}

TEST(CheckpointTrackerTest, QuietStretchesCloseTogetherAreOneCheckpoint) {
  CheckpointTracker c({});
  const QuietUpdate a{true, true, 0, 5000, {GpuKey{0, 0}}};
  const QuietUpdate b{true, true, 6000, 9000, {GpuKey{0, 1}}};  // a copy kernel broke the quiet
  c.AddAllRanks(a);
  c.AddAllRanks(b);
  ASSERT_EQ(c.episodes().size(), 1u);
  EXPECT_EQ(c.episodes()[0].end_ms, 9000);
  EXPECT_THAT(c.episodes()[0].writers, ElementsAre(GpuKey{0, 0}, GpuKey{0, 1}));
  c.TruncateAt(7000);  // a hang from 7 s on
  EXPECT_EQ(c.episodes()[0].end_ms, 7000);
  c.TruncateAt(0);
  EXPECT_TRUE(c.episodes().empty());
}

TEST(CheckpointTrackerTest, OpenCheckpointOutlivesShortBursts) {
  CheckpointTracker c({});
  c.Update(M::kCheckpointWait, Saving(0), 0);
  c.Update(M::kCheckpointWait, Saving(1000), 1000);
  c.Update(M::kWorking, Working(2000), 2000);  // a burst of the saver's copy kernels
  c.Update(M::kWorking, Working(4000), 4000);  // 3 s after the last evidence: still open
  c.Update(M::kCheckpointWait, Saving(4500), 4500);
  c.Update(M::kWorking, Working(7600), 7600);  // 3.1 s after: closed
  c.Update(M::kCheckpointWait, Saving(9000), 9000);
  c.Finish();
  ASSERT_EQ(c.episodes().size(), 2u);
  EXPECT_EQ(c.episodes()[0].start_ms, 0);
  EXPECT_EQ(c.episodes()[0].end_ms, 4500);
  EXPECT_EQ(c.episodes()[1].start_ms, 9000);
}

TEST(CheckpointTrackerTest, ClosedCheckpointReopensForAnEarlierSampleOfAnotherGpu) {
  // Evaluations follow each GPU's classified samples, so time can step back a little between
  // GPUs: a checkpoint closed at one GPU's 4.1 s resumes with another's 3.9 s sample.
  CheckpointTracker c({});
  c.Update(M::kCheckpointWait, Saving(0), 0);
  c.Update(M::kCheckpointWait, Saving(1000), 1000);
  c.Update(M::kWorking, Working(4100), 4100);
  c.Update(M::kCheckpointWait, Saving(3900), 3900);
  c.Finish();
  ASSERT_EQ(c.episodes().size(), 1u) << "within checkpoint_merge_s of its end: the same one";
  EXPECT_EQ(c.episodes()[0].start_ms, 0);
  EXPECT_EQ(c.episodes()[0].end_ms, 3900);
}

TEST(CheckpointTrackerTest, MergeWindowIsAnOption) {
  TriageOptions o;
  o.checkpoint_merge_s = 0.5;
  CheckpointTracker c(o);
  c.Update(M::kCheckpointWait, Saving(0), 0);
  c.Update(M::kWorking, Working(1000), 1000);
  c.Update(M::kCheckpointWait, Saving(2000), 2000);
  c.Finish();
  EXPECT_EQ(c.episodes().size(), 2u);
}

TEST(CheckpointTrackerTest, WritersAreOnlyRanksSampledInThisTick) {
  CheckpointTracker c({});
  // 1 s sampling. GPU 0's view is from the tick before (quiet there, not known to be now); GPU 2's
  // row of this tick came 200 ms before the row evaluated now (rows of a real tick spread over
  // up to ~200 ms: the ckpt1 trace at 00:33:33.911-34.102).
  const std::vector<GpuView> views = {V(0, L::kLow, 400), V(1, L::kLow, 1000), V(2, L::kLow, 800)};
  c.Update(M::kCheckpointWait, views, 1000);
  c.Finish();
  ASSERT_EQ(c.episodes().size(), 1u);
  EXPECT_THAT(c.episodes()[0].writers, ElementsAre(GpuKey{0, 1}, GpuKey{0, 2}));
}

// ---- JobEndTracker ----

TEST(JobEndTrackerTest, JobEndsAfterJobEndSWithoutAProcess) {
  JobEndTracker j({});
  EXPECT_FALSE(j.Update(M::kWorking, 0));
  EXPECT_FALSE(j.Update(M::kNoJob, 1000));
  EXPECT_FALSE(j.Update(M::kNoJob, 6000)) << "exactly job_end_s: not yet";
  EXPECT_TRUE(j.Update(M::kNoJob, 6001));
  EXPECT_TRUE(j.Update(M::kNoJob, 7000)) << "still over";
  EXPECT_FALSE(j.Update(M::kWorking, 8000)) << "a relaunch";
  EXPECT_FALSE(j.Update(M::kNoJob, 9000)) << "the clock starts again";
}

TEST(JobEndTrackerTest, JobEndIsAnOption) {
  TriageOptions o;
  o.job_end_s = 60;
  JobEndTracker j(o);
  j.Update(M::kNoJob, 0);
  EXPECT_FALSE(j.Update(M::kNoJob, 30'000)) << "a restart within a minute is the same job";
  EXPECT_TRUE(j.Update(M::kNoJob, 60'001));
}

}  // namespace
}  // namespace ww::triage
