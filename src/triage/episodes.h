// Episode trackers: the job-level modes over time. Each is fed one job evaluation at a time (the
// mode and every GPU's view, see job_eval.h) and turns runs of a mode into episodes:
//   HangTracker        spin with nobody working -> a hang candidate -> confirmed after
//                      hang_confirm_s (or by the caller), ended after debounce_s of anything else;
//                      peers waiting on quiet ranks longer than max_checkpoint_s count as well.
//   CheckpointTracker  ranks waiting on savers, or every rank quiet after training.
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
};

struct HangEpisode {
  int64_t start_ms = 0;
  int64_t detected_at_ms = 0;
  int64_t end_ms = 0;
  bool ongoing = false;  // the log (or the watch) ended while the job was still stuck
  std::vector<GpuKey> gpus;
  std::vector<GpuKey> culprits;
  std::vector<std::string> reasons;
  double wasted_gpu_hours() const {
    return static_cast<double>(end_ms - start_ms) / 3.6e6 * static_cast<double>(gpus.size());
  }
};

struct CheckpointEpisode {
  int64_t start_ms = 0;
  int64_t end_ms = 0;
  bool all_ranks = false;       // every rank quiet (sharded save) vs some ranks saving
  std::vector<GpuKey> writers;  // the quiet ranks the others waited on
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
  // One job evaluation at now_ms (views: every GPU, in a fixed order).
  HangUpdate Update(JobMode mode, std::span<const GpuView> views, int64_t now_ms);
  // Confirms the open candidate at now_ms with `extra_reasons` after the telemetry's own.
  // False (nothing done) without an unconfirmed candidate.
  bool Confirm(int64_t now_ms, std::span<const GpuView> views,
               const std::vector<std::string>& extra_reasons);
  // Drops an unconfirmed candidate (progress was seen). False when there was none.
  bool Dismiss();
  // Closes what is open at end_ms; ongoing: the input ended, not the hang.
  HangUpdate End(int64_t end_ms, bool ongoing);
  // The input stops at at_ms for a while (a gap): what is open ends there, not ongoing, and a
  // wait on a quiet rank starts counting afresh after it.
  HangUpdate Interrupt(int64_t at_ms);
  const std::vector<std::string>& host_names() const { return host_names_; }

  std::optional<HangCandidate> candidate() const;
  const HangEpisode* active() const;  // the confirmed hang in progress, if any
  // Samples from this time on may still become `hang` (an unconfirmed candidate is open).
  std::optional<int64_t> held_from_ms() const;
  bool InActiveHang(GpuKey key) const;
  const std::vector<HangEpisode>& episodes() const { return episodes_; }
  const std::vector<std::string>& notes() const { return notes_; }

 private:
  struct Candidate {
    int64_t start_ms = 0;
    int64_t broken_since_ms = std::numeric_limits<int64_t>::min();
    bool confirmed = false;
    HangEpisode episode;
    HangEvidence evidence;
  };

  TriageOptions options_;
  std::optional<Candidate> candidate_;
  int64_t checkpoint_wait_since_ms_ = std::numeric_limits<int64_t>::min();
  std::vector<HangEpisode> episodes_;
  std::vector<std::string> notes_;
  std::vector<std::string> host_names_;
};

class CheckpointTracker {
 public:
  explicit CheckpointTracker(const TriageOptions& options);

  // One job evaluation at now_ms. trained: the job computed before (a quiet period after
  // training is a checkpoint, before it start-up).
  void Update(JobMode mode, bool trained, std::span<const GpuView> views, int64_t now_ms);
  // End of input: the open checkpoint, if any, is closed where it is.
  void Finish();
  const std::vector<CheckpointEpisode>& episodes() const { return checkpoints_; }

 private:
  int64_t merge_ms_;
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
