// The run-mode kill on a ManualClock: the grace period is watch time, so a 30 s grace takes no
// real time, and "SIGKILL exactly kill_grace_s after SIGTERM" is checked to the nanosecond.
#include "watch/kill_sequence.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <thread>
#include <vector>

#include "support/support.h"
#include "watch/child.h"
#include "watch/process_util.h"

namespace ww::watch {
namespace {

constexpr int64_t kSecondNs = 1'000'000'000;

struct Sent {
  int sig;
  int64_t at_ns;
};

// A job whose reaction to signals the test scripts: it exits `exits_after_term_s` of clock time
// after SIGTERM (never, when unset), and at once on SIGKILL.
class ScriptedJob final : public KillTarget {
 public:
  ScriptedJob(ManualClock* clock, std::optional<double> exits_after_term_s)
      : clock_(clock), exits_after_term_s_(exits_after_term_s) {}
  pid_t pid() const override { return 4242; }
  bool exited() const override {
    if (killed_) return true;
    if (!term_at_ns_ || !exits_after_term_s_) return false;
    return clock_->NowMonotonicNs() >=
           *term_at_ns_ + static_cast<int64_t>(*exits_after_term_s_ * kSecondNs);
  }
  void SignalGroup(int sig) const override {
    sent_.push_back({sig, clock_->NowMonotonicNs()});
    if (sig == SIGTERM && !term_at_ns_) term_at_ns_ = clock_->NowMonotonicNs();
    if (sig == SIGKILL) killed_ = true;
  }
  const std::vector<Sent>& sent() const { return sent_; }

 private:
  ManualClock* clock_;
  std::optional<double> exits_after_term_s_;
  mutable std::vector<Sent> sent_;
  mutable std::optional<int64_t> term_at_ns_;
  mutable bool killed_ = false;
};

struct SequenceRun {
  KillOutcome outcome;
  std::vector<nlohmann::json> events;
};

SequenceRun RunSequence(KillTarget* job, ManualClock* clock, const KillOptions& options) {
  SequenceRun r;
  std::atomic<bool> stop{false};
  KillSequence k(job, clock, options, [&r](nlohmann::json e) { r.events.push_back(std::move(e)); });
  r.outcome = k.Run(&stop);
  return r;
}

TEST(KillSequence, JobIgnoringSigtermGetsSigkillExactlyAfterTheGrace) {
  ManualClock clock;
  clock.AdvanceNs(1000 * kSecondNs);
  ScriptedJob job(&clock, std::nullopt);
  KillOptions o;
  o.kill_grace_s = 30;
  const auto real_start = std::chrono::steady_clock::now();
  const SequenceRun r = RunSequence(&job, &clock, o);
  EXPECT_EQ(r.outcome, KillOutcome::kSigkilled);
  ASSERT_EQ(job.sent().size(), 2u);
  EXPECT_EQ(job.sent()[0].sig, SIGTERM);
  EXPECT_EQ(job.sent()[0].at_ns, 1000 * kSecondNs) << "SIGTERM at once: no diagnostics asked";
  EXPECT_EQ(job.sent()[1].sig, SIGKILL);
  EXPECT_EQ(job.sent()[1].at_ns - job.sent()[0].at_ns, 30 * kSecondNs);
  EXPECT_LT(std::chrono::steady_clock::now() - real_start, std::chrono::seconds(5))
      << "the grace is watch time, not real time";
  ASSERT_EQ(r.events.size(), 2u);
  EXPECT_EQ(r.events[0]["signal"], "SIGTERM");
  EXPECT_EQ(r.events[1]["signal"], "SIGKILL");
  EXPECT_EQ(r.events[1]["pgid"], 4242);
}

TEST(KillSequence, JobExitingWithinTheGraceGetsNoSigkill) {
  for (const double exit_s : {0.0, 5.0, 29.99}) {
    SCOPED_TRACE(exit_s);
    ManualClock clock;
    ScriptedJob job(&clock, exit_s);
    KillOptions o;
    o.kill_grace_s = 30;
    const SequenceRun r = RunSequence(&job, &clock, o);
    EXPECT_EQ(r.outcome, KillOutcome::kExitedAfterTerm);
    ASSERT_EQ(job.sent().size(), 1u);
    EXPECT_EQ(job.sent()[0].sig, SIGTERM);
    // Noticed within one poll interval of the exit.
    EXPECT_GE(clock.NowMonotonicNs(), static_cast<int64_t>(exit_s * kSecondNs));
    EXPECT_LE(clock.NowMonotonicNs(),
              static_cast<int64_t>(exit_s * kSecondNs) + o.poll_interval_ms * 1'000'000);
    EXPECT_EQ(r.events.size(), 1u);
  }
}

TEST(KillSequence, DiagnosticSignalFirstThenTheGraceCountsFromSigterm) {
  ManualClock clock;
  ScriptedJob job(&clock, std::nullopt);
  KillOptions o;
  o.kill_grace_s = 10;
  o.diag_signal = SIGUSR1;
  o.diag_signal_wait_s = 2;
  const SequenceRun r = RunSequence(&job, &clock, o);
  EXPECT_EQ(r.outcome, KillOutcome::kSigkilled);
  ASSERT_EQ(job.sent().size(), 3u);
  EXPECT_EQ(job.sent()[0].sig, SIGUSR1);
  EXPECT_EQ(job.sent()[0].at_ns, 0);
  EXPECT_EQ(job.sent()[1].sig, SIGTERM);
  EXPECT_EQ(job.sent()[1].at_ns, 2 * kSecondNs) << "the job had diag_signal_wait_s for its stacks";
  EXPECT_EQ(job.sent()[2].at_ns, 12 * kSecondNs);
  EXPECT_EQ(r.events[0]["event"], "diagnostics");
  EXPECT_EQ(r.events[0]["signal"], SIGUSR1);
}

TEST(KillSequence, JobGoneDuringDiagnosticsIsNotSignalledAgain) {
  ManualClock clock;
  ScriptedJob job(&clock, std::nullopt);
  // A job that dies of the diagnostic signal itself (it had no handler for it).
  class DiesOnUsr1 final : public KillTarget {
   public:
    explicit DiesOnUsr1(ScriptedJob* inner) : inner_(inner) {}
    pid_t pid() const override { return inner_->pid(); }
    bool exited() const override { return got_usr1_; }
    void SignalGroup(int sig) const override {
      inner_->SignalGroup(sig);
      got_usr1_ |= sig == SIGUSR1;
    }
    ScriptedJob* inner_;
    mutable bool got_usr1_ = false;
  } job_dies(&job);
  KillOptions o;
  o.diag_signal = SIGUSR1;
  const SequenceRun r = RunSequence(&job_dies, &clock, o);
  EXPECT_EQ(r.outcome, KillOutcome::kExitedBeforeTerm);
  ASSERT_EQ(job.sent().size(), 1u);
  EXPECT_EQ(job.sent()[0].sig, SIGUSR1);
}

// The same sequence on a real process group that ignores SIGTERM (the shell and, since an ignored
// signal stays ignored across exec, its sleeps): SIGKILL after the grace in manual time ends them.
TEST(KillSequence, RealJobIgnoringSigtermIsKilledAsAGroup) {
  ww::testing::TempDir dir;
  const std::string ready = dir / "trapped";
  auto child = ChildProcess::Spawn(
      {"sh", "-c", "trap '' TERM; : > " + ready + "; while :; do sleep 0.05; done"});
  ASSERT_TRUE(child.ok()) << child.status().message();
  ChildProcess& job = **child;
  // SIGTERM only once the shell has set its trap.
  for (int i = 0; i < 1000 && !std::filesystem::exists(ready); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(std::filesystem::exists(ready));
  class Recording final : public KillTarget {
   public:
    Recording(ChildProcess* c, ManualClock* clock) : c_(c), clock_(clock) {}
    pid_t pid() const override { return c_->pid(); }
    bool exited() const override { return c_->exited(); }
    void SignalGroup(int sig) const override {
      sent.push_back({sig, clock_->NowMonotonicNs()});
      c_->SignalGroup(sig);
    }
    ChildProcess* c_;
    ManualClock* clock_;
    mutable std::vector<Sent> sent;
  };
  ManualClock clock;
  Recording target(&job, &clock);
  KillOptions o;
  o.kill_grace_s = 45;
  const SequenceRun r = RunSequence(&target, &clock, o);
  EXPECT_EQ(r.outcome, KillOutcome::kSigkilled);
  ASSERT_EQ(target.sent.size(), 2u);
  EXPECT_EQ(target.sent[0].sig, SIGTERM);
  EXPECT_EQ(target.sent[1].sig, SIGKILL);
  EXPECT_EQ(target.sent[1].at_ns - target.sent[0].at_ns, 45 * kSecondNs);
  std::optional<int> rc;
  for (int i = 0; i < 500 && !rc; ++i) {
    rc = job.Poll();
    if (!rc) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(rc.has_value());
  EXPECT_EQ(*rc, 128 + SIGKILL) << "SIGTERM was ignored; SIGKILL ended it";
  for (int i = 0; i < 200 && ww::testing::LiveProcessesInGroup(job.pid()) > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(ww::testing::LiveProcessesInGroup(job.pid()), 0);
}

}  // namespace
}  // namespace ww::watch
