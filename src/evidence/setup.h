// What the watcher needs before a hang, so its hook-up stays a few lines: the --nccl-ras address
// parsed, and, for `run`, the Flight Recorder variables the child should get when the user has
// not set them. Pure: the environment comes in as a map, the variables to set go out.
// Thread-safety: free functions.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"

namespace ww::evidence {

struct HostPort {
  std::string host;
  int port = 0;
};

// "HOST:PORT", "PORT", "[::1]:PORT" (NCCL_RAS_ADDR's form). Errors name the text and the field.
Result<HostPort> ParseRasAddress(std::string_view text);

struct FrChildEnv {
  std::vector<std::pair<std::string, std::string>> set;  // variables to add to the child's env
  std::string pipe_prefix;  // what the evidence step pokes (EvidenceOptions::fr_pipe_prefix)
  std::string dump_prefix;  // where the ranks dump (EvidenceOptions::fr_dump_prefix)
  std::string message;      // one line for the start of `run`
};

// fr_dir: where dumps should go when wattwatch chooses (the incident root's "fr/" folder).
// The user's own TORCH_NCCL_DEBUG_INFO_PIPE_FILE / _TEMP_FILE / buffer sizes are kept.
FrChildEnv PlanFlightRecorderEnv(const std::string& fr_dir,
                                 const std::map<std::string, std::string>& env);

}  // namespace ww::evidence
