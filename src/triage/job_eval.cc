#include "triage/job_eval.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>

#include "core/format.h"
#include "triage/thermal.h"

namespace ww::triage {
namespace {
constexpr ThermalThresholds kThermal{};
}  // namespace

void ApplySample(const SampleFeatures& f, GpuView* v) {
  if (f.cls == LocalClass::kSpin && (!v->classified || v->cls != LocalClass::kSpin)) {
    v->spin_since_ms = f.t_ms;
    v->temp_onset_c = v->temp_c;  // as it was before the spin began
  }
  if (f.cls == LocalClass::kGone && (!v->classified || v->cls != LocalClass::kGone)) {
    v->gone_since_ms = f.t_ms;
  }
  v->classified = true;
  v->cur_ms = f.t_ms;
  v->cls = f.cls;
  v->proc = f.proc;
  v->starved = f.starved;
  v->sustained_spin = f.sustained_spin;
  v->last_power_w = f.power_w;
  v->last_power_frac = f.power_frac;
  v->last_util_mem_pct = f.util_mem_pct;
  v->lost = f.lost;
  v->blind = f.blind;
  v->moves_data = f.moves_data;
  // Without a memory reading, any sign of kernels means the job runs here.
  if (f.proc == ProcState::kLoaded ||
      (f.proc == ProcState::kUnknown && f.cls != LocalClass::kGone && f.cls != LocalClass::kLow)) {
    v->in_job = true;
  }
}

namespace {

double StaleLimitS(const GpuView& v, const TriageOptions& options) {
  return std::max(options.stale_s, options.stale_intervals * v.interval_s);
}

bool WithinStaleLimit(int64_t age_ms, double stale_s) {
  return static_cast<double>(age_ms) / 1000.0 <= stale_s;
}

}  // namespace

void SmoothTemperature(double temp_c, int64_t t_ms, GpuView* v) {
  const double w =
      std::isnan(v->temp_c)
          ? 1
          : ThermalSmoothingWeight(static_cast<double>(t_ms - v->temp_ms) / 1000.0, kThermal);
  v->temp_c =
      static_cast<float>(std::isnan(v->temp_c) ? temp_c : v->temp_c + w * (temp_c - v->temp_c));
  v->temp_ms = t_ms;
}

bool IsActiveInJob(const GpuView& v, int64_t now_ms, const TriageOptions& options) {
  if (!v.classified || !v.in_job) return false;
  const double stale_s = StaleLimitS(v, options);
  if (stale_s == v.cached_stale_s) return now_ms - v.cur_ms <= v.cached_stale_ms;
  return WithinStaleLimit(now_ms - v.cur_ms, stale_s);
}

void CacheStaleLimit(GpuView* v, const TriageOptions& options) {
  const double stale_s = StaleLimitS(*v, options);
  if (stale_s == v->cached_stale_s) return;
  v->cached_stale_s = std::numeric_limits<double>::quiet_NaN();
  if (!(stale_s >= 0 && stale_s < 1e9)) return;  // (a limit of 30 years: seconds it is)
  // The largest age that WithinStaleLimit accepts: it is monotonic in the age, so an age is
  // within the limit exactly when it is at most this one.
  auto ms = static_cast<int64_t>(stale_s * 1000);
  while (WithinStaleLimit(ms + 1, stale_s)) ++ms;
  while (!WithinStaleLimit(ms, stale_s)) --ms;
  v->cached_stale_s = stale_s;
  v->cached_stale_ms = ms;
}

namespace {

// Which count an active GPU adds to. A spin that is not sustained (kBlip) counts as busy, and so
// does every spin of a one-GPU job (FromBuckets).
enum Bucket : uint8_t {
  kGoneB,
  kSpinB,
  kBlipB,
  kStarvedB,
  kStarvedQuietB,
  kBusyB,
  kBlindB,
  kPartialB,
  kLowB,
  kNumBuckets
};
using BucketCounts = std::array<int, kNumBuckets>;

Bucket BucketOf(const GpuView& v, const TriageOptions& options) {
  if (v.cls == LocalClass::kGone) return kGoneB;
  if (v.cls == LocalClass::kSpin) return v.sustained_spin && !v.moves_data ? kSpinB : kBlipB;
  if (v.starved) {
    // Quiet in a reading too coarse to resolve a step, holding its model (memory.used seen):
    // its window's bursts and gaps may be training and saves, each a reading or more long (rank
    // 0 of ckpt100 every 15 s).
    return v.cls == LocalClass::kLow && v.proc == ProcState::kLoaded &&
                   v.interval_s > options.comm_share_max_interval_s
               ? kStarvedQuietB
               : kStarvedB;
  }
  if (v.cls == LocalClass::kBusy) return v.blind ? kBlindB : kBusyB;
  if (v.cls == LocalClass::kPartial) return kPartialB;
  return kLowB;
}

JobCounts FromBuckets(const BucketCounts& n, bool one_gpu) {
  JobCounts c;
  for (int k : n) c.active += k;
  c.gone = n[kGoneB];
  c.spin = one_gpu ? 0 : n[kSpinB];
  c.busy = n[kBusyB] + n[kBlipB] + (one_gpu ? n[kSpinB] + n[kBlindB] : 0);
  c.blind = one_gpu ? 0 : n[kBlindB];
  c.starved = n[kStarvedB];
  c.starved_quiet = n[kStarvedQuietB];
  c.partial = n[kPartialB];
  c.low = n[kLowB];
  return c;
}

}  // namespace

JobCounts CountJob(std::span<const GpuView> views, int64_t now_ms, const TriageOptions& options,
                   bool one_gpu) {
  BucketCounts n{};
  for (const GpuView& v : views) {
    if (IsActiveInJob(v, now_ms, options)) ++n[BucketOf(v, options)];
  }
  return FromBuckets(n, one_gpu);
}

CountSlot MakeCountSlot(const GpuView& v, const TriageOptions& options) {
  CountSlot slot;
  if (!v.classified || !v.in_job) return slot;  // never active
  slot.bucket = BucketOf(v, options);
  slot.live_unloaded = v.cls != LocalClass::kGone && v.proc != ProcState::kLoaded;
  slot.sustained_spin = v.cls == LocalClass::kSpin && v.sustained_spin;
  // IsActiveInJob compares the age with the cached limit exactly when it is the current one.
  // (A time so late that adding the limit would overflow is counted from the view instead.)
  slot.exact = StaleLimitS(v, options) == v.cached_stale_s &&
               v.cur_ms <= std::numeric_limits<int64_t>::max() - v.cached_stale_ms;
  if (slot.exact) slot.active_until_ms = v.cur_ms + v.cached_stale_ms;
  return slot;
}

JobCounts CountSlots(std::span<const CountSlot> slots, int64_t now_ms, bool one_gpu) {
  BucketCounts n{};
  for (const CountSlot& s : slots) n[s.bucket] += now_ms <= s.active_until_ms ? 1 : 0;
  return FromBuckets(n, one_gpu);
}

static_assert(SlotCounter::kBucketCount == kNumBuckets);

void SlotCounter::Set(size_t i, const CountSlot& slot) {
  if (i == slots_.size()) {
    slots_.push_back(slot);
    if (!counted_ && slots_.size() > kScanUpTo) {
      counted_ = true;
      for (const CountSlot& s : slots_) Add(s);
      return;
    }
  } else {
    if (counted_) Remove(slots_[i]);
    slots_[i] = slot;
  }
  if (counted_) Add(slot);
}

void SlotCounter::Remove(const CountSlot& slot) {
  ++steps_;
  auto it = by_until_.find(slot.active_until_ms);  // (every slot set is counted under its time)
  --it->second[slot.bucket];
  it->second[kBucketCount] -= slot.live_unloaded ? 1 : 0;
  it->second[kBucketCount + 1] -= slot.sustained_spin ? 1 : 0;
  if (slot.active_until_ms >= threshold_ms_) {
    --counts_[slot.bucket];
    counts_[kBucketCount] -= slot.live_unloaded ? 1 : 0;
    counts_[kBucketCount + 1] -= slot.sustained_spin ? 1 : 0;
  }
  for (int32_t n : it->second) {
    if (n != 0) return;
  }
  spare_.push_back(by_until_.extract(it));
}

void SlotCounter::Add(const CountSlot& slot) {
  ++steps_;
  auto it = by_until_.lower_bound(slot.active_until_ms);
  if (it == by_until_.end() || it->first != slot.active_until_ms) {
    if (spare_.empty()) {
      it = by_until_.emplace_hint(it, slot.active_until_ms, Counts{});
    } else {
      ByTime::node_type node = std::move(spare_.back());
      spare_.pop_back();
      node.key() = slot.active_until_ms;
      node.mapped() = Counts{};
      it = by_until_.insert(it, std::move(node));
    }
  }
  ++it->second[slot.bucket];
  it->second[kBucketCount] += slot.live_unloaded ? 1 : 0;
  it->second[kBucketCount + 1] += slot.sustained_spin ? 1 : 0;
  if (slot.active_until_ms >= threshold_ms_) {
    ++counts_[slot.bucket];
    counts_[kBucketCount] += slot.live_unloaded ? 1 : 0;
    counts_[kBucketCount + 1] += slot.sustained_spin ? 1 : 0;
  }
}

JobCounts SlotCounter::Count(int64_t now_ms, bool one_gpu) {
  if (!counted_) {
    // One branch-free pass (CountSlots' with the two flags): this runs for every sample.
    steps_ += static_cast<int64_t>(slots_.size());
    BucketCounts n{};
    int live_unloaded = 0, sustained_spin = 0;
    for (const CountSlot& s : slots_) {
      const int active = now_ms <= s.active_until_ms ? 1 : 0;
      n[s.bucket] += active;
      live_unloaded |= active & static_cast<int>(s.live_unloaded);
      sustained_spin |= active & static_cast<int>(s.sustained_spin);
    }
    const JobCounts c = FromBuckets(n, one_gpu);
    sustained_spin_ = sustained_spin != 0;
    live_hold_memory_ = c.active > c.gone && live_unloaded == 0;
    return c;
  }
  // The times between the last count's and now_ms: active again (an earlier now_ms) or expired.
  if (now_ms != threshold_ms_) {
    const int sign = now_ms < threshold_ms_ ? 1 : -1;
    const int64_t to_ms = std::max(now_ms, threshold_ms_);
    ++steps_;
    for (auto it = by_until_.lower_bound(std::min(now_ms, threshold_ms_));
         it != by_until_.end() && it->first < to_ms; ++it) {
      for (size_t b = 0; b < counts_.size(); ++b) counts_[b] += sign * it->second[b];
      ++steps_;
    }
    threshold_ms_ = now_ms;
  }
  BucketCounts n{};
  std::copy_n(counts_.begin(), n.size(), n.begin());
  const JobCounts c = FromBuckets(n, one_gpu);
  live_hold_memory_ = c.active > c.gone && counts_[kBucketCount] == 0;
  sustained_spin_ = counts_[kBucketCount + 1] > 0;
  return c;
}

bool LiveRanksHoldMemory(std::span<const GpuView> views, int64_t now_ms,
                         const TriageOptions& options) {
  bool any = false;
  for (const GpuView& v : views) {
    if (!IsActiveInJob(v, now_ms, options) || v.cls == LocalClass::kGone) continue;
    if (v.proc != ProcState::kLoaded) return false;
    any = true;
  }
  return any;
}

bool StoppedReporting(const GpuView& v, int64_t wait_start_ms, int64_t now_ms,
                      const TriageOptions& options) {
  if (!v.classified || !v.in_job || v.cls == LocalClass::kGone) return false;
  if (IsActiveInJob(v, now_ms, options)) return false;
  // At coarse sampling the last reading may precede the crash, and the peers' first spinning one
  // follow it, by an interval each.
  const auto window_ms = static_cast<int64_t>(
      std::max(options.stopped_reporting_window_s, options.stale_intervals * v.interval_s) * 1000);
  return std::max(v.cur_ms, v.heard_ms) >= wait_start_ms - window_ms;
}

HangMembers ChooseHangMembers(std::span<const GpuView> views, JobMode mode, int64_t now_ms,
                              const TriageOptions& options, int64_t wait_since_ms) {
  std::vector<const GpuView*> by_key;
  by_key.reserve(views.size());
  for (const GpuView& v : views) by_key.push_back(&v);
  std::sort(by_key.begin(), by_key.end(),
            [](const GpuView* a, const GpuView* b) { return a->key < b->key; });

  HangMembers m;
  int64_t first_spin = std::numeric_limits<int64_t>::max();
  int64_t last_spin = std::numeric_limits<int64_t>::min();
  for (const GpuView* v : by_key) {
    if (!IsActiveInJob(*v, now_ms, options)) continue;
    m.gpus.push_back(v->key);
    if (v->cls == LocalClass::kGone) m.culprits.push_back(v->key);
    if (v->cls == LocalClass::kSpin) {
      first_spin = std::min(first_spin, v->spin_since_ms);
      last_spin = std::max(last_spin, v->spin_since_ms);
    }
  }
  const int64_t wait_start_ms = std::min({wait_since_ms, first_spin, now_ms});
  bool silent_culprit = false;
  for (const GpuView* v : by_key) {
    if (!StoppedReporting(*v, wait_start_ms, now_ms, options)) continue;
    m.silent.push_back(v->key);
    m.gpus.push_back(v->key);
    // One heard after the wait began was a victim like the others (its logger stopped during
    // the wait). One gone silent before it began is the rank the others wait for, even when its
    // last reading was a collective of the training steps before (its whole-second readings can
    // fall in one).
    if (std::max(v->cur_ms, v->heard_ms) < wait_start_ms) {
      m.culprits.push_back(v->key);
      silent_culprit = true;
    }
  }
  if (!m.silent.empty()) std::sort(m.gpus.begin(), m.gpus.end());
  if (silent_culprit) std::sort(m.culprits.begin(), m.culprits.end());
  if (m.culprits.empty() && mode == JobMode::kHangCandidate) {
    const int64_t margin_ms = static_cast<int64_t>(options.culprit_margin_s * 1000);
    // Everyone started waiting together: no rank stands out.
    if (last_spin - first_spin > margin_ms) {
      for (const GpuView* v : by_key) {
        if (v->in_job && v->cls == LocalClass::kSpin && v->spin_since_ms >= last_spin - margin_ms) {
          m.culprits.push_back(v->key);
        }
      }
    }
  }
  if (m.culprits.empty() && mode == JobMode::kCheckpointWait) {
    for (const GpuView* v : by_key) {
      if (v->in_job && v->cls == LocalClass::kLow) m.culprits.push_back(v->key);
    }
  }
  return m;
}

void HangEvidence::Add(const GpuView& g) {
  if (!std::isnan(g.last_power_w)) {
    spin_power_min_w = std::min(spin_power_min_w, g.last_power_w);
    spin_power_max_w = std::max(spin_power_max_w, g.last_power_w);
    spin_frac_sum += g.last_power_frac;
    ++spin_samples;
  }
  if (g.last_util_mem_pct) util_mem_max_pct = std::max(util_mem_max_pct, *g.last_util_mem_pct);
}

std::string GpuName(GpuKey key, const std::vector<std::string>& host_names) {
  if (key.host < host_names.size()) return GpuLabel(host_names[key.host], key.gpu);
  return GpuLabelForHostIndex(key.host, key.gpu);
}

std::string GpuListName(std::span<const GpuKey> keys, const std::vector<std::string>& host_names) {
  if (keys.size() <= 4) {
    std::string s;
    for (GpuKey k : keys) s += (s.empty() ? "" : ", ") + GpuName(k, host_names);
    return s.empty() ? "none" : s;
  }
  std::string s = fmt::format("{} GPUs (", keys.size());
  size_t i = 0;
  while (i < keys.size()) {
    size_t j = i;
    while (j + 1 < keys.size() && keys[j + 1].host == keys[i].host &&
           keys[j + 1].gpu == keys[j].gpu + 1) {
      ++j;
    }
    // "node1/GPU0-7": the first GPU's label with the last index after a dash.
    s += (i == 0 ? "" : ", ") + GpuName(keys[i], host_names) +
         (i == j ? "" : fmt::format("-{}", keys[j].gpu));
    i = j + 1;
  }
  return s + ")";
}

std::string StoppedReportingReason(const StoppedReportingNote& stopped,
                                   const std::vector<std::string>& host_names) {
  const std::string when =
      stopped.before_wait_s >= 0
          ? fmt::format("{} before the others began waiting", FormatDuration(stopped.before_wait_s))
          : fmt::format("{} into the wait", FormatDuration(-stopped.before_wait_s));
  return fmt::format(
      "{} stopped reporting {} and never came back: a node that crashed or lost its network, or "
      "a logger that died (its GPUs count in the hang to its end)",
      GpuListName(stopped.gpus, host_names), when);
}

std::vector<std::string> HangReasons(const HangEvidence& c, size_t gpus, size_t gone,
                                     const std::vector<GpuKey>& culprits, double spin_s,
                                     const Thresholds& thresholds,
                                     const std::vector<std::string>& host_names,
                                     const std::vector<GpuKey>& lost, HangKind kind,
                                     size_t spinning, const StoppedReportingNote& stopped) {
  std::vector<std::string> out;
  if (spinning == std::numeric_limits<size_t>::max()) spinning = gpus - gone - stopped.gpus.size();
  if (c.spin_samples > 0 && spinning > 0) {
    out.push_back(
        fmt::format("{} of {} GPUs at >= {:.0f} % utilization but {:.2f} of their power range "
                    "({:.0f}-{:.0f} W), flat for {:.0f} s: spinning in a collective, not computing",
                    spinning, gpus, thresholds.spin_util_pct,
                    c.spin_frac_sum / static_cast<double>(c.spin_samples), c.spin_power_min_w,
                    c.spin_power_max_w, spin_s));
  }
  if (c.util_mem_max_pct >= 0) {
    out.push_back(fmt::format("memory-controller utilization at most {:.0f} %: no data moving",
                              c.util_mem_max_pct));
  }
  if (!stopped.gpus.empty()) out.push_back(StoppedReportingReason(stopped, host_names));
  std::string names, lost_names;
  size_t named = 0;
  for (GpuKey k : culprits) {
    if (std::find(stopped.gpus.begin(), stopped.gpus.end(), k) != stopped.gpus.end()) continue;
    const bool is_lost = std::find(lost.begin(), lost.end(), k) != lost.end();
    std::string& list = is_lost ? lost_names : names;
    list += (list.empty() ? "" : ", ") + GpuName(k, host_names);
    named += is_lost ? 0 : 1;
  }
  if (!lost_names.empty()) {
    out.push_back(fmt::format(
        "{} lost: the driver reads [GPU is lost] (fell off the bus, e.g. Xid 79) while its "
        "peers wait for it",
        lost_names));
  }
  if (gone > lost.size()) {
    out.push_back(
        fmt::format("process gone on {} (memory released) while its peers wait for it", names));
  } else if (gone > 0) {
    // Every gone rank is a lost GPU: said above.
  } else if (kind == HangKind::kPartial && named > 0) {
    out.push_back(fmt::format(
        "{} hold memory without kernels while the others wait for them: the stuck ranks (one "
        "pipeline stage or communicator)",
        names));
  } else if (kind == HangKind::kOffGpu) {
    out.push_back(
        "no rank on the GPU stands out: look at the processes (py-spy dump, the data loader "
        "workers, the filesystem they read)");
  } else if (named > 0) {
    out.push_back(fmt::format(
        "{} kept computing after the others were already waiting, then entered a collective "
        "nobody else joined: the ranks disagree on the step count",
        names));
  } else if (culprits.empty()) {
    out.push_back("all ranks entered the wait together; telemetry names no single culprit");
  }
  out.push_back(
      fmt::format("no rank computing or saving for {:.0f} s (confirmation window)", spin_s));
  return out;
}

std::string OverlongCheckpointReason(double waited_s, double max_checkpoint_s, size_t spinning,
                                     size_t quiet) {
  const std::string who = spinning > 0
                              ? fmt::format("{} rank{} spun", spinning, spinning == 1 ? "" : "s")
                              : "peers spun";
  const std::string on = quiet > 0 ? fmt::format("{} rank{} that hold{}", quiet,
                                                 quiet == 1 ? "" : "s", quiet == 1 ? "s" : "")
                                   : "ranks that hold";
  const std::string limit = max_checkpoint_s > 0 ? fmt::format(" {:.0f} s", max_checkpoint_s) : "";
  return fmt::format(
      "{} for {:.0f} s on {} memory without kernels, nobody computing: a partial hang (one "
      "pipeline stage or communicator stuck), not a checkpoint: none takes longer than{} "
      "(--max-checkpoint-s)",
      who, waited_s, on, limit);
}

std::string OffGpuStallReason(double quiet_s, double max_checkpoint_s, size_t gpus) {
  return fmt::format(
      "all {} GPUs held their memory with no kernels for {:.0f} s after training, processes "
      "alive: a stall off the GPU (a data loader deadlock, a filesystem that stopped "
      "answering), not a checkpoint: none takes longer than {:.0f} s (--max-checkpoint-s)",
      gpus, quiet_s, max_checkpoint_s);
}

}  // namespace ww::triage
