// Issue 19 item 2, end to end: the real `wattwatch watch --replay ... --listen 127.0.0.1:0` under
// 8 connections that send their request one byte a second and 8 that send nothing, kept open
// (reopened when the server closes one) for 20 s. /metrics must answer within 1 s throughout,
// and SIGTERM under that load must end the watcher within 2 s. On the tree before the fix
// (cpp-httplib's 8 worker threads, each held by one such connection, and a per-recv read timeout
// that a byte a second never trips) scrapes got no answer and SIGTERM took over 20 s.
#include <fcntl.h>
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "export/slow_clients.h"
#include "support/support.h"

namespace ww::testing::endpoint_load {
namespace {

using Steady = std::chrono::steady_clock;

double SecondsSince(Steady::time_point t0) {
  return std::chrono::duration<double>(Steady::now() - t0).count();
}

// Waits for pid up to timeout_s; its exit code, or -1 after SIGKILL on timeout.
int WaitFor(pid_t pid, double timeout_s) {
  const auto t0 = Steady::now();
  for (;;) {
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    if (SecondsSince(t0) > timeout_s) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

TEST(EndpointUnderLoad, SlowAndIdleClientsNeitherBlindTheWatcherNorHoldItsExit) {
  TempDir dir;
  const std::string addr_file = dir.path() + "/addr";
  const std::string err_file = dir.path() + "/stderr";
  const std::string fixture = SourceDir() + "/tests/data/golden/watch_replay/node0.csv";
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int e = ::open(err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(e, 2);
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 1);
    // At --speed 1 the replay outlasts the test; --linger keeps serving if it does not.
    ::execl(WW_BINARY, WW_BINARY, "watch", "--source", ("replay:" + fixture).c_str(), "--speed",
            "1", "--linger", "--listen", "127.0.0.1:0", "--ready-file", addr_file.c_str(),
            static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ASSERT_GT(pid, 0);
  std::string addr;
  for (int i = 0; i < 1000 && addr.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    std::ifstream(addr_file) >> addr;
  }
  if (addr.empty()) {
    ::kill(pid, SIGKILL);
    WaitFor(pid, 10);
    FAIL() << "no --ready-file: " << ReadFile(err_file);
  }
  const int port = std::stoi(addr.substr(addr.rfind(':') + 1));

  SlowClients attack(port, /*slow=*/8, /*idle=*/8);
  attack.Start();
  ASSERT_EQ(attack.held(), 16);
  // Let them settle in first: before the fix, each took one of the server's worker threads.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));

  constexpr double kAnswerWithinS = 1.0;
  int scrapes = 0, failed = 0;
  double slowest_s = 0;
  std::string first_failure;
  const auto t0 = Steady::now();
  while (SecondsSince(t0) < 20.0) {
    httplib::Client c("127.0.0.1", port);
    c.set_connection_timeout(std::chrono::milliseconds(1000));
    c.set_read_timeout(std::chrono::milliseconds(1000));
    const auto s0 = Steady::now();
    auto r = c.Get("/metrics");
    const double took_s = SecondsSince(s0);
    ++scrapes;
    slowest_s = std::max(slowest_s, took_s);
    const bool ok = r && r->status == 200 &&
                    r->body.find("wattwatch_build_info") != std::string::npos &&
                    took_s <= kAnswerWithinS;
    if (!ok) {
      ++failed;
      if (first_failure.empty()) {
        first_failure = fmt::format(
            "at {:.1f} s: {} after {:.2f} s", SecondsSince(t0),
            r ? "HTTP " + std::to_string(r->status) : httplib::to_string(r.error()), took_s);
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_EQ(failed, 0) << failed << " of " << scrapes << " scrapes got no answer within "
                       << kAnswerWithinS << " s; first " << first_failure;
  EXPECT_GE(scrapes, 15);
  EXPECT_LE(slowest_s, kAnswerWithinS);
  // The attack was real all along, and a request trickling in is cut off (408 after 5 s), so
  // every slow connection was closed and reopened at least once in 20 s.
  EXPECT_GE(attack.slow_bytes_sent(), 8 * 15);
  EXPECT_GE(attack.slow_cut(), 8) << "a byte a second must not keep a request open forever";
  EXPECT_GE(attack.held(), 14) << "the attack kept its connections";

  // SIGTERM with all 16 still connected.
  const auto sent = Steady::now();
  ::kill(pid, SIGTERM);
  const int rc = WaitFor(pid, 30);
  const double exit_s = SecondsSince(sent);
  attack.Stop();
  std::cout << fmt::format(
      "{} scrapes, slowest {:.3f} s; slow connections cut {} times, idle {}; exit {:.3f} s after "
      "SIGTERM\n",
      scrapes, slowest_s, attack.slow_cut(), attack.idle_cut(), exit_s);
  EXPECT_EQ(rc, 0) << ReadFile(err_file);
  EXPECT_LT(exit_s, 2.0) << "SIGTERM under load";
}

}  // namespace
}  // namespace ww::testing::endpoint_load
