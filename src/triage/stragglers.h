// Stragglers: a rank that is consistently slower than its peers, so that they wait for it in
// every step. In a synchronous job every rank runs the same number of steps in the same time; a
// slow rank computes longer and the others spend the difference waiting in the next collective.
// Over training, the slow rank's compute seconds are its peers' compute seconds times its
// slowdown, and its wait seconds are far below theirs. Clock-event reasons say why, when they
// show the board throttled (power cap, thermal slowdown) more than its peers.
//
// Pure accounting and a pure decision (FindStragglers), fed by the engine with the seconds it
// already splits between compute and communication; table-tested in
// tests/triage/stragglers_test.cc.
// Thread-safety: not thread-safe; one thread feeds a given StragglerTracker.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/sample.h"

namespace ww::triage {

// One GPU's training time within one stretch of time (a chunk of chunk_s), split as the engine
// splits it. "Consistently slower" is judged chunk by chunk, so one slow moment (a hang's late
// ranks computing while the others already wait) is not a straggler.
struct RankTiming {
  GpuKey key;
  int64_t chunk = 0;         // start of the chunk / chunk_s
  double compute_s = 0;      // computing
  double wait_s = 0;         // in collectives (communication, waiting on peers)
  int64_t samples = 0;       // training samples with clock-event reasons
  int64_t power_capped = 0;  // ... with sw_power_cap or hw_power_brake set
  int64_t thermal = 0;       // ... with sw/hw thermal slowdown set
};

struct Straggler {
  GpuKey key;
  // Its compute time per step over the median rank's (1.25: 25 % slower). From the power split,
  // which blurs the peers' short waits into their compute (power is a ~1 s average): measured
  // within 20 % on the simulator (most within 10 %), on the high side.
  double slowdown = 1;
  std::string throttle;  // "power cap (sw_power_cap)", "thermal slowdown", or "" when none shown
};

struct StragglerOptions {
  // At least this much slower than the median rank: a slower board (silicon varies by a few %)
  // is not a straggler.
  double min_slowdown = 1.10;
  // ... and at least this share of its extra compute missing from its waits: the others wait
  // for it while it computes.
  double min_wait_taken = 0.5;
  double min_training_s = 30;  // the median rank trained at least this long in all
  double chunk_s = 60;         // stretches of time judged on their own
  // A chunk counts when the median rank trained at least this share of it; the rank must be
  // slower in at least min_slow_chunk_share of the counted chunks.
  double min_chunk_training_share = 0.5;
  double min_slow_chunk_share = 0.75;
  int min_chunks = 3;  // "consistently": at least this many chunks of training
  // Samples standing for longer than this are not used: the compute/wait split rests on power,
  // a ~1 s average, which at coarser sampling samples one second of the period (the same limit
  // as TriageOptions::comm_share_max_interval_s; no straggler is named from such logs).
  double max_sample_s = 2.0;
  int min_ranks = 2;  // a job of one GPU has no peer to be slower than
  // A throttle reason set in this share of its training samples, and at least twice as often
  // as on the median rank, explains the slowdown.
  double throttle_min_share = 0.3;
};

// NVML clocks_event_reasons bits (nvml.h) that slow a board down.
inline constexpr uint64_t kClockReasonSwPowerCap = 0x4;
inline constexpr uint64_t kClockReasonHwSlowdown = 0x8;
inline constexpr uint64_t kClockReasonSwThermal = 0x20;
inline constexpr uint64_t kClockReasonHwThermal = 0x40;
inline constexpr uint64_t kClockReasonHwPowerBrake = 0x80;

// The ranks that are consistently slower than the median rank, in key order. Pure.
std::vector<Straggler> FindStragglers(const std::vector<RankTiming>& ranks,
                                      const StragglerOptions& options = {});

// Accumulates RankTiming per GPU from the engine's training seconds and raw clock reasons.
class StragglerTracker {
 public:
  explicit StragglerTracker(const StragglerOptions& options = {}) : options_(options) {}
  // Seconds of training of one labelled sample at t_ms: compute_s + wait_s = the sample's dt.
  void AddTraining(GpuKey key, int64_t t_ms, double compute_s, double wait_s);
  // A raw sample's clock-event reasons, counted while the GPU trains (busy).
  void AddClockReasons(GpuKey key, int64_t t_ms, std::optional<uint64_t> reasons, bool busy);
  std::vector<RankTiming> timings() const;
  std::vector<Straggler> Find() const { return FindStragglers(timings(), options_); }

 private:
  int64_t Chunk(int64_t t_ms) const;
  // The GPU's timing for the chunk of t_ms. Called per sample (the engine's hot loop): a hash
  // lookup, then the GPU's newest chunk (samples of a GPU come in time order).
  RankTiming& At(GpuKey key, int64_t t_ms);
  StragglerOptions options_;
  std::unordered_map<uint32_t, std::vector<RankTiming>> by_gpu_;  // chunks in time order
};

}  // namespace ww::triage
