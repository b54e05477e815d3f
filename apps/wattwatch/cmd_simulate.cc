// `wattwatch simulate`: flags only; the simulator is src/telemetry/sim.
#include <fmt/format.h>

#include <iostream>

#include "commands.h"
#include "core/exit_codes.h"
#include "output_flags.h"
#include "telemetry/gpu_models.h"
#include "telemetry/sim/simulator.h"

namespace ww::app {
namespace {

struct SimulateFlags {
  std::string scenario;
  sim::ScenarioOptions options;
  sim::WriteOptions write;
  std::string format = sim::DefaultOutputFormat().name;
  bool force = false;
};

// Every file simulate would write, for the shared overwrite check (the names WriteScenario uses).
bool SimulateOutputsAllowed(const SimulateFlags& f, const sim::ScenarioConfig& config) {
  std::vector<OutputFile> outputs;
  for (const auto& p : f.write.out_paths) outputs.push_back({"--out", p});
  if (f.write.out_paths.empty() && !f.write.out_dir.empty()) {
    const std::string ext = f.write.format->writer->extension;
    if (f.write.format->writer->job_wide) {
      outputs.push_back({"--out-dir", f.write.out_dir + "/" + config.name + ext});
    } else {
      const sim::Simulator simulator(config);  // named: the loop must not outlive a temporary
      for (const auto& h : simulator.host_names()) {
        outputs.push_back({"--out-dir", fmt::format("{}/{}{}", f.write.out_dir, h, ext)});
      }
    }
  }
  outputs.push_back({"--truth", f.write.truth_csv});
  outputs.push_back({"--truth-json", f.write.truth_json});
  return OutputsAllowed("simulate", {}, outputs, f.force);
}

int RunSimulate(SimulateFlags f) {
  auto format = sim::ParseOutputFormat(f.format);
  if (!format.ok()) {
    std::cerr << "wattwatch simulate: " << format.status().message() << "\n";
    return kExitBadInput;
  }
  f.write.format = *format;
  auto config = sim::MakeScenario(f.scenario, f.options);
  if (!config.ok()) {
    std::cerr << "wattwatch simulate: " << config.status().message() << "\n";
    return kExitBadInput;
  }
  if (!SimulateOutputsAllowed(f, *config)) return kExitBadInput;
  auto paths = sim::WriteScenario(*config, f.write);
  if (!paths.ok()) {
    std::cerr << "wattwatch simulate: " << paths.status().message() << "\n";
    return kExitBadInput;
  }
  std::cerr << "simulated '" << f.scenario << "' on " << config->hosts << "x"
            << config->gpus_per_host << " " << config->model.name << " at " << config->interval_ms
            << " ms:";
  for (const auto& p : *paths) std::cerr << " " << p;
  std::cerr << "\n";
  return kExitOk;
}

}  // namespace

void AddSimulateCommand(CLI::App& app, int* exit_code) {
  auto flags = std::make_shared<SimulateFlags>();
  std::string names;
  for (const auto& n : sim::ScenarioNames()) names += " " + n;
  CLI::App* cmd = app.add_subcommand(
      "simulate",
      "Write nvidia-smi logs of a simulated training job, with the ground truth of every sample.");
  cmd->footer("Scenarios:" + names + R"(

The simulator models the sensors, not only the states: power.draw is a ~1 s average of
instantaneous power, utilization.gpu the busy share of the last sample period, clocks fall after
idle, a power cap throttles clocks.

Examples:
  wattwatch simulate field-report --out-dir demo --truth demo/truth.csv
  wattwatch simulate hang-exit --model a100 --interval-ms 1000 --out gpu.csv
  wattwatch simulate healthy --model "NVIDIA RTX PRO 6000:600:30" --out gpu.csv

Formats (--format; triage reads each back, the format recognized from the content):
)" + sim::OutputFormatHelp() +
              R"(
Exit codes: 0 written; 2 bad scenario, model or path.)");
  cmd->add_option("scenario", flags->scenario, "scenario name")->required();
  cmd->add_option("--out", flags->write.out_paths, "log file per host, in host order");
  cmd->add_option("--out-dir", flags->write.out_dir, "write DIR/<host>.csv for every host");
  cmd->add_option("--truth", flags->write.truth_csv, "ground truth: host,timestamp,gpu,state");
  AddForceFlag(cmd, &flags->force);
  cmd->add_option("--truth-json", flags->write.truth_json,
                  "ground-truth hang episodes, culprits and communication share");
  cmd->add_option("--format", flags->format,
                  "output format: " + sim::OutputFormatNames() + " (default " +
                      sim::DefaultOutputFormat().name + ")");
  cmd->add_flag("--minimal-columns", flags->write.minimal_columns,
                "log only timestamp, power.draw, utilization.gpu, memory.used (no index)");
  std::string models;
  for (const GpuModel& m : KnownGpuModels()) {
    models += fmt::format("{}{}", models.empty() ? "" : ", ", m.match);
  }
  cmd->add_option("--model", flags->options.model,
                  "board (the table of src/telemetry/gpu_models.cc): " + models +
                      "; or NAME:TDP_W:IDLE_W for another (default h100; b300 for field-report)");
  cmd->add_option("--hosts", flags->options.hosts, "hosts (default: the scenario's)")
      ->check(CLI::Range(1, 64));
  cmd->add_option("--gpus-per-host", flags->options.gpus_per_host, "GPUs per host (default 8)")
      ->check(CLI::Range(1, 16));
  cmd->add_option("--interval-ms", flags->options.interval_ms, "sampling interval (default 100)");
  cmd->add_option("--power-cap-w", flags->options.power_cap_w,
                  "power limit, at most the model's TDP (an error above it)");
  cmd->add_option("--seed", flags->options.seed, "random seed (default 1)");
  cmd->add_option("--drop-columns", flags->options.drop_fields,
                  "fields the log lacks, comma-separated (memory.used, power.draw, "
                  "utilization.gpu, utilization.memory): written as [N/A]")
      ->delimiter(',');
  cmd->callback([flags, exit_code] { *exit_code = RunSimulate(*flags); });
}

}  // namespace ww::app
