// TriageEngine: streaming triage of a job's GPU samples, the same code for offline logs
// (`wattwatch triage`) and the live watcher. Samples go in roughly in time order; labels come out
// a few seconds later (a centered window needs that much of the future), and a run of spinning
// that may turn out to be a hang is held back until it is confirmed or broken, so its samples can
// be labelled `hang` from the moment the job stopped, while `detected_at` records when an online
// watcher seeing only the samples so far would have confirmed it.
//
// The engine orchestrates; the decisions live in the parts it calls, in this order per sample:
// features.h (one GPU's windows: smoothing, debounce, starvation, sustained spin), job_eval.h
// (pure: every GPU's view -> the job's mode, a hang's culprits and reasons), episodes.h (hang,
// checkpoint and job-end trackers over time). What stays here: per-GPU bookkeeping, holding back
// labels while a hang candidate may still relabel them, and the per-GPU seconds.
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
#include "triage/classifier.h"
#include "triage/episodes.h"
#include "triage/host_clock.h"
#include "triage/job_eval.h"
#include "triage/options.h"
#include "triage/snapshot.h"
#include "triage/stragglers.h"

namespace ww::triage {

struct LabeledSample {
  int64_t timestamp_ms;
  GpuKey key;
  GpuState state;
};

// How many of a GPU's samples carried each signal the classification reads (the evidence its
// states rest on; see evidence.h).
struct SignalCounts {
  int64_t power = 0;  // power.draw (or .instant), placed in the board's range
  // power.draw logged but not placed in the board's range (no power.limit, no known model, never
  // seen idle or spread out: PowerCalibration::placed), so not used
  int64_t power_unplaced = 0;
  // ... of them, readings that cannot be watts (PowerCalibration::power_unit_note)
  int64_t power_not_watts = 0;
  int64_t utilization = 0;         // utilization.gpu
  int64_t memory = 0;              // memory.used
  int64_t memory_utilization = 0;  // utilization.memory
  int64_t activity = 0;            // DCGM/GPM activity counters (SM, tensor, DRAM)
  int64_t lost = 0;                // samples of a GPU the driver reported lost
};

// Something the job's telemetry says happened that is not a GPU state: a GPU the driver lost, a
// stretch with no samples from any GPU.
struct TriageEvent {
  enum class Kind : uint8_t {
    kGpuLost,  // key: the GPU; start_ms: its first lost sample
    kGap,      // no GPU of the job sampled from start_ms to end_ms; open episodes end at start_ms
  };
  Kind kind = Kind::kGpuLost;
  int64_t start_ms = 0;
  int64_t end_ms = 0;
  GpuKey key;
};

struct GpuStats {
  GpuKey key;
  std::string name;
  std::string calibration;
  // Set when the logged power cannot be taken as it is: a limit the model cannot have (ignored
  // for the calibration), or readings that cannot be watts (power not used).
  std::string power_note;
  SignalCounts signals;
  int64_t samples = 0;
  // Its first and last sample's time (both 0 before any).
  int64_t first_ms = 0;
  int64_t last_ms = 0;
  std::array<double, kNumGpuStates> seconds{};
  double total_seconds() const;
  // Why the communication share is unknown (features.h); empty when it is measured.
  std::string comm_share_unknown;
  // communication / (compute + communication); nullopt without training time or when unknown.
  std::optional<double> comm_share() const;
  // The GPU's typical reading over its first hang_confirm_s (power and utilization averaged, the
  // rest the latest), for the one-snapshot verdict of a log too short to confirm a hang.
  SnapshotReading early;
  double early_power_sum_w = 0, early_util_sum_pct = 0;
  int64_t early_power_n = 0, early_util_n = 0;
  SnapshotReading EarlyReading() const;
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
  // A lost GPU or a gap in the input, when the engine sees it.
  virtual void OnEvent(const TriageEvent& event) {}
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

  const std::vector<HangEpisode>& hang_episodes() const { return hang_.episodes(); }
  // The checkpoints that lasted min_checkpoint_s (one sample interval included); a shorter wait
  // on a quiet rank keeps its samples' labels but is no episode.
  std::vector<CheckpointEpisode> checkpoints() const;
  std::vector<GpuStats> gpu_stats() const;
  std::optional<GpuState> current_state(GpuKey key) const;
  bool hang_active() const { return active_hang() != nullptr; }
  // The hang in progress (confirmed), if any.
  const HangEpisode* active_hang() const { return hang_.active(); }
  int64_t first_timestamp_ms() const { return first_ms_; }
  int64_t last_timestamp_ms() const { return last_ms_; }
  // Notes for the user: e.g. a spin at the end of the log too short to confirm, a host clock
  // that disagrees with the others. (Per-GPU notes are in gpu_stats().)
  std::vector<std::string> notes() const;
  // The log ended during a wait that temperature held unconfirmed (HangTracker::thermal_unknown).
  const std::string& thermal_unknown() const { return hang_.thermal_unknown(); }
  // GPU views and count slots the job-level evaluation has looked at so far (its passes over
  // the GPUs, the count's list steps, Finish's picks): a deterministic measure of its work, for
  // tests that it stays flat per sample as a job grows (tests/triage/scale_test.cc).
  int64_t job_eval_steps() const;
  // Ranks consistently slower than their peers over training (stragglers.h).
  // None where the power split cannot time the ranks (stragglers_unknown says why).
  std::vector<Straggler> stragglers() const;
  // Why stragglers could not be judged (coarse sampling without activity counters, a board that
  // waits as high as collectives draw), or "".
  std::string stragglers_unknown() const;
  // Lost GPUs and gaps, in the order seen.
  const std::vector<TriageEvent>& events() const { return events_; }
  double wasted_gpu_hours() const;
  const TriageOptions& options() const { return options_; }
  // Each host's clock against the first host's, from moments their GPUs changed together (only
  // hosts where enough moments agree).
  std::vector<HostSkew> host_skews() const;

 private:
  struct Gpu;
  struct Record;

  Gpu& GetGpu(GpuKey key);
  void RenewSlot(size_t view);
  Gpu* FindGpu(GpuKey key) const;  // nullptr when never sampled
  // Job-level evaluation after one more classified sample of g.
  void Classify(Gpu& g, const SampleFeatures& f);
  // The sample's temperature into its GPU's working or quiet level (thermal.h).
  void NoteTemperature(Gpu& g, const SampleFeatures& f, GpuState state);
  void OnHangUpdate(const HangUpdate& u, int64_t now_ms);
  // A quiet stretch was resolved: as a checkpoint, its held samples become `checkpoint`.
  void OnQuietUpdate(const QuietUpdate& u);
  // The job is a single GPU (world_size, else the GPUs that held it): no collectives.
  bool one_gpu() const;
  void Emit(bool all);
  void Account(const Record& r);
  void AddEvent(const TriageEvent& e);
  // No GPU sampled from gap_start_ms to now_ms: open episodes end at the gap's start.
  void OnGap(int64_t gap_start_ms, int64_t now_ms);
  // At the end of input: a note when every rank was still quiet holding memory for long.
  void NoteUnresolvedQuiet();
  // At the end of input: a note when a one-GPU log spent long pegged at low power (without
  // --world-size it is compute; one rank of a larger job would have been waiting).
  void NoteOneGpuSpin();

  TriageOptions options_;
  TriageObserver* observer_;
  std::map<GpuKey, std::unique_ptr<Gpu>> gpus_;
  // by_slot_[host][gpu]: the same Gpu as gpus_ holds, for the per-sample lookups (a map walk per
  // sample showed at 10^7 samples). Only keys below kSlotLimit are kept here.
  static constexpr uint16_t kSlotLimit = 1024;
  std::vector<std::vector<Gpu*>> by_slot_;
  std::vector<GpuView> views_;  // every GPU's job view, in order of first sample (the hot loop)
  // slots_[i]: views_[i]'s part in the job's counts, renewed whenever views_[i] changes (counting
  // them is the per-sample loop over every GPU; reading whole views there showed at 10^7 samples).
  std::vector<CountSlot> slots_;
  SlotCounter counter_;        // slots_ counted as they change
  size_t inexact_slots_ = 0;   // slots_ that CountSlots cannot count (CountJob does, then)
  int64_t finish_pops_ = 0;    // samples Finish classified (job_eval_steps)
  int thermal_gpus_ = 0;       // GPUs whose temperature follows their load (Gpu::thermal_counted)
  int64_t views_scanned_ = 0;  // views passed over here (job_eval_steps)
  // The views classified gone while in the job since the job last ended (what a job end
  // changes), and which of them are listed.
  std::vector<uint32_t> gone_in_job_;
  std::vector<uint8_t> gone_listed_;
  std::map<GpuKey, std::string> names_;
  std::deque<Record> records_;  // classified, waiting while a hang candidate may relabel them
  HangTracker hang_;
  CheckpointTracker checkpoints_;
  QuietTracker quiet_;
  JobEndTracker job_end_;
  int job_gpus_seen_ = 0;  // GPUs that held the job's process at some time
  StragglerTracker stragglers_;
  std::vector<TriageEvent> events_;
  std::vector<std::string> end_notes_;  // said at the end of input (NoteUnresolvedQuiet)
  double one_gpu_spin_s_ = 0;           // a one-GPU job's sustained low-power pegged seconds
  std::vector<std::vector<WorkTransition>> transitions_;  // by host, for host_skews()
  size_t transitions_total_ = 0;
  int64_t last_classified_ms_ = INT64_MIN;  // latest sample time any GPU was classified at
  bool trained_ = false;
  double trained_s_ = 0;  // GPU-seconds of training since the job began
  int64_t first_ms_ = INT64_MAX;
  int64_t last_ms_ = INT64_MIN;
};

}  // namespace ww::triage
