// `wattwatch top`: flags and signals only; the loop and the view are src/report/top_view.h.
#include <atomic>
#include <iostream>

#include "commands.h"
#include "core/clock.h"
#include "core/exit_codes.h"
#include "core/signals.h"
#include "report/top_view.h"

namespace ww::app {
namespace {

int RunTopCommand(const report::TopOptions& options) {
  // SIGINT/SIGTERM/SIGHUP end the view cleanly (terminal restored); the old handlers come back.
  StopSignals signals;
  report::TopOptions o = options;
  o.run.stop = signals.pending();
  Status st = report::RunTopOn(o, *SystemClock());
  if (!st.ok()) {
    std::cerr << "wattwatch top: " << st.message() << "\n";
    return kExitBadInput;
  }
  return kExitOk;
}

}  // namespace

void AddTopCommand(CLI::App& app, int* exit_code) {
  auto options = std::make_shared<report::TopOptions>();
  CLI::App* cmd = app.add_subcommand(
      "top",
      "Live view of a job's GPUs: one row per GPU with its state (colored), power against its "
      "limit, utilization, memory and a power sparkline; on a hang, the culprit ranks and the "
      "reasons. Same classifier as `wattwatch triage`.");
  cmd->footer(R"(Sources:
  nvml                      this host's GPUs, read every --interval-ms
  dcgm-exporter:URL         scrape the node's dcgm-exporter every --interval-ms (no NVML)
  replay:FILE[,FILE...]     nvidia-smi logs (one per host), replayed at --speed
  sim:SCENARIO              a simulated job (healthy, hang-exit, field-report, ...)

Keys: q quit; s sort by gpu / power / state; j/k or arrow keys pick a GPU; enter shows the
picked GPU's details. Ctrl-C also quits; the terminal is restored either way.

Examples:
  wattwatch top
  wattwatch top --source replay:node0.csv,node1.csv --speed 20
  wattwatch top --source sim:hang-exit --speed 50

Exit codes: 0 quit; 2 bad flags, no terminal, or a source that cannot be opened.)");
  cmd->add_option(
         "--source", options->source,
         "auto (NVML, else AMD SMI, else ROCm SMI), nvml, amdsmi, rocm-smi, dcgm-exporter:URL, "
         "replay:FILE[,FILE...] or sim:SCENARIO")
      ->capture_default_str();
  cmd->add_option("--speed", options->run.speed,
                  "replay/sim: this many times faster than real time; 0: as fast as possible")
      ->check(CLI::Range(0.0, 100000.0))
      ->capture_default_str();
  cmd->add_option("--interval-ms", options->run.interval_ms, "nvml: sampling interval")
      ->check(CLI::Range(int64_t{50}, int64_t{60000}))
      ->capture_default_str();
  cmd->add_option("--nvml-lib", options->source_options.nvml_lib,
                  "path of libnvidia-ml.so.1 (nvml source)");
  cmd->add_option("--amdsmi-lib", options->source_options.amdsmi_lib,
                  "path of libamd_smi.so (amdsmi source; else $WATTWATCH_AMDSMI_LIB)");
  cmd->callback([options, exit_code] { *exit_code = RunTopCommand(*options); });
}

}  // namespace ww::app
