// The verdicts, pure: one sample's final state after the job's say (the overrides on
// DecideState), whether every rank quiet may be a checkpoint, and the job-level verdict that
// `triage --json` (hang_verdict), fleet's /jobs (verdict, reasons) and watch's /state give. No
// clocks, no state, no I/O: plain values in, the answer out, table-tested
// (tests/triage/verdict_test.cc). The engine (engine.h) only feeds them; the reports and the
// services only print what they decide.
//
// Vocabulary. Over a whole log the hang verdict (HangVerdict, snapshot.h) is none, suspected (one
// snapshot: the log is too short to confirm), confirmed (a hang episode) or unknown (the signals
// cannot show one, or too short with too little to judge a snapshot). Live (fleet, watch), the
// job's verdict is "hang" while a confirmed hang is in progress, else "checkpoint" while a GPU
// saves, else the state most GPUs are in ("unknown" before any label): a hang is never called
// before it is confirmed, whoever asks.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/state.h"
#include "triage/classifier.h"
#include "triage/job_eval.h"
#include "triage/options.h"
#include "triage/snapshot.h"

namespace ww::triage {

// --- Per sample ---------------------------------------------------------------------------------

// What the job says about one classified sample, besides DecideState's inputs.
struct SampleContext {
  JobMode mode = JobMode::kWorking;
  bool one_gpu = false;               // the job is a single GPU: no collectives
  bool quiet_may_checkpoint = false;  // QuietMayBeCheckpoint at this sample
  bool proc_loaded = false;           // the GPU holds the job's model (ProcState::kLoaded)
  double compute_share = 0;           // the sample's power split (ComputeShare)
  bool in_active_hang = false;        // the GPU is one of a confirmed hang in progress
};

struct SampleState {
  GpuState state = GpuState::kIdle;
  // The share of the sample's seconds that were compute (the rest communication); 0 for other
  // states.
  double compute_share = 0;
  // Quiet holding memory while every rank was: `idle` now, `checkpoint` if training resumes after
  // it (QuietTracker resolves it).
  bool quiet_held = false;
};

// The sample's state: DecideState's `decided`, then (in this order) every rank quiet is idle until
// training resumes, one GPU's communication is compute (no peer to talk to), a busy sample is
// labelled by what took most of its period, and a GPU of a confirmed hang is `hang`.
SampleState FinalSampleState(GpuState decided, const SampleContext& c);

// Every rank quiet may be a checkpoint only with memory seen held, after at least
// min_training_before_quiet_s of training, and in a job of several ranks (one GPU pausing is what
// a server waiting for requests does). LiveRanksHoldMemory is asked last (it reads every view).
bool QuietMayBeCheckpoint(JobMode mode, bool trained, double trained_s, bool one_gpu,
                          std::span<const GpuView> views, int64_t now_ms,
                          const TriageOptions& options);
// The same, with LiveRanksHoldMemory's answer known to the caller (the engine keeps a count).
bool QuietMayBeCheckpoint(JobMode mode, bool trained, double trained_s, bool one_gpu,
                          bool live_ranks_hold_memory, const TriageOptions& options);

// The mode checkpoint episodes are judged in: nothing saves during a hang (a wait that outlasted
// any checkpoint is one).
JobMode CheckpointMode(JobMode mode, bool hang_active);

// --- Over a whole log (triage) ------------------------------------------------------------------

// A hang is confirmed after confirm_s of spinning with nobody working: a log (or a GPU) spanning
// less cannot show one, and "no hang" would be a verdict it cannot support.
bool TooShortToTell(double span_s, double confirm_s);
// "4 s (5 samples), too short to tell whether the job hung: ...": `who` is "the job" or "it".
std::string TooShortReason(double span_s, int64_t samples, const char* who, double confirm_s);

struct LogVerdictInput {
  bool hang_seen = false;                     // at least one hang episode
  const SnapshotVerdict* snapshot = nullptr;  // the one-snapshot verdict of a too-short log
  bool no_gpus = false;                       // nothing was sampled
  bool blind = false;  // some GPU's signals cannot show a hang (GpuEvidence: affects_hang)
  // The log ended in a wait that temperature kept from confirmation (thermal.h): unknown.
  bool held_by_temperature = false;
};
// confirmed with an episode; the snapshot's verdict for a too-short log; unknown without GPUs,
// when some GPU's signals cannot show a hang, or when the log ends in a wait temperature held
// unconfirmed; else none.
HangVerdict DecideLogVerdict(const LogVerdictInput& in);

// --- Live (fleet /jobs, watch /state) -----------------------------------------------------------

// "hang" while a confirmed hang is active; "checkpoint" while a GPU saves; else the state most
// GPUs are in, ties going to the earlier of compute, communication, data_starved, idle, hang
// (what the job does before how it waits); "unknown" before any GPU has a state.
std::string LiveJobVerdict(bool hang_active, const std::array<int, kNumGpuStates>& gpu_states);

// The live verdict's reasons: a confirmed hang's own; else the GPUs per state at last_ms and, for
// an open hang candidate, how long until it is one.
struct LiveReasonsInput {
  const std::vector<std::string>* hang_reasons = nullptr;  // the active hang's, if any
  std::array<int, kNumGpuStates> gpu_states{};
  size_t hosts = 0;
  int64_t last_ms = 0;
  std::optional<int64_t> candidate_start_ms;
  double hang_confirm_s = 0;
};
std::vector<std::string> LiveJobReasons(const LiveReasonsInput& in);

}  // namespace ww::triage
