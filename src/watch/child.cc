#include "watch/child.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>

extern char** environ;

namespace ww::watch {

Result<std::unique_ptr<ChildProcess>> ChildProcess::Spawn(const std::vector<std::string>& argv,
                                                          const SpawnOptions& options) {
  if (argv.empty()) return Status::InvalidInput("no command given");
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  char** envp = environ;
  std::vector<std::string> env_store;
  std::vector<char*> env_ptrs;
  if (!options.extra_env.empty()) {
    for (char** e = environ; e && *e; ++e) env_store.emplace_back(*e);
    env_store.insert(env_store.end(), options.extra_env.begin(), options.extra_env.end());
    for (std::string& e : env_store) env_ptrs.push_back(e.data());
    env_ptrs.push_back(nullptr);
    envp = env_ptrs.data();
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (!options.output_path.empty()) {
    posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, options.output_path.c_str(),
                                     O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&fa, STDOUT_FILENO, STDERR_FILENO);
  }
  if (options.stdin_null) {
    posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  }
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigfillset(&defaults);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  short flags = POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF;
  if (options.own_process_group) {
    posix_spawnattr_setpgroup(&attr, 0);
    flags |= POSIX_SPAWN_SETPGROUP;
  }
  posix_spawnattr_setflags(&attr, flags);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, args[0], &fa, &attr, args.data(), envp);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    return Status::InvalidInput(fmt::format("cannot start '{}': {}", argv[0], std::strerror(rc)));
  }
  return std::unique_ptr<ChildProcess>(new ChildProcess(pid));
}

ChildProcess::~ChildProcess() = default;  // never kills: the job outlives a dying watcher

std::optional<int> ChildProcess::Poll() {
  if (exit_code_) return exit_code_;
  int status = 0;
  const pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    if (WIFEXITED(status)) {
      exit_code_ = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
      exit_code_ = 128 + WTERMSIG(status);
    } else {
      return std::nullopt;
    }
    exited_.store(true);
  }
  return exit_code_;
}

void ChildProcess::Signal(int sig) const {
  if (!exited_.load()) ::kill(pid_, sig);
}

void ChildProcess::SignalGroup(int sig) const {
  // The group outlives its leader when workers linger; signal it even after the
  // leader exited.
  ::kill(-pid_, sig);
}

std::optional<int> ParseSignalName(const std::string& name) {
  int n = 0;
  auto [p, ec] = std::from_chars(name.data(), name.data() + name.size(), n);
  if (ec == std::errc() && p == name.data() + name.size()) {
    if (n > 0 && n < NSIG) return n;
    return std::nullopt;
  }
  std::string s = name;
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (s.rfind("SIG", 0) == 0) s = s.substr(3);
  static const std::pair<const char*, int> kNames[] = {
      {"HUP", SIGHUP},   {"INT", SIGINT},   {"QUIT", SIGQUIT}, {"ABRT", SIGABRT},
      {"KILL", SIGKILL}, {"USR1", SIGUSR1}, {"USR2", SIGUSR2}, {"TERM", SIGTERM},
      {"CONT", SIGCONT}, {"STOP", SIGSTOP}, {"TRAP", SIGTRAP}, {"ALRM", SIGALRM}};
  for (const auto& [k, v] : kNames) {
    if (s == k) return v;
  }
  return std::nullopt;
}

}  // namespace ww::watch
