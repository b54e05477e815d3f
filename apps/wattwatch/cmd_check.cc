// `wattwatch check`: flags and printing only; the sampling and the verdict are
// src/report/check.h and the triage engine.
#include <unistd.h>

#include <cstdio>
#include <iostream>

#include "commands.h"
#include "core/clock.h"
#include "core/exit_codes.h"
#include "core/signals.h"
#include "report/check.h"
#include "triage_flags.h"

namespace ww::app {
namespace {

struct CheckFlags {
  report::CheckOptions check;
  bool json = false;
  std::string color = "auto";
};

int RunCheckCommand(CheckFlags& f) {
  StopSignals signals;
  f.check.stop = signals.pending();
  const bool tty = isatty(STDERR_FILENO) != 0;
  if (tty) {
    f.check.progress = [](double left, size_t gpus) {
      std::fprintf(stderr, "\rwattwatch check: sampling %zu GPU%s, %3.0f s left ", gpus,
                   gpus == 1 ? "" : "s", left);
      std::fflush(stderr);
    };
  }
  auto rep = report::RunCheck(f.check, *SystemClock());
  if (tty) std::fprintf(stderr, "\r%60s\r", "");
  if (!rep.ok()) {
    std::cerr << "wattwatch check: " << rep.status().message() << "\n";
    return kExitBadInput;
  }
  if (rep->gpus.empty()) {
    std::cerr << "wattwatch check: the source returned no GPU readings\n";
    return kExitBadInput;
  }
  if (f.json) {
    std::cout << report::RenderJson(*rep).dump(2) << "\n";
  } else {
    const bool color = f.color == "always" || (f.color == "auto" && isatty(STDOUT_FILENO));
    std::cout << report::RenderText(*rep, color);
  }
  return rep->hang_verdict == triage::HangVerdict::kConfirmed ? kExitHang : kExitOk;
}

}  // namespace

void AddCheckCommand(CLI::App& app, int* exit_code) {
  auto f = std::make_shared<CheckFlags>();
  CLI::App* cmd = app.add_subcommand(
      "check",
      "Is this node's job stuck? Samples the GPUs for --seconds, then gives triage's verdict: "
      "no hang, suspected (the readings fit ranks waiting in a collective, each GPU against its "
      "board's bands, but not for long enough to confirm), or confirmed (every rank waited "
      "--hang-confirm-s with nobody working), with the reasons and the culprit ranks.");
  cmd->footer(R"(Sources:
  nvml                      this host's GPUs (libnvidia-ml.so.1, loaded at run time)
  dcgm-exporter:URL         the node's dcgm-exporter (http://127.0.0.1:9400/metrics), no NVML
  replay:FILE[,FILE...]     a recorded log, judged over its first --seconds (for tests)

Examples:
  wattwatch check                          # 30 s of NVML, then the verdict
  wattwatch check --seconds 60 --json      # for a script
  wattwatch check --source dcgm-exporter:http://127.0.0.1:9400/metrics

From a Slurm epilog (keep the evidence of a job that ended stuck; the epilog must not fail):
  wattwatch check --seconds 35 --json > /var/log/wattwatch/check-$SLURM_JOB_ID.json || true

As a Kubernetes liveness probe of a training pod (a confirmed hang fails the probe, and the
kubelet restarts the pod; give the probe a timeoutSeconds above --seconds):
  livenessProbe:
    exec: {command: ["wattwatch", "check", "--seconds", "35"]}
    periodSeconds: 300
    timeoutSeconds: 60

A hang is confirmed after --hang-confirm-s (29 s) of waiting, so --seconds below 30 can only
suspect one. Exit codes: 0 no confirmed hang (none, suspected or unknown: read the verdict);
3 a hang confirmed; 2 bad flags or a source that cannot be read.)");
  cmd->add_option(
         "--source", f->check.source,
         "auto (NVML, else AMD SMI, else ROCm SMI), nvml, amdsmi, rocm-smi, dcgm-exporter:URL, "
         "replay:FILE[,FILE...] or sim:SCENARIO")
      ->capture_default_str();
  cmd->add_option("--seconds", f->check.seconds, "how long to sample")
      ->check(CLI::Range(1.0, 86400.0))
      ->capture_default_str();
  cmd->add_option("--interval-ms", f->check.interval_ms, "sampling interval of live sources")
      ->check(CLI::Range(int64_t{50}, int64_t{60000}))
      ->capture_default_str();
  AddHangConfirmFlag(cmd, &f->check.triage.hang_confirm_s);
  AddWorldSizeFlag(cmd, &f->check.triage.world_size);
  cmd->add_option("--nvml-lib", f->check.source_options.nvml_lib,
                  "path of libnvidia-ml.so.1 (nvml source)");
  cmd->add_option("--amdsmi-lib", f->check.source_options.amdsmi_lib,
                  "path of libamd_smi.so (amdsmi source; else $WATTWATCH_AMDSMI_LIB)");
  cmd->add_flag("--json", f->json, "print the triage JSON (hang_verdict, snapshot, episodes)");
  cmd->add_option("--color", f->color, "auto, always or never")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  cmd->callback([f, exit_code] { *exit_code = RunCheckCommand(*f); });
}

}  // namespace ww::app
