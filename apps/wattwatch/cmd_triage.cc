#include "commands.h"
namespace ww::app {
void AddTriageCommand(CLI::App& app, int* exit_code) {
  app.add_subcommand("triage", "Classify GPU telemetry logs");
}
}  // namespace ww::app
