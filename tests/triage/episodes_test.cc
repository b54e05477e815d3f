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

using ::testing::ElementsAre;
using ::testing::HasSubstr;
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
  h.Update(M::kCheckpointWait, views(10'000), 10'000);
  ASSERT_TRUE(h.candidate());
  EXPECT_EQ(h.candidate()->start_ms, 10'000);
  EXPECT_THAT(h.candidate()->culprits, ElementsAre(GpuKey{0, 0}));
  for (int64_t t = 11'000; t <= 15'000; t += 1000) h.Update(M::kCheckpointWait, views(t), t);
  ASSERT_NE(h.active(), nullptr);
  EXPECT_THAT(h.active()->reasons.front(), HasSubstr("peers spun for 10 s on ranks that hold"));
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

// ---- CheckpointTracker ----

std::vector<GpuView> Saving(int64_t t) {
  return {V(0, L::kLow, t), V(1, L::kSpin, t), V(2, L::kSpin, t)};
}

TEST(CheckpointTrackerTest, RanksWaitingOnASaverAreOneCheckpoint) {
  CheckpointTracker c({});
  for (int64_t t = 0; t < 5000; t += 1000) c.Update(M::kWorking, true, Working(t), t);
  for (int64_t t = 5000; t <= 20'000; t += 1000) c.Update(M::kCheckpointWait, true, Saving(t), t);
  for (int64_t t = 21'000; t < 30'000; t += 1000) c.Update(M::kWorking, true, Working(t), t);
  ASSERT_EQ(c.episodes().size(), 1u);
  EXPECT_EQ(c.episodes()[0].start_ms, 5000);
  EXPECT_EQ(c.episodes()[0].end_ms, 20'000);
  EXPECT_FALSE(c.episodes()[0].all_ranks);
  EXPECT_THAT(c.episodes()[0].writers, ElementsAre(GpuKey{0, 0})) << "the quiet rank saves";
}

TEST(CheckpointTrackerTest, AllQuietIsACheckpointOnlyAfterTraining) {
  const std::vector<GpuView> quiet = {V(0, L::kLow, 0), V(1, L::kLow, 0)};
  CheckpointTracker before({});
  for (int64_t t = 0; t < 10'000; t += 1000) before.Update(M::kAllQuiet, false, quiet, t);
  before.Finish();
  EXPECT_TRUE(before.episodes().empty()) << "quiet before the first compute is start-up";

  CheckpointTracker after({});
  after.Update(M::kAllQuiet, true, quiet, 0);
  after.Finish();
  ASSERT_EQ(after.episodes().size(), 1u);
  EXPECT_TRUE(after.episodes()[0].all_ranks) << "every rank quiet: a sharded save";
}

TEST(CheckpointTrackerTest, OpenCheckpointOutlivesShortBursts) {
  CheckpointTracker c({});
  c.Update(M::kCheckpointWait, true, Saving(0), 0);
  c.Update(M::kCheckpointWait, true, Saving(1000), 1000);
  c.Update(M::kWorking, true, Working(2000), 2000);  // a burst of the saver's copy kernels
  c.Update(M::kWorking, true, Working(4000), 4000);  // 3 s after the last evidence: still open
  c.Update(M::kCheckpointWait, true, Saving(4500), 4500);
  c.Update(M::kWorking, true, Working(7600), 7600);  // 3.1 s after: closed
  c.Update(M::kCheckpointWait, true, Saving(9000), 9000);
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
  c.Update(M::kCheckpointWait, true, Saving(0), 0);
  c.Update(M::kCheckpointWait, true, Saving(1000), 1000);
  c.Update(M::kWorking, true, Working(4100), 4100);
  c.Update(M::kCheckpointWait, true, Saving(3900), 3900);
  c.Finish();
  ASSERT_EQ(c.episodes().size(), 1u) << "within checkpoint_merge_s of its end: the same one";
  EXPECT_EQ(c.episodes()[0].start_ms, 0);
  EXPECT_EQ(c.episodes()[0].end_ms, 3900);
}

TEST(CheckpointTrackerTest, MergeWindowIsAnOption) {
  TriageOptions o;
  o.checkpoint_merge_s = 0.5;
  CheckpointTracker c(o);
  c.Update(M::kCheckpointWait, true, Saving(0), 0);
  c.Update(M::kWorking, true, Working(1000), 1000);
  c.Update(M::kCheckpointWait, true, Saving(2000), 2000);
  c.Finish();
  EXPECT_EQ(c.episodes().size(), 2u);
}

TEST(CheckpointTrackerTest, WritersAreOnlyRanksSampledNow) {
  CheckpointTracker c({});
  // GPU 0's view is from an earlier sample (it is quiet there, but not known to be now).
  const std::vector<GpuView> views = {V(0, L::kLow, 500), V(1, L::kLow, 1000)};
  c.Update(M::kCheckpointWait, true, views, 1000);
  c.Finish();
  ASSERT_EQ(c.episodes().size(), 1u);
  EXPECT_THAT(c.episodes()[0].writers, ElementsAre(GpuKey{0, 1}));
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
