#include "triage/features.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace ww::triage {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Pending::eval_bits (IsBurstyWork's counts).
constexpr int kUnplacedBit = 1;  // power not placed in a band (PowerBand::kUnknown)
constexpr int kRestBit = 2;      // at rest, utilization below pegged
constexpr int kHighBit = 4;      // ... high while utilization read below pegged
constexpr int kHighRunBit = 8;   // ... the first of a run of those
constexpr int kDipBit = 16;      // utilization fell below pegged here

bool IsBusyLike(LocalClass c) { return c == LocalClass::kBusy || c == LocalClass::kSpin; }

}  // namespace

GpuWindows::GpuWindows(const std::string& name, const TriageOptions& options)
    : options_(options),
      smoothing_half_ms_(static_cast<int64_t>(options.util_smoothing_half_s * 1000)),
      cal_(name),
      last_in_ms_(std::numeric_limits<int64_t>::min()) {}

bool GpuWindows::Add(const GpuSample& s) {
  if (s.timestamp_ms <= last_in_ms_) return false;  // sources guarantee order; be safe anyway
  double dt_s = 0;
  if (last_in_ms_ != std::numeric_limits<int64_t>::min()) {
    const double gap = static_cast<double>(s.timestamp_ms - last_in_ms_) / 1000.0;
    // A gap is missing data when it is long for this log's own spacing: 15-30 s between two
    // dcgm-exporter scrapes is the normal rhythm, not a hole (the first gap sets the spacing).
    const double spacing_s = interval_s_ > 0 ? interval_s_ : std::min(gap, options_.max_interval_s);
    if (gap <= std::max(options_.max_gap_s, options_.stale_intervals * spacing_s)) dt_s = gap;
    const double w = options_.interval_ewma_weight;
    interval_s_ =
        interval_s_ == 0 ? gap : (1 - w) * interval_s_ + w * std::min(gap, options_.max_interval_s);
  }
  last_in_ms_ = s.timestamp_ms;

  std::optional<double> power = s.power_w ? s.power_w : s.power_instant_w;
  if (power) cal_.Add(*power, s.util_gpu_pct, s.power_limit_w, s.mem_total_mib);
  // Power that cannot be placed in the board's range is no evidence (PowerCalibration::placed):
  // the sample is classified as if power were not logged, and the evidence says why.
  power_placed_ = !power || cal_.placed();
  if (!power_placed_) power.reset();
  if (s.mem_used_mib) peak_mem_mib_ = std::max(peak_mem_mib_, *s.mem_used_mib);

  Pending p;
  p.t_ms = s.timestamp_ms;
  p.dt_s = dt_s;
  p.power_w = power ? *power : kNaN;
  p.util_pct = s.util_gpu_pct;
  p.util_mem_pct = s.util_mem_pct;
  p.proc = ClassifyProc(s.mem_used_mib, peak_mem_mib_, options_.thresholds);
  p.power_frac = power ? cal_.Normalize(*power) : kNaN;
  p.temperature_c = s.temperature_c ? static_cast<float>(*s.temperature_c) : NAN;
  // The band's edges follow the calibration, which changes every few hundred readings.
  if (cal_.version() != edges_version_) {
    edges_version_ = cal_.version();
    edges_ = BandEdges(cal_.floor_w(), cal_.observed_compute_w(), cal_.design_range_w(),
                       options_.thresholds);
  }
  const PowerBand band = PlacePowerBand(p.power_w, edges_);
  // High power counts where utilization says the kernels paused (power lags by its ~1 s average:
  // a starving GPU's gap right after a training step still reads the step's power); pegged
  // readings at high power are training. Counted once per run of such readings.
  const bool pegged = s.util_gpu_pct && *s.util_gpu_pct >= options_.thresholds.spin_util_pct;
  const bool high_paused = band == PowerBand::kHigh && s.util_gpu_pct && !pegged;
  // Rest counts where utilization is not pegged too (a starving GPU's waits; a pegged reading at
  // rest power is a spin, which IsStarved weighs). Most samples set no bit: training, a spin.
  p.eval_bits = static_cast<uint8_t>((band == PowerBand::kUnknown ? kUnplacedBit : 0) |
                                     (band == PowerBand::kRest && !pegged ? kRestBit : 0) |
                                     (high_paused ? kHighBit : 0) |
                                     (high_paused && !high_paused_last_ ? kHighRunBit : 0) |
                                     (s.util_gpu_pct && !pegged && pegged_last_ ? kDipBit : 0));
  high_paused_last_ = high_paused;
  pegged_last_ = pegged;
  LocalInput in;
  in.util_pct = s.util_gpu_pct;
  if (power) in.power_frac = p.power_frac;
  in.proc = p.proc;
  in.spin_power_frac = cal_.SpinThresholdFrac(options_.thresholds.comm_level_frac);
  if (auto board = cal_.BoardSpinThresholdFrac()) {
    in.spin_power_frac = std::max(in.spin_power_frac.value_or(0), *board);
  }
  in.spin_ceiling_frac = cal_.SpinCeilingFrac();
  std::optional<double> link_bytes_per_s;
  if (s.pcie_tx_bytes_per_s || s.pcie_rx_bytes_per_s || s.nvlink_tx_bytes_per_s ||
      s.nvlink_rx_bytes_per_s) {
    link_bytes_per_s = s.pcie_tx_bytes_per_s.value_or(0) + s.pcie_rx_bytes_per_s.value_or(0) +
                       s.nvlink_tx_bytes_per_s.value_or(0) + s.nvlink_rx_bytes_per_s.value_or(0);
  }
  p.moves_data = MovesData(s.util_mem_pct, link_bytes_per_s, options_.thresholds);
  in.sm_activity = s.sm_activity_ratio;
  in.tensor_activity = s.tensor_activity_ratio;
  in.dram_activity = s.dram_bw_util_ratio;
  p.cls = ClassifyLocal(in, options_.thresholds);
  p.lost = s.gpu_lost;
  p.blind = !power && !s.sm_activity_ratio && !s.tensor_activity_ratio && !s.dram_bw_util_ratio;
  if (p.lost) {
    // Whatever fields survived, a lost GPU runs nothing: its rank is gone for the job.
    p.cls = LocalClass::kGone;
    p.proc = ProcState::kNone;
  }
  // A burst or a gap counts once it lasts a few hundred ms: a lone 100 ms blip (a saving rank's
  // copy kernel) is not a burst.
  p.transition = false;
  // No process: the next one's first burst is its start, not a change from what the previous
  // process did (a trial that exits and a relaunch would otherwise read as bursts and gaps).
  if (p.cls == LocalClass::kGone) settled_busy_.reset();
  const bool busy = IsBusyLike(p.cls);
  if (busy || p.cls == LocalClass::kLow) {
    // 1e-3: before the second sample there is no spacing yet; any run then counts at once.
    const int min_run = std::max(
        1, static_cast<int>(std::lround(options_.min_run_s / std::max(interval_s_, 1e-3))));
    run_len_ = (run_len_ > 0 && run_busy_ == busy) ? run_len_ + 1 : 1;
    run_busy_ = busy;
    if (run_len_ == min_run) {
      p.transition = settled_busy_.has_value() && *settled_busy_ != busy;
      settled_busy_ = busy;
    }
  }
  p.spin_run_start_ms = p.t_ms;
  if (p.cls == LocalClass::kSpin && !win_.empty() && win_.back().cls == LocalClass::kSpin) {
    p.spin_run_start_ms = win_.back().spin_run_start_ms;
  }
  win_.push_back(p);
  return true;
}

int64_t GpuWindows::HalfWindowMs() const {
  const double half_s =
      std::max(options_.window_s / 2, options_.min_half_window_intervals * interval_s_);
  return static_cast<int64_t>(half_s * 1000);
}

bool GpuWindows::NextReady(SampleFeatures* out) {
  const int64_t half_ms = HalfWindowMs();
  const int64_t newest = win_.empty() ? 0 : win_.back().t_ms;
  if (cursor_ >= win_.size() || win_[cursor_].t_ms > newest - half_ms) return false;
  *out = Classify(cursor_);
  ++cursor_;
  // Drop history no later window needs.
  const int64_t keep_from = win_[cursor_ - 1].t_ms - half_ms;
  while (cursor_ > 0 && lo_ > 0 && lo_s_ > 0 && win_.front().t_ms < keep_from) {
    win_.pop_front();
    --cursor_;
    --lo_;
    --hi_;
    --lo_s_;
    --hi_s_;
  }
  return true;
}

bool GpuWindows::BoardWaitsAsHighAsCollectives() const {
  const auto wait = cal_.BoardSpinThresholdFrac();
  return wait && *wait >= options_.thresholds.comm_level_frac;
}

std::optional<std::string> GpuWindows::comm_share_unknown_reason() const {
  // A board that waits in a collective above the level collectives moving data draw (a T4 at
  // 57 % of its limit): power cannot split its busy time between compute and communication.
  if (BoardWaitsAsHighAsCollectives()) {
    const double wait = *cal_.BoardSpinThresholdFrac();
    return fmt::format(
        "this board waits in a collective at up to {:.0f} % of its power range, where "
        "collectives moving data also draw: power cannot split its busy time between compute "
        "and communication",
        100 * wait);
  }
  if (interval_s_ <= options_.comm_share_max_interval_s) return std::nullopt;
  return fmt::format(
      "power is a ~1 s average read every {:.0f} s: how steps split between compute and "
      "collectives is not sampled (log at {:.0f} s or finer to measure it)",
      interval_s_, options_.comm_share_max_interval_s);
}

std::optional<int64_t> GpuWindows::next_unclassified_ms() const {
  if (cursor_ >= win_.size()) return std::nullopt;
  return win_[cursor_].t_ms;
}

SampleFeatures GpuWindows::ClassifyNextAtEnd() { return Classify(cursor_++); }

SampleFeatures GpuWindows::Classify(size_t index) {
  const Pending& p = win_[index];
  const int64_t half_ms = HalfWindowMs();
  // Slide the centered window to [t - half, t + half].
  auto add = [&](const Pending& q, int sign) {
    w_.samples += sign;
    if (q.util_pct) {
      w_.util_sum += sign * *q.util_pct;
      w_.util_samples += sign;
      if (*q.util_pct >= options_.thresholds.low_util_pct &&
          *q.util_pct < options_.thresholds.spin_util_pct) {
        w_.midband += sign;
      }
    }
    if (IsBusyLike(q.cls)) w_.busy += sign;
    if (q.cls == LocalClass::kLow) w_.low += sign;
    if (q.cls == LocalClass::kPartial) w_.partial += sign;
    if (q.transition) w_.transitions += sign;
    if (const int b = q.eval_bits; b != 0) {  // (rarely: most samples set none)
      w_.power_unplaced += sign * (b & kUnplacedBit);
      w_.power_rest += sign * ((b & kRestBit) >> 1);
      w_.power_high += sign * ((b & kHighBit) >> 2);
      w_.power_high_runs += sign * ((b & kHighRunBit) >> 3);
      w_.dips += sign * ((b & kDipBit) >> 4);
    }
  };
  while (hi_ < win_.size() && win_[hi_].t_ms <= p.t_ms + half_ms) add(win_[hi_++], +1);
  while (lo_ < hi_ && win_[lo_].t_ms < p.t_ms - half_ms) add(win_[lo_++], -1);
  // The smoothing window, the same way.
  while (hi_s_ < win_.size() && win_[hi_s_].t_ms <= p.t_ms + smoothing_half_ms_) {
    if (win_[hi_s_].util_pct) {
      smooth_util_sum_ += *win_[hi_s_].util_pct;
      ++smooth_util_n_;
    }
    ++hi_s_;
  }
  while (lo_s_ < hi_s_ && win_[lo_s_].t_ms < p.t_ms - smoothing_half_ms_) {
    if (win_[lo_s_].util_pct) {
      smooth_util_sum_ -= *win_[lo_s_].util_pct;
      --smooth_util_n_;
    }
    ++lo_s_;
  }

  SampleFeatures f;
  f.t_ms = p.t_ms;
  f.dt_s = p.dt_s;
  f.power_w = p.power_w;
  f.power_frac = p.power_frac;
  f.util_mem_pct = p.util_mem_pct;
  f.temperature_c = p.temperature_c;
  f.moves_data = p.moves_data;
  f.proc = p.proc;
  f.lost = p.lost;
  LocalClass cls = p.cls;
  if ((cls == LocalClass::kLow || cls == LocalClass::kPartial) && smooth_util_n_ > 0) {
    cls = smooth_util_sum_ / smooth_util_n_ < options_.thresholds.low_util_pct
              ? LocalClass::kLow
              : LocalClass::kPartial;
  }
  f.cls = cls;
  f.blind = p.blind && cls == LocalClass::kBusy;
  f.starved = IsStarved(w_, cls, p.proc, options_.thresholds);
  f.bursty_work =
      cls != LocalClass::kGone && IsBurstyWork(w_, f.starved, interval_s_, options_.thresholds);
  // Is this spin part of a sustained wait? The window reaches into the future, so a wait is known
  // for what it is from its first sample, not a second later.
  if (cls == LocalClass::kSpin) {
    // Scan forward only as far as needed to know the run lasts min_spin_s (its start is known).
    const int64_t need_ms =
        static_cast<int64_t>((options_.min_spin_s - std::max(interval_s_, 0.0)) * 1000);
    const int64_t start_ms = p.spin_run_start_ms;
    size_t b = index;
    while (b + 1 < win_.size() && win_[b + 1].cls == LocalClass::kSpin &&
           win_[b].t_ms - start_ms < need_ms) {
      ++b;
    }
    f.sustained_spin = win_[b].t_ms - start_ms >= need_ms;
  }
  // Bursty work moves no gradients between its bursts: its time is compute, whatever its power.
  if (cls == LocalClass::kBusy && !std::isnan(p.power_w) && !f.bursty_work) {
    const double comm_w =
        cal_.floor_w() + options_.thresholds.comm_level_frac * cal_.design_range_w();
    f.compute_share = ComputeShare(p.power_w, comm_w, cal_.compute_level_w());
  }
  return f;
}

}  // namespace ww::triage
