// Table tests of the pure job-level evaluation (src/triage/job_eval.h): which GPUs count, the
// job's counts and mode, a hang's members and culprits, and the reasons in words. Each row says
// which rule about a distributed job it pins down.
#include "triage/job_eval.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

namespace ww::triage {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using L = LocalClass;
using M = JobMode;

const TriageOptions kO;  // the defaults the product ships with
constexpr int64_t kNow = 100'000;

// A GPU of the job, sampled at kNow every 100 ms, in class cls.
GpuView V(uint16_t gpu, LocalClass cls, int64_t spin_since_ms = 0) {
  GpuView v;
  v.key = {0, gpu};
  v.classified = true;
  v.in_job = true;
  v.cur_ms = kNow;
  v.interval_s = 0.1;
  v.cls = cls;
  v.sustained_spin = cls == L::kSpin;
  v.spin_since_ms = spin_since_ms;
  return v;
}
GpuView OnHost(uint16_t host, GpuView v) {
  v.key.host = host;
  return v;
}
GpuView LastSeen(int64_t cur_ms, GpuView v) {
  v.cur_ms = cur_ms;
  return v;
}
GpuView Spacing(double interval_s, GpuView v) {
  v.interval_s = interval_s;
  return v;
}
GpuView NotInJob(GpuView v) {
  v.in_job = false;
  return v;
}
GpuView Unclassified(GpuView v) {
  v.classified = false;
  return v;
}
GpuView Blip(GpuView v) {
  v.sustained_spin = false;
  return v;
}
GpuView Starved(GpuView v) {
  v.starved = true;
  return v;
}

// ---- IsActiveInJob: which GPUs a job decision listens to ----

struct ActiveRow {
  GpuView v;
  bool want;
  const char* why;
};

TEST(JobEvalTest, IsActiveInJob) {
  const std::vector<ActiveRow> rows = {
      {V(0, L::kBusy), true, "sampled now, in the job"},
      {Unclassified(V(0, L::kBusy)), false, "no sample classified yet: nothing to say"},
      {NotInJob(V(0, L::kLow)), false, "never held the job's process (a spare GPU)"},
      {LastSeen(kNow - 5000, V(0, L::kBusy)), true, "silent exactly stale_s: still counts"},
      {LastSeen(kNow - 5001, V(0, L::kBusy)), false, "silent longer than stale_s: left out"},
      {Spacing(2, LastSeen(kNow - 5500, V(0, L::kBusy))), true,
       "a 2 s log is stale only after 3 intervals (6 s): one late row must not drop it"},
      {Spacing(2, LastSeen(kNow - 6001, V(0, L::kBusy))), false, "3 intervals of 2 s passed"},
  };
  for (const ActiveRow& r : rows) {
    EXPECT_EQ(IsActiveInJob(r.v, kNow, kO), r.want) << r.why;
  }
}

TEST(JobEvalTest, CachedStaleLimitGivesTheSameAnswersAtEveryAge) {
  // The engine caches the limit in whole ms (CacheStaleLimit); the answers must be those of the
  // limit in seconds, at the edge above all: spacings whose stale limit is no whole ms (3 x 0.7 s
  // = 2.0999999999999996 s) or rounds in the division by 1000 (3 x 0.1 s).
  TriageOptions options;
  options.stale_s = 0.05;  // below 3 intervals, so the spacing sets the limit
  for (double interval_s : {0.1, 0.7, 1.0 / 3, 0.123456789, 2.0, 15.0, 29.97}) {
    GpuView plain = Spacing(interval_s, V(0, L::kBusy));
    GpuView cached = plain;
    CacheStaleLimit(&cached, options);
    ASSERT_FALSE(std::isnan(cached.cached_stale_s)) << interval_s;
    const auto limit_ms = static_cast<int64_t>(options.stale_intervals * interval_s * 1000);
    for (int64_t age = limit_ms - 3; age <= limit_ms + 3; ++age) {
      plain.cur_ms = cached.cur_ms = kNow - age;
      EXPECT_EQ(IsActiveInJob(cached, kNow, options), IsActiveInJob(plain, kNow, options))
          << "interval " << interval_s << " s, silent " << age << " ms";
    }
    // A sample later than now (another GPU's clock ahead) counts, as before.
    cached.cur_ms = kNow + 500;
    EXPECT_TRUE(IsActiveInJob(cached, kNow, options));
    // The spacing changed without a new cache: the answer is worked out in seconds again.
    cached.interval_s = interval_s * 10;
    cached.cur_ms = kNow - limit_ms - 100;
    EXPECT_TRUE(IsActiveInJob(cached, kNow, options)) << interval_s;
  }
}

// ---- CountJob + ClassifyJob: the job's mode from every GPU's view ----

// ckpt100 every 15 s: rank 0's readings alternate training and saves, so its window reads as
// starvation; quiet in this reading while its peers spin, they wait on it (a save). At 100 ms a
// starved rank in a gap is a data wait its peers sit out in a collective: a straggler wait.
TEST(JobEvalTest, AStarvedRankQuietInACoarseReadingIsWaitedOn) {
  for (double interval_s : {0.1, 1.0, 2.0, 15.0, 30.0}) {
    std::vector<GpuView> views = {Starved(V(0, L::kLow)), V(1, L::kSpin), V(2, L::kSpin)};
    for (GpuView& v : views) {
      v.interval_s = interval_s;
      v.proc = ProcState::kLoaded;  // memory.used shows the model held
    }
    const JobCounts c = CountJob(views, kNow, kO);
    const bool coarse = interval_s > kO.comm_share_max_interval_s;
    EXPECT_EQ(c.starved_quiet, coarse ? 1 : 0) << interval_s;
    EXPECT_EQ(c.starved, coarse ? 0 : 1) << interval_s;
    EXPECT_EQ(ClassifyJob(c), coarse ? M::kCheckpointWait : M::kStragglerWait) << interval_s;
    // The slots count the same.
    std::vector<CountSlot> slots;
    for (GpuView& v : views) {
      CacheStaleLimit(&v, kO);
      slots.push_back(MakeCountSlot(v, kO));
    }
    EXPECT_EQ(ClassifyJob(CountSlots(slots, kNow, false)), ClassifyJob(c)) << interval_s;
  }
  // Running kernels in the reading, it still works (a straggler wait at any spacing).
  std::vector<GpuView> busy = {Starved(V(0, L::kBusy)), V(1, L::kSpin)};
  for (GpuView& v : busy) v.interval_s = 15;
  EXPECT_EQ(ClassifyJob(CountJob(busy, kNow, kO)), M::kStragglerWait);
  // Without memory.used nothing shows it holds a model: no save is read into it.
  std::vector<GpuView> unknown = {Starved(V(0, L::kLow)), V(1, L::kSpin)};
  unknown[0].proc = ProcState::kUnknown;
  for (GpuView& v : unknown) v.interval_s = 15;
  EXPECT_EQ(CountJob(unknown, kNow, kO).starved_quiet, 0);
  EXPECT_EQ(ClassifyJob(CountJob(unknown, kNow, kO)), M::kStragglerWait);
}

struct CountRow {
  std::vector<GpuView> views;
  int active, spin, busy, partial, low, gone, starved;
  JobMode mode;
  const char* why;
};

TEST(JobEvalTest, CountJobAndMode) {
  const std::vector<CountRow> rows = {
      {{}, 0, 0, 0, 0, 0, 0, 0, M::kNoJob, "no GPU at all"},
      {{V(0, L::kBusy), V(1, L::kBusy)}, 2, 0, 2, 0, 0, 0, 0, M::kWorking, "both compute"},
      {{V(0, L::kSpin), V(1, L::kSpin)},
       2,
       2,
       0,
       0,
       0,
       0,
       0,
       M::kHangCandidate,
       "both spin for long: nobody left to make progress"},
      {{Blip(V(0, L::kSpin)), V(1, L::kSpin)},
       2,
       1,
       1,
       0,
       0,
       0,
       0,
       M::kStragglerWait,
       "a spin shorter than min_spin_s is an ordinary collective: counts as busy"},
      {{V(0, L::kGone), V(1, L::kSpin)},
       2,
       1,
       0,
       0,
       0,
       1,
       0,
       M::kHangCandidate,
       "a rank exited and its peer waits for it"},
      {{V(0, L::kLow), V(1, L::kSpin)},
       2,
       1,
       0,
       0,
       1,
       0,
       0,
       M::kCheckpointWait,
       "the peer waits on a live rank without kernels: it saves"},
      {{Starved(V(0, L::kPartial)), V(1, L::kSpin)},
       2,
       1,
       0,
       0,
       0,
       0,
       1,
       M::kStragglerWait,
       "a starved rank still works; starvation wins over its local class"},
      {{V(0, L::kPartial), V(1, L::kLow)},
       2,
       0,
       0,
       1,
       1,
       0,
       0,
       M::kWorking,
       "partial kernels are work"},
      {{V(0, L::kLow), V(1, L::kLow)},
       2,
       0,
       0,
       0,
       2,
       0,
       0,
       M::kAllQuiet,
       "every rank quiet: all-rank checkpoint or start-up"},
      {{V(0, L::kGone), V(1, L::kGone)},
       2,
       0,
       0,
       0,
       0,
       2,
       0,
       M::kNoJob,
       "everyone exited: the job is over, not hung"},
      {{LastSeen(kNow - 6000, V(0, L::kBusy)), V(1, L::kSpin)},
       1,
       1,
       0,
       0,
       0,
       0,
       0,
       M::kHangCandidate,
       "a silent GPU is left out, even if it was computing when last seen"},
      {{NotInJob(V(0, L::kLow)), V(1, L::kSpin)},
       1,
       1,
       0,
       0,
       0,
       0,
       0,
       M::kHangCandidate,
       "a GPU that never joined the job does not count as a saving rank"},
  };
  for (const CountRow& r : rows) {
    const JobCounts c = CountJob(r.views, kNow, kO);
    EXPECT_EQ(c.active, r.active) << r.why;
    EXPECT_EQ(c.spin, r.spin) << r.why;
    EXPECT_EQ(c.busy, r.busy) << r.why;
    EXPECT_EQ(c.partial, r.partial) << r.why;
    EXPECT_EQ(c.low, r.low) << r.why;
    EXPECT_EQ(c.gone, r.gone) << r.why;
    EXPECT_EQ(c.starved, r.starved) << r.why;
    EXPECT_EQ(ClassifyJob(c), r.mode) << r.why;
  }
}

// ---- ChooseHangMembers: who a hang covers and whom it blames ----

struct MembersRow {
  std::vector<GpuView> views;
  JobMode mode;
  std::vector<uint16_t> want_gpus;
  std::vector<uint16_t> want_culprits;
  const char* why;
};

std::vector<uint16_t> Gpus(const std::vector<GpuKey>& keys) {
  std::vector<uint16_t> out;
  for (GpuKey k : keys) out.push_back(k.gpu);
  return out;
}

TEST(JobEvalTest, ChooseHangMembers) {
  const std::vector<MembersRow> rows = {
      {{V(0, L::kSpin, 1000), V(1, L::kSpin, 1100), V(2, L::kSpin, 900)},
       M::kHangCandidate,
       {0, 1, 2},
       {},
       "all started waiting within culprit_margin_s: telemetry names nobody"},
      {{V(0, L::kSpin, 1000), V(1, L::kSpin, 1100), V(2, L::kSpin, 5000)},
       M::kHangCandidate,
       {0, 1, 2},
       {2},
       "GPU 2 kept computing 4 s after the others waited: the ranks disagree, it is the culprit"},
      {{V(0, L::kSpin, 1000), V(1, L::kSpin, 4000), V(2, L::kSpin, 5000)},
       M::kHangCandidate,
       {0, 1, 2},
       {1, 2},
       "ranks within culprit_margin_s of the last one are all blamed"},
      {{V(0, L::kSpin, 1000), V(1, L::kGone), V(2, L::kSpin, 9000)},
       M::kHangCandidate,
       {0, 1, 2},
       {1},
       "a rank whose process is gone is the culprit, whatever the spin times say"},
      {{V(3, L::kSpin, 1000), V(1, L::kGone), V(0, L::kGone)},
       M::kHangCandidate,
       {0, 1, 3},
       {0, 1},
       "members and culprits come in key order whatever order the views are in"},
      {{V(0, L::kSpin, 1000), LastSeen(kNow - 9000, V(1, L::kSpin, 8000)), V(2, L::kSpin, 1200)},
       M::kHangCandidate,
       {0, 1, 2},
       {},
       "a GPU that stopped reporting while it waited too is a member (its GPU-hours count), a "
       "victim like the others: its late spin start does not single out anyone"},
      {{V(0, L::kSpin, 60000), LastSeen(kNow - 45000, V(1, L::kBusy)), V(2, L::kSpin, 60200)},
       M::kHangCandidate,
       {0, 1, 2},
       {1},
       "a GPU that stopped reporting, computing, just before the others began waiting is in "
       "their hang and the first suspect (a crashed node)"},
      {{V(0, L::kSpin, 60000), LastSeen(kNow - 95000, V(1, L::kBusy)), V(2, L::kSpin, 60200)},
       M::kHangCandidate,
       {0, 2},
       {},
       "a GPU silent for longer than stopped_reporting_window_s before the wait is not part of "
       "it (the others went on without it)"},
      {{V(0, L::kLow), V(1, L::kSpin, 1000), V(2, L::kSpin, 1000)},
       M::kCheckpointWait,
       {0, 1, 2},
       {0},
       "an over-long checkpoint wait blames the quiet rank the others wait on"},
      {{V(0, L::kLow), V(1, L::kSpin, 1000), V(2, L::kSpin, 9000)},
       M::kCheckpointWait,
       {0, 1, 2},
       {0},
       "in a checkpoint wait, spin times name no culprit: the saver is"},
      {{NotInJob(V(0, L::kLow)), V(1, L::kLow), V(2, L::kSpin, 1000)},
       M::kCheckpointWait,
       {1, 2},
       {1},
       "a GPU outside the job is neither member nor saver"},
  };
  for (const MembersRow& r : rows) {
    const HangMembers m = ChooseHangMembers(r.views, r.mode, kNow, kO);
    EXPECT_EQ(Gpus(m.gpus), r.want_gpus) << r.why;
    EXPECT_EQ(Gpus(m.culprits), r.want_culprits) << r.why;
  }
}

TEST(JobEvalTest, ChooseHangMembersOrdersHostsBeforeGpus) {
  const std::vector<GpuView> views = {OnHost(1, V(0, L::kGone)), OnHost(0, V(7, L::kSpin, 1000)),
                                      OnHost(0, V(2, L::kGone))};
  const HangMembers m = ChooseHangMembers(views, M::kHangCandidate, kNow, kO);
  EXPECT_THAT(m.gpus, ElementsAre(GpuKey{0, 2}, GpuKey{0, 7}, GpuKey{1, 0}));
  EXPECT_THAT(m.culprits, ElementsAre(GpuKey{0, 2}, GpuKey{1, 0}));
}

// ---- ApplySample: the view follows its GPU's samples ----

SampleFeatures F(int64_t t_ms, LocalClass cls, ProcState proc = ProcState::kLoaded) {
  SampleFeatures f;
  f.t_ms = t_ms;
  f.cls = cls;
  f.proc = proc;
  return f;
}

TEST(JobEvalTest, ApplySampleKeepsTheStartOfASpinRun) {
  GpuView v;
  ApplySample(F(1000, L::kBusy), &v);
  ApplySample(F(1100, L::kSpin), &v);
  ApplySample(F(1200, L::kSpin), &v);
  EXPECT_EQ(v.spin_since_ms, 1100) << "a spin run starts at its first spin sample";
  EXPECT_EQ(v.cur_ms, 1200);
  ApplySample(F(1300, L::kBusy), &v);
  ApplySample(F(1400, L::kSpin), &v);
  EXPECT_EQ(v.spin_since_ms, 1400) << "a new run after work starts afresh";
}

TEST(JobEvalTest, ApplySampleStartsWithSpinOnTheFirstSample) {
  GpuView v;
  ApplySample(F(500, L::kSpin), &v);
  EXPECT_EQ(v.spin_since_ms, 500);
  ApplySample(F(600, L::kGone, ProcState::kReleased), &v);
  EXPECT_EQ(v.gone_since_ms, 600);
}

struct InJobRow {
  LocalClass cls;
  ProcState proc;
  bool want;
  const char* why;
};

TEST(JobEvalTest, ApplySampleJoinsTheJob) {
  using P = ProcState;
  const std::vector<InJobRow> rows = {
      {L::kLow, P::kLoaded, true, "a model in memory is the job's, kernels or not"},
      {L::kBusy, P::kContext, false, "a context without a model (data prep) has not joined"},
      {L::kBusy, P::kUnknown, true, "no memory reading: kernels are the sign of the job"},
      {L::kPartial, P::kUnknown, true, "no memory reading: some kernels are enough"},
      {L::kLow, P::kUnknown, false, "no memory reading and no kernels: nothing says job"},
      {L::kGone, P::kNone, false, "no process"},
  };
  for (const InJobRow& r : rows) {
    GpuView v;
    ApplySample(F(1000, r.cls, r.proc), &v);
    EXPECT_EQ(v.in_job, r.want) << r.why;
  }
  // Once in, a GPU stays in until the job ends (the engine resets it): a rank that exits is a
  // gone member, not a stranger.
  GpuView v;
  ApplySample(F(1000, L::kBusy, P::kLoaded), &v);
  ApplySample(F(1100, L::kGone, P::kReleased), &v);
  EXPECT_TRUE(v.in_job);
}

// ---- HangReasons: what the user reads to check the call ----

HangEvidence Evidence(double power_lo_w, double power_hi_w, double frac, double util_mem) {
  HangEvidence e;
  GpuView a = V(0, L::kSpin), b = V(1, L::kSpin);
  a.last_power_w = power_lo_w;
  b.last_power_w = power_hi_w;
  a.last_power_frac = b.last_power_frac = frac;
  a.last_util_mem_pct = util_mem;
  e.Add(a);
  e.Add(b);
  return e;
}

TEST(JobEvalTest, HangReasonsNameTheGoneRank) {
  const auto reasons =
      HangReasons(Evidence(110, 125, 0.08, 0), 8, 1, {GpuKey{0, 3}}, 45, kO.thresholds, {"node0"});
  ASSERT_EQ(reasons.size(), 4u);
  EXPECT_EQ(reasons[0],
            "7 of 8 GPUs at >= 90 % utilization but 0.08 of their power range (110-125 W), flat "
            "for 45 s: spinning in a collective, not computing");
  EXPECT_EQ(reasons[1], "memory-controller utilization at most 0 %: no data moving");
  EXPECT_EQ(reasons[2], "process gone on node0/GPU3 (memory released) while its peers wait for it");
  EXPECT_EQ(reasons[3], "no rank computing or saving for 45 s (confirmation window)");
}

// Issue 19, item 4: a GPU the driver lost (Xid 79) is gone for the job: its peers spinning on it
// are a hang candidate (not a checkpoint wait), it is the culprit, and the reason says lost.
TEST(JobEvalTest, LostGpuIsGoneAndTheCulprit) {
  GpuView lost = V(3, L::kGone);
  lost.lost = true;
  const std::vector<GpuView> views = {V(0, L::kSpin), V(1, L::kSpin), V(2, L::kSpin), lost};
  EXPECT_EQ(ClassifyJob(CountJob(views, kNow, kO)), M::kHangCandidate);
  const HangMembers m = ChooseHangMembers(views, M::kHangCandidate, kNow, kO);
  EXPECT_THAT(m.culprits, ElementsAre(GpuKey{0, 3}));
  const auto reasons = HangReasons(Evidence(110, 125, 0.08, 0), 4, 1, m.culprits, 45, kO.thresholds,
                                   {"node0"}, {GpuKey{0, 3}});
  EXPECT_THAT(reasons, ::testing::Contains(HasSubstr("node0/GPU3 lost: the driver reads [GPU is "
                                                     "lost] (fell off the bus, e.g. Xid 79)")));
  EXPECT_THAT(reasons, ::testing::Not(::testing::Contains(HasSubstr("process gone"))));
  // A lost GPU and a crashed rank: both said.
  const auto both = HangReasons(Evidence(110, 125, 0.08, 0), 4, 2, {{0, 2}, {0, 3}}, 45,
                                kO.thresholds, {"node0"}, {GpuKey{0, 3}});
  EXPECT_THAT(both, ::testing::Contains(HasSubstr("process gone on node0/GPU2 (memory")));
  EXPECT_THAT(both, ::testing::Contains(HasSubstr("node0/GPU3 lost")));
}

TEST(JobEvalTest, HangReasonsBlameTheLateRanks) {
  const auto reasons = HangReasons(Evidence(100, 100, 0.1, 0), 4, 0, {{0, 1}, {1, 2}}, 50,
                                   kO.thresholds, {"a", "b"});
  EXPECT_THAT(reasons, ::testing::Contains(HasSubstr(
                           "a/GPU1, b/GPU2 kept computing after the others were already waiting")));
}

TEST(JobEvalTest, HangReasonsWithoutCulpritOrEvidenceSayNoMore) {
  // No spin sample had power, memory utilization never logged: only what is known is said.
  const auto reasons = HangReasons(HangEvidence{}, 2, 0, {}, 45, kO.thresholds, {});
  EXPECT_THAT(reasons,
              ElementsAre("all ranks entered the wait together; telemetry names no single culprit",
                          "no rank computing or saving for 45 s (confirmation window)"));
}

TEST(JobEvalTest, GpuNameWithoutHostName) {
  EXPECT_EQ(GpuName({1, 4}, {"node0", "node1"}), "node1/GPU4");
  EXPECT_EQ(GpuName({2, 4}, {"node0"}), "host2/GPU4") << "an unnamed host still gets a name";
}

TEST(JobEvalTest, EvidenceIgnoresSpinsWithoutPower) {
  HangEvidence e;
  GpuView v = V(0, L::kSpin);  // power NaN: not logged
  v.last_util_mem_pct = 3;
  e.Add(v);
  EXPECT_EQ(e.spin_samples, 0) << "a missing reading is not 0 W";
  EXPECT_EQ(e.util_mem_max_pct, 3);
}

}  // namespace
}  // namespace ww::triage
