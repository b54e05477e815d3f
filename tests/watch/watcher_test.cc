// The watcher loop in-process: simulated jobs through the real engine, policy,
// metrics, events and HTTP endpoint, on a ManualClock (so minutes of job run in
// milliseconds).
#include "watch/watcher.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <thread>

#include "support/support.h"
#include "telemetry/sim/simulator.h"

namespace ww::watch {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::HasSubstr;

// One host's view of a simulated multi-host job: what that host's watcher
// samples.
class OneHostSource final : public TelemetrySource {
 public:
  OneHostSource(std::unique_ptr<TelemetrySource> all, uint16_t host)
      : all_(std::move(all)), host_(host) {}
  Status Next(std::vector<GpuSample>* out) override {
    std::vector<GpuSample> batch;
    Status st = all_->Next(&batch);
    for (GpuSample& s : batch) {
      if (s.key.host != host_) continue;
      s.key.host = 0;
      out->push_back(s);
    }
    if (hosts_.empty() && !all_->hosts().empty()) hosts_ = {all_->hosts()[host_]};
    return st;
  }
  const std::vector<std::string>& hosts() const override { return hosts_; }

 private:
  std::unique_ptr<TelemetrySource> all_;
  uint16_t host_;
  std::vector<std::string> hosts_;
};

// A probe whose readings the test scripts (the seam a real probe plugs into).
class ScriptedProbe final : public ProgressProbe {
 public:
  ScriptedProbe(std::string kind, bool process, std::function<ProbeReading()> f)
      : kind_(std::move(kind)), process_(process), f_(std::move(f)) {}
  std::string kind() const override { return kind_; }
  bool watches_process() const override { return process_; }
  ProbeReading Poll(double) override { return f_(); }

 private:
  std::string kind_;
  bool process_;
  std::function<ProbeReading()> f_;
};

struct Outcome {
  WatchSummary summary;
  std::vector<json> events;
  int64_t truth_hang_start_ms = INT64_MIN;
};

class WatcherTest : public ww::testing::TestDirFixture {
 protected:
  Outcome Watch(const std::string& scenario, int hosts, int watch_host,
                std::vector<std::unique_ptr<ProgressProbe>> probes = {}, int gpus_per_host = 4) {
    sim::ScenarioOptions so;
    so.hosts = hosts;
    so.gpus_per_host = gpus_per_host;
    so.interval_ms = 500;
    auto cfg = sim::MakeScenario(scenario, so);
    EXPECT_TRUE(cfg.ok());
    Outcome out;
    {
      sim::Simulator truth(*cfg);
      std::vector<GpuSample> s;
      std::vector<sim::TruthLabel> t;
      while (truth.NextTick(&s, &t)) {
      }
      if (!truth.truth_hangs().empty()) out.truth_hang_start_ms = truth.truth_hangs()[0].start_ms;
    }
    OneHostSource source(sim::MakeSimSource(*cfg), static_cast<uint16_t>(watch_host));
    ManualClock clock(1'700'000'000'000);
    WatchOptions o;
    o.source_label = "sim:" + scenario;
    o.identity = {"node" + std::to_string(watch_host), "job-1", "test"};
    o.events_path = (dir_ / "events.jsonl").string();
    {
      Watcher w(&source, &clock, o, std::move(probes));
      EXPECT_TRUE(w.Start().ok());
      std::atomic<int> sig{0};
      EXPECT_TRUE(w.Run(&sig).ok());
      out.summary = w.summary();
    }  // the event writer drains on destruction
    std::ifstream in(dir_ / "events.jsonl");
    std::string line;
    while (std::getline(in, line)) out.events.push_back(json::parse(line));
    return out;
  }

  static std::vector<json> Events(const Outcome& o, const std::string& kind) {
    std::vector<json> v;
    for (const auto& e : o.events) {
      if (e["event"] == kind) v.push_back(e);
    }
    return v;
  }
};

TEST_F(WatcherTest, HangOnGpuEvidenceAloneIsConfirmedAfterThirtySeconds) {
  const Outcome o = Watch("hang-spin", 1, 0);
  ASSERT_EQ(o.summary.hangs.size(), 1u);
  const auto& h = o.summary.hangs[0];
  const double confirm_s = static_cast<double>(h.detected_at_ms - h.start_ms) / 1000.0;
  EXPECT_GE(confirm_s, 30);
  EXPECT_LE(confirm_s, 31);
  const double after_truth_s =
      static_cast<double>(h.detected_at_ms - o.truth_hang_start_ms) / 1000.0;
  EXPECT_LT(after_truth_s, 40) << "a hang must be caught within about half a minute";
  const auto confirmed = Events(o, "hang_confirmed");
  ASSERT_EQ(confirmed.size(), 1u);
  EXPECT_EQ(confirmed[0]["host"], "node0");
  EXPECT_EQ(confirmed[0]["job_id"], "job-1");
  EXPECT_EQ(confirmed[0]["gpus"].size(), 4u);
  EXPECT_EQ(confirmed[0]["gpus"][0], "node0/GPU0") << "ww::GpuLabel, as triage names GPUs";
  EXPECT_THAT(confirmed[0]["reasons"].dump(), HasSubstr("no progress probe configured"));
  EXPECT_EQ(Events(o, "hang_ended").size(), 1u);
  EXPECT_EQ(Events(o, "watch_stopped").size(), 1u);
}

TEST_F(WatcherTest, ProcessProbeSeeingNothingConfirmsInFifteenSeconds) {
  std::vector<std::unique_ptr<ProgressProbe>> probes;
  probes.push_back(std::make_unique<ScriptedProbe>("process", true, [] {
    return ProbeReading{true, false, false, "process tree of 1 (1 processes): read 0 B, wrote 0 B"};
  }));
  const Outcome o = Watch("hang-spin", 1, 0, std::move(probes));
  ASSERT_EQ(o.summary.hangs.size(), 1u);
  const auto& h = o.summary.hangs[0];
  const double confirm_s = static_cast<double>(h.detected_at_ms - h.start_ms) / 1000.0;
  EXPECT_GE(confirm_s, 15);
  EXPECT_LE(confirm_s, 16);
  EXPECT_THAT(Events(o, "hang_confirmed")[0]["reasons"].dump(), HasSubstr("--confirm-proc-s"));
}

std::unique_ptr<ProgressProbe> StillProcess() {
  return std::make_unique<ScriptedProbe>("process", true, [] {
    return ProbeReading{true, false, false, "process tree of 1 (1 processes): read 0 B, wrote 0 B"};
  });
}

TEST_F(WatcherTest, OneGpuPeggedAtLowPowerNeedsAProcessProbeToBeAHang) {
  // One GPU reading pegged at low power: small kernels look the same as a wait, so the GPUs
  // alone never call it; a process probe seeing nothing move for --confirm-proc-s does.
  const Outcome alone = Watch("hang-spin", 1, 0, {}, 1);
  EXPECT_TRUE(alone.summary.hangs.empty());
  std::vector<std::unique_ptr<ProgressProbe>> probes;
  probes.push_back(StillProcess());
  const Outcome o = Watch("hang-spin", 1, 0, std::move(probes), 1);
  ASSERT_EQ(o.summary.hangs.size(), 1u);
  const auto& h = o.summary.hangs[0];
  EXPECT_GE(static_cast<double>(h.detected_at_ms - h.start_ms) / 1000.0, 15);  // confirm_proc_s
  EXPECT_THAT(Events(o, "hang_confirmed")[0]["reasons"].dump(), HasSubstr("no I/O, no log lines"));
}

TEST_F(WatcherTest, EveryRankQuietWithProcessesStillIsAHangLive) {
  // A stall off the GPU: every rank quiet holding memory. With the processes watched and still,
  // it is a hang after --confirm-proc-s, long before --max-checkpoint-s.
  std::vector<std::unique_ptr<ProgressProbe>> probes;
  probes.push_back(StillProcess());
  const Outcome o = Watch("off-gpu-stall", 1, 0, std::move(probes));
  // (The sharded save before it is quiet too; its process writes in real life, which this
  // scripted probe does not show, so only the hang that starts with the stall is looked at.)
  const triage::HangEpisode* stall = nullptr;
  for (const auto& h : o.summary.hangs) {
    if (std::abs(static_cast<double>(h.start_ms - o.truth_hang_start_ms)) < 5000) stall = &h;
  }
  ASSERT_NE(stall, nullptr);
  const double after_truth_s =
      static_cast<double>(stall->detected_at_ms - o.truth_hang_start_ms) / 1000.0;
  EXPECT_LT(after_truth_s, 45) << "confirm-proc-s (15 s) after the ranks went quiet, plus windows";
  EXPECT_GE(after_truth_s, 15);
}

TEST_F(WatcherTest, SingleHostRankZeroCheckpointIsNeverAHang) {
  const Outcome o = Watch("checkpoint-rank0", 1, 0);
  EXPECT_TRUE(o.summary.hangs.empty());
  EXPECT_TRUE(Events(o, "hang_confirmed").empty());
  bool saw_checkpoint = false;
  for (const auto& e : Events(o, "state_change")) saw_checkpoint |= e["to"] == "checkpoint";
  EXPECT_TRUE(saw_checkpoint) << "the checkpoint must show as such, not only as 'no hang'";
}

TEST_F(WatcherTest, RemoteCheckpointLooksLikeAHangToGpusAlone) {
  // Host 1 of a 2-host job while rank 0 (host 0) saves for 150 s: every GPU
  // host 1 sees spins. On GPU evidence alone, this watcher cannot know; the
  // job-level alert rule (deploy/) looks across hosts, and a progress probe
  // settles it locally (next test).
  const Outcome o = Watch("checkpoint-rank0", 2, 1);
  EXPECT_EQ(o.summary.hangs.size(), 1u);
}

TEST_F(WatcherTest, WritesDuringTheWaitMeanACheckpoint) {
  // The same view with the job's processes writing (rank 0's checkpoint shards
  // arriving on a shared file system, or this host's ranks saving their own
  // shards). Shards land every 15 s.
  int polls = 0;
  std::vector<std::unique_ptr<ProgressProbe>> probes;
  probes.push_back(std::make_unique<ScriptedProbe>("process", true, [&polls] {
    const bool moved = ++polls % 15 == 0;
    return ProbeReading{true, moved, moved,
                        "process tree of 1 (9 processes): read 0 B, wrote 8 MB"};
  }));
  const Outcome o = Watch("checkpoint-rank0", 2, 1, std::move(probes));
  EXPECT_TRUE(o.summary.hangs.empty());
  const auto dismissed = Events(o, "hang_dismissed");
  ASSERT_FALSE(dismissed.empty());
  EXPECT_THAT(dismissed[0]["reasons"].dump(), HasSubstr("a checkpoint"));
}

TEST_F(WatcherTest, ProgressLogLinesKeepAStallFromBeingAHang) {
  int polls = 0;
  std::vector<std::unique_ptr<ProgressProbe>> probes;
  probes.push_back(std::make_unique<ScriptedProbe>("progress-log", false, [&polls] {
    ++polls;
    // A line every 20 s: slower than any step, but alive.
    const bool moved = polls % 20 == 0;
    return ProbeReading{true, moved, false, moved ? "train.log: 'step 9 loss 1.2'" : ""};
  }));
  const Outcome o = Watch("hang-spin", 1, 0, std::move(probes));
  EXPECT_TRUE(o.summary.hangs.empty());
  EXPECT_GT(polls, 200) << "probes are polled once per second of watch time";
}

TEST_F(WatcherTest, StateChangeEventsWaitForAStableState) {
  const Outcome o = Watch("healthy", 1, 0);
  const auto changes = Events(o, "state_change");
  // Compute and communication alternate within steps; events are written only
  // for states that lasted 5 s, so a 150 s healthy run stays a handful of
  // events per GPU.
  EXPECT_GT(changes.size(), 4u);
  EXPECT_LT(changes.size(), 40u);
  for (const auto& e : changes) {
    EXPECT_NE(e["from"], e["to"]);
    EXPECT_THAT(e["gpu"].get<std::string>(), ::testing::MatchesRegex("node0/GPU[0-3]"));
  }
}

// A source that says, through TelemetrySource::health(), that one GPU-sample per batch was stale
// (what NVML reports for a GPU whose call missed its deadline).
class StaleEveryBatchSource final : public TelemetrySource {
 public:
  explicit StaleEveryBatchSource(std::unique_ptr<TelemetrySource> inner)
      : inner_(std::move(inner)) {}
  Status Next(std::vector<GpuSample>* out) override {
    const size_t before = out->size();
    Status st = inner_->Next(out);
    if (out->size() > before) ++stale_;
    return st;
  }
  const std::vector<std::string>& hosts() const override { return inner_->hosts(); }
  SourceHealth health() const override {
    SourceHealth h;
    h.samples_stale = stale_;
    return h;
  }
  uint64_t stale() const { return stale_; }

 private:
  std::unique_ptr<TelemetrySource> inner_;
  uint64_t stale_ = 0;
};

TEST_F(WatcherTest, StaleSamplesTheSourceReportsCountAsDropped) {
  sim::ScenarioOptions so;
  so.hosts = 1;
  so.gpus_per_host = 2;
  so.interval_ms = 1000;
  auto cfg = sim::MakeScenario("healthy", so);
  ASSERT_TRUE(cfg.ok());
  StaleEveryBatchSource source(sim::MakeSimSource(*cfg));
  ManualClock clock(1'700'000'000'000);
  WatchOptions o;
  o.identity = {"node0", "", "test"};
  Watcher w(&source, &clock, o, {});
  ASSERT_TRUE(w.Start().ok());
  std::atomic<int> sig{0};
  ASSERT_TRUE(w.Run(&sig).ok());
  ASSERT_GT(source.stale(), 10u);
  EXPECT_EQ(w.summary().samples_dropped, source.stale());
}

TEST_F(WatcherTest, HttpEndpointsServeMetricsStateAndHealth) {
  sim::ScenarioOptions so;
  so.hosts = 1;
  so.gpus_per_host = 2;
  so.interval_ms = 1000;
  auto cfg = sim::MakeScenario("hang-exit", so);
  ASSERT_TRUE(cfg.ok());
  auto source = sim::MakeSimSource(*cfg);
  WatchOptions o;
  o.identity = {"nodeX", "job-9", "test"};
  o.listen = "127.0.0.1:0";
  o.ready_file = (dir_ / "addr").string();
  o.linger = true;
  o.speed = 1000;
  // A real clock: the HTTP client and the watcher run side by side.
  Watcher w(source.get(), SystemClock(), o, {});
  ASSERT_TRUE(w.Start().ok());
  std::string addr;
  std::ifstream(dir_ / "addr") >> addr;
  ASSERT_FALSE(addr.empty());
  std::atomic<int> sig{0};
  std::thread run([&] { EXPECT_TRUE(w.Run(&sig).ok()); });
  httplib::Client c("http://" + addr);
  std::string state;
  for (int i = 0; i < 300; ++i) {
    auto r = c.Get("/state");
    if (r && r->status == 200 && json::parse(r->body).value("source_ended", false)) {
      state = r->body;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_FALSE(state.empty()) << "the replay did not end";
  auto m = c.Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_EQ(m->status, 200);
  EXPECT_THAT(m->get_header_value("Content-Type"), HasSubstr("version=0.0.4"));
  EXPECT_THAT(m->body, HasSubstr("wattwatch_gpu_state{host=\"nodeX\",job_id=\"job-9\",gpu=\"0\""));
  EXPECT_THAT(m->body, HasSubstr("state=\"hang\"}"));
  // The hang-exit job wasted GPU-seconds, and its labels counted hang time.
  EXPECT_THAT(m->body,
              ::testing::Not(HasSubstr(
                  "wattwatch_wasted_gpu_seconds_total{host=\"nodeX\",job_id=\"job-9\"} 0\n")));
  const json st = json::parse(state);
  ASSERT_FALSE(st["gpus"].empty());
  EXPECT_EQ(st["gpus"][0]["gpu"], "nodeX/GPU0");
  auto h = c.Get("/healthz");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  sig.store(SIGTERM);
  run.join();
  EXPECT_EQ(w.summary().hangs.size(), 1u);
}

}  // namespace
}  // namespace ww::watch
