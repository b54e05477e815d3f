// What every command that writes files shares: the --force flag, and the refusal (exit 2) of an
// output path that would destroy an input (ww::CheckOutputPaths in
// src/telemetry/ingest/output_paths.h says what is refused); and input validation that takes
// "-" for standard input.
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "telemetry/ingest/output_paths.h"

namespace ww::app {

// Adds --force to cmd, bound to *force.
CLI::Option* AddForceFlag(CLI::App* cmd, bool* force);

// False, after printing "wattwatch COMMAND: <why>" on stderr, when an output is refused.
bool OutputsAllowed(const std::string& command, const std::vector<std::string>& inputs,
                    const std::vector<OutputFile>& outputs, bool force);

// CLI::ExistingFile, except that "-" (standard input) passes.
CLI::Validator ExistingFileOrStdin();

// The files of a --source replay:FILE[,FILE...] (none for nvml and sim:).
std::vector<std::string> ReplaySourceFiles(const std::string& source_spec);

}  // namespace ww::app
