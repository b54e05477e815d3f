// Progress probes on real files and processes: a log followed across appends,
// rotation and truncation; a heartbeat's mtime; a process tree's storage I/O,
// from a fake /proc (a temporary tree, or in memory through core's Env) and a real one.
#include "watch/probes.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "core/env.h"
#include "support/support.h"

namespace ww::watch {
namespace {

namespace fs = std::filesystem;

class ProbeTest : public ww::testing::TestDirFixture {
 protected:
  void Append(const fs::path& p, const std::string& s) {
    std::ofstream f(p, std::ios::app);
    f << s;
  }
};

TEST_F(ProbeTest, LogFollowsAppendsFromTheEndAndMatchesTheRegex) {
  const auto log = dir_ / "train.log";
  Append(log, "step 1 loss 3.0\n");  // history: not progress
  auto probe = MakeLogProbe(log.string(), "^step \\d+");
  ASSERT_TRUE(probe.ok());
  auto r = (*probe)->Poll(1);
  EXPECT_TRUE(r.available);
  EXPECT_FALSE(r.moved);
  Append(log, "warning: something\n");
  EXPECT_FALSE((*probe)->Poll(1).moved) << "a line that does not match is not progress";
  Append(log, "step 2 ");
  EXPECT_FALSE((*probe)->Poll(1).moved) << "half a line is not a line yet";
  Append(log, "loss 2.9\n");
  r = (*probe)->Poll(1);
  EXPECT_TRUE(r.moved);
  EXPECT_NE(r.detail.find("step 2 loss 2.9"), std::string::npos) << r.detail;
  EXPECT_FALSE((*probe)->Poll(1).moved);
}

TEST_F(ProbeTest, LogFollowsRotationAndTruncation) {
  const auto log = dir_ / "train.log";
  Append(log, "old\n");
  auto probe = MakeLogProbe(log.string(), "step");
  ASSERT_TRUE(probe.ok());
  (*probe)->Poll(1);
  // logrotate's rename + create: the rest of the old file, then the new file
  // from its start.
  Append(log, "step 10\n");
  fs::rename(log, dir_ / "train.log.1");
  Append(log, "step 11\n");
  auto r = (*probe)->Poll(1);
  EXPECT_TRUE(r.moved);
  EXPECT_NE(r.detail.find("step 11"), std::string::npos) << r.detail;
  // copytruncate: the file shrinks under the reader, which starts over.
  { std::ofstream f(log, std::ios::trunc); }
  EXPECT_FALSE((*probe)->Poll(1).moved);
  Append(log, "step 12\n");
  r = (*probe)->Poll(1);
  EXPECT_TRUE(r.moved);
  EXPECT_NE(r.detail.find("step 12"), std::string::npos) << r.detail;
}

TEST_F(ProbeTest, LogThatAppearsLaterIsReadFromItsStart) {
  const auto log = dir_ / "later.log";
  auto probe = MakeLogProbe(log.string(), ".");
  ASSERT_TRUE(probe.ok());
  auto r = (*probe)->Poll(1);
  EXPECT_FALSE(r.available);
  EXPECT_NE(r.detail.find("not there"), std::string::npos);
  Append(log, "first line\n");
  r = (*probe)->Poll(1);
  EXPECT_TRUE(r.available);
  EXPECT_TRUE(r.moved);
}

TEST_F(ProbeTest, LogGiantLineIsCutNotBuffered) {
  const auto log = dir_ / "big.log";
  { std::ofstream f(log); }
  auto probe = MakeLogProbe(log.string(), "END");
  ASSERT_TRUE(probe.ok());
  (*probe)->Poll(1);
  Append(log, std::string(1 << 20, 'x') + "END\n");  // the match is past the 64 KiB cut
  EXPECT_FALSE((*probe)->Poll(1).moved);
  Append(log, "END\n");
  EXPECT_TRUE((*probe)->Poll(1).moved);
}

TEST_F(ProbeTest, BadRegexIsAClearError) {
  auto probe = MakeLogProbe((dir_ / "x").string(), "step (\\d+");
  ASSERT_FALSE(probe.ok());
  EXPECT_NE(probe.status().message().find("--progress-regex"), std::string::npos);
  EXPECT_NE(probe.status().message().find("offset"), std::string::npos);
}

TEST_F(ProbeTest, HeartbeatMovesWhenTouched) {
  const auto hb = dir_ / "hb";
  auto probe = MakeHeartbeatProbe(hb.string());
  EXPECT_FALSE(probe->Poll(1).available);
  Append(hb, "");
  auto r = probe->Poll(1);
  EXPECT_TRUE(r.available);
  EXPECT_FALSE(r.moved) << "the first reading is the baseline";
  const auto t = fs::last_write_time(hb);
  fs::last_write_time(hb, t + std::chrono::seconds(1));
  EXPECT_TRUE(probe->Poll(1).moved);
  EXPECT_FALSE(probe->Poll(1).moved);
}

TEST(ProcParsers, StatWithParenthesesInTheName) {
  pid_t ppid = 0;
  uint64_t ticks = 0;
  ASSERT_TRUE(
      ParseProcStat("77 (a) b) (c)) S 5 77 77 0 -1 0 0 0 0 0 120 30 0 0 20", &ppid, &ticks));
  EXPECT_EQ(ppid, 5);
  EXPECT_EQ(ticks, 150u);
  EXPECT_FALSE(ParseProcStat("77 (x) S 5 77", &ppid, &ticks));
  EXPECT_FALSE(ParseProcStat("no parens", &ppid, &ticks));
  EXPECT_FALSE(
      ParseProcStat("1 (x) S 1 2 3 4 5 6 7 8 9 10 18446744073709551615 1 0", &ppid, &ticks))
      << "utime + stime overflowing";
}

TEST(ProcParsers, Io) {
  auto io = ParseProcIo("rchar: 1\nwchar: 2\nread_bytes: 4096\nwrite_bytes: 8192\n");
  ASSERT_TRUE(io);
  EXPECT_EQ(io->read_bytes, 4096u);
  EXPECT_EQ(io->write_bytes, 8192u);
  EXPECT_FALSE(ParseProcIo("rchar: 1\n"));
  EXPECT_FALSE(ParseProcIo("read_bytes: x\nwrite_bytes: 1\n"));
}

// A /proc of three processes: 100 -> 101 -> 102, plus an unrelated 200.
void WriteProc(const fs::path& root, int pid, int ppid, int utime, uint64_t wbytes,
               bool io = true) {
  fs::create_directories(root / std::to_string(pid));
  std::ofstream(root / std::to_string(pid) / "stat")
      << pid << " (py thon) S " << ppid << " 1 1 0 -1 0 0 0 0 0 " << utime << " 0 0 0 20 0\n";
  if (io) {
    std::ofstream(root / std::to_string(pid) / "io")
        << "rchar: 5\nwchar: 5\nread_bytes: 0\nwrite_bytes: " << wbytes << "\n";
  }
}

TEST_F(ProbeTest, ProcessTreeSumsDescendantsOnly) {
  const auto proc = dir_ / "proc";
  WriteProc(proc, 100, 1, 100, 0);
  WriteProc(proc, 101, 100, 50, 4096);
  WriteProc(proc, 102, 101, 25, 4096);
  WriteProc(proc, 200, 1, 1000, 1 << 30);
  const auto t = ReadProcessTree(proc.string(), 100);
  EXPECT_EQ(t.processes, 3);
  EXPECT_NEAR(t.cpu_s, 175.0 / static_cast<double>(sysconf(_SC_CLK_TCK)), 1e-9);
  ASSERT_TRUE(t.write_bytes);
  EXPECT_EQ(*t.write_bytes, 8192u);
  EXPECT_EQ(ReadProcessTree(proc.string(), 999).processes, 0);
}

TEST_F(ProbeTest, ProcessProbeSeesWritesAsACheckpoint) {
  const auto proc = dir_ / "proc";
  WriteProc(proc, 100, 1, 100, 0);
  auto probe = MakeProcessProbe(100, {proc.string()});
  auto r = probe->Poll(0);
  EXPECT_TRUE(r.available);
  EXPECT_FALSE(r.moved);
  WriteProc(proc, 100, 1, 400,
            0);  // CPU only: a spin-wait, not progress by default
  r = probe->Poll(1);
  EXPECT_FALSE(r.moved) << r.detail;
  WriteProc(proc, 100, 1, 400, 1 << 20);
  r = probe->Poll(1);
  EXPECT_TRUE(r.moved);
  EXPECT_TRUE(r.writes);
  EXPECT_NE(r.detail.find("wrote 1048576 B"), std::string::npos) << r.detail;
  fs::remove_all(proc / "100");
  r = probe->Poll(1);
  EXPECT_FALSE(r.available);
  EXPECT_NE(r.detail.find("gone"), std::string::npos);
}

TEST_F(ProbeTest, ProcessProbeCpuCountsOnlyWhenAskedTo) {
  const auto proc = dir_ / "proc";
  const double hz = static_cast<double>(sysconf(_SC_CLK_TCK));
  WriteProc(proc, 100, 1, 0, 0);
  ProcessProbeOptions o{proc.string(), 0.5};
  auto probe = MakeProcessProbe(100, o);
  probe->Poll(0);
  WriteProc(proc, 100, 1, static_cast<int>(hz),
            0);  // one CPU-second in one second
  EXPECT_TRUE(probe->Poll(1).moved);
}

TEST_F(ProbeTest, ProcessWithoutIoCountersGivesNoSignal) {
  const auto proc = dir_ / "proc";
  WriteProc(proc, 100, 1, 0, 0, /*io=*/false);
  auto probe = MakeProcessProbe(100, {proc.string()});
  auto r = probe->Poll(0);
  EXPECT_FALSE(r.available) << "must not speed up hang confirmation without a signal";
}

// The same tree in memory: the probe reads /proc only through the Env it is given.
void AddProc(MemEnv* env, int pid, int ppid, int utime, uint64_t wbytes) {
  const std::string dir = "/fakeproc/" + std::to_string(pid);
  env->AddFile(dir + "/stat", std::to_string(pid) + " (py thon) S " + std::to_string(ppid) +
                                  " 1 1 0 -1 0 0 0 0 0 " + std::to_string(utime) + " 0 0 0 20 0\n");
  env->AddFile(dir + "/io",
               "rchar: 5\nwchar: 5\nread_bytes: 0\nwrite_bytes: " + std::to_string(wbytes) + "\n");
}

TEST(ProcessProbeEnv, ReadsProcThroughTheEnv) {
  MemEnv env;
  AddProc(&env, 100, 1, 100, 0);
  AddProc(&env, 101, 100, 50, 4096);
  AddProc(&env, 200, 1, 1000, 1 << 30);
  const auto t = ReadProcessTree(&env, "/fakeproc", 100);
  EXPECT_EQ(t.processes, 2);
  ASSERT_TRUE(t.write_bytes);
  EXPECT_EQ(*t.write_bytes, 4096u);

  ProcessProbeOptions o;
  o.proc_root = "/fakeproc";
  o.env = &env;
  auto probe = MakeProcessProbe(100, o);
  EXPECT_TRUE(probe->Poll(0).available);
  AddProc(&env, 101, 100, 50, 4096 + (1 << 20));  // a child writes a checkpoint
  auto r = probe->Poll(1);
  EXPECT_TRUE(r.moved);
  EXPECT_TRUE(r.writes);
  EXPECT_NE(r.detail.find("wrote 1048576 B"), std::string::npos) << r.detail;
  env.RemoveFile("/fakeproc/100/stat");
  env.RemoveFile("/fakeproc/100/io");
  r = probe->Poll(1);
  EXPECT_FALSE(r.available);
  EXPECT_NE(r.detail.find("gone"), std::string::npos);
}

TEST_F(ProbeTest, RealProcessWritingToDiskMoves) {
  // A real child that writes and fsyncs a file in the build tree (a disk, not
  // tmpfs).
  const auto out = dir_ / "ckpt.bin";
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    FILE* f = fopen(out.c_str(), "w");
    std::string block(1 << 20, 'w');
    for (int i = 0; i < 8 && f; ++i) fwrite(block.data(), 1, block.size(), f);
    if (f) {
      fflush(f);
      fsync(fileno(f));
      fclose(f);
    }
    pause();
    _exit(0);
  }
  auto probe = MakeProcessProbe(pid);
  auto r = probe->Poll(0);
  bool moved = false;
  for (int i = 0; i < 50 && !moved; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    r = probe->Poll(0.1);
    moved = r.moved;
  }
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
  if (!r.available) GTEST_SKIP() << "/proc/PID/io not readable here: " << r.detail;
  EXPECT_TRUE(moved) << r.detail;
  EXPECT_TRUE(r.writes) << r.detail;
}

// A loopback TCP socket bound to a free port; listening (backlog 16) when `listen_too`. Its port
// goes to *port; the caller closes the fd.
int BoundLoopbackSocket(bool listen_too, int* port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  if (listen_too) listen(fd, 16);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  *port = ntohs(a.sin_port);
  return fd;
}

ProbeReading PollUntilAnswered(ProgressProbe* p) {
  ProbeReading r;
  for (int i = 0; i < 300; ++i) {
    r = p->Poll(0.05);
    if (r.detail.find("no answer yet") == std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return r;
}

TEST(PeerProbe, ARefusedPeerIsUnavailableAndTheDetailSaysWhy) {
  int port = 0;
  close(BoundLoopbackSocket(false, &port));  // bound and released: nothing listens
  auto p = MakePeerProbe("127.0.0.1:" + std::to_string(port));
  EXPECT_TRUE(p->sees_other_hosts());
  const ProbeReading r = PollUntilAnswered(p.get());
  EXPECT_FALSE(r.available);
  EXPECT_FALSE(r.moved);
  EXPECT_EQ(r.detail, "peer 127.0.0.1:" + std::to_string(port) +
                          ": cannot connect (refused, unreachable, or nothing listens there) "
                          "[Connection]");
}

TEST(PeerProbe, APeerThatNeverAnswersDoesNotHoldItsDestruction) {
  int port = 0;
  const int silent = BoundLoopbackSocket(true, &port);  // accepts into the backlog, never answers
  PeerProbeOptions o;
  o.read_timeout_ms = 20000;
  auto p = MakePeerProbe("127.0.0.1:" + std::to_string(port), o);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the request is in flight
  EXPECT_FALSE(p->Poll(0.3).available);
  const auto t0 = std::chrono::steady_clock::now();
  p.reset();
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(s, 2.0) << "the request in flight is cut, not waited out (20 s read timeout)";
  close(silent);
}

}  // namespace
}  // namespace ww::watch
