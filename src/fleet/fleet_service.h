// FleetService: `wattwatch fleet`. Every --interval-s it reads the samples new since the last
// cycle for ALL GPUs at once from Prometheus (FleetQuery), feeds the job table (one triage engine
// per job), closes the jobs that went silent, sends hang confirmations to the events file, the
// webhook and the hook (watch's EventWriter and ActionRunner), and swaps in a new /metrics and
// /jobs rendering (export's MetricsServer).
//
// Prometheus slow, down or partial: each request is retried (--retries, backoff doubling from
// --retry-backoff-s); a range that still fails is read again next cycle (the data is not lost
// while Prometheus keeps it), so an outage is missing data: verdicts hold, no job is closed, and
// wattwatch_fleet_query_errors_total / _prometheus_up / _data_behind_seconds say so. An outage
// longer than --lookback-s skips the oldest part (wattwatch_fleet_gap_seconds_total).
//
// An answer that came but cannot be used (FleetQuery's IoError) is a failed cycle too, counted
// in wattwatch_fleet_unusable_answers_total and logged, never a quiet success. Samples stamped
// outside the range asked for (a clock 50 years ahead) are dropped, counted and logged.
//
// Replay (--start/--end): the same cycles over stored data as fast as Prometheus answers, on a
// manual clock (backtests and bench/fleet_scale.sh). A replay with failed cycles exits 2 saying
// how many: its report would otherwise read "no hangs" for data never judged.
//
// Ownership: the service borrows the query and the clock. Thread-safety: Run on one thread; the
// HTTP server and the writers run their own.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/status.h"
#include "export/event_writer.h"
#include "export/http_server.h"
#include "export/watch_metrics.h"
#include "fleet/fleet_query.h"
#include "fleet/fleet_render.h"
#include "fleet/job_table.h"
#include "telemetry/ingest/prom_client.h"
#include "triage/options.h"
#include "watch/actions.h"
#include "watch/service_start.h"

namespace ww::fleet {

struct FleetOptions {
  std::string prometheus_url;
  ingest::PromHttpOptions http{{}, 20000};
  std::string selector;  // extra matchers for every query, "{cluster=\"a\"}"
  // Whose exporter stored the series (ingest::kPromVendors): nvidia (dcgm-exporter), amd
  // (device-metrics-exporter), gaudi (habanalabs_*).
  std::string vendor = "nvidia";
  std::string job_label = "hpc_job";
  double interval_s = 30;
  double lookback_s = 900;  // the first cycle's range, and the most an outage is caught up
  std::string shard = "0/1";
  double close_after_s = 600;  // a job without samples this long is closed with its summary
  int retries = 3;
  double retry_backoff_s = 1;
  std::string listen = "127.0.0.1:9401";  // "none": no endpoint
  std::string jobs_token;  // --jobs-token-file: /jobs needs "Authorization: Bearer <token>"
  std::string ready_file;
  std::string events_path;
  watch::ActionConfig actions;
  triage::TriageOptions triage;
  std::optional<int64_t> replay_start_ms;  // --start/--end: replay stored data
  std::optional<int64_t> replay_end_ms;
  bool once = false;  // one cycle, then exit
  bool json = false;  // a JSON summary on stdout at exit
  std::string version;
};

// One cycle's figures (the bench's columns).
struct CycleReport {
  int64_t start_ms = 0, end_ms = 0;  // the range read (with the overlap)
  int requests = 0;
  bool ok = true;
  double wall_s = 0;          // the whole cycle
  double server_s = 0;        // waiting for Prometheus
  double decode_cpu_s = 0;    // the answers decoded into samples
  double evaluate_cpu_s = 0;  // the job table: grouping and triage
  int64_t samples = 0;
  size_t jobs = 0;
};

class FleetService {
 public:
  // replay_clock: non-null in replay mode (the data's "now"; advanced by the service).
  FleetService(FleetOptions options, FleetQuery* query, Clock* clock,
               ManualClock* replay_clock = nullptr);
  ~FleetService();

  // Validates the options, opens the events file, binds --listen. InvalidInput / Unavailable
  // (port in use) name the flag.
  Status Start();
  // Cycles until *stop is set (a signal), the replay ends, or --once. A server that refuses the
  // very first query (HTTP 4xx: a bad --selector) is an error; later failures are counted.
  Status Run(std::atomic<int>* stop);
  // One cycle (public for tests).
  CycleReport Cycle();

  const JobTable& table() const { return *table_; }
  const FleetSelfStats& self() const { return self_; }
  // The last kMaxReports cycles (all of a replay's up to that many).
  const std::deque<CycleReport>& cycles() const { return reports_; }
  static constexpr size_t kMaxReports = 10000;
  const std::string& listen_address() const { return service_.listen_address; }
  nlohmann::json SummaryJson() const;

 private:
  int64_t NowMs() const;
  // A request with retries; *attempts counts them.
  template <typename T, typename F>
  Result<T> WithRetries(F&& call, std::atomic<int>* stop);
  // Drops (counts, logs) the samples of *batch stamped outside [from_ms, to_ms] (1 s slack).
  void DropOutOfRange(int64_t from_ms, int64_t to_ms, FleetBatch* batch);
  void Dispatch(std::vector<JobEvent> events);
  void Event(nlohmann::json event);
  void Publish();
  void SleepS(double s, std::atomic<int>* stop);

  FleetOptions o_;
  FleetQuery* query_;
  Clock* clock_;
  ManualClock* replay_clock_;
  std::unique_ptr<JobTable> table_;
  FleetSelfStats self_;
  std::deque<CycleReport> reports_;
  exporter::MetricsSnapshot snapshot_;
  watch::ServiceParts service_;  // event log, action runner, server (watch/service_start.h)
  std::atomic<int>* stop_ = nullptr;
  int64_t series_estimate_ = 0;  // series in the last answer, for the size of the next
  int64_t chunk_ms_ = 0;         // time one request covers (0: not sized yet)
  bool any_answer_ = false;
  Status fatal_;
};

// `wattwatch fleet`, assembled from its options (apps/ binds the flags). Exit codes: 0 stopped
// (signal, --once, the replay's end); 2 bad flags, an unreachable address to listen on, a
// Prometheus that refuses the query, --once without an answer, or a replay with failed cycles.
int RunFleetCommand(const FleetOptions& options, std::atomic<int>* stop, std::ostream& out,
                    std::ostream& err);

}  // namespace ww::fleet
