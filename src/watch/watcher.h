// Watcher: the loop behind `wattwatch watch` and `wattwatch run`. Each tick it
// reads one batch of samples from the source (live NVML on a schedule, or a
// replay/simulation paced at --speed), feeds the triage engine online (causal:
// only samples seen so far), polls the progress probes, lets the hang policy
// confirm or dismiss the engine's hang candidate, updates the metrics that
// /metrics serves, writes events, and on a confirmed hang runs the actions; in
// run mode it then stops the job: diagnostics, SIGTERM to its process group,
// SIGKILL after the grace period.
//
// Time: "watch time" is the samples' time (wall time for NVML, the log's time
// for a replay), so every duration of the policy (confirm_s, probe intervals)
// scales with --speed and a replay at x20 takes the same decisions as the live
// job did, 20 times sooner.
//
// Ownership: borrows the source, clock and child (all must outlive Run); owns
// the probes, the HTTP server, the event log and the action and kill threads.
// Thread-safety: Start and Run from one thread; the HTTP threads only read
// published snapshots.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/clock.h"
#include "core/status.h"
#include "export/http_server.h"
#include "export/watch_metrics.h"
#include "telemetry/source.h"
#include "triage/engine.h"
#include "watch/actions.h"
#include "watch/child.h"
#include "watch/hang_policy.h"
#include "watch/probes.h"

namespace ww::nvml {
class NvmlSource;
}

namespace ww::watch {

struct WatchOptions {
  std::string source_label;          // for /state and events, e.g. "nvml" or "replay:a.csv"
  bool live = false;                 // NVML: sample every interval_ms; else pace by --speed
  double speed = 1;                  // replay/sim: times faster than real time
  int64_t interval_ms = 100;         // live sampling period
  int64_t probe_interval_ms = 1000;  // watch time between probe polls
  bool linger = false;               // serve /metrics after a replay ends, until a signal
  exporter::WatchIdentity identity;
  triage::TriageOptions triage;  // auto_confirm is turned off: the policy confirms
  HangPolicyOptions policy;
  ActionConfig actions;
  std::string listen;       // "HOST:PORT"; empty: no HTTP endpoint
  std::string ready_file;   // written with the bound address once /metrics serves
  std::string events_path;  // --events FILE.jsonl; empty: none
  // A state must last this long (watch time) before a state_change event is
  // written; compute and communication alternate within every step and would
  // otherwise flood the log.
  double event_min_state_s = 5;

  // Run mode.
  ChildProcess* child = nullptr;
  double kill_grace_s = 30;
  std::optional<int> diag_signal;  // sent when py-spy is not installed; nullopt: none
  std::string diag_output;         // where py-spy's dump goes; empty: stderr
  double diag_timeout_s = 30;
};

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

class Watcher final : public triage::TriageObserver {
 public:
  // `nvml`, when the source is NVML, adds its stale-sample count to
  // samples_dropped.
  Watcher(TelemetrySource* source, nvml::NvmlSource* nvml, Clock* clock, WatchOptions options,
          std::vector<std::unique_ptr<ProgressProbe>> probes);
  ~Watcher() override;

  // Opens the event log and starts the HTTP endpoint. kInvalidInput / kIoError
  // / kUnavailable with a message naming the flag.
  Status Start();
  // Runs until the source ends (unless linger), the child exits (run mode), or
  // a stop signal. *pending_signal holds a signal number caught by the command
  // (0: none): in watch mode SIGINT and SIGTERM stop the loop; in run mode they
  // are forwarded to the child. Returns non-ok when the source fails for good
  // (unreadable replay).
  Status Run(std::atomic<int>* pending_signal);

  const WatchSummary& summary() const { return summary_; }
  const std::vector<std::string>& hosts() const;
  // The /state document as of the last tick.
  nlohmann::json StateJson() const;

  void OnLabel(const triage::LabeledSample& label) override;
  void OnStateChange(GpuKey key, GpuState from, GpuState to, int64_t at_ms) override;
  void OnHangConfirmed(const triage::HangEpisode& episode) override;
  void OnHangEnded(const triage::HangEpisode& episode) override;

  struct EventWriter;

 private:
  void Tick(const std::vector<GpuSample>& batch, int64_t now_ms);
  void PollProbes(int64_t now_ms);
  void Publish(bool healthy);
  // /healthz: a sample came within max(5 s, 5 intervals), or the replay is over.
  bool Fresh() const;
  void Event(nlohmann::json event);
  nlohmann::json HangJson(const triage::HangEpisode& e, const char* event) const;
  std::string GpuName(GpuKey key) const;
  void StartKill(const triage::HangEpisode& e);
  void FlushStateEvents(int64_t now_ms, bool all);

  TelemetrySource* source_;
  nvml::NvmlSource* nvml_;
  Clock* clock_;
  WatchOptions o_;
  std::vector<std::unique_ptr<ProgressProbe>> probes_;
  std::vector<ProbeState> probe_states_;
  triage::TriageEngine engine_;
  exporter::WatchMetrics metrics_;
  exporter::MetricsSnapshot snapshot_;
  std::unique_ptr<exporter::MetricsServer> server_;
  std::unique_ptr<EventWriter> events_;
  std::unique_ptr<ActionRunner> actions_;
  std::thread killer_;
  std::atomic<bool> killer_stop_{false};
  WatchSummary summary_;
  std::vector<double> lateness_ms_;
  int64_t last_probe_ms_ = INT64_MIN;
  int64_t last_tick_ms_ = INT64_MIN;
  int64_t last_dismiss_event_ms_ = INT64_MIN;
  int64_t last_sample_wall_ms_ = INT64_MIN;
  uint64_t nvml_stale_seen_ = 0;
  bool named_ = false;
  bool source_done_ = false;
  bool failing_ = false;  // the source's last Next() failed (live)
  HangDecision last_decision_;
  // Pending state changes, written once the new state has lasted
  // event_min_state_s.
  struct PendingChange {
    GpuState from, to;
    int64_t at_ms;
  };
  std::map<GpuKey, PendingChange> pending_changes_;
  std::map<GpuKey, GpuState> reported_state_;
};

}  // namespace ww::watch
