// Temperature as evidence about a wait. A board's temperature follows the power it dissipates,
// seconds to a minute behind: a rank that stops computing to wait in a collective draws a fraction
// of its compute power and cools toward its quiet level; a board that stays as hot as it ran while
// computing still draws that power, whatever its power reading was placed at (a range learned
// from the log, a board that is not the one its name says). Used where the log carries a
// temperature that moves with the load, and never to find a hang: it holds a hang's confirmation
// while a spinning member is still as hot as it works (ThermalHold), and says how far the
// members cooled when one is confirmed (CoolingReason).
//
// The SM clock is not used this way: a rank polling in NCCL keeps its clocks up (512 GB200s wedged
// in NCCL at an unchanged 1950 MHz, marin-community/marin#7344), so the clock separates a resident
// kernel from an idle board, which utilization already does, and not a wait from work.
//
// Pure functions and a per-GPU accumulator; no I/O. Thread-safety: one ThermalLevels per GPU, one
// thread.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>

namespace ww::triage {

struct ThermalThresholds {
  int min_work_readings = 10;  // readings while computing before their median means anything
  int min_quiet_readings = 3;  // readings with no kernels (idle, a context, a save)
  // The log's temperature moves with the load: its working median at least this far above its
  // quiet median. A constant column, or one that does not follow the work, says nothing.
  double min_spread_c = 5;
  // A spinning member holds the confirmation when its wait began within this of its working
  // temperature (it had been computing) and it has not cooled by cooled_c since.
  double onset_margin_c = 1;
  double cooled_c = 1.5;
  // Readings are smoothed over about this long (an EWMA), so a sensor's ±1 °C steps neither
  // release a hold nor make one.
  double smoothing_s = 10;
};

// One GPU's typical temperature while computing and while quiet, from its own log: the medians of
// 1 °C bins over 0-127 °C. Adding is O(1); the medians are recomputed every few readings.
class ThermalLevels {
 public:
  // True when the medians were recomputed (Informative may answer otherwise than before).
  bool AddWork(double temp_c);
  bool AddQuiet(double temp_c);
  // The working and quiet medians, once both have enough readings and the working one stands at
  // least min_spread_c above the quiet one; nullopt otherwise (the column is no evidence here).
  struct Levels {
    double work_c;
    double quiet_c;
  };
  std::optional<Levels> Informative(const ThermalThresholds& t) const;

 private:
  static constexpr int kBins = 128;
  static bool Add(double temp_c, std::array<uint32_t, kBins>* hist, uint32_t* n, double* median);
  std::array<uint32_t, kBins> work_{};
  std::array<uint32_t, kBins> quiet_{};
  uint32_t work_n_ = 0;
  uint32_t quiet_n_ = 0;
  double work_median_c_ = 0;
  double quiet_median_c_ = 0;
};

// One spinning member of a hang candidate, as temperature sees it (GpuView's thermal fields).
struct ThermalReading {
  double now_c;    // smoothed temperature now
  double onset_c;  // smoothed temperature when its current spin began
  double work_c;   // ThermalLevels::Levels
  double quiet_c;
  double waited_s;  // how long it has spun
};

// Why this member is still working by its temperature (it began its wait as hot as it computes
// and has not cooled since), or nullopt. who: "node1/GPU3".
std::optional<std::string> ThermalHold(const ThermalReading& r, const std::string& who,
                                       const ThermalThresholds& t);

// For a confirmed hang: how far its spinning members (count of them with a usable temperature)
// cooled on average since their waits began, when by cooled_c or more; nullopt otherwise.
std::optional<std::string> CoolingReason(int members, double mean_onset_c, double mean_now_c,
                                         double mean_quiet_c, const ThermalThresholds& t);

// The smoothing weight of a reading dt_s after the previous one.
double ThermalSmoothingWeight(double dt_s, const ThermalThresholds& t);

}  // namespace ww::triage
