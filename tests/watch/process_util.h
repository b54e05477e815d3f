// What the watch tests ask /proc about processes they started: whether one still runs, and how
// many of a process group do. Zombies do not count: an orphan's zombie waits for init to reap it,
// and kill(pid, 0) still finds it.
#pragma once

#include <sys/types.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace ww::testing {

// The state letter of /proc/PID/stat ('R', 'S', 'Z', ...), or 0 when the process is gone.
inline char ProcessState(pid_t pid, pid_t* pgrp = nullptr) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream fields(stat.substr(close + 1));
  char state = 0;
  pid_t ppid = 0, group = 0;
  fields >> state >> ppid >> group;
  if (pgrp != nullptr) *pgrp = group;
  return state;
}

inline bool ProcessRunning(pid_t pid) {
  const char s = ProcessState(pid);
  return s != 0 && s != 'Z' && s != 'X';
}

inline int LiveProcessesInGroup(pid_t pgid) {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    pid_t group = 0;
    const char s = ProcessState(static_cast<pid_t>(std::stol(name)), &group);
    if (group == pgid && s != 0 && s != 'Z' && s != 'X') ++n;
  }
  return n;
}

}  // namespace ww::testing
