// The hang policy as a table: GPU candidate x probe evidence -> verdict.
#include "watch/hang_policy.h"

#include <gtest/gtest.h>

namespace ww::watch {
namespace {

constexpr int64_t kStart = 1'000'000;

ProbeState Probe(const char* kind, bool available, int64_t moved_ms, bool process = false,
                 bool write = false) {
  ProbeState p;
  p.kind = kind;
  p.available = available;
  p.last_moved_ms = moved_ms;
  p.watches_process = process;
  p.last_move_was_write = write;
  p.last_detail = "detail";
  p.last_move_detail = "what moved";
  return p;
}

// A --peer probe: sees other hosts; `out_since_ms` is when it stopped answering (INT64_MIN: it
// answers).
ProbeState Peer(bool available, int64_t moved_ms, int64_t out_since_ms = INT64_MIN) {
  ProbeState p = Probe("peer", available, moved_ms);
  p.sees_other_hosts = true;
  p.unavailable_since_ms = available ? INT64_MIN : out_since_ms;
  p.last_detail = available ? "peer 10.0.0.1:9400 (node0): 4 communication"
                            : "peer 10.0.0.1:9400: cannot connect [Connection]";
  return p;
}

struct Row {
  const char* name;
  bool candidate;
  double now_s;  // since the candidate began
  std::vector<ProbeState> probes;
  HangVerdict want;
  double want_needed_s;
};

TEST(HangPolicy, Table) {
  // The logic, with 60 s / 30 s windows (the defaults are checked in DefaultWindows).
  HangPolicyOptions opts;
  opts.confirm_s = 60;
  opts.confirm_proc_s = 30;
  const std::vector<Row> rows = {
      {"no candidate", false, 100, {}, HangVerdict::kNoCandidate, 0},
      {"GPU only, 59 s", true, 59, {}, HangVerdict::kWaiting, 60},
      {"GPU only, 60 s", true, 60, {}, HangVerdict::kConfirm, 60},
      {"log silent since before, 60 s",
       true,
       60,
       {Probe("progress-log", true, kStart - 5000)},
       HangVerdict::kConfirm,
       60},
      {"log line after the wait began",
       true,
       200,
       {Probe("progress-log", true, kStart + 1000)},
       HangVerdict::kDismiss,
       0},
      {"log line exactly at the start counts",
       true,
       200,
       {Probe("progress-log", true, kStart)},
       HangVerdict::kDismiss,
       0},
      {"process watched, nothing moves, 30 s",
       true,
       30,
       {Probe("process", true, INT64_MIN, true)},
       HangVerdict::kConfirm,
       30},
      {"process watched, 29 s",
       true,
       29,
       {Probe("process", true, INT64_MIN, true)},
       HangVerdict::kWaiting,
       30},
      {"process writes: a checkpoint",
       true,
       120,
       {Probe("process", true, kStart + 100000, true, true)},
       HangVerdict::kDismiss,
       0},
      {"process probe without a signal does not speed up",
       true,
       45,
       {Probe("process", false, INT64_MIN, true)},
       HangVerdict::kWaiting,
       60},
      {"heartbeat moved, process quiet",
       true,
       45,
       {Probe("heartbeat", true, kStart + 40000), Probe("process", true, INT64_MIN, true)},
       HangVerdict::kDismiss,
       0},
      // Issue 19: an unreachable peer is unknown, never "no progress".
      {"peer answers, shows no work, process quiet 30 s",
       true,
       30,
       {Peer(true, INT64_MIN), Probe("process", true, INT64_MIN, true)},
       HangVerdict::kConfirm,
       30},
      {"peer unreachable, process quiet 30 s: a remote checkpoint is not ruled out",
       true,
       30,
       {Peer(false, INT64_MIN, kStart - 60000), Probe("process", true, INT64_MIN, true)},
       HangVerdict::kWaiting,
       300},
      {"peer unreachable, 60 s (--confirm-s) is not enough either",
       true,
       60,
       {Peer(false, INT64_MIN, kStart - 60000), Probe("process", true, INT64_MIN, true)},
       HangVerdict::kWaiting,
       300},
      {"peer unreachable 299 s into the wait",
       true,
       299,
       {Peer(false, INT64_MIN, kStart - 60000), Probe("process", true, INT64_MIN, true)},
       HangVerdict::kWaiting,
       300},
      {"peer unreachable all along, 300 s, nothing else moved: confirmed without it",
       true,
       300,
       {Peer(false, INT64_MIN, kStart - 60000), Probe("process", true, INT64_MIN, true)},
       HangVerdict::kConfirm,
       300},
      {"peer answered quiet, then went out 200 s into the wait: 300 s of outage first",
       true,
       400,
       {Peer(false, INT64_MIN, kStart + 200000), Probe("process", true, INT64_MIN, true)},
       HangVerdict::kWaiting,
       300},
      {"... and confirmed once it has been out 300 s",
       true,
       500,
       {Peer(false, INT64_MIN, kStart + 200000), Probe("process", true, INT64_MIN, true)},
       HangVerdict::kConfirm,
       300},
      {"peer unreachable, but the process writes: dismissed at once",
       true,
       20,
       {Peer(false, INT64_MIN, kStart), Probe("process", true, kStart + 10000, true, true)},
       HangVerdict::kDismiss,
       0},
      {"peer unreachable, GPU-only watch waits too",
       true,
       60,
       {Peer(false, INT64_MIN, kStart)},
       HangVerdict::kWaiting,
       300},
      {"one of two peers unreachable still waits",
       true,
       30,
       {Peer(true, INT64_MIN), Peer(false, INT64_MIN, kStart),
        Probe("process", true, INT64_MIN, true)},
       HangVerdict::kWaiting,
       300},
      {"an unreadable heartbeat is not a peer: no wait for it",
       true,
       30,
       {Probe("heartbeat", false, INT64_MIN), Probe("process", true, INT64_MIN, true)},
       HangVerdict::kConfirm,
       30},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.name);
    const int64_t now = kStart + static_cast<int64_t>(r.now_s * 1000);
    const auto d = DecideHang(now, r.candidate ? std::optional<int64_t>(kStart) : std::nullopt,
                              r.probes, opts);
    EXPECT_EQ(HangVerdictName(d.verdict), std::string(HangVerdictName(r.want)));
    if (r.want == HangVerdict::kWaiting || r.want == HangVerdict::kConfirm) {
      EXPECT_DOUBLE_EQ(d.needed_s, r.want_needed_s);
    }
    if (r.want == HangVerdict::kConfirm || r.want == HangVerdict::kDismiss) {
      EXPECT_FALSE(d.reasons.empty());
    }
  }
}

TEST(HangPolicy, ReasonsNameTheEvidence) {
  const auto d = DecideHang(kStart + 31000, kStart, {Probe("process", true, INT64_MIN, true)}, {});
  ASSERT_EQ(d.verdict, HangVerdict::kConfirm);
  std::string all;
  for (const auto& r : d.reasons) all += r + "\n";
  EXPECT_NE(all.find("process: no progress since the watch began; detail"), std::string::npos)
      << all;
  EXPECT_NE(all.find("--confirm-proc-s"), std::string::npos) << all;

  const auto w =
      DecideHang(kStart + 5000, kStart, {Probe("process", true, kStart + 2000, true, true)}, {});
  ASSERT_EQ(w.verdict, HangVerdict::kDismiss);
  EXPECT_NE(w.reasons.front().find("a checkpoint"), std::string::npos) << w.reasons.front();
}

TEST(HangPolicy, ACandidateTheGpusCannotCallWaitsForAProcessProbe) {
  // One GPU pegged at low power, or every rank quiet holding memory: telemetry alone says
  // nothing. Without a process probe it waits however long; with one that sees nothing move, it
  // is confirmed after confirm_proc_s; progress dismisses it as before.
  const std::vector<ProbeState> no_process = {Probe("heartbeat", true, INT64_MIN)};
  const auto w =
      DecideHang(kStart + 3'600'000, kStart, no_process, {}, /*needs_process_probe=*/true);
  EXPECT_EQ(w.verdict, HangVerdict::kWaiting);
  ASSERT_FALSE(w.reasons.empty());
  EXPECT_NE(w.reasons.front().find("waiting for a process probe"), std::string::npos);

  const std::vector<ProbeState> quiet = {Probe("process", true, INT64_MIN, true)};
  EXPECT_EQ(DecideHang(kStart + 14'000, kStart, quiet, {}, true).verdict, HangVerdict::kWaiting);
  const auto c = DecideHang(kStart + 15'000, kStart, quiet, {}, true);  // confirm_proc_s
  ASSERT_EQ(c.verdict, HangVerdict::kConfirm);
  EXPECT_NE(c.reasons.front().find("no I/O, no log lines"), std::string::npos) << c.reasons.front();

  const std::vector<ProbeState> writing = {Probe("process", true, kStart + 10'000, true, true)};
  EXPECT_EQ(DecideHang(kStart + 40'000, kStart, writing, {}, true).verdict, HangVerdict::kDismiss);
}

TEST(HangPolicy, ARankAsHotAsItComputesHoldsWhatWouldBeAConfirmation) {
  // The engine's thermal hold (triage/thermal.h): a confirmation waits, with its reason; the
  // usual waits and a dismissal are what they were.
  const std::vector<ProbeState> quiet = {Probe("process", true, INT64_MIN, true)};
  const std::string hold = "node0/GPU1 reads 66 °C 40 s into its wait, as hot as when it computed";
  const auto h = DecideHang(kStart + 40'000, kStart, quiet, {}, false, hold);
  EXPECT_EQ(h.verdict, HangVerdict::kWaiting);
  ASSERT_EQ(h.reasons.size(), 1u);
  EXPECT_EQ(h.reasons.front(), hold);
  EXPECT_EQ(DecideHang(kStart + 40'000, kStart, quiet, {}, false, "").verdict,
            HangVerdict::kConfirm)
      << "without a hold, the same probes confirm";
  const std::vector<ProbeState> writing = {Probe("process", true, kStart + 10'000, true, true)};
  EXPECT_EQ(DecideHang(kStart + 40'000, kStart, writing, {}, false, hold).verdict,
            HangVerdict::kDismiss);
  EXPECT_EQ(DecideHang(kStart + 5'000, kStart, quiet, {}, false, hold).verdict,
            HangVerdict::kWaiting);
}

TEST(HangPolicy, AHangConfirmedWithoutAPeerSaysSo) {
  const auto d = DecideHang(
      kStart + 310000, kStart,
      {Peer(false, INT64_MIN, kStart - 5000), Probe("process", true, INT64_MIN, true)}, {});
  ASSERT_EQ(d.verdict, HangVerdict::kConfirm);
  std::string all;
  for (const auto& r : d.reasons) all += r + "\n";
  EXPECT_NE(all.find("peer: unreachable for 315 s (peer 10.0.0.1:9400: cannot connect "
                     "[Connection]); confirmed without it after 300 s (--peer-unknown-s)"),
            std::string::npos)
      << all;
  EXPECT_EQ(all.find("--confirm-proc-s"), std::string::npos)
      << "the process probe alone did not decide: " << all;

  const auto w =
      DecideHang(kStart + 40000, kStart,
                 {Peer(false, INT64_MIN, kStart), Probe("process", true, INT64_MIN, true)}, {});
  ASSERT_EQ(w.verdict, HangVerdict::kWaiting);
  ASSERT_EQ(w.reasons.size(), 1u) << "a wait made longer says why";
  EXPECT_NE(w.reasons[0].find("cannot be ruled out"), std::string::npos) << w.reasons[0];
}

TEST(HangPolicy, PeerUnknownWindowIsConfigurableAndNeverBelowConfirmS) {
  HangPolicyOptions o;
  o.confirm_s = 60;
  o.peer_unknown_s = 100;
  const std::vector<ProbeState> out = {Peer(false, INT64_MIN, kStart - 1000)};
  EXPECT_EQ(DecideHang(kStart + 99000, kStart, out, o).verdict, HangVerdict::kWaiting);
  EXPECT_EQ(DecideHang(kStart + 100000, kStart, out, o).verdict, HangVerdict::kConfirm);
  o.peer_unknown_s = 10;  // below --confirm-s: --confirm-s holds
  EXPECT_EQ(DecideHang(kStart + 59000, kStart, out, o).verdict, HangVerdict::kWaiting);
  EXPECT_EQ(DecideHang(kStart + 60000, kStart, out, o).verdict, HangVerdict::kConfirm);
}

// Issue 14: 30 s of spin on GPU telemetry alone, 15 s when the job's processes are watched and
// nothing moves (the real traces' minutes-long rank-0 checkpoints stay dismissed: the saving
// rank's writes are progress, and offline triage calls them checkpoints).
TEST(HangPolicy, DefaultWindows) {
  const HangPolicyOptions o;
  EXPECT_EQ(DecideHang(kStart + 29999, kStart, {}, o).verdict, HangVerdict::kWaiting);
  EXPECT_EQ(DecideHang(kStart + 30000, kStart, {}, o).verdict, HangVerdict::kConfirm);
  const std::vector<ProbeState> quiet = {Probe("process", true, INT64_MIN, true)};
  EXPECT_EQ(DecideHang(kStart + 14999, kStart, quiet, o).verdict, HangVerdict::kWaiting);
  EXPECT_EQ(DecideHang(kStart + 15000, kStart, quiet, o).verdict, HangVerdict::kConfirm);
  const std::vector<ProbeState> writes = {Probe("process", true, kStart + 5000, true, true)};
  EXPECT_EQ(DecideHang(kStart + 15000, kStart, writes, o).verdict, HangVerdict::kDismiss);
}

TEST(HangPolicy, ConfigurableWindows) {
  HangPolicyOptions o;
  o.confirm_s = 10;
  o.confirm_proc_s = 5;
  EXPECT_EQ(DecideHang(kStart + 10000, kStart, {}, o).verdict, HangVerdict::kConfirm);
  EXPECT_EQ(DecideHang(kStart + 9999, kStart, {}, o).verdict, HangVerdict::kWaiting);
  EXPECT_EQ(DecideHang(kStart + 5000, kStart, {Probe("process", true, INT64_MIN, true)}, o).verdict,
            HangVerdict::kConfirm);
}

}  // namespace
}  // namespace ww::watch
