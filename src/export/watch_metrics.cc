#include "export/watch_metrics.h"

#include <fmt/format.h>

#include <algorithm>

namespace ww::exporter {
namespace {

// Latency buckets in seconds: sampling 8 GPUs takes tens of microseconds; a
// stalled driver call hits the deadline (0.5 s); ticks slip by scheduler noise
// or worse.
std::vector<double> LatencyBuckets() {
  return {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5};
}

}  // namespace

WatchMetrics::WatchMetrics(WatchIdentity id)
    : id_(std::move(id)), sample_duration_(LatencyBuckets()), tick_lateness_(LatencyBuckets()) {}

void WatchMetrics::SetHostNames(const std::vector<std::string>& hosts) { hosts_ = hosts; }

std::string WatchMetrics::GpuHost(GpuKey key) const {
  if (hosts_.size() <= 1 && !id_.host.empty()) return id_.host;
  if (key.host < hosts_.size()) return hosts_[key.host];
  return id_.host;
}

void WatchMetrics::OnSample(const GpuSample& s) {
  Gpu& g = gpus_[s.key];
  g.power_w = s.power_w ? s.power_w : s.power_mean_w;
  if (s.util_gpu_pct) {
    g.util_ratio = std::clamp(*s.util_gpu_pct / 100.0, 0.0, 1.0);
  } else {
    g.util_ratio.reset();
  }
}

void WatchMetrics::OnLiveState(GpuKey key, GpuState state) { gpus_[key].state = state; }

void WatchMetrics::OnLabel(GpuKey key, int64_t timestamp_ms, GpuState state, double max_gap_s) {
  Gpu& g = gpus_[key];
  if (g.last_label_ms != INT64_MIN && timestamp_ms > g.last_label_ms) {
    const double dt_s = static_cast<double>(timestamp_ms - g.last_label_ms) / 1000.0;
    if (dt_s <= max_gap_s) g.seconds[static_cast<size_t>(state)] += dt_s;
  }
  g.last_label_ms = std::max(g.last_label_ms, timestamp_ms);
}

void WatchMetrics::SetHang(bool active, double hang_seconds, double wasted_gpu_seconds) {
  hang_active_ = active;
  hang_seconds_ = hang_seconds;
  // A counter never goes down, whatever the engine's bookkeeping does.
  wasted_gpu_seconds_ = std::max(wasted_gpu_seconds_, wasted_gpu_seconds);
}

std::string WatchMetrics::Render() const {
  using exposition::Labels;
  exposition::TextWriter w;
  const Labels self = {{"host", id_.host}, {"job_id", id_.job_id}};

  struct GpuLabels {
    std::string host, gpu;
  };
  std::vector<std::pair<const Gpu*, GpuLabels>> gpus;
  for (const auto& [key, g] : gpus_) gpus.push_back({&g, {GpuHost(key), std::to_string(key.gpu)}});

  w.Family("wattwatch_gpu_state", "gauge",
           "1 for the GPU's current state (idle, compute, communication, data_starved, checkpoint, "
           "hang), 0 for the others");
  for (const auto& [g, l] : gpus) {
    if (!g->state) continue;
    for (int s = 0; s < kNumGpuStates; ++s) {
      const auto st = static_cast<GpuState>(s);
      w.Sample("wattwatch_gpu_state",
               {{"host", l.host}, {"job_id", id_.job_id}, {"gpu", l.gpu}, {"state", StateName(st)}},
               *g->state == st ? 1 : 0);
    }
  }
  w.Family("wattwatch_gpu_power_watts", "gauge", "Board power of the last sample (~1 s average)");
  for (const auto& [g, l] : gpus) {
    if (g->power_w) {
      w.Sample("wattwatch_gpu_power_watts",
               {{"host", l.host}, {"job_id", id_.job_id}, {"gpu", l.gpu}}, *g->power_w);
    }
  }
  w.Family(
      "wattwatch_gpu_utilization_ratio", "gauge",
      "GPU utilization of the last sample, 0..1 (reads 1 while NCCL spins: not a health signal)");
  for (const auto& [g, l] : gpus) {
    if (g->util_ratio) {
      w.Sample("wattwatch_gpu_utilization_ratio",
               {{"host", l.host}, {"job_id", id_.job_id}, {"gpu", l.gpu}}, *g->util_ratio);
    }
  }
  w.Family("wattwatch_gpu_state_seconds_total", "counter",
           "Seconds each GPU spent in each state, from the final labels (a few seconds behind the "
           "live state; a hang is counted from when the job stopped)");
  for (const auto& [g, l] : gpus) {
    for (int s = 0; s < kNumGpuStates; ++s) {
      w.Sample("wattwatch_gpu_state_seconds_total",
               {{"host", l.host},
                {"job_id", id_.job_id},
                {"gpu", l.gpu},
                {"state", StateName(static_cast<GpuState>(s))}},
               g->seconds[static_cast<size_t>(s)]);
    }
  }
  w.Family("wattwatch_hang_active", "gauge",
           "1 while this watcher has confirmed a hang of the GPUs it sees");
  w.Sample("wattwatch_hang_active", self, hang_active_ ? 1 : 0);
  w.Family("wattwatch_hang_seconds", "gauge", "Seconds since the current hang began; 0 when none");
  w.Sample("wattwatch_hang_seconds", self, hang_seconds_);
  w.Family("wattwatch_wasted_gpu_seconds_total", "counter",
           "GPU-seconds spent in confirmed hangs (GPUs held by a stuck job)");
  w.Sample("wattwatch_wasted_gpu_seconds_total", self, wasted_gpu_seconds_);
  w.Family("wattwatch_sample_duration_seconds", "histogram",
           "Time to read one tick of every GPU from the source");
  sample_duration_.Write(w, "wattwatch_sample_duration_seconds", self);
  w.Family("wattwatch_tick_lateness_seconds", "histogram",
           "How late each sampling tick started against its schedule");
  tick_lateness_.Write(w, "wattwatch_tick_lateness_seconds", self);
  w.Family("wattwatch_samples_dropped_total", "counter",
           "GPU-samples not taken: stale or lost GPUs, failed reads, ticks skipped when behind");
  w.Sample("wattwatch_samples_dropped_total", self, static_cast<double>(dropped_));
  w.Family(
      "wattwatch_evidence_overdue_total", "counter",
      "Hang evidence steps abandoned at their overall cap; the hang was acted on without them");
  w.Sample("wattwatch_evidence_overdue_total", self, static_cast<double>(evidence_overdue_));
  w.Family("wattwatch_last_sample_timestamp_seconds", "gauge",
           "Unix time of the last successful sample");
  if (last_sample_unix_s_) {
    w.Sample("wattwatch_last_sample_timestamp_seconds", self, *last_sample_unix_s_);
  }
  w.Family("wattwatch_build_info", "gauge", "Always 1; the version in a label");
  w.Sample("wattwatch_build_info",
           {{"host", id_.host}, {"job_id", id_.job_id}, {"version", id_.version}}, 1);
  return w.Take();
}

void MetricsSnapshot::Publish(std::string metrics_text, std::string state_json, bool healthy) {
  auto m = std::make_shared<const std::string>(std::move(metrics_text));
  auto s = std::make_shared<const std::string>(std::move(state_json));
  std::lock_guard<std::mutex> lock(mu_);
  metrics_ = std::move(m);
  state_ = std::move(s);
  healthy_ = healthy;
}

std::shared_ptr<const std::string> MetricsSnapshot::metrics() const {
  std::lock_guard<std::mutex> lock(mu_);
  return metrics_;
}

std::shared_ptr<const std::string> MetricsSnapshot::state() const {
  std::lock_guard<std::mutex> lock(mu_);
  return state_;
}

bool MetricsSnapshot::healthy() const {
  std::lock_guard<std::mutex> lock(mu_);
  return healthy_;
}

}  // namespace ww::exporter
