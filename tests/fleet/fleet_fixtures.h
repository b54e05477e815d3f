// Test fixtures for src/fleet: simulated jobs as Prometheus would hold them (samples with host
// names and dcgm-exporter labels), and a FleetQuery over them that can be told to fail.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/status.h"
#include "fleet/fleet_query.h"
#include "telemetry/sim/simulator.h"

namespace ww::fleet::fixture {

struct StoredGpu {
  std::string host;
  uint16_t gpu = 0;
  std::map<std::string, std::string> labels;
  std::string model;
};

// Every sample of a few simulated jobs, by GPU, in time order.
class Store {
 public:
  // Adds `scenario` on hosts named `hosts` (one per simulated host), 4 GPUs each, sampled every
  // interval_ms, with hpc_job=job on every GPU but those listed in unlabeled (host index, gpu).
  void AddJob(const std::string& scenario, const std::vector<std::string>& hosts,
              const std::string& job, int64_t interval_ms = 1000,
              std::vector<std::pair<int, int>> unlabeled = {}, int64_t shift_ms = 0);
  // The samples stamped in [start_ms, end_ms], as one FleetBatch (hosts numbered for it alone).
  FleetBatch Between(int64_t start_ms, int64_t end_ms) const;
  int64_t first_ms() const;
  int64_t last_ms() const;

 private:
  std::vector<StoredGpu> gpus_;
  std::vector<std::vector<GpuSample>> samples_;  // by gpus_ index
};

// A FleetQuery over a Store; `fail` decides per request (its index) whether it fails and how.
class FakeQuery final : public FleetQuery {
 public:
  explicit FakeQuery(const Store* store) : store_(store) {}
  Result<FleetBatch> Samples(int64_t start_ms, int64_t end_ms) override;
  const std::string& url() const override { return url_; }
  void KeepLabels(const std::vector<std::string>& names) override { kept = names; }

  std::function<Status(int request)> fail;
  std::vector<std::string> kept;                    // what the service asked to keep
  std::vector<std::pair<int64_t, int64_t>> ranges;  // every request, answered or not

 private:
  const Store* store_;
  std::string url_ = "http://fake-prometheus:9090";
};

}  // namespace ww::fleet::fixture
