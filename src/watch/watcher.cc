#include "watch/watcher.h"

#include <fmt/format.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <fstream>
#include <mutex>

#include "core/timefmt.h"
#include "export/event_log.h"
#include "telemetry/nvml/nvml_source.h"
#include "telemetry/pacer.h"

namespace ww::watch {

using nlohmann::json;

// Writes events off the sampling thread: fsync per event costs milliseconds on
// a busy disk, and the sampling schedule must not slip for it.
struct Watcher::EventWriter {
  explicit EventWriter(std::unique_ptr<exporter::EventLog> log) : log_(std::move(log)) {
    thread_ = std::thread([this] { Loop(); });
  }
  ~EventWriter() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }
  void Push(json event) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back(std::move(event));
    }
    cv_.notify_all();
  }
  void Loop() {
    bool failing = false;
    for (;;) {
      json e;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
        if (queue_.empty()) return;  // stopping, and everything queued is written
        e = std::move(queue_.front());
        queue_.pop_front();
      }
      Status st = log_->Append(e);
      if (!st.ok() && !failing) spdlog::error("{}", st.message());
      failing = !st.ok();
    }
  }
  std::unique_ptr<exporter::EventLog> log_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<json> queue_;
  bool stopping_ = false;
  std::thread thread_;
};

namespace {

constexpr size_t kLatenessRing = 200000;

double Percentile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())));
  return v[i];
}

}  // namespace

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
    for (GpuKey k : e.culprits) {
      culprits.push_back(fmt::format("{}:{}", k.host < hosts.size() ? hosts[k.host] : "?", k.gpu));
    }
    h["culprits"] = culprits;
    h["reasons"] = e.reasons;
    j["hangs"].push_back(h);
  }
  j["killed_for_hang"] = killed_for_hang;
  if (child_exit_code) j["child_exit_code"] = *child_exit_code;
  if (!listen_address.empty()) j["listen"] = listen_address;
  return j;
}

Watcher::Watcher(TelemetrySource* source, nvml::NvmlSource* nvml, Clock* clock,
                 WatchOptions options, std::vector<std::unique_ptr<ProgressProbe>> probes)
    : source_(source),
      nvml_(nvml),
      clock_(clock),
      o_(std::move(options)),
      probes_(std::move(probes)),
      engine_(
          [this] {
            triage::TriageOptions t = o_.triage;
            t.auto_confirm = false;
            t.hang_confirm_s = o_.policy.confirm_s;  // only for the notes on an unconfirmed end
            return t;
          }(),
          this),
      metrics_(o_.identity) {
  for (const auto& p : probes_) {
    ProbeState s;
    s.kind = p->kind();
    s.watches_process = p->watches_process();
    probe_states_.push_back(s);
  }
}

Watcher::~Watcher() {
  killer_stop_.store(true);
  if (killer_.joinable()) killer_.join();
  if (server_) server_->Stop();
  actions_.reset();
  events_.reset();
}

const std::vector<std::string>& Watcher::hosts() const { return source_->hosts(); }

Status Watcher::Start() {
  if (!o_.events_path.empty()) {
    auto log = exporter::EventLog::Open(o_.events_path);
    if (!log.ok()) return log.status();
    events_ = std::make_unique<EventWriter>(std::move(*log));
  }
  if (!o_.actions.webhook_url.empty()) {
    if (Status st = ValidateWebhookUrl(o_.actions.webhook_url); !st.ok()) return st;
  }
  if (!o_.actions.hook_argv.empty() && FindOnPath(o_.actions.hook_argv[0]).empty()) {
    return Status::InvalidInput(
        fmt::format("--hook '{}': not found or not executable", o_.actions.hook_argv[0]));
  }
  actions_ = std::make_unique<ActionRunner>(o_.actions, [this](const json& outcome) {
    if (outcome.contains("error")) {
      spdlog::error("{} failed: {}", outcome.value("action", "action"),
                    outcome["error"].get<std::string>());
    } else {
      spdlog::info("{} done: {}", outcome.value("action", "action"), outcome.dump());
    }
    Event(outcome);
  });
  Publish(false);
  if (!o_.listen.empty()) {
    server_ = std::make_unique<exporter::MetricsServer>(&snapshot_);
    auto addr = server_->Start(o_.listen);
    if (!addr.ok()) return addr.status();
    summary_.listen_address = *addr;
    spdlog::info("serving http://{}/metrics", *addr);
    if (!o_.ready_file.empty()) {
      const std::string tmp = o_.ready_file + ".tmp";
      {
        std::ofstream f(tmp);
        f << *addr << "\n";
        if (!f) return Status::IoError(fmt::format("--ready-file {}: cannot write", o_.ready_file));
      }
      if (std::rename(tmp.c_str(), o_.ready_file.c_str()) != 0) {
        return Status::IoError(fmt::format("--ready-file {}: cannot rename", o_.ready_file));
      }
    }
  }
  Event({{"event", "watch_started"},
         {"source", o_.source_label},
         {"speed", o_.speed},
         {"confirm_s", o_.policy.confirm_s},
         {"confirm_proc_s", o_.policy.confirm_proc_s},
         {"probes", [this] {
            json a = json::array();
            for (const auto& p : probe_states_) a.push_back(p.kind);
            return a;
          }()}});
  return Status::Ok();
}

void Watcher::Event(json event) {
  event["host"] = o_.identity.host;
  if (!o_.identity.job_id.empty()) event["job_id"] = o_.identity.job_id;
  const int64_t wall = clock_->NowUnixMs();
  event["wall_time"] = FormatIsoMs(wall, true);
  if (events_) events_->Push(std::move(event));
}

std::string Watcher::GpuName(GpuKey key) const {
  const auto& h = source_->hosts();
  std::string host = key.host < h.size() ? h[key.host] : "?";
  if (h.size() <= 1 && !o_.identity.host.empty()) host = o_.identity.host;
  return fmt::format("{}:{}", host, key.gpu);
}

json Watcher::HangJson(const triage::HangEpisode& e, const char* event) const {
  json j;
  j["event"] = event;
  j["since"] = FormatIsoMs(e.start_ms);
  j["since_ms"] = e.start_ms;
  j["detected_at"] = FormatIsoMs(e.detected_at_ms);
  j["time_ms"] = e.end_ms;
  json gpus = json::array(), culprits = json::array();
  for (GpuKey k : e.gpus) gpus.push_back(GpuName(k));
  for (GpuKey k : e.culprits) culprits.push_back(GpuName(k));
  j["gpus"] = gpus;
  j["culprits"] = culprits;
  j["reasons"] = e.reasons;
  j["wasted_gpu_hours"] = e.wasted_gpu_hours();
  j["host"] = o_.identity.host;
  if (!o_.identity.job_id.empty()) j["job_id"] = o_.identity.job_id;
  return j;
}

void Watcher::OnLabel(const triage::LabeledSample& label) {
  metrics_.OnLabel(label.key, label.timestamp_ms, label.state, o_.triage.max_gap_s);
}

void Watcher::OnStateChange(GpuKey key, GpuState from, GpuState to, int64_t at_ms) {
  auto rep = reported_state_.find(key);
  if (rep != reported_state_.end() && rep->second == to) {
    pending_changes_.erase(key);  // back to what was reported: nothing to tell
    return;
  }
  auto it = pending_changes_.find(key);
  if (it != pending_changes_.end()) {
    it->second.to = to;
    it->second.at_ms = at_ms;
  } else {
    pending_changes_[key] = {rep != reported_state_.end() ? rep->second : from, to, at_ms};
  }
}

void Watcher::FlushStateEvents(int64_t now_ms, bool all) {
  const auto min_ms = static_cast<int64_t>(o_.event_min_state_s * 1000);
  for (auto it = pending_changes_.begin(); it != pending_changes_.end();) {
    const PendingChange& c = it->second;
    if (all || c.to == GpuState::kHang || now_ms - c.at_ms >= min_ms) {
      Event({{"event", "state_change"},
             {"gpu", GpuName(it->first)},
             {"from", StateName(c.from)},
             {"to", StateName(c.to)},
             {"since", FormatIsoMs(c.at_ms)},
             {"time_ms", c.at_ms}});
      reported_state_[it->first] = c.to;
      it = pending_changes_.erase(it);
    } else {
      ++it;
    }
  }
}

void Watcher::OnHangConfirmed(const triage::HangEpisode& e) {
  json j = HangJson(e, "hang_confirmed");
  std::string culprits;
  for (const auto& c : j["culprits"])
    culprits += (culprits.empty() ? "" : ", ") + c.get<std::string>();
  spdlog::warn("HANG confirmed on {}: {} GPUs stuck since {} (culprits: {})", o_.identity.host,
               e.gpus.size(), FormatIsoMs(e.start_ms), culprits.empty() ? "none named" : culprits);
  for (const auto& r : e.reasons) spdlog::warn("  {}", r);
  Event(j);
  if (actions_) actions_->Submit(j);
  if (o_.child) StartKill(e);
}

void Watcher::OnHangEnded(const triage::HangEpisode& e) {
  spdlog::info("hang on {} ended after {:.0f} s ({:.3f} GPU-hours)", o_.identity.host,
               static_cast<double>(e.end_ms - e.start_ms) / 1000.0, e.wasted_gpu_hours());
  json j = HangJson(e, "hang_ended");
  j["ongoing"] = e.ongoing;
  Event(j);
}

void Watcher::StartKill(const triage::HangEpisode& e) {
  if (killer_.joinable() || o_.child->exited()) return;
  summary_.killed_for_hang = true;
  ChildProcess* child = o_.child;
  killer_ = std::thread([this, child] {
    auto wait_exit = [&](double seconds) {
      const auto deadline = std::chrono::steady_clock::now() +
                            std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
      while (!child->exited() && !killer_stop_.load() &&
             std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      return child->exited();
    };
    const std::string pyspy = FindOnPath("py-spy");
    if (!pyspy.empty()) {
      spdlog::warn("diagnostics: py-spy dump of process {} and its children", child->pid());
      auto rc = RunCommand({pyspy, "dump", "--pid", std::to_string(child->pid()), "--subprocesses"},
                           {}, o_.diag_timeout_s, o_.diag_output);
      json ev = {{"event", "diagnostics"}, {"tool", "py-spy"}, {"pid", child->pid()}};
      if (rc.ok()) {
        ev["exit_code"] = *rc;
      } else {
        ev["error"] = rc.status().message();
      }
      if (!o_.diag_output.empty()) ev["output"] = o_.diag_output;
      Event(ev);
    } else if (o_.diag_signal) {
      spdlog::warn("diagnostics: py-spy not installed; sending signal {} to the job",
                   *o_.diag_signal);
      child->SignalGroup(*o_.diag_signal);
      Event({{"event", "diagnostics"}, {"signal", *o_.diag_signal}, {"pid", child->pid()}});
      wait_exit(2);
    }
    if (wait_exit(0)) return;
    spdlog::warn("stopping the job: SIGTERM to process group {}", child->pid());
    Event({{"event", "kill"}, {"signal", "SIGTERM"}, {"pgid", child->pid()}});
    child->SignalGroup(SIGTERM);
    if (wait_exit(o_.kill_grace_s)) return;
    if (killer_stop_.load()) return;
    spdlog::warn("job still running {:.0f} s after SIGTERM: SIGKILL", o_.kill_grace_s);
    Event({{"event", "kill"}, {"signal", "SIGKILL"}, {"pgid", child->pid()}});
    child->SignalGroup(SIGKILL);
  });
}

void Watcher::PollProbes(int64_t now_ms) {
  if (probes_.empty()) return;
  if (last_probe_ms_ != INT64_MIN && now_ms - last_probe_ms_ < o_.probe_interval_ms) return;
  const double elapsed_s =
      last_probe_ms_ == INT64_MIN ? 0 : static_cast<double>(now_ms - last_probe_ms_) / 1000.0;
  last_probe_ms_ = now_ms;
  for (size_t i = 0; i < probes_.size(); ++i) {
    ProbeReading r = probes_[i]->Poll(elapsed_s);
    ProbeState& s = probe_states_[i];
    s.available = r.available;
    s.last_detail = r.detail;
    if (r.moved) {
      s.last_moved_ms = now_ms;
      s.last_move_was_write = r.writes;
      s.last_move_detail = r.detail;
    }
  }
}

void Watcher::Tick(const std::vector<GpuSample>& batch, int64_t now_ms) {
  if (!named_) {
    engine_.SetGpuInfo(source_->gpus());
    engine_.SetHostNames(source_->hosts());
    metrics_.SetHostNames(source_->hosts());
    named_ = true;
  }
  for (const GpuSample& s : batch) {
    metrics_.OnSample(s);
    engine_.Add(s);
  }
  for (const GpuSample& s : batch) {
    if (auto st = engine_.current_state(s.key)) {
      metrics_.OnLiveState(s.key, *st);
      reported_state_.try_emplace(s.key, *st);
    }
  }
  PollProbes(now_ms);
  const auto cand = engine_.hang_candidate();
  last_decision_ = DecideHang(now_ms, cand ? std::optional<int64_t>(cand->start_ms) : std::nullopt,
                              probe_states_, o_.policy);
  if (last_decision_.verdict == HangVerdict::kDismiss) {
    // Progress often dismisses a candidate within a second, tick after tick, through a whole
    // checkpoint: write it when a candidate had lasted 10 s, else at most once a minute.
    const bool long_wait = cand && now_ms - cand->start_ms >= 10'000;
    if (long_wait || last_dismiss_event_ms_ == INT64_MIN ||
        now_ms - last_dismiss_event_ms_ >= 60'000) {
      last_dismiss_event_ms_ = now_ms;
      spdlog::info("GPUs wait, but the job moves: {}", last_decision_.reasons.front());
      Event({{"event", "hang_dismissed"},
             {"since", FormatIsoMs(cand->start_ms)},
             {"time_ms", now_ms},
             {"reasons", last_decision_.reasons}});
    }
    engine_.DismissHangCandidate();
  } else if (last_decision_.verdict == HangVerdict::kConfirm) {
    engine_.ConfirmHangCandidate(now_ms, last_decision_.reasons);
  }
  FlushStateEvents(now_ms, false);
  const triage::HangEpisode* active = engine_.active_hang();
  metrics_.SetHang(active != nullptr,
                   active ? static_cast<double>(now_ms - active->start_ms) / 1000.0 : 0,
                   engine_.wasted_gpu_hours() * 3600);
  ++summary_.ticks;
  summary_.samples += static_cast<int64_t>(batch.size());
  last_tick_ms_ = now_ms;
}

json Watcher::StateJson() const {
  json j;
  j["host"] = o_.identity.host;
  if (!o_.identity.job_id.empty()) j["job_id"] = o_.identity.job_id;
  j["source"] = o_.source_label;
  j["source_ended"] = source_done_;
  if (last_tick_ms_ != INT64_MIN) {
    j["time"] = FormatIsoMs(last_tick_ms_);
    j["time_ms"] = last_tick_ms_;
  }
  if (const triage::HangEpisode* a = engine_.active_hang()) {
    j["hang"] = HangJson(*a, "hang");
    j["hang"].erase("event");
  } else {
    j["hang"] = nullptr;
  }
  if (const auto c = engine_.hang_candidate()) {
    j["hang_candidate"] = {{"since", FormatIsoMs(c->start_ms)},
                           {"quiet_s", last_decision_.quiet_s},
                           {"needed_s", last_decision_.needed_s}};
  } else {
    j["hang_candidate"] = nullptr;
  }
  json gpus = json::array();
  for (const auto& [key, state] : reported_state_) {
    json g = {{"gpu", GpuName(key)}};
    if (auto st = engine_.current_state(key)) g["state"] = StateName(*st);
    gpus.push_back(g);
  }
  j["gpus"] = gpus;
  json probes = json::array();
  for (const auto& p : probe_states_) {
    json pj = {{"kind", p.kind}, {"available", p.available}, {"detail", p.last_detail}};
    if (p.last_moved_ms != INT64_MIN) pj["last_moved"] = FormatIsoMs(p.last_moved_ms);
    probes.push_back(pj);
  }
  j["probes"] = probes;
  j["wasted_gpu_hours"] = engine_.wasted_gpu_hours();
  return j;
}

bool Watcher::Fresh() const {
  if (source_done_) return true;  // a finished replay (lingering) is not a failure
  if (last_sample_wall_ms_ == INT64_MIN) return false;
  const int64_t max_age_ms = std::max<int64_t>(5000, 5 * o_.interval_ms);
  return clock_->NowUnixMs() - last_sample_wall_ms_ <= max_age_ms;
}

void Watcher::Publish(bool healthy) {
  snapshot_.Publish(metrics_.Render(),
                    StateJson().dump(-1, ' ', false, json::error_handler_t::replace), healthy);
}

Status Watcher::Run(std::atomic<int>* pending_signal) {
  std::vector<GpuSample> batch;
  Pacer pacer = o_.live ? Pacer::Live(*clock_, o_.interval_ms) : Pacer::Replay(*clock_, o_.speed);
  int64_t last_publish_ns = INT64_MIN;
  size_t lateness_pos = 0;
  bool stop = false;

  // Returns true when the loop must act now (a signal, the child exited).
  auto interrupted = [&] {
    const int sig = pending_signal ? pending_signal->exchange(0) : 0;
    if (sig != 0) {
      if (o_.child && !o_.child->exited()) {
        spdlog::info("forwarding signal {} to the job (pid {})", sig, o_.child->pid());
        o_.child->Signal(sig);
        Event({{"event", "signal_forwarded"}, {"signal", sig}});
      } else {
        spdlog::info("signal {}: stopping", sig);
        stop = true;
      }
    }
    if (o_.child && !summary_.child_exit_code) {
      if (auto rc = o_.child->Poll()) {
        summary_.child_exit_code = rc;
        Event({{"event", "child_exited"}, {"exit_code", *rc}});
        spdlog::info("job exited with code {}", *rc);
      }
    }
    return stop || summary_.child_exit_code.has_value();
  };
  auto sleep_until = [&](int64_t deadline_ns) {
    for (;;) {
      if (interrupted()) return;
      const int64_t now = clock_->NowMonotonicNs();
      if (now >= deadline_ns) return;
      clock_->SleepUntilMonotonicNs(std::min(deadline_ns, now + 50'000'000));
    }
  };
  auto record_lateness = [&](int64_t late_ns) {
    const double ms = static_cast<double>(std::max<int64_t>(0, late_ns)) / 1e6;
    metrics_.ObserveTickLateness(ms / 1000.0);
    if (lateness_ms_.size() < kLatenessRing) {
      lateness_ms_.push_back(ms);
    } else {
      lateness_ms_[lateness_pos] = ms;
      lateness_pos = (lateness_pos + 1) % kLatenessRing;
    }
  };

  Status result = Status::Ok();
  while (!interrupted()) {
    if (source_done_) {
      if (!o_.linger && !o_.child) break;
      sleep_until(clock_->NowMonotonicNs() + 100'000'000);
      Publish(Fresh());
      continue;
    }
    if (o_.live) {
      sleep_until(pacer.DueNs());
      if (stop || summary_.child_exit_code) break;
      // Behind by whole ticks (the machine stalled): the pacer skips them rather than burst.
      const TickStart tick = pacer.Begin();
      record_lateness(tick.lateness_ns);
      if (tick.dropped_ticks > 0) {
        const uint64_t gpus = std::max<size_t>(1, reported_state_.size());
        summary_.samples_dropped += tick.dropped_ticks * gpus;
        metrics_.AddDropped(tick.dropped_ticks * gpus);
      }
    }
    batch.clear();
    const int64_t t0 = clock_->NowMonotonicNs();
    Status st = source_->Next(&batch);
    metrics_.ObserveSampleDuration(static_cast<double>(clock_->NowMonotonicNs() - t0) / 1e9);
    if (!st.ok()) {
      if (!o_.live) {
        result = st;
        break;
      }
      // A failing device must not end the watch: count the tick as dropped and
      // go on.
      if (!failing_) spdlog::warn("sampling failed: {} (retrying every tick)", st.message());
      failing_ = true;
      const uint64_t gpus = std::max<size_t>(1, reported_state_.size());
      summary_.samples_dropped += gpus;
      metrics_.AddDropped(gpus);
      Publish(Fresh());
      continue;
    }
    if (failing_) spdlog::info("sampling works again");
    failing_ = false;
    if (nvml_) {
      const uint64_t stale = nvml_->stale_samples();
      if (stale > nvml_stale_seen_) {
        metrics_.AddDropped(stale - nvml_stale_seen_);
        summary_.samples_dropped += stale - nvml_stale_seen_;
      }
      nvml_stale_seen_ = stale;
    }
    if (batch.empty()) {
      source_done_ = true;
      engine_.Finish();
      FlushStateEvents(last_tick_ms_, true);
      metrics_.SetHang(false, 0, engine_.wasted_gpu_hours() * 3600);
      Event({{"event", "source_ended"}});
      spdlog::info("source ended after {} ticks", summary_.ticks);
      Publish(true);
      continue;
    }
    if (!o_.live) {
      sleep_until(pacer.DueNs(batch.front().timestamp_ms));
      if (stop || summary_.child_exit_code) break;
      record_lateness(pacer.Begin().lateness_ns);
    }
    int64_t now_ms = batch.front().timestamp_ms;
    for (const GpuSample& s : batch) now_ms = std::max(now_ms, s.timestamp_ms);
    last_sample_wall_ms_ = clock_->NowUnixMs();
    metrics_.SetLastSampleUnixS(static_cast<double>(last_sample_wall_ms_) / 1000.0);
    const bool had_hang = engine_.hang_active();
    Tick(batch, now_ms);
    const int64_t now_ns = clock_->NowMonotonicNs();
    if (had_hang != engine_.hang_active() || last_publish_ns == INT64_MIN ||
        now_ns - last_publish_ns >= 20'000'000) {
      Publish(Fresh());
      last_publish_ns = now_ns;
    }
  }
  if (!source_done_) {
    engine_.Finish();
    FlushStateEvents(last_tick_ms_ == INT64_MIN ? 0 : last_tick_ms_, true);
  }
  // In run mode after a hang kill, wait for the job to go before reporting; but not forever: a
  // process stuck in the driver (uninterruptible sleep) may outlive even SIGKILL.
  if (o_.child && summary_.killed_for_hang && !summary_.child_exit_code) {
    const auto give_up =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(static_cast<int64_t>(
                                               (o_.diag_timeout_s + o_.kill_grace_s + 60) * 1000));
    while (!o_.child->Poll() && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    summary_.child_exit_code = o_.child->Poll();
    if (!summary_.child_exit_code) {
      spdlog::error(
          "the job (pid {}) survived SIGKILL for 60 s (stuck in the kernel or driver?); exiting 3 "
          "without it",
          o_.child->pid());
    }
  }
  summary_.hangs = engine_.hang_episodes();
  summary_.tick_lateness_p50_ms = Percentile(lateness_ms_, 0.50);
  summary_.tick_lateness_p99_ms = Percentile(lateness_ms_, 0.99);
  summary_.tick_lateness_max_ms = Percentile(lateness_ms_, 1.0);
  Event({{"event", "watch_stopped"}, {"summary", summary_.ToJson(source_->hosts())}});
  Publish(false);
  return result;
}

}  // namespace ww::watch
