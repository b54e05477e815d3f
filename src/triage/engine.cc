#include "triage/engine.h"

#include <algorithm>
#include <limits>

namespace ww::triage {

// A classified sample waiting to be emitted (held while a hang candidate may still relabel it).
struct TriageEngine::Record {
  int64_t t_ms;
  GpuKey key;
  GpuState state;
  double dt_s;
  double compute_share;  // for compute/communication samples
};

struct TriageEngine::Gpu {
  Gpu(const std::string& name, const TriageOptions& options) : windows(name, options) {}
  GpuWindows windows;
  size_t view = 0;  // index into views_
  GpuState live = GpuState::kIdle;
  bool has_live = false;
  GpuStats stats;
};

double GpuStats::total_seconds() const {
  double s = 0;
  for (double v : seconds) s += v;
  return s;
}

std::optional<double> GpuStats::comm_share() const {
  const double c = seconds[static_cast<size_t>(GpuState::kCompute)];
  const double m = seconds[static_cast<size_t>(GpuState::kCommunication)];
  if (c + m <= 0) return std::nullopt;
  return m / (c + m);
}

TriageEngine::TriageEngine(TriageOptions options, TriageObserver* observer)
    : options_(std::move(options)),
      observer_(observer),
      hang_(options_),
      checkpoints_(options_),
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

TriageEngine::Gpu& TriageEngine::GetGpu(GpuKey key) {
  auto it = gpus_.find(key);
  if (it != gpus_.end()) return *it->second;
  auto name_it = names_.find(key);
  const std::string name = name_it == names_.end() ? "" : name_it->second;
  auto g = std::make_unique<Gpu>(name, options_);
  g->stats.key = key;
  g->stats.name = name;
  g->view = views_.size();
  views_.push_back(GpuView{});
  views_.back().key = key;
  Gpu* raw = g.get();
  gpus_.emplace(key, std::move(g));
  return *raw;
}

void TriageEngine::Add(const GpuSample& s) {
  Gpu& g = GetGpu(s.key);
  if (!g.windows.Add(s)) return;
  first_ms_ = std::min(first_ms_, s.timestamp_ms);
  last_ms_ = std::max(last_ms_, s.timestamp_ms);
  // Other GPUs' staleness is judged by their spacing as of now, so it is kept current.
  views_[g.view].interval_s = g.windows.interval_s();
  SampleFeatures f;
  while (g.windows.NextReady(&f)) Classify(g, f);
}

void TriageEngine::Classify(Gpu& g, const SampleFeatures& f) {
  ApplySample(f, &views_[g.view]);

  const int64_t now_ms = f.t_ms;
  const JobMode mode = ClassifyJob(CountJob(views_, now_ms, options_));
  if (job_end_.Update(mode, now_ms)) {
    // The job is over; a relaunch starts afresh.
    trained_ = false;
    for (GpuView& v : views_) {
      if (v.cls == LocalClass::kGone) v.in_job = false;
    }
  }
  if (f.cls == LocalClass::kBusy && !f.starved && f.proc != ProcState::kContext) trained_ = true;
  OnHangUpdate(hang_.Update(mode, views_, now_ms), now_ms);
  checkpoints_.Update(mode, trained_, views_, now_ms);

  const bool loaded = f.proc == ProcState::kLoaded || f.proc == ProcState::kUnknown;
  GpuState state = DecideState(f.cls, f.starved, mode, trained_, loaded);
  double share = 0;
  if (state == GpuState::kCompute) {
    share = f.compute_share;
    // A sample is labelled by what took most of its period; its seconds are split by the share.
    state = share >= 0.5 ? GpuState::kCompute : GpuState::kCommunication;
  }
  const GpuKey key = views_[g.view].key;
  if (hang_.InActiveHang(key)) state = GpuState::kHang;

  if (!g.has_live || g.live != state) {
    if (observer_ && g.has_live) observer_->OnStateChange(key, g.live, state, now_ms);
    g.live = state;
    g.has_live = true;
  }
  records_.push_back({now_ms, key, state, f.dt_s, share});
  ++g.stats.samples;
  Emit(false);
}

void TriageEngine::OnHangUpdate(const HangUpdate& u, int64_t now_ms) {
  if (u.confirmed) {
    const HangEpisode& e = *hang_.active();
    // Relabel what was held back.
    for (Record& r : records_) {
      if (r.t_ms >= e.start_ms && std::find(e.gpus.begin(), e.gpus.end(), r.key) != e.gpus.end()) {
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
    if (observer_) observer_->OnHangConfirmed(e);
  }
  if (u.ended) {
    if (u.hang_ended && observer_) observer_->OnHangEnded(hang_.episodes().back());
    Emit(false);
  }
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
  GpuStats& st = gpus_.at(r.key)->stats;
  if (r.state == GpuState::kCompute || r.state == GpuState::kCommunication) {
    st.seconds[static_cast<size_t>(GpuState::kCompute)] += r.compute_share * r.dt_s;
    st.seconds[static_cast<size_t>(GpuState::kCommunication)] += (1 - r.compute_share) * r.dt_s;
  } else {
    st.seconds[static_cast<size_t>(r.state)] += r.dt_s;
  }
  if (observer_) observer_->OnLabel({r.t_ms, r.key, r.state});
}

void TriageEngine::Emit(bool all) {
  // While an unconfirmed candidate is open, samples from its start on may still become `hang`.
  const int64_t hold_from =
      all ? std::numeric_limits<int64_t>::max()
          : hang_.held_from_ms().value_or(std::numeric_limits<int64_t>::max());
  while (!records_.empty() && records_.front().t_ms < hold_from) {
    Account(records_.front());
    records_.pop_front();
  }
}

void TriageEngine::Finish() {
  // Classify what is left in global time order, so the job view stays consistent at the end.
  for (;;) {
    Gpu* next = nullptr;
    int64_t next_ms = 0;
    for (auto& [key, gp] : gpus_) {
      const std::optional<int64_t> t_ms = gp->windows.next_unclassified_ms();
      if (t_ms && (!next || *t_ms < next_ms)) {
        next = gp.get();
        next_ms = *t_ms;
      }
    }
    if (!next) break;
    Classify(*next, next->windows.ClassifyNextAtEnd());
  }
  OnHangUpdate(hang_.End(last_ms_, true), last_ms_);
  checkpoints_.Finish();
  Emit(true);
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
