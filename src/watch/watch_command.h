// WatchCommand: `wattwatch watch` and `wattwatch run -- CMD` assembled from their options: the
// source, the progress probes, the watcher, its actions and (run) the job it launches; the exit
// code follows docs/watch.md. apps/ binds flags straight to WatchCommandOptions, so each default is
// declared once, here or in the option struct it belongs to (HangPolicyOptions, TriageOptions,
// KillOptions, ActionConfig, ProcessProbeOptions).
//
// Ownership: RunWatchCommand owns everything it builds for the duration of the call.
// Thread-safety: call from the main thread; `pending_signal` is written by a signal handler
// (core/signals.h) and read here.
#pragma once

#include <atomic>
#include <iosfwd>
#include <string>
#include <vector>

#include "watch/probes.h"
#include "watch/watcher.h"

namespace ww::watch {

struct WatchCommandOptions {
  WatchCommandOptions();

  std::string source = "auto";  // auto, nvml, amdsmi, dcgm-exporter:URL, replay:F,... or sim:S
  std::string nvml_lib;         // empty: $WATTWATCH_NVML_LIB, else libnvidia-ml.so.1
  std::string amdsmi_lib;       // empty: $WATTWATCH_AMDSMI_LIB, else libamd_smi.so
  std::string host;             // empty: the log's host, or this machine's name
  std::string job_id;           // empty: $SLURM_JOB_ID, else $TORCHELASTIC_RUN_ID
  std::string version;          // for wattwatch_build_info

  // Progress probes.
  std::string progress_log;
  std::string progress_regex = ".";
  std::string heartbeat;
  std::vector<std::string> peers;  // HOST:PORT of other hosts' watchers
  // A file holding the bearer token that /state requires and that requests to peers carry (the
  // same file on every host of the job); read once at start. Empty: /state is open.
  std::string state_token_file;
  int pid = 0;  // watch: the job's process; 0: none
  ProcessProbeOptions process;

  std::string hook;  // with hook_args, becomes watch.actions.hook_argv
  std::vector<std::string> hook_args;
  std::string diag_signal;  // run: "USR1", "10", ...; empty or "none": none

  // Hang evidence: NCCL RAS at this address ("" or "none": not asked), the Flight Recorder FIFOs
  // (watch: --fr-pipe; run: set for the job unless the user did), incident folders' root ("":
  // beside the events file, else the current directory). no_evidence: skip the whole step.
  std::string nccl_ras = "localhost:28028";
  std::string fr_pipe;
  std::string fr_dump;  // watch: the job's TORCH_NCCL_DEBUG_INFO_TEMP_FILE ("": from the env)
  double fr_wait_s = 10;
  std::string incident_dir;
  bool no_evidence = false;

  bool fail_on_hang = false;  // watch: exit 3 when a hang was confirmed
  bool json = false;          // print the summary as JSON on stdout at the end

  // The loop's own options. watch.listen "none": no endpoint.
  WatchOptions watch;
  std::vector<std::string> command;  // run: the job's argv
};

// Runs the command to its end; returns the process exit code. Errors go to `err` prefixed with
// "wattwatch watch: " or "wattwatch run: "; the JSON summary (json) to `out`.
int RunWatchCommand(const WatchCommandOptions& options, bool run_mode,
                    std::atomic<int>* pending_signal, std::ostream& out, std::ostream& err);

}  // namespace ww::watch
