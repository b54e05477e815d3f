// ChildProcess: the job that `wattwatch run -- CMD` launches and watches. It
// runs in its own process group, so a hang kill reaches every process of the
// job (torchrun, its workers, their data loader workers) and nothing else; and
// since the watcher sets no parent-death signal, a watcher killed with SIGKILL
// leaves the job running. Ownership: owns the pid until it is reaped.
// Thread-safety: Poll from one thread; the signal methods from any thread.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"

namespace ww::watch {

struct SpawnOptions {
  bool own_process_group = true;       // the job (run mode); false for a hook or py-spy
  std::vector<std::string> extra_env;  // NAME=VALUE, added to the watcher's environment
  std::string output_path;             // non-empty: stdout and stderr appended there
  bool stdin_null = false;             // stdin from /dev/null instead of the watcher's
};

class ChildProcess {
 public:
  // Starts argv[0] (PATH lookup, no shell) with the watcher's environment and stdio, every
  // signal at its default disposition and none blocked. kInvalidInput names the command.
  static Result<std::unique_ptr<ChildProcess>> Spawn(const std::vector<std::string>& argv,
                                                     const SpawnOptions& options = {});
  ~ChildProcess();

  pid_t pid() const { return pid_; }
  // Reaps the child if it exited: its exit code, or 128+signal when a signal
  // ended it.
  std::optional<int> Poll();
  bool exited() const { return exited_.load(); }
  // To the child only (what a shell does with a forwarded SIGINT/SIGTERM).
  void Signal(int sig) const;
  // To the child's whole process group.
  void SignalGroup(int sig) const;

 private:
  explicit ChildProcess(pid_t pid) : pid_(pid) {}
  pid_t pid_;
  std::atomic<bool> exited_{false};
  std::optional<int> exit_code_;
};

// "TERM", "SIGTERM", "USR1", "15" -> the signal number; nullopt when unknown.
std::optional<int> ParseSignalName(const std::string& name);

}  // namespace ww::watch
