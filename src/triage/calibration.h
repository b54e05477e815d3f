// Per-GPU power calibration: where "idle" and "full compute" sit for this board, so that power can
// be compared across GPU models and power caps. Seeded from the logged power limit or the table
// of known models, refined from the readings themselves (a model the code has never heard of
// works from the observed range alone).
// Thread-safety: one instance per GPU, used by one thread.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ww {
struct GpuModel;
}

namespace ww::triage {

class PowerCalibration {
 public:
  // name: the GPU model as logged ("" when unknown).
  explicit PowerCalibration(const std::string& name = "");

  // Records one reading. util_pct may be absent.
  // memory_total_mib: the board's memory total when logged; with the limit it recognizes a
  // board whose name is not logged or not in the table (MatchBoard), once, at the first reading
  // that has both.
  void Add(double power_w, std::optional<double> util_pct, std::optional<double> limit_w,
           std::optional<double> memory_total_mib = std::nullopt);

  // Idle floor (no kernels, clocks down), in W.
  double floor_w() const { return floor_w_; }
  // Reference top of the range (the power limit, the model's TDP, or the observed peak), in W.
  double top_w() const { return top_w_; }
  // Reference range for levels that do not scale with a power cap (communication draws a share
  // of the board's design range, whatever the cap).
  double design_range_w() const { return design_top_w_ - floor_w_; }
  // Typical power while computing (util >= 90 %), from the readings; prior until seen.
  double compute_level_w() const { return compute_w_; }
  // The compute level from readings only: compute_level_w() once it is learned from them (20
  // pegged readings), the highest pegged reading before that (a 15 s log reaches 20 in 5
  // minutes; the prior can sit far from any reading), 0 before any.
  double observed_compute_w() const { return compute_learned_ ? compute_w_ : max_busy_w_; }
  // Changes whenever floor, top, design range or compute level may have (each recompute), and
  // when observed_compute_w() rises before the compute level is learned: what was worked out from
  // them still holds while it stays the same.
  uint64_t version() const { return version_; }

  // Power of a rank spinning in a collective, learned from the trace: the lowest cluster of
  // readings at >= 90 % utilization, well below where collectives that move data sit
  // (comm_level_frac of the design range). nullopt until such a cluster is seen. Spin power
  // differs by generation (an A100 at ~35 % of its limit, an H100 at ~20 %), so a fixed share
  // of the range would miss some boards' spins.
  std::optional<double> spin_level_w() const { return spin_w_; }
  // The power fraction below which a pegged reading is a spin: halfway from the learned spin
  // level to the communication level; nullopt while no spin level is learned.
  std::optional<double> SpinThresholdFrac(double comm_level_frac) const;

  // False when power cannot be placed in the board's range: no power.limit, no known model, and
  // no idle reading (utilization below 20 % or not logged, at most kIdleAnchorShare of the
  // highest readings). A range the log defines by itself is no range: a log that starts
  // mid-training and a log that holds only a hang look alike (flat power at full utilization: an
  // H100 computing at 550 W, or a larger board spinning there), and training at 300 W beside an
  // FP32 filler GEMM at 400 W reads as a spin below compute. Power tells nothing about a wait
  // until an idle reading shows where the floor is.
  bool placed() const { return placed_; }

  // The board's own spin threshold from the table (gpu_models.h): the upper edge of the band its
  // ranks draw waiting in a collective, as a fraction of [floor, top]; nullopt for an unknown
  // board. A T4 waits at 57 % of its limit, where the default threshold would read work.
  std::optional<double> BoardSpinThresholdFrac() const;
  // For an unknown board: no board spins above MaxSpinPowerAnyBoardW() plus a margin, so a pegged
  // reading above this fraction of [floor, top] is work whatever the board; nullopt for a known
  // board (its own band decides).
  std::optional<double> SpinCeilingFrac() const;

  // Power as a fraction of [floor, top].
  double Normalize(double power_w) const {
    const double range = top_w_ - floor_w_;
    return range > 1e-9 ? (power_w - floor_w_) / range : 0.0;
  }

  // "power.limit 700 W", "table: NVIDIA H100 (TDP 700 W)", "observed range 58-455 W".
  std::string source() const;
  // When a logged limit lay outside what the model can be set to (gpu_models.h): a note saying
  // so and that the model's TDP was used instead.
  std::optional<std::string> implausible_limit_note() const;
  // When the readings cannot be watts (the highest under 2 W while kernels run, or a limit under
  // 10 W: kilowatts under a [W] header, or a share of the limit): a note saying so. Power is then
  // not placed (placed() is false), so nothing is judged from it.
  std::optional<std::string> power_unit_note() const;

 private:
  void Recompute();
  void LearnSpinLevel();
  void SeedFromTable(const GpuModel& m);
  static double Percentile(const std::vector<uint32_t>& hist, uint64_t total, double q);

  std::optional<double> table_tdp_w_;
  std::optional<double> table_min_limit_w_, table_max_limit_w_;
  std::optional<double> implausible_limit_w_;  // the first implausible limit logged
  std::optional<double> tiny_limit_w_;         // the first limit no board has (under 10 W)
  double max_power_w_ = 0;                     // the highest reading
  bool working_seen_ = false;                  // a reading at >= kPeggedUtilPct utilization
  bool unit_suspect_ = false;                  // power_unit_note() has something to say
  std::optional<double> table_idle_w_;
  std::optional<double> table_spin_hi_w_;
  double quiet_min_w_ = 1e18;  // lowest reading without kernels (utilization < 20 % or unlogged)
  std::string table_name_;
  std::string logged_name_;
  std::string table_match_;   // how a board not known by its name was recognized, or ""
  bool board_tried_ = false;  // MatchBoard by limit and memory was tried
  std::optional<double> limit_w_;
  std::vector<uint32_t> all_hist_;   // 2 W bins
  std::vector<uint32_t> busy_hist_;  // readings with util >= 90 %
  uint64_t all_count_ = 0;
  uint64_t busy_count_ = 0;
  double max_busy_w_ = 0;         // the highest reading at >= 90 % utilization
  bool compute_learned_ = false;  // compute_w_ came from the readings (Recompute)
  uint64_t version_ = 0;          // version()
  uint64_t unpegged_count_ = 0;
  uint64_t util_count_ = 0;  // readings with utilization logged  // readings without utilization,
                             // or below kPeggedUtilPct
  bool placed_ = true;
  uint64_t since_recompute_ = 0;
  double floor_w_ = 0;
  double top_w_ = 0;
  double design_top_w_ = 0;
  double compute_w_ = 0;
  bool top_from_observation_ = false;
  std::optional<double> spin_w_;
  uint64_t low_busy_since_recompute_ = 0;  // pegged readings below the comm level, not yet used
};

}  // namespace ww::triage
