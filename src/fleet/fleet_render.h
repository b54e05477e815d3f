// What the fleet service shows: /metrics (Prometheus text 0.0.4, through exposition::TextWriter)
// and /jobs (JSON), rendered from the job table and the service's own figures once per cycle.
// Pure: inputs in, text out, so both are tested without a loop or a network.
//
// Per job (label job=): wattwatch_job_gpus{state}, wattwatch_job_hang_active,
// wattwatch_job_hang_seconds, wattwatch_job_wasted_gpu_seconds_total, wattwatch_job_comm_share
// (absent before any training time), wattwatch_job_straggler_slowdown{gpu,throttle} (ranks the
// others wait for in every step), wattwatch_job_hang_culprit{gpu} (the ranks a hang is blamed
// on), wattwatch_job_last_sample_timestamp_seconds. Self-metrics: wattwatch_fleet_*.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "export/prom_text.h"
#include "fleet/job_table.h"

namespace ww::fleet {

// The service's figures about itself (house rule 5).
struct FleetSelfStats {
  std::string version;
  std::string prometheus_url;
  std::string job_label;  // as given: "hpc_job", "namespace,pod"
  Shard shard;
  int64_t scrape_interval_ms = 0;    // seen in the samples; 0: not known yet
  bool prometheus_up = false;        // the last cycle's queries all answered
  int64_t last_success_unix_ms = 0;  // 0: never
  int64_t covered_until_ms = 0;      // data read up to here; 0: nothing yet
  int64_t now_unix_ms = 0;           // at rendering
  uint64_t cycles = 0;
  uint64_t query_requests = 0;
  uint64_t query_errors = 0;  // requests that failed after every retry
  uint64_t query_retries = 0;
  uint64_t partial_responses = 0;  // answers with a Prometheus warning (partial data)
  uint64_t samples_read = 0;       // GPU-samples decoded
  uint64_t samples_unattributed = 0;
  uint64_t gap_seconds = 0;           // data never read: an outage longer than --lookback-s
  uint64_t cycles_failed = 0;         // cycles with a range not read (an error, not "no hangs")
  uint64_t unusable_answers = 0;      // answers that came but could not be used (fleet_query.h)
  uint64_t answer_warnings = 0;       // documented skips in answers that were used
  uint64_t samples_out_of_range = 0;  // stamped outside the range asked for: dropped
  int64_t hosts_listed = 0;           // hosts in the last cycle's listing
  uint64_t query_pages = 0;           // page requests answered
  std::string last_error;
  exposition::Histogram query_seconds{{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}};
  exposition::Histogram evaluation_seconds{{0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10}};
};

std::string RenderFleetMetrics(const JobTable& table, const FleetSelfStats& self);
// /jobs: {"jobs": [...open...], "closed": [...], "unattributed_gpus", "shard", "prometheus"}.
nlohmann::json FleetJobsJson(const JobTable& table, const FleetSelfStats& self);

}  // namespace ww::fleet
