#include "output_flags.h"

#include <iostream>

namespace ww::app {

CLI::Option* AddForceFlag(CLI::App* cmd, bool* force) {
  return cmd->add_flag("--force", *force,
                       "write outputs even over an input log or an existing telemetry log");
}

bool OutputsAllowed(const std::string& command, const std::vector<std::string>& inputs,
                    const std::vector<OutputFile>& outputs, bool force) {
  const Status st = CheckOutputPaths(inputs, outputs, force);
  if (st.ok()) return true;
  std::cerr << "wattwatch " << command << ": " << st.message() << "\n";
  return false;
}

CLI::Validator ExistingFileOrStdin() {
  return CLI::Validator(
      [](std::string& path) { return path == "-" ? std::string() : CLI::ExistingFile(path); },
      "FILE or - (standard input)", "EXISTING_FILE_OR_STDIN");
}

std::vector<std::string> ReplaySourceFiles(const std::string& source_spec) {
  constexpr std::string_view kReplay = "replay:";
  std::vector<std::string> files;
  if (source_spec.rfind(kReplay, 0) != 0) return files;
  std::string_view rest = std::string_view(source_spec).substr(kReplay.size());
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    files.emplace_back(rest.substr(0, comma));
    if (comma == std::string_view::npos) break;
    rest.remove_prefix(comma + 1);
  }
  return files;
}

}  // namespace ww::app
