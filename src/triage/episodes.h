// Episode trackers: the job-level modes over time. Each is fed one job evaluation at a time (the
// mode and every GPU's view, see job_eval.h) and turns runs of a mode into episodes:
//   HangTracker        spin with nobody working -> a hang candidate -> confirmed after
//                      hang_confirm_s (or by the caller), ended after debounce_s of anything else;
//                      peers waiting on quiet ranks longer than max_checkpoint_s count as well.
//                      So do every rank quiet holding memory for that long (a stall off the
//                      GPU) and, for a caller with progress probes, a one-GPU spin or an
//                      all-quiet stretch (candidates only the probes can confirm).
//   QuietTracker       every rank quiet holding memory after training: pending until training
//                      resumes (a checkpoint) or the processes exit or the log ends (idle).
//   CheckpointTracker  ranks waiting on savers, and the quiet stretches QuietTracker resolved.
//   JobEndTracker      no process on any GPU for job_end_s: the job is over.
// They hold no samples and call nobody: the engine relabels held samples and tells observers.
//
// Ownership: each tracker owns its episodes. Thread-safety: not thread-safe; one thread each.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/sample.h"
#include "triage/classifier.h"
#include "triage/job_eval.h"
#include "triage/options.h"

namespace ww::triage {

// A run of spinning with nobody working that is not confirmed as a hang (yet).
struct HangCandidate {
  int64_t start_ms = 0;
  std::vector<GpuKey> gpus;
  std::vector<GpuKey> culprits;
  // Telemetry alone cannot call this one (a single GPU's low-power pegged kernels, every rank
  // quiet for less than max_checkpoint_s): only process probes seeing nothing move confirm it.
  bool needs_process_probe = false;
  // A spinning member is still as hot as it runs while computing (thermal.h ThermalHold): not a
  // hang while this says why; empty when temperature does not object.
  std::string thermal_hold;
};

// What the job looks like beyond its mode, for the hang tracker.
struct HangContext {
  // Every rank quiet holding memory after training since then (QuietTracker); INT64_MIN: not.
  int64_t quiet_since_ms = std::numeric_limits<int64_t>::min();
  bool one_gpu = false;           // the job is a single GPU: spin alone is no hang
  bool one_gpu_spinning = false;  // ... and it reads pegged at low power, sustained
  // Some GPU's temperature follows its load (GpuView::temp_work_c set): the candidate's members
  // are checked against it (thermal.h) before a confirmation.
  bool thermal = false;
};

struct HangEpisode {
  int64_t start_ms = 0;
  int64_t detected_at_ms = 0;
  int64_t end_ms = 0;
  bool ongoing = false;      // the log (or the watch) ended while the job was still stuck
  std::vector<GpuKey> gpus;  // in key order (ChooseHangMembers)
  std::vector<GpuKey> culprits;
  // Members that stopped reporting at the wait (job_eval.h StoppedReporting), in gpus too.
  std::vector<GpuKey> stopped_reporting;
  std::vector<std::string> reasons;
  double wasted_gpu_hours() const {
    return static_cast<double>(end_ms - start_ms) / 3.6e6 * static_cast<double>(gpus.size());
  }
};

struct CheckpointEpisode {
  int64_t start_ms = 0;         // the first reading of it
  int64_t end_ms = 0;           // the last reading of it
  bool all_ranks = false;       // every rank quiet (sharded save) vs some ranks saving
  std::vector<GpuKey> writers;  // the quiet ranks the others waited on
  // Per writer (same order), the readings it was quiet in while the others waited; empty for an
  // all-rank quiet. A rank quiet in one reading of a long wait (its process exiting as the job
  // ends) did not save: see SaverRanks.
  std::vector<int> writer_readings;
  // The widest sample spacing of the ranks during it: each reading stands for the interval
  // before it, so one reading at 15 s sampling is a 15 s checkpoint, not a 0 s one.
  int64_t interval_ms = 0;
  int64_t covered_ms() const { return end_ms - start_ms + interval_ms; }
};

// What a HangTracker call changed, for the engine to act on.
struct HangUpdate {
  bool confirmed = false;   // a candidate was confirmed: relabel its held samples (active())
  bool ended = false;       // the candidate or the hang is over: held samples may go out
  bool hang_ended = false;  // ... and it was a confirmed hang: episodes().back()
};

class HangTracker {
 public:
  explicit HangTracker(const TriageOptions& options);

  // Host names by GpuKey::host, for the reasons given in words.
  void SetHostNames(std::vector<std::string> hosts) { host_names_ = std::move(hosts); }
  // One job evaluation at now_ms (views: every GPU, in a fixed order). `sampled`, if given: the
  // view (in `views`) whose sample at now_ms prompted this evaluation, one call a sample (the
  // engine's way): an open candidate then looks at that GPU alone, so a sample costs no pass over
  // every GPU. Without it, one call a sampling tick: every view sampled at now_ms is looked at.
  // Either way each spin sample counts once in a candidate's evidence.
  HangUpdate Update(JobMode mode, std::span<const GpuView> views, int64_t now_ms,
                    const HangContext& context = {}, const GpuView* sampled = nullptr);
  // Confirms the open candidate at now_ms with `extra_reasons` after the telemetry's own.
  // False (nothing done) without an unconfirmed candidate.
  bool Confirm(int64_t now_ms, std::span<const GpuView> views,
               const std::vector<std::string>& extra_reasons);
  // Drops an unconfirmed candidate (progress was seen). False when there was none.
  bool Dismiss();
  // Closes what is open at end_ms; ongoing: the input ended, not the hang. views (every GPU, as
  // in Update; may be empty) name the members that stopped reporting while the others waited.
  HangUpdate End(int64_t end_ms, bool ongoing, std::span<const GpuView> views = {});
  // The input stops at at_ms for a while (a gap): what is open ends there, not ongoing, and a
  // wait on a quiet rank starts counting afresh after it.
  HangUpdate Interrupt(int64_t at_ms);
  const std::vector<std::string>& host_names() const { return host_names_; }

  std::optional<HangCandidate> candidate() const;
  const HangEpisode* active() const;                    // the confirmed hang in progress, if any
  bool open() const { return candidate_.has_value(); }  // a candidate, confirmed or not
  // Samples from this time on may still become `hang` (an unconfirmed candidate is open, or
  // peers wait on quiet ranks: past max_checkpoint_s the wait is a hang from its start).
  std::optional<int64_t> held_from_ms() const;
  bool InActiveHang(GpuKey key) const;
  const std::vector<HangEpisode>& episodes() const { return episodes_; }
  const std::vector<std::string>& notes() const { return notes_; }
  // The log ended during a wait that temperature held unconfirmed (a member as hot as it works):
  // why, for the verdict ("unknown"); empty otherwise.
  const std::string& thermal_unknown() const { return thermal_unknown_; }
  // GPU views looked at so far (passes over them), for tests of the work per sample.
  int64_t views_visited() const { return views_visited_; }

 private:
  struct Candidate {
    int64_t start_ms = 0;
    int64_t broken_since_ms = std::numeric_limits<int64_t>::min();
    bool confirmed = false;
    HangEpisode episode;
    HangEvidence evidence;
    HangKind kind = HangKind::kSpin;
    std::string thermal_hold;  // HangCandidate::thermal_hold
    int64_t thermal_checked_ms = std::numeric_limits<int64_t>::min();
  };
  // Looks at the candidate's spinning members' temperatures (at most once a second of log time).
  void CheckThermal(Candidate& c, std::span<const GpuView> views, int64_t now_ms);

  TriageOptions options_;
  std::optional<Candidate> candidate_;
  bool needs_probe_ = false;  // the open candidate's; see HangCandidate
  int64_t checkpoint_wait_since_ms_ = std::numeric_limits<int64_t>::min();
  // A caller's probes dismissed a candidate then: a new one starts no earlier (a backdated one
  // would be dismissed again by the same progress, forever).
  int64_t dismissed_at_ms_ = std::numeric_limits<int64_t>::min();
  int64_t last_update_ms_ = std::numeric_limits<int64_t>::min();
  std::vector<HangEpisode> episodes_;
  std::vector<std::string> notes_;
  std::string thermal_unknown_;
  std::vector<std::string> host_names_;
  int64_t views_visited_ = 0;
  std::vector<const GpuView*> sampled_now_;  // Update's scratch
  // Adds the spin samples of the GPUs sampled at now_ms to the candidate's evidence.
  void AddEvidenceAt(std::span<const GpuView> views, int64_t now_ms);
};

// A stretch of every rank quiet holding memory, resolved once it is over.
struct QuietUpdate {
  bool resolved = false;
  bool checkpoint = false;  // training resumed: it was an all-rank checkpoint; else idle
  int64_t start_ms = 0;
  int64_t end_ms = 0;  // the last quiet evaluation
  std::vector<GpuKey> writers;
  int64_t interval_ms = 0;  // the widest sample spacing of the ranks while quiet
};

// "Every rank quiet holding memory" is a checkpoint only between two stretches of training:
// quiet at the end of a log or before the processes exit is idle. Pending until one of them.
class QuietTracker {
 public:
  explicit QuietTracker(const TriageOptions& options);
  // quiet: every live rank quiet, memory held, after training, in a job of several GPUs.
  QuietUpdate Update(JobMode mode, bool quiet, std::span<const GpuView> views, int64_t now_ms);
  // End of input or a gap: what is pending is idle (nothing shows training resumed).
  QuietUpdate End();
  std::optional<int64_t> since_ms() const {
    return open_ ? std::optional<int64_t>(open_->start_ms) : std::nullopt;
  }

 private:
  // Closes the open quiet stretch as a checkpoint or as idle, and returns it resolved.
  QuietUpdate Resolve(bool checkpoint);

  int64_t resume_ms_;  // training must go on this long after the quiet (checkpoint_merge_s)
  int64_t min_ms_;     // min_checkpoint_s
  std::optional<QuietUpdate> open_;
  int64_t resumed_since_ms_ = std::numeric_limits<int64_t>::min();
};

// The writers that saved: those quiet in at least a quarter of the readings of the rank quiet
// longest (all of them for an all-rank quiet).
std::vector<GpuKey> SaverRanks(const CheckpointEpisode& c);

class CheckpointTracker {
 public:
  explicit CheckpointTracker(const TriageOptions& options);

  // One job evaluation at now_ms: peers waiting on quiet ranks (kCheckpointWait).
  void Update(JobMode mode, std::span<const GpuView> views, int64_t now_ms);
  // A quiet stretch QuietTracker resolved as a checkpoint of every rank.
  void AddAllRanks(const QuietUpdate& quiet);
  // A hang was confirmed from at_ms on (a wait that outlasted any checkpoint): what was counted
  // as a checkpoint from then on was the hang.
  void TruncateAt(int64_t at_ms);
  // End of input: the open checkpoint, if any, is closed where it is.
  void Finish();
  const std::vector<CheckpointEpisode>& episodes() const { return checkpoints_; }

 private:
  int64_t merge_ms_;
  std::vector<int64_t> writer_last_ms_;  // per writer of the open one: its last counted reading
  std::vector<CheckpointEpisode> checkpoints_;
  std::optional<CheckpointEpisode> open_;
};

class JobEndTracker {
 public:
  explicit JobEndTracker(const TriageOptions& options);
  // One job evaluation: true while the job has had no process for longer than job_end_s.
  bool Update(JobMode mode, int64_t now_ms);

 private:
  int64_t job_end_ms_;
  int64_t no_job_since_ms_ = std::numeric_limits<int64_t>::min();
};

}  // namespace ww::triage
