#include "triage/calibration.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "telemetry/gpu_models.h"

namespace ww::triage {
namespace {

constexpr double kBinW = 2.0;
constexpr size_t kBins = 2600;  // 0 .. 5200 W
// With no limit and no table entry: an idle floor is typically 8-14 % of the board's limit
// (H100 70/700 W, A100 55/400 W, L40S 35/350 W), so the limit is at least ~7x the floor.
constexpr double kFloorToTopPrior = 7.0;
// Collectives that move data draw ~1/3 of the design range (Thresholds::comm_level_frac); a spin
// cluster must sit at least kSpinBelowCommFrac of the range below that, and hold at least
// kSpinMinReadings readings (and kSpinMinShare of the pegged ones).
constexpr double kCommLevelFrac = 0.33;
constexpr double kSpinBelowCommFrac = 0.05;
constexpr uint64_t kSpinMinReadings = 8;
// Readings before the observed range counts (the lowest of them is the floor), and how many of
// the first readings each recompute the calibration.
constexpr uint64_t kMinObserved = 4;
constexpr uint64_t kEveryReading = 64;
// Without a limit or a model: readings all taken at >= kPeggedUtilPct utilization whose top is
// less than kPlacedSpread times their floor leave the floor unseen (see placed()). Spin sits at
// 20-35 % of a board's limit and compute at 70-90 %, so a log holding both spreads 2-4x.
constexpr double kPeggedUtilPct = 50;
constexpr double kPlacedSpread = 2.0;
constexpr double kSpinMinShare = 0.02;
// Without a limit or a model, the floor is placed by an idle reading: no kernels (utilization
// below kQuietUtilPct, or not logged) at no more than kIdleAnchorShare of the highest readings.
// An H100 idles at 70-125 W against 150 W spinning and 550 W computing; a reading between two
// phases of work (0 % at 293 W beside 420 W) is no floor.
constexpr double kQuietUtilPct = 20;
constexpr double kIdleAnchorShare = 0.6;
// No board draws under kMinWorkingPowerW with kernels running (a GB10 idles at ~5 W, a T4 at
// ~10 W) nor has a limit under kMinBoardLimitW (the smallest data-center cards: 40-70 W): such
// readings are kilowatts under a [W] header, or a share of the limit, not watts. Judged after
// kMinUnitReadings readings.
constexpr double kMinWorkingPowerW = 2.0;
constexpr double kMinBoardLimitW = 10.0;
constexpr uint64_t kMinUnitReadings = 10;

size_t Bin(double w) {
  if (w <= 0) return 0;
  return std::min(kBins - 1, static_cast<size_t>(w / kBinW));
}

}  // namespace

PowerCalibration::PowerCalibration(const std::string& name)
    : logged_name_(name), all_hist_(kBins), busy_hist_(kBins) {
  if (auto m = LookupGpuModel(name)) SeedFromTable(*m);
  Recompute();
}

void PowerCalibration::SeedFromTable(const GpuModel& m) {
  table_tdp_w_ = m.tdp_w;
  const PowerLimitRange limits = PlausiblePowerLimits(m);
  table_min_limit_w_ = limits.min_w;
  table_max_limit_w_ = limits.max_w;
  table_idle_w_ = m.idle_w;
  table_spin_hi_w_ = m.spin_hi_w;
  table_name_ = std::string(m.name);
}

void PowerCalibration::Add(double power_w, std::optional<double> util_pct,
                           std::optional<double> limit_w, std::optional<double> memory_total_mib) {
  if (!table_tdp_w_ && !board_tried_ && limit_w && memory_total_mib) {
    // No board by its name: its limit and memory total may still say which it is (a home-made
    // log without the name, a board the table names otherwise), as for a snapshot.
    board_tried_ = true;
    if (auto m = MatchBoard(logged_name_, limit_w, memory_total_mib)) {
      SeedFromTable(*m->model);
      table_match_ = m->how;
      since_recompute_ = 1 << 30;
    }
  }
  max_power_w_ = std::max(max_power_w_, power_w);
  if (util_pct && *util_pct >= kPeggedUtilPct) working_seen_ = true;
  if (limit_w && *limit_w > 0 && *limit_w < kMinBoardLimitW) {
    // Not a board's limit in watts: kept out of the range, said by power_unit_note().
    if (!tiny_limit_w_) {
      tiny_limit_w_ = *limit_w;
      since_recompute_ = 1 << 30;
    }
  } else if (limit_w && *limit_w > 0 && table_max_limit_w_ &&
             (*limit_w < *table_min_limit_w_ || *limit_w > *table_max_limit_w_)) {
    // A limit the board cannot have must not scale every reading: the table's TDP stays the top.
    if (!implausible_limit_w_) implausible_limit_w_ = *limit_w;
  } else if (limit_w && *limit_w > 0) {
    if (!limit_w_ || std::abs(*limit_w_ - *limit_w) > 0.5) {
      limit_w_ = *limit_w;
      since_recompute_ = 1 << 30;  // force a recompute
    }
  }
  ++all_hist_[Bin(power_w)];
  ++all_count_;
  if (!util_pct || *util_pct < kPeggedUtilPct) ++unpegged_count_;
  if (util_pct) ++util_count_;
  if ((!util_pct || *util_pct < kQuietUtilPct) && power_w < quiet_min_w_) {
    quiet_min_w_ = power_w;
    if (!placed_) since_recompute_ = 1 << 30;  // an idle reading may place the range now
  }
  if (util_pct && *util_pct >= 90) {
    ++busy_hist_[Bin(power_w)];
    ++busy_count_;
    if (power_w > max_busy_w_) {
      max_busy_w_ = power_w;
      if (!compute_learned_) ++version_;  // observed_compute_w() moved
    }
    // Pegged readings below the communication level may be a spin: learn its level at once
    // rather than at the next scheduled recompute (which is thousands of readings apart).
    if (!spin_w_ && power_w < floor_w_ + kCommLevelFrac * design_range_w() &&
        ++low_busy_since_recompute_ >= std::max<uint64_t>(kSpinMinReadings, busy_count_ / 200)) {
      since_recompute_ = 1 << 30;
    }
  }
  // Cheap enough to redo every few hundred readings; early on, often, so priors give way fast.
  // The first kEveryReading readings each recompute: at 15-30 s sampling they are the first
  // minutes of the log, and a hang there must be seen against the board's range, not the prior.
  const uint64_t every =
      all_count_ < kEveryReading ? 1 : (all_count_ < 256 ? 32 : (all_count_ < 4096 ? 256 : 4096));
  if (++since_recompute_ >= every) Recompute();
}

double PowerCalibration::Percentile(const std::vector<uint32_t>& hist, uint64_t total, double q) {
  if (total == 0) return 0;
  const double target = q * static_cast<double>(total);
  double acc = 0;
  for (size_t i = 0; i < hist.size(); ++i) {
    acc += hist[i];
    if (acc >= target && hist[i] > 0) return (static_cast<double>(i) + 0.5) * kBinW;
  }
  return (static_cast<double>(hist.size()) - 0.5) * kBinW;
}

void PowerCalibration::Recompute() {
  ++version_;
  since_recompute_ = 0;
  const bool have_obs = all_count_ >= kMinObserved;
  const double obs_floor = have_obs ? Percentile(all_hist_, all_count_, 0.01) : 0;
  const double obs_top = have_obs ? Percentile(all_hist_, all_count_, 0.995) : 0;

  // Top of the range: the logged limit, else the table's TDP, else what was observed (but never
  // a range so narrow that every reading looks like full power).
  top_from_observation_ = false;
  if (limit_w_) {
    top_w_ = *limit_w_;
  } else if (table_tdp_w_) {
    top_w_ = *table_tdp_w_;
  } else if (have_obs) {
    top_w_ = std::max(obs_top, obs_floor * kFloorToTopPrior);
    top_from_observation_ = true;
  } else {
    top_w_ = 0;
  }

  // Floor: the lowest readings, but not above what an idle board of this size draws (a trace
  // that starts mid-training never shows idle).
  double prior_floor =
      table_idle_w_ ? *table_idle_w_
                    : (top_w_ > 0 && !top_from_observation_ ? top_w_ / kFloorToTopPrior : 1e9);
  if (have_obs) {
    floor_w_ = std::min(obs_floor, prior_floor);
    if (top_from_observation_) {
      // No limit, no table: what we saw, but at least the range an idle floor implies (a log
      // with no compute in it must not make a spinning board look like full power).
      top_w_ = std::max(obs_top, floor_w_ * kFloorToTopPrior);
    }
  } else {
    floor_w_ = prior_floor < 1e8 ? prior_floor : 0;
  }
  if (top_w_ <= floor_w_ + 1) top_w_ = floor_w_ + std::max(1.0, floor_w_ * kFloorToTopPrior);
  // Placed by a limit or a model; else by an idle reading well below the highest ones (the top
  // of the observed readings, which a log holding only a spin or only compute keeps close to
  // its floor). The old rule (a spread of 2x with an unpegged reading) is implied: an unpegged
  // reading that low is an idle reading.
  // Utilization logged and never pegged: nothing can read as a spin, and utilization says the
  // board idles; power places idle against work as before. Power alone (no utilization) needs
  // the idle reading too: 300 W flat is work on any board, but against a floor of its own
  // lowest reading it read as 98 % idle (a W&B power frame).
  const bool any_pegged = unpegged_count_ < all_count_;
  placed_ = !top_from_observation_ || (util_count_ > 0 && !any_pegged) ||
            (have_obs && quiet_min_w_ <= kIdleAnchorShare * obs_top &&
             !(unpegged_count_ == 0 && obs_top < kPlacedSpread * obs_floor));
  unit_suspect_ = tiny_limit_w_.has_value() || (working_seen_ && all_count_ >= kMinUnitReadings &&
                                                max_power_w_ < kMinWorkingPowerW);
  if (unit_suspect_) placed_ = false;

  // Compute level: the top of the readings taken at >= 90 % utilization (spinning collectives
  // read 100 % too, at low power, so only a high percentile is compute).
  const double range = top_w_ - floor_w_;
  // Until enough busy readings arrive: dense math draws ~80 % of the board's design range, or
  // sits at the limit when the limit is a cap below that.
  const double prior_top = table_tdp_w_ ? *table_tdp_w_ : top_w_;
  compute_w_ = std::min(top_w_, floor_w_ + 0.8 * (prior_top - floor_w_));
  compute_learned_ = busy_count_ >= 20;
  if (compute_learned_) {
    // The top cluster of the busy readings: pure-compute readings cluster at the compute level,
    // readings that blend compute and collectives (power is a ~1 s average) spread below it and
    // can even outnumber it, and sensor noise spreads around it; so take the highest cluster
    // holding a fair share of the readings, at its peak.
    const size_t lo = static_cast<size_t>((floor_w_ + 0.45 * range) / kBinW);
    constexpr size_t kHalf = 4;  // clusters are judged over +-8 W
    std::vector<double> smooth(busy_hist_.size(), 0);
    double above = 0;
    for (size_t i = lo; i < busy_hist_.size(); ++i) above += busy_hist_[i];
    {
      double w = 0;  // running sum over [c - kHalf, c + kHalf]
      const size_t first = std::max<size_t>(lo, kHalf);
      for (size_t k = first - kHalf; k < first + kHalf && k < busy_hist_.size(); ++k)
        w += busy_hist_[k];
      for (size_t c = first; c + kHalf < busy_hist_.size(); ++c) {
        w += busy_hist_[c + kHalf];
        smooth[c] = w;
        w -= busy_hist_[c - kHalf];
      }
    }
    const double need = std::max(6.0, 0.08 * above);
    for (size_t c = smooth.size(); c-- > lo;) {
      if (smooth[c] < need) continue;
      size_t peak = c;
      for (size_t k = c; k >= lo && k + 2 * kHalf >= c; --k) {
        if (smooth[k] > smooth[peak]) peak = k;
        if (k == 0) break;
      }
      compute_w_ = (static_cast<double>(peak) + 0.5) * kBinW;
      break;
    }
  }
  // The board's design range: the table's TDP; else the limit, unless compute runs into it (a
  // cap), in which case compute at ~80 % of the design range is the better guess.
  const double implied_top = floor_w_ + (compute_w_ - floor_w_) / 0.8;
  design_top_w_ = table_tdp_w_ ? *table_tdp_w_ : std::max(limit_w_.value_or(0), implied_top);
  if (design_top_w_ < floor_w_ + 1) design_top_w_ = top_w_;
  LearnSpinLevel();
}

void PowerCalibration::LearnSpinLevel() {
  low_busy_since_recompute_ = 0;
  spin_w_.reset();
  const double range = design_range_w();
  if (busy_count_ < kSpinMinReadings || range <= 1) return;
  // The densest +-8 W cluster of pegged readings between the floor and the communication
  // level's lower edge: ranks polling in a collective (or at the lowest, an idle board reading
  // 100 % under a tight polling loop, which is the same thing for the job).
  const size_t lo = Bin(floor_w_);
  const size_t hi = Bin(floor_w_ + (kCommLevelFrac - kSpinBelowCommFrac) * range);
  constexpr size_t kHalf = 4;
  double best = 0;
  size_t best_bin = 0;
  for (size_t c = lo; c <= hi && c < busy_hist_.size(); ++c) {
    double w = 0;
    for (size_t k = c >= kHalf ? c - kHalf : 0; k <= c + kHalf && k < busy_hist_.size(); ++k) {
      w += busy_hist_[k];
    }
    if (w > best) {
      best = w;
      best_bin = c;
    }
  }
  const double need = std::max(static_cast<double>(kSpinMinReadings),
                               kSpinMinShare * static_cast<double>(busy_count_));
  if (best < need) return;
  // The cluster's mean: the densest window's first bin may sit at the cluster's lower edge.
  double sum = 0;
  for (size_t k = best_bin >= kHalf ? best_bin - kHalf : 0;
       k <= best_bin + kHalf && k < busy_hist_.size(); ++k) {
    sum += busy_hist_[k] * (static_cast<double>(k) + 0.5) * kBinW;
  }
  spin_w_ = sum / best;
}

std::optional<double> PowerCalibration::SpinThresholdFrac(double comm_level_frac) const {
  if (!spin_w_) return std::nullopt;
  const double comm_w = floor_w_ + comm_level_frac * design_range_w();
  return Normalize(*spin_w_ + 0.5 * (comm_w - *spin_w_));
}

std::optional<double> PowerCalibration::BoardSpinThresholdFrac() const {
  if (!table_spin_hi_w_) return std::nullopt;
  return Normalize(*table_spin_hi_w_);
}

std::optional<double> PowerCalibration::SpinCeilingFrac() const {
  if (table_tdp_w_) return std::nullopt;
  return Normalize(UnknownBoardSpinCeilingW());
}

std::optional<std::string> PowerCalibration::implausible_limit_note() const {
  if (!implausible_limit_w_) return std::nullopt;
  return fmt::format(
      "logged power.limit {:.0f} W is outside what a {} can be set to ({:.0f}-{:.0f} W): "
      "ignored, the model's TDP {:.0f} W used instead",
      *implausible_limit_w_, table_name_, *table_min_limit_w_, *table_max_limit_w_, *table_tdp_w_);
}

std::optional<std::string> PowerCalibration::power_unit_note() const {
  if (!unit_suspect_) return std::nullopt;
  const std::string what =
      tiny_limit_w_
          ? fmt::format("power.limit reads {:.2f}", *tiny_limit_w_)
          : fmt::format("power.draw stays under {:.0f} while kernels run", kMinWorkingPowerW);
  return fmt::format(
      "{} where watts are expected: no GPU board draws that little at work or has such a limit "
      "(kilowatts under a [W] header, or a share of the limit?); power is not used, fix the "
      "column's unit",
      what);
}

std::string PowerCalibration::source() const {
  if (limit_w_ && !table_match_.empty()) {
    return fmt::format("power.limit {:.0f} W, floor {:.0f} W; board {} (by its {})", *limit_w_,
                       floor_w_, table_name_, table_match_);
  }
  if (limit_w_) return fmt::format("power.limit {:.0f} W, floor {:.0f} W", *limit_w_, floor_w_);
  if (table_tdp_w_) {
    return fmt::format("table: {} (TDP {:.0f} W), floor {:.0f} W", table_name_, *table_tdp_w_,
                       floor_w_);
  }
  return fmt::format("observed range {:.0f}-{:.0f} W", floor_w_, top_w_);
}

}  // namespace ww::triage
