// `wattwatch top`: flags and source selection only; the view is src/report/top_view.h.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <iostream>

#include "commands.h"
#include "core/clock.h"
#include "core/exit_codes.h"
#include "report/top_view.h"
#include "telemetry/source_spec.h"

namespace ww::app {
namespace {

std::atomic<bool> g_top_stop{false};
extern "C" void OnTopSignal(int) { g_top_stop.store(true); }

struct TopFlags {
  std::string source = "nvml";
  double speed = 1;
  int64_t interval_ms = 500;
  std::string nvml_lib;
};

int RunTopCommand(const TopFlags& f) {
  if (!isatty(STDOUT_FILENO)) {
    std::cerr << "wattwatch top: stdout is not a terminal; for logs use `wattwatch triage`\n";
    return kExitBadInput;
  }
  std::unique_ptr<TelemetrySource> source;
  report::TopRunOptions ro;
  ro.speed = f.speed;
  ro.interval_ms = f.interval_ms;
  ro.source_label = f.source;
  ro.stop = &g_top_stop;
  SourceSpecOptions so;
  so.nvml_lib = f.nvml_lib;
  auto opened = OpenSourceSpec(f.source, so);
  if (!opened.ok()) {
    std::cerr << "wattwatch top: " << opened.status().message() << "\n";
    return kExitBadInput;
  }
  source = std::move(opened->source);
  ro.live = opened->live;

  struct sigaction sa {};
  sa.sa_handler = OnTopSignal;
  sigemptyset(&sa.sa_mask);
  struct sigaction old_int {
  }, old_term{}, old_hup{};
  sigaction(SIGINT, &sa, &old_int);
  sigaction(SIGTERM, &sa, &old_term);
  sigaction(SIGHUP, &sa, &old_hup);
  Status st = report::RunTop(*source, *SystemClock(), ro);
  sigaction(SIGINT, &old_int, nullptr);
  sigaction(SIGTERM, &old_term, nullptr);
  sigaction(SIGHUP, &old_hup, nullptr);
  if (!st.ok()) {
    std::cerr << "wattwatch top: " << st.message() << "\n";
    return kExitBadInput;
  }
  return kExitOk;
}

}  // namespace

void AddTopCommand(CLI::App& app, int* exit_code) {
  auto flags = std::make_shared<TopFlags>();
  CLI::App* cmd = app.add_subcommand(
      "top",
      "Live view of a job's GPUs: one row per GPU with its state (colored), power against its "
      "limit, utilization, memory and a power sparkline; on a hang, the culprit ranks and the "
      "reasons. Same classifier as `wattwatch triage`.");
  cmd->footer(R"(Sources:
  nvml                      this host's GPUs, read every --interval-ms
  replay:FILE[,FILE...]     nvidia-smi logs (one per host), replayed at --speed
  sim:SCENARIO              a simulated job (healthy, hang-exit, field-report, ...)

Keys: q quit; s sort by gpu / power / state; j/k or arrow keys pick a GPU; enter shows the
picked GPU's details. Ctrl-C also quits; the terminal is restored either way.

Examples:
  wattwatch top
  wattwatch top --source replay:node0.csv,node1.csv --speed 20
  wattwatch top --source sim:hang-exit --speed 50

Exit codes: 0 quit; 2 bad flags, no terminal, or a source that cannot be opened.)");
  cmd->add_option("--source", flags->source, "nvml, replay:FILE[,FILE...] or sim:SCENARIO");
  cmd->add_option("--speed", flags->speed, "replay/sim: this many times faster than real time")
      ->check(CLI::Range(0.01, 100000.0));
  cmd->add_option("--interval-ms", flags->interval_ms, "nvml: sampling interval (default 500)")
      ->check(CLI::Range(int64_t{50}, int64_t{60000}));
  cmd->add_option("--nvml-lib", flags->nvml_lib, "path of libnvidia-ml.so.1 (nvml source)");
  cmd->callback([flags, exit_code] { *exit_code = RunTopCommand(*flags); });
}

}  // namespace ww::app
