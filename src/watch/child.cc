#include "watch/child.h"

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

Result<std::unique_ptr<ChildProcess>> ChildProcess::Spawn(const std::vector<std::string>& argv) {
  if (argv.empty()) return Status::InvalidInput("run: no command after --");
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t none, defaults;
  sigemptyset(&none);
  sigfillset(&defaults);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr,
                           POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, args[0], nullptr, &attr, args.data(), environ);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    return Status::InvalidInput(
        fmt::format("run: cannot start '{}': {}", argv[0], std::strerror(rc)));
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
