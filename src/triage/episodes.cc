#include "triage/episodes.h"

#include <fmt/format.h>

#include <algorithm>

namespace ww::triage {
namespace {

constexpr int64_t kUnset = std::numeric_limits<int64_t>::min();

int64_t ToMs(double s) { return static_cast<int64_t>(s * 1000); }

}  // namespace

HangTracker::HangTracker(const TriageOptions& options) : options_(options) {}

HangUpdate HangTracker::Update(JobMode mode, std::span<const GpuView> views, int64_t now_ms) {
  HangUpdate out;
  bool hang_like = mode == JobMode::kHangCandidate;
  // Peers spinning on a quiet rank for far longer than any checkpoint takes.
  if (mode == JobMode::kCheckpointWait) {
    if (checkpoint_wait_since_ms_ == kUnset) checkpoint_wait_since_ms_ = now_ms;
    if (static_cast<double>(now_ms - checkpoint_wait_since_ms_) / 1000.0 >=
        options_.max_checkpoint_s) {
      hang_like = true;
    }
  } else {
    checkpoint_wait_since_ms_ = kUnset;
  }

  if (hang_like) {
    if (!candidate_) {
      candidate_.emplace();
      candidate_->start_ms = now_ms;
      HangEpisode& e = candidate_->episode;
      e.start_ms = now_ms;
      HangMembers members = ChooseHangMembers(views, mode, now_ms, options_);
      e.gpus = std::move(members.gpus);
      e.culprits = std::move(members.culprits);
      if (mode == JobMode::kCheckpointWait) {
        e.reasons.push_back(OverlongCheckpointReason(
            static_cast<double>(now_ms - checkpoint_wait_since_ms_) / 1000.0));
      }
    }
    Candidate& c = *candidate_;
    c.broken_since_ms = kUnset;
    if (!c.confirmed) {
      // A GPU that joins the job's view while the candidate is open (after a gap in the input,
      // every GPU's first sample comes a moment apart) belongs to it: members are chosen again.
      for (const GpuView& g : views) {
        if (g.cur_ms == now_ms && IsActiveInJob(g, now_ms, options_) &&
            std::find(c.episode.gpus.begin(), c.episode.gpus.end(), g.key) ==
                c.episode.gpus.end()) {
          HangMembers members = ChooseHangMembers(views, mode, now_ms, options_);
          c.episode.gpus = std::move(members.gpus);
          c.episode.culprits = std::move(members.culprits);
          break;
        }
      }
    }
    for (const GpuView& g : views) {
      if (g.cur_ms == now_ms && g.cls == LocalClass::kSpin) c.evidence.Add(g);
    }
    if (!c.confirmed && options_.auto_confirm &&
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
    return End(candidate_->broken_since_ms, false);
  }
  return out;
}

bool HangTracker::Confirm(int64_t now_ms, std::span<const GpuView> views,
                          const std::vector<std::string>& extra_reasons) {
  if (!candidate_ || candidate_->confirmed) return false;
  Candidate& c = *candidate_;
  c.confirmed = true;
  HangEpisode& e = c.episode;
  e.detected_at_ms = now_ms;
  e.end_ms = now_ms;
  size_t gone = 0;
  std::vector<GpuKey> lost;
  for (GpuKey k : e.gpus) {
    for (const GpuView& v : views) {
      if (v.key == k) {
        if (v.cls == LocalClass::kGone) ++gone;
        if (v.lost && std::find(e.culprits.begin(), e.culprits.end(), k) != e.culprits.end()) {
          lost.push_back(k);
        }
        break;
      }
    }
  }
  const double spin_s = static_cast<double>(e.detected_at_ms - e.start_ms) / 1000.0;
  auto reasons = HangReasons(c.evidence, e.gpus.size(), gone, e.culprits, spin_s,
                             options_.thresholds, host_names_, lost);
  e.reasons.insert(e.reasons.end(), reasons.begin(), reasons.end());
  e.reasons.insert(e.reasons.end(), extra_reasons.begin(), extra_reasons.end());
  return true;
}

bool HangTracker::Dismiss() {
  if (!candidate_ || candidate_->confirmed) return false;
  candidate_.reset();
  return true;
}

HangUpdate HangTracker::End(int64_t end_ms, bool ongoing) {
  HangUpdate out;
  if (!candidate_) return out;
  out.ended = true;
  if (candidate_->confirmed) {
    HangEpisode e = candidate_->episode;
    e.end_ms = std::max(end_ms, e.detected_at_ms);
    e.ongoing = ongoing;
    episodes_.push_back(std::move(e));
    out.hang_ended = true;
  } else if (ongoing) {
    const double s = static_cast<double>(end_ms - candidate_->start_ms) / 1000.0;
    if (s >= options_.unconfirmed_spin_note_s) {
      notes_.push_back(fmt::format(
          "the log ends during {:.0f} s of spin with nobody working (from {}): too short to "
          "confirm a hang ({:.0f} s needed)",
          s, candidate_->start_ms, options_.hang_confirm_s));
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
  return HangCandidate{candidate_->start_ms, candidate_->episode.gpus,
                       candidate_->episode.culprits};
}

const HangEpisode* HangTracker::active() const {
  return candidate_ && candidate_->confirmed ? &candidate_->episode : nullptr;
}

std::optional<int64_t> HangTracker::held_from_ms() const {
  if (!candidate_ || candidate_->confirmed) return std::nullopt;
  return candidate_->start_ms;
}

bool HangTracker::InActiveHang(GpuKey key) const {
  const HangEpisode* e = active();
  return e && std::find(e->gpus.begin(), e->gpus.end(), key) != e->gpus.end();
}

CheckpointTracker::CheckpointTracker(const TriageOptions& options)
    : merge_ms_(ToMs(options.checkpoint_merge_s)) {}

void CheckpointTracker::Update(JobMode mode, bool trained, std::span<const GpuView> views,
                               int64_t now_ms) {
  const bool in_ckpt = mode == JobMode::kCheckpointWait || (mode == JobMode::kAllQuiet && trained);
  if (in_ckpt) {
    if (!open_) {
      if (!checkpoints_.empty() && now_ms - checkpoints_.back().end_ms <= merge_ms_) {
        open_ = checkpoints_.back();
        checkpoints_.pop_back();
      } else {
        open_ = CheckpointEpisode{now_ms, now_ms, mode == JobMode::kAllQuiet, {}};
      }
    }
    open_->end_ms = now_ms;
    if (mode == JobMode::kCheckpointWait && open_->all_ranks) {
      // Quiet while every rank was quiet says nothing about who saved: the writers are the ranks
      // quiet while the others waited (the ckpt1 trace: GPU0 saved, GPU1-7 spun in a barrier).
      open_->all_ranks = false;
      open_->writers.clear();
    }
    if (mode == JobMode::kAllQuiet && !open_->all_ranks) return;
    for (const GpuView& v : views) {
      if (v.in_job && v.cls == LocalClass::kLow && v.cur_ms == now_ms &&
          std::find(open_->writers.begin(), open_->writers.end(), v.key) == open_->writers.end()) {
        open_->writers.push_back(v.key);
      }
    }
  } else if (open_) {
    if (now_ms - open_->end_ms > merge_ms_) {
      checkpoints_.push_back(*open_);
      open_.reset();
    }
  }
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
