// Per-GPU features over windows: one GPU's samples in, one SampleFeatures per sample out, each
// computed once the sample's centered window (window_s, reaching into the future) is complete.
// This is where a sample's local class is smoothed (utilization over +-util_smoothing_half_s),
// burst/gap patterns are counted (debounced busy<->low transitions), starvation is decided and a
// spin is known to be sustained or a blip. Nothing here looks at other GPUs: that is job_eval.
//
// Ownership: a GpuWindows owns its samples and its calibration; the options are copied.
// Thread-safety: not thread-safe; one thread feeds a given GpuWindows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "core/sample.h"
#include "triage/calibration.h"
#include "triage/classifier.h"
#include "triage/options.h"

namespace ww::triage {

// What one classified sample says about its GPU, for the job-level evaluation.
struct SampleFeatures {
  int64_t t_ms = 0;
  double dt_s = 0;        // time this sample stands for (0 after a gap longer than max_gap_s)
  double power_w = 0;     // NaN when not logged
  double power_frac = 0;  // power in [floor, top] of the GPU's calibration; NaN when not logged
  std::optional<double> util_mem_pct;
  ProcState proc = ProcState::kUnknown;
  LocalClass cls = LocalClass::kGone;  // after smoothing
  bool starved = false;                // bursts and gaps in the window: input can't keep up
  // Bursts (starved, or dips of utilization) at moderate power throughout (IsBurstyWork): work in
  // bursts (an evaluation pass), its state compute and its time all compute. The job still counts
  // it as it did (a starved sample as working in bursts).
  bool bursty_work = false;
  bool sustained_spin = false;  // a spin lasting min_spin_s, not an ordinary collective
  bool lost = false;            // the driver reported the GPU lost (cls is kGone)
  // Busy by utilization alone (no power, no activity counters on this sample): it may as well be
  // a rank spinning in a collective, so the job does not count it as computing.
  bool blind = false;
  // Memory or link traffic logged on this sample (MovesData): a spin that moves data is work.
  bool moves_data = false;
  double temperature_c = std::numeric_limits<double>::quiet_NaN();  // when logged (thermal.h)
  // For a kBusy sample with power: its compute share (ComputeShare between the communication and
  // the compute level); 1 otherwise. Used when the job-level state is compute.
  double compute_share = 1;
};

class GpuWindows {
 public:
  // name: the GPU model as logged ("" when unknown), for the calibration.
  GpuWindows(const std::string& name, const TriageOptions& options);

  // One sample of this GPU. Returns false (and ignores it) when it is not later than the last.
  bool Add(const GpuSample& sample);
  // The features of the next sample whose centered window is complete, if any. Call until false
  // after every Add: samples come out in order, each once.
  bool NextReady(SampleFeatures* out);
  // At the end of input: the time of the next sample not yet classified, if any, and its
  // features with the window as far as it goes.
  std::optional<int64_t> next_unclassified_ms() const;
  SampleFeatures ClassifyNextAtEnd();

  // EWMA of the sample spacing, in s (0 before the second sample).
  double interval_s() const { return interval_s_; }
  // Why the compute/communication split of this GPU's training time cannot be told, or nullopt
  // when it can: power.draw is a ~1 s average, so at sampling much coarser than that one reading
  // says nothing about how the rest of the period split between compute and collectives.
  std::optional<std::string> comm_share_unknown_reason() const;
  const PowerCalibration& calibration() const { return cal_; }
  // The board (from the table) waits in a collective as high as collectives moving data draw (a
  // T4 at 57 % of its limit): power can neither split its busy time nor time its rank.
  bool BoardWaitsAsHighAsCollectives() const;
  // False when the latest sample added logged power that could not be placed in the board's
  // range (PowerCalibration::placed), so it was classified without it.
  bool power_placed() const { return power_placed_; }
  // Samples held (pending and history): bounded by the window, for tests.
  size_t held_samples() const { return win_.size(); }

 private:
  // A sample waiting for its centered window, then kept as history for later samples' windows.
  struct Pending {
    int64_t t_ms;
    double dt_s;
    double power_w;  // NaN when not logged
    std::optional<double> util_pct;
    std::optional<double> util_mem_pct;
    LocalClass cls;  // before smoothing
    ProcState proc;
    double power_frac;
    bool transition;            // a debounced busy<->low change completes at this sample
    int64_t spin_run_start_ms;  // for a spin sample: when its run of spin samples began
    bool lost;                  // the GPU was reported lost: no process can run on it
    bool blind;                 // no power nor activity counters: a spin would read as busy
    bool moves_data;            // MovesData: memory or link traffic logged
    uint8_t eval_bits;          // its part in IsBurstyWork's counts (features.cc k*Bit)
    float temperature_c;        // NaN when not logged
  };

  int64_t HalfWindowMs() const;
  SampleFeatures Classify(size_t index);

  TriageOptions options_;
  int64_t smoothing_half_ms_;
  PowerCalibration cal_;
  bool power_placed_ = true;
  double peak_mem_mib_ = 0;
  // A queue indexed from its front, on one vector: std::deque's operator[] divides by its block
  // size (5 of these per block), and Classify indexes the window a dozen times per sample.
  class Window {
   public:
    size_t size() const { return items_.size() - head_; }
    bool empty() const { return size() == 0; }
    Pending& operator[](size_t i) { return items_[head_ + i]; }
    const Pending& operator[](size_t i) const { return items_[head_ + i]; }
    Pending& front() { return items_[head_]; }
    Pending& back() { return items_.back(); }
    const Pending& back() const { return items_.back(); }
    void push_back(const Pending& p) { items_.push_back(p); }
    void pop_front() {
      // The dead prefix is dropped once it is as long as what lives: amortized O(1), memory at
      // most twice the window (and the window's cache lines reused).
      if (++head_ >= 64 && head_ * 2 >= items_.size()) {
        items_.erase(items_.begin(), items_.begin() + static_cast<std::ptrdiff_t>(head_));
        head_ = 0;
      }
    }

   private:
    std::vector<Pending> items_;
    size_t head_ = 0;  // items_[head_] is the front
  };
  Window win_;
  size_t cursor_ = 0;  // win_[cursor_..] not classified yet
  // Sliding windows over win_, maintained incrementally (indices shift when win_ pops its front):
  // [lo_, hi_) is the centered burst/gap window, [lo_s_, hi_s_) the utilization smoothing window.
  size_t lo_ = 0, hi_ = 0, lo_s_ = 0, hi_s_ = 0;
  WindowStats w_;
  double smooth_util_sum_ = 0;
  int smooth_util_n_ = 0;
  // Debounce state for transitions, at Add time.
  bool run_busy_ = false;
  int run_len_ = 0;
  std::optional<bool> settled_busy_;
  int64_t last_in_ms_;
  bool high_paused_last_ = false;  // the last sample added read high power at paused utilization
  // PlacePowerBand's edges for the calibration they were worked out for.
  std::optional<PowerBandEdges> edges_;
  uint64_t edges_version_ = ~uint64_t{0};  // PowerCalibration::version() they are for
  bool pegged_last_ = false;               // the last sample added read pegged utilization
  double interval_s_ = 0;
};

}  // namespace ww::triage
