// `wattwatch watch` and `wattwatch run -- CMD`: flag binding only. Flags bind straight to
// watch::WatchCommandOptions (src/watch/watch_command.h), whose structs hold every default; the
// help texts print those defaults rather than repeating them.
#include <fmt/format.h>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <iostream>

#include "commands.h"
#include "core/exit_codes.h"
#include "core/signals.h"
#include "output_flags.h"
#include "telemetry/source_spec.h"
#include "triage_flags.h"
#include "watch/watch_command.h"

namespace ww::app {
namespace {

struct WatchFlags {
  watch::WatchCommandOptions options;
  std::string log_level = "info";
  bool force = false;
};

// The files watch/run write, against the logs a replay source reads.
bool WatchOutputsAllowed(const WatchFlags& f, bool run_mode) {
  const watch::WatchCommandOptions& o = f.options;
  // Inputs: the replayed logs, and the files the probes and the server read (an --events over
  // the training log would append to it).
  std::vector<std::string> inputs = ReplaySourceFiles(o.source);
  for (const std::string* in : {&o.progress_log, &o.heartbeat, &o.state_token_file}) {
    if (!in->empty()) inputs.push_back(*in);
  }
  return OutputsAllowed(run_mode ? "run" : "watch", inputs,
                        {{"--events", o.watch.events_path},
                         {"--ready-file", o.watch.ready_file},
                         {"--diag-output", o.watch.kill.diag_output}},
                        f.force);
}

int RunWatch(WatchFlags f, bool run_mode) {
  if (!WatchOutputsAllowed(f, run_mode)) return kExitBadInput;
  auto logger = spdlog::stderr_color_mt(run_mode ? "run" : "watch");
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e wattwatch %^%l%$: %v");
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::from_str(f.log_level));
  f.options.version = WATTWATCH_VERSION;
  StopSignals signals({SIGINT, SIGTERM, SIGHUP}, /*ignore_sigpipe=*/true);
  return watch::RunWatchCommand(f.options, run_mode, signals.pending(), std::cout, std::cerr);
}

void AddCommonFlags(CLI::App* cmd, WatchFlags* flags, bool run_mode) {
  watch::WatchCommandOptions* f = &flags->options;
  watch::WatchOptions* w = &f->watch;
  cmd->add_option(
         "--source", f->source,
         "auto (NVML, else AMD SMI, else ROCm SMI), nvml, amdsmi, rocm-smi, dcgm-exporter:URL, "
         "replay:FILE[,FILE...] or sim:SCENARIO")
      ->capture_default_str();
  cmd->add_option("--speed", w->speed, "replay/sim: this many times faster than real time")
      ->check(CLI::Range(0.01, 100000.0))
      ->capture_default_str();
  cmd->add_option("--interval-ms", w->interval_ms, "nvml, dcgm-exporter: sampling period")
      ->check(CLI::Range(int64_t{10}, int64_t{60000}))
      ->capture_default_str();
  cmd->add_option("--nvml-lib", f->nvml_lib,
                  "path of libnvidia-ml.so.1 (else $WATTWATCH_NVML_LIB)");
  cmd->add_option("--amdsmi-lib", f->amdsmi_lib,
                  "path of libamd_smi.so (else $WATTWATCH_AMDSMI_LIB)");
  cmd->add_option("--listen", w->listen,
                  "HOST:PORT for /metrics, /state, /healthz (port 0: any free port; 'none': no "
                  "endpoint)")
      ->capture_default_str();
  cmd->add_option("--ready-file", w->ready_file,
                  "write the bound HOST:PORT here once /metrics serves (for scripts and tests)");
  cmd->add_option("--host", f->host, "host label (default: the log's host, or this host's name)");
  cmd->add_option(
      "--job-id", f->job_id,
      "job_id label on every metric (default $SLURM_JOB_ID, else $TORCHELASTIC_RUN_ID)");
  cmd->add_flag("--linger", w->linger,
                "replay/sim: keep serving /metrics after the source ends, until SIGTERM");
  AddForceFlag(cmd, &flags->force);
  cmd->add_option("--events", w->events_path,
                  "append one JSON line per state change, hang and action to FILE (fsync'd)");
  cmd->add_option("--progress-log", f->progress_log,
                  "training log to follow (across rotation and truncation); a new line matching "
                  "--progress-regex is progress");
  cmd->add_option("--progress-regex", f->progress_regex,
                  "PCRE2 pattern for progress lines ('.': any line)")
      ->capture_default_str();
  cmd->add_option("--heartbeat", f->heartbeat, "file whose mtime changing is progress");
  cmd->add_option("--peer", f->peers,
                  "HOST:PORT of another host's watcher of the same job (repeat): a GPU there in "
                  "compute, data_starved or checkpoint is progress (a remote rank-0 checkpoint)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->allow_extra_args(false);
  cmd->add_option("--peer-unknown-s", w->policy.peer_unknown_s,
                  "while a --peer cannot be read, confirm a hang only after this long (a "
                  "checkpoint over there cannot be ruled out), and say so in the reasons")
      ->check(CLI::Range(1.0, 86400.0))
      ->capture_default_str();
  cmd->add_option("--state-token-file", f->state_token_file,
                  "file holding a token: /state then needs \"Authorization: Bearer TOKEN\" (401 "
                  "without), and --peer requests send it; the same file on every host")
      ->check(CLI::ExistingFile);
  cmd->add_option("--nccl-ras", f->nccl_ras,
                  "on a hang, ask NCCL's RAS thread here (HOST:PORT, NCCL_RAS_ADDR's form) which "
                  "ranks are behind; 'none' or --no-nccl-ras: not asked")
      ->capture_default_str();
  cmd->add_flag_callback(
      "--no-nccl-ras", [f] { f->nccl_ras = "none"; }, "do not ask NCCL RAS on a hang");
  cmd->add_option("--fr-pipe", f->fr_pipe,
                  "on a hang, poke the PyTorch Flight Recorder FIFOs PREFIX<rank>.pipe (the job's "
                  "TORCH_NCCL_DEBUG_INFO_PIPE_FILE; run sets one for the job when unset)");
  if (!run_mode) {
    cmd->add_option("--fr-dump", f->fr_dump,
                    "where the job's ranks dump (its TORCH_FR_DUMP_TEMP_FILE or "
                    "TORCH_NCCL_DEBUG_INFO_TEMP_FILE; default: this environment's, else PyTorch's "
                    "own defaults, ~/.cache/torch/comm_lib_trace_rank_ and older)");
  }
  cmd->add_option("--fr-wait-s", f->fr_wait_s, "wait this long for the Flight Recorder dumps")
      ->check(CLI::Range(0.0, 600.0))
      ->capture_default_str();
  cmd->add_option("--incident-dir", f->incident_dir,
                  "write one incident folder per hang under DIR (default: beside --events, else "
                  "the current directory)");
  cmd->add_flag("--no-evidence", f->no_evidence,
                "skip the evidence step on a hang (no RAS query, no Flight Recorder, no incident "
                "folder)");
  if (!run_mode) {
    cmd->add_option(
        "--pid", f->pid,
        "the job's process: its tree's storage reads/writes are progress (writes: a checkpoint)");
  }
  AddHangConfirmFlag(cmd, &w->policy.confirm_s, /*old_alias=*/true);
  cmd->add_option("--confirm-proc-s", w->policy.confirm_proc_s,
                  "... or this much when the job's processes are watched and nothing moves")
      ->check(CLI::Range(1.0, 86400.0))
      ->capture_default_str();
  cmd->add_option("--probe-interval-ms", w->probe_interval_ms,
                  "how often progress probes are read, in watch time")
      ->check(CLI::Range(int64_t{10}, int64_t{600000}))
      ->capture_default_str();
  cmd->add_option("--cpu-progress-cores", f->process.cpu_progress_cores,
                  "count the job's CPU use above this many cores as progress (0: off; a rank "
                  "blocked in a CUDA sync spins a core)")
      ->capture_default_str();
  AddMaxCheckpointFlag(cmd, &w->triage.max_checkpoint_s);
  AddWorldSizeFlag(cmd, &w->triage.world_size);
  cmd->add_option("--event-min-state-s", w->event_min_state_s,
                  "write a state_change event once the new state lasted this long")
      ->capture_default_str();
  cmd->add_option("--webhook", w->actions.webhook_url, "POST the hang as JSON to this http(s) URL");
  cmd->add_option("--webhook-timeout-s", w->actions.webhook_timeout_s, "webhook timeout")
      ->capture_default_str();
  cmd->add_option("--hook", f->hook,
                  "run this program on a hang (no shell; details in WATTWATCH_* variables)");
  cmd->add_option("--hook-arg", f->hook_args, "an argument for --hook (repeat for more)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->allow_extra_args(false);
  cmd->add_option("--hook-timeout-s", w->actions.hook_timeout_s,
                  "kill the hook (and what it started) after this")
      ->capture_default_str();
  cmd->add_flag("--json", f->json, "print a JSON summary (hangs, tick lateness) on stdout at exit");
  cmd->add_option("--log-level", flags->log_level, "trace, debug, info, warn, error, off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}))
      ->capture_default_str();
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
  const watch::WatchCommandOptions d;  // the defaults, for the footers
  watch->add_flag("--fail-on-hang", wf->options.fail_on_hang,
                  "exit 3 at the end if a hang was confirmed");
  watch->footer(std::string("Sources:\n") + SourceSpecHelp() +
                fmt::format(R"(
How a hang is confirmed: the GPUs say "every rank spins in a collective or is gone" (utilization
high, power near idle, flat); then progress decides. Any probe that moves after the spin began
(a matching log line, a touched heartbeat, storage reads/writes of the job's processes) means the
job is alive, e.g. a checkpoint. With no progress, the hang is confirmed after --confirm-s ({} s),
or --confirm-proc-s ({} s) when the job's processes are watched. All durations are watch time:
a replay at --speed 20 confirms 20 times sooner in real time.

An unreachable --peer is unknown, not quiet: the hang then waits --peer-unknown-s ({} s).

Endpoints: /metrics (Prometheus), /state (JSON: states, hang, probes), /healthz. A request must
arrive whole within {} s of its first byte; slow or idle clients hold no thread. /state is open
unless --state-token-file; --listen on a non-loopback address without it warns.

Examples:
  wattwatch watch --progress-log /job/train.log --progress-regex 'step \d+' --events ev.jsonl
  wattwatch watch --pid 4242 --webhook https://hooks.example.com/wattwatch
  wattwatch watch --source replay:node0.csv --speed 20 --listen 127.0.0.1:0 --ready-file addr
  wattwatch watch --source sim:hang-spin --speed 50 --hook /usr/local/bin/page-oncall

Exit codes: 0 stopped (signal, or the replay ended); 2 bad flags, NVML or a log unavailable, or
the port in use; 3 with --fail-on-hang when a hang was confirmed.)",
                            d.watch.policy.confirm_s, d.watch.policy.confirm_proc_s,
                            d.watch.policy.peer_unknown_s,
                            static_cast<double>(d.watch.server.request_timeout_ms) / 1000.0));
  watch->callback([wf, exit_code] { *exit_code = RunWatch(*wf, false); });

  auto rf = std::make_shared<WatchFlags>();
  CLI::App* run = app.add_subcommand(
      "run",
      "Launches a training command and watches it: on a confirmed hang it runs the actions, takes "
      "diagnostics (py-spy dump, or --diag-signal), sends SIGTERM to the job's process group, "
      "SIGKILL after --kill-grace-s, and exits 3 so a scheduler or torchrun restarts it.");
  AddCommonFlags(run, rf.get(), true);
  run->add_option("--kill-grace-s", rf->options.watch.kill.kill_grace_s,
                  "seconds between SIGTERM and SIGKILL")
      ->check(CLI::Range(0.0, 3600.0))
      ->capture_default_str();
  run->add_option("--diag-signal", rf->options.diag_signal,
                  "when py-spy is not installed, send this signal first (e.g. USR1 for a job that "
                  "registered faulthandler on it; default none)");
  run->add_option("--diag-output", rf->options.watch.kill.diag_output,
                  "write py-spy's dump here (default stderr)");
  run->add_option("command", rf->options.command, "the command and its arguments, after --")
      ->required()
      ->expected(-1);
  run->footer(std::string("Sources:\n") + SourceSpecHelp() +
              fmt::format(R"(
The command runs in its own process group with this process's environment and stdio. SIGINT,
SIGTERM and SIGHUP are forwarded to its whole process group; what outlives the command after that
gets SIGKILL after --kill-grace-s. Killing wattwatch (even with SIGKILL) leaves the job running.
The job's process tree is always watched: storage writes growing mean a checkpoint; nothing
moving for --confirm-proc-s ({} s) while the GPUs spin confirms a hang.

Examples:
  wattwatch run --events /var/log/wattwatch/$SLURM_JOB_ID.jsonl -- torchrun --nproc-per-node 8 train.py
  wattwatch run --progress-log out/train.log --progress-regex 'step \d+' -- python train.py
  wattwatch run --diag-signal USR1 --kill-grace-s 60 -- ./launch.sh
  wattwatch run --listen 0.0.0.0:9401 --peer node1:9401 -- torchrun --nnodes 2 ... train.py
    (one per host; each names the others, so a rank-0 checkpoint on node0 is not a hang on node1)

Exit codes: the command's own exit code (128+N when signal N ended it); 3 when wattwatch killed it
for a hang; 2 when the command cannot start, or bad flags. A command that exits 3 itself also
gives 3: run then says so on stderr ("the job itself exited with code 3"), and only a hang kill
writes hang_confirmed and kill events. A signal forwarded to the command (SIGINT, SIGTERM, SIGHUP)
that it ignores is followed by SIGKILL to its process group after --kill-grace-s.)",
                          d.watch.policy.confirm_proc_s));
  run->callback([rf, exit_code] { *exit_code = RunWatch(*rf, true); });
}

}  // namespace ww::app
