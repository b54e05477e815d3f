#include "watch/child.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <set>

extern char** environ;

namespace ww::watch {
namespace {

// The pids that ChildProcess objects own and will reap themselves. The orphan reaper (PID 1 only)
// must never take one of their exit codes; spawning registers under the same lock, so a child that
// exits at once is never mistaken for an orphan.
std::mutex g_owned_mu;
std::set<pid_t> g_owned_pids;

}  // namespace

int ReapOrphans() {
  if (::getpid() != 1) return 0;
  std::lock_guard<std::mutex> lock(g_owned_mu);
  int reaped = 0;
  for (;;) {
    siginfo_t info{};
    // Peek (WNOWAIT) so an owned child's status stays for its owner.
    if (::waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) != 0 || info.si_pid == 0) break;
    if (g_owned_pids.count(info.si_pid) != 0) break;  // its owner reaps it on its next Poll
    ::waitpid(info.si_pid, nullptr, WNOHANG);
    ++reaped;
  }
  return reaped;
}

Result<std::unique_ptr<ChildProcess>> ChildProcess::Spawn(const std::vector<std::string>& argv,
                                                          const SpawnOptions& options) {
  if (argv.empty()) return Status::InvalidInput("no command given");
  std::vector<char*> args;
  args.reserve(argv.size() + 1);
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
  int rc = 0;
  {
    std::lock_guard<std::mutex> lock(g_owned_mu);
    rc = posix_spawnp(&pid, args[0], &fa, &attr, args.data(), envp);
    if (rc == 0) g_owned_pids.insert(pid);
  }
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    return Status::InvalidInput(fmt::format("cannot start '{}': {}", argv[0], std::strerror(rc)));
  }
  return std::unique_ptr<ChildProcess>(new ChildProcess(pid));
}

// Never kills: the job outlives a dying watcher.
ChildProcess::~ChildProcess() {
  if (exit_code_) return;
  std::lock_guard<std::mutex> lock(g_owned_mu);
  g_owned_pids.erase(pid_);
}

std::optional<int> ChildProcess::Poll() {
  int status = 0;
  if (!exit_code_ && ::waitpid(pid_, &status, WNOHANG) == pid_) {
    {
      std::lock_guard<std::mutex> lock(g_owned_mu);
      g_owned_pids.erase(pid_);
    }
    // Without WUNTRACED, waitpid reports only a child that is gone: exited or signalled.
    exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    exited_.store(true);
  }
  // After our own child: its zombie would otherwise stand first in the orphan reaper's way.
  ReapOrphans();
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

bool ChildProcess::GroupRunning() const {
  DIR* dir = ::opendir("/proc");
  if (dir == nullptr) return ::kill(-pid_, 0) == 0;
  bool running = false;
  while (dirent* e = ::readdir(dir)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    const std::string path = std::string("/proc/") + e->d_name + "/stat";
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    char buf[512];
    const ssize_t n = ::read(fd, buf, sizeof buf - 1);
    ::close(fd);
    if (n <= 0) continue;
    buf[n] = '\0';
    // "PID (COMM) STATE PPID PGRP ...": COMM may hold spaces and parentheses; it ends at the last
    // ')'.
    const char* close = std::strrchr(buf, ')');
    char state = 0;
    int ppid = 0, pgrp = 0;
    if (close == nullptr || std::sscanf(close + 1, " %c %d %d", &state, &ppid, &pgrp) != 3)
      continue;
    if (pgrp == pid_ && state != 'Z' && state != 'X') {
      running = true;
      break;
    }
  }
  ::closedir(dir);
  return running;
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
