#include "fleet/job_table.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/format.h"
#include "core/timefmt.h"
#include "export/watch_metrics.h"
#include "triage/verdict.h"
#include "watch/watch_json.h"

namespace ww::fleet {

using nlohmann::json;

Job::Job(std::string id, const JobTableOptions& options, std::vector<JobEvent>* events)
    : id_(std::move(id)), options_(options), events_(events), engine_(options.triage, this) {}

std::string Job::GpuName(GpuKey key) const {
  if (key.host < hosts_.size()) return GpuLabel(hosts_[key.host], key.gpu);
  return GpuLabelForHostIndex(key.host, key.gpu);
}

Job::GpuSlot& Job::Slot(const std::string& host, uint16_t gpu, const GpuInfo* info) {
  auto [h, new_host] = host_index_.try_emplace(host, static_cast<uint16_t>(hosts_.size()));
  if (new_host) {
    hosts_.push_back(host);
    engine_.SetHostNames(hosts_);
  }
  auto [it, inserted] = gpus_.try_emplace({h->second, gpu});
  if (inserted) {
    it->second.key = GpuKey{h->second, gpu};
    if (info != nullptr && !info->name.empty()) {
      GpuInfo local = *info;
      local.key = it->second.key;
      engine_.SetGpuInfo({local});  // before the GPU's first sample: seeds its calibration
    }
  }
  return it->second;
}

bool Job::Add(const std::string& host, const GpuSample& sample, const GpuInfo* info) {
  GpuSlot& slot = Slot(host, sample.key.gpu, info);
  if (sample.timestamp_ms <= slot.last_ms) return false;
  slot.last_ms = sample.timestamp_ms;
  GpuSample s = sample;
  s.key = slot.key;
  engine_.Add(s);
  first_ms_ = std::min(first_ms_, s.timestamp_ms);
  last_ms_ = std::max(last_ms_, s.timestamp_ms);
  ++samples_;
  return true;
}

std::array<int, kNumGpuStates> Job::StateCounts() const {
  std::array<int, kNumGpuStates> counts{};
  for (const auto& [k, slot] : gpus_) {
    if (slot.last_ms < last_ms_ - options_.gpu_stale_ms) continue;
    if (auto st = engine_.current_state(slot.key)) ++counts[static_cast<size_t>(*st)];
  }
  return counts;
}

std::optional<double> Job::CommShare() const {
  double compute = 0, comm = 0;
  for (const auto& g : engine_.gpu_stats()) {
    compute += g.seconds[static_cast<size_t>(GpuState::kCompute)];
    comm += g.seconds[static_cast<size_t>(GpuState::kCommunication)];
  }
  if (compute + comm <= 0) return std::nullopt;
  return comm / (compute + comm);
}

std::string Job::Verdict() const {
  return triage::LiveJobVerdict(engine_.hang_active(), StateCounts());
}

std::vector<std::string> Job::Reasons() const {
  triage::LiveReasonsInput in;
  if (const triage::HangEpisode* h = engine_.active_hang()) in.hang_reasons = &h->reasons;
  in.gpu_states = StateCounts();
  in.hosts = hosts_.size();
  in.last_ms = last_ms_;
  if (auto c = engine_.hang_candidate()) in.candidate_start_ms = c->start_ms;
  in.hang_confirm_s = options_.triage.hang_confirm_s;
  return triage::LiveJobReasons(in);
}

json Job::HangJson(const triage::HangEpisode& e, const char* event) const {
  std::string hosts;
  for (const auto& h : hosts_) hosts += (hosts.empty() ? "" : ",") + h;
  const exporter::WatchIdentity identity{hosts, id_, ""};
  json j = watch::HangEventJson(e, event, identity, [this](GpuKey k) { return GpuName(k); });
  j["source"] = "fleet";
  return j;
}

json Job::ToJson(bool summary) const {
  json j;
  j["job"] = id_;
  j["hosts"] = hosts_;
  j["gpus"] = gpus_.size();
  j["verdict"] = Verdict();
  j["reasons"] = Reasons();
  json states = json::object();
  const auto counts = StateCounts();
  for (size_t i = 0; i < counts.size(); ++i) states[std::string(kGpuStateNames[i])] = counts[i];
  j["gpu_states"] = states;
  if (const triage::HangEpisode* h = engine_.active_hang()) {
    j["hang"] = HangJson(*h, "hang");
    j["hang"].erase("event");
    j["hang_seconds"] = static_cast<double>(last_ms_ - h->start_ms) / 1000.0;
  } else {
    j["hang"] = nullptr;
  }
  if (auto c = engine_.hang_candidate()) {
    j["hang_candidate"] = {{"since", FormatIsoMs(c->start_ms, true)}};
  } else {
    j["hang_candidate"] = nullptr;
  }
  const auto share = CommShare();
  j["comm_share"] = share ? json(*share) : json(nullptr);
  j["wasted_gpu_hours"] = engine_.wasted_gpu_hours();
  j["first_sample"] = first_ms_ == INT64_MAX ? json(nullptr) : json(FormatIsoMs(first_ms_, true));
  j["last_sample"] = last_ms_ == INT64_MIN ? json(nullptr) : json(FormatIsoMs(last_ms_, true));
  j["samples"] = samples_;
  // Ranks the others wait for in every step (the engine's straggler finder, from the job so far).
  json stragglers = json::array();
  for (const triage::Straggler& s : engine_.stragglers()) {
    stragglers.push_back({{"gpu", GpuName(s.key)},
                          {"slowdown", s.slowdown},
                          {"throttle", s.throttle.empty() ? json(nullptr) : json(s.throttle)}});
  }
  j["stragglers"] = std::move(stragglers);
  if (!summary) return j;
  json seconds = json::object();
  std::array<double, kNumGpuStates> total{};
  for (const auto& g : engine_.gpu_stats()) {
    for (size_t i = 0; i < total.size(); ++i) total[i] += g.seconds[i];
  }
  for (size_t i = 0; i < total.size(); ++i) seconds[std::string(kGpuStateNames[i])] = total[i];
  j["gpu_seconds"] = seconds;
  json hangs = json::array();
  for (const auto& e : engine_.hang_episodes()) {
    json h = HangJson(e, "hang");
    h.erase("event");
    h["end"] = FormatIsoMs(e.end_ms, true);
    h["ongoing"] = e.ongoing;
    hangs.push_back(std::move(h));
  }
  j["hang_episodes"] = hangs;
  double ckpt_s = 0;
  const std::vector<triage::CheckpointEpisode> checkpoints = engine_.checkpoints();
  for (const auto& c : checkpoints) ckpt_s += static_cast<double>(c.covered_ms());
  j["checkpoints"] = {{"count", checkpoints.size()}, {"seconds", ckpt_s / 1000.0}};
  j["notes"] = engine_.notes();
  return j;
}

void Job::OnHangConfirmed(const triage::HangEpisode& e) {
  json j = HangJson(e, "hang_confirmed");
  // The newest sample the engine had when it confirmed: the engine's own latency is this minus
  // `since`; what the fleet adds (scrape, cycle) is the wall time after it.
  j["confirmed_with_samples_until"] = FormatIsoMs(last_ms_, true);
  j["confirmed_with_samples_until_ms"] = last_ms_;
  events_->push_back({JobEvent::Kind::kHangConfirmed, id_, std::move(j)});
}

void Job::OnHangEnded(const triage::HangEpisode& e) {
  json j = HangJson(e, "hang_ended");
  j["end"] = FormatIsoMs(e.end_ms, true);
  j["ongoing"] = e.ongoing;
  events_->push_back({JobEvent::Kind::kHangEnded, id_, std::move(j)});
}

JobTable::JobTable(JobTableOptions options) : options_(std::move(options)) {}

IngestStats JobTable::Ingest(const FleetBatch& b) {
  IngestStats st;
  // Each GPU of the batch resolved once: its job (or none) and its model.
  struct Route {
    Job* job = nullptr;
    std::pair<const std::string, int64_t>* other_shard = nullptr;  // its last-sample entry
    const GpuInfo* info = nullptr;
  };
  std::map<GpuKey, Route> routes;
  for (const GpuLabels& l : b.labels) {
    Route& r = routes[l.key];
    auto id = JobIdOf(l.labels, options_.job_labels);
    if (!id) continue;
    if (!options_.shard.Owns(*id)) {
      r.other_shard = &*other_shard_.try_emplace(*id, INT64_MIN).first;
      continue;
    }
    auto it = jobs_.find(*id);
    if (it == jobs_.end()) {
      it = jobs_.emplace(*id, std::make_unique<Job>(*id, options_, &events_)).first;
    }
    r.job = it->second.get();
  }
  for (const GpuInfo& info : b.infos) routes[info.key].info = &info;
  for (const GpuSample& s : b.samples) {
    newest_ms_ = std::max(newest_ms_, s.timestamp_ms);
    auto it = routes.find(s.key);
    if (it == routes.end() || it->second.job == nullptr) {
      if (it != routes.end() && it->second.other_shard) {
        ++st.samples_other_shard;
        it->second.other_shard->second = std::max(it->second.other_shard->second, s.timestamp_ms);
      } else {
        ++st.samples_unattributed;
        if (s.key.host < b.hosts.size()) {
          int64_t& last = unattributed_[{b.hosts[s.key.host], s.key.gpu}];
          last = std::max(last, s.timestamp_ms);
        }
      }
      continue;
    }
    const std::string& host = s.key.host < b.hosts.size() ? b.hosts[s.key.host] : "prometheus";
    if (it->second.job->Add(host, s, it->second.info)) {
      ++st.samples_fed;
    } else {
      ++st.samples_old;
    }
  }
  return st;
}

void JobTable::Close(std::map<std::string, std::unique_ptr<Job>>::iterator it, const char* why) {
  Job& job = *it->second;
  job.Finish();
  json summary = job.ToJson(true);
  summary["closed"] = why;
  json event = summary;
  event["event"] = "job_closed";
  events_.push_back({JobEvent::Kind::kJobClosed, job.id(), std::move(event)});
  closed_.push_back(std::move(summary));
  while (closed_.size() > options_.closed_kept) closed_.pop_front();
  ++jobs_closed_total_;
  jobs_.erase(it);
}

void JobTable::CloseIdle(int64_t covered_ms) {
  std::erase_if(unattributed_,
                [&](const auto& e) { return covered_ms - e.second > options_.close_after_ms; });
  std::erase_if(other_shard_,
                [&](const auto& e) { return covered_ms - e.second > options_.close_after_ms; });
  for (auto it = jobs_.begin(); it != jobs_.end();) {
    auto next = std::next(it);
    if (covered_ms - it->second->last_sample_ms() > options_.close_after_ms) {
      Close(it, "no samples");
    }
    it = next;
  }
}

void JobTable::CloseAll() {
  while (!jobs_.empty()) Close(jobs_.begin(), "stopped");
}

}  // namespace ww::fleet
