#include "triage/engine.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace ww::triage {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

bool IsBusyLike(LocalClass c) { return c == LocalClass::kBusy || c == LocalClass::kSpin; }

}  // namespace

std::string TriageEngine::KeyName(GpuKey k) const {
  if (k.host < host_names_.size()) return fmt::format("{}/GPU{}", host_names_[k.host], k.gpu);
  return fmt::format("host{}/GPU{}", k.host, k.gpu);
}

void TriageEngine::SetHostNames(std::vector<std::string> hosts) { host_names_ = std::move(hosts); }

// A sample waiting for its centered window, then kept as history for later samples' windows.
struct TriageEngine::Pending {
  int64_t t_ms;
  double dt_s;
  double power_w;  // NaN when not logged
  std::optional<double> util_pct;
  std::optional<double> util_mem_pct;
  LocalClass cls;
  ProcState proc;
  double power_frac;
  bool transition;            // a debounced busy<->low change completes at this sample
  int64_t spin_run_start_ms;  // for a spin sample: when its run of spin samples began
};

// A classified sample waiting to be emitted (held while a hang candidate may still relabel it).
struct TriageEngine::Record {
  int64_t t_ms;
  GpuKey key;
  GpuState state;
  double dt_s;
  double compute_share;  // for compute/communication samples
};

struct TriageEngine::Gpu {
  GpuKey key;
  PowerCalibration cal;
  double peak_mem_mib = 0;
  std::deque<Pending> win;
  size_t cursor = 0;  // win[cursor..] not classified yet
  // Sliding windows over win, maintained incrementally (indices shift when win pops its front):
  // [lo, hi) is the centered burst/gap window, [lo_s, hi_s) the +-0.5 s smoothing window.
  size_t lo = 0, hi = 0, lo_s = 0, hi_s = 0;
  WindowStats w;
  double smooth_util_sum = 0;
  int smooth_util_n = 0;
  // Debounce state for transitions, at Add time.
  bool run_busy = false;
  int run_len = 0;
  std::optional<bool> settled_busy;
  int64_t last_in_ms = std::numeric_limits<int64_t>::min();
  double interval_s = 0;  // EWMA of sample spacing
  // Job view, as of the last classified sample.
  bool classified = false;
  int64_t cur_ms = 0;
  LocalClass cls = LocalClass::kGone;
  ProcState proc = ProcState::kUnknown;
  bool starved = false;
  bool sustained_spin = false;
  bool in_job = false;
  int64_t spin_since_ms = 0;
  int64_t gone_since_ms = 0;
  double last_power_w = kNaN;
  double last_power_frac = kNaN;
  std::optional<double> last_util_mem;
  GpuState live = GpuState::kIdle;
  bool has_live = false;
  GpuStats stats;
  explicit Gpu(const std::string& name) : cal(name) {}
};

struct TriageEngine::Candidate {
  int64_t start_ms;
  int64_t broken_since_ms = std::numeric_limits<int64_t>::min();
  bool confirmed = false;
  HangEpisode episode;
  // Evidence gathered while the candidate lasts, for the reasons.
  double spin_power_min = 1e18, spin_power_max = -1e18, spin_frac_sum = 0;
  double util_min = 1e18, util_mem_max = -1;
  int64_t spin_samples = 0;
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
    : options_(std::move(options)), observer_(observer) {}

TriageEngine::~TriageEngine() = default;

void TriageEngine::SetGpuInfo(const std::vector<GpuInfo>& gpus) {
  for (const GpuInfo& info : gpus) {
    if (!info.name.empty()) names_[info.key] = info.name;
  }
}

TriageEngine::Gpu& TriageEngine::GetGpu(GpuKey key) {
  auto it = gpus_.find(key);
  if (it != gpus_.end()) return *it->second;
  auto name_it = names_.find(key);
  const std::string name = name_it == names_.end() ? "" : name_it->second;
  auto g = std::make_unique<Gpu>(name);
  g->key = key;
  g->stats.key = key;
  g->stats.name = name;
  Gpu* raw = g.get();
  gpus_.emplace(key, std::move(g));
  gpu_list_.push_back(raw);
  return *raw;
}

void TriageEngine::Add(const GpuSample& s) {
  Gpu& g = GetGpu(s.key);
  if (s.timestamp_ms <= g.last_in_ms) return;  // sources guarantee order; be safe anyway
  first_ms_ = std::min(first_ms_, s.timestamp_ms);
  last_ms_ = std::max(last_ms_, s.timestamp_ms);
  double dt_s = 0;
  if (g.last_in_ms != std::numeric_limits<int64_t>::min()) {
    const double gap = static_cast<double>(s.timestamp_ms - g.last_in_ms) / 1000.0;
    if (gap <= options_.max_gap_s) dt_s = gap;
    g.interval_s = g.interval_s == 0 ? gap : 0.95 * g.interval_s + 0.05 * std::min(gap, 60.0);
  }
  g.last_in_ms = s.timestamp_ms;

  const std::optional<double> power = s.power_w ? s.power_w : s.power_instant_w;
  if (power) g.cal.Add(*power, s.util_gpu_pct, s.power_limit_w);
  if (s.mem_used_mib) g.peak_mem_mib = std::max(g.peak_mem_mib, *s.mem_used_mib);

  Pending p;
  p.t_ms = s.timestamp_ms;
  p.dt_s = dt_s;
  p.power_w = power ? *power : kNaN;
  p.util_pct = s.util_gpu_pct;
  p.util_mem_pct = s.util_mem_pct;
  p.proc = ClassifyProc(s.mem_used_mib, g.peak_mem_mib, options_.thresholds);
  p.power_frac = power ? g.cal.Normalize(*power) : kNaN;
  LocalInput in;
  in.util_pct = s.util_gpu_pct;
  if (power) in.power_frac = p.power_frac;
  in.proc = p.proc;
  p.cls = ClassifyLocal(in, options_.thresholds);
  // A burst or a gap counts once it lasts a few hundred ms: a lone 100 ms blip (a saving rank's
  // copy kernel) is not a burst.
  p.transition = false;
  const bool busy = IsBusyLike(p.cls);
  if (busy || p.cls == LocalClass::kLow) {
    const int min_run = std::max(
        1, static_cast<int>(std::lround(options_.min_run_s / std::max(g.interval_s, 1e-3))));
    g.run_len = (g.run_len > 0 && g.run_busy == busy) ? g.run_len + 1 : 1;
    g.run_busy = busy;
    if (g.run_len == min_run) {
      p.transition = g.settled_busy.has_value() && *g.settled_busy != busy;
      g.settled_busy = busy;
    }
  }
  p.spin_run_start_ms = p.t_ms;
  if (p.cls == LocalClass::kSpin && !g.win.empty() && g.win.back().cls == LocalClass::kSpin) {
    p.spin_run_start_ms = g.win.back().spin_run_start_ms;
  }
  g.win.push_back(p);
  ClassifyReady(g);
}

void TriageEngine::ClassifyReady(Gpu& g) {
  const double half_s = std::max(options_.window_s / 2, 2.5 * g.interval_s);
  const int64_t half_ms = static_cast<int64_t>(half_s * 1000);
  const int64_t newest = g.win.empty() ? 0 : g.win.back().t_ms;
  while (g.cursor < g.win.size() && g.win[g.cursor].t_ms <= newest - half_ms) {
    Classify(g, g.cursor);
    ++g.cursor;
    // Drop history no later window needs.
    const int64_t keep_from = g.win[g.cursor - 1].t_ms - half_ms;
    while (g.cursor > 0 && g.lo > 0 && g.lo_s > 0 && g.win.front().t_ms < keep_from) {
      g.win.pop_front();
      --g.cursor;
      --g.lo;
      --g.hi;
      --g.lo_s;
      --g.hi_s;
    }
  }
}

void TriageEngine::Classify(Gpu& g, size_t index) {
  const Pending& p = g.win[index];
  const double half_s = std::max(options_.window_s / 2, 2.5 * g.interval_s);
  const int64_t half_ms = static_cast<int64_t>(half_s * 1000);
  // Slide the centered window to [t - half, t + half].
  auto add = [&](const Pending& q, int sign) {
    WindowStats& w = g.w;
    w.samples += sign;
    if (q.util_pct) {
      w.util_sum += sign * *q.util_pct;
      w.util_samples += sign;
    }
    if (IsBusyLike(q.cls)) w.busy += sign;
    if (q.cls == LocalClass::kLow) w.low += sign;
    if (q.cls == LocalClass::kPartial) w.partial += sign;
    if (q.transition) w.transitions += sign;
  };
  while (g.hi < g.win.size() && g.win[g.hi].t_ms <= p.t_ms + half_ms) add(g.win[g.hi++], +1);
  while (g.lo < g.hi && g.win[g.lo].t_ms < p.t_ms - half_ms) add(g.win[g.lo++], -1);
  const WindowStats& w = g.w;
  // Utilization smoothed over +-0.5 s decides "no kernels" vs "some": a saving rank's copy
  // kernels make single 100 ms readings of 10-30 %.
  while (g.hi_s < g.win.size() && g.win[g.hi_s].t_ms <= p.t_ms + 500) {
    if (g.win[g.hi_s].util_pct) {
      g.smooth_util_sum += *g.win[g.hi_s].util_pct;
      ++g.smooth_util_n;
    }
    ++g.hi_s;
  }
  while (g.lo_s < g.hi_s && g.win[g.lo_s].t_ms < p.t_ms - 500) {
    if (g.win[g.lo_s].util_pct) {
      g.smooth_util_sum -= *g.win[g.lo_s].util_pct;
      --g.smooth_util_n;
    }
    ++g.lo_s;
  }
  LocalClass cls = p.cls;
  if ((cls == LocalClass::kLow || cls == LocalClass::kPartial) && g.smooth_util_n > 0) {
    cls = g.smooth_util_sum / g.smooth_util_n < options_.thresholds.low_util_pct
              ? LocalClass::kLow
              : LocalClass::kPartial;
  }
  const bool starved = IsStarved(w, cls, p.proc, options_.thresholds);
  // Is this spin part of a sustained wait? The window reaches into the future, so a wait is known
  // for what it is from its first sample, not a second later.
  bool sustained_spin = false;
  if (cls == LocalClass::kSpin) {
    // Scan both ways only as far as needed to know the run lasts min_spin_s.
    const int64_t need_ms =
        static_cast<int64_t>((options_.min_spin_s - std::max(g.interval_s, 0.0)) * 1000);
    const int64_t start_ms = p.spin_run_start_ms;
    size_t b = index;
    while (b + 1 < g.win.size() && g.win[b + 1].cls == LocalClass::kSpin &&
           g.win[b].t_ms - start_ms < need_ms) {
      ++b;
    }
    sustained_spin = g.win[b].t_ms - start_ms >= need_ms;
  }

  // Update this GPU's view for the job.
  if (cls == LocalClass::kSpin && (!g.classified || g.cls != LocalClass::kSpin)) {
    g.spin_since_ms = p.t_ms;
  }
  if (cls == LocalClass::kGone && (!g.classified || g.cls != LocalClass::kGone)) {
    g.gone_since_ms = p.t_ms;
  }
  g.classified = true;
  g.cur_ms = p.t_ms;
  g.cls = cls;
  g.proc = p.proc;
  g.starved = starved;
  g.sustained_spin = sustained_spin;
  g.last_power_w = p.power_w;
  g.last_power_frac = p.power_frac;
  g.last_util_mem = p.util_mem_pct;
  if (p.proc == ProcState::kLoaded ||
      (p.proc == ProcState::kUnknown && cls != LocalClass::kGone && cls != LocalClass::kLow)) {
    g.in_job = true;
  }

  JobCounts counts;
  const JobMode mode = EvaluateJob(p.t_ms, &counts);
  if (cls == LocalClass::kBusy && !starved && p.proc != ProcState::kContext) trained_ = true;
  UpdateHang(mode, counts, p.t_ms);
  UpdateCheckpoint(mode, p.t_ms);

  const bool loaded = p.proc == ProcState::kLoaded || p.proc == ProcState::kUnknown;
  GpuState state = DecideState(cls, starved, mode, trained_, loaded);
  double share = 0;
  if (state == GpuState::kCompute) {
    if (cls == LocalClass::kBusy && !std::isnan(p.power_w)) {
      const double floor = g.cal.floor_w();
      const double comm_w = floor + options_.thresholds.comm_level_frac * g.cal.design_range_w();
      share = ComputeShare(p.power_w, comm_w, g.cal.compute_level_w());
    } else {
      share = 1;
    }
    state = share >= 0.5 ? GpuState::kCompute : GpuState::kCommunication;
  }
  const bool in_episode =
      candidate_ && candidate_->confirmed &&
      std::find(candidate_->episode.gpus.begin(), candidate_->episode.gpus.end(), g.key) !=
          candidate_->episode.gpus.end();
  if (in_episode) state = GpuState::kHang;

  if (!g.has_live || g.live != state) {
    if (observer_ && g.has_live) observer_->OnStateChange(g.key, g.live, state, p.t_ms);
    g.live = state;
    g.has_live = true;
  }
  records_.push_back({p.t_ms, g.key, state, p.dt_s, share});
  ++g.stats.samples;
  Emit(false);
}

JobMode TriageEngine::EvaluateJob(int64_t now_ms, JobCounts* c) {
  for (Gpu* gp : gpu_list_) {
    Gpu& g = *gp;
    if (!g.classified || !g.in_job) continue;
    const double stale_s = std::max(options_.stale_s, 3 * g.interval_s);
    if (static_cast<double>(now_ms - g.cur_ms) / 1000.0 > stale_s) continue;
    ++c->active;
    if (g.cls == LocalClass::kGone) {
      ++c->gone;
    } else if (g.cls == LocalClass::kSpin) {
      // A wait shorter than this is an ordinary collective, not ranks stuck waiting.
      if (!g.sustained_spin) {
        ++c->busy;
      } else {
        ++c->spin;
      }
    } else if (g.starved) {
      ++c->starved;
    } else if (g.cls == LocalClass::kBusy) {
      ++c->busy;
    } else if (g.cls == LocalClass::kPartial) {
      ++c->partial;
    } else {
      ++c->low;
    }
  }
  JobMode mode = ClassifyJob(*c);
  if (mode == JobMode::kNoJob) {
    if (no_job_since_ == std::numeric_limits<int64_t>::min()) no_job_since_ = now_ms;
    // Every process gone for a while: the job is over; a relaunch starts afresh.
    if (now_ms - no_job_since_ > 5000) {
      trained_ = false;
      for (auto& [key, gp] : gpus_) {
        if (gp->cls == LocalClass::kGone) gp->in_job = false;
      }
    }
  } else {
    no_job_since_ = std::numeric_limits<int64_t>::min();
  }
  return mode;
}

void TriageEngine::UpdateHang(JobMode mode, const JobCounts& counts, int64_t now_ms) {
  const int64_t debounce_ms = static_cast<int64_t>(options_.debounce_s * 1000);
  bool hang_like = mode == JobMode::kHangCandidate;
  // Peers spinning on a quiet rank for far longer than any checkpoint takes.
  if (mode == JobMode::kCheckpointWait) {
    if (checkpoint_wait_since_ == std::numeric_limits<int64_t>::min()) {
      checkpoint_wait_since_ = now_ms;
    }
    if (static_cast<double>(now_ms - checkpoint_wait_since_) / 1000.0 >=
        options_.max_checkpoint_s) {
      hang_like = true;
    }
  } else {
    checkpoint_wait_since_ = std::numeric_limits<int64_t>::min();
  }

  if (hang_like) {
    if (!candidate_) {
      candidate_ = std::make_unique<Candidate>();
      candidate_->start_ms = now_ms;
      HangEpisode& e = candidate_->episode;
      e.start_ms = now_ms;
      // Culprits: ranks whose process is gone; else the ranks that stopped working last (the
      // others were already waiting on them); else, for an over-long checkpoint, the quiet ranks.
      int64_t first_spin = std::numeric_limits<int64_t>::max();
      int64_t last_spin = std::numeric_limits<int64_t>::min();
      for (auto& [key, gp] : gpus_) {
        const Gpu& g = *gp;
        if (!g.classified || !g.in_job) continue;
        const double stale_s = std::max(options_.stale_s, 3 * g.interval_s);
        if (static_cast<double>(now_ms - g.cur_ms) / 1000.0 > stale_s) continue;
        e.gpus.push_back(key);
        if (g.cls == LocalClass::kGone) e.culprits.push_back(key);
        if (g.cls == LocalClass::kSpin) {
          first_spin = std::min(first_spin, g.spin_since_ms);
          last_spin = std::max(last_spin, g.spin_since_ms);
        }
      }
      if (e.culprits.empty() && mode == JobMode::kHangCandidate) {
        const int64_t margin_ms = static_cast<int64_t>(options_.culprit_margin_s * 1000);
        if (last_spin - first_spin > margin_ms) {
          for (auto& [key, gp] : gpus_) {
            const Gpu& g = *gp;
            if (g.in_job && g.cls == LocalClass::kSpin &&
                g.spin_since_ms >= last_spin - margin_ms) {
              e.culprits.push_back(key);
            }
          }
        }
      }
      if (e.culprits.empty() && mode == JobMode::kCheckpointWait) {
        for (auto& [key, gp] : gpus_) {
          if (gp->in_job && gp->cls == LocalClass::kLow) e.culprits.push_back(key);
        }
      }
      if (mode == JobMode::kCheckpointWait) {
        candidate_->episode.reasons.push_back(fmt::format(
            "peers spun for {:.0f} s on ranks that hold memory without kernels; no checkpoint "
            "takes that long (--max-checkpoint-s)",
            static_cast<double>(now_ms - checkpoint_wait_since_) / 1000.0));
      }
    }
    Candidate& c = *candidate_;
    c.broken_since_ms = std::numeric_limits<int64_t>::min();
    // Evidence for the reasons.
    for (const Gpu* gp : gpu_list_) {
      const Gpu& g = *gp;
      if (g.cur_ms != now_ms || g.cls != LocalClass::kSpin) continue;
      if (!std::isnan(g.last_power_w)) {
        c.spin_power_min = std::min(c.spin_power_min, g.last_power_w);
        c.spin_power_max = std::max(c.spin_power_max, g.last_power_w);
        c.spin_frac_sum += g.last_power_frac;
        ++c.spin_samples;
      }
      if (g.last_util_mem) c.util_mem_max = std::max(c.util_mem_max, *g.last_util_mem);
    }
    if (!c.confirmed && options_.auto_confirm &&
        static_cast<double>(now_ms - c.start_ms) / 1000.0 >= options_.hang_confirm_s) {
      ConfirmHang(now_ms, {});
    }
    return;
  }
  if (!candidate_) return;
  if (candidate_->broken_since_ms == std::numeric_limits<int64_t>::min()) {
    candidate_->broken_since_ms = now_ms;
  }
  // Everyone gone (the watchdog tore the job down) ends it at once; anything else after the
  // debounce.
  if (mode == JobMode::kNoJob || now_ms - candidate_->broken_since_ms >= debounce_ms) {
    EndHang(candidate_->broken_since_ms, false);
  }
}

void TriageEngine::ConfirmHang(int64_t now_ms, const std::vector<std::string>& extra_reasons) {
  Candidate& c = *candidate_;
  c.confirmed = true;
  HangEpisode& e = c.episode;
  e.detected_at_ms = now_ms;
  e.end_ms = now_ms;
  auto reasons = HangReasons(e);
  e.reasons.insert(e.reasons.end(), reasons.begin(), reasons.end());
  e.reasons.insert(e.reasons.end(), extra_reasons.begin(), extra_reasons.end());
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

std::optional<HangCandidate> TriageEngine::hang_candidate() const {
  if (!candidate_ || candidate_->confirmed) return std::nullopt;
  return HangCandidate{candidate_->start_ms, candidate_->episode.gpus,
                       candidate_->episode.culprits};
}

void TriageEngine::ConfirmHangCandidate(int64_t now_ms, const std::vector<std::string>& reasons) {
  if (!candidate_ || candidate_->confirmed) return;
  ConfirmHang(std::max(now_ms, candidate_->start_ms), reasons);
}

void TriageEngine::DismissHangCandidate() {
  if (!candidate_ || candidate_->confirmed) return;
  candidate_.reset();
  Emit(false);
}

std::vector<std::string> TriageEngine::HangReasons(const HangEpisode& e) const {
  const Candidate& c = *candidate_;
  std::vector<std::string> out;
  const double dur_s = static_cast<double>(e.detected_at_ms - e.start_ms) / 1000.0;
  size_t gone = 0;
  for (GpuKey k : e.gpus) {
    if (gpus_.at(k)->cls == LocalClass::kGone) ++gone;
  }
  if (c.spin_samples > 0) {
    out.push_back(
        fmt::format("{} of {} GPUs at >= {:.0f} % utilization but {:.2f} of their power range "
                    "({:.0f}-{:.0f} W), flat for {:.0f} s: spinning in a collective, not computing",
                    e.gpus.size() - gone, e.gpus.size(), options_.thresholds.spin_util_pct,
                    c.spin_frac_sum / static_cast<double>(c.spin_samples), c.spin_power_min,
                    c.spin_power_max, dur_s));
  }
  if (c.util_mem_max >= 0) {
    out.push_back(fmt::format("memory-controller utilization at most {:.0f} %: no data moving",
                              c.util_mem_max));
  }
  if (gone > 0) {
    std::string names;
    for (GpuKey k : e.culprits) names += (names.empty() ? "" : ", ") + KeyName(k);
    out.push_back(
        fmt::format("process gone on {} (memory released) while its peers wait for it", names));
  } else if (!e.culprits.empty()) {
    std::string names;
    for (GpuKey k : e.culprits) names += (names.empty() ? "" : ", ") + KeyName(k);
    out.push_back(fmt::format(
        "{} kept computing after the others were already waiting, then entered a collective "
        "nobody else joined: the ranks disagree on the step count",
        names));
  } else {
    out.push_back("all ranks entered the wait together; telemetry names no single culprit");
  }
  out.push_back(
      fmt::format("no rank computing or saving for {:.0f} s (confirmation window)", dur_s));
  return out;
}

void TriageEngine::EndHang(int64_t end_ms, bool ongoing) {
  if (!candidate_) return;
  if (candidate_->confirmed) {
    HangEpisode e = candidate_->episode;
    e.end_ms = std::max(end_ms, e.detected_at_ms);
    e.ongoing = ongoing;
    episodes_.push_back(e);
    if (observer_) observer_->OnHangEnded(e);
  } else if (ongoing) {
    const double s = static_cast<double>(end_ms - candidate_->start_ms) / 1000.0;
    if (s >= 5) {
      notes_.push_back(fmt::format(
          "the log ends during {:.0f} s of spin with nobody working (from {}): too short to "
          "confirm a hang ({:.0f} s needed)",
          s, candidate_->start_ms, options_.hang_confirm_s));
    }
  }
  candidate_.reset();
  Emit(false);
}

void TriageEngine::UpdateCheckpoint(JobMode mode, int64_t now_ms) {
  const bool in_ckpt = mode == JobMode::kCheckpointWait || (mode == JobMode::kAllQuiet && trained_);
  if (in_ckpt) {
    if (!open_checkpoint_) {
      // A checkpoint that resumes within 3 s of the last one is the same checkpoint.
      if (!checkpoints_.empty() && now_ms - checkpoints_.back().end_ms <= 3000) {
        open_checkpoint_ = checkpoints_.back();
        checkpoints_.pop_back();
      } else {
        open_checkpoint_ = CheckpointEpisode{now_ms, now_ms, mode == JobMode::kAllQuiet, {}};
      }
    }
    open_checkpoint_->end_ms = now_ms;
    if (mode == JobMode::kCheckpointWait) open_checkpoint_->all_ranks = false;
    for (const Gpu* gp : gpu_list_) {
      const GpuKey key = gp->key;
      if (gp->in_job && gp->cls == LocalClass::kLow && gp->cur_ms == now_ms &&
          std::find(open_checkpoint_->writers.begin(), open_checkpoint_->writers.end(), key) ==
              open_checkpoint_->writers.end()) {
        open_checkpoint_->writers.push_back(key);
      }
    }
  } else if (open_checkpoint_) {
    if (now_ms - open_checkpoint_->end_ms > 3000) {
      checkpoints_.push_back(*open_checkpoint_);
      open_checkpoint_.reset();
    }
  }
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
  const int64_t hold_from = (!all && candidate_ && !candidate_->confirmed)
                                ? candidate_->start_ms
                                : std::numeric_limits<int64_t>::max();
  while (!records_.empty() && records_.front().t_ms < hold_from) {
    Account(records_.front());
    records_.pop_front();
  }
}

void TriageEngine::Finish() {
  // Classify what is left in global time order, so the job view stays consistent at the end.
  for (;;) {
    Gpu* next = nullptr;
    for (auto& [key, gp] : gpus_) {
      if (gp->cursor < gp->win.size() &&
          (!next || gp->win[gp->cursor].t_ms < next->win[next->cursor].t_ms)) {
        next = gp.get();
      }
    }
    if (!next) break;
    Classify(*next, next->cursor);
    ++next->cursor;
  }
  if (candidate_) EndHang(last_ms_, true);
  if (open_checkpoint_) {
    checkpoints_.push_back(*open_checkpoint_);
    open_checkpoint_.reset();
  }
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
    s.calibration = gp->cal.source();
    out.push_back(std::move(s));
  }
  return out;
}

std::optional<GpuState> TriageEngine::current_state(GpuKey key) const {
  auto it = gpus_.find(key);
  if (it == gpus_.end() || !it->second->has_live) return std::nullopt;
  return it->second->live;
}

const HangEpisode* TriageEngine::active_hang() const {
  return candidate_ && candidate_->confirmed ? &candidate_->episode : nullptr;
}

double TriageEngine::wasted_gpu_hours() const {
  double h = 0;
  for (const HangEpisode& e : episodes_) h += e.wasted_gpu_hours();
  if (const HangEpisode* a = active_hang()) {
    HangEpisode tmp = *a;
    tmp.end_ms = last_ms_;
    h += tmp.wasted_gpu_hours();
  }
  return h;
}

}  // namespace ww::triage
