#include "fleet/fleet_render.h"

#include <fmt/format.h>

#include "core/timefmt.h"

namespace ww::fleet {

using nlohmann::json;

std::string RenderFleetMetrics(const JobTable& table, const FleetSelfStats& self) {
  exposition::TextWriter w;
  const auto& jobs = table.jobs();
  w.Family("wattwatch_job_gpus", "gauge", "GPUs of the job in each state (fresh samples only)");
  for (const auto& [id, job] : jobs) {
    const auto counts = job->StateCounts();
    for (size_t i = 0; i < counts.size(); ++i) {
      w.Sample("wattwatch_job_gpus", {{"job", id}, {"state", kGpuStateNames[i]}}, counts[i]);
    }
  }
  w.Family("wattwatch_job_hang_active", "gauge", "1 while the job's hang is confirmed");
  for (const auto& [id, job] : jobs) {
    w.Sample("wattwatch_job_hang_active", {{"job", id}}, job->engine().hang_active() ? 1 : 0);
  }
  w.Family("wattwatch_job_hang_seconds", "gauge",
           "seconds since the job's current hang began (0 without one)");
  for (const auto& [id, job] : jobs) {
    const triage::HangEpisode* h = job->engine().active_hang();
    w.Sample("wattwatch_job_hang_seconds", {{"job", id}},
             h ? static_cast<double>(job->last_sample_ms() - h->start_ms) / 1000.0 : 0.0);
  }
  w.Family("wattwatch_job_wasted_gpu_seconds_total", "counter",
           "GPU-seconds of the job in confirmed hangs");
  for (const auto& [id, job] : jobs) {
    w.Sample("wattwatch_job_wasted_gpu_seconds_total", {{"job", id}},
             job->engine().wasted_gpu_hours() * 3600.0);
  }
  w.Family("wattwatch_job_comm_share", "gauge",
           "communication / (compute + communication) of the job so far");
  for (const auto& [id, job] : jobs) {
    if (auto s = job->CommShare()) w.Sample("wattwatch_job_comm_share", {{"job", id}}, *s);
  }
  w.Family("wattwatch_job_straggler_slowdown", "gauge",
           "a rank the others wait for in every step: its compute time per step over the median "
           "rank's (throttle: the clock-event reason when its clocks show one)");
  for (const auto& [id, job] : jobs) {
    for (const triage::Straggler& s : job->engine().stragglers()) {
      w.Sample("wattwatch_job_straggler_slowdown",
               {{"job", id}, {"gpu", job->GpuName(s.key)}, {"throttle", s.throttle}}, s.slowdown);
    }
  }
  w.Family("wattwatch_job_hang_culprit", "gauge",
           "1 for each GPU the job's current hang is blamed on");
  for (const auto& [id, job] : jobs) {
    if (const triage::HangEpisode* h = job->engine().active_hang()) {
      for (GpuKey k : h->culprits) {
        const std::string gpu = job->GpuName(k);
        w.Sample("wattwatch_job_hang_culprit", {{"job", id}, {"gpu", gpu}}, 1);
      }
    }
  }
  w.Family("wattwatch_job_last_sample_timestamp_seconds", "gauge",
           "time of the job's newest sample read");
  for (const auto& [id, job] : jobs) {
    w.Sample("wattwatch_job_last_sample_timestamp_seconds", {{"job", id}},
             static_cast<double>(job->last_sample_ms()) / 1000.0);
  }

  w.Family("wattwatch_fleet_jobs_tracked", "gauge", "open jobs judged by this replica");
  w.Sample("wattwatch_fleet_jobs_tracked", {}, static_cast<double>(jobs.size()));
  w.Family("wattwatch_fleet_jobs_closed_total", "counter", "jobs closed (no samples any more)");
  w.Sample("wattwatch_fleet_jobs_closed_total", {}, static_cast<double>(table.jobs_closed_total()));
  w.Family("wattwatch_fleet_other_shard_jobs", "gauge",
           "jobs seen in the last cycle that other replicas judge");
  w.Sample("wattwatch_fleet_other_shard_jobs", {}, static_cast<double>(table.other_shard_jobs()));
  w.Family("wattwatch_fleet_unattributed_gpus", "gauge",
           "GPUs in the last cycle without the job label(s)");
  w.Sample("wattwatch_fleet_unattributed_gpus", {}, static_cast<double>(table.unattributed_gpus()));
  w.Family("wattwatch_fleet_cycles_total", "counter", "cycles run");
  w.Sample("wattwatch_fleet_cycles_total", {}, static_cast<double>(self.cycles));
  w.Family("wattwatch_fleet_query_requests_total", "counter", "HTTP requests to Prometheus");
  w.Sample("wattwatch_fleet_query_requests_total", {}, static_cast<double>(self.query_requests));
  w.Family("wattwatch_fleet_query_errors_total", "counter",
           "queries that failed after every retry (their range is read again next cycle)");
  w.Sample("wattwatch_fleet_query_errors_total", {}, static_cast<double>(self.query_errors));
  w.Family("wattwatch_fleet_query_retries_total", "counter", "query attempts retried");
  w.Sample("wattwatch_fleet_query_retries_total", {}, static_cast<double>(self.query_retries));
  w.Family("wattwatch_fleet_partial_responses_total", "counter",
           "answers Prometheus marked with a warning (partial data)");
  w.Sample("wattwatch_fleet_partial_responses_total", {},
           static_cast<double>(self.partial_responses));
  w.Family("wattwatch_fleet_prometheus_up", "gauge", "1 when the last cycle's queries answered");
  w.Sample("wattwatch_fleet_prometheus_up", {}, self.prometheus_up ? 1 : 0);
  w.Family("wattwatch_fleet_last_success_timestamp_seconds", "gauge",
           "wall time of the last cycle whose queries all answered (0: never)");
  w.Sample("wattwatch_fleet_last_success_timestamp_seconds", {},
           static_cast<double>(self.last_success_unix_ms) / 1000.0);
  w.Family("wattwatch_fleet_data_behind_seconds", "gauge",
           "how far the data read lags the wall clock (grows while Prometheus is out)");
  w.Sample("wattwatch_fleet_data_behind_seconds", {},
           self.covered_until_ms > 0
               ? static_cast<double>(self.now_unix_ms - self.covered_until_ms) / 1000.0
               : 0.0);
  w.Family("wattwatch_fleet_gap_seconds_total", "counter",
           "seconds of data never read: outages longer than --lookback-s");
  w.Sample("wattwatch_fleet_gap_seconds_total", {}, static_cast<double>(self.gap_seconds));
  w.Family("wattwatch_fleet_cycles_failed_total", "counter",
           "cycles that could not read their range (read again next cycle)");
  w.Sample("wattwatch_fleet_cycles_failed_total", {}, static_cast<double>(self.cycles_failed));
  w.Family("wattwatch_fleet_unusable_answers_total", "counter",
           "answers that came but could not be used (no usable sample, a vector, too many hosts)");
  w.Sample("wattwatch_fleet_unusable_answers_total", {},
           static_cast<double>(self.unusable_answers));
  w.Family("wattwatch_fleet_answer_warnings_total", "counter",
           "kinds of documented skips in answers that were used (logged)");
  w.Sample("wattwatch_fleet_answer_warnings_total", {}, static_cast<double>(self.answer_warnings));
  w.Family("wattwatch_fleet_samples_out_of_range_total", "counter",
           "GPU-samples stamped outside the range asked for: dropped");
  w.Sample("wattwatch_fleet_samples_out_of_range_total", {},
           static_cast<double>(self.samples_out_of_range));
  w.Family("wattwatch_fleet_hosts_listed", "gauge",
           "hosts with DCGM samples in the last cycle's range (read in pages)");
  w.Sample("wattwatch_fleet_hosts_listed", {}, static_cast<double>(self.hosts_listed));
  w.Family("wattwatch_fleet_query_pages_total", "counter",
           "page requests answered (at most 500 hosts each)");
  w.Sample("wattwatch_fleet_query_pages_total", {}, static_cast<double>(self.query_pages));
  w.Family("wattwatch_fleet_samples_read_total", "counter", "GPU-samples read from Prometheus");
  w.Sample("wattwatch_fleet_samples_read_total", {}, static_cast<double>(self.samples_read));
  w.Family("wattwatch_fleet_samples_unattributed_total", "counter",
           "GPU-samples without the job label(s)");
  w.Sample("wattwatch_fleet_samples_unattributed_total", {},
           static_cast<double>(self.samples_unattributed));
  w.Family("wattwatch_fleet_scrape_interval_seconds", "gauge",
           "median spacing of a GPU's samples as read (0: not known yet)");
  w.Sample("wattwatch_fleet_scrape_interval_seconds", {},
           static_cast<double>(self.scrape_interval_ms) / 1000.0);
  w.Family("wattwatch_fleet_query_duration_seconds", "histogram",
           "wall time of one Prometheus request (with retries' waits excluded)");
  self.query_seconds.Write(w, "wattwatch_fleet_query_duration_seconds", {});
  w.Family("wattwatch_fleet_evaluation_duration_seconds", "histogram",
           "CPU time of one cycle's decoding and triage");
  self.evaluation_seconds.Write(w, "wattwatch_fleet_evaluation_duration_seconds", {});
  const std::string shard = fmt::format("{}", self.shard.index);
  const std::string shards = fmt::format("{}", self.shard.count);
  w.Family("wattwatch_fleet_shard_info", "gauge", "this replica's shard K of N");
  w.Sample("wattwatch_fleet_shard_info", {{"shard", shard}, {"shards", shards}}, 1);
  w.Family("wattwatch_build_info", "gauge", "1");
  w.Sample("wattwatch_build_info", {{"version", self.version}}, 1);
  return w.Take();
}

json FleetJobsJson(const JobTable& table, const FleetSelfStats& self) {
  json j;
  j["shard"] = fmt::format("{}/{}", self.shard.index, self.shard.count);
  j["job_label"] = self.job_label;
  json jobs = json::array();
  for (const auto& [id, job] : table.jobs()) jobs.push_back(job->ToJson(false));
  j["jobs"] = jobs;
  j["closed"] = json::array();
  for (const auto& c : table.closed()) j["closed"].push_back(c);
  j["unattributed_gpus"] = table.unattributed_gpus();
  j["other_shard_jobs"] = table.other_shard_jobs();
  j["prometheus"] = {
      {"url", self.prometheus_url},
      {"up", self.prometheus_up},
      {"scrape_interval_s", static_cast<double>(self.scrape_interval_ms) / 1000.0},
      {"last_success", self.last_success_unix_ms > 0
                           ? json(FormatIsoMs(self.last_success_unix_ms, true))
                           : json(nullptr)},
      {"data_until",
       self.covered_until_ms > 0 ? json(FormatIsoMs(self.covered_until_ms, true)) : json(nullptr)},
      {"query_errors", self.query_errors},
      {"unusable_answers", self.unusable_answers},
      {"cycles_failed", self.cycles_failed},
      {"samples_out_of_range", self.samples_out_of_range},
      {"last_error", self.last_error.empty() ? json(nullptr) : json(self.last_error)}};
  return j;
}

}  // namespace ww::fleet
