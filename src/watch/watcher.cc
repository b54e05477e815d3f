#include "watch/watcher.h"

#include <fmt/format.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>

#include "core/stats.h"
#include "core/timefmt.h"
#include "export/event_log.h"
#include "telemetry/pacer.h"
#include "telemetry/write/nvsmi_writer.h"
#include "watch/startup_checks.h"

namespace ww::watch {

using nlohmann::json;

namespace {

constexpr size_t kLatenessRing = 200000;
constexpr int64_t kRecentTelemetryMs = 10 * 60 * 1000;  // the incident's telemetry window
constexpr size_t kRecentSamplesMax = 2'000'000;         // 64 GPUs at 100 ms for 5 minutes

// The last `max_bytes` of a file from its first whole line: the events so far, for the incident.
// Empty when the file cannot be read (the incident says the slot was not provided).
std::string ReadFileTail(const std::string& path, size_t max_bytes) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return "";
  const std::streamoff size = in.tellg();
  const std::streamoff from = size > static_cast<std::streamoff>(max_bytes)
                                  ? size - static_cast<std::streamoff>(max_bytes)
                                  : 0;
  in.seekg(from);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (from > 0) {
    const size_t nl = text.find('\n');
    text.erase(0, nl == std::string::npos ? text.size() : nl + 1);
  }
  return text;
}

}  // namespace

Watcher::Watcher(TelemetrySource* source, Clock* clock, WatchOptions options,
                 std::vector<std::unique_ptr<ProgressProbe>> probes)
    : source_(source),
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
    s.sees_other_hosts = p->sees_other_hosts();
    probe_states_.push_back(s);
  }
  peer_out_reported_.assign(probes_.size(), false);
}

Watcher::~Watcher() {
  killer_stop_.store(true);
  if (killer_.joinable()) killer_.join();
  service_.Stop();
}

const std::vector<std::string>& Watcher::hosts() const { return source_->hosts(); }

Status Watcher::Start() {
  const ServiceStartOptions so{
      .events_path = o_.events_path,
      .actions = o_.actions,
      .listen = o_.listen,
      .server = o_.server,
      .ready_file = o_.ready_file,
      .serving = "",
      .token_flag = "--state-token-file",
      .open_note = " (give the same file to the watchers that --peer this one)"};
  WW_RETURN_IF_ERROR(StartService(
      so, &snapshot_, [this](json outcome) { Event(std::move(outcome)); },
      [this] { Publish(false); }, &service_));
  summary_.listen_address = service_.listen_address;
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
  if (service_.events) service_.events->Push(std::move(event));
}

std::string Watcher::GpuName(GpuKey key) const {
  return WatchGpuLabel(source_->hosts(), o_.identity.host, key);
}

json Watcher::HangJson(const triage::HangEpisode& e, const char* event) const {
  return HangEventJson(e, event, o_.identity, [this](GpuKey k) { return GpuName(k); });
}

void Watcher::OnLabel(const triage::LabeledSample& label) {
  metrics_.OnLabel(label.key, label.timestamp_ms, label.state, o_.triage.max_gap_s);
}

void Watcher::OnStateChange(GpuKey key, GpuState from, GpuState to, int64_t at_ms) {
  state_events_[key] = NoteStateChange(state_events_[key], from, to, at_ms);
}

void Watcher::FlushStateEvents(int64_t now_ms, bool all) {
  for (auto& [key, debounce] : state_events_) {
    const StateFlush f = FlushStateChange(debounce, now_ms, o_.event_min_state_s, all);
    debounce = f.next;
    if (!f.event) continue;
    Event({{"event", "state_change"},
           {"gpu", GpuName(key)},
           {"from", StateName(f.event->from)},
           {"to", StateName(f.event->to)},
           {"since", FormatIsoMs(f.event->since_ms)},
           {"time_ms", f.event->since_ms}});
  }
}

size_t Watcher::gpus_seen() const {
  size_t n = 0;
  for (const auto& [key, debounce] : state_events_) n += debounce.reported.has_value();
  return n;
}

void Watcher::OnHangConfirmed(const triage::HangEpisode& e) {
  json j = HangJson(e, "hang_confirmed");
  std::string culprits;
  for (const auto& c : j["culprits"])
    culprits += (culprits.empty() ? "" : ", ") + c.get<std::string>();
  spdlog::warn("HANG confirmed on {}: {} GPUs stuck since {} (culprits: {})", o_.identity.host,
               e.gpus.size(), FormatIsoMs(e.start_ms), culprits.empty() ? "none named" : culprits);
  for (const auto& r : e.reasons) spdlog::warn("  {}", r);
  if (!o_.evidence || evidence_task_) {
    ActOnHang(j);
    return;
  }
  // Ask NCCL and the Flight Recorder which rank is behind, off this thread; the event, the actions
  // and the kill wait for the answer (FinishEvidence, polled every tick), the sampling does not.
  evidence::HangContext ctx;
  ctx.confirmed_unix_ms = clock_->NowUnixMs();
  ctx.job = o_.child ? fmt::format("pid {} (process group {})", o_.child->pid(), o_.child->pid())
                     : o_.source_label;
  if (!o_.identity.job_id.empty()) ctx.job += fmt::format(", job {}", o_.identity.job_id);
  for (const auto& r : e.reasons) ctx.hang_reason += (ctx.hang_reason.empty() ? "" : "; ") + r;
  ctx.triage_json = j.dump(2, ' ', false, json::error_handler_t::replace);
  ctx.telemetry_csv = RecentTelemetryCsv();
  if (!o_.events_path.empty()) {
    ctx.events_jsonl = ReadFileTail(o_.events_path, size_t{1} << 20);
  }
  ctx.actions = o_.child
                    ? fmt::format(
                          "diagnostics, then SIGTERM to the job's process group and "
                          "SIGKILL after {:.0f} s",
                          o_.kill.kill_grace_s)
                    : std::string(o_.actions.hook_argv.empty() && o_.actions.webhook_url.empty()
                                      ? "reported (no webhook or hook configured)"
                                      : "webhook/hook notified");
  for (const auto& c : j["culprits"]) ctx.telemetry_culprits.push_back(c.get<std::string>());
  if (ctx.telemetry_culprits.empty()) ctx.telemetry_culprits.push_back("none named by telemetry");
  spdlog::info("collecting hang evidence (NCCL RAS, Flight Recorder) before acting");
  pending_hang_ = std::move(j);
  evidence_task_ = std::make_unique<evidence::EvidenceTask>(*o_.evidence, std::move(ctx), clock_);
}

std::string Watcher::RecentTelemetryCsv() const {
  if (recent_.empty()) return "";
  char* buf = nullptr;
  size_t len = 0;
  std::FILE* mem = open_memstream(&buf, &len);
  if (!mem) return "";
  std::map<GpuKey, GpuInfo> info;
  for (const GpuInfo& g : source_->gpus()) info[g.key] = g;
  NvsmiCsvWriter w(mem, NvsmiColumns::kFull);
  w.WriteHeader();
  static const GpuInfo kNone;
  for (const GpuSample& s : recent_) {
    const auto it = info.find(s.key);
    const GpuInfo& g = it == info.end() ? kNone : it->second;
    w.WriteRow(s, g.name, g.uuid);
  }
  std::fclose(mem);
  std::string out(buf, len);
  std::free(buf);
  return out;
}

void Watcher::ActOnHang(const json& j) {
  Event(j);
  if (service_.actions) service_.actions->Submit(j);
  if (o_.child) StartKill();
}

void Watcher::FinishEvidence(int64_t wait_ms) {
  if (!evidence_task_ || pending_hang_.is_null()) return;
  // Take() never waits past the step's overall deadline, and once that has passed the hang is
  // acted on without the evidence: a peer or a dump that outlasts every budget costs the report,
  // never the kill.
  std::optional<evidence::EvidenceReport> r = evidence_task_->Take(wait_ms);
  if (!r && !evidence_task_->Overdue()) return;  // not yet: the next tick asks again
  json j = std::move(pending_hang_);
  pending_hang_ = json();
  if (r) {
    spdlog::warn("hang evidence ({:.1f} s): {}", r->elapsed_s, r->summary);
    for (const auto& n : r->notes) spdlog::info("  evidence: {}", n);
    j["evidence"] = r->EventFields();
    // The ranks the evidence names become the culprits where telemetry named none (all ranks
    // entered the wait together), with the sentence that says why.
    for (const auto& c : r->culprits) {
      j["reasons"].push_back(fmt::format("{}: {}", c.source, c.reason));
    }
    if (j["culprits"].empty()) {
      for (const auto& c : r->culprits) {
        std::string who = fmt::format("rank {}", c.rank);
        if (!c.host.empty() && c.gpu >= 0) who += fmt::format(" ({} GPU{})", c.host, c.gpu);
        bool seen = false;
        for (const auto& have : j["culprits"]) seen = seen || have == who;
        if (!seen) j["culprits"].push_back(who);
      }
    }
    last_evidence_ = j["evidence"];
    // run: the kill sequence's py-spy stacks go into the incident folder's pyspy/ slot, which
    // INCIDENT.md (written before the kill) points at.
    if (o_.child && !r->incident_dir.empty() && o_.kill.diag_output.empty()) {
      const std::string pyspy_dir = r->incident_dir + "/pyspy";
      std::error_code ec;
      std::filesystem::create_directories(pyspy_dir, ec);
      const std::string pyspy =
          o_.kill.pyspy_path.empty() ? FindOnPath("py-spy") : o_.kill.pyspy_path;
      if (!ec) o_.kill.diag_output = pyspy_dir + "/py-spy-dump.txt";
      std::ofstream md(r->incident_dir + "/INCIDENT.md", std::ios::app);
      md << "\n**Stacks.** "
         << (pyspy.empty() ? "py-spy is not installed on this host: no Python stacks (the kill "
                             "sequence sends the diagnostics signal instead, if one is set)."
                           : "the kill sequence runs `py-spy dump --subprocesses` on the job "
                             "after this file was written: `pyspy/py-spy-dump.txt`.")
         << "\n";
    }
  } else {
    spdlog::error("hang evidence did not finish within its {:.0f} s cap: acting without it",
                  static_cast<double>(o_.evidence->overall_deadline_ms) / 1000.0);
    j["evidence"] = {{"summary", "the evidence step did not finish in time"}};
    metrics_.AddEvidenceOverdue();
  }
  evidence_task_.reset();
  ActOnHang(j);
}

void Watcher::OnHangEnded(const triage::HangEpisode& e) {
  spdlog::info("hang on {} ended after {:.0f} s ({:.3f} GPU-hours)", o_.identity.host,
               static_cast<double>(e.end_ms - e.start_ms) / 1000.0, e.wasted_gpu_hours());
  json j = HangJson(e, "hang_ended");
  j["ongoing"] = e.ongoing;
  Event(j);
}

void Watcher::OnEvent(const triage::TriageEvent& e) {
  switch (e.kind) {
    case triage::TriageEvent::Kind::kGpuLost:
      spdlog::error("{} fell off the bus (\"GPU is lost\") at {}: its peers wait on it",
                    GpuName(e.key), FormatIsoMs(e.start_ms));
      Event({{"event", "gpu_lost"},
             {"gpu", GpuName(e.key)},
             {"since", FormatIsoMs(e.start_ms)},
             {"time_ms", e.start_ms}});
      break;
    case triage::TriageEvent::Kind::kGap:
      spdlog::warn("no telemetry from {} to {} ({:.0f} s): open episodes end at the gap",
                   FormatIsoMs(e.start_ms), FormatIsoMs(e.end_ms),
                   static_cast<double>(e.end_ms - e.start_ms) / 1000.0);
      Event({{"event", "gap"},
             {"from", FormatIsoMs(e.start_ms)},
             {"to", FormatIsoMs(e.end_ms)},
             {"seconds", static_cast<double>(e.end_ms - e.start_ms) / 1000.0}});
      break;
  }
}

void Watcher::StartKill() {
  if (killer_.joinable() || o_.child->exited()) return;
  summary_.killed_for_hang = true;
  KillOptions ko = o_.kill;
  if (ko.pyspy_path.empty()) ko.pyspy_path = FindOnPath("py-spy");
  killer_ = std::thread([this, ko] {
    KillSequence kill(o_.child, clock_, ko, [this](json e) { Event(std::move(e)); });
    const KillOutcome outcome = kill.Run(&killer_stop_);
    spdlog::debug("kill sequence: {}", KillOutcomeName(outcome));
  });
}

void Watcher::StopLeftovers() {
  const int64_t deadline_ns =
      clock_->NowMonotonicNs() + static_cast<int64_t>(o_.kill.kill_grace_s * 1e9);
  while (o_.child->GroupRunning()) {
    if (clock_->NowMonotonicNs() >= deadline_ns) {
      spdlog::warn("the job's processes outlived it by {:.0f} s: SIGKILL to process group {}",
                   o_.kill.kill_grace_s, o_.child->pid());
      Event({{"event", "kill"},
             {"signal", "SIGKILL"},
             {"pgid", o_.child->pid()},
             {"leftovers", true}});
      o_.child->SignalGroup(SIGKILL);
      return;
    }
    o_.child->Poll();  // as PID 1, reaps them as they go
    clock_->SleepUntilMonotonicNs(clock_->NowMonotonicNs() + 20'000'000);
  }
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
    if (s.sees_other_hosts) {
      // Said when it changes, not every poll: while a peer is out, hangs wait --peer-unknown-s.
      if (!r.available && r.detail != s.last_detail) {
        spdlog::warn("{} (while it is out, a hang is confirmed only after {:.0f} s)", r.detail,
                     std::max(o_.policy.confirm_s, o_.policy.peer_unknown_s));
        peer_out_reported_[i] = true;
      } else if (r.available && peer_out_reported_[i]) {
        spdlog::info("{}: answers again", r.detail);
        peer_out_reported_[i] = false;
      }
    }
    if (r.available) {
      s.unavailable_since_ms = INT64_MIN;
    } else if (s.unavailable_since_ms == INT64_MIN) {
      s.unavailable_since_ms = now_ms;
    }
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
  if (o_.evidence) {
    for (const GpuSample& s : batch) recent_.push_back(s);
    while (!recent_.empty() && (recent_.size() > kRecentSamplesMax ||
                                recent_.front().timestamp_ms < now_ms - kRecentTelemetryMs)) {
      recent_.pop_front();
    }
  }
  for (const GpuSample& s : batch) {
    if (auto st = engine_.current_state(s.key)) {
      metrics_.OnLiveState(s.key, *st);
      state_events_[s.key] = NoteCurrentState(state_events_[s.key], *st);
    }
  }
  PollProbes(now_ms);
  const auto cand = engine_.hang_candidate();
  last_decision_ = DecideHang(now_ms, cand ? std::optional<int64_t>(cand->start_ms) : std::nullopt,
                              probe_states_, o_.policy, cand && cand->needs_process_probe,
                              cand ? std::string_view(cand->thermal_hold) : std::string_view());
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
  StateView v;
  v.identity = o_.identity;
  v.source_label = o_.source_label;
  v.source_ended = source_done_;
  v.last_tick_ms = last_tick_ms_;
  v.hang = engine_.active_hang();
  if (const auto c = engine_.hang_candidate()) v.candidate_start_ms = c->start_ms;
  v.decision = last_decision_;
  for (const auto& [key, debounce] : state_events_) {
    if (debounce.reported) v.gpus.emplace_back(key, engine_.current_state(key));
  }
  v.probes = probe_states_;
  v.wasted_gpu_hours = engine_.wasted_gpu_hours();
  json state = watch::StateJson(v, [this](GpuKey k) { return GpuName(k); });
  if (!last_evidence_.is_null()) state["evidence"] = last_evidence_;
  if (evidence_task_) state["evidence_pending"] = true;
  return state;
}

bool Watcher::Fresh() const {
  if (source_done_) return true;  // a finished replay (lingering) is not a failure
  return DataFresh(clock_->NowUnixMs(),
                   last_sample_wall_ms_ == INT64_MIN ? std::nullopt
                                                     : std::optional<int64_t>(last_sample_wall_ms_),
                   o_.interval_ms);
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
        spdlog::info("forwarding signal {} to the job (process group {})", sig, o_.child->pid());
        o_.child->SignalGroup(sig);
        if (!forwarded_signal_) {
          forwarded_at_ns_ = clock_->NowMonotonicNs();
          forwarded_signo_ = sig;
        }
        forwarded_signal_ = true;
        Event({{"event", "signal_forwarded"}, {"signal", sig}});
      } else {
        spdlog::info("signal {}: stopping", sig);
        stop = true;
      }
    }
    // A job that ignores the forwarded signal is not left running: SIGKILL after the grace the
    // hang kill gives it (--kill-grace-s), as a scheduler's stop would.
    if (o_.child && forwarded_signal_ && !forwarded_escalated_ && !summary_.child_exit_code &&
        !o_.child->exited() &&
        clock_->NowMonotonicNs() - forwarded_at_ns_ >=
            static_cast<int64_t>(o_.kill.kill_grace_s * 1e9)) {
      forwarded_escalated_ = true;
      spdlog::warn(
          "the job ignored signal {} for {:.0f} s (--kill-grace-s): SIGKILL to process group {}",
          forwarded_signo_, o_.kill.kill_grace_s, o_.child->pid());
      Event({{"event", "kill"},
             {"signal", "SIGKILL"},
             {"pgid", o_.child->pid()},
             {"after_forwarded_signal", forwarded_signo_}});
      o_.child->SignalGroup(SIGKILL);
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
      // A hang confirmed just before the source ended (a replay's last minutes) still gets its
      // evidence and its kill: without this, run waited for a job nobody would kill.
      FinishEvidence(0);
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
        const uint64_t gpus = std::max<size_t>(1, gpus_seen());
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
      const uint64_t gpus = std::max<size_t>(1, gpus_seen());
      summary_.samples_dropped += gpus;
      metrics_.AddDropped(gpus);
      Publish(Fresh());
      continue;
    }
    if (failing_) spdlog::info("sampling works again");
    failing_ = false;
    if (const uint64_t stale = source_->health().samples_stale; stale > stale_seen_) {
      metrics_.AddDropped(stale - stale_seen_);
      summary_.samples_dropped += stale - stale_seen_;
      stale_seen_ = stale;
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
    FinishEvidence(0);
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
  // A hang confirmed near the end: its evidence is still worth waiting for (bounded).
  if (o_.evidence) FinishEvidence(o_.evidence->overall_deadline_ms + 1000);
  // In run mode after a hang kill, wait for the job to go before reporting; but not forever: a
  // process stuck in the driver (uninterruptible sleep) may outlive even SIGKILL.
  if (o_.child && summary_.killed_for_hang && !summary_.child_exit_code) {
    const int64_t give_up_ns =
        clock_->NowMonotonicNs() +
        static_cast<int64_t>((o_.kill.diag_timeout_s + o_.kill.kill_grace_s + 60) * 1e9);
    while (!o_.child->Poll() && clock_->NowMonotonicNs() < give_up_ns) {
      clock_->SleepUntilMonotonicNs(clock_->NowMonotonicNs() + 20'000'000);
    }
    summary_.child_exit_code = o_.child->Poll();
    if (!summary_.child_exit_code) {
      spdlog::error(
          "the job (pid {}) survived SIGKILL for 60 s (stuck in the kernel or driver?); exiting 3 "
          "without it",
          o_.child->pid());
    }
  }
  if (o_.child && forwarded_signal_ && summary_.child_exit_code) StopLeftovers();
  summary_.hangs = engine_.hang_episodes();
  summary_.tick_lateness_p50_ms = ww::Percentile(lateness_ms_, 0.50);
  summary_.tick_lateness_p99_ms = ww::Percentile(lateness_ms_, 0.99);
  summary_.tick_lateness_max_ms = ww::Percentile(lateness_ms_, 1.0);
  Event({{"event", "watch_stopped"}, {"summary", summary_.ToJson(source_->hosts())}});
  Publish(false);
  return result;
}

}  // namespace ww::watch
