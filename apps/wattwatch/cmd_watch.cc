// `wattwatch watch` and `wattwatch run -- CMD`: flags, signals and exit codes
// only; the loop is src/watch/watcher.h.
#include <signal.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <iostream>

#include "commands.h"
#include "core/clock.h"
#include "core/exit_codes.h"
#include "core/host.h"
#include "telemetry/source_spec.h"
#include "watch/child.h"
#include "watch/probes.h"
#include "watch/watcher.h"

namespace ww::app {
namespace {

std::atomic<int> g_watch_signal{0};
extern "C" void OnWatchSignal(int sig) { g_watch_signal.store(sig); }

struct WatchFlags {
  std::string source = "nvml";
  double speed = 1;
  int64_t interval_ms = 100;
  std::string nvml_lib;
  std::string listen = "127.0.0.1:9400";
  std::string ready_file;
  std::string host;
  std::string job_id;
  bool linger = false;
  std::string events;
  std::string progress_log;
  std::string progress_regex = ".";
  std::string heartbeat;
  std::vector<std::string> peers;
  int pid = 0;
  double confirm_s = 60;
  double confirm_proc_s = 30;
  int64_t probe_interval_ms = 1000;
  double cpu_progress_cores = 0;
  double max_checkpoint_s = 1800;
  double event_min_state_s = 5;
  std::string webhook;
  double webhook_timeout_s = 5;
  std::string hook;
  std::vector<std::string> hook_args;
  double hook_timeout_s = 60;
  bool fail_on_hang = false;
  bool json = false;
  std::string log_level = "info";
  // run
  double kill_grace_s = 30;
  std::string diag_signal;
  std::string diag_output;
  std::vector<std::string> command;
};

std::string DefaultJobId() {
  for (const char* name : {"SLURM_JOB_ID", "TORCHELASTIC_RUN_ID"}) {
    const char* v = std::getenv(name);
    if (v && *v) return v;
  }
  return "";
}

int RunWatch(const WatchFlags& f, bool run_mode) {
  const char* name = run_mode ? "wattwatch run" : "wattwatch watch";
  auto logger = spdlog::stderr_color_mt(run_mode ? "run" : "watch");
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e wattwatch %^%l%$: %v");
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::from_str(f.log_level));

  std::optional<int> diag_signal;
  if (!f.diag_signal.empty() && f.diag_signal != "none") {
    diag_signal = watch::ParseSignalName(f.diag_signal);
    if (!diag_signal) {
      std::cerr << name << ": --diag-signal '" << f.diag_signal << "': unknown signal\n";
      return kExitBadInput;
    }
  }
  SourceSpecOptions so;
  so.nvml_lib = f.nvml_lib;
  so.hostname = f.host;
  auto opened = OpenSourceSpec(f.source, so);
  if (!opened.ok()) {
    std::cerr << name << ": " << opened.status().message() << "\n";
    return kExitBadInput;
  }

  std::vector<std::unique_ptr<watch::ProgressProbe>> probes;
  if (!f.progress_log.empty()) {
    auto p = watch::MakeLogProbe(f.progress_log, f.progress_regex);
    if (!p.ok()) {
      std::cerr << name << ": " << p.status().message() << "\n";
      return kExitBadInput;
    }
    probes.push_back(std::move(*p));
  }
  if (!f.heartbeat.empty()) probes.push_back(watch::MakeHeartbeatProbe(f.heartbeat));
  for (const std::string& peer : f.peers) {
    // The peer thread runs in real time; a replay's watch time runs --speed times faster.
    const auto real_ms = static_cast<int64_t>(static_cast<double>(f.probe_interval_ms) /
                                              (opened->live ? 1.0 : f.speed));
    probes.push_back(watch::MakePeerProbe(peer, std::max<int64_t>(50, real_ms)));
  }
  watch::ProcessProbeOptions po;
  po.cpu_progress_cores = f.cpu_progress_cores;
  if (f.pid > 0) {
    if (::kill(f.pid, 0) != 0 && errno == ESRCH) {
      std::cerr << name << ": --pid " << f.pid << ": no such process\n";
      return kExitBadInput;
    }
    probes.push_back(watch::MakeProcessProbe(f.pid, po));
  }

  watch::WatchOptions o;
  o.source_label = f.source;
  o.live = opened->live;
  o.speed = f.speed;
  o.interval_ms = f.interval_ms;
  o.probe_interval_ms = f.probe_interval_ms;
  o.linger = f.linger;
  const auto& hosts = opened->source->hosts();
  o.identity.host = !f.host.empty() ? f.host : hosts.size() == 1 ? hosts[0] : LocalHostName();
  o.identity.job_id = !f.job_id.empty() ? f.job_id : DefaultJobId();
  o.identity.version = WATTWATCH_VERSION;
  o.triage.max_checkpoint_s = f.max_checkpoint_s;
  o.policy.confirm_s = f.confirm_s;
  o.policy.confirm_proc_s = f.confirm_proc_s;
  o.actions.webhook_url = f.webhook;
  o.actions.webhook_timeout_s = f.webhook_timeout_s;
  if (!f.hook.empty()) {
    o.actions.hook_argv.push_back(f.hook);
    o.actions.hook_argv.insert(o.actions.hook_argv.end(), f.hook_args.begin(), f.hook_args.end());
  }
  o.actions.hook_timeout_s = f.hook_timeout_s;
  o.listen = f.listen == "none" ? "" : f.listen;
  o.ready_file = f.ready_file;
  o.events_path = f.events;
  o.event_min_state_s = f.event_min_state_s;
  o.kill_grace_s = f.kill_grace_s;
  o.diag_signal = diag_signal;
  o.diag_output = f.diag_output;

  struct sigaction sa {};
  sa.sa_handler = OnWatchSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGHUP, &sa, nullptr);
  signal(SIGPIPE, SIG_IGN);

  std::unique_ptr<watch::ChildProcess> child;
  if (run_mode) {
    auto c = watch::ChildProcess::Spawn(f.command);
    if (!c.ok()) {
      std::cerr << name << ": " << c.status().message() << "\n";
      return kExitBadInput;
    }
    child = std::move(*c);
    o.child = child.get();
    // The job's own processes are a progress signal: writes growing mean a
    // checkpoint.
    probes.push_back(watch::MakeProcessProbe(child->pid(), po));
  }

  watch::Watcher watcher(opened->source.get(), opened->nvml, SystemClock(), o, std::move(probes));
  if (Status st = watcher.Start(); !st.ok()) {
    std::cerr << name << ": " << st.message() << "\n";
    if (!child) return kExitBadInput;
    // The job already runs: never harm it. Keep it, unwatched, and pass its
    // exit code on.
    spdlog::error("watching is off; waiting for the job (pid {})", child->pid());
    for (;;) {
      if (int sig = g_watch_signal.exchange(0)) child->Signal(sig);
      if (auto rc = child->Poll()) return *rc;
      usleep(50000);
    }
  }
  Status st = watcher.Run(&g_watch_signal);
  const watch::WatchSummary& sum = watcher.summary();
  if (f.json) std::cout << sum.ToJson(watcher.hosts()).dump(2) << "\n";
  spdlog::info(
      "{} ticks, {} samples, {} dropped; tick lateness p50 {:.3f} ms, p99 {:.3f} ms, max {:.3f} "
      "ms; {} hang(s)",
      sum.ticks, sum.samples, sum.samples_dropped, sum.tick_lateness_p50_ms,
      sum.tick_lateness_p99_ms, sum.tick_lateness_max_ms, sum.hangs.size());
  if (!st.ok()) {
    std::cerr << name << ": " << st.message() << "\n";
    if (!child) return kExitBadInput;
  }
  if (run_mode) {
    if (sum.killed_for_hang) return kExitHang;
    return sum.child_exit_code.value_or(kExitBadInput);
  }
  if (f.fail_on_hang && !sum.hangs.empty()) return kExitHang;
  return kExitOk;
}

void AddCommonFlags(CLI::App* cmd, WatchFlags* f, bool run_mode) {
  cmd->add_option("--source", f->source, "nvml (default), replay:FILE[,FILE...] or sim:SCENARIO");
  cmd->add_option("--speed", f->speed, "replay/sim: this many times faster than real time")
      ->check(CLI::Range(0.01, 100000.0));
  cmd->add_option("--interval-ms", f->interval_ms, "nvml: sampling period (default 100)")
      ->check(CLI::Range(int64_t{10}, int64_t{60000}));
  cmd->add_option("--nvml-lib", f->nvml_lib,
                  "path of libnvidia-ml.so.1 (else $WATTWATCH_NVML_LIB)");
  cmd->add_option("--listen", f->listen,
                  "HOST:PORT for /metrics, /state, /healthz (default 127.0.0.1:9400; port 0: any "
                  "free port; 'none': no endpoint)");
  cmd->add_option("--ready-file", f->ready_file,
                  "write the bound HOST:PORT here once /metrics serves (for scripts and tests)");
  cmd->add_option("--host", f->host, "host label (default: the log's host, or this host's name)");
  cmd->add_option(
      "--job-id", f->job_id,
      "job_id label on every metric (default $SLURM_JOB_ID, else $TORCHELASTIC_RUN_ID)");
  cmd->add_flag("--linger", f->linger,
                "replay/sim: keep serving /metrics after the source ends, until SIGTERM");
  cmd->add_option("--events", f->events,
                  "append one JSON line per state change, hang and action to FILE (fsync'd)");
  cmd->add_option("--progress-log", f->progress_log,
                  "training log to follow (across rotation and truncation); a new line matching "
                  "--progress-regex is progress");
  cmd->add_option("--progress-regex", f->progress_regex,
                  "PCRE2 pattern for progress lines (default '.': any line)");
  cmd->add_option("--heartbeat", f->heartbeat, "file whose mtime changing is progress");
  cmd->add_option("--peer", f->peers,
                  "HOST:PORT of another host's watcher of the same job (repeat): a GPU there in "
                  "compute, data_starved or checkpoint is progress (a remote rank-0 checkpoint)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->allow_extra_args(false);
  if (!run_mode) {
    cmd->add_option(
        "--pid", f->pid,
        "the job's process: its tree's storage reads/writes are progress (writes: a checkpoint)");
  }
  cmd->add_option("--confirm-s", f->confirm_s,
                  "declare a hang after this much spin with no progress (default 60)")
      ->check(CLI::Range(1.0, 86400.0));
  cmd->add_option(
         "--confirm-proc-s", f->confirm_proc_s,
         "... or this much when the job's processes are watched and nothing moves (default 30)")
      ->check(CLI::Range(1.0, 86400.0));
  cmd->add_option("--probe-interval-ms", f->probe_interval_ms,
                  "how often progress probes are read, in watch time (default 1000)")
      ->check(CLI::Range(int64_t{10}, int64_t{600000}));
  cmd->add_option("--cpu-progress-cores", f->cpu_progress_cores,
                  "count the job's CPU use above this many cores as progress (default 0: off; a "
                  "rank blocked in a CUDA sync spins a core)");
  cmd->add_option(
      "--max-checkpoint-s", f->max_checkpoint_s,
      "peers waiting on a quiet rank longer than this is a hang, not a checkpoint (default 1800)");
  cmd->add_option("--event-min-state-s", f->event_min_state_s,
                  "write a state_change event once the new state lasted this long (default 5)");
  cmd->add_option("--webhook", f->webhook, "POST the hang as JSON to this http(s) URL");
  cmd->add_option("--webhook-timeout-s", f->webhook_timeout_s, "webhook timeout (default 5)");
  cmd->add_option("--hook", f->hook,
                  "run this program on a hang (no shell; details in WATTWATCH_* variables)");
  cmd->add_option("--hook-arg", f->hook_args, "an argument for --hook (repeat for more)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->allow_extra_args(false);
  cmd->add_option("--hook-timeout-s", f->hook_timeout_s, "kill the hook after this (default 60)");
  cmd->add_flag("--json", f->json, "print a JSON summary (hangs, tick lateness) on stdout at exit");
  cmd->add_option("--log-level", f->log_level, "trace, debug, info (default), warn, error, off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}));
}

}  // namespace

void AddWatchCommands(CLI::App& app, int* exit_code) {
  auto wf = std::make_shared<WatchFlags>();
  CLI::App* watch =
      app.add_subcommand("watch",
                         "The external watcher: samples this host's GPUs (or replays logs), tells "
                         "compute, communication, data starvation, checkpoints, hangs and idle "
                         "apart online, confirms hangs with progress signals, exports Prometheus "
                         "metrics, and alerts. No change to the training script.");
  AddCommonFlags(watch, wf.get(), false);
  watch->add_flag("--fail-on-hang", wf->fail_on_hang, "exit 3 at the end if a hang was confirmed");
  watch->footer(std::string("Sources:\n") + SourceSpecHelp() + R"(
How a hang is confirmed: the GPUs say "every rank spins in a collective or is gone" (utilization
high, power near idle, flat); then progress decides. Any probe that moves after the spin began
(a matching log line, a touched heartbeat, storage reads/writes of the job's processes) means the
job is alive, e.g. a checkpoint. With no progress, the hang is confirmed after --confirm-s (60 s),
or --confirm-proc-s (30 s) when the job's processes are watched. All durations are watch time:
a replay at --speed 20 confirms 20 times sooner in real time.

Endpoints: /metrics (Prometheus), /state (JSON: states, hang, probes), /healthz.

Examples:
  wattwatch watch --progress-log /job/train.log --progress-regex 'step \d+' --events ev.jsonl
  wattwatch watch --pid 4242 --webhook https://hooks.example.com/wattwatch
  wattwatch watch --source replay:node0.csv --speed 20 --listen 127.0.0.1:0 --ready-file addr
  wattwatch watch --source sim:hang-spin --speed 50 --hook /usr/local/bin/page-oncall

Exit codes: 0 stopped (signal, or the replay ended); 2 bad flags, NVML or a log unavailable, or
the port in use; 3 with --fail-on-hang when a hang was confirmed.)");
  watch->callback([wf, exit_code] { *exit_code = RunWatch(*wf, false); });

  auto rf = std::make_shared<WatchFlags>();
  CLI::App* run = app.add_subcommand(
      "run",
      "Launches a training command and watches it: on a confirmed hang it runs the actions, takes "
      "diagnostics (py-spy dump, or --diag-signal), sends SIGTERM to the job's process group, "
      "SIGKILL after --kill-grace-s, and exits 3 so a scheduler or torchrun restarts it.");
  AddCommonFlags(run, rf.get(), true);
  run->add_option("--kill-grace-s", rf->kill_grace_s,
                  "seconds between SIGTERM and SIGKILL (default 30)")
      ->check(CLI::Range(0.0, 3600.0));
  run->add_option("--diag-signal", rf->diag_signal,
                  "when py-spy is not installed, send this signal first (e.g. USR1 for a job that "
                  "registered faulthandler on it; default none)");
  run->add_option("--diag-output", rf->diag_output, "write py-spy's dump here (default stderr)");
  run->add_option("command", rf->command, "the command and its arguments, after --")
      ->required()
      ->expected(-1);
  run->footer(std::string("Sources:\n") + SourceSpecHelp() + R"(
The command runs in its own process group with this process's environment and stdio. SIGINT and
SIGTERM are forwarded to it. Killing wattwatch (even with SIGKILL) leaves the job running. The
job's process tree is always watched: storage writes growing mean a checkpoint; nothing moving
for --confirm-proc-s (30 s) while the GPUs spin confirms a hang.

Examples:
  wattwatch run --events /var/log/wattwatch/$SLURM_JOB_ID.jsonl -- torchrun --nproc-per-node 8 train.py
  wattwatch run --progress-log out/train.log --progress-regex 'step \d+' -- python train.py
  wattwatch run --diag-signal USR1 --kill-grace-s 60 -- ./launch.sh
  wattwatch run --listen 0.0.0.0:9401 --peer node1:9401 -- torchrun --nnodes 2 ... train.py
    (one per host; each names the others, so a rank-0 checkpoint on node0 is not a hang on node1)

Exit codes: the command's own exit code (128+N when signal N ended it); 3 when wattwatch killed it
for a hang; 2 when the command cannot start, or bad flags.)");
  run->callback([rf, exit_code] { *exit_code = RunWatch(*rf, true); });
}

}  // namespace ww::app
