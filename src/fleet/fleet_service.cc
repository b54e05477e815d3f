#include "fleet/fleet_service.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <time.h>

#include <algorithm>
#include <cmath>
#include <ostream>

#include "core/exit_codes.h"
#include "core/timefmt.h"
#include "export/event_log.h"
#include "watch/startup_checks.h"

namespace ww::fleet {

using nlohmann::json;

namespace {

// Points one request may return in all (series x samples): bounds the answer's text and the
// decoder's points, so a catch-up of an hour of 10,000 GPUs is read in pieces.
constexpr int64_t kMaxPointsPerRequest = 2'000'000;
// Before the first answer tells the series count and the scrape interval.
constexpr int64_t kFirstChunkMs = 60'000;
// Re-read before the last cycle's end: a sample stamped before it but stored after that query
// (a scrape still running) is read next time; repeats are dropped per GPU. Two scrape intervals,
// this much before the interval is known.
constexpr int64_t kDefaultOverlapMs = 60'000;
// Samples stamped this far outside the range asked for are dropped (fleet_service.h).
constexpr int64_t kRangeSlackMs = 1'000;

// This thread's CPU time: what decoding and evaluation cost, apart from waiting on Prometheus.
double ThreadCpuS() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

}  // namespace

FleetService::FleetService(FleetOptions options, FleetQuery* query, Clock* clock,
                           ManualClock* replay_clock)
    : o_(std::move(options)), query_(query), clock_(clock), replay_clock_(replay_clock) {}

FleetService::~FleetService() { service_.Stop(); }

int64_t FleetService::NowMs() const {
  return replay_clock_ ? replay_clock_->NowUnixMs() : clock_->NowUnixMs();
}

Status FleetService::Start() {
  auto labels = ParseJobLabels(o_.job_label);
  if (!labels.ok()) return labels.status();
  auto shard = ParseShard(o_.shard);
  if (!shard.ok()) return shard.status();
  if (!(o_.interval_s > 0) || !(o_.lookback_s > 0)) {
    return Status::InvalidInput("--interval-s and --lookback-s must be positive");
  }
  query_->KeepLabels(*labels);
  JobTableOptions t;
  t.job_labels = *labels;
  t.shard = *shard;
  t.triage = o_.triage;
  t.close_after_ms = static_cast<int64_t>(o_.close_after_s * 1000);
  table_ = std::make_unique<JobTable>(std::move(t));
  self_.version = o_.version;
  self_.prometheus_url = query_->url();
  self_.job_label = o_.job_label;
  self_.shard = *shard;

  exporter::ServerOptions server;
  server.state_token = o_.jobs_token;
  server.state_path = "/jobs";
  const watch::ServiceStartOptions so{.events_path = o_.events_path,
                                      .actions = o_.actions,
                                      .listen = o_.listen,
                                      .server = server,
                                      .ready_file = o_.ready_file,
                                      .serving = " and /jobs",
                                      .token_flag = "--jobs-token-file",
                                      .open_note = ""};
  WW_RETURN_IF_ERROR(watch::StartService(
      so, &snapshot_, [this](json outcome) { Event(std::move(outcome)); }, [this] { Publish(); },
      &service_));
  Event({{"event", "fleet_started"},
         {"prometheus", query_->url()},
         {"job_label", o_.job_label},
         {"shard", o_.shard},
         {"interval_s", o_.interval_s},
         {"hang_confirm_s", o_.triage.hang_confirm_s}});
  return Status::Ok();
}

void FleetService::Event(json event) {
  event["wall_time"] = FormatIsoMs(clock_->NowUnixMs(), true);
  if (service_.events) service_.events->Push(std::move(event));
}

void FleetService::SleepS(double s, std::atomic<int>* stop) {
  const int64_t deadline = clock_->NowMonotonicNs() + static_cast<int64_t>(s * 1e9);
  // In slices, so a signal stops the wait within 100 ms.
  while (clock_->NowMonotonicNs() < deadline && !(stop && stop->load() != 0)) {
    clock_->SleepUntilMonotonicNs(
        std::min(deadline, clock_->NowMonotonicNs() + int64_t{100'000'000}));
  }
}

template <typename T, typename F>
Result<T> FleetService::WithRetries(F&& call, std::atomic<int>* stop) {
  double backoff = o_.retry_backoff_s;
  for (int attempt = 0;; ++attempt) {
    const int64_t t0 = clock_->NowMonotonicNs();
    ++self_.query_requests;
    Result<T> r = call();
    self_.query_seconds.Observe(static_cast<double>(clock_->NowMonotonicNs() - t0) / 1e9);
    if (r.ok()) {
      any_answer_ = true;
      return r;
    }
    // A refusal (bad query) will not get better by asking again; no answer or overload may.
    const bool retry = r.status().code() == StatusCode::kUnavailable && attempt < o_.retries &&
                       !(stop && stop->load() != 0);
    if (!retry) return r;
    ++self_.query_retries;
    spdlog::warn("{} (retry {} of {} in {:g} s)", r.status().message(), attempt + 1, o_.retries,
                 backoff);
    if (!replay_clock_) SleepS(backoff, stop);
    backoff *= 2;
  }
}

CycleReport FleetService::Cycle() {
  CycleReport rep;
  const int64_t wall0 = clock_->NowMonotonicNs();
  ++self_.cycles;
  const int64_t end = NowMs();
  const int64_t lookback = static_cast<int64_t>(o_.lookback_s * 1000);
  const int64_t overlap = std::min(
      lookback, self_.scrape_interval_ms > 0 ? 2 * self_.scrape_interval_ms : kDefaultOverlapMs);
  int64_t start = self_.covered_until_ms > 0 ? self_.covered_until_ms - overlap : end - lookback;
  int64_t skipped_ms = 0;
  if (self_.covered_until_ms > 0 && self_.covered_until_ms < end - lookback) {
    // Out for longer than the lookback: the oldest part is not read (a gap, not a verdict);
    // counted once the range after it has been read.
    skipped_ms = end - lookback - self_.covered_until_ms;
    start = end - lookback;
  }
  rep.start_ms = start;
  rep.end_ms = end;
  bool ok = true;
  for (int64_t from = start; from < end;) {
    const int64_t to = std::min(end, from + (chunk_ms_ > 0 ? chunk_ms_ : kFirstChunkMs));
    const double cpu0 = ThreadCpuS();
    auto batch = WithRetries<FleetBatch>([&] { return query_->Samples(from, to); }, stop_);
    ++rep.requests;
    if (!batch.ok()) {
      ++self_.query_errors;
      if (batch.status().code() == StatusCode::kIoError) ++self_.unusable_answers;
      self_.last_error = batch.status().message();
      spdlog::error("{}; the range from {} is read again next cycle", batch.status().message(),
                    FormatIsoMs(from, true));
      if (batch.status().code() == StatusCode::kInvalidInput && !any_answer_) {
        fatal_ = batch.status();
      }
      ok = false;
      break;
    }
    const double cpu1 = ThreadCpuS();
    rep.server_s += batch->server_seconds;
    rep.decode_cpu_s += cpu1 - cpu0;
    if (batch->server_warnings > 0) {
      ++self_.partial_responses;
      spdlog::warn("Prometheus warns the answer for [{}, {}] may be partial",
                   FormatIsoMs(from, true), FormatIsoMs(to, true));
    }
    for (const std::string& w : batch->warnings) {
      ++self_.answer_warnings;
      spdlog::warn("Prometheus answer for [{}, {}]: {}", FormatIsoMs(from, true),
                   FormatIsoMs(to, true), w);
    }
    // The listing was counted as the request; each page is one more.
    self_.query_requests += static_cast<uint64_t>(batch->pages);
    self_.query_pages += static_cast<uint64_t>(batch->pages);
    if (from == start) self_.hosts_listed = batch->hosts_listed;
    DropOutOfRange(from, to, &*batch);
    if (batch->spacing_ms > 0) self_.scrape_interval_ms = batch->spacing_ms;
    if (batch->series > 0 && self_.scrape_interval_ms > 0) {
      // Size the next request to about kMaxPointsPerRequest points.
      chunk_ms_ = std::max<int64_t>(
          self_.scrape_interval_ms,
          kMaxPointsPerRequest / std::max<int64_t>(1, batch->series) * self_.scrape_interval_ms);
    }
    const IngestStats st = table_->Ingest(*batch);
    rep.evaluate_cpu_s += ThreadCpuS() - cpu1;
    rep.samples += st.samples_fed;
    self_.samples_read +=
        static_cast<uint64_t>(st.samples_fed + st.samples_unattributed + st.samples_other_shard);
    self_.samples_unattributed += static_cast<uint64_t>(st.samples_unattributed);
    self_.covered_until_ms = std::max(self_.covered_until_ms, to);
    if (skipped_ms > 0) {
      self_.gap_seconds += static_cast<uint64_t>(skipped_ms / 1000);
      spdlog::warn("{} s of data older than --lookback-s were not read", skipped_ms / 1000);
      skipped_ms = 0;
    }
    from = to;
  }
  const double cpu2 = ThreadCpuS();
  if (ok) {
    // Only what was read decides: a job is closed on data, never on an outage.
    table_->CloseIdle(self_.covered_until_ms);
    self_.last_success_unix_ms = clock_->NowUnixMs();
  }
  self_.prometheus_up = ok;
  if (!ok) ++self_.cycles_failed;
  Dispatch(table_->TakeEvents());
  rep.evaluate_cpu_s += ThreadCpuS() - cpu2;
  self_.evaluation_seconds.Observe(rep.decode_cpu_s + rep.evaluate_cpu_s);
  rep.ok = ok;
  rep.jobs = table_->jobs().size();
  rep.wall_s = static_cast<double>(clock_->NowMonotonicNs() - wall0) / 1e9;
  Publish();
  return rep;
}

void FleetService::DropOutOfRange(int64_t from_ms, int64_t to_ms, FleetBatch* batch) {
  // A range vector holds samples stamped in (from, to]; one stamped elsewhere (50 years ahead)
  // would become its GPU's newest and make every later sample of it look old: that GPU, and a
  // hang of its job, would never be seen again.
  const int64_t lo = from_ms - kRangeSlackMs;
  const int64_t hi = to_ms + kRangeSlackMs;
  int64_t dropped = 0;
  std::string example;
  std::erase_if(batch->samples, [&](const GpuSample& s) {
    if (s.timestamp_ms >= lo && s.timestamp_ms <= hi) return false;
    if (dropped++ == 0) {
      example = fmt::format(
          "{}/GPU{} at {}",
          s.key.host < batch->hosts.size() ? batch->hosts[s.key.host] : std::string("?"), s.key.gpu,
          FormatIsoMs(s.timestamp_ms, true));
    }
    return true;
  });
  if (dropped == 0) return;
  self_.samples_out_of_range += static_cast<uint64_t>(dropped);
  spdlog::warn("{} sample(s) stamped outside the range asked for [{}, {}] dropped (first: {})",
               dropped, FormatIsoMs(from_ms, true), FormatIsoMs(to_ms, true), example);
}

void FleetService::Dispatch(std::vector<JobEvent> events) {
  for (JobEvent& e : events) {
    switch (e.kind) {
      case JobEvent::Kind::kHangConfirmed: {
        // A hang that already ended within the range just read (a catch-up after start or an
        // outage) is history: it goes to the events file, but nobody is paged for it.
        auto it = table_->jobs().find(e.job);
        const triage::HangEpisode* active =
            it == table_->jobs().end() ? nullptr : it->second->engine().active_hang();
        const bool current =
            active != nullptr && active->start_ms == e.payload.value("since_ms", int64_t{0});
        e.payload["historical"] = !current;
        spdlog::warn("HANG confirmed in job {}: {} GPUs stuck since {} (culprits: {}){}", e.job,
                     e.payload["gpus"].size(), e.payload.value("since", ""),
                     e.payload["culprits"].empty() ? "none named" : e.payload["culprits"].dump(),
                     current ? "" : " (already over: not alerted)");
        for (const auto& r : e.payload["reasons"]) spdlog::warn("  {}", r.get<std::string>());
        if (current && service_.actions && !service_.actions->empty()) {
          service_.actions->Submit(e.payload);
        }
        break;
      }
      case JobEvent::Kind::kHangEnded:
        spdlog::info("hang over in job {} at {}", e.job, e.payload.value("end", ""));
        break;
      case JobEvent::Kind::kJobClosed:
        spdlog::info("job {} closed ({}): {} GPUs, verdict {}", e.job,
                     e.payload.value("closed", ""), e.payload.value("gpus", 0),
                     e.payload.value("verdict", ""));
        break;
    }
    Event(std::move(e.payload));
  }
}

void FleetService::Publish() {
  self_.now_unix_ms = NowMs();
  const bool fresh = watch::DataFresh(clock_->NowUnixMs(),
                                      self_.last_success_unix_ms > 0
                                          ? std::optional<int64_t>(self_.last_success_unix_ms)
                                          : std::nullopt,
                                      std::llround(o_.interval_s * 1000));
  snapshot_.Publish(table_ ? RenderFleetMetrics(*table_, self_) : std::string(),
                    table_ ? FleetJobsJson(*table_, self_).dump() : std::string("{}"), fresh);
}

Status FleetService::Run(std::atomic<int>* stop) {
  stop_ = stop;
  const int64_t interval_ns = static_cast<int64_t>(o_.interval_s * 1e9);
  int64_t next = clock_->NowMonotonicNs();
  while (!(stop && stop->load() != 0)) {
    reports_.push_back(Cycle());
    if (reports_.size() > kMaxReports) reports_.pop_front();
    if (!fatal_.ok()) return fatal_;
    if (o_.once) break;
    if (replay_clock_) {
      if (replay_clock_->NowUnixMs() >= *o_.replay_end_ms) break;
      const int64_t step_ns = std::min<int64_t>(
          interval_ns, (*o_.replay_end_ms - replay_clock_->NowUnixMs()) * 1'000'000);
      replay_clock_->AdvanceNs(std::max<int64_t>(step_ns, 1'000'000));
      continue;
    }
    next += interval_ns;
    const int64_t now = clock_->NowMonotonicNs();
    if (next < now) next = now;  // a cycle longer than the interval: start the next at once
    SleepS(static_cast<double>(next - now) / 1e9, stop);
  }
  if (replay_clock_) {
    // A replay is a finished range: every job closes with its summary, as triage's would.
    table_->CloseAll();
    Dispatch(table_->TakeEvents());
    Publish();
  }
  Event({{"event", "fleet_stopped"}, {"cycles", self_.cycles}, {"jobs", table_->jobs().size()}});
  return Status::Ok();
}

json FleetService::SummaryJson() const {
  json j = FleetJobsJson(*table_, self_);
  json open = json::array();
  for (const auto& [id, job] : table_->jobs()) open.push_back(job->ToJson(true));
  j["jobs"] = open;
  j["cycles"] = self_.cycles;
  j["query_requests"] = self_.query_requests;
  j["samples_read"] = self_.samples_read;
  j["cycles_failed"] = self_.cycles_failed;
  j["unusable_answers"] = self_.unusable_answers;
  j["samples_out_of_range"] = self_.samples_out_of_range;
  json cycles = json::array();
  for (const CycleReport& r : reports_) {
    cycles.push_back({{"start", r.start_ms > 0 ? FormatIsoMs(r.start_ms, true) : ""},
                      {"end", r.end_ms > 0 ? FormatIsoMs(r.end_ms, true) : ""},
                      {"ok", r.ok},
                      {"requests", r.requests},
                      {"samples", r.samples},
                      {"jobs", r.jobs},
                      {"wall_s", r.wall_s},
                      {"server_s", r.server_s},
                      {"decode_cpu_s", r.decode_cpu_s},
                      {"evaluate_cpu_s", r.evaluate_cpu_s}});
  }
  j["cycle_reports"] = cycles;
  return j;
}

int RunFleetCommand(const FleetOptions& options, std::atomic<int>* stop, std::ostream& out,
                    std::ostream& err) {
  FleetOptions o = options;
  auto matchers = SelectorMatchers(o.selector);
  if (!matchers.ok()) {
    err << "wattwatch fleet: " << matchers.status().message() << "\n";
    return kExitBadInput;
  }
  if (o.replay_start_ms.has_value() != o.replay_end_ms.has_value() ||
      (o.replay_start_ms && *o.replay_end_ms <= *o.replay_start_ms)) {
    err << "wattwatch fleet: --start and --end go together, --end after --start\n";
    return kExitBadInput;
  }
  auto http = ingest::MakePromHttp(o.prometheus_url, o.http);
  if (!http.ok()) {
    err << "wattwatch fleet: " << http.status().message() << "\n";
    return kExitBadInput;
  }
  PromFleetQuery query(http->get(), SystemClock(), *matchers, o.vendor);
  std::unique_ptr<ManualClock> replay;
  if (o.replay_start_ms) replay = std::make_unique<ManualClock>(*o.replay_start_ms);
  FleetService service(o, &query, SystemClock(), replay.get());
  if (Status st = service.Start(); !st.ok()) {
    err << "wattwatch fleet: " << st.message() << "\n";
    return kExitBadInput;
  }
  spdlog::info("judging every job by {} from {} every {:g} s (shard {}; query {}[RANGE])",
               o.job_label, o.prometheus_url, o.interval_s, o.shard, query.selector());
  Status st = service.Run(stop);
  if (o.json) out << service.SummaryJson().dump(2) << "\n";
  if (!st.ok()) {
    err << "wattwatch fleet: " << st.message() << "\n";
    return kExitBadInput;
  }
  // One cycle asked for and it could not read Prometheus: the caller got no verdicts.
  if (o.once && !service.cycles().empty() && !service.cycles().back().ok) {
    err << "wattwatch fleet: --once: " << service.self().last_error << "\n";
    return kExitBadInput;
  }
  // A replay with ranges never read is no evidence of "no hangs": its report is incomplete.
  if (o.replay_start_ms && service.self().cycles_failed > 0) {
    err << fmt::format(
        "wattwatch fleet: replay incomplete: {} of {} cycles failed, their data was not judged "
        "(last error: {})\n",
        service.self().cycles_failed, service.self().cycles, service.self().last_error);
    return kExitBadInput;
  }
  return kExitOk;
}

}  // namespace ww::fleet
