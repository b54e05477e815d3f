// The evidence of a confirmed hang: NCCL RAS asked twice, every rank's Flight Recorder poked and
// read, and one incident folder written for the on-call. The watcher calls
// StartHangEvidence() once per confirmed hang, before any kill, and keeps sampling; the work
// runs on its own thread, every query and poke has a deadline, and the whole step is bounded by
// EvidenceOptions::overall_deadline_ms.
// Ownership: EvidenceTask's thread is detached and shares its result slot; the destructor never
// waits for it, so acting on a hang never waits for evidence past the overall deadline.
// Thread-safety: CollectHangEvidence is reentrant; one EvidenceTask is used from one thread.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "evidence/flight_recorder.h"
#include "evidence/ras.h"

namespace ww::evidence {

struct EvidenceOptions {
  // NCCL RAS (--nccl-ras HOST:PORT / --no-nccl-ras).
  bool ras_enabled = true;
  std::string ras_host = "localhost";
  int ras_port = 28028;
  int ras_query_timeout_ms = 5000;
  int ras_interval_ms = 3000;  // between the two queries
  // Flight Recorder (--fr-pipe PREFIX; run sets the variables itself). Empty: skipped.
  std::string fr_pipe_prefix;  // TORCH_NCCL_DEBUG_INFO_PIPE_FILE
  std::string fr_dump_prefix;  // TORCH_FR_DUMP_TEMP_FILE / TORCH_NCCL_DEBUG_INFO_TEMP_FILE
  // When fr_dump_prefix is empty: where PyTorch writes when the job set neither variable, newest
  // release first ($XDG_CACHE_HOME or ~/.cache + /torch/comm_lib_trace_rank_, then
  // ~/.cache/torch/nccl_trace_rank_, then /tmp/nccl_trace_rank_). The first one whose file for a
  // poked rank changes after the poke is read. Empty: /tmp/nccl_trace_rank_ alone.
  std::vector<std::string> fr_default_dump_prefixes;
  int fr_wait_ms = 10000;  // --fr-wait-s
  // Where the incident folder is created (--incident-dir; default beside the events file).
  std::string incident_root;
  int64_t overall_deadline_ms = 30000;
};

// What the watcher knows when it confirms the hang; strings are written as given.
struct HangContext {
  int64_t confirmed_unix_ms = 0;
  std::string job;            // "pid 4242 (torchrun ...)" or a job name
  std::string hang_reason;    // the triage verdict's reasons, in words
  std::string triage_json;    // the triage JSON at confirmation
  std::string telemetry_csv;  // the last 10 minutes as nvidia-smi CSV ("" when not kept)
  std::vector<std::pair<std::string, std::string>> pyspy_dumps;  // (name, text)
  std::string events_jsonl;                                      // the events so far
  std::string actions;  // what was or will be done ("SIGTERM then SIGKILL after 30 s")
  std::vector<std::string> telemetry_culprits;  // what telemetry alone named ("unknown" is fine)
};

struct Culprit {
  std::string source;  // "nccl-ras" or "flight-recorder"
  int rank = -1;
  std::string host;
  int pid = -1;
  int gpu = -1;
  std::string reason;  // the sentence
};

struct EvidenceReport {
  std::string incident_dir;  // "" when it could not be written (see notes)
  std::vector<Culprit> culprits;
  std::vector<std::string> notes;  // plain statements: "no RAS listening on localhost:28028"
  // RAS
  std::vector<RasReply> ras_replies;
  std::optional<RasVerdict> ras_verdict;
  // Flight Recorder
  std::vector<FifoPoke> fr_pokes;
  std::vector<FrDumpFile> fr_dumps;
  std::optional<FrAnalysis> fr_analysis;
  double elapsed_s = 0;
  // One line for the event, the webhook and /state: "culprit: rank 3 ... (nccl-ras, flight-
  // recorder)" or "culprit: none named (no RAS listening; no FIFOs)".
  std::string summary;

  nlohmann::json ToJson() const;
  // Merged into the hang event, the webhook payload and /state as j["evidence"]:
  // {"summary", "incident_dir", "culprits": [{"rank", "host", "pid", "gpu", "source", "reason"}]}.
  nlohmann::json EventFields() const;
  // For the hook's environment: HookEnvFromEventFields(EventFields()).
  std::vector<std::pair<std::string, std::string>> HookEnv() const;
};

// The hook's environment from an event's `evidence` object (EventFields()' shape; the hook runner
// has only the event): WATTWATCH_INCIDENT_DIR, WATTWATCH_CULPRIT_RANKS (each rank once, in order:
// "2,11"; RAS and the Flight Recorder often name the same rank), WATTWATCH_CULPRIT_REASON (the
// summary line). Members missing or of the wrong type give empty values.
std::vector<std::pair<std::string, std::string>> HookEnvFromEventFields(
    const nlohmann::json& evidence);

// Does the whole step synchronously (RAS and Flight Recorder in parallel) and writes the
// incident folder. `clock` gives the incident time and the polling sleeps; socket and FIFO
// deadlines are real time.
EvidenceReport CollectHangEvidence(const EvidenceOptions& options, const HangContext& context,
                                   Clock* clock);

// CollectHangEvidence on its own detached thread: the watcher's sampling loop polls Take(0) and
// acts when the report is there or Overdue() says the overall deadline has passed. The task can
// be abandoned: its destructor never waits, and a thread still running (a peer or a dump that
// outlasted every budget) finishes alone and its report is dropped. An exception in the step
// becomes a report with a note. `clock` must outlive the thread (the system clock does).
class EvidenceTask {
 public:
  EvidenceTask(EvidenceOptions options, HangContext context, Clock* clock);
  ~EvidenceTask();
  EvidenceTask(const EvidenceTask&) = delete;
  EvidenceTask& operator=(const EvidenceTask&) = delete;
  bool Ready() const;
  // True once options.overall_deadline_ms (real time) has passed since the start.
  bool Overdue() const;
  // Blocks up to timeout_ms, never past the overall deadline; nullopt when not finished by then.
  std::optional<EvidenceReport> Take(int64_t timeout_ms);

 private:
  struct Shared;
  std::shared_ptr<Shared> shared_;
  int64_t deadline_steady_ms_ = 0;
  bool taken_ = false;
};

}  // namespace ww::evidence
