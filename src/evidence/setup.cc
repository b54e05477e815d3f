#include "evidence/setup.h"

#include <fmt/format.h>

#include <charconv>

namespace ww::evidence {

Result<HostPort> ParseRasAddress(std::string_view text) {
  HostPort hp;
  std::string_view port = text;
  if (!text.empty() && text[0] == '[') {
    const size_t close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return Status::InvalidInput(
          fmt::format("--nccl-ras \"{}\": want [IPV6]:PORT, HOST:PORT or PORT", text));
    }
    hp.host = std::string(text.substr(1, close - 1));
    port = text.substr(close + 2);
  } else if (const size_t colon = text.rfind(':'); colon != std::string_view::npos) {
    hp.host = std::string(text.substr(0, colon));
    port = text.substr(colon + 1);
  }
  if (hp.host.empty()) hp.host = "localhost";
  int value = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (ec != std::errc() || end != port.data() + port.size() || value < 1 || value > 65535) {
    return Status::InvalidInput(
        fmt::format("--nccl-ras \"{}\": port \"{}\" is not a number in 1-65535", text, port));
  }
  hp.port = value;
  return hp;
}

FrChildEnv PlanFlightRecorderEnv(const std::string& fr_dir,
                                 const std::map<std::string, std::string>& env) {
  FrChildEnv plan;
  auto get = [&](const char* name) -> std::string {
    auto it = env.find(name);
    return it == env.end() ? "" : it->second;
  };
  std::vector<std::string> told;
  auto choose = [&](const char* name, const std::string& value) {
    plan.set.emplace_back(name, value);
    told.push_back(fmt::format("{}={}", name, value));
  };
  plan.pipe_prefix = get("TORCH_NCCL_DEBUG_INFO_PIPE_FILE");
  if (plan.pipe_prefix.empty()) {
    plan.pipe_prefix = fr_dir + "/pipe_";
    choose("TORCH_NCCL_DEBUG_INFO_PIPE_FILE", plan.pipe_prefix);
  }
  // PyTorch 2.6+ reads TORCH_FR_DUMP_TEMP_FILE first, then the older name.
  plan.dump_prefix = get("TORCH_FR_DUMP_TEMP_FILE");
  if (plan.dump_prefix.empty()) plan.dump_prefix = get("TORCH_NCCL_DEBUG_INFO_TEMP_FILE");
  if (plan.dump_prefix.empty()) {
    plan.dump_prefix = fr_dir + "/dump_";
    choose("TORCH_NCCL_DEBUG_INFO_TEMP_FILE", plan.dump_prefix);
  }
  // The FIFO exists only with a trace buffer; older releases check TORCH_NCCL_TRACE_BUFFER_SIZE,
  // newer ones TORCH_FR_BUFFER_SIZE first. Give the child both, the user's value when one is set.
  const std::string fr = get("TORCH_FR_BUFFER_SIZE"), trace = get("TORCH_NCCL_TRACE_BUFFER_SIZE");
  const std::string size = !fr.empty() ? fr : (!trace.empty() ? trace : "2000");
  if (fr.empty()) choose("TORCH_FR_BUFFER_SIZE", size);
  if (trace.empty()) choose("TORCH_NCCL_TRACE_BUFFER_SIZE", size);
  plan.message =
      told.empty()
          ? fmt::format(
                "Flight Recorder: the job's own settings are used (FIFOs {}<rank>.pipe, "
                "dumps {}<rank>)",
                plan.pipe_prefix, plan.dump_prefix)
          : fmt::format(
                "Flight Recorder: set for the job {} (on a hang, its ranks dump to {}<rank>)",
                fmt::join(told, " "), plan.dump_prefix);
  return plan;
}

}  // namespace ww::evidence
