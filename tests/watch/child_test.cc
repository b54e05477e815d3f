// ChildProcess directly: what `run` launches. Real processes: spawn, exit codes passed on, the
// process group of its own, signals to the leader or the group, and the orphan reaper.
#include "watch/child.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "support/support.h"
#include "watch/process_util.h"

namespace ww::watch {
namespace {

using ::testing::HasSubstr;

int WaitExit(ChildProcess& c, double timeout_s = 20) {
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
  while (std::chrono::steady_clock::now() < deadline) {
    if (auto rc = c.Poll()) return *rc;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  c.SignalGroup(SIGKILL);
  return -1;
}

TEST(Child, ExitCodesArePassedOn) {
  auto c = ChildProcess::Spawn({"sh", "-c", "exit 7"});
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(WaitExit(**c), 7);
  EXPECT_TRUE((*c)->exited());
  EXPECT_EQ((*c)->Poll(), 7) << "the code stays once reaped";
  auto killed = ChildProcess::Spawn({"sh", "-c", "kill -KILL $$"});
  ASSERT_TRUE(killed.ok());
  EXPECT_EQ(WaitExit(**killed), 128 + SIGKILL);
}

TEST(Child, AMissingCommandIsNamed) {
  auto c = ChildProcess::Spawn({"/nonexistent/train.sh", "--x"});
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("cannot start '/nonexistent/train.sh'"));
  EXPECT_FALSE(ChildProcess::Spawn({}).ok());
}

TEST(Child, RunsInAProcessGroupOfItsOwn) {
  auto c = ChildProcess::Spawn({"sleep", "30"});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(getpgid((*c)->pid()), (*c)->pid());
  EXPECT_NE(getpgid((*c)->pid()), getpgrp());
  (*c)->SignalGroup(SIGKILL);
  EXPECT_EQ(WaitExit(**c), 128 + SIGKILL);

  SpawnOptions same_group;
  same_group.own_process_group = false;
  auto d = ChildProcess::Spawn({"sleep", "30"}, same_group);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(getpgid((*d)->pid()), getpgrp());
  (*d)->Signal(SIGKILL);
  EXPECT_EQ(WaitExit(**d), 128 + SIGKILL);
}

TEST(Child, SignalGroupReachesWhatTheJobStarted) {
  ww::testing::TempDir dir;
  const std::string pid_file = dir / "sleep.pid";
  auto c = ChildProcess::Spawn({"sh", "-c", "sleep 60 & echo $! > " + pid_file + "; wait"});
  ASSERT_TRUE(c.ok());
  const pid_t sleep_pid = ww::testing::WaitForPidFile(pid_file);
  ASSERT_GT(sleep_pid, 0);
  EXPECT_EQ(getpgid(sleep_pid), (*c)->pid()) << "the job's children share its group";
  (*c)->SignalGroup(SIGTERM);
  EXPECT_EQ(WaitExit(**c), 128 + SIGTERM);
  for (int i = 0; i < 200 && ww::testing::ProcessRunning(sleep_pid); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_FALSE(ww::testing::ProcessRunning(sleep_pid));
  EXPECT_FALSE((*c)->GroupRunning());
}

TEST(Child, SignalToTheLeaderAloneLeavesItsChildren) {
  // What Signal() is for, and why `run` forwards with SignalGroup: the leader's death does not
  // reach its children.
  ww::testing::TempDir dir;
  const std::string pid_file = dir / "sleep.pid";
  auto c = ChildProcess::Spawn({"sh", "-c", "sleep 60 & echo $! > " + pid_file + "; wait"});
  ASSERT_TRUE(c.ok());
  const pid_t sleep_pid = ww::testing::WaitForPidFile(pid_file);
  ASSERT_GT(sleep_pid, 0);
  (*c)->Signal(SIGTERM);
  EXPECT_EQ(WaitExit(**c), 128 + SIGTERM);
  EXPECT_TRUE(ww::testing::ProcessRunning(sleep_pid));
  EXPECT_TRUE((*c)->GroupRunning()) << "the group outlives its leader";
  (*c)->SignalGroup(SIGKILL);
  for (int i = 0; i < 200 && (*c)->GroupRunning(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_FALSE((*c)->GroupRunning());
}

TEST(Child, EnvironmentAndOutputFile) {
  ww::testing::TempDir dir;
  SpawnOptions o;
  o.extra_env = {"WATTWATCH_TEST_VALUE=42"};
  o.output_path = dir / "out.txt";
  o.stdin_null = true;
  auto c = ChildProcess::Spawn({"sh", "-c", "echo v=$WATTWATCH_TEST_VALUE; cat; echo err >&2"}, o);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(WaitExit(**c), 0);
  EXPECT_EQ(ww::testing::ReadFile(o.output_path), "v=42\nerr\n");
}

TEST(Child, OrphanReaperOnlyActsAsPidOne) {
  // Not PID 1 here: the reaper must leave every child alone (an owned child's status is its
  // owner's). The PID 1 case runs in a PID namespace in watch_cli_test.
  auto c = ChildProcess::Spawn({"sh", "-c", "exit 3"});
  ASSERT_TRUE(c.ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(ReapOrphans(), 0);
  EXPECT_EQ(WaitExit(**c), 3);
}

TEST(Child, SignalNames) {
  EXPECT_EQ(ParseSignalName("TERM"), SIGTERM);
  EXPECT_EQ(ParseSignalName("sigusr1"), SIGUSR1);
  EXPECT_EQ(ParseSignalName("SIGKILL"), SIGKILL);
  EXPECT_EQ(ParseSignalName("10"), 10);
  EXPECT_EQ(ParseSignalName("0"), std::nullopt);
  EXPECT_EQ(ParseSignalName("999"), std::nullopt);
  EXPECT_EQ(ParseSignalName("BOGUS"), std::nullopt);
  EXPECT_EQ(ParseSignalName(""), std::nullopt);
}

}  // namespace
}  // namespace ww::watch
