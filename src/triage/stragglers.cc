#include "triage/stragglers.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "telemetry/fields.h"

namespace ww::triage {
namespace {

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::map<GpuKey, RankTiming> Totals(const std::vector<RankTiming>& chunks) {
  std::map<GpuKey, RankTiming> total;
  for (const RankTiming& r : chunks) {
    RankTiming& t = total[r.key];
    t.key = r.key;
    t.compute_s += r.compute_s;
    t.wait_s += r.wait_s;
    t.samples += r.samples;
    t.power_capped += r.power_capped;
    t.thermal += r.thermal;
    t.activity_s += r.activity_s;
    t.tensor_logged_s += r.tensor_logged_s;
    t.tensor_s += r.tensor_s;
    t.dram_logged_s += r.dram_logged_s;
    t.dram_s += r.dram_s;
    t.sm_logged_s += r.sm_logged_s;
    t.sm_s += r.sm_s;
    t.engine_logged_s += r.engine_logged_s;
    t.engine_s += r.engine_s;
    t.blind_s += r.blind_s;
    t.blind_samples += r.blind_samples;
  }
  return total;
}

double MedianOf(const std::map<GpuKey, RankTiming>& total, double (*f)(const RankTiming&)) {
  std::vector<double> v;
  v.reserve(total.size());
  for (const auto& [k, t] : total) v.push_back(f(t));
  return Median(std::move(v));
}

double PowerTrainingS(const RankTiming& t) { return t.compute_s + t.wait_s; }
double ActivityTrainingS(const RankTiming& t) { return t.activity_s; }

// Names the throttle that explains a straggler's slowdown, from its clock-event reasons against
// the median rank's, or "".
std::string Throttle(const std::map<GpuKey, RankTiming>& total, GpuKey key,
                     const StragglerOptions& o) {
  std::vector<double> capped, thermal;
  for (const auto& [k, t] : total) {
    const double n = static_cast<double>(std::max<int64_t>(1, t.samples));
    capped.push_back(static_cast<double>(t.power_capped) / n);
    thermal.push_back(static_cast<double>(t.thermal) / n);
  }
  const double med_capped = Median(capped);
  const double med_thermal = Median(thermal);
  const RankTiming& t = total.at(key);
  const double samples = static_cast<double>(std::max<int64_t>(1, t.samples));
  auto shows = [&](int64_t count, double median) {
    const double share = static_cast<double>(count) / samples;
    return share >= o.throttle_min_share && share >= 2 * median;
  };
  if (shows(t.power_capped, med_capped)) {
    return "power cap (clock event sw_power_cap / hw_power_brake)";
  }
  if (shows(t.thermal, med_thermal)) return "thermal slowdown (clock event sw/hw_thermal_slowdown)";
  return "";
}

// At max_sample_s or finer: the engine's power split of each sample into compute and wait.
std::vector<Straggler> FindByPower(
    const std::map<int64_t, std::vector<const RankTiming*>>& by_chunk,
    const std::map<GpuKey, RankTiming>& total, const StragglerOptions& o) {
  std::vector<Straggler> out;
  std::map<GpuKey, int> slow_chunks;
  std::map<GpuKey, double> compute_in, median_compute_in;
  int counted = 0;
  double trained_s = 0;
  for (const auto& [chunk, rs] : by_chunk) {
    if (static_cast<int>(rs.size()) < o.min_ranks) continue;
    std::vector<double> compute, wait, train;
    for (const RankTiming* r : rs) {
      compute.push_back(r->compute_s);
      wait.push_back(r->wait_s);
      train.push_back(r->compute_s + r->wait_s);
    }
    const double med_train = Median(train);
    if (med_train < o.min_chunk_training_share * o.chunk_s) continue;
    ++counted;
    trained_s += med_train;
    const double med_compute = Median(compute);
    const double med_wait = Median(wait);
    if (med_compute <= 0) continue;
    for (size_t i = 0; i < rs.size(); ++i) {
      compute_in[rs[i]->key] += compute[i];
      median_compute_in[rs[i]->key] += med_compute;
      // Slower than the median, and the others waited for it: in a synchronous job every rank
      // spends the same time per step, so the straggler's extra compute comes out of its waits
      // (a rank that is merely busy longer, without shorter waits, holds nobody up).
      if (compute[i] >= o.min_slowdown * med_compute &&
          med_wait - wait[i] >= o.min_wait_taken * (compute[i] - med_compute)) {
        ++slow_chunks[rs[i]->key];
      }
    }
  }
  if (counted < o.min_chunks || trained_s < o.min_training_s) return out;
  for (const auto& [k, n] : slow_chunks) {
    if (n < o.min_slow_chunk_share * counted) continue;
    Straggler s;
    s.key = k;
    s.slowdown = median_compute_in[k] > 0 ? compute_in[k] / median_compute_in[k] : 1;
    s.throttle = Throttle(total, k, o);
    out.push_back(s);
  }
  return out;  // in key order (a std::map's)
}

// Coarser than max_sample_s, from DCGM's activity counters (averaged over their interval).
//
// Why the ratio of averaged activity is the slowdown. In a synchronous job every rank's step
// takes the same time T. Rank i computes C_i of it and spends T - C_i in the step's collectives
// (moving data, and waiting for the slowest rank). Over an interval of many steps a counter X
// averages to
//     X_i = x_c * b_i + x_w * (1 - b_i),   b_i = C_i / T,
// where x_c is its level while computing (the same kernels on every rank of a data-parallel
// job) and x_w its level inside a collective (the floor). The straggler s against the median
// rank m:
//     X_s / X_m = (x_w + (x_c - x_w) b_s) / (x_w + (x_c - x_w) b_m).
// With x_w = 0 that is b_s / b_m = C_s / C_m, the slowdown itself; with 0 < x_w < x_c it lies
// between 1 and the slowdown: a floor understates a straggler, it never makes one of a rank that
// is not slower. The counters differ in floor and in what they see of a slow rank:
// - tensor active: floor ~0 (NCCL does not use the tensor pipes). Exact when the rank is slow
//   because its clocks are (a power cap, thermal slowdown: the same kernels keep the pipe busy
//   the same share of cycles, for longer); it understates a rank slowed by stalls the pipe does
//   not see (a degraded memory or link: its x_c is lower).
// - SM active counts cycles with a warp resident, stalled or not, so it sees every kind of slow
//   compute, but a rank in a collective keeps one CTA per NCCL channel resident (16-32 of an
//   H100's 132 SMs): a floor of ~0.1-0.25, which understates (a true 1.30 reads ~1.2).
// - DRAM active: a floor while NCCL moves data through HBM, and memory time does not stretch
//   with the SM clock: another lower bound.
// Each ratio is (up to noise) at most the slowdown, so the estimate is the largest of them, and
// min_slowdown is judged on it. That the others waited is checked as in the power split: the
// median rank's engine stays busy through its time off compute (a collective's kernel spinning),
// where a rank that is merely busier next to idle peers holds nobody up.
std::vector<Straggler> FindByActivity(
    const std::map<int64_t, std::vector<const RankTiming*>>& by_chunk,
    const std::map<GpuKey, RankTiming>& total, const StragglerOptions& o) {
  std::vector<Straggler> out;
  // The counters to use: logged for most of the time, and with something to measure.
  struct Signal {
    double RankTiming::*logged;
    double RankTiming::*sum;
  };
  std::vector<Signal> signals;
  double all_s = 0;
  for (const auto& [k, t] : total) all_s += t.activity_s;
  for (Signal sig : {Signal{&RankTiming::tensor_logged_s, &RankTiming::tensor_s},
                     Signal{&RankTiming::dram_logged_s, &RankTiming::dram_s},
                     Signal{&RankTiming::sm_logged_s, &RankTiming::sm_s}}) {
    double logged = 0, sum = 0;
    for (const auto& [k, t] : total) {
      logged += t.*sig.logged;
      sum += t.*sig.sum;
    }
    if (logged >= o.min_activity_logged_share * all_s && logged > 0 &&
        sum / logged >= o.min_activity_signal) {
      signals.push_back(sig);
    }
  }
  if (signals.empty()) return out;
  auto level = [](const RankTiming& r, const Signal& sig) {
    return r.*sig.logged > 0 ? r.*sig.sum / r.*sig.logged : 0.0;
  };
  std::map<GpuKey, int> slow_chunks;
  // Per signal: the rank's level and the median's, weighted by the rank's seconds per chunk.
  std::map<GpuKey, std::vector<double>> level_in, median_level_in;
  int counted = 0;
  double trained_s = 0;
  for (const auto& [chunk, rs] : by_chunk) {
    if (static_cast<int>(rs.size()) < o.min_ranks) continue;
    std::vector<double> train, engine;
    for (const RankTiming* r : rs) {
      train.push_back(r->activity_s);
      if (r->engine_logged_s > 0) engine.push_back(r->engine_s / r->engine_logged_s);
    }
    const double med_train = Median(train);
    if (med_train < o.min_chunk_training_share * o.chunk_s) continue;
    ++counted;
    trained_s += med_train;
    // Without an engine reading nothing shows the others wait; with one, they must.
    const bool peers_wait = !engine.empty() && Median(engine) >= o.min_peer_engine_busy;
    std::vector<double> medians;
    for (const Signal& sig : signals) {
      std::vector<double> v;
      for (const RankTiming* r : rs) {
        if (r->*sig.logged > 0) v.push_back(level(*r, sig));
      }
      medians.push_back(Median(std::move(v)));
    }
    for (const RankTiming* r : rs) {
      auto& li = level_in[r->key];
      auto& mi = median_level_in[r->key];
      li.resize(signals.size(), 0);
      mi.resize(signals.size(), 0);
      double ratio = 0;
      for (size_t j = 0; j < signals.size(); ++j) {
        if (r->*signals[j].logged <= 0 || medians[j] <= 0) continue;
        li[j] += level(*r, signals[j]) * r->activity_s;
        mi[j] += medians[j] * r->activity_s;
        ratio = std::max(ratio, level(*r, signals[j]) / medians[j]);
      }
      if (peers_wait && ratio >= o.min_slowdown) ++slow_chunks[r->key];
    }
  }
  if (counted < o.min_chunks || trained_s < o.min_training_s) return out;
  for (const auto& [k, n] : slow_chunks) {
    if (n < o.min_slow_chunk_share * counted) continue;
    Straggler s;
    s.key = k;
    s.from_activity = true;
    const auto& li = level_in[k];
    const auto& mi = median_level_in[k];
    for (size_t j = 0; j < li.size(); ++j) {
      if (mi[j] > 0) s.slowdown = std::max(s.slowdown, li[j] / mi[j]);
    }
    s.throttle = Throttle(total, k, o);
    out.push_back(s);
  }
  return out;
}

}  // namespace

std::vector<Straggler> FindStragglers(const std::vector<RankTiming>& chunks,
                                      const StragglerOptions& o) {
  // By chunk, then by GPU.
  std::map<int64_t, std::vector<const RankTiming*>> by_chunk;
  for (const RankTiming& r : chunks) by_chunk[r.chunk].push_back(&r);
  const std::map<GpuKey, RankTiming> total = Totals(chunks);
  if (static_cast<int>(total.size()) < o.min_ranks) return {};
  // One way of timing for the job: the one that covers more of the median rank's training.
  if (MedianOf(total, ActivityTrainingS) > MedianOf(total, PowerTrainingS)) {
    return FindByActivity(by_chunk, total, o);
  }
  return FindByPower(by_chunk, total, o);
}

std::string StragglersUnknownReason(const std::vector<RankTiming>& chunks,
                                    const StragglerOptions& o) {
  const std::map<GpuKey, RankTiming> total = Totals(chunks);
  if (static_cast<int>(total.size()) < o.min_ranks) return "";
  const double blind_s = MedianOf(total, [](const RankTiming& t) { return t.blind_s; });
  const double timed_s = MedianOf(total, PowerTrainingS) + MedianOf(total, ActivityTrainingS);
  if (blind_s < o.min_training_s || blind_s <= timed_s) return "";
  double all_s = 0;
  int64_t all_n = 0;
  for (const auto& [k, t] : total) {
    all_s += t.blind_s;
    all_n += t.blind_samples;
  }
  const double interval_s = all_n > 0 ? all_s / static_cast<double>(all_n) : 0;
  return fmt::format(
      "training sampled every {:.0f} s without DCGM activity counters: power.draw is a ~1 s "
      "average, so one reading per interval does not show how long each rank computes in a step; "
      "nobody is named (log {}, DRAM_ACTIVE or SM_ACTIVE, or sample at {:.0f} s or finer)",
      interval_s, DcgmFieldOf(&GpuSample::tensor_activity_ratio).name, o.max_sample_s);
}

int64_t StragglerTracker::Chunk(int64_t t_ms) const {
  const int64_t chunk_ms = std::max<int64_t>(1, static_cast<int64_t>(options_.chunk_s * 1000));
  return t_ms >= 0 ? t_ms / chunk_ms : -((-t_ms + chunk_ms - 1) / chunk_ms);
}

RankTiming& StragglerTracker::At(GpuKey key, int64_t t_ms) {
  const int64_t c = Chunk(t_ms);
  std::vector<RankTiming>& chunks = by_gpu_[(static_cast<uint32_t>(key.host) << 16) | key.gpu];
  for (auto it = chunks.rbegin(); it != chunks.rend(); ++it) {
    if (it->chunk == c) return *it;
    if (it->chunk < c) break;
  }
  RankTiming r;
  r.key = key;
  r.chunk = c;
  chunks.push_back(r);
  std::sort(chunks.begin(), chunks.end(),
            [](const RankTiming& a, const RankTiming& b) { return a.chunk < b.chunk; });
  for (RankTiming& x : chunks) {
    if (x.chunk == c) return x;
  }
  return chunks.back();  // not reached
}

void StragglerTracker::AddTraining(GpuKey key, int64_t t_ms, double compute_s, double wait_s,
                                   const ActivityReading& a, bool power_split) {
  const double dt_s = compute_s + wait_s;
  if (dt_s <= options_.max_sample_s && !power_split) return;
  RankTiming& r = At(key, t_ms);
  if (dt_s <= options_.max_sample_s) {
    r.compute_s += compute_s;
    r.wait_s += wait_s;
    return;
  }
  // Coarse: the power split of this sample is a guess; the counters, averaged over the
  // interval, are not.
  if (!a.any()) {
    r.blind_s += dt_s;
    ++r.blind_samples;
    return;
  }
  r.activity_s += dt_s;
  auto add = [&](const std::optional<double>& v, double* logged_s, double* sum_s) {
    if (!v) return;
    *logged_s += dt_s;
    *sum_s += std::clamp(*v, 0.0, 1.0) * dt_s;
  };
  add(a.tensor, &r.tensor_logged_s, &r.tensor_s);
  add(a.dram, &r.dram_logged_s, &r.dram_s);
  add(a.sm, &r.sm_logged_s, &r.sm_s);
  add(a.engine, &r.engine_logged_s, &r.engine_s);
}

void StragglerTracker::AddClockReasons(GpuKey key, int64_t t_ms, std::optional<uint64_t> reasons,
                                       bool busy) {
  if (!reasons || !busy) return;
  RankTiming& r = At(key, t_ms);
  ++r.samples;
  if (*reasons & (kClockReasonSwPowerCap | kClockReasonHwPowerBrake)) ++r.power_capped;
  if (*reasons & (kClockReasonSwThermal | kClockReasonHwThermal)) ++r.thermal;
}

std::vector<RankTiming> StragglerTracker::timings() const {
  std::vector<RankTiming> out;
  for (const auto& [k, chunks] : by_gpu_) out.insert(out.end(), chunks.begin(), chunks.end());
  return out;
}

}  // namespace ww::triage
