// Stragglers: a rank that is consistently slower than its peers, so that they wait for it in
// every step. In a synchronous job every rank runs the same number of steps in the same time; a
// slow rank computes longer and the others spend the difference waiting in the next collective.
// Over training, the slow rank's compute seconds are its peers' compute seconds times its
// slowdown, and its wait seconds are far below theirs. Clock-event reasons say why, when they
// show the board throttled (power cap, thermal slowdown) more than its peers.
//
// Two ways to time the ranks, by how the log was sampled:
// - at 2 s or finer, the engine's power split gives each training sample's compute and wait
//   seconds (power is a ~1 s average, so it resolves the parts of a step);
// - coarser (dcgm-exporter's 15-30 s), one power reading stands for the whole interval and says
//   nothing about the split; DCGM's activity counters do, because DCGM averages them over its
//   interval: a straggler's interval-averaged tensor/SM/DRAM activity is higher than its peers',
//   whose averages are pulled down by the time they spend waiting in the collective (the
//   derivation is at FindStragglers in stragglers.cc). Coarse samples without the counters are
//   counted, so that "stragglers unknown" can be said with the reason instead of silence.
//
// Pure accounting and a pure decision (FindStragglers, StragglersUnknownReason), fed by the
// engine; table-tested in tests/triage/stragglers_test.cc.
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
  // Coarse training samples (longer than max_sample_s) with DCGM activity counters: their
  // seconds, and for each counter the seconds it was logged and its ratio x seconds (so that
  // signal_s / logged_s is the chunk's interval-weighted average).
  double activity_s = 0;
  double tensor_logged_s = 0, tensor_s = 0;  // tensor_activity_ratio (DCGM field 1004)
  double dram_logged_s = 0, dram_s = 0;      // dram_bw_util_ratio (DCGM field 1005)
  double sm_logged_s = 0, sm_s = 0;          // sm_activity_ratio (DCGM field 1002)
  // ... and of those, the seconds with the engine busy (GR_ENGINE_ACTIVE, else utilization.gpu):
  // a peer's time off compute is spent inside a collective's kernel, not idle.
  double engine_logged_s = 0, engine_s = 0;
  // Coarse training samples without any activity counter: nothing to time the ranks by.
  double blind_s = 0;
  int64_t blind_samples = 0;
};

// The activity counters of one sample, as DCGM averaged them over its interval (0..1 each;
// absent when not logged).
struct ActivityReading {
  std::optional<double> tensor;
  std::optional<double> dram;
  std::optional<double> sm;
  std::optional<double> engine;  // GR engine active, else utilization.gpu / 100
  bool any() const { return tensor || dram || sm; }
};

struct Straggler {
  GpuKey key;
  // Its compute time per step over the median rank's (1.25: 25 % slower). From the power split,
  // which blurs the peers' short waits into their compute (power is a ~1 s average): measured
  // within 20 % on the simulator (most within 10 %), on the high side. From activity counters
  // (coarse sampling): the best lower bound of the counters' ratios (stragglers.cc), measured
  // within 10 % on the simulator.
  double slowdown = 1;
  bool from_activity = false;  // timed by DCGM activity counters, not the power split
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
  // Coarser samples are timed by DCGM's activity counters instead, when logged.
  double max_sample_s = 2.0;
  // A counter is used when logged for at least this share of the coarse training seconds and
  // its job-wide average is at least min_activity_signal (a job without tensor-core math has
  // tensor activity ~0 on every rank: a ratio of noise).
  double min_activity_logged_share = 0.5;
  double min_activity_signal = 0.05;
  // The median rank's engine busy this share of its coarse training time (GR engine active, or
  // utilization): its time off compute is spent in a collective's kernel, waiting. Without it a
  // higher activity on one rank is not the others waiting for it.
  double min_peer_engine_busy = 0.8;
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

// Why stragglers could not be judged, or "" when they could (or there is nothing to judge: one
// rank, too little training). Said when most of the median rank's training was sampled coarser
// than max_sample_s without activity counters. Pure.
std::string StragglersUnknownReason(const std::vector<RankTiming>& ranks,
                                    const StragglerOptions& options = {});

// Accumulates RankTiming per GPU from the engine's training seconds and raw clock reasons.
class StragglerTracker {
 public:
  explicit StragglerTracker(const StragglerOptions& options = {}) : options_(options) {}
  // Seconds of training of one labelled sample at t_ms: compute_s + wait_s = the sample's dt
  // (the power split, used at max_sample_s or finer); `activity`: the sample's counters, used
  // for coarser samples. power_split: the split comes from the sample's power; a finer sample
  // without it (power.draw not logged, or [N/A] on this GPU) times nothing: a rank is never
  // named slower for a signal it lacks.
  void AddTraining(GpuKey key, int64_t t_ms, double compute_s, double wait_s,
                   const ActivityReading& activity = {}, bool power_split = true);
  // A raw sample's clock-event reasons, counted while the GPU trains (busy).
  void AddClockReasons(GpuKey key, int64_t t_ms, std::optional<uint64_t> reasons, bool busy);
  std::vector<RankTiming> timings() const;
  std::vector<Straggler> Find() const { return FindStragglers(timings(), options_); }
  std::string UnknownReason() const { return StragglersUnknownReason(timings(), options_); }

 private:
  int64_t Chunk(int64_t t_ms) const;
  // The GPU's timing for the chunk of t_ms. Called per sample (the engine's hot loop): a hash
  // lookup, then the GPU's newest chunk (samples of a GPU come in time order).
  RankTiming& At(GpuKey key, int64_t t_ms);
  StragglerOptions options_;
  std::unordered_map<uint32_t, std::vector<RankTiming>> by_gpu_;  // chunks in time order
};

}  // namespace ww::triage
