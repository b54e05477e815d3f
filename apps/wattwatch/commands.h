// Each subcommand registers itself on the CLI11 app. A command's callback runs it and stores the
// process exit code in *exit_code. Commands hold no logic beyond parsing flags and printing: the
// work is done by the library under src/.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace ww::app {

void AddTriageCommand(CLI::App& app, int* exit_code);
void AddTokenizeCommand(CLI::App& app, int* exit_code);
void AddSimulateCommand(CLI::App& app, int* exit_code);
void AddGateCommand(CLI::App& app, int* exit_code);
void AddDevicesCommand(CLI::App& app, int* exit_code);
void AddRecordCommand(CLI::App& app, int* exit_code);
void AddTopCommand(CLI::App& app, int* exit_code);
// `check`: sample a node for a few seconds and give the hang verdict.
void AddCheckCommand(CLI::App& app, int* exit_code);
// `watch` and `run`, which share their flags.
void AddWatchCommands(CLI::App& app, int* exit_code);
void AddIobenchCommand(CLI::App& app, int* exit_code);
void AddScalingCommand(CLI::App& app, int* exit_code);
void AddIncidentCommand(CLI::App& app, int* exit_code);
// `fleet`: every job of a cluster judged from Prometheus.
void AddFleetCommand(CLI::App& app, int* exit_code);
// `completion bash`: the completion script, from the commands registered on `app` (add it last).
void AddCompletionCommand(CLI::App& app, int* exit_code);
std::string BashCompletion(const CLI::App& app);

}  // namespace ww::app
