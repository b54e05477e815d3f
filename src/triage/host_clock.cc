#include "triage/host_clock.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>

namespace ww::triage {
namespace {

// One host's moments: times at which most of its GPUs changed the same way together.
struct Moment {
  int64_t t_ms;
  bool working;
};

std::vector<Moment> HostMoments(const std::vector<WorkTransition>& tr, int gpus,
                                const TriageOptions& o) {
  std::vector<Moment> out;
  const int need = std::max(1, static_cast<int>(std::ceil(o.host_moment_gpu_share * gpus)));
  const int64_t window_ms = static_cast<int64_t>(o.host_moment_window_s * 1000);
  for (bool working : {false, true}) {
    std::vector<const WorkTransition*> same;
    for (const auto& t : tr) {
      if (t.working == working) same.push_back(&t);
    }
    size_t i = 0;
    while (i < same.size()) {
      // The GPUs that change within the window from this transition on.
      std::vector<uint16_t> seen;
      std::vector<int64_t> times;
      size_t j = i;
      for (; j < same.size() && same[j]->t_ms - same[i]->t_ms <= window_ms; ++j) {
        if (std::find(seen.begin(), seen.end(), same[j]->gpu) == seen.end()) {
          seen.push_back(same[j]->gpu);
          times.push_back(same[j]->t_ms);
        }
      }
      if (static_cast<int>(seen.size()) >= need) {
        std::nth_element(times.begin(), times.begin() + times.size() / 2, times.end());
        out.push_back({times[times.size() / 2], working});
        i = j;  // a moment is counted once
      } else {
        ++i;
      }
    }
  }
  return out;
}

}  // namespace

std::vector<HostSkew> EstimateHostSkews(const std::vector<std::vector<WorkTransition>>& transitions,
                                        const std::vector<int>& gpus_per_host,
                                        const TriageOptions& o) {
  std::vector<HostSkew> out;
  if (transitions.empty()) return out;
  const std::vector<Moment> ref = HostMoments(transitions[0], gpus_per_host[0], o);
  const int64_t max_ms = static_cast<int64_t>(o.max_host_skew_s * 1000);
  const double agree_ms = o.skew_agree_s * 1000;
  for (size_t h = 1; h < transitions.size(); ++h) {
    const std::vector<Moment> mine = HostMoments(transitions[h], gpus_per_host[h], o);
    std::vector<double> diffs;
    for (const Moment& m : mine) {
      const Moment* best = nullptr;
      for (const Moment& r : ref) {
        if (r.working != m.working || std::abs(r.t_ms - m.t_ms) > max_ms) continue;
        if (!best || std::abs(r.t_ms - m.t_ms) < std::abs(best->t_ms - m.t_ms)) best = &r;
      }
      if (best) diffs.push_back(static_cast<double>(m.t_ms - best->t_ms));
    }
    if (diffs.empty()) continue;
    std::sort(diffs.begin(), diffs.end());
    const double median = diffs[diffs.size() / 2];
    int agree = 0;
    double sum = 0;
    for (double d : diffs) {
      if (std::abs(d - median) <= agree_ms) {
        ++agree;
        sum += d;
      }
    }
    if (agree < o.min_skew_matches) continue;
    out.push_back({static_cast<uint16_t>(h), sum / agree / 1000.0, agree});
  }
  return out;
}

Result<std::pair<std::string, double>> ParseHostOffset(const std::string& spec) {
  const size_t eq = spec.rfind('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size()) {
    return Status::InvalidInput(
        fmt::format("--host-offset '{}': expected HOST=SECONDS (e.g. node1=-30)", spec));
  }
  const std::string host = spec.substr(0, eq);
  const char* b = spec.data() + eq + 1;
  const char* e = spec.data() + spec.size();
  double s = 0;
  auto [ptr, ec] = std::from_chars(b, e, s);
  if (ec != std::errc() || ptr != e || !std::isfinite(s) || std::abs(s) > 86400 * 7) {
    return Status::InvalidInput(
        fmt::format("--host-offset '{}': '{}' is not a number of seconds (at most a week)", spec,
                    std::string(b, e)));
  }
  return std::make_pair(host, s);
}

HostOffsetSource::HostOffsetSource(TelemetrySource* inner, std::vector<int64_t> offset_ms)
    : inner_(inner), offset_ms_(std::move(offset_ms)) {
  for (int64_t o : offset_ms_) min_offset_ms_ = std::min(min_offset_ms_, o);
}

Result<std::unique_ptr<HostOffsetSource>> HostOffsetSource::Create(
    TelemetrySource* inner, const std::map<std::string, double>& offsets_s) {
  const std::vector<std::string>& hosts = inner->hosts();
  std::vector<int64_t> offset_ms(hosts.size(), 0);
  for (const auto& [name, s] : offsets_s) {
    auto it = std::find(hosts.begin(), hosts.end(), name);
    if (it == hosts.end()) {
      std::string known;
      for (const auto& h : hosts) known += (known.empty() ? "" : ", ") + h;
      return Status::InvalidInput(
          fmt::format("--host-offset {}: no such host (hosts: {})", name, known));
    }
    offset_ms[static_cast<size_t>(it - hosts.begin())] = std::llround(s * 1000);
  }
  return std::unique_ptr<HostOffsetSource>(new HostOffsetSource(inner, std::move(offset_ms)));
}

Status HostOffsetSource::Next(std::vector<GpuSample>* out) {
  // Everything the inner source gives later is at or after its latest time plus the smallest
  // offset: what lies before that can go out in order.
  for (;;) {
    int64_t watermark = INT64_MAX;
    if (!inner_done_) {
      std::vector<GpuSample> batch;
      WW_RETURN_IF_ERROR(inner_->Next(&batch));
      if (batch.empty()) {
        inner_done_ = true;
      } else {
        for (GpuSample& s : batch) {
          const int64_t o = s.key.host < offset_ms_.size() ? offset_ms_[s.key.host] : 0;
          s.timestamp_ms += o;
          heap_.push({s.timestamp_ms, seq_++, s});
          watermark = std::min(watermark, s.timestamp_ms - o + min_offset_ms_);
        }
      }
    }
    while (!heap_.empty() && (inner_done_ || heap_.top().t_ms <= watermark)) {
      out->push_back(heap_.top().sample);
      heap_.pop();
    }
    if (!out->empty() || (inner_done_ && heap_.empty())) return Status::Ok();
  }
}

}  // namespace ww::triage
