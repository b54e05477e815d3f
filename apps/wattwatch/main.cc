// wattwatch: keeps large GPU training jobs honest. CLI11 subcommands only; no logic here.
//
// Flag errors say which command they belong to ("wattwatch triage: ...") and, for a word that is
// neither a command nor an option, the nearest one CLI11 knows ("did you mean 'triage'?"). The
// words are checked against CLI11's own registry before parsing, because CLI11 reports a missing
// positional before an unknown flag, and drops a word typed before the command.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "commands.h"
#include "core/exit_codes.h"
#include "core/strings.h"
#include "ww_build_info.h"

namespace {

// The nearest candidate within a third of the word's length (at least 1, at most 3 edits), or a
// candidate the word is a prefix of ("--json-o" -> "--json-out").
std::optional<std::string> Nearest(std::string_view word, const std::vector<std::string>& names) {
  std::optional<std::string> best;
  size_t best_d = std::clamp<size_t>(word.size() / 3, 1, 3) + 1;
  for (const auto& n : names) {
    const size_t d = ww::EditDistance(word, n);
    if (d < best_d) {
      best_d = d;
      best = n;
    }
  }
  if (!best && word.size() >= 4) {
    for (const auto& n : names) {
      if (n.rfind(word, 0) == 0) return n;
    }
  }
  return best;
}

std::vector<std::string> SubcommandNames(const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
    names.push_back(sub->get_name());
  }
  return names;
}

std::vector<std::string> LongOptionNames(const CLI::App& cmd) {
  std::vector<std::string> names;
  for (const CLI::Option* o : cmd.get_options()) {
    for (const auto& l : o->get_lnames()) names.push_back("--" + l);
  }
  return names;
}

struct WordError {
  std::string prefix;  // "wattwatch" or "wattwatch triage"
  std::string message;
};

// The words of argv that CLI11 would misreport: a command that is not one, a word before the
// command, an option the command does not have. Values of options are not looked at, and
// nothing after "--" (the command `run` launches).
std::optional<WordError> CheckWords(const CLI::App& app, int argc, char** argv) {
  const std::vector<std::string> commands = SubcommandNames(app);
  const CLI::App* cmd = nullptr;
  std::vector<std::string> before;  // words before the command
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word == "--") break;
    const bool is_option = word.size() > 1 && word[0] == '-';
    if (cmd == nullptr) {
      if (is_option) continue;  // --help, --version: CLI11 answers those
      if (std::find(commands.begin(), commands.end(), word) != commands.end()) {
        cmd = app.get_subcommand(word);
        if (!before.empty()) {
          return WordError{"wattwatch", fmt::format("'{}' comes before the command '{}': the "
                                                    "command goes first, e.g. wattwatch {} {}",
                                                    before.front(), word, word, before.front())};
        }
        continue;
      }
      before.push_back(word);
      continue;
    }
    if (word.rfind("--", 0) != 0 || word.size() == 2) continue;
    const std::string name = word.substr(0, word.find('='));
    const std::vector<std::string> options = LongOptionNames(*cmd);
    if (std::find(options.begin(), options.end(), name) != options.end()) continue;
    std::string message = "unknown option '" + name + "'";
    if (auto near = Nearest(name, options)) message += "; did you mean '" + *near + "'?";
    return WordError{"wattwatch " + cmd->get_name(),
                     message + " (wattwatch " + cmd->get_name() + " --help lists them)"};
  }
  if (cmd == nullptr && !before.empty()) {
    std::string message = "unknown command '" + before.front() + "'";
    if (auto near = Nearest(before.front(), commands)) {
      message += "; did you mean '" + *near + "'?";
    } else {
      std::string list;
      for (const auto& c : commands) list += (list.empty() ? "" : ", ") + c;
      message += " (commands: " + list + ")";
    }
    return WordError{"wattwatch", message};
  }
  return std::nullopt;
}

// "wattwatch triage" for an error while parsing triage's flags, else "wattwatch".
std::string ErrorPrefix(const CLI::App& app, int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word == "--") break;
    for (const auto& c : SubcommandNames(app)) {
      if (c == word) return "wattwatch " + c;
    }
  }
  return "wattwatch";
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "wattwatch: tells compute, communication, data starvation, checkpoints, hangs and idle "
      "apart on GPU training jobs, from board power rather than the utilization that reads 100 % "
      "during an NCCL deadlock.\n\nRun `wattwatch COMMAND --help` for each command's options and "
      "examples.",
      "wattwatch"};
  // The version is the project's (CMakeLists.txt, one place); the commit and build type are the
  // build's (ww_build_info.h, written at each build by cmake/build_info.cmake).
  app.set_version_flag("--version",
                       fmt::format("wattwatch {} (commit {}, {} build)", WATTWATCH_VERSION,
                                   WATTWATCH_COMMIT, WATTWATCH_BUILD_TYPE));
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
  ww::app::AddCheckCommand(app, &exit_code);
  ww::app::AddWatchCommands(app, &exit_code);
  ww::app::AddIobenchCommand(app, &exit_code);
  ww::app::AddScalingCommand(app, &exit_code);
  ww::app::AddIncidentCommand(app, &exit_code);
  ww::app::AddFleetCommand(app, &exit_code);
  ww::app::AddCompletionCommand(app, &exit_code);

  if (auto bad = CheckWords(app, argc, argv)) {
    std::cerr << bad->prefix << ": " << bad->message << "\n";
    return ww::kExitBadInput;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e) == 0 ? ww::kExitOk : ww::kExitBadInput;
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e) == 0 ? ww::kExitOk : ww::kExitBadInput;
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e) == 0 ? ww::kExitOk : ww::kExitBadInput;
  } catch (const CLI::ParseError& e) {
    const std::string prefix = ErrorPrefix(app, argc, argv);
    std::cerr << prefix << ": " << e.what() << "\nRun '" << prefix
              << " --help' for more information.\n";
    return ww::kExitBadInput;
  }
  return exit_code;
}
