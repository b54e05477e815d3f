// End to end: the real `wattwatch watch` and `wattwatch run` binaries on
// simulator logs, real child processes, signals, a webhook receiver, a hook,
// and the fake libnvidia-ml.so.1.
#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "support/support.h"
#include "watch/process_util.h"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::HasSubstr;
using ::testing::Not;

std::string Slurp(const fs::path& p) { return ww::testing::ReadFile(p.string()); }

std::vector<json> ReadEvents(const fs::path& p) {
  std::vector<json> v;
  for (const std::string& line : ww::testing::Lines(ww::testing::ReadFile(p.string()))) {
    v.push_back(json::parse(line));
  }
  return v;
}

using ww::testing::FreePort;
using ww::testing::LiveProcessesInGroup;
using ww::testing::ProcessRunning;
using ww::testing::WaitForPidFile;

int CountEvents(const std::vector<json>& ev, const std::string& kind) {
  int n = 0;
  for (const auto& e : ev) n += e["event"] == kind;
  return n;
}

class WatchCliTest : public ww::testing::TestDirFixture {
 protected:
  // Starts the binary with args; stdout/stderr to files in dir_. Returns the
  // pid.
  pid_t Spawn(const std::vector<std::string>& args, const std::vector<std::string>& env = {}) {
    const std::string out = (dir_ / "stdout").string(), err = (dir_ / "stderr").string();
    const pid_t pid = fork();
    if (pid == 0) {
      const int o = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      const int e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(o, 1);
      dup2(e, 2);
      for (const auto& kv : env) putenv(const_cast<char*>(kv.c_str()));
      std::vector<char*> argv;
      argv.push_back(const_cast<char*>(WW_BINARY));
      for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execv(WW_BINARY, argv.data());
      _exit(127);
    }
    return pid;
  }
  // Waits for pid; -1 on timeout (then kills it).
  int Wait(pid_t pid, double timeout_s = 120) {
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
    for (;;) {
      int status = 0;
      if (waitpid(pid, &status, WNOHANG) == pid) {
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      if (std::chrono::steady_clock::now() > deadline) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        return -1;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  int Run(const std::vector<std::string>& args, const std::vector<std::string>& env = {}) {
    return Wait(Spawn(args, env));
  }
  std::string Err() { return Slurp(dir_ / "stderr"); }
  std::string Out() { return Slurp(dir_ / "stdout"); }

  // A one-host simulator log of `scenario` (or host `host` of a 2-host job).
  std::string Log(const std::string& scenario, int hosts = 1, int host = 0) {
    const auto d = dir_ / scenario;
    EXPECT_EQ(Run({"simulate", scenario, "--hosts", std::to_string(hosts), "--gpus-per-host", "4",
                   "--interval-ms", "1000", "--out-dir", d.string()}),
              0)
        << Err();
    return (d / ("node" + std::to_string(host) + ".csv")).string();
  }
};

TEST_F(WatchCliTest, RunKillsAHungJobAndExitsThree) {
  const std::string log = Log("hang-spin");
  const auto events = dir_ / "ev.jsonl";
  const int rc =
      Run({"run", "--source", "replay:" + log, "--speed", "50", "--listen", "none",
           "--kill-grace-s", "2", "--events", events.string(), "--", "sh", "-c", "sleep 600"});
  EXPECT_EQ(rc, 3) << Err();
  const auto ev = ReadEvents(events);
  EXPECT_EQ(CountEvents(ev, "hang_confirmed"), 1);
  EXPECT_EQ(CountEvents(ev, "kill"), 1) << "SIGTERM was enough";
  int pgid = 0;
  for (const auto& e : ev) {
    if (e["event"] == "kill") pgid = e["pgid"];
    if (e["event"] == "hang_confirmed") {
      EXPECT_THAT(e["reasons"].dump(), HasSubstr("--confirm-proc-s"))
          << "the process probe decided";
    }
  }
  ASSERT_GT(pgid, 0);
  EXPECT_EQ(LiveProcessesInGroup(pgid), 0) << "no process of the job may survive";
  EXPECT_THAT(Err(), HasSubstr("HANG confirmed"));
}

TEST_F(WatchCliTest, RunEscalatesToSigkillWhenTermIsIgnored) {
  const std::string log = Log("hang-exit");
  const auto events = dir_ / "ev.jsonl";
  const int rc = Run({"run", "--source", "replay:" + log, "--speed", "50", "--listen", "none",
                      "--kill-grace-s", "1", "--events", events.string(), "--", "sh", "-c",
                      "trap '' TERM; while :; do sleep 0.2; done"});
  EXPECT_EQ(rc, 3) << Err();
  const auto ev = ReadEvents(events);
  EXPECT_EQ(CountEvents(ev, "kill"), 2);
  bool sigkill = false;
  for (const auto& e : ev) sigkill |= e["event"] == "kill" && e["signal"] == "SIGKILL";
  EXPECT_TRUE(sigkill);
}

TEST_F(WatchCliTest, RunDoesNotKillAJobWhoseRanksStayAsHotAsTheyCompute) {
  // 4 H100s: idle, training at ~600 W and 66 °C, then power reads 120 W at 100 % (where an H100
  // waits in a collective) for 4 minutes while every board stays at 66 °C. A waiting board cools:
  // power and temperature disagree, and the job (whose process does nothing a probe can see) is
  // not killed on that (triage/thermal.h).
  std::string csv =
      "timestamp, index, name, power.draw [W], power.limit [W], utilization.gpu [%], "
      "memory.used [MiB], temperature.gpu\n";
  for (int s = 0; s < 380; ++s) {
    for (int g = 0; g < 4; ++g) {
      const bool idle = s < 20, waiting = s >= 140;
      csv += fmt::format(
          "2025/03/01 12:{:02d}:{:02d}.000, {}, NVIDIA H100 80GB HBM3, {} W, 700.00 W, {} %, "
          "{} MiB, {}\n",
          s / 60, s % 60, g, idle ? 75 : (waiting ? 120 + g : 600 + (s + g) % 9), idle ? 0 : 100,
          idle ? 520 : 70000, idle ? 35 : 66);
    }
  }
  const auto log = dir_ / "hot.csv";
  std::ofstream(log) << csv;
  const auto events = dir_ / "ev.jsonl";
  const int rc = Run({"run", "--source", "replay:" + log.string(), "--speed", "50", "--listen",
                      "none", "--kill-grace-s", "2", "--events", events.string(), "--", "sh", "-c",
                      "sleep 10; exit 0"});
  EXPECT_EQ(rc, 0) << Err();
  const auto ev = ReadEvents(events);
  EXPECT_EQ(CountEvents(ev, "hang_confirmed"), 0) << Err();
  EXPECT_EQ(CountEvents(ev, "kill"), 0);
}

TEST_F(WatchCliTest, RunDoesNotKillAJobThatCheckpoints) {
  // Host 1 of a 2-host job while rank 0 saves for 150 s: every GPU this host
  // sees spins. The job's processes write all along (its checkpoint shards), so
  // it is not a hang.
  const std::string log = Log("checkpoint-rank0", 2, 1);
  const auto events = dir_ / "ev.jsonl";
  const std::string job =
      "i=0; while [ $i -lt 45 ]; do dd if=/dev/zero of=" + (dir_ / "ckpt.bin").string() +
      " bs=1M count=2 conv=fsync 2>/dev/null; sleep 0.2; i=$((i+1)); done; exit 0";
  const int rc = Run({"run", "--source", "replay:" + log, "--speed", "50", "--listen", "none",
                      "--events", events.string(), "--", "sh", "-c", job});
  const auto ev = ReadEvents(events);
  if (CountEvents(ev, "hang_dismissed") == 0 &&
      Err().find("I/O counters not readable") != std::string::npos) {
    GTEST_SKIP() << "/proc/PID/io is not readable here";
  }
  EXPECT_EQ(rc, 0) << Err();
  EXPECT_EQ(CountEvents(ev, "hang_confirmed"), 0);
  EXPECT_GE(CountEvents(ev, "hang_dismissed"), 1) << "the spin was seen and explained";
}

TEST_F(WatchCliTest, PeerShowingACheckpointKeepsRunFromKillingAWaitingHost) {
  // Host 1 of a 2-host job, whose processes write nothing while rank 0 (host 0) saves for
  // 150 s. Alone, host 1's watcher takes the wait for a hang and kills the job (the control).
  // With --peer pointing at host 0's watcher, which shows the checkpoint, it does not.
  const std::string node0 = Log("checkpoint-rank0", 2, 0);
  const std::string node1 = (dir_ / "checkpoint-rank0" / "node1.csv").string();
  const std::vector<std::string> job = {"--", "sh", "-c", "sleep 8; exit 0"};
  auto run_node1 = [&](const std::vector<std::string>& extra, const std::string& events) {
    std::vector<std::string> args = {"run",     "--source", "replay:" + node1,
                                     "--speed", "50",       "--listen",
                                     "none",    "--events", (dir_ / "node1.jsonl").string()};
    args.insert(args.end(), extra.begin(), extra.end());
    args.insert(args.end(), job.begin(), job.end());
    return args;
  };
  EXPECT_EQ(Run(run_node1({}, "control.jsonl")), 3)
      << "control: without the peer the wait looks like a hang";

  const auto addr_file = dir_ / "node0.addr";
  // Both watchers share a token: node0's /state requires it, node1's --peer sends it.
  const std::string token = (dir_ / "state.token").string();
  ww::testing::WriteFile(token, "k7-shared-secret\n");
  chmod(token.c_str(), 0600);
  // The peer's watcher runs alongside, on its own files (the fixture's stdout/stderr are ours).
  const pid_t peer = fork();
  if (peer == 0) {
    const int null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    dup2(null, 2);
    execl(WW_BINARY, WW_BINARY, "watch", "--source", ("replay:" + node0).c_str(), "--speed", "50",
          "--listen", "127.0.0.1:0", "--ready-file", addr_file.c_str(), "--linger",
          "--state-token-file", token.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  std::string addr;
  for (int i = 0; i < 200 && addr.empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::ifstream(addr_file) >> addr;
  }
  ASSERT_FALSE(addr.empty());
  {
    httplib::Client c("http://" + addr);
    auto no_token = c.Get("/state");
    ASSERT_TRUE(no_token);
    EXPECT_EQ(no_token->status, 401) << "/state is closed without the token";
  }
  const int rc = Run(run_node1({"--peer", addr, "--state-token-file", token}, "node1.jsonl"));
  kill(peer, SIGTERM);
  Wait(peer, 10);
  EXPECT_EQ(rc, 0) << Err();
  const auto ev = ReadEvents(dir_ / "node1.jsonl");
  bool peer_reason = false;
  for (const auto& e : ev) {
    if (e["event"] == "hang_dismissed")
      peer_reason |= e["reasons"].dump().find("checkpoint") != std::string::npos;
  }
  EXPECT_TRUE(peer_reason) << "the dismissal names the peer's checkpoint";
}

// Issue 19 item 2: a --peer that cannot be read is unknown, not "no progress". The same replay
// as above (host 1 waiting 150 s for rank 0's checkpoint, its own processes writing nothing),
// with --peer at a port that never answers, and at one that refuses: the job runs to its end.
// Before, the unreachable peer counted as one more quiet signal and the job was killed after
// --confirm-proc-s (exit 3, "peer: no signal").
TEST_F(WatchCliTest, RunWithAnUnreachablePeerDoesNotKillAJobThroughARankZeroCheckpoint) {
  const std::string node1 = Log("checkpoint-rank0", 2, 1);
  // Listens, never accepts: connections sit in the backlog and no answer ever comes.
  const int silent = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(silent, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(listen(silent, 128), 0);
  socklen_t len = sizeof a;
  getsockname(silent, reinterpret_cast<sockaddr*>(&a), &len);
  const std::string silent_addr = "127.0.0.1:" + std::to_string(ntohs(a.sin_port));
  // Bound and closed again: nothing listens, connections are refused.
  const int gone_port = FreePort();
  ASSERT_GT(gone_port, 0);
  const std::string refused_addr = "127.0.0.1:" + std::to_string(gone_port);

  struct Case {
    std::string peer;
    const char* why;  // what the warning says
  };
  for (const Case& c : {Case{silent_addr, "connected, but no answer within 2 s"},
                        Case{refused_addr, "cannot connect"}}) {
    SCOPED_TRACE(c.peer);
    const auto events = dir_ / "ev.jsonl";
    std::filesystem::remove(events);
    const int rc =
        Run({"run", "--source", "replay:" + node1, "--speed", "50", "--listen", "none", "--events",
             events.string(), "--peer", c.peer, "--", "sh", "-c", "sleep 8; exit 0"});
    EXPECT_EQ(rc, 0) << Err();
    const auto ev = ReadEvents(events);
    EXPECT_EQ(CountEvents(ev, "hang_confirmed"), 0);
    EXPECT_EQ(CountEvents(ev, "kill"), 0);
    // The warning names the peer and what went wrong, in words and in httplib's terms.
    EXPECT_THAT(Err(), HasSubstr("peer " + c.peer + ": " + c.why));
    EXPECT_THAT(Err(), HasSubstr("a hang is confirmed only after 300 s"));
  }
  close(silent);
}

// ... but a real hang is still confirmed when the peer stays out past --peer-unknown-s, and the
// reasons say it was confirmed without the peer.
TEST_F(WatchCliTest, AHangIsConfirmedWithoutAPeerThatStaysUnreachable) {
  const std::string log = Log("hang-spin");
  const int port = FreePort();  // nothing listens there
  ASSERT_GT(port, 0);
  const std::string peer = "127.0.0.1:" + std::to_string(port);
  const auto events = dir_ / "ev.jsonl";
  const int rc = Run({"run", "--source", "replay:" + log, "--speed", "50", "--listen", "none",
                      "--kill-grace-s", "2", "--events", events.string(), "--peer", peer,
                      "--peer-unknown-s", "120", "--", "sh", "-c", "sleep 600"});
  EXPECT_EQ(rc, 3) << Err();
  std::string reasons;
  for (const auto& e : ReadEvents(events)) {
    if (e["event"] == "hang_confirmed") reasons = e["reasons"].dump();
  }
  EXPECT_THAT(reasons, HasSubstr("peer: unreachable for"));
  EXPECT_THAT(reasons, HasSubstr("peer " + peer + ": cannot connect"));
  EXPECT_THAT(reasons, HasSubstr("confirmed without it after 120 s (--peer-unknown-s)"));
}

TEST_F(WatchCliTest, APortInUseNamesThePort) {
  const int holder = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(bind(holder, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(listen(holder, 4), 0);
  socklen_t len = sizeof a;
  getsockname(holder, reinterpret_cast<sockaddr*>(&a), &len);
  const std::string port = std::to_string(ntohs(a.sin_port));
  EXPECT_EQ(Run({"watch", "--source", "sim:healthy", "--listen", "127.0.0.1:" + port}), 2);
  EXPECT_THAT(Err(), HasSubstr("--listen 127.0.0.1:" + port + ": port " + port + " is in use"));
  close(holder);
}

TEST_F(WatchCliTest, ListeningBeyondLoopbackWarnsThatStateIsOpenUnlessATokenGuardsIt) {
  const std::vector<std::string> args = {"watch",  "--source", "sim:healthy", "--speed",
                                         "100000", "--listen", "0.0.0.0:0"};
  ASSERT_EQ(Run(args), 0) << Err();
  EXPECT_THAT(Err(), HasSubstr("--listen 0.0.0.0:0: /state has no authentication"));
  EXPECT_THAT(Err(), HasSubstr("--state-token-file"));

  const std::string token = (dir_ / "token").string();
  ww::testing::WriteFile(token, "  abc123\n");
  chmod(token.c_str(), 0600);
  std::vector<std::string> guarded = args;
  guarded.insert(guarded.end(), {"--state-token-file", token});
  ASSERT_EQ(Run(guarded), 0) << Err();
  EXPECT_THAT(Err(), Not(HasSubstr("no authentication")));
  EXPECT_THAT(Err(), Not(HasSubstr("readable by other users")));

  chmod(token.c_str(), 0644);
  ASSERT_EQ(Run(guarded), 0) << Err();
  EXPECT_THAT(Err(), HasSubstr("--state-token-file " + token + ": readable by other users"));

  // Loopback: no warning.
  ASSERT_EQ(
      Run({"watch", "--source", "sim:healthy", "--speed", "100000", "--listen", "127.0.0.1:0"}), 0);
  EXPECT_THAT(Err(), Not(HasSubstr("no authentication")));

  // A token file that cannot carry a token is refused up front.
  ww::testing::WriteFile(token, "\n");
  EXPECT_EQ(Run(guarded), 2);
  EXPECT_THAT(Err(), HasSubstr("--state-token-file " + token + ": the file is empty"));
  ww::testing::WriteFile(token, "two words\n");
  EXPECT_EQ(Run(guarded), 2);
  EXPECT_THAT(Err(), HasSubstr("the token must be one word"));
}

TEST_F(WatchCliTest, RunPassesTheCommandsExitCodeOn) {
  EXPECT_EQ(Run({"run", "--source", "sim:healthy", "--speed", "100", "--listen", "none", "--", "sh",
                 "-c", "exit 7"}),
            7)
      << Err();
  EXPECT_EQ(Run({"run", "--listen", "none", "--source", "sim:healthy", "--", "/nonexistent/cmd"}),
            2);
  EXPECT_THAT(Err(), HasSubstr("cannot start '/nonexistent/cmd'"));
}

TEST_F(WatchCliTest, RunForwardsSigterm) {
  const pid_t pid = Spawn({"run", "--source", "sim:healthy", "--speed", "1", "--listen", "none",
                           "--", "sh", "-c", "trap 'exit 42' TERM; while :; do sleep 0.1; done"});
  std::this_thread::sleep_for(std::chrono::milliseconds(700));
  kill(pid, SIGTERM);
  EXPECT_EQ(Wait(pid, 30), 42) << Err();
}

// Issue 31 item 15: a job that ignores the forwarded SIGTERM is not left running; SIGKILL follows
// after --kill-grace-s, as the hang kill does.
TEST_F(WatchCliTest, RunEscalatesAnIgnoredForwardedSigtermToSigkill) {
  const std::string ready = (dir_ / "trapped").string();
  const pid_t pid =
      Spawn({"run", "--source", "sim:healthy", "--speed", "1", "--listen", "none", "--kill-grace-s",
             "1", "--events", (dir_ / "ev.jsonl").string(), "--", "sh", "-c",
             "trap '' TERM; echo $$ > " + ready + "; while :; do sleep 0.1; done"});
  ASSERT_GT(WaitForPidFile(ready), 0);
  const auto sent = std::chrono::steady_clock::now();
  kill(pid, SIGTERM);
  const int rc = Wait(pid, 30);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - sent).count();
  std::printf("run, job ignoring the forwarded SIGTERM: exit %d after %.1f s\n", rc, s);
  EXPECT_EQ(rc, 128 + SIGKILL) << Err();
  EXPECT_LT(s, 10.0);
  bool escalated = false;
  for (const auto& e : ReadEvents(dir_ / "ev.jsonl")) {
    escalated =
        escalated || (e.value("event", "") == "kill" && e.contains("after_forwarded_signal"));
  }
  EXPECT_TRUE(escalated);
}

// Issue 31 item 15: the job's own exit 3 passes through, and run says whose 3 it is.
TEST_F(WatchCliTest, RunSaysWhenExitThreeIsTheJobsOwn) {
  EXPECT_EQ(Run({"run", "--source", "sim:healthy", "--speed", "100", "--listen", "none", "--", "sh",
                 "-c", "exit 3"}),
            3);
  EXPECT_THAT(Err(), HasSubstr("the job itself exited with code 3; no hang was acted on"));
}

// Issue 19 item 3: a signal to `run` reaches every process of the job, not only its leader.
TEST_F(WatchCliTest, RunForwardsSigtermToTheWholeProcessGroup) {
  const std::string p1 = (dir_ / "p1").string(), p2 = (dir_ / "p2").string();
  const pid_t pid =
      Spawn({"run", "--source", "sim:healthy", "--speed", "1", "--listen", "none", "--", "sh", "-c",
             "sleep 101 & echo $! > " + p1 + "; sleep 102 & echo $! > " + p2 + "; wait"});
  const pid_t s1 = WaitForPidFile(p1), s2 = WaitForPidFile(p2);
  ASSERT_GT(s1, 0);
  ASSERT_GT(s2, 0);
  kill(pid, SIGTERM);
  EXPECT_EQ(Wait(pid, 30), 128 + SIGTERM) << "the job's own exit code: " << Err();
  for (int i = 0; i < 100 && (ProcessRunning(s1) || ProcessRunning(s2)); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_FALSE(ProcessRunning(s1)) << "sleep 101 orphaned";
  EXPECT_FALSE(ProcessRunning(s2)) << "sleep 102 orphaned";
  if (ProcessRunning(s1)) kill(s1, SIGKILL);
  if (ProcessRunning(s2)) kill(s2, SIGKILL);
}

// SIGINT: a non-interactive shell starts its background jobs with SIGINT ignored, so they survive
// the forwarded signal; `run` ends them once the kill grace has passed after their leader exited.
TEST_F(WatchCliTest, RunEndsWhatTheJobLeftBehindWithinTheKillGrace) {
  const std::string p1 = (dir_ / "p1").string();
  const pid_t pid = Spawn({"run", "--source", "sim:healthy", "--speed", "1", "--listen", "none",
                           "--kill-grace-s", "1", "--events", (dir_ / "ev.jsonl").string(), "--",
                           "sh", "-c", "sleep 103 & echo $! > " + p1 + "; wait"});
  const pid_t s1 = WaitForPidFile(p1);
  ASSERT_GT(s1, 0);
  const auto sent = std::chrono::steady_clock::now();
  kill(pid, SIGINT);
  EXPECT_EQ(Wait(pid, 30), 128 + SIGINT) << Err();
  EXPECT_LT(std::chrono::steady_clock::now() - sent, std::chrono::seconds(10));
  for (int i = 0; i < 100 && ProcessRunning(s1); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_FALSE(ProcessRunning(s1)) << "the job's background sleep outlived `run`";
  if (ProcessRunning(s1)) kill(s1, SIGKILL);
  bool leftovers_event = false;
  for (const auto& e : ReadEvents(dir_ / "ev.jsonl")) {
    leftovers_event |= e["event"] == "kill" && e.value("leftovers", false);
  }
  EXPECT_TRUE(leftovers_event);
}

// Issue 19's acceptance line for item 3, under SIGINT and under SIGTERM: the child is a shell that
// traps both and exits 42; of its two grandchildren one is a plain background sleep (which a
// non-interactive shell starts with SIGINT ignored) and one ignores both signals, as a worker
// with its own handlers may. Both are gone within the kill grace of the signal (plus the time
// `run` takes to notice), and `run` exits with the child's own code, not the signal's.
TEST_F(WatchCliTest, RunUnderSigintAndSigtermEndsGrandchildrenWithinTheGraceWithTheChildsCode) {
  constexpr double kGraceS = 2.0;
  for (const int sig : {SIGINT, SIGTERM}) {
    SCOPED_TRACE(sig == SIGINT ? "SIGINT" : "SIGTERM");
    const std::string p1 = (dir_ / "p1").string(), p2 = (dir_ / "p2").string();
    std::filesystem::remove(p1);
    std::filesystem::remove(p2);
    const std::string job = "trap 'exit 42' INT TERM; sleep 201 & echo $! > " + p1 +
                            "; sh -c 'trap \"\" INT TERM; exec sleep 202' & echo $! > " + p2 +
                            "; wait";
    const pid_t pid = Spawn({"run", "--source", "sim:healthy", "--speed", "1", "--listen", "none",
                             "--kill-grace-s", "2", "--", "sh", "-c", job});
    const pid_t g1 = WaitForPidFile(p1), g2 = WaitForPidFile(p2);
    ASSERT_GT(g1, 0);
    ASSERT_GT(g2, 0);
    // The second one has set its traps once it has become `sleep`.
    for (int i = 0; i < 250; ++i) {
      std::string comm;
      std::ifstream("/proc/" + std::to_string(g2) + "/comm") >> comm;
      if (comm == "sleep") break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    const auto sent = std::chrono::steady_clock::now();
    kill(pid, sig);
    double gone_s = -1;
    for (int i = 0; i < 500; ++i) {
      if (!ProcessRunning(g1) && !ProcessRunning(g2)) {
        gone_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - sent).count();
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    const int rc = Wait(pid, 30);
    const double exit_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - sent).count();
    std::printf(
        "%s: grandchildren gone %.3f s after the signal (grace %.1f s), run exited %d "
        "after %.3f s\n",
        sig == SIGINT ? "SIGINT" : "SIGTERM", gone_s, kGraceS, rc, exit_s);
    EXPECT_EQ(rc, 42) << "the child's own exit code: " << Err();
    EXPECT_GE(gone_s, 0) << "a grandchild outlived the signal by 5 s";
    EXPECT_LE(gone_s, kGraceS + 0.75);
    EXPECT_LE(exit_s, kGraceS + 1.5);
    if (ProcessRunning(g1)) kill(g1, SIGKILL);
    if (ProcessRunning(g2)) kill(g2, SIGKILL);
  }
}

// As a container's PID 1, `run` inherits the job's orphans and must reap them.
TEST_F(WatchCliTest, RunAsPidOneReapsOrphans) {
  if (ww::testing::RunCommand("unshare -Urpf --mount-proc true >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "no user+PID namespaces here";
  }
  // The job orphans a short sleep (its parent shell exits at once), waits for it to end, then
  // exits with the number of zombies in the namespace. A script file: no outer shell expands it.
  const std::string job = (dir_ / "job.sh").string();
  ww::testing::WriteFile(job,
                         "sh -c 'sleep 0.2 &'\nsleep 1.5\n"
                         "n=$(grep -l '^State:.*Z' /proc/[0-9]*/status 2>/dev/null | wc -l)\n"
                         "exit $n\n");
  const auto r =
      ww::testing::RunCapture("unshare -Urpf --mount-proc " + ww::testing::WattwatchBinary() +
                              " run --source sim:healthy --speed 1 --listen none "
                              "--log-level error -- sh " +
                              job);
  EXPECT_EQ(r.exit_code, 0) << "zombies left in the namespace: " << r.exit_code << "\n" << r.output;
}

TEST_F(WatchCliTest, KillingTheWatcherLeavesTheJobRunning) {
  const auto pidfile = dir_ / "job.pid";
  const pid_t watcher =
      Spawn({"run", "--source", "sim:healthy", "--speed", "1", "--listen", "none", "--", "sh", "-c",
             "echo $$ > " + pidfile.string() + "; exec sleep 60"});
  const pid_t job = WaitForPidFile(pidfile.string());
  ASSERT_GT(job, 0);
  kill(watcher, SIGKILL);
  Wait(watcher, 10);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(kill(job, 0), 0) << "the job died with its watcher";
  kill(job, SIGKILL);
}

// Issue 19 item 11 and a message, end to end: a hook that outlives --hook-timeout-s is killed with
// what it started (its background child here; before, only the hook's own pid was killed and both
// sleeps ran on), and a webhook nobody answers is named with its URL and the error in words
// (before: "webhook failed: Connection").
TEST_F(WatchCliTest, ATimedOutHookIsKilledWithItsChildrenAndAFailedWebhookNamesItsTarget) {
  const int port = FreePort();  // nothing listens there
  ASSERT_GT(port, 0);
  const std::string url = "http://127.0.0.1:" + std::to_string(port) + "/hook";
  const std::string bg = (dir_ / "bg").string(), fg = (dir_ / "fg").string();
  const int rc =
      Run({"watch", "--source", "replay:" + Log("hang-spin"), "--speed", "50", "--listen", "none",
           "--webhook", url, "--hook", "sh", "--hook-arg=-c", "--hook-arg",
           "sleep 301 & echo $! > " + bg + "; echo $$ > " + fg + "; exec sleep 302",
           "--hook-timeout-s", "1"});
  EXPECT_EQ(rc, 0) << Err();
  pid_t child = 0, hook = 0;
  std::ifstream(bg) >> child;
  std::ifstream(fg) >> hook;
  ASSERT_GT(child, 0) << Err();
  ASSERT_GT(hook, 0) << Err();
  for (int i = 0; i < 100 && (ProcessRunning(child) || ProcessRunning(hook)); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_FALSE(ProcessRunning(hook)) << "the hook outlived its timeout";
  EXPECT_FALSE(ProcessRunning(child)) << "the hook's background child outlived its timeout";
  if (ProcessRunning(child)) kill(child, SIGKILL);
  if (ProcessRunning(hook)) kill(hook, SIGKILL);
  EXPECT_THAT(Err(), HasSubstr("hook failed: 'sh' did not finish within 1 s; killed"));
  EXPECT_THAT(Err(), HasSubstr("webhook failed: POST " + url + ": cannot connect"));
}

TEST_F(WatchCliTest, WebhookAndHookGetTheHang) {
  httplib::Server receiver;
  std::mutex mu;
  std::string body;
  receiver.Post("/hook", [&](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard<std::mutex> lock(mu);
    body = req.body;
    res.status = 204;
  });
  const int port = receiver.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  std::thread t([&] { receiver.listen_after_bind(); });
  const std::string log = Log("hang-exit");
  const auto hook_out = dir_ / "hook.env";
  const auto events = dir_ / "ev.jsonl";
  const int rc = Run({"watch",
                      "--source",
                      "replay:" + log,
                      "--speed",
                      "100",
                      "--listen",
                      "none",
                      "--host",
                      "gpu-node-17",
                      "--job-id",
                      "ft-32b",
                      "--events",
                      events.string(),
                      "--webhook",
                      "http://127.0.0.1:" + std::to_string(port) + "/hook",
                      "--hook",
                      "sh",
                      "--hook-arg",
                      "-c",
                      "--hook-arg",
                      "env | grep ^WATTWATCH_ | sort > " + hook_out.string(),
                      "--fail-on-hang"});
  receiver.stop();
  t.join();
  EXPECT_EQ(rc, 3) << Err();
  std::string payload;
  {
    std::lock_guard<std::mutex> lock(mu);
    payload = body;
  }
  ASSERT_FALSE(payload.empty()) << Err();
  const json p = json::parse(payload);
  EXPECT_EQ(p["event"], "hang_confirmed");
  EXPECT_EQ(p["host"], "gpu-node-17");
  EXPECT_EQ(p["job_id"], "ft-32b");
  EXPECT_EQ(p["gpus"].size(), 4u);
  EXPECT_EQ(p["culprits"].size(), 1u) << "hang-exit: the rank whose process is gone";
  EXPECT_FALSE(p["reasons"].empty());
  EXPECT_TRUE(p.contains("since"));
  const std::string env = Slurp(hook_out);
  EXPECT_THAT(env, HasSubstr("WATTWATCH_EVENT=hang_confirmed\n"));
  EXPECT_THAT(env, HasSubstr("WATTWATCH_HOST=gpu-node-17\n"));
  EXPECT_THAT(env, HasSubstr("WATTWATCH_JOB_ID=ft-32b\n"));
  EXPECT_THAT(env, HasSubstr("WATTWATCH_CULPRITS=gpu-node-17/GPU"));
  EXPECT_THAT(env, HasSubstr("WATTWATCH_PAYLOAD={"));
  const auto ev = ReadEvents(events);
  int webhook_ok = 0, hook_ok = 0;
  for (const auto& e : ev) {
    if (e["event"] == "action" && e["action"] == "webhook" && e.value("status", 0) == 204)
      ++webhook_ok;
    if (e["event"] == "action" && e["action"] == "hook" && e.value("exit_code", -1) == 0) ++hook_ok;
  }
  EXPECT_EQ(webhook_ok, 1);
  EXPECT_EQ(hook_ok, 1);
}

TEST_F(WatchCliTest, NoNvmlIsOneClearMessageAndExitTwo) {
  const int rc =
      Run({"watch", "--listen", "none"}, {"WATTWATCH_NVML_LIB=/nonexistent/libnvidia-ml.so.1"});
  EXPECT_EQ(rc, 2);
  EXPECT_THAT(Err(), HasSubstr("libnvidia-ml"));
  EXPECT_THAT(Err(), HasSubstr("--nvml-lib"));
}

TEST_F(WatchCliTest, LiveNvmlGoesOnThroughABlockedCall) {
  const auto script = dir_ / "gpus.script";
  std::ofstream(script)
      << "gpus 2\ngpu * name \"NVIDIA H100 80GB HBM3\" arch hopper\nset * power_mw 650000\nset * "
         "util_gpu 100\nat 800 block 1 nvmlDeviceGetPowerUsage 2\n";
  const pid_t pid =
      Spawn({"watch", "--source", "nvml", "--interval-ms", "100", "--listen", "127.0.0.1:0",
             "--ready-file", (dir_ / "addr").string(), "--json"},
            {"WATTWATCH_NVML_LIB=" FAKE_NVML_LIB, "FAKE_NVML_SCRIPT=" + script.string()});
  std::this_thread::sleep_for(std::chrono::milliseconds(3500));
  std::string addr;
  std::ifstream(dir_ / "addr") >> addr;
  ASSERT_FALSE(addr.empty()) << Err();
  httplib::Client c("http://" + addr);
  auto m = c.Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_THAT(m->body, HasSubstr("wattwatch_gpu_power_watts{host="));
  kill(pid, SIGTERM);
  ASSERT_EQ(Wait(pid, 20), 0) << Err();
  const json s = json::parse(Out());
  EXPECT_GE(s["ticks"].get<int>(), 20) << "sampling went on while GPU 1's call blocked";
  EXPECT_GE(s["samples_dropped"].get<int>(), 1) << "the stale GPU is counted";
  EXPECT_THAT(m->body, HasSubstr("wattwatch_samples_dropped_total"));
}

TEST_F(WatchCliTest, BadInputIsExitTwoWithTheReason) {
  EXPECT_EQ(Run({"watch", "--source", "replay:/nonexistent.csv", "--listen", "none"}), 2);
  EXPECT_THAT(Err(), HasSubstr("/nonexistent.csv"));
  EXPECT_EQ(Run({"watch", "--source", "sim:healthy", "--listen", "300.1.1.1:99999"}), 2);
  EXPECT_THAT(Err(), HasSubstr("--listen"));
  EXPECT_EQ(Run({"watch", "--source", "sim:healthy", "--listen", "none", "--progress-log", "x",
                 "--progress-regex", "("}),
            2);
  EXPECT_THAT(Err(), HasSubstr("--progress-regex"));
  EXPECT_EQ(Run({"watch", "--source", "sim:healthy", "--listen", "none", "--webhook", "ftp://x"}),
            2);
  EXPECT_THAT(Err(), HasSubstr("--webhook"));
  EXPECT_EQ(Run({"run", "--listen", "none"}), 2) << "run needs a command";
  EXPECT_EQ(Run({"watch", "--help"}), 0);
  EXPECT_THAT(Out(), HasSubstr("Exit codes"));
  EXPECT_THAT(Out(), HasSubstr("--confirm-proc-s"));
}

// One set of triage flags (issue 28): the confirm window is --hang-confirm-s as in triage, fleet
// and check, with --confirm-s kept as its old name; --max-checkpoint-s is range-checked here too.
TEST_F(WatchCliTest, TheConfirmWindowAnswersToBothNamesAndMaxCheckpointIsChecked) {
  for (const char* name : {"--hang-confirm-s", "--confirm-s"}) {
    const std::string events = (dir_ / (std::string(name + 2) + ".jsonl")).string();
    ASSERT_EQ(Run({"watch", "--source", "sim:healthy", "--speed", "100000", "--listen", "none",
                   name, "7", "--events", events}),
              0)
        << name << ": " << Err();
    const auto ev = ReadEvents(events);
    ASSERT_FALSE(ev.empty()) << name;
    EXPECT_EQ(ev.front()["event"], "watch_started") << name;
    EXPECT_EQ(ev.front()["confirm_s"], 7.0) << name;
  }
  EXPECT_EQ(
      Run({"watch", "--source", "sim:healthy", "--listen", "none", "--max-checkpoint-s", "0"}), 2);
  EXPECT_THAT(Err(), HasSubstr("--max-checkpoint-s"));
}

}  // namespace
