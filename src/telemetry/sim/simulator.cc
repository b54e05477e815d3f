// The simulator's physics: a job's phases turned, substep by substep, into what each GPU's sensors
// read (power averaged over 1 s, busy fraction, clocks, memory, DCGM activity) and the truth of
// every sample. The scenario catalogue is scenarios.cc; the TelemetrySource is sim_source.cc; the
// log and truth files are written by write_scenario.cc.
#include "telemetry/sim/simulator.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <deque>

namespace ww::sim {
namespace {

constexpr double kSubstepS = 0.010;  // instantaneous behaviour is simulated every 10 ms
constexpr int kPowerWindow = 100;    // power.draw averages the last 1 s of substeps

// Deterministic hash noise in [0, 1) for (a, b): per-step jitter that does not depend on the
// order in which GPUs are simulated.
double Hash01(uint64_t a, uint64_t b) {
  uint64_t x = a * 0x9E3779B97F4A7C15ULL ^ (b + 0x632BE59BD9B4E019ULL);
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ULL;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBULL;
  x ^= x >> 31;
  return static_cast<double>(x >> 11) * (1.0 / 9007199254740992.0);
}

// A collective moving data: ~1/3 of the range, and above a wait where a board waits high (a T4
// polls at 57 % of its limit; moving data draws more than polling).
double CommPowerW(const GpuModelParams& m, double cap, double spin_w) {
  const double range = m.tdp_w - m.idle_w;
  double comm_w = m.idle_w + 0.33 * range;
  if (spin_w >= comm_w) comm_w = spin_w + 0.15 * range;
  return std::min(cap, comm_w);
}

}  // namespace

struct Simulator::GpuSim {
  GpuKey key;
  int rank = 0;
  std::deque<double> power_window;
  double power_sum = 0;
  int busy_substeps = 0;
  int substeps = 0;
  double last_busy_s = -1e9;
  double last_process_s = -1e9;
  double temperature_c = 32;
  // Activity summed over the substeps of the current sample interval (DCGM averages over it).
  double act_gr = 0, act_sm = 0, act_occ = 0, act_tensor = 0, act_dram = 0;
  double act_nvlink = 0, act_pcie = 0;
  double compute_factor = 1.0;  // per-GPU silicon variation
  double model_mem_mib = 0;
  bool crashed = false;  // its host went down (kHostCrash): silent to the end
};

Simulator::Simulator(ScenarioConfig config) : config_(std::move(config)), rng_(config_.seed) {
  std::uniform_real_distribution<double> u01(0, 1);
  for (int h = 0; h < config_.hosts; ++h) {
    host_names_.push_back(config_.hosts == 1 ? "node0" : fmt::format("node{}", h));
    for (int g = 0; g < config_.gpus_per_host; ++g) {
      auto gpu = std::make_unique<GpuSim>();
      gpu->key = {static_cast<uint16_t>(h), static_cast<uint16_t>(g)};
      gpu->rank = h * config_.gpus_per_host + g;
      gpu->compute_factor = 0.96 + 0.08 * u01(rng_);
      gpu->model_mem_mib = config_.model.memory_total_mib * (0.55 + 0.3 * u01(rng_));
      gpus_.push_back(std::move(gpu));
    }
  }
  double t = 0;
  for (const Phase& p : config_.phases) {
    phase_starts_s_.push_back(t);
    t += p.duration_s;
    starved_wait_s_.push_back(1.0 + 2.0 * u01(rng_));
    starved_burst_s_.push_back(1.0 + 2.0 * u01(rng_));
  }
  total_s_ = t;
}

Simulator::~Simulator() = default;

int Simulator::PhaseIndexAt(double t_s, double* phase_start_s) const {
  int idx = 0;
  for (size_t i = 0; i < phase_starts_s_.size(); ++i) {
    if (t_s >= phase_starts_s_[i]) idx = static_cast<int>(i);
  }
  *phase_start_s = phase_starts_s_[static_cast<size_t>(idx)];
  return idx;
}

Simulator::Instant Simulator::InstantAt(int rank, double t_s) {
  double start = 0;
  const int pi = PhaseIndexAt(t_s, &start);
  const Phase& phase = config_.phases[static_cast<size_t>(pi)];
  const double tau = t_s - start;
  const auto& m = config_.model;
  const GpuSim& gpu = *gpus_[static_cast<size_t>(rank)];
  const double range = m.tdp_w - m.idle_w;
  const double cap = config_.power_cap_w > 0 ? config_.power_cap_w : m.tdp_w;
  const double ctx_w = m.idle_w + 0.075 * range;
  const double loaded_w = m.idle_w + 0.08 * range;
  const double writer_w = m.idle_w + 0.11 * range;
  const double spin_w = std::min(cap, m.spin_w > 0 ? m.spin_w : m.idle_w + 0.12 * range);
  const double comm_w = CommPowerW(m, cap, spin_w);
  double compute_w = std::min(cap, (m.idle_w + 0.8 * range) * gpu.compute_factor);
  if (config_.straggler_throttled && rank == config_.straggler_rank) {
    compute_w = m.idle_w + 0.85 * (compute_w - m.idle_w);  // held at its (lower) cap
  }
  const bool singled_out =
      std::find(phase.ranks.begin(), phase.ranks.end(), rank) != phase.ranks.end();

  Instant in{GpuState::kIdle, false, m.idle_w, 15, 0, false};
  auto train = [&](double local_t, GpuState label_compute) {
    // Steps with per-step jitter; collectives at both ends of the step (all-gather, then
    // reduce-scatter), compute in between.
    const double step = config_.step_s;
    const double k = std::floor(local_t / step);
    const double u = (local_t - k * step) / step;
    const double c =
        config_.comm_fraction * (0.8 + 0.4 * Hash01(config_.seed, static_cast<uint64_t>(k)));
    in.busy = true;
    in.process = true;
    in.mem_mib = gpu.model_mem_mib;
    // With a straggler, the step's compute is the straggler's; the others finish theirs sooner
    // and spin in the collective until it arrives (labelled communication: they wait on it).
    const bool straggling = config_.straggler_rank >= 0 && label_compute == GpuState::kCompute;
    const double own_compute_end = straggling && rank != config_.straggler_rank
                                       ? c / 2 + (1 - c) / std::max(1.0, config_.straggler_slowdown)
                                       : 1 - c / 2;
    if (straggling && u >= own_compute_end && u < 1 - c / 2) {
      in.truth = GpuState::kCommunication;
      in.power_w = spin_w;
      in.util_mem_pct = 0;
    } else if (u < c / 2 || u >= 1 - c / 2) {
      in.truth = label_compute == GpuState::kCompute ? GpuState::kCommunication : label_compute;
      in.power_w = comm_w;
      in.util_mem_pct = 15;
    } else {
      in.truth = label_compute;
      in.power_w = compute_w;
      in.util_mem_pct = 45;
    }
  };
  switch (phase.kind) {
    case PhaseKind::kNoProcess:
      break;
    case PhaseKind::kLaunch:
      in = {GpuState::kIdle, false, ctx_w, 520, 0, true};
      break;
    case PhaseKind::kLoad: {
      const double f = std::min(1.0, tau / std::max(phase.duration_s, 1e-9));
      in = {GpuState::kIdle,
            false,
            loaded_w + 0.02 * range,
            520 + f * (gpu.model_mem_mib - 520),
            20,
            true};
      // Weight copies: a short kernel now and then (util reads ~0-5 %).
      in.busy = std::fmod(tau + rank * 0.07, 1.0) < 0.02;
      break;
    }
    case PhaseKind::kTrain:
      train(tau, GpuState::kCompute);
      break;
    case PhaseKind::kStarved: {
      // The loader delivers a batch, the GPUs run it, then wait for the next one.
      const double burst = starved_burst_s_[static_cast<size_t>(pi)];
      const double cycle = burst + starved_wait_s_[static_cast<size_t>(pi)];
      const double u = std::fmod(tau, cycle);
      if (u < burst) {
        train(u, GpuState::kDataStarved);
      } else {
        in = {GpuState::kDataStarved, false, loaded_w, gpu.model_mem_mib, 0, true};
      }
      break;
    }
    case PhaseKind::kCheckpointAll: {
      in = {GpuState::kCheckpoint, false, writer_w, gpu.model_mem_mib, 3, true};
      const double u = std::fmod(tau + rank * 0.13, 0.5);
      in.busy = u < 0.02;  // D2H copy kernels: ~4 % utilization
      break;
    }
    case PhaseKind::kCheckpointRank0:
      if (rank == 0) {
        in = {GpuState::kCheckpoint, false, writer_w, gpu.model_mem_mib, 3, true};
        in.busy = std::fmod(tau, 0.5) < 0.02;
      } else {
        in = {GpuState::kCheckpoint, true, spin_w, gpu.model_mem_mib, 0, true};
      }
      break;
    case PhaseKind::kHangSpin:
      if (tau < phase.lead_s) {
        if (singled_out) {
          train(tau, GpuState::kCompute);
        } else {
          in = {GpuState::kCommunication, true, spin_w, gpu.model_mem_mib, 0, true};
        }
      } else {
        in = {GpuState::kHang, true, spin_w, gpu.model_mem_mib, 0, true};
      }
      break;
    case PhaseKind::kHangExit:
      if (singled_out) {
        in = {GpuState::kHang, false, m.idle_w, 15, 0, false};
      } else {
        in = {GpuState::kHang, true, spin_w, gpu.model_mem_mib, 0, true};
      }
      break;
    case PhaseKind::kSoloWork: {
      // Batches back to back with a short host-side pause between them (1 % of a step: tens of
      // ms, as a server's batching leaves; not a gap for the starvation detector).
      const bool busy = std::fmod(tau, config_.step_s) / config_.step_s < 0.99;
      in = {GpuState::kCompute, busy, busy ? compute_w : loaded_w, gpu.model_mem_mib, 40, true};
      break;
    }
    case PhaseKind::kSoloSmallKernels:
      // Small kernels back to back: utilization pegged, power barely above a spin's.
      in = {GpuState::kCompute, true, spin_w + 0.03 * range, gpu.model_mem_mib, 8, true};
      break;
    case PhaseKind::kQuietHeld:
      in = {GpuState::kIdle, false, loaded_w, gpu.model_mem_mib, 0, true};
      break;
    case PhaseKind::kOffGpuStall:
      in = {GpuState::kHang, false, loaded_w, gpu.model_mem_mib, 0, true};
      break;
    case PhaseKind::kSteadyMidPower: {
      // Flat: the same kernel back to back (the sensor's noise is added per tick).
      const double w = m.idle_w + 0.45 * range * gpu.compute_factor;
      in = {GpuState::kCompute, true, std::min(cap, w), gpu.model_mem_mib, 30, true};
      break;
    }
    case PhaseKind::kHostCrash:
      in = {GpuState::kHang, true, spin_w, gpu.model_mem_mib, 0, true, !singled_out};
      break;
    case PhaseKind::kEvalPass: {
      // Batches of ~0.7 s, the same on every rank: kernels for 55-85 % of it at moderate power
      // (forward only, eval batch sizes), then the host's share (metrics, the next batch) with
      // the model held. Bursts and gaps shorter than power's ~1 s average: power stays between.
      constexpr double kBatchS = 0.7;
      const double k = std::floor(tau / kBatchS);
      const double share = 0.55 + 0.3 * Hash01(config_.seed ^ 0xe7a1, static_cast<uint64_t>(k));
      const bool kernels = tau - k * kBatchS < share * kBatchS;
      const double w = std::min(cap, m.idle_w + 0.42 * range * gpu.compute_factor);
      in = {GpuState::kCompute,   kernels, kernels ? w : loaded_w, gpu.model_mem_mib,
            kernels ? 25.0 : 0.0, true};
      break;
    }
    case PhaseKind::kPartialHang:
      if (singled_out) {
        in = {GpuState::kHang, false, loaded_w, gpu.model_mem_mib, 0, true};
      } else {
        in = {GpuState::kHang, true, spin_w, gpu.model_mem_mib, 0, true};
      }
      break;
  }
  return in;
}

// ---------------------------------------------------------------- activity counters

// The activity of one instant, by what the GPU does: dense math keeps the SMs and tensor pipes
// busy; an NCCL transfer runs one CTA per channel (16-32 of an H100's 132 SMs) and moves NVLink
// bytes through DRAM; a rank waiting in a collective keeps those same CTAs resident, polling a
// flag: the engine "active", SM activity ~0.15 (not ~0: real DCGM shows NCCL's floor), no tensor
// work, almost no DRAM or link traffic; checkpoint and weight copies move PCIe bytes. Told apart by
// the instant's power level, the one thing InstantAt sets per activity.
Simulator::Activity Simulator::ActivityOf(const Instant& in, const GpuSim& gpu) const {
  Activity a;
  if (!in.busy) return a;
  const auto& m = config_.model;
  const double range = m.tdp_w - m.idle_w;
  const double cap = config_.power_cap_w > 0 ? config_.power_cap_w : m.tdp_w;
  const double spin_w = std::min(cap, m.spin_w > 0 ? m.spin_w : m.idle_w + 0.12 * range);
  const double comm_w = CommPowerW(m, cap, spin_w);
  const double f = gpu.compute_factor;  // per-GPU variation, ~0.96-1.04
  a.gr = 1;
  if (std::abs(in.power_w - spin_w) < 1e-6) {
    a.sm = 0.15 * f;
    a.occupancy = 0.03;
    a.dram = 0.005;
    a.nvlink_bytes_per_s = 2e7;
  } else if (std::abs(in.power_w - comm_w) < 1e-6) {
    a.sm = 0.18 * f;
    a.occupancy = 0.08;
    a.dram = 0.3;
    a.nvlink_bytes_per_s = 1.2e11 * f;
  } else if (in.power_w > comm_w) {  // compute
    a.sm = 0.9 * f;
    a.occupancy = 0.45 * f;
    a.tensor = 0.55 * f;
    a.dram = 0.45 * f;
    a.nvlink_bytes_per_s = 2e9;
  } else {  // copy kernels (weights in, checkpoint out)
    a.sm = 0.02;
    a.occupancy = 0.01;
    a.dram = 0.25;
    a.pcie_bytes_per_s = 2e10;
  }
  return a;
}

bool Simulator::NextTick(std::vector<GpuSample>* samples, std::vector<TruthLabel>* truth) {
  const double interval_s = static_cast<double>(config_.interval_ms) / 1000.0;
  const double next_t = static_cast<double>(tick_ + 1) * interval_s;
  if (next_t > total_s_) return false;
  std::normal_distribution<double> noise(0, 1);
  const auto& m = config_.model;
  const double cap = config_.power_cap_w > 0 ? config_.power_cap_w : m.tdp_w;
  const int substeps = std::max(1, static_cast<int>(std::lround(interval_s / kSubstepS)));
  const double t0 = static_cast<double>(tick_) * interval_s;
  for (auto& gp : gpus_) {
    GpuSim& g = *gp;
    Instant last{};
    // The moment of the interval whose clock-event reasons the sample reports. Real step times
    // jitter, so a 15-30 s reading lands at any phase of a step; the simulator's steps are exactly
    // step_s long, and reading the interval's last instant would alias (15 s = 10 steps of 1.5 s:
    // always the same phase). Coarse samples read a moment drawn per tick instead; at 2 s or
    // finer the last instant, as before.
    const int reasons_substep =
        interval_s > 2.0 ? 1 + static_cast<int>(Hash01(config_.seed ^ 0x5eed,
                                                       static_cast<uint64_t>(tick_) * 4099 +
                                                           static_cast<uint64_t>(g.rank)) *
                                                (substeps - 1))
                         : substeps;
    Instant reasons_at{};
    for (int s = 1; s <= substeps; ++s) {
      const double t = t0 + s * (interval_s / substeps);
      last = InstantAt(g.rank, t);
      if (s == reasons_substep) reasons_at = last;
      double p = last.power_w;
      g.power_window.push_back(p);
      g.power_sum += p;
      if (static_cast<int>(g.power_window.size()) > kPowerWindow) {
        g.power_sum -= g.power_window.front();
        g.power_window.pop_front();
      }
      if (last.busy) {
        ++g.busy_substeps;
        g.last_busy_s = t;
      }
      if (config_.activity_counters) {
        const Activity a = ActivityOf(last, g);
        g.act_gr += a.gr;
        g.act_sm += a.sm;
        g.act_occ += a.occupancy;
        g.act_tensor += a.tensor;
        g.act_dram += a.dram;
        g.act_nvlink += a.nvlink_bytes_per_s;
        g.act_pcie += a.pcie_bytes_per_s;
      }
      if (last.process) g.last_process_s = t;
      ++g.substeps;
      const double dt = interval_s / substeps;
      if (last.truth == GpuState::kCommunication) truth_comm_s_ += dt;
      if (last.truth == GpuState::kCompute) truth_compute_s_ += dt;
    }
    if (!last.reporting) g.crashed = true;
    if (g.crashed) {
      g.busy_substeps = 0;
      g.substeps = 0;
      continue;
    }
    GpuSample out;
    // Rows of one tick are a few ms apart, GPU 0 first, as nvidia-smi writes them.
    out.timestamp_ms = config_.start_unix_ms + static_cast<int64_t>(std::llround(next_t * 1000)) +
                       g.key.host * 0 + g.key.gpu * 2;
    out.key = g.key;
    const double avg = g.power_sum / static_cast<double>(g.power_window.size());
    const double noise_frac = last.truth == GpuState::kHang ? 0.004 : 0.012;
    out.power_w = std::max(0.0, avg * (1 + noise_frac * noise(rng_)));
    out.power_limit_w = cap;
    const double busy_frac = static_cast<double>(g.busy_substeps) / g.substeps;
    out.util_gpu_pct = std::round(100 * busy_frac);
    out.util_mem_pct = std::round(last.util_mem_pct * (last.busy ? 1 : 0.2) +
                                  (last.util_mem_pct > 0 ? std::abs(noise(rng_)) : 0));
    const double tnow = next_t;
    const double idle_for = tnow - g.last_busy_s;
    double clock = m.max_sm_clock_mhz;
    if (idle_for > 5) {
      clock = m.idle_sm_clock_mhz;
    } else if (idle_for > 2) {
      clock = m.max_sm_clock_mhz - (m.max_sm_clock_mhz - m.idle_sm_clock_mhz) * (idle_for - 2) / 3;
    }
    uint64_t reasons = idle_for > 5 ? 0x1 : 0x0;
    const double demand = (m.idle_w + 0.8 * (m.tdp_w - m.idle_w)) * g.compute_factor;
    if (last.busy && last.power_w >= cap - 1e-9 && demand > cap) {
      clock = m.max_sm_clock_mhz * std::max(0.5, (cap - m.idle_w) / (demand - m.idle_w));
      reasons |= 0x4;
    }
    if (config_.straggler_throttled && g.rank == config_.straggler_rank && reasons_at.busy &&
        reasons_at.truth == GpuState::kCompute) {
      clock *= 0.8;
      reasons |= 0x4;  // sw_power_cap
    }
    out.sm_clock_mhz = std::round(clock);
    out.mem_clock_mhz = m.mem_clock_mhz;
    g.temperature_c += (30 + 0.05 * avg - g.temperature_c) * std::min(1.0, interval_s / 20);
    out.temperature_c = std::round(g.temperature_c);
    out.mem_used_mib = std::round(last.mem_mib);
    out.mem_total_mib = m.memory_total_mib;
    out.pstate = (tnow - g.last_process_s) < 10 ? 0 : 8;
    out.clock_event_reasons = reasons;
    if (config_.activity_counters) {
      const double n = static_cast<double>(g.substeps);
      auto ratio = [&](double sum) { return std::round(1000 * sum / n) / 1000; };
      out.gr_engine_active_ratio = ratio(g.act_gr);
      out.sm_activity_ratio = ratio(g.act_sm);
      out.sm_occupancy_ratio = ratio(g.act_occ);
      out.tensor_activity_ratio = ratio(g.act_tensor);
      out.dram_bw_util_ratio = ratio(g.act_dram);
      out.nvlink_tx_bytes_per_s = out.nvlink_rx_bytes_per_s = std::round(g.act_nvlink / n);
      out.pcie_tx_bytes_per_s = std::round(g.act_pcie / n);
      out.pcie_rx_bytes_per_s = std::round(0.1 * g.act_pcie / n);
      g.act_gr = g.act_sm = g.act_occ = g.act_tensor = g.act_dram = 0;
      g.act_nvlink = g.act_pcie = 0;
    }
    if (m.devices_per_power_reading > 1 && g.key.gpu % m.devices_per_power_reading != 0) {
      out.power_w.reset();  // the package's power is read on its first device
      out.power_limit_w.reset();
    }
    DropFields(&out);
    samples->push_back(out);
    truth->push_back({out.timestamp_ms, g.key, last.truth});
    g.busy_substeps = 0;
    g.substeps = 0;
  }
  ++tick_;
  t_s_ = next_t;
  return true;
}

void Simulator::DropFields(GpuSample* s) const {
  for (const std::string& f : config_.drop_fields) {
    if (f == "memory.used") {
      s->mem_used_mib.reset();
      s->mem_total_mib.reset();
    } else if (f == "power.draw") {
      s->power_w.reset();
      s->power_limit_w.reset();
    } else if (f == "utilization.gpu") {
      s->util_gpu_pct.reset();
    } else if (f == "utilization.memory") {
      s->util_mem_pct.reset();
    } else if (f == "power.limit") {
      s->power_limit_w.reset();
    }
  }
}

std::string Simulator::ModelNameAsLogged() const {
  const auto& d = config_.drop_fields;
  return std::find(d.begin(), d.end(), "name") != d.end() ? "" : config_.model.name;
}

std::vector<TruthHang> Simulator::truth_hangs() const {
  std::vector<TruthHang> out;
  for (size_t i = 0; i < config_.phases.size(); ++i) {
    const Phase& p = config_.phases[i];
    if (p.kind != PhaseKind::kHangSpin && p.kind != PhaseKind::kHangExit &&
        p.kind != PhaseKind::kOffGpuStall && p.kind != PhaseKind::kPartialHang &&
        p.kind != PhaseKind::kHostCrash) {
      continue;
    }
    const double start_s = phase_starts_s_[i] + (p.kind == PhaseKind::kHangSpin ? p.lead_s : 0);
    const double end_s = phase_starts_s_[i] + p.duration_s;
    TruthHang h;
    h.start_ms = config_.start_unix_ms + static_cast<int64_t>(std::llround(start_s * 1000));
    h.end_ms = config_.start_unix_ms + static_cast<int64_t>(std::llround(end_s * 1000));
    for (int r : p.ranks) {
      h.culprits.push_back({static_cast<uint16_t>(r / config_.gpus_per_host),
                            static_cast<uint16_t>(r % config_.gpus_per_host)});
    }
    out.push_back(std::move(h));
  }
  return out;
}

std::string Simulator::GpuUuid(GpuKey key) const {
  return fmt::format("GPU-{:08x}-{:04x}-{:04x}-sim0-{:012x}", config_.seed & 0xffffffff, key.host,
                     key.gpu, static_cast<uint64_t>(key.host) * 64 + key.gpu);
}

}  // namespace ww::sim
