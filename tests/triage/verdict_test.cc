// The verdicts (src/triage/verdict.h), table-tested: the per-sample overrides on DecideState,
// when every rank quiet may be a checkpoint, the whole-log hang verdict and the live one.
#include "triage/verdict.h"

#include <gtest/gtest.h>

namespace ww::triage {
namespace {

TEST(FinalSampleState, TheJobsSayOverridesTheSamplesStateInOrder) {
  struct Case {
    const char* what;
    GpuState decided;
    SampleContext c;
    GpuState state;
    double share;
    bool quiet_held;
  };
  const JobMode quiet = JobMode::kAllQuiet, work = JobMode::kWorking;
  const Case cases[] = {
      {"all quiet, loaded: idle, held for a checkpoint", GpuState::kCheckpoint,
       SampleContext{.mode = quiet, .quiet_may_checkpoint = true, .proc_loaded = true},
       GpuState::kIdle, 0, true},
      {"all quiet, not eligible: idle, not held", GpuState::kCheckpoint,
       SampleContext{.mode = quiet, .proc_loaded = true}, GpuState::kIdle, 0, false},
      {"all quiet, context only: idle, not held", GpuState::kCheckpoint,
       SampleContext{.mode = quiet, .quiet_may_checkpoint = true}, GpuState::kIdle, 0, false},
      {"a peer's checkpoint wait stays checkpoint", GpuState::kCheckpoint,
       SampleContext{.mode = JobMode::kCheckpointWait, .proc_loaded = true}, GpuState::kCheckpoint,
       0, false},
      {"one GPU: communication is compute", GpuState::kCommunication,
       SampleContext{.mode = work, .one_gpu = true, .proc_loaded = true, .compute_share = 0.1},
       GpuState::kCompute, 1, false},
      {"one GPU: compute at low power is all compute", GpuState::kCompute,
       SampleContext{.mode = work, .one_gpu = true, .proc_loaded = true, .compute_share = 0.2},
       GpuState::kCompute, 1, false},
      {"busy, mostly compute", GpuState::kCompute,
       SampleContext{.mode = work, .proc_loaded = true, .compute_share = 0.7}, GpuState::kCompute,
       0.7, false},
      {"busy, half: compute", GpuState::kCompute,
       SampleContext{.mode = work, .proc_loaded = true, .compute_share = 0.5}, GpuState::kCompute,
       0.5, false},
      {"busy, mostly communication", GpuState::kCompute,
       SampleContext{.mode = work, .proc_loaded = true, .compute_share = 0.3},
       GpuState::kCommunication, 0.3, false},
      {"communication keeps no share", GpuState::kCommunication,
       SampleContext{.mode = work, .proc_loaded = true, .compute_share = 0.9},
       GpuState::kCommunication, 0, false},
      {"a GPU of an active hang is hang", GpuState::kCommunication,
       SampleContext{.mode = JobMode::kHangCandidate,
                     .proc_loaded = true,
                     .compute_share = 0.9,
                     .in_active_hang = true},
       GpuState::kHang, 0, false},
      {"hang wins over the compute split (share kept for nothing)", GpuState::kCompute,
       SampleContext{
           .mode = work, .proc_loaded = true, .compute_share = 0.8, .in_active_hang = true},
       GpuState::kHang, 0.8, false},
      {"idle stays idle", GpuState::kIdle,
       SampleContext{.mode = work, .proc_loaded = true, .compute_share = 0.9}, GpuState::kIdle, 0,
       false},
      {"starved stays starved", GpuState::kDataStarved,
       SampleContext{.mode = work, .proc_loaded = true, .compute_share = 0.9},
       GpuState::kDataStarved, 0, false},
  };
  for (const Case& c : cases) {
    const SampleState s = FinalSampleState(c.decided, c.c);
    EXPECT_EQ(s.state, c.state) << c.what;
    EXPECT_DOUBLE_EQ(s.compute_share, c.share) << c.what;
    EXPECT_EQ(s.quiet_held, c.quiet_held) << c.what;
  }
}

TEST(QuietMayBeCheckpoint, OnlyAfterTrainingWithMemoryHeldInAJobOfSeveralRanks) {
  TriageOptions o;
  GpuView held;
  held.classified = held.in_job = true;
  held.cls = LocalClass::kLow;
  held.proc = ProcState::kLoaded;
  held.cur_ms = 1000;
  const std::vector<GpuView> views = {held, held};
  const double enough = o.min_training_before_quiet_s;
  EXPECT_TRUE(QuietMayBeCheckpoint(JobMode::kAllQuiet, true, enough, false, views, 1000, o));
  EXPECT_FALSE(QuietMayBeCheckpoint(JobMode::kWorking, true, enough, false, views, 1000, o));
  EXPECT_FALSE(QuietMayBeCheckpoint(JobMode::kAllQuiet, false, enough, false, views, 1000, o));
  if (enough > 0) {
    EXPECT_FALSE(QuietMayBeCheckpoint(JobMode::kAllQuiet, true, enough / 2, false, views, 1000, o));
  }
  EXPECT_FALSE(QuietMayBeCheckpoint(JobMode::kAllQuiet, true, enough, true, views, 1000, o));
  EXPECT_FALSE(QuietMayBeCheckpoint(JobMode::kAllQuiet, true, enough, false, {}, 1000, o));
}

TEST(CheckpointMode, NothingSavesDuringAHang) {
  EXPECT_EQ(CheckpointMode(JobMode::kCheckpointWait, true), JobMode::kHangCandidate);
  EXPECT_EQ(CheckpointMode(JobMode::kCheckpointWait, false), JobMode::kCheckpointWait);
  EXPECT_EQ(CheckpointMode(JobMode::kAllQuiet, false), JobMode::kAllQuiet);
}

TEST(TooShortToTell, ALogShorterThanTheConfirmWindowCannotSayNoHang) {
  EXPECT_TRUE(TooShortToTell(28.9, 29));
  EXPECT_FALSE(TooShortToTell(29, 29));
  EXPECT_EQ(TooShortReason(4, 5, "the job", 29),
            "4.0 s (5 samples), too short to tell whether the job hung: a hang is confirmed "
            "after 29 s of spinning with nobody working, so at least 30 s of samples are needed");
  EXPECT_NE(TooShortReason(0, 1, "it", 29).find("(1 sample),"), std::string::npos);
}

TEST(DecideLogVerdict, EpisodeThenSnapshotThenEvidence) {
  SnapshotVerdict suspected;
  suspected.verdict = HangVerdict::kSuspected;
  struct Case {
    LogVerdictInput in;
    HangVerdict want;
  };
  const Case cases[] = {
      {{true, nullptr, false, false}, HangVerdict::kConfirmed},
      {{true, &suspected, false, true}, HangVerdict::kConfirmed},
      {{false, &suspected, false, false}, HangVerdict::kSuspected},
      {{false, nullptr, true, false}, HangVerdict::kUnknown},
      {{false, nullptr, false, true}, HangVerdict::kUnknown},
      {{false, nullptr, false, false}, HangVerdict::kNone},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(DecideLogVerdict(c.in), c.want) << HangVerdictName(c.want);
  }
}

TEST(LiveJobVerdict, HangThenCheckpointThenTheMostGpusWithTiesToWhatTheJobDoes) {
  using Counts = std::array<int, kNumGpuStates>;
  auto counts = [](std::initializer_list<std::pair<GpuState, int>> l) {
    Counts c{};
    for (auto [s, n] : l) c[static_cast<size_t>(s)] = n;
    return c;
  };
  struct Case {
    bool hang;
    Counts c;
    const char* want;
  };
  const Case cases[] = {
      {false, Counts{}, "unknown"},
      {true, Counts{}, "hang"},
      {true, counts({{GpuState::kCompute, 8}}), "hang"},
      {false, counts({{GpuState::kCompute, 7}, {GpuState::kCheckpoint, 1}}), "checkpoint"},
      {false, counts({{GpuState::kCompute, 2}, {GpuState::kCommunication, 2}}), "compute"},
      {false, counts({{GpuState::kCommunication, 3}, {GpuState::kCompute, 2}}), "communication"},
      {false, counts({{GpuState::kIdle, 2}, {GpuState::kDataStarved, 2}}), "data_starved"},
      // Labelled hang but not (or no longer) a confirmed one in progress: the GPUs say so.
      {false, counts({{GpuState::kHang, 4}, {GpuState::kIdle, 1}}), "hang"},
      {false, counts({{GpuState::kHang, 2}, {GpuState::kIdle, 2}}), "idle"},
  };
  for (const Case& c : cases) EXPECT_EQ(LiveJobVerdict(c.hang, c.c), c.want);
}

TEST(LiveJobReasons, AHangsOwnElseTheCountsAndTheCandidate) {
  const std::vector<std::string> hang = {"util 100 %", "culprit node1/GPU3"};
  LiveReasonsInput in;
  in.hang_reasons = &hang;
  in.gpu_states[static_cast<size_t>(GpuState::kCompute)] = 3;
  EXPECT_EQ(LiveJobReasons(in), hang);
  in.hang_reasons = nullptr;
  in.hosts = 2;
  in.last_ms = 60'000;
  in.gpu_states[static_cast<size_t>(GpuState::kCommunication)] = 1;
  in.candidate_start_ms = 50'000;
  in.hang_confirm_s = 29;
  const auto r = LiveJobReasons(in);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0], "4 GPU(s) on 2 host(s) at 1970-01-01T00:01:00.000Z: 3 compute, 1 communication");
  EXPECT_EQ(r[1],
            "every rank spins or is gone since 1970-01-01T00:00:50.000Z (10 s): a hang once it "
            "lasts 29 s");
  EXPECT_TRUE(LiveJobReasons(LiveReasonsInput{}).empty());
}

}  // namespace
}  // namespace ww::triage
