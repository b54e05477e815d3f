// `wattwatch scaling RUNS.csv`: the strong-scaling table from measured throughput at several GPU
// counts. Parses flags and prints; the work is in src/measure/.
#include <iostream>
#include <memory>
#include <string>

#include "commands.h"
#include "core/env.h"
#include "core/exit_codes.h"
#include "measure/scaling.h"

namespace ww::app {

void AddScalingCommand(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand(
      "scaling",
      "Strong-scaling table from measured throughput at several GPU counts: speedup over the "
      "smallest count, "
      "efficiency against linear, tokens/s per GPU and the tokens/s each added GPU bought. Flags "
      "counts whose "
      "efficiency falls under --min-efficiency: past that point more GPUs mostly buy waiting.\n\n"
      "Input: CSV with a header naming gpus and tokens_per_s (other columns ignored, # comments "
      "and blank "
      "lines skipped, rows in any order). Triage output carries no throughput figure, so measure "
      "tokens/s "
      "from the training log.\n\n"
      "Example:\n"
      "  printf 'gpus,tokens_per_s\\n4,13600\\n8,27000\\n16,53000\\n' > runs.csv\n"
      "  wattwatch scaling runs.csv\n"
      "  wattwatch scaling runs.csv --min-efficiency 0.9 --json | jq '.rows[] | {gpus, "
      "efficiency}'\n\n"
      "Feed the largest count's tokens/s to `wattwatch iobench --need-tokens-per-s` to check the "
      "data path "
      "keeps up.\n\n"
      "Exit codes: 0 every count scales at or above the threshold; 1 some count falls under it; 2 "
      "unusable "
      "input (the message names file:line and the field).");
  auto o = std::make_shared<measure::ScalingCommandOptions>();
  cmd->add_option("RUNS", o->runs_path, "CSV of gpus,tokens_per_s")->required();
  cmd->add_option("--min-efficiency", o->min_efficiency, "flag efficiencies under this (0..1)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->add_flag(
      "--json", o->json,
      "print {\"min_efficiency\", \"baseline_gpus\", \"rows\": [{gpus, tokens_per_s, speedup, "
      "ideal_speedup, efficiency, tokens_per_s_per_gpu, marginal_tokens_per_s_per_gpu, "
      "below_threshold}], "
      "\"any_below_threshold\"}");
  cmd->callback([o, exit_code]() {
    std::string out;
    auto code = measure::RunScalingCommand(DefaultEnv(), *o, &out);
    if (!code.ok()) {
      std::cerr << "wattwatch scaling: " << code.status().message() << "\n";
      *exit_code = kExitBadInput;
      return;
    }
    std::cout << out;
    *exit_code = *code == 0 ? kExitOk : kExitCheckFailed;
  });
}

}  // namespace ww::app
