// `wattwatch gate JOB.yaml`: the pre-launch gate. Parses flags and prints; the work is in
// src/gate/.
#include <iostream>
#include <memory>
#include <string>

#include "commands.h"
#include "core/env.h"
#include "core/exit_codes.h"
#include "gate/gate.h"

namespace ww::app {

void AddGateCommand(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand(
      "gate",
      "Pre-launch gate: replays the job's sharding, packing and batching on its real corpus and "
      "refuses "
      "jobs that would hang or fail.\n\n"
      "The classic epoch-end deadlock: each rank packs its own shard, ranks end the epoch with "
      "different "
      "numbers of optimizer steps, and the rank that finishes first leaves the others waiting in a "
      "collective forever. The gate counts optimizer steps per rank per epoch and, when they "
      "differ, prints "
      "the per-rank table and the max_steps that equalizes them (every rank stops after the "
      "smallest "
      "rank's count; FSDP/ZeRO-3 cannot use PyTorch's Join). It also checks empty ranks, shard "
      "balance, "
      "the global batch, sequence fit, token id range, pad/eos, tokenizer vs model, checkpoint "
      "space, "
      "NCCL/CUDA env across nodes, topology and whether the corpus fits the page cache.\n\n"
      "Example:\n"
      "  wattwatch gate job.yaml\n"
      "  wattwatch gate job.yaml --json | jq '.checks[0].details.equalized_max_steps'\n\n"
      "The job spec format is in docs/gate.md. Exit codes: 0 every check passed (warnings allowed "
      "unless --strict), 1 a check failed, 2 the spec or the data cannot be read (the message "
      "names "
      "the file and key).");
  auto o = std::make_shared<gate::GateCommandOptions>();
  cmd->add_option("JOB", o->spec_path, "job spec (YAML), see docs/gate.md")->required();
  cmd->add_flag(
      "--json", o->json,
      "print {\"status\", \"checks\": [{name, status, reason, details}]} instead of a table");
  cmd->add_flag("--strict", o->strict, "treat warnings as failures (exit 1)");
  cmd->add_option("--token-sample-bytes", o->gate.token_sample_bytes,
                  "bytes of binary token data sampled for the token_range check (0: lengths only)")
      ->capture_default_str();
  cmd->callback([o, exit_code]() {
    std::string out;
    auto code = gate::RunGateCommand(DefaultEnv(), *o, &out);
    if (!code.ok()) {
      std::cerr << "wattwatch gate: " << code.status().message() << "\n";
      *exit_code = kExitBadInput;
      return;
    }
    std::cout << out;
    *exit_code = *code == 0 ? kExitOk : kExitCheckFailed;
  });
}

}  // namespace ww::app
