// TriageEngine: streaming triage of a job's GPU samples, the same code for offline logs
// (`wattwatch triage`) and the live watcher. Samples go in roughly in time order; labels come out
// a few seconds later (a centered window needs that much of the future), and a run of spinning
// that may turn out to be a hang is held back until it is confirmed or broken, so its samples can
// be labelled `hang` from the moment the job stopped, while `detected_at` records when an online
// watcher seeing only the samples so far would have confirmed it.
//
// Ownership: the engine owns its state; the observer, if any, is borrowed and must outlive it.
// Thread-safety: not thread-safe; one thread feeds a given engine.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/sample.h"
#include "core/state.h"
#include "triage/calibration.h"
#include "triage/classifier.h"

namespace ww::triage {

struct TriageOptions {
  Thresholds thresholds;
  double hang_confirm_s = 45;      // spin with nobody working this long is a hang
  double window_s = 12;            // centered window for burst/gap patterns
  double min_run_s = 0.3;          // a burst or gap shorter than this is a blip
  double min_spin_s = 1.0;         // a shorter spin is an ordinary collective
  double debounce_s = 2;           // a hang candidate survives interruptions shorter than this
  double max_gap_s = 10;           // a longer gap in a GPU's samples counts as no data
  double stale_s = 5;              // a GPU silent this long is left out of job decisions
  double max_checkpoint_s = 1800;  // peers spinning on a quiet rank longer than this: a hang
  double culprit_margin_s = 1.5;   // ranks that started spinning this close to the last one
  // false: the engine never confirms a hang by itself; the caller (the live watcher, which also
  // has progress probes) calls ConfirmHangCandidate or DismissHangCandidate.
  bool auto_confirm = true;
};

// A run of spinning with nobody working that is not confirmed as a hang (yet).
struct HangCandidate {
  int64_t start_ms = 0;
  std::vector<GpuKey> gpus;
  std::vector<GpuKey> culprits;
};

struct LabeledSample {
  int64_t timestamp_ms;
  GpuKey key;
  GpuState state;
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

struct GpuStats {
  GpuKey key;
  std::string name;
  std::string calibration;
  int64_t samples = 0;
  std::array<double, kNumGpuStates> seconds{};
  double total_seconds() const;
  // communication / (compute + communication); nullopt without training time.
  std::optional<double> comm_share() const;
};

// Receives results as they become final. All callbacks run on the thread that calls Add/Finish.
class TriageObserver {
 public:
  virtual ~TriageObserver() = default;
  virtual void OnLabel(const LabeledSample& label) {}
  // The live state of a GPU changed (at classification time, before any later relabeling).
  virtual void OnStateChange(GpuKey key, GpuState from, GpuState to, int64_t at_ms) {}
  virtual void OnHangConfirmed(const HangEpisode& episode) {}
  virtual void OnHangEnded(const HangEpisode& episode) {}
};

class TriageEngine {
 public:
  explicit TriageEngine(TriageOptions options = {}, TriageObserver* observer = nullptr);
  ~TriageEngine();

  // Names and identities of the GPUs, when the source knows them (seeds calibration).
  void SetGpuInfo(const std::vector<GpuInfo>& gpus);
  // Host names by GpuKey::host, for the reasons given in words.
  void SetHostNames(std::vector<std::string> hosts);
  // One sample. Samples of one GPU must come in increasing time order.
  void Add(const GpuSample& sample);
  // End of input: classifies what is pending and closes open episodes as `ongoing`.
  void Finish();

  // The unconfirmed hang candidate, if any (with auto_confirm off it waits for the caller).
  std::optional<HangCandidate> hang_candidate() const;
  // Confirms the open candidate at now_ms; `reasons` are added to the telemetry's own.
  // No-op without an unconfirmed candidate.
  void ConfirmHangCandidate(int64_t now_ms, const std::vector<std::string>& reasons);
  // Progress was seen: the open candidate is not a hang. Its held samples are released with the
  // labels they had; if the GPUs still spin, a new candidate starts with the next sample.
  void DismissHangCandidate();

  const std::vector<HangEpisode>& hang_episodes() const { return episodes_; }
  const std::vector<CheckpointEpisode>& checkpoints() const { return checkpoints_; }
  std::vector<GpuStats> gpu_stats() const;
  std::optional<GpuState> current_state(GpuKey key) const;
  bool hang_active() const { return active_hang() != nullptr; }
  // The hang in progress (confirmed), if any.
  const HangEpisode* active_hang() const;
  int64_t first_timestamp_ms() const { return first_ms_; }
  int64_t last_timestamp_ms() const { return last_ms_; }
  // Notes for the user: e.g. a spin at the end of the log too short to confirm.
  const std::vector<std::string>& notes() const { return notes_; }
  double wasted_gpu_hours() const;

 private:
  struct Gpu;
  struct Pending;
  struct Record;
  struct Candidate;

  Gpu& GetGpu(GpuKey key);
  void ClassifyReady(Gpu& g);
  void Classify(Gpu& g, size_t index);
  JobMode EvaluateJob(int64_t now_ms, JobCounts* counts);
  void UpdateHang(JobMode mode, const JobCounts& counts, int64_t now_ms);
  void UpdateCheckpoint(JobMode mode, int64_t now_ms);
  void ConfirmHang(int64_t now_ms, const std::vector<std::string>& extra_reasons);
  void EndHang(int64_t end_ms, bool ongoing);
  void Emit(bool all);
  void Account(const Record& r);
  std::vector<std::string> HangReasons(const HangEpisode& e) const;
  std::string KeyName(GpuKey k) const;

  TriageOptions options_;
  TriageObserver* observer_;
  std::map<GpuKey, std::unique_ptr<Gpu>> gpus_;
  std::vector<Gpu*> gpu_list_;  // the same GPUs, for cheap iteration on the hot path
  std::map<GpuKey, std::string> names_;
  std::deque<Record> records_;
  std::vector<HangEpisode> episodes_;
  std::vector<CheckpointEpisode> checkpoints_;
  std::optional<CheckpointEpisode> open_checkpoint_;
  std::unique_ptr<Candidate> candidate_;
  int64_t checkpoint_wait_since_ = INT64_MIN;
  bool trained_ = false;
  int64_t no_job_since_ = INT64_MIN;
  int64_t first_ms_ = INT64_MAX;
  int64_t last_ms_ = INT64_MIN;
  std::vector<std::string> notes_;
  std::vector<std::string> host_names_;
};

}  // namespace ww::triage
