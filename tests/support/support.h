// What every test folder needs: fresh directories, files read and written whole, the CLI run
// as a user runs it (exit code and output), and where the shared real traces live.
// Header-only so each test binary takes it without a library of its own.
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace ww::testing {

// The wattwatch binary under test and the source tree (compile definitions set by ww_test).
inline std::string WattwatchBinary() { return WW_BINARY; }
inline std::string SourceDir() { return WW_SOURCE_DIR; }
// ../shared beside the checkout: real traces that tests read in place, never copy.
inline std::string SharedDir() { return WW_SHARED_DIR; }
inline bool InCi() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::string(ci) == "true";
}

// A shared real file: present in CI (a missing one FAILs there), skipped locally without it.
#define WW_REQUIRE_SHARED_FILE(path)                                                \
  do {                                                                              \
    if (!std::filesystem::exists(path)) {                                           \
      if (::ww::testing::InCi()) FAIL() << "shared file missing in CI: " << (path); \
      GTEST_SKIP() << "shared file not present: " << (path);                        \
    }                                                                               \
  } while (0)

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}
inline void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}
inline std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

// A fresh directory, removed at destruction. Under the build tree by default (a real disk:
// /proc/PID/io counts writes there, which it does not on tmpfs).
class TempDir {
 public:
  TempDir() {
    const std::filesystem::path base = std::filesystem::path(WW_BINARY).parent_path() / "test_tmp";
    std::filesystem::create_directories(base);
    std::string tmpl = (base / "ww_XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }
  // Writes content to path()/name (creating sub-folders) and returns the full path.
  std::string Write(const std::string& name, const std::string& content) const {
    const std::filesystem::path p = std::filesystem::path(path_) / name;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream out(p, std::ios::binary);
    out << content;
    return p.string();
  }

 private:
  std::string path_;
};

// A fixture with dir_: a fresh directory per test named after it, removed afterwards.
class TestDirFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::path(WW_BINARY).parent_path() / "test_tmp" /
           (std::to_string(getpid()) + "_" + info->test_suite_name() + "_" + info->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::filesystem::path dir_;
};

// Runs a shell command; its exit status, or -1 when it could not run or died of a signal.
inline int RunCommand(const std::string& cmd) {
  const int rc = std::system(cmd.c_str());
  if (rc == -1 || !WIFEXITED(rc)) return -1;
  return WEXITSTATUS(rc);
}

struct CommandResult {
  int exit_code = -1;  // -1: could not run, or killed by a signal
  std::string output;  // stdout, plus stderr when asked for
};

// Runs a shell command and captures its stdout (and stderr with merge_stderr).
inline CommandResult RunCapture(const std::string& cmd, bool merge_stderr = true) {
  CommandResult r;
  FILE* p = popen((cmd + (merge_stderr ? " 2>&1" : "")).c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  const int rc = pclose(p);
  if (rc != -1 && WIFEXITED(rc)) r.exit_code = WEXITSTATUS(rc);
  return r;
}

// `wattwatch ARGS` (ARGS as a shell would split them).
inline CommandResult RunWattwatch(const std::string& args, bool merge_stderr = true) {
  return RunCapture(WattwatchBinary() + " " + args, merge_stderr);
}

// A TCP port on 127.0.0.1 with nothing listening: bound, then closed (0 if none could be bound).
// A connection to it is refused at once.
inline int FreePort() {
  const int s = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    close(s);
    return 0;
  }
  close(s);
  return ntohs(a.sin_port);
}

// The pid a process writes to path (`echo $! > path`), waited for up to 10 s; 0 when none came.
inline pid_t WaitForPidFile(const std::string& path) {
  pid_t pid = 0;
  for (int i = 0; i < 1000 && pid == 0; ++i) {
    std::ifstream(path) >> pid;
    if (pid == 0) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return pid;
}

}  // namespace ww::testing
