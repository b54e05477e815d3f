// `wattwatch completion bash`: the bash completion script, written from the CLI11 definition of
// every command (its subcommands and their long flags), so it cannot drift from the flags the
// binary accepts. Installed as share/bash-completion/completions/wattwatch; a test compares it
// with each command's --help.
#include <fmt/format.h>

#include <iostream>
#include <string>
#include <vector>

#include "commands.h"
#include "core/exit_codes.h"

namespace ww::app {
namespace {

std::string LongFlags(const CLI::App& cmd) {
  std::string out;
  for (const CLI::Option* o : cmd.get_options()) {
    for (const std::string& l : o->get_lnames()) out += (out.empty() ? "--" : " --") + l;
  }
  return out;
}

}  // namespace

std::string BashCompletion(const CLI::App& app) {
  std::vector<const CLI::App*> commands = app.get_subcommands([](const CLI::App*) { return true; });
  std::string names;
  for (const CLI::App* c : commands) names += (names.empty() ? "" : " ") + c->get_name();
  std::string cases;
  for (const CLI::App* c : commands) {
    cases += fmt::format("    {}) opts=\"{}\" ;;\n", c->get_name(), LongFlags(*c));
  }
  return fmt::format(
      R"(# bash completion for wattwatch, written by `wattwatch completion bash` from the binary's
# own command and flag definitions. Install: share/bash-completion/completions/wattwatch, or
#   source <(wattwatch completion bash)
_wattwatch() {{
  local cur cmd opts i
  cur="${{COMP_WORDS[COMP_CWORD]}}"
  cmd=""
  for ((i = 1; i < COMP_CWORD; i++)); do
    case "${{COMP_WORDS[i]}}" in
      --) return 0 ;;
      -*) ;;
      *) cmd="${{COMP_WORDS[i]}}"; break ;;
    esac
  done
  if [[ -z "$cmd" ]]; then
    mapfile -t COMPREPLY < <(compgen -W "{} --help --version" -- "$cur")
    return 0
  fi
  case "$cmd" in
{}    *) return 0 ;;
  esac
  if [[ "$cur" == -* ]]; then
    mapfile -t COMPREPLY < <(compgen -W "$opts" -- "$cur")
  else
    mapfile -t COMPREPLY < <(compgen -f -- "$cur")
  fi
}}
complete -o default -F _wattwatch wattwatch
)",
      names, cases);
}

void AddCompletionCommand(CLI::App& app, int* exit_code) {
  CLI::App* cmd = app.add_subcommand(
      "completion",
      "Print the bash completion script for every command and flag of this binary.\n\n"
      "Examples:\n"
      "  source <(wattwatch completion bash)        # this shell\n"
      "  wattwatch completion bash > ~/.local/share/bash-completion/completions/wattwatch\n"
      "Packages install it as /usr/share/bash-completion/completions/wattwatch.");
  auto shell = std::make_shared<std::string>();
  cmd->add_option("shell", *shell, "the shell: bash (the only one)")
      ->required()
      ->check(CLI::IsMember({"bash"}));
  cmd->callback([&app, shell, exit_code] {
    std::cout << BashCompletion(app);
    *exit_code = kExitOk;
  });
}

}  // namespace ww::app
