// ChildProcess: the job that `wattwatch run -- CMD` launches and watches. It runs in its own
// process group, so a hang kill reaches every process of the job (torchrun, its workers, their data
// loader workers) and nothing else; and since the watcher sets no parent-death signal, a watcher
// killed with SIGKILL leaves the job running. Ownership: owns the pid until it is reaped.
// Thread-safety: Poll from one thread; the signal methods from any thread.
//
// As PID 1 (a container's entry point), orphaned processes of the job are re-parented to the
// watcher; Poll reaps those (never a pid that a ChildProcess owns), so they do not pile up as
// zombies.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "watch/kill_sequence.h"

namespace ww::watch {

struct SpawnOptions {
  bool own_process_group = true;       // the job, a hook, py-spy: killed as a group
  std::vector<std::string> extra_env;  // NAME=VALUE, added to the watcher's environment
  std::string output_path;             // non-empty: stdout and stderr appended there
  bool stdin_null = false;             // stdin from /dev/null instead of the watcher's
};

class ChildProcess final : public KillTarget {
 public:
  // Starts argv[0] (PATH lookup, no shell) with the watcher's environment and stdio, every signal
  // at its default disposition and none blocked. kInvalidInput names the command.
  static Result<std::unique_ptr<ChildProcess>> Spawn(const std::vector<std::string>& argv,
                                                     const SpawnOptions& options = {});
  ~ChildProcess() override;

  pid_t pid() const override { return pid_; }
  // Reaps the child if it exited: its exit code, or 128+signal when a signal ended it. As PID 1,
  // also reaps exited orphans.
  std::optional<int> Poll();
  bool exited() const override { return exited_.load(); }
  // To the child only (what a shell does with a forwarded SIGINT/SIGTERM).
  void Signal(int sig) const;
  // To the child's whole process group.
  void SignalGroup(int sig) const override;
  // Whether a process of the child's group still runs (zombies do not count), read from /proc: the
  // group outlives its leader when what the job started lingers.
  bool GroupRunning() const;

 private:
  explicit ChildProcess(pid_t pid) : pid_(pid) {}
  pid_t pid_;
  std::atomic<bool> exited_{false};
  std::optional<int> exit_code_;
};

// As PID 1: reaps every exited child that no ChildProcess owns; returns how many. Otherwise 0.
int ReapOrphans();

// "TERM", "SIGTERM", "USR1", "15" -> the signal number; nullopt when unknown.
std::optional<int> ParseSignalName(const std::string& name);

}  // namespace ww::watch
