#include "triage/stragglers.h"

#include <algorithm>
#include <map>

namespace ww::triage {
namespace {

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

std::vector<Straggler> FindStragglers(const std::vector<RankTiming>& chunks,
                                      const StragglerOptions& o) {
  std::vector<Straggler> out;
  // By chunk, then by GPU.
  std::map<int64_t, std::vector<const RankTiming*>> by_chunk;
  std::map<GpuKey, RankTiming> total;
  for (const RankTiming& r : chunks) {
    by_chunk[r.chunk].push_back(&r);
    RankTiming& t = total[r.key];
    t.key = r.key;
    t.compute_s += r.compute_s;
    t.wait_s += r.wait_s;
    t.samples += r.samples;
    t.power_capped += r.power_capped;
    t.thermal += r.thermal;
  }
  if (static_cast<int>(total.size()) < o.min_ranks) return out;
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
  std::vector<double> capped, thermal;
  for (const auto& [k, t] : total) {
    const double n = static_cast<double>(std::max<int64_t>(1, t.samples));
    capped.push_back(static_cast<double>(t.power_capped) / n);
    thermal.push_back(static_cast<double>(t.thermal) / n);
  }
  const double med_capped = Median(capped);
  const double med_thermal = Median(thermal);
  for (const auto& [k, n] : slow_chunks) {
    if (n < o.min_slow_chunk_share * counted) continue;
    Straggler s;
    s.key = k;
    s.slowdown = median_compute_in[k] > 0 ? compute_in[k] / median_compute_in[k] : 1;
    const RankTiming& t = total[k];
    const double samples = static_cast<double>(std::max<int64_t>(1, t.samples));
    auto shows = [&](int64_t count, double median) {
      const double share = static_cast<double>(count) / samples;
      return share >= o.throttle_min_share && share >= 2 * median;
    };
    if (shows(t.power_capped, med_capped)) {
      s.throttle = "power cap (clock event sw_power_cap / hw_power_brake)";
    } else if (shows(t.thermal, med_thermal)) {
      s.throttle = "thermal slowdown (clock event sw/hw_thermal_slowdown)";
    }
    out.push_back(s);
  }
  return out;  // in key order (a std::map's)
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

void StragglerTracker::AddTraining(GpuKey key, int64_t t_ms, double compute_s, double wait_s) {
  if (compute_s + wait_s > options_.max_sample_s) return;
  RankTiming& r = At(key, t_ms);
  r.compute_s += compute_s;
  r.wait_s += wait_s;
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
