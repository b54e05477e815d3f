// WatchMetrics: what `wattwatch watch` exports on /metrics, kept by the watcher thread and rendered
// to the Prometheus text format once per tick. The HTTP threads only serve the last rendering
// (MetricsSnapshot), so a scrape never waits on sampling and sampling never waits on a scrape.
//
// Every series carries host= and, when set, job_id=. GPU series name the GPU's own host (a replay
// of several hosts' logs in one watcher exports each host's GPUs under their host).
//
// Ownership: WatchMetrics is owned by the watcher; MetricsSnapshot is shared with the server.
// Thread-safety: WatchMetrics is used by one thread; MetricsSnapshot is safe for any threads.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/sample.h"
#include "core/state.h"
#include "export/prom_text.h"

namespace ww::exporter {

struct WatchIdentity {
  std::string host;    // this watcher's host label
  std::string job_id;  // empty: no job_id label
  std::string version;
};

class WatchMetrics {
 public:
  explicit WatchMetrics(WatchIdentity id);

  // Host names by GpuKey::host (from the source). With one host, the identity's host wins.
  void SetHostNames(const std::vector<std::string>& hosts);
  // Latest readings of a GPU; absent fields leave the series out (never exported as 0).
  void OnSample(const GpuSample& s);
  void OnLiveState(GpuKey key, GpuState state);
  // A final label: adds the time since the GPU's previous label to that state's counter (gaps
  // longer than max_gap_s count nothing: no data is not a state).
  void OnLabel(GpuKey key, int64_t timestamp_ms, GpuState state, double max_gap_s = 10);
  void SetHang(bool active, double hang_seconds, double wasted_gpu_seconds);
  void ObserveSampleDuration(double seconds) { sample_duration_.Observe(seconds); }
  void ObserveTickLateness(double seconds) { tick_lateness_.Observe(seconds); }
  void AddDropped(uint64_t n) { dropped_ += n; }
  // A hang acted on without its evidence: the step passed its overall cap (EvidenceOptions).
  void AddEvidenceOverdue() { ++evidence_overdue_; }
  void SetLastSampleUnixS(double t) { last_sample_unix_s_ = t; }

  std::string Render() const;
  const exposition::Histogram& tick_lateness() const { return tick_lateness_; }

 private:
  struct Gpu {
    std::optional<GpuState> state;
    std::optional<double> power_w;
    std::optional<double> util_ratio;
    std::array<double, kNumGpuStates> seconds{};
    int64_t last_label_ms = INT64_MIN;
  };
  std::string GpuHost(GpuKey key) const;

  WatchIdentity id_;
  std::vector<std::string> hosts_;
  std::map<GpuKey, Gpu> gpus_;
  bool hang_active_ = false;
  double hang_seconds_ = 0;
  double wasted_gpu_seconds_ = 0;
  exposition::Histogram sample_duration_;
  exposition::Histogram tick_lateness_;
  uint64_t dropped_ = 0;
  uint64_t evidence_overdue_ = 0;
  std::optional<double> last_sample_unix_s_;
};

// The last rendered exposition and state document, swapped in whole by the watcher thread.
class MetricsSnapshot {
 public:
  void Publish(std::string metrics_text, std::string state_json, bool healthy);
  std::shared_ptr<const std::string> metrics() const;
  std::shared_ptr<const std::string> state() const;
  bool healthy() const;

 private:
  mutable std::mutex mu_;
  std::shared_ptr<const std::string> metrics_ = std::make_shared<const std::string>();
  std::shared_ptr<const std::string> state_ = std::make_shared<const std::string>("{}");
  bool healthy_ = false;
};

}  // namespace ww::exporter
