// Table tests of the pure decision logic (src/triage/classifier.h) and of the power calibration
// (src/triage/calibration.h). Each row carries the reasoning it pins down, so a failing row says
// which rule of thumb about GPU behaviour broke.
#include "triage/classifier.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "triage/calibration.h"

namespace ww::triage {
namespace {

const Thresholds kT;  // the defaults the product ships with

// ---- ClassifyProc: what memory.used says about the process ----

struct ProcRow {
  std::optional<double> mem_mib;
  double peak_mib;
  ProcState want;
  const char* why;
};

TEST(ClassifierTest, ClassifyProc) {
  const std::vector<ProcRow> rows = {
      {std::nullopt, 80000, ProcState::kUnknown, "memory.used not logged: don't guess"},
      {0, 0, ProcState::kNone, "nothing allocated: no process"},
      {130, 130, ProcState::kNone, "the driver alone holds ~0-130 MiB"},
      {299, 299, ProcState::kNone, "just below the process threshold"},
      {500, 500, ProcState::kContext, "a CUDA context but no model: launch or data prep"},
      {1500, 1500, ProcState::kContext, "never held a model: still a context"},
      {2048, 2048, ProcState::kLoaded, "at the loaded threshold: a model is in memory"},
      {70000, 70000, ProcState::kLoaded, "model in memory"},
      {30000, 70000, ProcState::kLoaded, "freed activations but kept most weights: alive"},
      {3000, 70000, ProcState::kReleased, "let most of the model go: the process exited"},
      {100, 70000, ProcState::kNone, "everything freed after a model: no process left"},
      {500, 1000, ProcState::kContext, "never held a model: a drop is not a release"},
  };
  for (const ProcRow& r : rows) {
    EXPECT_EQ(ClassifyProc(r.mem_mib, r.peak_mib, kT), r.want) << r.why;
  }
}

// ---- ClassifyLocal: what one board is doing now ----

struct LocalRow {
  std::optional<double> util;
  std::optional<double> power_frac;
  ProcState proc;
  LocalClass want;
  const char* why;
};

TEST(ClassifierTest, ClassifyLocal) {
  using P = ProcState;
  using L = LocalClass;
  const std::vector<LocalRow> rows = {
      {100, 0.10, P::kLoaded, L::kSpin, "util pegged at low power: spinning in a collective"},
      {100, 0.05, P::kUnknown, L::kSpin, "spin needs no memory reading"},
      {95, 0.27, P::kLoaded, L::kSpin, "just under the spin power share"},
      {95, 0.28, P::kLoaded, L::kBusy, "at the spin power share: real work"},
      {100, 0.25, P::kLoaded, L::kSpin, "an A100 spinning at ~35 % of its limit is a spin"},
      {100, 0.80, P::kLoaded, L::kBusy, "util pegged at working power: compute"},
      {100, std::nullopt, P::kLoaded, L::kBusy, "no power logged: can't call it a spin"},
      {89, 0.10, P::kLoaded, L::kBusy, "not pegged: kernels most of the period, not a spin"},
      {50, 0.30, P::kLoaded, L::kBusy, "at the busy threshold"},
      {30, 0.20, P::kLoaded, L::kPartial, "kernels part of the period"},
      {20, 0.05, P::kLoaded, L::kPartial, "at the low threshold: still some kernels"},
      {5, 0.02, P::kLoaded, L::kLow, "process alive, no kernels (e.g. saving a checkpoint)"},
      {0, 0.00, P::kContext, L::kLow, "a context without kernels"},
      {0, 0.00, P::kNone, L::kGone, "no process"},
      {30, 0.10, P::kReleased, L::kGone, "the process let go of its model: exited"},
      {std::nullopt, 0.60, P::kUnknown, L::kBusy, "power alone at working level means kernels"},
      {std::nullopt, 0.45, P::kLoaded, L::kBusy, "at the power-only busy level"},
      {std::nullopt, 0.10, P::kLoaded, L::kLow, "power alone, low: alive but nothing to call busy"},
      {std::nullopt, 0.10, P::kNone, L::kGone, "power alone, low, no process: gone"},
      {std::nullopt, std::nullopt, P::kReleased, L::kGone, "nothing but memory: released"},
      {std::nullopt, std::nullopt, P::kUnknown, L::kLow, "no readings at all: not busy"},
  };
  for (const LocalRow& r : rows) {
    LocalInput in;
    in.util_pct = r.util;
    in.power_frac = r.power_frac;
    in.proc = r.proc;
    EXPECT_EQ(ClassifyLocal(in, kT), r.want) << r.why;
  }
}

// The board's learned spin threshold and DCGM's SM activity.
struct ActivityRow {
  double util;
  std::optional<double> power_frac;
  std::optional<double> learned_spin_frac;
  std::optional<double> sm_activity;
  LocalClass want;
  const char* why;
  std::optional<double> tensor_activity = std::nullopt;
  std::optional<double> dram_activity = std::nullopt;
};

TEST(ClassifierTest, ClassifyLocalWithLearnedSpinAndActivity) {
  using L = LocalClass;
  const std::vector<ActivityRow> rows = {
      {100, 0.30, 0.31, std::nullopt, L::kSpin, "under the board's learned threshold"},
      {100, 0.30, 0.20, std::nullopt, L::kBusy,
       "a learned threshold below the default does not narrow it"},
      {100, 0.26, 0.20, std::nullopt, L::kSpin, "... the default still holds"},
      {100, 0.60, std::nullopt, 0.03, L::kSpin,
       "SMs idle at pegged utilization: a polling kernel, whatever power says"},
      {100, std::nullopt, std::nullopt, 0.03, L::kSpin, "SM activity tells a spin without power"},
      // NCCL keeps one CTA per channel resident in a collective (~0.1-0.25 of the SMs), waiting
      // or moving data: in that band tensor and DRAM activity say which, else power.
      {100, 0.10, std::nullopt, 0.18, L::kSpin, "NCCL's SMs at spin power: a wait"},
      {100, 0.33, std::nullopt, 0.18, L::kBusy, "NCCL's SMs at transfer power: moving data"},
      {100, 0.60, std::nullopt, 0.18, L::kSpin, "no tensor work, no DRAM traffic: a wait", 0.0,
       0.005},
      {100, 0.10, std::nullopt, 0.18, L::kBusy, "DRAM streaming: a transfer, not a wait", 0.0, 0.3},
      {100, 0.10, std::nullopt, 0.25, L::kBusy, "tensor work in the band: light compute", 0.2, 0.2},
      {100, 0.10, std::nullopt, 0.85, L::kBusy,
       "a 15 s average mostly computing: the SMs say work, a low power snapshot does not decide"},
      {60, 0.10, std::nullopt, 0.02, L::kBusy, "not pegged: SM activity does not make a spin"},
  };
  for (const ActivityRow& r : rows) {
    LocalInput in;
    in.util_pct = r.util;
    in.power_frac = r.power_frac;
    in.proc = ProcState::kLoaded;
    in.spin_power_frac = r.learned_spin_frac;
    in.sm_activity = r.sm_activity;
    in.tensor_activity = r.tensor_activity;
    in.dram_activity = r.dram_activity;
    EXPECT_EQ(ClassifyLocal(in, kT), r.want) << r.why;
  }
}

// ---- IsStarved: bursts with gaps while the process lives ----

struct StarveRow {
  WindowStats w;
  LocalClass now;
  ProcState proc;
  bool want;
  const char* why;
};

WindowStats Window(int samples, int busy, int low, int partial, int transitions, double mean_util) {
  WindowStats w;
  w.samples = samples;
  w.busy = busy;
  w.low = low;
  w.partial = partial;
  w.transitions = transitions;
  w.util_samples = samples;
  w.util_sum = mean_util * samples;
  return w;
}

TEST(ClassifierTest, IsStarved) {
  using L = LocalClass;
  using P = ProcState;
  const std::vector<StarveRow> rows = {
      {Window(20, 10, 10, 0, 8, 50), L::kBusy, P::kLoaded, true,
       "repeated bursts and gaps at ~50 % mean util: waiting on the input pipeline"},
      {Window(20, 10, 10, 0, 8, 50), L::kLow, P::kLoaded, true, "in a gap of the same pattern"},
      {Window(20, 10, 10, 0, 8, 50), L::kSpin, P::kLoaded, true,
       "a burst after a gap starts at low power with util pegged: still starved"},
      {Window(20, 10, 10, 0, 8, 50), L::kGone, P::kLoaded, false, "gone is never starved"},
      {Window(20, 10, 10, 0, 8, 50), L::kBusy, P::kNone, false, "no process: nothing to starve"},
      {Window(20, 10, 10, 0, 8, 50), L::kBusy, P::kReleased, false, "exited: nothing to starve"},
      {Window(20, 20, 0, 0, 0, 97), L::kBusy, P::kLoaded, false, "steady training reads ~100 %"},
      {Window(20, 1, 19, 0, 2, 5), L::kLow, P::kLoaded, false, "mostly quiet: not working at all"},
      {Window(20, 10, 10, 0, 1, 50), L::kLow, P::kLoaded, false,
       "one change of phase (training stops for a checkpoint) is not starvation"},
      {Window(10, 3, 3, 4, 0, 45), L::kPartial, P::kLoaded, true,
       "coarse sampling averages burst+gap into partial readings"},
      {Window(10, 4, 4, 2, 0, 45), L::kPartial, P::kLoaded, false,
       "a few partial readings without flips are transitions, not a pattern"},
      {Window(2, 1, 1, 0, 2, 50), L::kBusy, P::kLoaded, false, "too few samples to judge"},
      {Window(20, 10, 0, 0, 4, 50), L::kBusy, P::kLoaded, false,
       "flips without any low sample are not gaps"},
  };
  for (const StarveRow& r : rows) {
    EXPECT_EQ(IsStarved(r.w, r.now, r.proc, kT), r.want) << r.why;
  }
  WindowStats no_util = Window(20, 10, 10, 0, 8, 50);
  no_util.util_samples = 0;
  no_util.util_sum = 0;
  EXPECT_FALSE(IsStarved(no_util, L::kBusy, P::kLoaded, kT)) << "no utilization: can't tell";
}

// ---- Bursty work: an evaluation pass is work, not starvation ----

TEST(ClassifierTest, PlacePowerBand) {
  // An H100: floor 70 W, compute level 570 W, design range 630 W.
  const auto band = [](double w) { return PlacePowerBand(w, 70, 570, 630, kT); };
  EXPECT_EQ(band(90), PowerBand::kRest) << "a wait of a second falls to the model held";
  EXPECT_EQ(band(195), PowerBand::kRest) << "0.25 of [floor, compute level]";
  EXPECT_EQ(band(280), PowerBand::kMiddle) << "forward-only batches at moderate power";
  EXPECT_EQ(band(365), PowerBand::kMiddle);
  EXPECT_EQ(band(370), PowerBand::kHigh) << "0.6 of the way: a training step's power";
  EXPECT_EQ(band(std::nan("")), PowerBand::kUnknown) << "no reading";
  EXPECT_EQ(PlacePowerBand(150, 70, 200, 630, kT), PowerBand::kUnknown)
      << "a compute level 130 W above the floor (0.21 of the range): no real work seen to "
         "compare with";
  EXPECT_EQ(PlacePowerBand(150, 70, 570, 0, kT), PowerBand::kUnknown) << "no range";
}

TEST(ClassifierTest, IsBurstyWork) {
  auto w = [](int samples, int placed, int rest, int high, int runs, int dips) {
    WindowStats s;
    s.samples = samples;
    s.power_unplaced = samples - placed;
    s.power_rest = rest;
    s.power_high = high;
    s.power_high_runs = runs;
    s.dips = dips;
    return s;
  };
  struct Row {
    WindowStats w;
    bool starved;
    double interval_s;
    bool want;
    const char* why;
  };
  const std::vector<Row> rows = {
      {w(120, 120, 0, 0, 0, 0), true, 0.1, true, "bursty, power in the middle throughout"},
      {w(120, 120, 0, 4, 1, 0), true, 0.1, true,
       "one run of lagging high power at 100 ms: the training step before the pass"},
      {w(120, 120, 0, 9, 2, 0), true, 0.1, false,
       "two bursts that reached the compute level: training steps, starving"},
      {w(120, 120, 6, 0, 0, 0), true, 0.1, false, "gaps long enough to fall to rest: starving"},
      {w(7, 7, 0, 1, 1, 0), true, 15, false,
       "at 15 s one high reading is a sampled training step: starving"},
      {w(7, 7, 0, 0, 0, 0), true, 15, true, "at 15 s, middle readings only"},
      {w(120, 119, 0, 0, 0, 0), true, 0.1, false, "a reading not placed: can't tell"},
      {w(2, 2, 0, 0, 0, 0), true, 0.1, false, "too few readings"},
      {w(120, 120, 0, 0, 0, 17), false, 0.1, true,
       "not starved (gaps shorter than the debounce) but dipping between batches"},
      {w(120, 120, 0, 0, 0, 2), false, 0.1, false, "two dips: a training job's hiccups"},
      {w(120, 120, 0, 0, 0, 0), false, 0.1, false, "pegged throughout: training or a spin"},
  };
  for (const Row& r : rows) {
    EXPECT_EQ(IsBurstyWork(r.w, r.starved, r.interval_s, kT), r.want) << r.why;
  }
}

// ---- ClassifyJob: who waits on whom ----

struct JobRow {
  JobCounts c;
  JobMode want;
  const char* why;
};

JobCounts Counts(int active, int spin, int busy, int partial, int low, int gone, int starved = 0) {
  JobCounts c;
  c.active = active;
  c.spin = spin;
  c.busy = busy;
  c.partial = partial;
  c.low = low;
  c.gone = gone;
  c.starved = starved;
  return c;
}

// Counts plus n ranks starved by their window but quiet in a coarse reading.
JobCounts StarvedQuiet(JobCounts c, int n) {
  c.active += n;
  c.starved_quiet = n;
  return c;
}

TEST(ClassifierTest, ClassifyJob) {
  using M = JobMode;
  const std::vector<JobRow> rows = {
      {Counts(0, 0, 0, 0, 0, 0), M::kNoJob, "no GPU reporting"},
      {Counts(8, 0, 0, 0, 0, 8), M::kNoJob, "every rank exited: the job is over, not hung"},
      {Counts(8, 0, 8, 0, 0, 0), M::kWorking, "everyone computes"},
      {Counts(8, 0, 4, 2, 2, 0), M::kWorking, "mixed work without spinning: nobody waits long"},
      {Counts(8, 8, 0, 0, 0, 0), M::kHangCandidate, "all spin: nobody left to make progress"},
      {Counts(8, 7, 0, 0, 0, 1), M::kHangCandidate,
       "a rank gone + others spin: they wait on a rank that will never come"},
      {Counts(16, 10, 0, 0, 0, 6), M::kHangCandidate, "several ranks crashed, the rest spin"},
      {Counts(8, 7, 0, 0, 1, 0), M::kCheckpointWait,
       "spinning peers + a live quiet rank = checkpoint wait (rank 0 saves)"},
      {Counts(8, 6, 0, 0, 1, 1), M::kCheckpointWait,
       "a live quiet rank still holds the job together even with one rank gone"},
      {Counts(8, 7, 1, 0, 0, 0), M::kStragglerWait,
       "spinning peers + a rank still computing = straggler (communication)"},
      {Counts(8, 7, 0, 1, 0, 0), M::kStragglerWait, "a rank with partial kernels still works"},
      {Counts(8, 7, 0, 0, 0, 0, 1), M::kStragglerWait, "a starved rank still works"},
      {StarvedQuiet(Counts(7, 7, 0, 0, 0, 0), 1), M::kCheckpointWait,
       "peers spin on a rank quiet in a coarse reading (its window alternates training and "
       "saves): rank 0's save at 15 s sampling"},
      {StarvedQuiet(Counts(7, 0, 0, 0, 7, 0), 1), M::kWorking,
       "with nobody spinning a starved-quiet rank still counts as working: no all-rank quiet"},
      {StarvedQuiet(Counts(1, 1, 0, 0, 0, 0), 3), M::kStragglerWait,
       "one rank spinning while three starved ranks are quiet (4-GPU inference between bursts "
       "at 15 s): not a wait on savers"},
      {Counts(8, 0, 0, 0, 8, 0), M::kAllQuiet,
       "no spin + all quiet = all-rank checkpoint (after training) or start-up (before)"},
      {Counts(8, 0, 0, 0, 7, 1), M::kAllQuiet, "the live ranks are all quiet"},
  };
  for (const JobRow& r : rows) {
    EXPECT_EQ(ClassifyJob(r.c), r.want) << r.why;
  }
}

TEST(ClassifierTest, ClassifyJobWithRanksBusyByUtilizationAlone) {
  // A rank whose power reads [N/A] (no activity counters) is busy by utilization alone: it may
  // be spinning with its peers. It neither blocks their checkpoint wait nor makes the job work.
  using M = JobMode;
  auto with_blind = [](JobCounts c, int blind) {
    c.active += blind;
    c.blind = blind;
    return c;
  };
  const std::vector<JobRow> rows = {
      {with_blind(Counts(7, 6, 0, 0, 1, 0), 1), M::kCheckpointWait,
       "rank 0 saves, 6 peers spin, the seventh has no power: still a checkpoint wait"},
      {with_blind(Counts(7, 7, 0, 0, 0, 0), 1), M::kHangCandidate,
       "7 spin and the eighth cannot be told: nobody is seen making progress"},
      {with_blind(Counts(7, 6, 1, 0, 0, 0), 1), M::kStragglerWait,
       "a rank seen computing still makes it a straggler wait"},
      {with_blind(Counts(0, 0, 0, 0, 0, 0), 8), M::kWorking,
       "no GPU has power: busy by utilization, as before (the evidence says hangs are hidden)"},
      {with_blind(Counts(4, 0, 4, 0, 0, 0), 4), M::kWorking, "no spin: working"},
  };
  for (const JobRow& r : rows) {
    EXPECT_EQ(ClassifyJob(r.c), r.want) << r.why;
  }
}

// ---- DecideState: the label of one sample ----

struct StateRow {
  LocalClass local;
  bool starved;
  JobMode mode;
  bool trained;
  bool loaded;
  GpuState want;
  const char* why;
};

TEST(ClassifierTest, DecideState) {
  using L = LocalClass;
  using M = JobMode;
  using S = GpuState;
  const std::vector<StateRow> rows = {
      {L::kGone, false, M::kWorking, true, false, S::kIdle, "no process: idle"},
      {L::kGone, true, M::kWorking, true, false, S::kIdle, "gone wins over a starved window"},
      {L::kBusy, true, M::kWorking, true, true, S::kDataStarved, "bursts with gaps: starved"},
      {L::kLow, true, M::kWorking, true, true, S::kDataStarved, "a gap of a starved GPU"},
      {L::kLow, true, M::kStragglerWait, true, true, S::kDataStarved,
       "a gap of a starved GPU its peers wait on (fine sampling): starved"},
      {L::kLow, true, M::kCheckpointWait, true, true, S::kCheckpoint,
       "quiet while the peers wait on it (a coarse reading: ClassifyJob): saving"},
      {L::kBusy, true, M::kCheckpointWait, true, true, S::kDataStarved,
       "a starved GPU running kernels is no saver"},
      {L::kBusy, false, M::kWorking, true, true, S::kCompute, "busy at working power: compute"},
      {L::kPartial, false, M::kWorking, true, true, S::kCompute,
       "kernels part of the period (no starvation pattern): compute"},
      {L::kSpin, false, M::kStragglerWait, true, true, S::kCommunication,
       "spinning while a peer still computes: communication"},
      {L::kSpin, false, M::kWorking, true, true, S::kCommunication,
       "a short collective in ordinary training"},
      {L::kSpin, false, M::kHangCandidate, true, true, S::kCommunication,
       "a hang is only called by the engine once confirmed; until then a spin is communication"},
      {L::kSpin, false, M::kCheckpointWait, true, true, S::kCheckpoint,
       "spinning on a rank that saves: checkpoint time for the job"},
      {L::kLow, false, M::kCheckpointWait, true, true, S::kCheckpoint,
       "the quiet rank holding its model while the others wait: the writer"},
      {L::kLow, false, M::kCheckpointWait, true, false, S::kIdle,
       "quiet without a model is not saving one"},
      {L::kLow, false, M::kAllQuiet, true, true, S::kCheckpoint,
       "no spin + all quiet after training = all-rank checkpoint"},
      {L::kLow, false, M::kAllQuiet, false, true, S::kIdle,
       "all quiet before any training: start-up, not a checkpoint"},
      {L::kLow, false, M::kAllQuiet, true, false, S::kIdle, "quiet contexts without a model"},
      {L::kLow, false, M::kWorking, true, true, S::kIdle,
       "one quiet rank while others work (no spin): idle"},
      {L::kLow, false, M::kNoJob, false, false, S::kIdle, "no job"},
  };
  for (const StateRow& r : rows) {
    EXPECT_EQ(DecideState(r.local, r.starved, r.mode, r.trained, r.loaded), r.want)
        << r.why << " (got "
        << StateName(DecideState(r.local, r.starved, r.mode, r.trained, r.loaded)) << ")";
  }
}

// ---- ComputeShare: splitting a busy sample between compute and communication ----

TEST(ClassifierTest, ComputeShare) {
  struct Row {
    double power, comm, compute, want;
    const char* why;
  };
  const std::vector<Row> rows = {
      {900, 400, 900, 1.0, "at the compute level: all compute"},
      {400, 400, 900, 0.0, "at the communication level: all communication"},
      {650, 400, 900, 0.5, "a ~1 s average of half and half reads in between"},
      {920, 400, 900, 1.04, "noise above the compute level is kept, so sums stay unbiased"},
      {380, 400, 900, -0.04, "noise below the communication level is kept too"},
      {2000, 400, 900, 1.25, "a transient far above is bounded"},
      {0, 400, 900, -0.25, "a reading far below is bounded"},
      {500, 400, 400, 1.0, "no separation between levels: call it compute"},
      {500, 400, 300, 1.0, "compute level below communication (bad calibration): compute"},
  };
  for (const Row& r : rows) {
    EXPECT_NEAR(ComputeShare(r.power, r.comm, r.compute), r.want, 1e-9) << r.why;
  }
}

// ---- PowerCalibration ----

TEST(CalibrationTest, KnownModelFromTable) {
  PowerCalibration c("NVIDIA H100 80GB HBM3");
  EXPECT_DOUBLE_EQ(c.top_w(), 700);
  EXPECT_DOUBLE_EQ(c.floor_w(), 70);
  // Before any busy reading, compute is expected at ~80 % of the design range.
  EXPECT_NEAR(c.compute_level_w(), 70 + 0.8 * 630, 1e-9);
  EXPECT_NEAR(c.design_range_w(), 630, 1e-9);
  EXPECT_NEAR(c.Normalize(70), 0.0, 1e-9);
  EXPECT_NEAR(c.Normalize(700), 1.0, 1e-9);
  EXPECT_NE(c.source().find("table: NVIDIA H100 80GB HBM3 (TDP 700 W)"), std::string::npos)
      << c.source();
  // Matching is by name, case-insensitive: the board table knows the PCIe card (350 W), and a
  // bare "h100" inside a longer name is the SXM board.
  PowerCalibration pcie("nvidia h100 pcie");
  EXPECT_DOUBLE_EQ(pcie.top_w(), 350);
  PowerCalibration sxm("nvidia h100 sxm5 80gb");
  EXPECT_DOUBLE_EQ(sxm.top_w(), 700);
}

TEST(CalibrationTest, LoggedLimitIsTheTop) {
  // A capped board: the limit, not the model's TDP, is the top of the range; the design range
  // (for communication levels) stays the model's.
  PowerCalibration c("NVIDIA H100 80GB HBM3");
  c.Add(300, 95, 450);
  EXPECT_DOUBLE_EQ(c.top_w(), 450);
  EXPECT_DOUBLE_EQ(c.floor_w(), 70);
  EXPECT_NEAR(c.design_range_w(), 630, 1e-9);
  EXPECT_LE(c.compute_level_w(), 450);
  EXPECT_NE(c.source().find("power.limit 450 W"), std::string::npos) << c.source();

  // An unknown model with a logged limit: the floor is guessed from the limit until seen.
  PowerCalibration u("Some Future GPU");
  u.Add(200, 95, 400);
  EXPECT_DOUBLE_EQ(u.top_w(), 400);
  EXPECT_NEAR(u.floor_w(), 400.0 / 7, 1e-9);

  // A limit change mid-log (someone ran nvidia-smi -pl) is followed at once.
  c.Add(300, 95, 600);
  EXPECT_DOUBLE_EQ(c.top_w(), 600);
}

TEST(CalibrationTest, ABoardWithoutItsNameIsKnownByItsLimitAndMemory) {
  // A T4 logged without its name (a home-made logger's CSV with the limit and memory total): its
  // wait band (40-48 W of its 70 W, 57 % of the cap) comes from the table, as with the name.
  PowerCalibration named("Tesla T4");
  PowerCalibration nameless("");
  ASSERT_TRUE(named.BoardSpinThresholdFrac());
  EXPECT_FALSE(nameless.BoardSpinThresholdFrac()) << "nothing known before a reading";
  nameless.Add(40, 100, 70, 15360);
  ASSERT_TRUE(nameless.BoardSpinThresholdFrac()) << nameless.source();
  EXPECT_DOUBLE_EQ(*nameless.BoardSpinThresholdFrac(), *named.BoardSpinThresholdFrac());
  EXPECT_DOUBLE_EQ(nameless.floor_w(), 10) << "the table's idle floor";
  EXPECT_NE(nameless.source().find("board Tesla T4 (by its power limit 70 W and 15360 MiB"),
            std::string::npos)
      << nameless.source();
  // The limit alone (no memory total) fits several boards: nothing is assumed.
  PowerCalibration limit_only("");
  limit_only.Add(40, 100, 70);
  EXPECT_FALSE(limit_only.BoardSpinThresholdFrac());
  // Numbers no board has: learned from the log, as before.
  PowerCalibration odd("");
  odd.Add(40, 100, 123, 4567);
  EXPECT_FALSE(odd.BoardSpinThresholdFrac());
}

TEST(CalibrationTest, UnknownModelCalibratesFromObservedRange) {
  PowerCalibration c("Acme Tensor X1");  // a board the table does not know
  // 32 idle readings at 30 W, 448 compute readings at 580-600 W, 160 spins at 150 W.
  for (int i = 0; i < 32; ++i) c.Add(30, 0, std::nullopt);
  for (int i = 0; i < 448; ++i) c.Add(580 + (i % 21), 100, std::nullopt);
  for (int i = 0; i < 160; ++i) c.Add(150, 100, std::nullopt);
  EXPECT_NEAR(c.floor_w(), 31, 2);
  EXPECT_NEAR(c.top_w(), 600, 4);
  EXPECT_NEAR(c.compute_level_w(), 590, 12);
  EXPECT_NE(c.source().find("observed range"), std::string::npos) << c.source();
  // The spins sit low in the range, the compute readings high.
  EXPECT_LT(c.Normalize(150), kT.spin_power_frac);
  EXPECT_GT(c.Normalize(585), 0.9);
}

TEST(CalibrationTest, FewReadingsCalibrateAtOnce) {
  // At 30 s sampling 16 readings are 8 minutes: the observed range counts from the 4th reading
  // and every early reading recomputes, so a hang in the first minutes is judged against it.
  PowerCalibration c("");
  for (double w : {70.0, 71.0, 550.0, 560.0}) c.Add(w, w > 100 ? 95 : 0, std::nullopt);
  EXPECT_NEAR(c.floor_w(), 71, 2);
  EXPECT_GT(c.top_w(), 500);
  EXPECT_TRUE(c.placed());
  EXPECT_LT(c.Normalize(150), 0.25) << "a 150 W spin sits low in the range";
}

TEST(CalibrationTest, PeggedNarrowReadingsWithoutLimitOrModelAreNotPlaced) {
  // A log started mid-training (no idle reading, no power.limit, no name): the lowest reading
  // is not the floor. 550 W at 95 % is compute on an H100 and could be a spin on a larger
  // board, so power is not placed until something shows the floor.
  PowerCalibration c("");
  for (int i = 0; i < 300; ++i) c.Add(530 + (i % 60), 95, std::nullopt);
  EXPECT_FALSE(c.placed()) << c.source();
  // An idle reading places it (the floor is seen).
  PowerCalibration idle_seen("");
  idle_seen.Add(70, 0, std::nullopt);
  for (int i = 0; i < 300; ++i) idle_seen.Add(530 + (i % 60), 95, std::nullopt);
  EXPECT_TRUE(idle_seen.placed());
  // A spread of pegged readings alone does not (issue 29): spins at 150 W next to compute at
  // 550 W look like training at 300 W next to an FP32 filler GEMM at 410 W (a real team's log
  // that a range of the log's own once called an 8-GPU hang). An idle reading places it.
  PowerCalibration spread("");
  for (int i = 0; i < 300; ++i) spread.Add(i % 3 == 0 ? 150 : 550, 100, std::nullopt);
  EXPECT_FALSE(spread.placed());
  spread.Add(72, 0, std::nullopt);
  EXPECT_TRUE(spread.placed());
  // A reading at 0 % between two phases of work (293 W beside 410 W) is no idle floor.
  PowerCalibration between("");
  for (int i = 0; i < 300; ++i) between.Add(i % 2 == 0 ? 300 : 410, 100, std::nullopt);
  between.Add(293, 0, std::nullopt);
  EXPECT_FALSE(between.placed());
  // A logged limit or a known model always places power.
  PowerCalibration limit("");
  for (int i = 0; i < 300; ++i) limit.Add(550, 95, 700);
  EXPECT_TRUE(limit.placed());
  PowerCalibration named("NVIDIA H100 80GB HBM3");
  for (int i = 0; i < 300; ++i) named.Add(550, 95, std::nullopt);
  EXPECT_TRUE(named.placed());
  // Power alone, never low: 550 W flat is work on any board, but against a floor of its own
  // lowest reading it would read idle. Not placed until an idle reading shows the floor.
  PowerCalibration power_only("");
  for (int i = 0; i < 300; ++i) power_only.Add(550, std::nullopt, std::nullopt);
  EXPECT_FALSE(power_only.placed());
  power_only.Add(70, std::nullopt, std::nullopt);
  EXPECT_TRUE(power_only.placed());
  // Utilization logged and never pegged: an idle log, placed (utilization says idle).
  PowerCalibration idle_log("");
  for (int i = 0; i < 300; ++i) idle_log.Add(70 + i % 3, 0, std::nullopt);
  EXPECT_TRUE(idle_log.placed());
}

TEST(CalibrationTest, LogWithoutComputeDoesNotMakeSpinLookLikeFullPower) {
  // An unknown model whose whole log is idle and then a hang (spins at 110-130 W, 100 % util):
  // the observed top is a spin. The range must still be wide enough that the spin reads low.
  PowerCalibration c("Unlisted Accelerator");
  for (int i = 0; i < 96; ++i) c.Add(70, 0, std::nullopt);
  for (int i = 0; i < 224; ++i) c.Add(110 + (i % 21), 100, std::nullopt);
  EXPECT_NEAR(c.floor_w(), 71, 2);
  EXPECT_GE(c.top_w(), 7 * c.floor_w() - 1e-9);
  EXPECT_LT(c.Normalize(130), kT.spin_power_frac);
  LocalInput in;
  in.util_pct = 100.0;
  in.power_frac = c.Normalize(120);
  in.proc = ProcState::kLoaded;
  EXPECT_EQ(ClassifyLocal(in, kT), LocalClass::kSpin);

  // Same when the log starts mid-hang and never shows idle.
  PowerCalibration mid("Unlisted Accelerator");
  for (int i = 0; i < 256; ++i) mid.Add(110 + (i % 21), 100, std::nullopt);
  EXPECT_LT(mid.Normalize(130), kT.spin_power_frac);
}

TEST(CalibrationTest, LearnsTheSpinLevelOfEachGeneration) {
  // An A100 spins at ~140 W (35 % of its 400 W limit, 0.25 of its range), an H100 at ~145 W
  // (0.12 of its range): both are learned from the pegged readings below the communication level,
  // and each board's threshold lies between its spin and its communication level.
  struct Gen {
    const char* name;
    double limit_w, spin_w, comm_w, compute_w;
  };
  for (const Gen& g : {Gen{"NVIDIA A100-SXM4-80GB", 400, 140, 169, 330},
                       Gen{"NVIDIA H100 80GB HBM3", 700, 145, 278, 575}}) {
    SCOPED_TRACE(g.name);
    PowerCalibration c(g.name);
    for (int i = 0; i < 64; ++i) c.Add(60, 0, g.limit_w);
    for (int i = 0; i < 512; ++i) c.Add(i % 4 == 0 ? g.comm_w : g.compute_w, 100, g.limit_w);
    EXPECT_FALSE(c.spin_level_w()) << "training alone shows no spin: comm is not a spin";
    for (int i = 0; i < 16; ++i) c.Add(g.spin_w + (i % 3) - 1, 100, g.limit_w);
    ASSERT_TRUE(c.spin_level_w()) << "learned within a few readings of the first spin";
    EXPECT_NEAR(*c.spin_level_w(), g.spin_w, 4);
    const double th = *c.SpinThresholdFrac(kT.comm_level_frac);
    EXPECT_GT(th, c.Normalize(g.spin_w + 5));
    EXPECT_LT(th, c.Normalize(g.comm_w - 5));
  }
}

TEST(CalibrationTest, ComputeLevelFollowsTheBusyReadings) {
  // A table model computing below the prior (a light model): the compute level comes from the
  // readings, so communication/compute shares are judged against what this job draws.
  PowerCalibration c("NVIDIA A100-SXM4-80GB");
  EXPECT_NEAR(c.compute_level_w(), 55 + 0.8 * 345, 1e-9);  // prior
  for (int i = 0; i < 256; ++i) c.Add(i % 4 == 0 ? 120 : 300 + (i % 5), 100, std::nullopt);
  EXPECT_NEAR(c.compute_level_w(), 302, 8);
}

}  // namespace
}  // namespace ww::triage
