#include "watch/startup_checks.h"

#include <fmt/format.h>
#include <signal.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdio>
#include <fstream>

#include "core/env.h"
#include "core/strings.h"
#include "watch/child.h"

namespace ww::watch {

Status CheckActions(const ActionConfig& actions) {
  if (!actions.webhook_url.empty()) {
    if (Status st = ValidateWebhookUrl(actions.webhook_url); !st.ok()) return st;
  }
  if (!actions.hook_argv.empty() && FindOnPath(actions.hook_argv[0]).empty()) {
    return Status::InvalidInput(
        fmt::format("--hook '{}': not found or not executable", actions.hook_argv[0]));
  }
  return Status::Ok();
}

Status CheckWatchedPid(int pid) {
  if (pid <= 0) return Status::InvalidInput(fmt::format("--pid {}: not a process id", pid));
  if (::kill(pid, 0) != 0 && errno == ESRCH) {
    return Status::InvalidInput(fmt::format("--pid {}: no such process", pid));
  }
  return Status::Ok();
}

Result<std::optional<int>> ParseDiagSignal(const std::string& name) {
  if (name.empty() || name == "none") return std::optional<int>();
  const std::optional<int> sig = ParseSignalName(name);
  if (!sig) return Status::InvalidInput(fmt::format("--diag-signal '{}': unknown signal", name));
  return sig;
}

Status WriteReadyFile(const std::string& path, const std::string& address) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp);
    f << address << "\n";
    if (!f) return Status::IoError(fmt::format("--ready-file {}: cannot write", path));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    return Status::IoError(fmt::format("--ready-file {}: cannot rename", path));
  }
  return Status::Ok();
}

Result<std::string> ReadStateToken(const std::string& path, std::string* warning) {
  constexpr uint64_t kMaxTokenBytes = 4096;
  auto text = DefaultEnv()->ReadFileToString(path, kMaxTokenBytes);
  if (!text.ok()) {
    return Status::InvalidInput(
        fmt::format("--state-token-file {}: {}", path, text.status().message()));
  }
  const std::string token(TrimSpace(*text));
  if (token.empty()) {
    return Status::InvalidInput(fmt::format("--state-token-file {}: the file is empty", path));
  }
  for (const char c : token) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7f) {
      return Status::InvalidInput(fmt::format(
          "--state-token-file {}: the token must be one word (no spaces, line breaks or control "
          "characters), as it travels in an HTTP header",
          path));
    }
  }
  struct stat st {};
  if (warning != nullptr && ::stat(path.c_str(), &st) == 0 && (st.st_mode & 0077) != 0) {
    *warning =
        fmt::format("--state-token-file {}: readable by other users (mode {:04o}); chmod 600 it",
                    path, st.st_mode & 07777);
  }
  return token;
}

}  // namespace ww::watch
