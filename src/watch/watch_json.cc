#include "watch/watch_json.h"

#include "core/format.h"
#include "core/timefmt.h"

namespace ww::watch {

using nlohmann::json;

std::string WatchGpuLabel(const std::vector<std::string>& hosts, const std::string& identity_host,
                          GpuKey key) {
  if (hosts.size() <= 1 && !identity_host.empty()) return GpuLabel(identity_host, key.gpu);
  if (key.host < hosts.size()) return GpuLabel(hosts[key.host], key.gpu);
  return GpuLabelForHostIndex(key.host, key.gpu);
}

json HangEventJson(const triage::HangEpisode& e, const char* event,
                   const exporter::WatchIdentity& identity, const GpuNamer& name) {
  json j;
  j["event"] = event;
  j["since"] = FormatIsoMs(e.start_ms);
  j["since_ms"] = e.start_ms;
  j["detected_at"] = FormatIsoMs(e.detected_at_ms);
  j["time_ms"] = e.end_ms;
  json gpus = json::array(), culprits = json::array();
  for (GpuKey k : e.gpus) gpus.push_back(name(k));
  for (GpuKey k : e.culprits) culprits.push_back(name(k));
  j["gpus"] = gpus;
  j["culprits"] = culprits;
  if (!e.stopped_reporting.empty()) {
    json silent = json::array();
    for (GpuKey k : e.stopped_reporting) silent.push_back(name(k));
    j["stopped_reporting"] = std::move(silent);
  }
  j["reasons"] = e.reasons;
  j["wasted_gpu_hours"] = e.wasted_gpu_hours();
  j["host"] = identity.host;
  if (!identity.job_id.empty()) j["job_id"] = identity.job_id;
  return j;
}

json WatchSummary::ToJson(const std::vector<std::string>& hosts) const {
  json j;
  j["ticks"] = ticks;
  j["samples"] = samples;
  j["samples_dropped"] = samples_dropped;
  j["tick_lateness_ms"] = {
      {"p50", tick_lateness_p50_ms}, {"p99", tick_lateness_p99_ms}, {"max", tick_lateness_max_ms}};
  j["hangs"] = json::array();
  for (const auto& e : hangs) {
    json h;
    h["start"] = FormatIsoMs(e.start_ms);
    h["detected_at"] = FormatIsoMs(e.detected_at_ms);
    h["end"] = FormatIsoMs(e.end_ms);
    h["ongoing"] = e.ongoing;
    h["gpus"] = e.gpus.size();
    h["wasted_gpu_hours"] = e.wasted_gpu_hours();
    json culprits = json::array();
    for (GpuKey k : e.culprits) culprits.push_back(WatchGpuLabel(hosts, "", k));
    h["culprits"] = culprits;
    h["reasons"] = e.reasons;
    j["hangs"].push_back(h);
  }
  j["killed_for_hang"] = killed_for_hang;
  if (child_exit_code) j["child_exit_code"] = *child_exit_code;
  if (!listen_address.empty()) j["listen"] = listen_address;
  return j;
}

json StateJson(const StateView& v, const GpuNamer& name) {
  json j;
  j["host"] = v.identity.host;
  if (!v.identity.job_id.empty()) j["job_id"] = v.identity.job_id;
  j["source"] = v.source_label;
  j["source_ended"] = v.source_ended;
  if (v.last_tick_ms != INT64_MIN) {
    j["time"] = FormatIsoMs(v.last_tick_ms);
    j["time_ms"] = v.last_tick_ms;
  }
  if (v.hang != nullptr) {
    j["hang"] = HangEventJson(*v.hang, "hang", v.identity, name);
    j["hang"].erase("event");
  } else {
    j["hang"] = nullptr;
  }
  if (v.candidate_start_ms) {
    j["hang_candidate"] = {{"since", FormatIsoMs(*v.candidate_start_ms)},
                           {"quiet_s", v.decision.quiet_s},
                           {"needed_s", v.decision.needed_s}};
    if (v.decision.verdict == HangVerdict::kWaiting && !v.decision.reasons.empty()) {
      j["hang_candidate"]["waiting"] = v.decision.reasons;
    }
  } else {
    j["hang_candidate"] = nullptr;
  }
  json gpus = json::array();
  for (const auto& [key, state] : v.gpus) {
    json g = {{"gpu", name(key)}};
    if (state) g["state"] = StateName(*state);
    gpus.push_back(g);
  }
  j["gpus"] = gpus;
  json probes = json::array();
  for (const auto& p : v.probes) {
    json pj = {{"kind", p.kind}, {"available", p.available}, {"detail", p.last_detail}};
    if (p.last_moved_ms != INT64_MIN) pj["last_moved"] = FormatIsoMs(p.last_moved_ms);
    if (p.unavailable_since_ms != INT64_MIN) {
      pj["unavailable_since"] = FormatIsoMs(p.unavailable_since_ms);
    }
    probes.push_back(pj);
  }
  j["probes"] = probes;
  j["wasted_gpu_hours"] = v.wasted_gpu_hours;
  return j;
}

}  // namespace ww::watch
