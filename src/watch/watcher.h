// Watcher: the loop behind `wattwatch watch` and `wattwatch run`. Each tick it reads one batch of
// samples from the source (live NVML on a schedule, or a replay/simulation paced at --speed), feeds
// the triage engine online (causal: only samples seen so far), polls the progress probes, lets the
// hang policy confirm or dismiss the engine's hang candidate, updates the metrics that /metrics
// serves, writes events, and on a confirmed hang runs the actions; in run mode it then stops the
// job: diagnostics, SIGTERM to its process group, SIGKILL after the grace period.
//
// Time: "watch time" is the samples' time (wall time for NVML, the log's time for a replay), so
// every duration of the policy (confirm_s, probe intervals) scales with --speed and a replay at x20
// takes the same decisions as the live job did, 20 times sooner.
//
// The pieces it orchestrates live beside it: state_events.h (which state changes are written),
// kill_sequence.h (the run-mode kill, on the Clock), watch_json.h (events, /state, the summary),
// startup_checks.h, and export/event_writer.h.
//
// Ownership: borrows the source, clock and child (all must outlive Run); owns the probes, the HTTP
// server, the event writer and the action and kill threads. Thread-safety: Start and Run from one
// thread; the HTTP threads only read published snapshots.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/clock.h"
#include "core/status.h"
#include "evidence/evidence.h"
#include "export/event_writer.h"
#include "export/http_server.h"
#include "export/watch_metrics.h"
#include "telemetry/source.h"
#include "triage/engine.h"
#include "watch/actions.h"
#include "watch/child.h"
#include "watch/hang_policy.h"
#include "watch/kill_sequence.h"
#include "watch/probes.h"
#include "watch/service_start.h"
#include "watch/state_events.h"
#include "watch/watch_json.h"

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
  std::string listen;              // "HOST:PORT"; empty: no HTTP endpoint
  exporter::ServerOptions server;  // the endpoint's limits, and the /state token
  std::string ready_file;          // written with the bound address once /metrics serves
  std::string events_path;         // --events FILE.jsonl; empty: none
  // A state must last this long (watch time) before a state_change event is written; compute and
  // communication alternate within every step and would otherwise flood the log.
  double event_min_state_s = 5;

  // The evidence step on a confirmed hang (NCCL RAS, Flight Recorder, incident folder); unset:
  // none. The hang event, the actions and the kill wait for it (bounded by its own deadline), the
  // sampling does not.
  std::optional<evidence::EvidenceOptions> evidence;

  // Run mode.
  ChildProcess* child = nullptr;
  KillOptions kill;  // pyspy_path empty: looked up on $PATH when the kill starts
};

class Watcher final : public triage::TriageObserver {
 public:
  // The source's own health (SourceHealth::samples_stale) adds to samples_dropped.
  Watcher(TelemetrySource* source, Clock* clock, WatchOptions options,
          std::vector<std::unique_ptr<ProgressProbe>> probes);
  ~Watcher() override;

  // Opens the event log and starts the HTTP endpoint. kInvalidInput / kIoError / kUnavailable with
  // a message naming the flag.
  Status Start();
  // Runs until the source ends (unless linger), the child exits (run mode), or a stop signal.
  // *pending_signal holds a signal number caught by the command (0: none): in watch mode SIGINT and
  // SIGTERM stop the loop; in run mode they are forwarded to the child. Returns non-ok when the
  // source fails for good (unreadable replay).
  Status Run(std::atomic<int>* pending_signal);

  const WatchSummary& summary() const { return summary_; }
  const std::vector<std::string>& hosts() const;
  // The /state document as of the last tick.
  nlohmann::json StateJson() const;

  void OnLabel(const triage::LabeledSample& label) override;
  void OnStateChange(GpuKey key, GpuState from, GpuState to, int64_t at_ms) override;
  void OnHangConfirmed(const triage::HangEpisode& episode) override;
  void OnHangEnded(const triage::HangEpisode& episode) override;
  // A lost GPU (Xid 79: "[GPU is lost]") or a gap in the telemetry: an event line and a log line.
  void OnEvent(const triage::TriageEvent& event) override;

 private:
  void Tick(const std::vector<GpuSample>& batch, int64_t now_ms);
  void PollProbes(int64_t now_ms);
  void Publish(bool healthy);
  // /healthz: DataFresh of the last sample (service_start.h), or the replay is over.
  bool Fresh() const;
  void Event(nlohmann::json event);
  nlohmann::json HangJson(const triage::HangEpisode& e, const char* event) const;
  std::string GpuName(GpuKey key) const;
  void StartKill();
  // The hang event, the webhook/hook and (run mode) the kill, once the evidence (if any) is in.
  void ActOnHang(const nlohmann::json& hang_event);
  // Takes the evidence step's report when ready (waiting up to wait_ms), merges it into the
  // pending hang event and acts on it. With wait_ms > 0 and still no report: acts without it.
  void FinishEvidence(int64_t wait_ms);
  // Run mode, after a forwarded signal ended the job's leader: what the job started and left behind
  // gets kill_grace_s to go, then SIGKILL, so `run` never leaves processes of its own.
  void StopLeftovers();
  void FlushStateEvents(int64_t now_ms, bool all);
  // GPUs that have a state (for counting a dropped tick per GPU).
  size_t gpus_seen() const;

  TelemetrySource* source_;
  Clock* clock_;
  WatchOptions o_;
  std::vector<std::unique_ptr<ProgressProbe>> probes_;
  std::vector<ProbeState> probe_states_;
  std::vector<bool> peer_out_reported_;  // per probe: its being out was logged
  triage::TriageEngine engine_;
  exporter::WatchMetrics metrics_;
  exporter::MetricsSnapshot snapshot_;
  ServiceParts service_;  // event log, action runner, server (service_start.h)
  std::unique_ptr<evidence::EvidenceTask> evidence_task_;
  nlohmann::json pending_hang_;   // the hang_confirmed event waiting for the evidence
  nlohmann::json last_evidence_;  // the last hang's evidence, for /state
  // The last 10 minutes of samples (watch time), kept only with the evidence step: the incident's
  // telemetry-10min.csv. Bounded by kRecentSamplesMax as well.
  std::deque<GpuSample> recent_;
  std::string RecentTelemetryCsv() const;
  std::thread killer_;
  std::atomic<bool> killer_stop_{false};
  WatchSummary summary_;
  std::vector<double> lateness_ms_;
  int64_t last_probe_ms_ = INT64_MIN;
  int64_t last_tick_ms_ = INT64_MIN;
  int64_t last_dismiss_event_ms_ = INT64_MIN;
  int64_t last_sample_wall_ms_ = INT64_MIN;
  uint64_t stale_seen_ = 0;  // source_->health().samples_stale already counted
  bool named_ = false;
  bool source_done_ = false;
  bool failing_ = false;           // the source's last Next() failed (live)
  bool forwarded_signal_ = false;  // run: a signal was passed on to the job
  int64_t forwarded_at_ns_ = 0;    // when the first one was (monotonic)
  int forwarded_signo_ = 0;
  bool forwarded_escalated_ = false;  // SIGKILL sent after --kill-grace-s of it being ignored
  HangDecision last_decision_;
  // Per GPU: the state last written to the events and the change waiting to be.
  std::map<GpuKey, StateDebounce> state_events_;
};

}  // namespace ww::watch
