// Job-level evaluation, pure: every GPU's latest view in (plain structs), the job's counts and
// mode, a hang's members and culprits, and the reasons in words out. No clocks, no state between
// calls, no I/O, so it is table-tested (tests/triage/job_eval_test.cc) and serves the offline
// triage and the live watcher alike. The stateful parts (how long a mode lasted) are episodes.h.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/sample.h"
#include "triage/classifier.h"
#include "triage/features.h"
#include "triage/options.h"

namespace ww::triage {

// One GPU as the job sees it: its latest classified sample, and how long it has been spinning.
struct GpuView {
  GpuKey key;
  bool classified = false;  // at least one sample classified
  bool in_job = false;      // this GPU held the job's process (reset when the job ends)
  int64_t cur_ms = 0;       // time of the latest classified sample
  // Time of the latest sample the GPU sent, classified or not yet (the centered window holds the
  // last few seconds back): when it was last heard from.
  int64_t heard_ms = std::numeric_limits<int64_t>::min();
  double interval_s = 0;  // the GPU's current sample spacing (the stale limit scales with it)
  // IsActiveInJob's stale limit in whole ms, for the limit in seconds it was worked out from
  // (CacheStaleLimit; NaN: none, the limit is then compared in seconds). Same answers either way.
  double cached_stale_s = std::numeric_limits<double>::quiet_NaN();
  int64_t cached_stale_ms = 0;
  LocalClass cls = LocalClass::kGone;
  ProcState proc = ProcState::kUnknown;
  bool starved = false;
  bool sustained_spin = false;
  int64_t spin_since_ms = 0;  // start of the current run of spin samples
  int64_t gone_since_ms = 0;  // start of the current run of gone samples
  double last_power_w = std::numeric_limits<double>::quiet_NaN();
  double last_power_frac = std::numeric_limits<double>::quiet_NaN();
  std::optional<double> last_util_mem_pct;
  bool lost = false;   // the latest sample said the driver lost the GPU (cls is then kGone)
  bool blind = false;  // busy by utilization alone (SampleFeatures::blind)
  // The latest sample moved memory or link bytes (SampleFeatures::moves_data): a spin that does
  // is work (an MD code's small kernels), counted busy, never a wait.
  bool moves_data = false;
  // Temperature (thermal.h), NaN where not logged: smoothed now, smoothed when the current spin
  // began, and the GPU's working and quiet levels where its log's temperature follows the load.
  float temp_c = std::numeric_limits<float>::quiet_NaN();
  // When temp_c last took a reading (the engine takes at most one a second).
  int64_t temp_ms = std::numeric_limits<int64_t>::min() / 2;
  float temp_onset_c = std::numeric_limits<float>::quiet_NaN();
  float temp_work_c = std::numeric_limits<float>::quiet_NaN();
  float temp_quiet_c = std::numeric_limits<float>::quiet_NaN();
};

// The view after one more classified sample of its GPU.
void ApplySample(const SampleFeatures& f, GpuView* view);
// One more temperature reading into the view's smoothed temperature (GpuView::temp_c). The engine
// passes at most one a second: temperature moves over seconds, and a 100 ms log then pays for a
// tenth of its readings.
void SmoothTemperature(double temp_c, int64_t t_ms, GpuView* v);

// The GPU counts in job decisions at now_ms: classified, in the job, and not silent for longer
// than stale_s (or stale_intervals of its own spacing, whichever is longer).
bool IsActiveInJob(const GpuView& v, int64_t now_ms, const TriageOptions& options);
// Works out v's stale limit in ms for its current interval_s, so IsActiveInJob compares integers
// (the job's counts look at every GPU for each sample). Call after interval_s changes.
void CacheStaleLimit(GpuView* v, const TriageOptions& options);

// The job's counts at now_ms over the active GPUs. A spin that is not sustained counts as busy:
// a wait shorter than min_spin_s is an ordinary collective, not ranks stuck waiting. one_gpu: the
// job is a single GPU (no peer to wait on), so every spin counts as busy: small kernels.
JobCounts CountJob(std::span<const GpuView> views, int64_t now_ms, const TriageOptions& options,
                   bool one_gpu = false);

// One GPU's part in CountJob worked out ahead (the engine keeps one per GPU, renewed whenever its
// view changes, and counts them for each sample without reading the views): which count it adds
// to, and until when it is active (the lowest time for a GPU that is not in the job). A slot is
// exact when its GPU's stale limit is cached (CacheStaleLimit); CountSlots over exact slots
// gives CountJob's answer.
struct CountSlot {
  int64_t active_until_ms = std::numeric_limits<int64_t>::min();
  uint8_t bucket = 0;  // internal to job_eval.cc
  bool exact = true;
  // Active and not gone, without its memory seen held (LiveRanksHoldMemory's exception).
  bool live_unloaded = false;
  bool sustained_spin = false;  // spinning, sustained (a one-GPU job's pegged kernels)
};
CountSlot MakeCountSlot(const GpuView& v, const TriageOptions& options);
JobCounts CountSlots(std::span<const CountSlot> slots, int64_t now_ms, bool one_gpu = false);

// CountSlots kept up to date as slots change, so the job's counts for a sample cost no pass over
// every GPU (that pass made a tick of a job quadratic in its GPUs: 106 s for 90 s of 10k GPUs).
// The slots are counted by bucket under each active_until_ms, in time order, with the sums of
// those still active at the last count's time; a count adds or takes away the times between
// the last count's and its own. A renewed slot moves between two times in O(log GPUs), whatever
// order the GPUs come in (a log's hosts interleave tick by tick); a count is O(log GPUs)
// amortized while time moves forward, and walks back only over the times between the two.
// Up to kScanUpTo slots a count is a pass over them (cheaper than the bookkeeping at that size);
// past it the bookkeeping starts. Count(now_ms) always equals CountSlots over the slots set.
// Thread-safety: not thread-safe; owned by one engine.
class SlotCounter {
 public:
  static constexpr size_t kBucketCount = 9;  // job_eval.cc's buckets
  // By bucket, then the live_unloaded and the sustained_spin slots.
  using Counts = std::array<int32_t, kBucketCount + 2>;
  static constexpr size_t kScanUpTo = 64;

  // Slot `i`'s new value; i == size() adds one.
  void Set(size_t i, const CountSlot& slot);
  size_t size() const { return slots_.size(); }
  JobCounts Count(int64_t now_ms, bool one_gpu = false);
  // LiveRanksHoldMemory at the last Count's time (for exact slots: their views' answer).
  bool live_ranks_hold_memory() const { return live_hold_memory_; }
  // An active GPU spins, sustained, at the last Count's time.
  bool any_sustained_spin() const { return sustained_spin_; }
  // Tree operations and times stepped over so far: a deterministic measure of the work, for
  // tests (tests/triage/scale_test.cc).
  int64_t steps() const { return steps_; }

 private:
  using ByTime = std::map<int64_t, Counts>;
  void Add(const CountSlot& slot);
  void Remove(const CountSlot& slot);

  std::vector<CountSlot> slots_;
  bool counted_ = false;  // by_until_ and counts_ are kept (more than kScanUpTo slots)
  ByTime by_until_;       // slots by active_until_ms: how many of each bucket
  // by_until_'s nodes whose counts fell to zero, kept for the next new time (no allocation per
  // sample once the job's GPUs are all seen).
  std::vector<ByTime::node_type> spare_;
  // counts_ sums the times at or after this one (the last count's).
  int64_t threshold_ms_ = std::numeric_limits<int64_t>::min();
  Counts counts_{};
  bool live_hold_memory_ = false;
  bool sustained_spin_ = false;
  int64_t steps_ = 0;
};

// Every live active GPU of the job shows its memory held (memory.used logged, a model loaded):
// the only evidence that quiet ranks keep their model rather than having gone. False without a
// live GPU, or when any of them has no memory reading.
bool LiveRanksHoldMemory(std::span<const GpuView> views, int64_t now_ms,
                         const TriageOptions& options);

// Who a hang candidate that starts at now_ms covers, and whom it blames.
struct HangMembers {
  std::vector<GpuKey> gpus;      // the active GPUs and the silent ones, in key order
  std::vector<GpuKey> culprits;  // in key order; empty when telemetry names nobody
  std::vector<GpuKey> silent;    // the GPUs that stopped reporting (in gpus too), in key order
};

// Whether v stopped reporting at the wait that began at wait_start_ms: it held the job, was not
// gone when last seen, is past its stale limit at now_ms, and fell silent no more than
// stopped_reporting_window_s (or stale_intervals of its sample spacing) before the wait began (a
// node that crashed, or whose logger died, while its peers went on into a collective it never
// joined). A GPU silent for longer before the wait was not part of it: its peers went on without
// it.
bool StoppedReporting(const GpuView& v, int64_t wait_start_ms, int64_t now_ms,
                      const TriageOptions& options);

// Members: the active GPUs, and those that stopped reporting at this wait (StoppedReporting; the
// wait begins at wait_since_ms, or where the first member began spinning, or now_ms). A
// silent member keeps its place until the hang ends, so its GPU-hours count to the end.
// Culprits, in order of preference: ranks whose process is gone, and silent ranks that stopped
// reporting before the wait began, not waiting themselves; else (a hang candidate) the ranks that
// started spinning last, when they did so more than culprit_margin_s after the first (the others
// were already waiting on them); else (an over-long checkpoint wait) the quiet ranks. `mode` is
// kHangCandidate or kCheckpointWait. Views may come in any order.
HangMembers ChooseHangMembers(std::span<const GpuView> views, JobMode mode, int64_t now_ms,
                              const TriageOptions& options,
                              int64_t wait_since_ms = std::numeric_limits<int64_t>::max());

// Evidence gathered over a hang candidate's spin samples, for its reasons.
struct HangEvidence {
  double spin_power_min_w = 1e18;
  double spin_power_max_w = -1e18;
  double spin_frac_sum = 0;
  int64_t spin_samples = 0;               // spin samples with power
  double util_mem_max_pct = -1;           // < 0: memory utilization never logged
  void Add(const GpuView& spinning_gpu);  // a GPU spinning at this evaluation
};

// What kind of stuck a hang is, for its reasons.
enum class HangKind : uint8_t {
  kSpin,     // every rank spins or is gone
  kPartial,  // some ranks spin on quiet ranks for longer than any checkpoint: the quiet ones stuck
  kOffGpu,   // every rank quiet holding memory for longer than any checkpoint
};

// Who stopped reporting at a hang, for its reasons: the silent members and how long before the
// wait began the last of them was heard (negative: that long into the wait).
struct StoppedReportingNote {
  std::vector<GpuKey> gpus;
  double before_wait_s = 0;
};

// "node1/GPU0-7 stopped reporting 3.0 s before the others began waiting and never came back: ...".
std::string StoppedReportingReason(const StoppedReportingNote& stopped,
                                   const std::vector<std::string>& host_names);

// The reasons of a hang confirmed after spin_s of spin over `gpus` GPUs: what the spinning GPUs
// read, and who is to blame. gone: how many of them have no process any more (lost GPUs
// included); lost: the culprits the driver reported lost (fell off the bus); stopped: the
// members that stopped reporting (neither gone nor spinning); host_names by GpuKey::host.
std::vector<std::string> HangReasons(
    const HangEvidence& evidence, size_t gpus, size_t gone, const std::vector<GpuKey>& culprits,
    double spin_s, const Thresholds& thresholds, const std::vector<std::string>& host_names,
    const std::vector<GpuKey>& lost = {}, HangKind kind = HangKind::kSpin,
    size_t spinning = std::numeric_limits<size_t>::max(), const StoppedReportingNote& stopped = {});

// The reason of a hang called because peers waited on quiet ranks for waited_s (a partial hang:
// `spinning` ranks wait, `quiet` ranks hold memory without kernels).
std::string OverlongCheckpointReason(double waited_s, double max_checkpoint_s = 0,
                                     size_t spinning = 0, size_t quiet = 0);

// The reason of a hang called because every rank held memory without kernels after training for
// quiet_s with its process alive: a stall off the GPU.
std::string OffGpuStallReason(double quiet_s, double max_checkpoint_s, size_t gpus);

// "node0/GPU3", or "host0/GPU3" for a host without a name.
std::string GpuName(GpuKey key, const std::vector<std::string>& host_names);
// GPUs in words, compact: "node1/GPU3, node1/GPU5" up to four, else
// "16 GPUs (node0/GPU0-7, node1/GPU0-7)"; "none" for none. keys in key order.
std::string GpuListName(std::span<const GpuKey> keys, const std::vector<std::string>& host_names);

}  // namespace ww::triage
