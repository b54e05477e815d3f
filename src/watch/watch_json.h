// The watcher's JSON views: the hang events (and the webhook body), the /state document and the
// end-of-watch summary. Pure: inputs in, JSON out, so the documents are tested without a loop.
//
// Every GPU is named the one way wattwatch names GPUs for people: ww::GpuLabel, "node0/GPU3".
#pragma once

#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/sample.h"
#include "core/state.h"
#include "export/watch_metrics.h"
#include "triage/engine.h"
#include "watch/hang_policy.h"

namespace ww::watch {

// GPU `key` of a source whose hosts are `hosts`. A watcher of one host names it by its --host
// identity (what its metrics carry) when it has one.
std::string WatchGpuLabel(const std::vector<std::string>& hosts, const std::string& identity_host,
                          GpuKey key);

using GpuNamer = std::function<std::string(GpuKey)>;

// hang_confirmed / hang_ended (and /state's "hang", without "event").
nlohmann::json HangEventJson(const triage::HangEpisode& e, const char* event,
                             const exporter::WatchIdentity& identity, const GpuNamer& name);

struct WatchSummary {
  int64_t ticks = 0;
  int64_t samples = 0;
  uint64_t samples_dropped = 0;
  std::vector<triage::HangEpisode> hangs;
  bool killed_for_hang = false;
  std::optional<int> child_exit_code;
  double tick_lateness_p50_ms = 0, tick_lateness_p99_ms = 0, tick_lateness_max_ms = 0;
  std::string listen_address;
  nlohmann::json ToJson(const std::vector<std::string>& hosts) const;
};

// What /state shows, as of the last tick.
struct StateView {
  exporter::WatchIdentity identity;
  std::string source_label;
  bool source_ended = false;
  int64_t last_tick_ms = INT64_MIN;  // INT64_MIN: no tick yet
  const triage::HangEpisode* hang = nullptr;
  std::optional<int64_t> candidate_start_ms;
  HangDecision decision;
  std::vector<std::pair<GpuKey, std::optional<GpuState>>> gpus;
  std::vector<ProbeState> probes;
  double wasted_gpu_hours = 0;
};

nlohmann::json StateJson(const StateView& view, const GpuNamer& name);

}  // namespace ww::watch
