// wattwatch: keeps large GPU training jobs honest. CLI11 subcommands only; no logic here.
#include <CLI/CLI.hpp>

#include "commands.h"
#include "core/exit_codes.h"

int main(int argc, char** argv) {
  CLI::App app{
      "wattwatch: tells compute, communication, data starvation, checkpoints, hangs and idle "
      "apart on GPU training jobs, from board power rather than the utilization that reads 100 % "
      "during an NCCL deadlock.\n\nRun `wattwatch COMMAND --help` for each command's options and "
      "examples.",
      "wattwatch"};
  app.set_version_flag("--version", std::string("wattwatch ") + WATTWATCH_VERSION);
  app.require_subcommand(1);
  app.fallthrough(false);

  int exit_code = ww::kExitOk;
  ww::app::AddTriageCommand(app, &exit_code);
  ww::app::AddTokenizeCommand(app, &exit_code);
  ww::app::AddSimulateCommand(app, &exit_code);
  ww::app::AddGateCommand(app, &exit_code);
  ww::app::AddDevicesCommand(app, &exit_code);
  ww::app::AddRecordCommand(app, &exit_code);
  ww::app::AddTopCommand(app, &exit_code);
  ww::app::AddWatchCommands(app, &exit_code);
  ww::app::AddIobenchCommand(app, &exit_code);
  ww::app::AddScalingCommand(app, &exit_code);
  ww::app::AddIncidentCommand(app, &exit_code);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? ww::kExitOk : ww::kExitBadInput;
  }
  return exit_code;
}
