// The triage tuning flags, declared once for every command that takes them (triage, watch/run,
// fleet, check): one name, one help text and one range check each. The values land where each
// command keeps them (a TriageOptions, or watch's hang policy).
#pragma once

#include <CLI/CLI.hpp>

namespace ww::app {

// --hang-confirm-s: seconds of spin with nobody working before it is a hang. `--confirm-s`, its
// old name in watch and run, is kept there as an alias (old_alias).
CLI::Option* AddHangConfirmFlag(CLI::App* cmd, double* seconds, bool old_alias = false);

// --max-checkpoint-s: no checkpoint takes longer; a longer wait on quiet ranks is a hang.
CLI::Option* AddMaxCheckpointFlag(CLI::App* cmd, double* seconds);

// --world-size: ranks in the whole job, when the GPUs seen are one part of it.
CLI::Option* AddWorldSizeFlag(CLI::App* cmd, int* ranks);

}  // namespace ww::app
