// The Python stand-ins of tests/evidence started as real processes: the NCCL RAS responder and
// fake PyTorch ranks. Each Child is killed and reaped by its destructor, so a failed assertion
// leaves nothing running.
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "support/support.h"

namespace ww::evidence::testing {

class Child {
 public:
  explicit Child(const std::vector<std::string>& argv) {
    pid_ = fork();
    if (pid_ == 0) {
      std::vector<char*> args;
      for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      execvp(args[0], args.data());
      _exit(127);
    }
  }
  ~Child() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
};

inline std::string Script(const std::string& name) {
  return ww::testing::SourceDir() + "/tests/evidence/" + name;
}

// Waits up to timeout_ms for `path` to exist.
inline bool WaitForFile(const std::string& path, int timeout_ms = 10000) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < end) {
    if (std::filesystem::exists(path)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

// The RAS responder on 127.0.0.1:<kernel-chosen port>; port() is 0 when it did not start.
class RasResponder {
 public:
  RasResponder(const std::string& dir, std::vector<std::string> flags) {
    const std::string port_file = dir + "/ras.port";
    std::vector<std::string> argv = {"python3", Script("ras_responder.py"), "--port-file",
                                     port_file};
    argv.insert(argv.end(), flags.begin(), flags.end());
    child_ = std::make_unique<Child>(argv);
    if (WaitForFile(port_file)) port_ = std::stoi(ww::testing::ReadFile(port_file));
  }
  int port() const { return port_; }

 private:
  std::unique_ptr<Child> child_;
  int port_ = 0;
};

// `world` fake ranks creating <dir>/fr_pipe_<r>.pipe and dumping to <dir>/fr_dump_<r> (or to
// <dump_prefix><r>, its folder created).
class FakeRanks {
 public:
  // hostile_rank/hostile_dump: that rank answers the poke with the file's bytes as its dump.
  FakeRanks(const std::string& dir, int world, int behind_rank, int last_seq = 10235,
            const std::string& dump_prefix = "", int hostile_rank = -1,
            const std::string& hostile_dump = "") {
    pipe_prefix_ = dir + "/fr_pipe_";
    dump_prefix_ = dump_prefix.empty() ? dir + "/fr_dump_" : dump_prefix;
    std::filesystem::create_directories(std::filesystem::path(dump_prefix_).parent_path());
    for (int r = 0; r < world; ++r) {
      const std::string ready = dir + "/ready_" + std::to_string(r);
      std::vector<std::string> argv = {"python3",       Script("fake_rank.py"),
                                       "--rank",        std::to_string(r),
                                       "--world",       std::to_string(world),
                                       "--pipe-prefix", pipe_prefix_,
                                       "--dump-prefix", dump_prefix_,
                                       "--last",        std::to_string(last_seq),
                                       "--ready-file",  ready};
      if (r == behind_rank) argv.push_back("--behind");
      if (r == hostile_rank) {
        argv.push_back("--dump-bytes");
        argv.push_back(hostile_dump);
      }
      children_.push_back(std::make_unique<Child>(argv));
      ready_files_.push_back(ready);
    }
  }
  bool WaitReady() const {
    for (const std::string& f : ready_files_) {
      if (!WaitForFile(f)) return false;
    }
    return true;
  }
  const std::string& pipe_prefix() const { return pipe_prefix_; }
  const std::string& dump_prefix() const { return dump_prefix_; }

 private:
  std::vector<std::unique_ptr<Child>> children_;
  std::vector<std::string> ready_files_;
  std::string pipe_prefix_, dump_prefix_;
};

using ww::testing::FreePort;  // tests/support: a port on 127.0.0.1 with nothing listening

}  // namespace ww::evidence::testing
