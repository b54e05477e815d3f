#include "watch/watch_command.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <unistd.h>  // environ

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <ostream>

#include "core/clock.h"
#include "core/exit_codes.h"
#include "core/host.h"
#include "evidence/evidence.h"
#include "evidence/setup.h"
#include "telemetry/source_spec.h"
#include "watch/child.h"
#include "watch/startup_checks.h"

namespace ww::watch {
namespace {

std::string DefaultJobId() {
  for (const char* name : {"SLURM_JOB_ID", "TORCHELASTIC_RUN_ID"}) {
    const char* v = std::getenv(name);
    if (v && *v) return v;
  }
  return "";
}

}  // namespace

WatchCommandOptions::WatchCommandOptions() { watch.listen = "127.0.0.1:9400"; }

int RunWatchCommand(const WatchCommandOptions& f, bool run_mode, std::atomic<int>* pending_signal,
                    std::ostream& out, std::ostream& err) {
  const std::string name = run_mode ? "wattwatch run: " : "wattwatch watch: ";
  WatchOptions o = f.watch;

  if (run_mode) {
    auto sig = ParseDiagSignal(f.diag_signal);
    if (!sig.ok()) {
      err << name << sig.status().message() << "\n";
      return kExitBadInput;
    }
    o.kill.diag_signal = *sig;
  }
  SourceSpecOptions so;
  so.nvml_lib = f.nvml_lib;
  so.amdsmi_lib = f.amdsmi_lib;
  so.hostname = f.host;
  auto opened = OpenSourceSpec(f.source, so);
  if (!opened.ok()) {
    err << name << opened.status().message() << "\n";
    return kExitBadInput;
  }

  std::vector<std::unique_ptr<ProgressProbe>> probes;
  if (!f.progress_log.empty()) {
    auto p = MakeLogProbe(f.progress_log, f.progress_regex);
    if (!p.ok()) {
      err << name << p.status().message() << "\n";
      return kExitBadInput;
    }
    probes.push_back(std::move(*p));
  }
  if (!f.heartbeat.empty()) probes.push_back(MakeHeartbeatProbe(f.heartbeat));
  std::string token;
  if (!f.state_token_file.empty()) {
    std::string warning;
    auto t = ReadStateToken(f.state_token_file, &warning);
    if (!t.ok()) {
      err << name << t.status().message() << "\n";
      return kExitBadInput;
    }
    if (!warning.empty()) spdlog::warn("{}", warning);
    token = *t;
    o.server.state_token = token;
  }
  for (const std::string& peer : f.peers) {
    // The peer thread runs in real time; a replay's watch time runs --speed times faster.
    const auto real_ms = static_cast<int64_t>(static_cast<double>(o.probe_interval_ms) /
                                              (opened->live ? 1.0 : o.speed));
    PeerProbeOptions po;
    po.interval_ms = std::max<int64_t>(50, real_ms);
    po.bearer_token = token;
    probes.push_back(MakePeerProbe(peer, po));
  }
  if (f.pid != 0) {
    if (Status st = CheckWatchedPid(f.pid); !st.ok()) {
      err << name << st.message() << "\n";
      return kExitBadInput;
    }
    probes.push_back(MakeProcessProbe(f.pid, f.process));
  }

  o.source_label = opened->label;
  o.live = opened->live;
  const auto& hosts = opened->source->hosts();
  o.identity.host = !f.host.empty() ? f.host : hosts.size() == 1 ? hosts[0] : LocalHostName();
  o.identity.job_id = !f.job_id.empty() ? f.job_id : DefaultJobId();
  o.identity.version = f.version;
  if (!f.hook.empty()) {
    o.actions.hook_argv = {f.hook};
    o.actions.hook_argv.insert(o.actions.hook_argv.end(), f.hook_args.begin(), f.hook_args.end());
  }
  if (o.listen == "none") o.listen.clear();

  SpawnOptions spawn;
  if (!f.no_evidence) {
    evidence::EvidenceOptions ev;
    if (f.nccl_ras.empty() || f.nccl_ras == "none") {
      ev.ras_enabled = false;
    } else {
      auto addr = evidence::ParseRasAddress(f.nccl_ras);
      if (!addr.ok()) {
        err << name << "--nccl-ras: " << addr.status().message() << "\n";
        return kExitBadInput;
      }
      ev.ras_host = addr->host;
      ev.ras_port = addr->port;
    }
    ev.fr_wait_ms = static_cast<int>(f.fr_wait_s * 1000);
    // Absolute, so the job's ranks (perhaps in another cwd) get paths under it.
    namespace fs = std::filesystem;
    fs::path root = !f.incident_dir.empty()  ? fs::path(f.incident_dir)
                    : !o.events_path.empty() ? fs::path(o.events_path).parent_path()
                                             : fs::path();
    std::error_code ec;
    if (root.empty()) root = fs::current_path(ec);
    if (root.empty()) root = fs::path(".");
    const fs::path abs = fs::absolute(root, ec);
    ev.incident_root = (ec ? root : abs.lexically_normal()).string();
    ev.fr_pipe_prefix = f.fr_pipe;
    if (run_mode) {
      std::map<std::string, std::string> env;
      for (char** e = environ; e && *e; ++e) {
        const std::string kv = *e;
        if (const size_t eq = kv.find('='); eq != std::string::npos)
          env.emplace(kv.substr(0, eq), kv.substr(eq + 1));
      }
      const std::string fr_dir = ev.incident_root + "/fr";
      const evidence::FrChildEnv plan = evidence::PlanFlightRecorderEnv(fr_dir, env);
      if (!plan.set.empty()) {
        std::error_code ec;
        std::filesystem::create_directories(fr_dir, ec);
        if (ec)
          spdlog::warn("{}: cannot create ({}): no Flight Recorder dumps", fr_dir, ec.message());
      }
      for (const auto& [k, v] : plan.set) spawn.extra_env.push_back(fmt::format("{}={}", k, v));
      if (f.fr_pipe.empty()) ev.fr_pipe_prefix = plan.pipe_prefix;
      ev.fr_dump_prefix = plan.dump_prefix;
      spdlog::info("{}", plan.message);
    } else if (!f.fr_dump.empty()) {
      ev.fr_dump_prefix = f.fr_dump;
    } else if (const char* dump = std::getenv("TORCH_FR_DUMP_TEMP_FILE"); dump && *dump) {
      // PyTorch's DebugInfoWriter reads the newer name first, then the older one.
      ev.fr_dump_prefix = dump;
    } else if (const char* old = std::getenv("TORCH_NCCL_DEBUG_INFO_TEMP_FILE"); old && *old) {
      ev.fr_dump_prefix = old;
    } else {
      // Neither set: PyTorch's DebugInfoWriter default, which moved between releases (a job of
      // the same user; another user's home is beyond guessing: --fr-dump).
      const char* xdg = std::getenv("XDG_CACHE_HOME");
      const char* home = std::getenv("HOME");
      const std::string home_cache = std::string(home && *home ? home : "/tmp") + "/.cache";
      const std::string cache = xdg && *xdg ? std::string(xdg) : home_cache;
      ev.fr_default_dump_prefixes = {cache + "/torch/comm_lib_trace_rank_",
                                     home_cache + "/torch/nccl_trace_rank_",
                                     "/tmp/nccl_trace_rank_"};
    }
    o.evidence = ev;
  }

  std::unique_ptr<ChildProcess> child;
  if (run_mode) {
    auto c = ChildProcess::Spawn(f.command, spawn);
    if (!c.ok()) {
      err << name << c.status().message() << "\n";
      return kExitBadInput;
    }
    child = std::move(*c);
    o.child = child.get();
    // The job's own processes are a progress signal: writes growing mean a checkpoint.
    probes.push_back(MakeProcessProbe(child->pid(), f.process));
  }

  Clock* clock = SystemClock();
  Watcher watcher(opened->source.get(), clock, o, std::move(probes));
  if (Status st = watcher.Start(); !st.ok()) {
    err << name << st.message() << "\n";
    if (!child) return kExitBadInput;
    // The job already runs: never harm it. Keep it, unwatched, and pass its exit code on.
    spdlog::error("watching is off; waiting for the job (pid {})", child->pid());
    for (;;) {
      if (const int sig = pending_signal->exchange(0)) child->SignalGroup(sig);
      if (auto rc = child->Poll()) return *rc;
      clock->SleepUntilMonotonicNs(clock->NowMonotonicNs() + 50'000'000);
    }
  }
  Status st = watcher.Run(pending_signal);
  const WatchSummary& sum = watcher.summary();
  if (f.json) out << sum.ToJson(watcher.hosts()).dump(2) << "\n";
  spdlog::info(
      "{} ticks, {} samples, {} dropped; tick lateness p50 {:.3f} ms, p99 {:.3f} ms, max {:.3f} "
      "ms; {} hang(s)",
      sum.ticks, sum.samples, sum.samples_dropped, sum.tick_lateness_p50_ms,
      sum.tick_lateness_p99_ms, sum.tick_lateness_max_ms, sum.hangs.size());
  if (!st.ok()) {
    err << name << st.message() << "\n";
    if (!child) return kExitBadInput;
  }
  if (run_mode) {
    if (sum.killed_for_hang) return kExitHang;
    if (sum.child_exit_code == kExitHang) {
      // The job's own 3 passes through as it is (a wrapper's exit code is the job's); say whose
      // it is, since run also exits 3 when it killed the job for a hang.
      err << name
          << "the job itself exited with code 3; no hang was acted on (a hang kill is logged as "
             "hang_confirmed and kill events)\n";
    }
    return sum.child_exit_code.value_or(kExitBadInput);
  }
  if (f.fail_on_hang && !sum.hangs.empty()) return kExitHang;
  return kExitOk;
}

}  // namespace ww::watch
