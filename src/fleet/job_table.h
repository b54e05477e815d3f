// JobTable: the fleet's jobs, each judged by its own incremental TriageEngine (the engine
// `wattwatch triage` and `watch` use), fed from the batches one fleet cycle reads. Pure: batches
// in, engines fed, events out; no clock, no network (the times it decides by are the samples').
//
// - Grouping: a GPU's job is JobIdOf(its labels, job_labels) (jobs.h); a GPU without the labels
//   is unattributed, a job of another shard is skipped (both counted while their samples are
//   fresh: within gpu_stale_ms of the newest sample read, so an outage does not zero them).
// - Inside a job, hosts are numbered in the order they appear and a GPU keeps its index on its
//   host, so the engine's reasons name GPUs as the exporter does ("gpu-a/GPU3"). A GPU that moves
//   to another job (its label changed) starts afresh there; in the old job it goes stale.
// - Samples at or before a GPU's last fed sample are dropped (overlapping ranges, retries).
// - A job with no samples for close_after_ms of data the service has read (CloseIdle) is closed:
//   its engine finishes, its summary goes out as a job_closed event and stays in closed() (the
//   last closed_kept). A Prometheus outage reads no data, so it never closes a job.
// - Memory: one engine per open job plus closed_kept summaries; nothing per cycle is kept.
//
// Ownership: owns the engines. Thread-safety: one thread at a time.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "core/sample.h"
#include "core/state.h"
#include "fleet/fleet_query.h"
#include "fleet/jobs.h"
#include "triage/engine.h"
#include "triage/options.h"

namespace ww::fleet {

struct JobTableOptions {
  std::vector<std::string> job_labels = {"hpc_job"};
  Shard shard;
  triage::TriageOptions triage;
  // A job without samples this long (in data read) is over.
  int64_t close_after_ms = 10 * 60 * 1000;
  // A GPU without samples this long is left out of the job's state counts (it left the job).
  int64_t gpu_stale_ms = 90 * 1000;
  size_t closed_kept = 100;
};

// Something to tell the operator: the payload is the events-file line (and the webhook body).
struct JobEvent {
  enum class Kind { kHangConfirmed, kHangEnded, kJobClosed };
  Kind kind = Kind::kHangConfirmed;
  std::string job;
  nlohmann::json payload;
};

class Job final : public triage::TriageObserver {
 public:
  // options and events are the table's, which outlives its jobs.
  Job(std::string id, const JobTableOptions& options, std::vector<JobEvent>* events);

  const std::string& id() const { return id_; }
  const triage::TriageEngine& engine() const { return engine_; }
  const std::vector<std::string>& hosts() const { return hosts_; }
  // "gpu-a/GPU3".
  std::string GpuName(GpuKey key) const;
  int64_t first_sample_ms() const { return first_ms_; }
  int64_t last_sample_ms() const { return last_ms_; }
  int64_t samples() const { return samples_; }
  size_t gpus() const { return gpus_.size(); }

  // GPUs with a sample within gpu_stale_ms of the job's last, per current state.
  std::array<int, kNumGpuStates> StateCounts() const;
  // communication / (compute + communication) over the job so far; nullopt before training.
  std::optional<double> CommShare() const;
  // "hang", "checkpoint", else the state most GPUs are in ("unknown" before any label).
  std::string Verdict() const;
  // The verdict's reasons in words (a hang's own; a candidate's wait; the state counts).
  std::vector<std::string> Reasons() const;
  // The /jobs entry; the summary on close adds totals (ToJson(true)).
  nlohmann::json ToJson(bool summary) const;
  // The events-file/webhook form of a hang of this job.
  nlohmann::json HangJson(const triage::HangEpisode& e, const char* event) const;

  // Feeds one sample of the GPU at index `gpu` on host `host`; false when it is not newer than
  // that GPU's last one. `info` names the GPU's model for its calibration (first sample only).
  bool Add(const std::string& host, const GpuSample& sample, const GpuInfo* info);
  void Finish() { engine_.Finish(); }

  // TriageObserver.
  void OnHangConfirmed(const triage::HangEpisode& episode) override;
  void OnHangEnded(const triage::HangEpisode& episode) override;

 private:
  struct GpuSlot {
    GpuKey key;
    int64_t last_ms = INT64_MIN;
  };
  GpuSlot& Slot(const std::string& host, uint16_t gpu, const GpuInfo* info);

  std::string id_;
  const JobTableOptions& options_;
  std::vector<JobEvent>* events_;
  triage::TriageEngine engine_;
  std::vector<std::string> hosts_;
  std::map<std::string, uint16_t> host_index_;
  std::map<std::pair<uint16_t, uint16_t>, GpuSlot> gpus_;  // by (job host, gpu)
  int64_t first_ms_ = INT64_MAX;
  int64_t last_ms_ = INT64_MIN;
  int64_t samples_ = 0;
};

// Per-Ingest figures for the self-metrics.
struct IngestStats {
  int64_t samples_fed = 0;
  int64_t samples_unattributed = 0;
  int64_t samples_other_shard = 0;
  int64_t samples_old = 0;  // not newer than the GPU's last (overlap)
};

class JobTable {
 public:
  explicit JobTable(JobTableOptions options);
  JobTable(const JobTable&) = delete;  // the jobs hold a reference to options_
  JobTable& operator=(const JobTable&) = delete;

  IngestStats Ingest(const FleetBatch& batch);
  // The data has been read up to covered_ms: close the jobs silent for close_after_ms before it.
  void CloseIdle(int64_t covered_ms);
  // At exit: every open job closed with its summary (hangs still open end as `ongoing`).
  void CloseAll();
  std::vector<JobEvent> TakeEvents() { return std::exchange(events_, {}); }

  const std::map<std::string, std::unique_ptr<Job>>& jobs() const { return jobs_; }
  // Summaries of the last closed jobs, oldest first.
  const std::deque<nlohmann::json>& closed() const { return closed_; }
  int64_t jobs_closed_total() const { return jobs_closed_total_; }
  // Distinct GPUs without the job labels, and jobs of other shards, with fresh samples.
  size_t unattributed_gpus() const { return Fresh(unattributed_); }
  size_t other_shard_jobs() const { return Fresh(other_shard_); }
  const JobTableOptions& options() const { return options_; }

 private:
  void Close(std::map<std::string, std::unique_ptr<Job>>::iterator it, const char* why);
  template <typename M>
  size_t Fresh(const M& last_ms) const {
    size_t n = 0;
    for (const auto& [k, t] : last_ms) n += t >= newest_ms_ - options_.gpu_stale_ms;
    return n;
  }

  JobTableOptions options_;
  std::map<std::string, std::unique_ptr<Job>> jobs_;
  std::deque<nlohmann::json> closed_;
  int64_t jobs_closed_total_ = 0;
  std::vector<JobEvent> events_;
  // Last sample time of each unattributed GPU and of each other shard's job (pruned on close).
  std::map<std::pair<std::string, uint16_t>, int64_t> unattributed_;
  std::map<std::string, int64_t> other_shard_;
  int64_t newest_ms_ = INT64_MIN;
};

}  // namespace ww::fleet
