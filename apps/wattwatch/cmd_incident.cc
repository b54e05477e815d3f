// `wattwatch incident DIR [--json]`: flags only; the summary is evidence/incident.
#include <cstdio>
#include <iostream>

#include "commands.h"
#include "core/exit_codes.h"
#include "evidence/incident.h"

namespace ww::app {

void AddIncidentCommand(CLI::App& app, int* exit_code) {
  struct Opts {
    std::string dir;
    bool json = false;
  };
  auto opts = std::make_shared<Opts>();
  CLI::App* cmd = app.add_subcommand(
      "incident",
      "Print the summary of a hang's incident folder again: what hung, when, the ranks NCCL RAS "
      "and the PyTorch Flight Recorder named and why, and what was done.\n\n"
      "Example:\n  wattwatch incident runs/incident-20261202T001500Z\n"
      "  wattwatch incident runs/incident-20261202T001500Z --json | jq '.culprits'\n\n"
      "Exit codes: 0 printed; 2 not an incident folder.");
  cmd->add_option("dir", opts->dir, "The incident folder (holds INCIDENT.md and evidence.json)")
      ->required();
  cmd->add_flag("--json", opts->json, "Print evidence.json instead of text");
  cmd->callback([opts, exit_code] {
    auto summary = evidence::IncidentSummary(opts->dir, opts->json);
    if (!summary.ok()) {
      std::fprintf(stderr, "wattwatch incident: %s\n", summary.status().message().c_str());
      *exit_code = kExitBadInput;
      return;
    }
    std::cout << *summary;
    *exit_code = kExitOk;
  });
}

}  // namespace ww::app
