#include "triage/engine.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <queue>

#include "core/format.h"
#include "core/timefmt.h"
#include "triage/thermal.h"
#include "triage/verdict.h"

namespace ww::triage {
namespace {

// Work transitions kept for the host clock estimate: enough for hours of a job's checkpoints and
// steps, bounded for a starving job that flips every second.
constexpr size_t kMaxTransitions = 200000;

}  // namespace

// A classified sample waiting to be emitted (held while a hang candidate may still relabel it).
struct TriageEngine::Record {
  int64_t t_ms;
  GpuKey key;
  GpuState state;
  double dt_s;
  double compute_share;  // for compute/communication samples
  // Quiet holding memory while every rank was: `idle` unless training resumes after it.
  bool quiet_held = false;
  ActivityReading activity;  // the sample's DCGM activity counters (stragglers at coarse sampling)
  bool power_split = true;   // compute_share came from the sample's power (not a default)
};

struct TriageEngine::Gpu {
  Gpu(const std::string& name, const TriageOptions& options) : windows(name, options) {}
  GpuWindows windows;
  size_t view = 0;  // index into views_
  GpuState live = GpuState::kIdle;
  bool has_live = false;
  bool lost = false;  // the latest classified sample was a lost GPU (reported once per loss)
  std::optional<bool> working;  // the latest sample's class was kBusy (for host moments)
  bool ever_in_job = false;     // counted in job_gpus_seen_
  bool sampled = false;         // stats.first_ms is set (0 is a time: synthetic clocks start there)
  GpuStats stats;
  // Activity counters of samples added but not yet classified (the windows hold them a few
  // seconds), in time order; only kept while the GPU logs any.
  std::deque<std::pair<int64_t, ActivityReading>> pending_activity;
  ThermalLevels thermal;         // its temperature while computing and while quiet (thermal.h)
  bool thermal_counted = false;  // counted in thermal_gpus_
};

double GpuStats::total_seconds() const {
  double s = 0;
  for (double v : seconds) s += v;
  return s;
}

std::optional<double> GpuStats::comm_share() const {
  const double c = seconds[static_cast<size_t>(GpuState::kCompute)];
  const double m = seconds[static_cast<size_t>(GpuState::kCommunication)];
  if (c + m <= 0 || !comm_share_unknown.empty()) return std::nullopt;
  return m / (c + m);
}

namespace {

// The snapshot reading of a GPU's first hang_confirm_s (GpuStats::early).
void RecordEarly(const GpuSample& s, GpuStats* st) {
  SnapshotReading& e = st->early;
  e.key = s.key;
  if (auto p = s.power_w ? s.power_w : s.power_instant_w) {
    st->early_power_sum_w += *p;
    ++st->early_power_n;
  }
  if (s.util_gpu_pct) {
    st->early_util_sum_pct += *s.util_gpu_pct;
    ++st->early_util_n;
  }
  if (s.power_limit_w) e.power_limit_w = s.power_limit_w;
  if (s.util_mem_pct) e.util_mem_pct = s.util_mem_pct;
  if (s.mem_used_mib) e.mem_used_mib = s.mem_used_mib;
  if (s.mem_total_mib) e.mem_total_mib = s.mem_total_mib;
  if (s.temperature_c) e.temperature_c = s.temperature_c;
  if (s.sm_activity_ratio) e.sm_activity = s.sm_activity_ratio;
  if (s.pcie_tx_bytes_per_s || s.pcie_rx_bytes_per_s) {
    e.pcie_bytes_per_s = s.pcie_tx_bytes_per_s.value_or(0) + s.pcie_rx_bytes_per_s.value_or(0);
  }
  if (s.nvlink_tx_bytes_per_s || s.nvlink_rx_bytes_per_s) {
    e.nvlink_bytes_per_s =
        s.nvlink_tx_bytes_per_s.value_or(0) + s.nvlink_rx_bytes_per_s.value_or(0);
  }
}

}  // namespace

SnapshotReading GpuStats::EarlyReading() const {
  SnapshotReading r = early;
  r.key = key;
  r.name = name;
  if (early_power_n > 0) r.power_w = early_power_sum_w / static_cast<double>(early_power_n);
  if (early_util_n > 0) r.util_pct = early_util_sum_pct / static_cast<double>(early_util_n);
  return r;
}

TriageEngine::TriageEngine(TriageOptions options, TriageObserver* observer)
    : options_(options),  // trivially copyable: a move would copy anyway
      observer_(observer),
      hang_(options_),
      checkpoints_(options_),
      quiet_(options_),
      job_end_(options_) {}

TriageEngine::~TriageEngine() = default;

void TriageEngine::SetGpuInfo(const std::vector<GpuInfo>& gpus) {
  for (const GpuInfo& info : gpus) {
    if (!info.name.empty()) names_[info.key] = info.name;
  }
}

void TriageEngine::SetHostNames(std::vector<std::string> hosts) {
  hang_.SetHostNames(std::move(hosts));
}

TriageEngine::Gpu* TriageEngine::FindGpu(GpuKey key) const {
  if (key.host < by_slot_.size() && key.gpu < by_slot_[key.host].size()) {
    return by_slot_[key.host][key.gpu];
  }
  if (key.host < kSlotLimit && key.gpu < kSlotLimit) return nullptr;  // would be in by_slot_
  auto it = gpus_.find(key);
  return it == gpus_.end() ? nullptr : it->second.get();
}

void TriageEngine::RenewSlot(size_t view) {
  const CountSlot slot = MakeCountSlot(views_[view], options_);
  if (view < slots_.size()) {
    CountSlot& old = slots_[view];
    if (old.active_until_ms == slot.active_until_ms && old.bucket == slot.bucket &&
        old.exact == slot.exact && old.live_unloaded == slot.live_unloaded &&
        old.sustained_spin == slot.sustained_spin) {
      return;  // (a sample that did not change the GPU's spacing)
    }
    inexact_slots_ -= old.exact ? 0 : 1;
    old = slot;
  } else {
    slots_.push_back(slot);
  }
  inexact_slots_ += slot.exact ? 0 : 1;
  counter_.Set(view, slot);
}

TriageEngine::Gpu& TriageEngine::GetGpu(GpuKey key) {
  if (Gpu* found = FindGpu(key)) return *found;
  auto name_it = names_.find(key);
  const std::string name = name_it == names_.end() ? "" : name_it->second;
  auto g = std::make_unique<Gpu>(name, options_);
  g->stats.key = key;
  g->stats.name = name;
  g->view = views_.size();
  views_.push_back(GpuView{});
  gone_listed_.push_back(0);
  views_.back().key = key;
  RenewSlot(views_.size() - 1);  // not classified yet: never active, exact
  Gpu* raw = g.get();
  gpus_.emplace(key, std::move(g));
  if (key.host < kSlotLimit && key.gpu < kSlotLimit) {
    if (by_slot_.size() <= key.host) by_slot_.resize(key.host + 1u);
    auto& row = by_slot_[key.host];
    if (row.size() <= key.gpu) row.resize(key.gpu + 1u, nullptr);
    row[key.gpu] = raw;
  }
  return *raw;
}

void TriageEngine::Add(const GpuSample& s) {
  Gpu& g = GetGpu(s.key);
  if (!g.windows.Add(s)) return;
  if (!g.sampled) {
    g.sampled = true;
    g.stats.first_ms = s.timestamp_ms;
  }
  g.stats.last_ms = s.timestamp_ms;
  if (static_cast<double>(s.timestamp_ms - g.stats.first_ms) < 1000 * options_.hang_confirm_s) {
    RecordEarly(s, &g.stats);
  }
  SignalCounts& sig = g.stats.signals;
  if (s.power_w || s.power_instant_w) {
    ++(g.windows.power_placed() ? sig.power : sig.power_unplaced);
    if (!g.windows.power_placed() && g.windows.calibration().power_unit_note()) {
      ++sig.power_not_watts;
    }
  }
  if (s.util_gpu_pct) ++sig.utilization;
  if (s.mem_used_mib) ++sig.memory;
  if (s.util_mem_pct) ++sig.memory_utilization;
  if (s.sm_activity_ratio || s.tensor_activity_ratio || s.dram_bw_util_ratio) ++sig.activity;
  if (s.gpu_lost) ++sig.lost;
  ActivityReading a{s.tensor_activity_ratio, s.dram_bw_util_ratio, s.sm_activity_ratio,
                    s.gr_engine_active_ratio};
  if (!a.engine && s.util_gpu_pct) a.engine = *s.util_gpu_pct / 100;
  if (a.any()) g.pending_activity.emplace_back(s.timestamp_ms, a);
  stragglers_.AddClockReasons(s.key, s.timestamp_ms, s.clock_event_reasons,
                              s.util_gpu_pct && *s.util_gpu_pct >= 50);
  first_ms_ = std::min(first_ms_, s.timestamp_ms);
  last_ms_ = std::max(last_ms_, s.timestamp_ms);
  views_[g.view].heard_ms = s.timestamp_ms;
  // Other GPUs' staleness is judged by their spacing as of now, so it is kept current.
  views_[g.view].interval_s = g.windows.interval_s();
  CacheStaleLimit(&views_[g.view], options_);
  RenewSlot(g.view);
  SampleFeatures f;
  while (g.windows.NextReady(&f)) Classify(g, f);
}

void TriageEngine::Classify(Gpu& g, const SampleFeatures& f) {
  const int64_t now_ms = f.t_ms;
  if (last_classified_ms_ != INT64_MIN) {
    const double gap_s = static_cast<double>(now_ms - last_classified_ms_) / 1000.0;
    if (gap_s > std::max(options_.job_gap_s, options_.stale_intervals * g.windows.interval_s())) {
      OnGap(last_classified_ms_, now_ms);
    }
  }
  const int64_t job_ms = last_classified_ms_;
  last_classified_ms_ = std::max(last_classified_ms_, now_ms);
  ApplySample(f, &views_[g.view]);
  RenewSlot(g.view);
  // A reading the job's time passed by more than its GPU's stale limit (the last readings of a
  // host that stopped reporting, classified only when the input ends): the job went on without
  // it then, so it labels its GPU but moves no episode back in time (a hang would end where that
  // host fell silent).
  const bool late = job_ms != INT64_MIN && now_ms < job_ms && views_[g.view].in_job &&
                    !IsActiveInJob(views_[g.view], job_ms, options_);
  if (views_[g.view].in_job && views_[g.view].cls == LocalClass::kGone && !gone_listed_[g.view]) {
    gone_listed_[g.view] = 1;
    gone_in_job_.push_back(static_cast<uint32_t>(g.view));
  }
  if (f.lost && !g.lost) {
    TriageEvent e;
    e.kind = TriageEvent::Kind::kGpuLost;
    e.start_ms = e.end_ms = now_ms;
    e.key = views_[g.view].key;
    AddEvent(e);
  }
  g.lost = f.lost;
  const bool working = f.cls == LocalClass::kBusy;
  if (g.working && *g.working != working && transitions_total_ < kMaxTransitions) {
    const GpuKey k = views_[g.view].key;
    if (transitions_.size() <= k.host) transitions_.resize(k.host + 1);
    transitions_[k.host].push_back({now_ms, k.gpu, working});
    ++transitions_total_;
  }
  g.working = working;

  if (views_[g.view].in_job && !g.ever_in_job) {
    g.ever_in_job = true;
    ++job_gpus_seen_;
  }
  const bool single = one_gpu();
  views_scanned_ += inexact_slots_ == 0 ? 0 : static_cast<int64_t>(views_.size());
  const JobMode mode =
      ClassifyJob(inexact_slots_ == 0 ? counter_.Count(now_ms, single)
                                      : CountJob(views_, now_ms, options_, single));
  if (!late && job_end_.Update(mode, now_ms)) {
    // The job is over; a relaunch starts afresh.
    trained_ = false;
    trained_s_ = 0;
    // Only the views gone while in the job change (a pass over all of them here ran for every
    // sample while no job ran).
    views_scanned_ += static_cast<int64_t>(gone_in_job_.size());
    for (uint32_t i : gone_in_job_) {
      if (views_[i].cls == LocalClass::kGone) views_[i].in_job = false;
      RenewSlot(i);
      gone_listed_[i] = 0;
    }
    gone_in_job_.clear();
  }
  if (f.cls == LocalClass::kBusy && !f.starved && f.proc != ProcState::kContext) {
    trained_ = true;
    trained_s_ += f.dt_s;
  }
  // Every rank quiet is a checkpoint only with memory seen held (verdict.h): asked of the count
  // the engine keeps, or of every view where the count is inexact.
  const bool quiet_mode = QuietMayBeCheckpoint(mode, trained_, trained_s_, single,
                                               /*live_ranks_hold_memory=*/true, options_);
  bool quiet = quiet_mode && counter_.live_ranks_hold_memory();
  if (quiet_mode && inexact_slots_ > 0) {
    views_scanned_ += static_cast<int64_t>(views_.size());
    quiet = LiveRanksHoldMemory(views_, now_ms, options_);
  }
  // (Nothing quiet and nothing pending: the common case, skipped.)
  if (!late && (quiet || quiet_.since_ms())) {
    views_scanned_ += quiet ? static_cast<int64_t>(views_.size()) : 0;
    OnQuietUpdate(quiet_.Update(mode, quiet, views_, now_ms));
  }
  HangContext ctx;
  ctx.thermal = thermal_gpus_ > 0;
  if (auto since = quiet_.since_ms()) ctx.quiet_since_ms = *since;
  ctx.one_gpu = single;
  if (single) {
    ctx.one_gpu_spinning = counter_.any_sustained_spin();
    if (inexact_slots_ > 0) {
      views_scanned_ += static_cast<int64_t>(views_.size());
      ctx.one_gpu_spinning = false;
      for (const GpuView& v : views_) {
        if (IsActiveInJob(v, now_ms, options_) && v.cls == LocalClass::kSpin && v.sustained_spin) {
          ctx.one_gpu_spinning = true;
        }
      }
    }
    if (ctx.one_gpu_spinning && options_.world_size == 0) one_gpu_spin_s_ += f.dt_s;
  }
  if (!late) {
    OnHangUpdate(hang_.Update(mode, views_, now_ms, ctx, &views_[g.view]), now_ms);
    const JobMode saving_mode = CheckpointMode(mode, hang_.active() != nullptr);
    views_scanned_ +=
        saving_mode == JobMode::kCheckpointWait ? static_cast<int64_t>(views_.size()) : 0;
    checkpoints_.Update(saving_mode, views_, now_ms);
  }

  const bool loaded = f.proc == ProcState::kLoaded || f.proc == ProcState::kUnknown;
  const GpuKey key = views_[g.view].key;
  SampleContext sc;
  sc.mode = mode;
  sc.one_gpu = single;
  sc.quiet_may_checkpoint = quiet;
  sc.proc_loaded = f.proc == ProcState::kLoaded;
  sc.compute_share = f.compute_share;
  // (A late reading from before the hang began keeps its own state.)
  sc.in_active_hang = hang_.InActiveHang(key) && now_ms >= hang_.active()->start_ms;
  GpuState local_state = DecideState(f.cls, f.starved, mode, trained_, loaded);
  // Bursts at moderate power throughout (an evaluation pass) are work, not a wait for input nor
  // time in collectives.
  if (f.bursty_work &&
      (local_state == GpuState::kDataStarved || local_state == GpuState::kCommunication)) {
    local_state = GpuState::kCompute;
  }
  const SampleState decided = FinalSampleState(local_state, sc);
  const GpuState state = decided.state;
  const double share = decided.compute_share;
  const bool quiet_held = decided.quiet_held;
  // Temperature from at most one reading a second (smoothed, and the working and quiet levels).
  if (!std::isnan(f.temperature_c) && now_ms - views_[g.view].temp_ms >= 1000) {
    NoteTemperature(g, f, state);
  }

  if (!g.has_live || g.live != state) {
    if (observer_ && g.has_live) observer_->OnStateChange(key, g.live, state, now_ms);
    g.live = state;
    g.has_live = true;
  }
  ActivityReading activity;
  auto& pending = g.pending_activity;
  while (!pending.empty() && pending.front().first < now_ms) pending.pop_front();
  if (!pending.empty() && pending.front().first == now_ms) {
    activity = pending.front().second;
    pending.pop_front();
  }
  records_.push_back(
      {now_ms, key, state, f.dt_s, share, quiet_held, activity, !std::isnan(f.power_w)});
  ++g.stats.samples;
  Emit(false);
}

void TriageEngine::OnHangUpdate(const HangUpdate& u, int64_t now_ms) {
  if (u.confirmed) {
    const HangEpisode& e = *hang_.active();
    // Relabel what was held back (the members are in key order: ChooseHangMembers).
    for (Record& r : records_) {
      if (r.t_ms >= e.start_ms && std::binary_search(e.gpus.begin(), e.gpus.end(), r.key)) {
        r.state = GpuState::kHang;
      }
    }
    for (GpuKey k : e.gpus) {
      Gpu& g = *gpus_.at(k);
      if (g.live != GpuState::kHang) {
        if (observer_) observer_->OnStateChange(k, g.live, GpuState::kHang, now_ms);
        g.live = GpuState::kHang;
      }
    }
    checkpoints_.TruncateAt(e.start_ms);
    if (observer_) observer_->OnHangConfirmed(e);
  }
  if (u.ended) {
    if (u.hang_ended && observer_) observer_->OnHangEnded(hang_.episodes().back());
    Emit(false);
  }
}

void TriageEngine::OnQuietUpdate(const QuietUpdate& u) {
  if (!u.resolved) return;
  if (u.checkpoint) {
    for (Record& r : records_) {
      if (r.quiet_held && r.state == GpuState::kIdle && r.t_ms >= u.start_ms &&
          r.t_ms <= u.end_ms) {
        r.state = GpuState::kCheckpoint;
      }
    }
    const HangEpisode* h = hang_.active();
    const bool after_hang =
        !hang_.episodes().empty() && hang_.episodes().back().end_ms > u.start_ms;
    if (!h && !after_hang) checkpoints_.AddAllRanks(u);
  }
  Emit(false);
}

int64_t TriageEngine::job_eval_steps() const {
  return counter_.steps() + hang_.views_visited() + finish_pops_ + views_scanned_;
}

bool TriageEngine::one_gpu() const {
  // world_size can only say the job is larger than the logs show, never smaller.
  return std::max(options_.world_size, job_gpus_seen_) <= 1;
}

void TriageEngine::AddEvent(const TriageEvent& e) {
  events_.push_back(e);
  if (observer_) observer_->OnEvent(e);
}

void TriageEngine::OnGap(int64_t gap_start_ms, int64_t now_ms) {
  TriageEvent e;
  e.kind = TriageEvent::Kind::kGap;
  e.start_ms = gap_start_ms;
  e.end_ms = now_ms;
  AddEvent(e);
  // Nothing is known about the gap: a hang (or a checkpoint) ends cleanly where the data stops,
  // and what follows is judged afresh; the gap's time counts towards no episode.
  OnHangUpdate(hang_.Interrupt(gap_start_ms), gap_start_ms);
  OnQuietUpdate(quiet_.End());
  checkpoints_.Finish();
}

std::vector<Straggler> TriageEngine::stragglers() const {
  if (!stragglers_unknown().empty()) return {};
  return stragglers_.Find();
}

std::string TriageEngine::stragglers_unknown() const {
  const bool has_activity = [&] {
    for (const auto& [key, g] : gpus_) {
      if (g->stats.signals.activity > 0) return true;
    }
    return false;
  }();
  if (!has_activity) {
    for (const auto& [key, g] : gpus_) {
      if (g->windows.BoardWaitsAsHighAsCollectives()) {
        return "this board waits in a collective as high as collectives moving data draw, so "
               "power cannot time the ranks (DCGM's activity counters can)";
      }
    }
  }
  return stragglers_.UnknownReason();
}

void TriageEngine::NoteTemperature(Gpu& g, const SampleFeatures& f, GpuState state) {
  SmoothTemperature(f.temperature_c, f.t_ms, &views_[g.view]);  // (sets temp_ms: the rate)
  // Working: computing at power (not bursts, not a wait); quiet: no kernels.
  bool changed = false;
  if (state == GpuState::kCompute && f.cls == LocalClass::kBusy && !f.starved && !f.bursty_work) {
    changed = g.thermal.AddWork(f.temperature_c);
  } else if (f.cls == LocalClass::kLow || f.cls == LocalClass::kGone) {
    changed = g.thermal.AddQuiet(f.temperature_c);
  } else {
    return;
  }
  if (!changed) return;  // the medians are as they were
  GpuView& v = views_[g.view];
  constexpr ThermalThresholds kThermal{};
  const auto levels = g.thermal.Informative(kThermal);
  v.temp_work_c = levels ? static_cast<float>(levels->work_c) : NAN;
  v.temp_quiet_c = levels ? static_cast<float>(levels->quiet_c) : NAN;
  if (levels.has_value() != g.thermal_counted) {
    g.thermal_counted = levels.has_value();
    thermal_gpus_ += g.thermal_counted ? 1 : -1;
  }
}

std::vector<std::string> TriageEngine::notes() const {
  std::vector<std::string> out = hang_.notes();
  out.insert(out.end(), end_notes_.begin(), end_notes_.end());
  const std::vector<std::string>& hosts = hang_.host_names();
  auto host = [&](uint16_t h) { return h < hosts.size() ? hosts[h] : fmt::format("host{}", h); };
  for (const HostSkew& k : host_skews()) {
    if (std::abs(k.offset_s) <= options_.skew_warn_s) continue;
    out.push_back(fmt::format(
        "{}'s clock reads {:.1f} s {} {}'s ({} moments all GPUs changed together agree): "
        "cross-host timing (checkpoints, who waited on whom) is off by that much; correct it with "
        "--host-offset {}={:.1f}",
        host(k.host), std::abs(k.offset_s), k.offset_s > 0 ? "ahead of" : "behind", host(0),
        k.matches, host(k.host), -k.offset_s));
  }
  return out;
}

std::vector<HostSkew> TriageEngine::host_skews() const {
  std::vector<int> gpus_per_host(transitions_.size(), 0);
  for (const auto& [key, gp] : gpus_) {
    if (key.host < gpus_per_host.size()) ++gpus_per_host[key.host];
  }
  return EstimateHostSkews(transitions_, gpus_per_host, options_);
}

std::optional<HangCandidate> TriageEngine::hang_candidate() const { return hang_.candidate(); }

void TriageEngine::ConfirmHangCandidate(int64_t now_ms, const std::vector<std::string>& reasons) {
  const std::optional<int64_t> start_ms = hang_.held_from_ms();
  if (!start_ms) return;
  const int64_t at_ms = std::max(now_ms, *start_ms);
  if (hang_.Confirm(at_ms, views_, reasons)) {
    HangUpdate u;
    u.confirmed = true;
    OnHangUpdate(u, at_ms);
  }
}

void TriageEngine::DismissHangCandidate() {
  if (hang_.Dismiss()) Emit(false);
}

void TriageEngine::Account(const Record& r) {
  GpuStats& st = FindGpu(r.key)->stats;  // r.key was sampled: it has its Gpu
  if (r.state == GpuState::kCompute || r.state == GpuState::kCommunication) {
    st.seconds[static_cast<size_t>(GpuState::kCompute)] += r.compute_share * r.dt_s;
    st.seconds[static_cast<size_t>(GpuState::kCommunication)] += (1 - r.compute_share) * r.dt_s;
    stragglers_.AddTraining(r.key, r.t_ms, r.compute_share * r.dt_s, (1 - r.compute_share) * r.dt_s,
                            r.activity, r.power_split);
  } else {
    st.seconds[static_cast<size_t>(r.state)] += r.dt_s;
  }
  if (observer_) observer_->OnLabel({r.t_ms, r.key, r.state});
}

void TriageEngine::Emit(bool all) {
  // While an unconfirmed candidate is open, samples from its start on may still become `hang`.
  // A quiet stretch may still become `checkpoint` (or `hang`, past max_checkpoint_s).
  constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
  const int64_t hold_from =
      all ? kNever
          : std::min(hang_.held_from_ms().value_or(kNever), quiet_.since_ms().value_or(kNever));
  while (!records_.empty() && records_.front().t_ms < hold_from) {
    Account(records_.front());
    records_.pop_front();
  }
}

void TriageEngine::NoteOneGpuSpin() {
  if (!one_gpu() || one_gpu_spin_s_ < options_.unresolved_quiet_note_s) return;
  end_notes_.push_back(fmt::format(
      "the GPU read >= 90 % utilization at low power for {} in all: compute for a job of one GPU "
      "(small kernels), as labelled; if it is one rank of a larger job, those were waits in "
      "collectives (a hang or a peer's checkpoint): pass --world-size N",
      FormatDuration(one_gpu_spin_s_)));
}

void TriageEngine::NoteUnresolvedQuiet() {
  const std::optional<int64_t> since = quiet_.since_ms();
  if (!since || hang_.active()) return;
  const double quiet_s = static_cast<double>(last_ms_ - *since) / 1000.0;
  if (quiet_s < options_.unresolved_quiet_note_s) return;
  // Idle by the rule (nothing shows training resumed), but an operator reading a live incident
  // needs to hear that the ranks still held their model all along.
  end_notes_.push_back(fmt::format(
      "the log ends after {} of every rank quiet holding its memory (from {}), unresolved: a "
      "save still writing, or a stall off the GPU (a data loader deadlock, a filesystem that "
      "stopped answering) not yet past --max-checkpoint-s ({:.0f} s); labelled idle: look at the "
      "processes (py-spy dump) if the job is still running",
      FormatDuration(quiet_s), FormatIsoMs(*since), options_.max_checkpoint_s));
}

void TriageEngine::Finish() {
  // Classify what is left in global time order (the earliest first, the lowest key among equal
  // times), so the job view stays consistent at the end. A heap, not a pass over every GPU per
  // sample: that made the end of a 10k-GPU log quadratic.
  using Next = std::pair<int64_t, Gpu*>;
  auto later = [](const Next& a, const Next& b) {
    return a.first != b.first ? a.first > b.first : a.second->stats.key > b.second->stats.key;
  };
  std::priority_queue<Next, std::vector<Next>, decltype(later)> pending(later);
  for (auto& [key, gp] : gpus_) {
    if (auto t_ms = gp->windows.next_unclassified_ms()) pending.emplace(*t_ms, gp.get());
  }
  while (!pending.empty()) {
    Gpu* next = pending.top().second;
    pending.pop();
    ++finish_pops_;
    Classify(*next, next->windows.ClassifyNextAtEnd());
    if (auto t_ms = next->windows.next_unclassified_ms()) pending.emplace(*t_ms, next);
  }
  OnHangUpdate(hang_.End(last_ms_, true, views_), last_ms_);
  NoteUnresolvedQuiet();
  NoteOneGpuSpin();
  OnQuietUpdate(quiet_.End());
  checkpoints_.Finish();
  Emit(true);
}

std::vector<CheckpointEpisode> TriageEngine::checkpoints() const {
  std::vector<CheckpointEpisode> out;
  for (const CheckpointEpisode& c : checkpoints_.episodes()) {
    if (static_cast<double>(c.covered_ms()) < options_.min_checkpoint_s * 1000) continue;
    out.push_back(c);
    out.back().writers = SaverRanks(c);  // not a rank quiet for a moment (its exit at job end)
    out.back().writer_readings.clear();
  }
  return out;
}

std::vector<GpuStats> TriageEngine::gpu_stats() const {
  std::vector<GpuStats> out;
  for (const auto& [key, gp] : gpus_) {
    GpuStats s = gp->stats;
    // Shares are summed unclamped; a total can only dip below zero through noise.
    auto& compute = s.seconds[static_cast<size_t>(GpuState::kCompute)];
    auto& comm = s.seconds[static_cast<size_t>(GpuState::kCommunication)];
    if (comm < 0) {
      compute += comm;
      comm = 0;
    }
    if (compute < 0) {
      comm += compute;
      compute = 0;
    }
    s.calibration = gp->windows.calibration().source();
    s.comm_share_unknown = gp->windows.comm_share_unknown_reason().value_or("");
    const PowerCalibration& cal = gp->windows.calibration();
    s.power_note = cal.implausible_limit_note().value_or(cal.power_unit_note().value_or(""));
    out.push_back(std::move(s));
  }
  return out;
}

std::optional<GpuState> TriageEngine::current_state(GpuKey key) const {
  auto it = gpus_.find(key);
  if (it == gpus_.end() || !it->second->has_live) return std::nullopt;
  return it->second->live;
}

double TriageEngine::wasted_gpu_hours() const {
  double h = 0;
  for (const HangEpisode& e : hang_.episodes()) h += e.wasted_gpu_hours();
  if (const HangEpisode* a = active_hang()) {
    HangEpisode tmp = *a;
    tmp.end_ms = last_ms_;
    h += tmp.wasted_gpu_hours();
  }
  return h;
}

}  // namespace ww::triage
