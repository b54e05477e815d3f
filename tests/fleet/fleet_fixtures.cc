#include "fleet/fleet_fixtures.h"

#include <algorithm>
#include <stdexcept>

namespace ww::fleet::fixture {

void Store::AddJob(const std::string& scenario, const std::vector<std::string>& hosts,
                   const std::string& job, int64_t interval_ms,
                   std::vector<std::pair<int, int>> unlabeled, int64_t shift_ms) {
  sim::ScenarioOptions so;
  so.hosts = static_cast<int>(hosts.size());
  so.gpus_per_host = 4;
  so.interval_ms = interval_ms;
  auto config = sim::MakeScenario(scenario, so);
  if (!config.ok()) throw std::runtime_error(config.status().message());
  sim::Simulator simulator(*config);
  const size_t base = gpus_.size();
  for (size_t h = 0; h < hosts.size(); ++h) {
    for (int g = 0; g < 4; ++g) {
      StoredGpu s;
      s.host = hosts[h];
      s.gpu = static_cast<uint16_t>(g);
      s.labels["hostname"] = hosts[h];
      const bool labeled =
          std::find(unlabeled.begin(), unlabeled.end(),
                    std::pair<int, int>{static_cast<int>(h), g}) == unlabeled.end();
      if (labeled) s.labels["hpc_job"] = job;
      s.model = config->model.name;
      gpus_.push_back(s);
      samples_.emplace_back();
    }
  }
  std::vector<GpuSample> tick;
  std::vector<sim::TruthLabel> truth;
  while (simulator.NextTick(&tick, &truth)) {
    for (GpuSample s : tick) {
      // Prometheus stamps a scrape with one time for the whole target.
      s.timestamp_ms = (s.timestamp_ms + shift_ms) / interval_ms * interval_ms;
      samples_[base + s.key.host * 4 + s.key.gpu].push_back(s);
    }
    tick.clear();
  }
}

FleetBatch Store::Between(int64_t start_ms, int64_t end_ms) const {
  FleetBatch b;
  std::map<std::string, uint16_t> host_index;
  std::vector<std::pair<int64_t, GpuSample>> all;
  for (size_t i = 0; i < gpus_.size(); ++i) {
    const StoredGpu& g = gpus_[i];
    bool any = false;
    uint16_t h = 0;
    for (const GpuSample& s : samples_[i]) {
      if (s.timestamp_ms < start_ms || s.timestamp_ms > end_ms) continue;
      if (!any) {
        auto [it, inserted] = host_index.try_emplace(g.host, static_cast<uint16_t>(b.hosts.size()));
        if (inserted) b.hosts.push_back(g.host);
        h = it->second;
        b.labels.push_back(GpuLabels{GpuKey{h, g.gpu}, g.labels});
        b.infos.push_back(GpuInfo{GpuKey{h, g.gpu}, g.model, "", ""});
        b.series += 5;
        any = true;
      }
      GpuSample c = s;
      c.key = GpuKey{h, g.gpu};
      all.emplace_back(c.timestamp_ms, c);
    }
  }
  std::stable_sort(all.begin(), all.end(),
                   [](const auto& a, const auto& c) { return a.first < c.first; });
  for (auto& [t, s] : all) b.samples.push_back(s);
  return b;
}

int64_t Store::first_ms() const {
  int64_t t = INT64_MAX;
  for (const auto& v : samples_) {
    if (!v.empty()) t = std::min(t, v.front().timestamp_ms);
  }
  return t;
}

int64_t Store::last_ms() const {
  int64_t t = INT64_MIN;
  for (const auto& v : samples_) {
    if (!v.empty()) t = std::max(t, v.back().timestamp_ms);
  }
  return t;
}

Result<FleetBatch> FakeQuery::Samples(int64_t start_ms, int64_t end_ms) {
  const int request = static_cast<int>(ranges.size());
  ranges.emplace_back(start_ms, end_ms);
  if (fail) {
    if (Status st = fail(request); !st.ok()) return st;
  }
  FleetBatch b = store_->Between(start_ms, end_ms);
  b.spacing_ms = 1000;
  return b;
}

}  // namespace ww::fleet::fixture
