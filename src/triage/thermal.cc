#include "triage/thermal.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace ww::triage {
namespace {

// Medians are recomputed at each of the first kEvery readings, then every kEvery: O(1) per reading
// on average (the engine takes at most one reading a second).
constexpr uint32_t kEvery = 64;

bool RecomputeAt(uint32_t n) { return n <= kEvery || n % kEvery == 0; }

double Median(const std::array<uint32_t, 128>& hist, uint32_t n) {
  const uint32_t half = (n + 1) / 2;
  uint32_t seen = 0;
  for (size_t i = 0; i < hist.size(); ++i) {
    seen += hist[i];
    if (seen >= half) return static_cast<double>(i);
  }
  return static_cast<double>(hist.size() - 1);
}

}  // namespace

bool ThermalLevels::Add(double temp_c, std::array<uint32_t, kBins>* hist, uint32_t* n,
                        double* median) {
  if (!std::isfinite(temp_c) || temp_c < 0 || temp_c >= kBins) return false;  // no board's
  ++(*hist)[static_cast<size_t>(std::min(temp_c + 0.5, kBins - 1.0))];        // rounded to 1 °C
  ++*n;
  if (!RecomputeAt(*n)) return false;
  *median = Median(*hist, *n);
  return true;
}

bool ThermalLevels::AddWork(double temp_c) {
  return Add(temp_c, &work_, &work_n_, &work_median_c_);
}
bool ThermalLevels::AddQuiet(double temp_c) {
  return Add(temp_c, &quiet_, &quiet_n_, &quiet_median_c_);
}

std::optional<ThermalLevels::Levels> ThermalLevels::Informative(const ThermalThresholds& t) const {
  if (work_n_ < static_cast<uint32_t>(t.min_work_readings) ||
      quiet_n_ < static_cast<uint32_t>(t.min_quiet_readings)) {
    return std::nullopt;
  }
  // The medians as of the last recompute (at most kEvery readings old).
  if (work_median_c_ - quiet_median_c_ < t.min_spread_c) return std::nullopt;
  return Levels{work_median_c_, quiet_median_c_};
}

std::optional<std::string> ThermalHold(const ThermalReading& r, const std::string& who,
                                       const ThermalThresholds& t) {
  if (!std::isfinite(r.now_c) || !std::isfinite(r.onset_c) || !std::isfinite(r.work_c)) {
    return std::nullopt;
  }
  // A wait that began cool (after a save, at start-up) has nothing to cool from.
  if (r.onset_c < r.work_c - t.onset_margin_c) return std::nullopt;
  if (r.now_c <= r.onset_c - t.cooled_c) return std::nullopt;  // cooling: it stopped working
  return fmt::format(
      "{} reads {:.0f} °C {:.0f} s into its wait, as hot as when it computed ({:.0f} °C; "
      "{:.0f} °C without kernels) and no cooler than when the wait began ({:.0f} °C): a rank "
      "waiting in a collective draws a fraction of its compute power and cools, so this board is "
      "still working whatever its power reading says; not confirmed while it stays this hot",
      who, r.now_c, r.waited_s, r.work_c, r.quiet_c, r.onset_c);
}

std::optional<std::string> CoolingReason(int members, double mean_onset_c, double mean_now_c,
                                         double mean_quiet_c, const ThermalThresholds& t) {
  if (members <= 0 || !(mean_onset_c - mean_now_c >= t.cooled_c)) return std::nullopt;
  return fmt::format(
      "the waiting GPUs cooled from {:.0f} °C to {:.0f} °C on average since the wait began "
      "({} GPUs whose temperature follows their load; {:.0f} °C without kernels): they stopped "
      "computing",
      mean_onset_c, mean_now_c, members, mean_quiet_c);
}

double ThermalSmoothingWeight(double dt_s, const ThermalThresholds& t) {
  if (!(dt_s > 0)) return 1;
  return std::min(1.0, dt_s / t.smoothing_s);
}

}  // namespace ww::triage
