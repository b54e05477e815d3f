#include "commands.h"
namespace ww::app {
void AddSimulateCommand(CLI::App& app, int* exit_code) {
  app.add_subcommand("simulate", "Write simulated nvidia-smi logs with ground truth");
}
}  // namespace ww::app
