#include "triage/episodes.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/timefmt.h"
#include "triage/thermal.h"

namespace ww::triage {
namespace {

constexpr int64_t kUnset = std::numeric_limits<int64_t>::min();

int64_t ToMs(double s) { return static_cast<int64_t>(s * 1000); }

// The members of e not heard from within their stale limit at at_ms (not gone: their process
// was alive when last seen), not named yet, in key order; none when no member is heard from
// any more (the input stopped for all, which is a gap or the end, not one host falling silent).
std::vector<GpuKey> NewlySilentMembers(const HangEpisode& e, std::span<const GpuView> views,
                                       int64_t at_ms, const TriageOptions& options) {
  std::vector<GpuKey> silent;
  bool any_heard = false;
  for (const GpuView& v : views) {
    // (Members and the named ones are in key order.)
    if (!std::binary_search(e.gpus.begin(), e.gpus.end(), v.key)) continue;
    if (IsActiveInJob(v, at_ms, options)) {
      any_heard = true;
    } else if (v.classified && v.cls != LocalClass::kGone &&
               !std::binary_search(e.stopped_reporting.begin(), e.stopped_reporting.end(), v.key)) {
      silent.push_back(v.key);
    }
  }
  if (!any_heard) return {};
  std::sort(silent.begin(), silent.end());
  return silent;
}

// The latest time any of keys (in key order) was heard from.
int64_t LastHeardMs(std::span<const GpuKey> keys, std::span<const GpuView> views) {
  int64_t last = std::numeric_limits<int64_t>::min();
  for (const GpuView& v : views) {
    if (std::binary_search(keys.begin(), keys.end(), v.key)) {
      last = std::max({last, v.cur_ms, v.heard_ms});
    }
  }
  return last;
}

}  // namespace

HangTracker::HangTracker(const TriageOptions& options) : options_(options) {}

HangUpdate HangTracker::Update(JobMode mode, std::span<const GpuView> views, int64_t now_ms,
                               const HangContext& ctx, const GpuView* sampled) {
  HangUpdate out;
  last_update_ms_ = now_ms;
  bool hang_like = mode == JobMode::kHangCandidate && !ctx.one_gpu;
  bool needs_probe = false;
  int64_t from_ms = now_ms;  // where the candidate starts: a long wait is a hang from its start
  std::string why;
  HangKind kind = HangKind::kSpin;
  auto elapsed_s = [&](int64_t since) { return static_cast<double>(now_ms - since) / 1000.0; };
  // Peers spinning on quiet ranks for far longer than any checkpoint takes: a partial hang.
  if (mode == JobMode::kCheckpointWait) {
    if (checkpoint_wait_since_ms_ == kUnset) checkpoint_wait_since_ms_ = now_ms;
    if (elapsed_s(checkpoint_wait_since_ms_) >= options_.max_checkpoint_s) {
      hang_like = true;
      kind = HangKind::kPartial;
      from_ms = checkpoint_wait_since_ms_;
      size_t spinning = 0, quiet = 0;
      views_visited_ += static_cast<int64_t>(views.size());
      for (const GpuView& v : views) {
        if (!IsActiveInJob(v, now_ms, options_)) continue;
        if (v.cls == LocalClass::kSpin) ++spinning;
        if (v.cls == LocalClass::kLow) ++quiet;
      }
      why = OverlongCheckpointReason(elapsed_s(checkpoint_wait_since_ms_),
                                     options_.max_checkpoint_s, spinning, quiet);
    }
  } else {
    checkpoint_wait_since_ms_ = kUnset;
  }
  // Every rank quiet holding memory after training: past max_checkpoint_s a stall off the GPU on
  // telemetry alone; before, a candidate only process probes can confirm (a live watcher's).
  if (ctx.quiet_since_ms != kUnset) {
    if (elapsed_s(ctx.quiet_since_ms) >= options_.max_checkpoint_s) {
      hang_like = true;
      kind = HangKind::kOffGpu;
      from_ms = ctx.quiet_since_ms;
      size_t gpus = 0;
      views_visited_ += static_cast<int64_t>(views.size());
      for (const GpuView& v : views) gpus += IsActiveInJob(v, now_ms, options_) ? 1 : 0;
      why = OffGpuStallReason(elapsed_s(ctx.quiet_since_ms), options_.max_checkpoint_s, gpus);
    } else if (!options_.auto_confirm) {
      hang_like = true;
      needs_probe = true;
      from_ms = ctx.quiet_since_ms;
    }
  }
  // One GPU pegged at low power: small kernels look the same; only probes can call it.
  if (ctx.one_gpu && ctx.one_gpu_spinning && !options_.auto_confirm && !hang_like) {
    hang_like = true;
    needs_probe = true;
  }
  from_ms = std::max(from_ms, dismissed_at_ms_);

  if (hang_like) {
    // The GPUs sampled at now_ms that this evaluation looks at: only they can have joined or add
    // evidence. One call a sample: the GPU sampled (those before it at now_ms had their own
    // call, and a new candidate takes them all below); one call a tick: all of them.
    std::vector<const GpuView*>& sampled_now = sampled_now_;  // (kept: no allocation a sample)
    sampled_now.clear();
    if (sampled) {
      if (sampled->cur_ms == now_ms) sampled_now.push_back(sampled);
    } else {
      views_visited_ += static_cast<int64_t>(views.size());
      for (const GpuView& g : views) {
        if (g.cur_ms == now_ms) sampled_now.push_back(&g);
      }
    }
    bool fresh = false;
    if (!candidate_) {
      // Not emplace(): clang (clang-tidy) decides Candidate is not default-constructible, as it
      // is a nested class with member initializers used in std::optional inside HangTracker.
      candidate_ = Candidate{};
      candidate_->start_ms = from_ms;
      candidate_->kind = kind;
      HangEpisode& e = candidate_->episode;
      e.start_ms = from_ms;
      HangMembers members = ChooseHangMembers(views, mode, now_ms, options_, from_ms);
      views_visited_ += static_cast<int64_t>(views.size());
      e.gpus = std::move(members.gpus);
      e.culprits = std::move(members.culprits);
      e.stopped_reporting = std::move(members.silent);
      if (!why.empty()) e.reasons.push_back(why);
      fresh = true;
    } else if (!candidate_->confirmed && needs_probe_ && !needs_probe && !why.empty()) {
      // The probe-only candidate now stands on telemetry alone: say why.
      candidate_->episode.reasons.push_back(why);
      candidate_->kind = kind;
    }
    needs_probe_ = needs_probe;
    Candidate& c = *candidate_;
    c.broken_since_ms = kUnset;
    if (!c.confirmed && !fresh) {
      // A GPU that joins the job's view while the candidate is open (after a gap in the input,
      // every GPU's first sample comes a moment apart) belongs to it: members are chosen again.
      // (The members are in key order: ChooseHangMembers.)
      for (const GpuView* g : sampled_now) {
        if (IsActiveInJob(*g, now_ms, options_) &&
            !std::binary_search(c.episode.gpus.begin(), c.episode.gpus.end(), g->key)) {
          HangMembers members = ChooseHangMembers(views, mode, now_ms, options_, c.start_ms);
          views_visited_ += static_cast<int64_t>(views.size());
          c.episode.gpus = std::move(members.gpus);
          c.episode.culprits = std::move(members.culprits);
          c.episode.stopped_reporting = std::move(members.silent);
          break;
        }
      }
    }
    if (fresh && sampled) {
      AddEvidenceAt(views, now_ms);  // the GPUs sampled at now_ms before this one too
    } else {
      for (const GpuView* g : sampled_now) {
        if (g->cls == LocalClass::kSpin) c.evidence.Add(*g);
      }
    }
    if (ctx.thermal && !c.confirmed) CheckThermal(c, views, now_ms);
    if (!c.confirmed && options_.auto_confirm && !needs_probe && c.thermal_hold.empty() &&
        static_cast<double>(now_ms - c.start_ms) / 1000.0 >= options_.hang_confirm_s) {
      out.confirmed = Confirm(now_ms, views, {});
    }
    return out;
  }
  if (!candidate_) return out;
  if (candidate_->broken_since_ms == kUnset) candidate_->broken_since_ms = now_ms;
  // Everyone gone (the watchdog tore the job down) ends it at once; anything else after the
  // debounce.
  if (mode == JobMode::kNoJob ||
      now_ms - candidate_->broken_since_ms >= ToMs(options_.debounce_s)) {
    if (candidate_->confirmed && candidate_->kind == HangKind::kSpin && mode == JobMode::kWorking) {
      // Hindsight (offline, or a live watcher that did not kill): the collective completed.
      const double lasted_s =
          static_cast<double>(candidate_->broken_since_ms - candidate_->start_ms) / 1000.0;
      candidate_->episode.reasons.push_back(fmt::format(
          "the ranks went back to computing after {:.0f} s: the collective completed, so a rank "
          "was late rather than deadlocked (a save or a stall on a rank the logs do not show, a "
          "network stall); the GPU time was lost all the same",
          lasted_s));
    }
    return End(candidate_->broken_since_ms, false, views);
  }
  return out;
}

void HangTracker::CheckThermal(Candidate& c, std::span<const GpuView> views, int64_t now_ms) {
  if (c.thermal_checked_ms != kUnset && now_ms - c.thermal_checked_ms < 1000) return;
  c.thermal_checked_ms = now_ms;
  c.thermal_hold.clear();
  const ThermalThresholds t;
  int held = 0;
  views_visited_ += static_cast<int64_t>(views.size());
  for (const GpuView& v : views) {
    // (A member that stopped reporting says nothing of now: its last reading is not its state.)
    if (v.cls != LocalClass::kSpin || std::isnan(v.temp_work_c) ||
        !IsActiveInJob(v, now_ms, options_) ||
        !std::binary_search(c.episode.gpus.begin(), c.episode.gpus.end(), v.key)) {
      continue;
    }
    const ThermalReading r{v.temp_c, v.temp_onset_c, v.temp_work_c, v.temp_quiet_c,
                           static_cast<double>(now_ms - v.spin_since_ms) / 1000.0};
    if (auto why = ThermalHold(r, GpuName(v.key, host_names_), t)) {
      if (held++ == 0) c.thermal_hold = std::move(*why);
    }
  }
  if (held > 1) c.thermal_hold += fmt::format(" ({} more GPUs likewise)", held - 1);
}

void HangTracker::AddEvidenceAt(std::span<const GpuView> views, int64_t now_ms) {
  views_visited_ += static_cast<int64_t>(views.size());
  for (const GpuView& g : views) {
    if (g.cur_ms == now_ms && g.cls == LocalClass::kSpin) candidate_->evidence.Add(g);
  }
}

bool HangTracker::Confirm(int64_t now_ms, std::span<const GpuView> views,
                          const std::vector<std::string>& extra_reasons) {
  if (!candidate_ || candidate_->confirmed) return false;
  Candidate& c = *candidate_;
  c.confirmed = true;
  HangEpisode& e = c.episode;
  e.detected_at_ms = now_ms;
  e.end_ms = now_ms;
  // Members that fell silent since the candidate began (a node that crashed while its peers
  // spun) are named too; the hang keeps them to its end.
  for (GpuKey k : NewlySilentMembers(e, views, now_ms, options_)) {
    e.stopped_reporting.push_back(k);
  }
  std::sort(e.stopped_reporting.begin(), e.stopped_reporting.end());
  size_t gone = 0, spinning = 0;
  std::vector<GpuKey> lost;
  struct {
    int members = 0;
    double onset_c = 0, now_c = 0, quiet_c = 0;
  } cooling;  // the spinning members whose temperature follows their load (thermal.h)
  StoppedReportingNote stopped{e.stopped_reporting, 0};
  // The members' views, found in one walk over both in key order (the members are in key order:
  // ChooseHangMembers; a key has one view).
  std::vector<const GpuView*> by_key;
  by_key.reserve(views.size());
  for (const GpuView& v : views) by_key.push_back(&v);
  std::sort(by_key.begin(), by_key.end(),
            [](const GpuView* a, const GpuView* b) { return a->key < b->key; });
  views_visited_ += static_cast<int64_t>(views.size());
  auto view = by_key.begin();
  for (GpuKey k : e.gpus) {
    if (std::binary_search(e.stopped_reporting.begin(), e.stopped_reporting.end(), k)) continue;
    while (view != by_key.end() && (*view)->key < k) ++view;
    if (view == by_key.end() || (*view)->key != k) continue;
    const GpuView& v = **view;
    if (v.cls == LocalClass::kGone) ++gone;
    if (v.cls == LocalClass::kSpin) ++spinning;
    if (v.lost && std::binary_search(e.culprits.begin(), e.culprits.end(), k)) lost.push_back(k);
    if (v.cls == LocalClass::kSpin && !std::isnan(v.temp_work_c) && !std::isnan(v.temp_onset_c)) {
      ++cooling.members;
      cooling.onset_c += v.temp_onset_c;
      cooling.now_c += v.temp_c;
      cooling.quiet_c += v.temp_quiet_c;
    }
  }
  const double spin_s = static_cast<double>(e.detected_at_ms - e.start_ms) / 1000.0;
  if (!stopped.gpus.empty()) {
    stopped.before_wait_s =
        static_cast<double>(e.start_ms - LastHeardMs(stopped.gpus, views)) / 1000.0;
  }
  auto reasons = HangReasons(
      c.evidence, e.gpus.size(), gone, e.culprits, spin_s, options_.thresholds, host_names_, lost,
      c.kind, c.kind == HangKind::kSpin ? std::numeric_limits<size_t>::max() : spinning, stopped);
  if (options_.world_size > 0 && static_cast<size_t>(options_.world_size) > e.gpus.size() &&
      c.kind == HangKind::kSpin && e.culprits.empty()) {
    // One node's log of a larger job: the rank everyone waits on may be one the logs lack.
    const size_t others = static_cast<size_t>(options_.world_size) - e.gpus.size();
    for (std::string& r : reasons) {
      if (r.starts_with("all ranks entered the wait together")) {
        r = fmt::format(
            "the {} ranks in the logs entered the wait together; the job's other {} rank{} "
            "{} not in them: one still working there (rank 0 saving a checkpoint, say) reads the "
            "same until it ends (triage every node's log together to tell)",
            e.gpus.size(), others, others == 1 ? "" : "s", others == 1 ? "is" : "are");
      }
    }
  }
  e.reasons.insert(e.reasons.end(), reasons.begin(), reasons.end());
  if (cooling.members > 0) {
    const double n = cooling.members;
    if (auto why = CoolingReason(cooling.members, cooling.onset_c / n, cooling.now_c / n,
                                 cooling.quiet_c / n, ThermalThresholds{})) {
      e.reasons.push_back(std::move(*why));
    }
  }
  e.reasons.insert(e.reasons.end(), extra_reasons.begin(), extra_reasons.end());
  return true;
}

bool HangTracker::Dismiss() {
  if (!candidate_ || candidate_->confirmed) return false;
  dismissed_at_ms_ = std::max(candidate_->start_ms, last_update_ms_);
  candidate_.reset();
  return true;
}

HangUpdate HangTracker::End(int64_t end_ms, bool ongoing, std::span<const GpuView> views) {
  HangUpdate out;
  if (!candidate_) return out;
  out.ended = true;
  if (candidate_->confirmed) {
    HangEpisode e = candidate_->episode;
    // A member that fell silent after the confirmation while its peers went on waiting.
    StoppedReportingNote later{NewlySilentMembers(e, views, end_ms, options_), 0};
    if (!later.gpus.empty()) {
      later.before_wait_s =
          static_cast<double>(e.start_ms - LastHeardMs(later.gpus, views)) / 1000.0;
      e.reasons.push_back(StoppedReportingReason(later, host_names_));
      e.stopped_reporting.insert(e.stopped_reporting.end(), later.gpus.begin(), later.gpus.end());
      std::sort(e.stopped_reporting.begin(), e.stopped_reporting.end());
    }
    e.end_ms = std::max(end_ms, e.detected_at_ms);
    e.ongoing = ongoing;
    episodes_.push_back(std::move(e));
    out.hang_ended = true;
  } else if (ongoing && !candidate_->thermal_hold.empty()) {
    const double s = static_cast<double>(end_ms - candidate_->start_ms) / 1000.0;
    thermal_unknown_ = fmt::format(
        "the log ends during {:.0f} s of spin with nobody working (from {}), not confirmed: {}", s,
        FormatIsoMs(candidate_->start_ms), candidate_->thermal_hold);
  } else if (ongoing) {
    const double s = static_cast<double>(end_ms - candidate_->start_ms) / 1000.0;
    if (s >= options_.unconfirmed_spin_note_s) {
      notes_.push_back(fmt::format(
          "the log ends during {:.0f} s of spin with nobody working (from {}): too short to "
          "confirm a hang ({:.0f} s needed)",
          s, FormatIsoMs(candidate_->start_ms), options_.hang_confirm_s));
    }
  }
  candidate_.reset();
  return out;
}

HangUpdate HangTracker::Interrupt(int64_t at_ms) {
  checkpoint_wait_since_ms_ = kUnset;
  return End(at_ms, false);
}

std::optional<HangCandidate> HangTracker::candidate() const {
  if (!candidate_ || candidate_->confirmed) return std::nullopt;
  return HangCandidate{candidate_->start_ms, candidate_->episode.gpus, candidate_->episode.culprits,
                       needs_probe_, candidate_->thermal_hold};
}

const HangEpisode* HangTracker::active() const {
  return candidate_ && candidate_->confirmed ? &candidate_->episode : nullptr;
}

std::optional<int64_t> HangTracker::held_from_ms() const {
  std::optional<int64_t> from;
  if (candidate_ && !candidate_->confirmed) from = candidate_->start_ms;
  if (checkpoint_wait_since_ms_ != kUnset && (!candidate_ || !candidate_->confirmed)) {
    from = std::min(from.value_or(checkpoint_wait_since_ms_), checkpoint_wait_since_ms_);
  }
  return from;
}

bool HangTracker::InActiveHang(GpuKey key) const {
  const HangEpisode* e = active();
  return e && std::binary_search(e->gpus.begin(), e->gpus.end(), key);  // in key order
}

CheckpointTracker::CheckpointTracker(const TriageOptions& options)
    : merge_ms_(ToMs(options.checkpoint_merge_s)) {}

void CheckpointTracker::Update(JobMode mode, std::span<const GpuView> views, int64_t now_ms) {
  if (mode == JobMode::kCheckpointWait) {
    if (!open_) {
      if (!checkpoints_.empty() && now_ms - checkpoints_.back().end_ms <= merge_ms_) {
        open_ = checkpoints_.back();
        checkpoints_.pop_back();
      } else {
        open_ = CheckpointEpisode{now_ms, now_ms, false, {}, {}, 0};
      }
      writer_last_ms_.clear();
    }
    open_->end_ms = now_ms;
    if (open_->all_ranks) {
      // Quiet while every rank was quiet says nothing about who saved: the writers are the ranks
      // quiet while the others waited (the ckpt1 trace: GPU0 saved, GPU1-7 spun in a barrier).
      open_->all_ranks = false;
      open_->writers.clear();
      open_->writer_readings.clear();
      writer_last_ms_.clear();
    }
    // A quiet rank of this tick: its reading may be a few ms (up to half an interval) older
    // than the peer's whose sample is evaluated now. One count per reading: a reading is seen
    // again at each peer's sample of the tick.
    writer_last_ms_.resize(open_->writers.size(), kUnset);
    for (const GpuView& v : views) {
      if (!v.in_job) continue;
      open_->interval_ms = std::max(open_->interval_ms, ToMs(v.interval_s));
      if (v.cls != LocalClass::kLow || now_ms - v.cur_ms > ToMs(v.interval_s) / 2) continue;
      const auto it = std::find(open_->writers.begin(), open_->writers.end(), v.key);
      const auto i = static_cast<size_t>(it - open_->writers.begin());
      if (it == open_->writers.end()) {
        open_->writers.push_back(v.key);
        open_->writer_readings.push_back(1);
        writer_last_ms_.push_back(v.cur_ms);
      } else if (writer_last_ms_[i] != v.cur_ms) {
        ++open_->writer_readings[i];
        writer_last_ms_[i] = v.cur_ms;
      }
    }
  } else if (open_) {
    if (now_ms - open_->end_ms > merge_ms_) {
      checkpoints_.push_back(*open_);
      open_.reset();
    }
  }
}

std::vector<GpuKey> SaverRanks(const CheckpointEpisode& c) {
  if (c.writers.empty() || c.writer_readings.size() != c.writers.size()) return c.writers;
  const int most = *std::max_element(c.writer_readings.begin(), c.writer_readings.end());
  std::vector<GpuKey> out;
  for (size_t i = 0; i < c.writers.size(); ++i) {
    if (4 * c.writer_readings[i] >= most) out.push_back(c.writers[i]);
  }
  return out;
}

void CheckpointTracker::AddAllRanks(const QuietUpdate& q) {
  CheckpointEpisode* prev =
      open_ ? &*open_ : (checkpoints_.empty() ? nullptr : &checkpoints_.back());
  if (prev && q.start_ms - prev->end_ms <= merge_ms_) {
    // Part of the same checkpoint (a rank's copy kernels broke the quiet for a moment).
    prev->end_ms = std::max(prev->end_ms, q.end_ms);
    prev->interval_ms = std::max(prev->interval_ms, q.interval_ms);
    if (prev->all_ranks) {
      for (GpuKey k : q.writers) {
        if (std::find(prev->writers.begin(), prev->writers.end(), k) == prev->writers.end()) {
          prev->writers.push_back(k);
        }
      }
    }
    return;
  }
  if (open_) {
    checkpoints_.push_back(*open_);
    open_.reset();
  }
  checkpoints_.push_back(
      CheckpointEpisode{q.start_ms, q.end_ms, true, q.writers, {}, q.interval_ms});
}

void CheckpointTracker::TruncateAt(int64_t at_ms) {
  if (open_) {
    checkpoints_.push_back(*open_);
    open_.reset();
  }
  while (!checkpoints_.empty() && checkpoints_.back().start_ms >= at_ms) checkpoints_.pop_back();
  if (!checkpoints_.empty() && checkpoints_.back().end_ms > at_ms) {
    checkpoints_.back().end_ms = at_ms;
  }
}

QuietTracker::QuietTracker(const TriageOptions& options)
    : resume_ms_(ToMs(options.checkpoint_merge_s)), min_ms_(ToMs(options.min_checkpoint_s)) {}

QuietUpdate QuietTracker::Update(JobMode mode, bool quiet, std::span<const GpuView> views,
                                 int64_t now_ms) {
  QuietUpdate out;
  if (quiet) {
    if (!open_) {
      open_.emplace();
      open_->start_ms = now_ms;
    }
    // Work that did not last was a saver's copy kernels, or a moment of teardown: the same quiet.
    resumed_since_ms_ = kUnset;
    open_->end_ms = std::max(open_->end_ms, now_ms);
    for (const GpuView& v : views) {
      if (!v.in_job) continue;
      open_->interval_ms = std::max(open_->interval_ms, ToMs(v.interval_s));
      if (v.cls == LocalClass::kLow && v.cur_ms == now_ms &&
          std::find(open_->writers.begin(), open_->writers.end(), v.key) == open_->writers.end()) {
        open_->writers.push_back(v.key);
      }
    }
    return out;
  }
  if (!open_) return out;
  const bool training = mode == JobMode::kWorking || mode == JobMode::kStragglerWait ||
                        mode == JobMode::kCheckpointWait;
  if (training) {
    // Training resumed (or peers wait on a saver) and keeps going: the quiet was a checkpoint
    // between two stretches of training.
    if (resumed_since_ms_ == kUnset) resumed_since_ms_ = now_ms;
    if (now_ms - resumed_since_ms_ < resume_ms_) return out;
    return Resolve(/*checkpoint=*/true);
  }
  if (mode == JobMode::kHangCandidate) return out;  // spinning ranks say nothing yet
  // The processes are gone, or nothing shows memory held any more: idle.
  return Resolve(/*checkpoint=*/false);
}

QuietUpdate QuietTracker::End() {
  if (!open_) return {};
  return Resolve(/*checkpoint=*/false);
}

QuietUpdate QuietTracker::Resolve(bool checkpoint) {
  QuietUpdate out = *open_;
  out.resolved = true;
  // A quiet of a few readings between steps is a pause, not a save: it stays idle.
  out.checkpoint = checkpoint && out.end_ms - out.start_ms + out.interval_ms >= min_ms_;
  open_.reset();
  resumed_since_ms_ = kUnset;
  return out;
}

void CheckpointTracker::Finish() {
  if (open_) {
    checkpoints_.push_back(*open_);
    open_.reset();
  }
}

JobEndTracker::JobEndTracker(const TriageOptions& options) : job_end_ms_(ToMs(options.job_end_s)) {}

bool JobEndTracker::Update(JobMode mode, int64_t now_ms) {
  if (mode != JobMode::kNoJob) {
    no_job_since_ms_ = kUnset;
    return false;
  }
  if (no_job_since_ms_ == kUnset) no_job_since_ms_ = now_ms;
  return now_ms - no_job_since_ms_ > job_end_ms_;
}

}  // namespace ww::triage
