#include "fleet/job_table.h"

#include <gtest/gtest.h>

#include "fleet/fleet_fixtures.h"
#include "fleet/fleet_render.h"
#include "support/support.h"

namespace ww::fleet {
namespace {

using fixture::Store;

JobTableOptions TableOpts(std::vector<std::string> labels = {"hpc_job"}) {
  JobTableOptions o;
  o.job_labels = std::move(labels);
  o.triage.hang_confirm_s = 10;
  o.close_after_ms = 60'000;
  return o;
}

// Feeds the store in cycles of cycle_ms (overlapping by 2 s, as the service reads).
std::vector<JobEvent> Feed(JobTable& t, const Store& s, int64_t cycle_ms, int64_t until_ms) {
  std::vector<JobEvent> events;
  for (int64_t from = s.first_ms(); from <= until_ms; from += cycle_ms) {
    t.Ingest(s.Between(from - 2000, std::min(until_ms, from + cycle_ms)));
    for (auto& e : t.TakeEvents()) events.push_back(std::move(e));
  }
  return events;
}

int Count(const std::vector<JobEvent>& ev, JobEvent::Kind kind, const std::string& job) {
  int n = 0;
  for (const auto& e : ev) n += e.kind == kind && e.job == job;
  return n;
}

TEST(FleetJobTable, GroupsByLabelAndJudgesEachJobAlone) {
  Store s;
  s.AddJob("hang-spin", {"gpu-a"}, "h");
  s.AddJob("healthy", {"gpu-d"}, "ok", 1000, {{0, 3}});
  JobTable t(TableOpts());
  // Up to 3 minutes in: the hang (from 87 s) is confirmed and still going, the healthy job runs.
  const auto ev = Feed(t, s, 30'000, s.first_ms() + 180'000);
  ASSERT_EQ(t.jobs().size(), 2u);
  EXPECT_EQ(Count(ev, JobEvent::Kind::kHangConfirmed, "h"), 1);
  EXPECT_EQ(Count(ev, JobEvent::Kind::kHangConfirmed, "ok"), 0);
  EXPECT_EQ(t.jobs().at("ok")->gpus(), 3u);  // GPU 3 has no hpc_job
  EXPECT_EQ(t.unattributed_gpus(), 1u);
  const auto& hang = *t.jobs().at("h");
  ASSERT_TRUE(hang.engine().hang_active());
  EXPECT_EQ(hang.Verdict(), "hang");
  EXPECT_FALSE(hang.Reasons().empty());
  const JobEvent* confirmed = nullptr;
  for (const auto& e : ev) {
    if (e.kind == JobEvent::Kind::kHangConfirmed) confirmed = &e;
  }
  ASSERT_NE(confirmed, nullptr);
  EXPECT_EQ(confirmed->payload["job_id"], "h");
  EXPECT_EQ(confirmed->payload["host"], "gpu-a");
  EXPECT_EQ(confirmed->payload["gpus"].size(), 4u);
  EXPECT_EQ(confirmed->payload["gpus"][0], "gpu-a/GPU0");
  EXPECT_NE(t.jobs().at("ok")->Verdict(), "hang");
}

TEST(FleetJobTable, AJobsHostsAreJudgedTogether) {
  // Rank 0 on node0 saves for 150 s while every other rank spins. Judged as one job (hpc_job)
  // that is a checkpoint; a host alone (one job per hostname) cannot see the saver and hangs.
  Store s;
  s.AddJob("checkpoint-rank0", {"n0", "n1"}, "ck");
  JobTable together(TableOpts());
  const auto ev = Feed(together, s, 30'000, s.last_ms());
  EXPECT_EQ(Count(ev, JobEvent::Kind::kHangConfirmed, "ck"), 0);
  EXPECT_EQ(together.jobs().at("ck")->hosts(), (std::vector<std::string>{"n0", "n1"}));
  EXPECT_GT(together.jobs().at("ck")->engine().checkpoints().size(), 0u);

  JobTable apart(TableOpts({"hostname"}));
  const auto ev2 = Feed(apart, s, 30'000, s.last_ms());
  // Both of rank 0's saves (20 s and 150 s) look like hangs from n1 alone.
  EXPECT_GE(Count(ev2, JobEvent::Kind::kHangConfirmed, "n1"), 1);
}

TEST(FleetJobTable, RepeatedSamplesAreDroppedNotFedTwice) {
  Store s;
  s.AddJob("hang-spin", {"gpu-a"}, "h");
  JobTable t(TableOpts());
  const FleetBatch all = s.Between(s.first_ms(), s.last_ms());
  const IngestStats first = t.Ingest(all);
  EXPECT_EQ(first.samples_fed, static_cast<int64_t>(all.samples.size()));
  const auto n_events = t.TakeEvents().size();
  EXPECT_GT(n_events, 0u);
  const IngestStats again = t.Ingest(all);
  EXPECT_EQ(again.samples_fed, 0);
  EXPECT_EQ(again.samples_old, static_cast<int64_t>(all.samples.size()));
  EXPECT_TRUE(t.TakeEvents().empty());
}

TEST(FleetJobTable, ShardKeepsOnlyItsJobs) {
  Store s;
  std::vector<std::string> ids;
  for (int i = 0; i < 6; ++i) {
    ids.push_back("job-" + std::to_string(i));
    s.AddJob("healthy", {"h" + std::to_string(i)}, ids.back());
  }
  JobTableOptions o = TableOpts();
  o.shard = Shard{1, 2};
  JobTable t(o);
  t.Ingest(s.Between(s.first_ms(), s.first_ms() + 60'000));
  size_t mine = 0;
  for (const auto& id : ids) {
    EXPECT_EQ(t.jobs().count(id) == 1, o.shard.Owns(id)) << id;
    mine += o.shard.Owns(id);
  }
  EXPECT_EQ(t.jobs().size(), mine);
  EXPECT_EQ(t.other_shard_jobs(), ids.size() - mine);
}

TEST(FleetJobTable, SilentJobsCloseWithTheirSummaryAndMemoryIsBounded) {
  Store s;
  s.AddJob("hang-spin", {"gpu-a"}, "h");
  s.AddJob("healthy", {"gpu-b"}, "ok");
  JobTableOptions o = TableOpts();
  o.closed_kept = 1;
  JobTable t(o);
  t.Ingest(s.Between(s.first_ms(), s.last_ms()));
  t.TakeEvents();
  const int64_t last_h = t.jobs().at("h")->last_sample_ms();
  const int64_t last_ok = t.jobs().at("ok")->last_sample_ms();
  ASSERT_LT(last_ok, last_h);     // the healthy job's trace is the shorter one
  t.CloseIdle(last_ok + 59'000);  // silent for less than 60 s: not yet
  EXPECT_EQ(t.jobs().size(), 2u);
  t.CloseIdle(std::max(last_h, last_ok) + 61'000);
  EXPECT_TRUE(t.jobs().empty());
  EXPECT_EQ(t.jobs_closed_total(), 2);
  ASSERT_EQ(t.closed().size(), 1u);  // closed_kept
  const auto ev = t.TakeEvents();
  ASSERT_EQ(Count(ev, JobEvent::Kind::kJobClosed, "h"), 1);
  for (const auto& e : ev) {
    if (e.kind != JobEvent::Kind::kJobClosed || e.job != "h") continue;
    EXPECT_EQ(e.payload["event"], "job_closed");
    EXPECT_EQ(e.payload["hang_episodes"].size(), 1u);
    EXPECT_GT(e.payload["gpu_seconds"]["hang"].get<double>(), 60);
    EXPECT_GT(e.payload["wasted_gpu_hours"].get<double>(), 0);
  }
}

TEST(FleetRender, MetricsHaveEveryFamilyAndPassPromtool) {
  Store s;
  s.AddJob("hang-spin", {"gpu-a"}, "h");
  s.AddJob("healthy", {"gpu-d"}, "ok\"quoted", 1000, {{0, 3}});
  JobTable t(TableOpts());
  Feed(t, s, 30'000, s.first_ms() + 180'000);
  FleetSelfStats self;
  self.version = "test";
  self.prometheus_up = true;
  self.query_errors = 3;
  const std::string text = RenderFleetMetrics(t, self);
  for (const char* want :
       {"wattwatch_job_gpus{job=\"h\",state=\"hang\"} 4", "wattwatch_job_hang_active{job=\"h\"} 1",
        "wattwatch_job_hang_active{job=\"ok\\\"quoted\"} 0", "wattwatch_job_hang_culprit{job=\"h\"",
        "wattwatch_job_wasted_gpu_seconds_total{job=\"h\"}", "wattwatch_job_comm_share{job=\"h\"}",
        "wattwatch_fleet_query_errors_total 3", "wattwatch_fleet_unattributed_gpus 1",
        "wattwatch_fleet_jobs_tracked 2", "wattwatch_fleet_prometheus_up 1",
        "wattwatch_fleet_query_duration_seconds_bucket"}) {
    EXPECT_NE(text.find(want), std::string::npos) << want << "\n" << text;
  }
  const auto jobs = FleetJobsJson(t, self);
  ASSERT_EQ(jobs["jobs"].size(), 2u);
  EXPECT_EQ(jobs["jobs"][0]["job"], "h");
  EXPECT_EQ(jobs["jobs"][0]["verdict"], "hang");
  EXPECT_FALSE(jobs["jobs"][0]["reasons"].empty());
  if (ww::testing::RunCapture("command -v promtool").exit_code != 0) {
    GTEST_SKIP() << "no promtool";
  }
  ww::testing::TempDir dir;
  ww::testing::WriteFile((dir / "m.prom"), text);
  auto r = ww::testing::RunCapture("promtool check metrics < " + (dir / "m.prom"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

// A rank the others wait for in every step is named on /jobs and /metrics, with how much slower;
// a healthy job names nobody.
TEST(FleetRender, StragglersAreNamedWithTheirSlowdown) {
  Store s;
  s.AddJob("straggler", {"gpu-s"}, "slow");
  s.AddJob("healthy", {"gpu-h"}, "ok");
  JobTable t(TableOpts());
  Feed(t, s, 30'000, s.last_ms());
  FleetSelfStats self;
  const auto jobs = FleetJobsJson(t, self);
  ASSERT_EQ(jobs["jobs"].size(), 2u);
  for (const auto& j : jobs["jobs"]) {
    if (j["job"] == "ok") {
      EXPECT_TRUE(j["stragglers"].empty()) << j.dump();
      continue;
    }
    ASSERT_EQ(j["stragglers"].size(), 1u) << j.dump();
    EXPECT_GT(j["stragglers"][0]["slowdown"].get<double>(), 1.1);
    EXPECT_EQ(j["stragglers"][0]["gpu"].get<std::string>().rfind("gpu-s/GPU", 0), 0u);
  }
  const std::string text = RenderFleetMetrics(t, self);
  EXPECT_NE(text.find("wattwatch_job_straggler_slowdown{job=\"slow\",gpu=\"gpu-s/GPU"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("wattwatch_job_straggler_slowdown{job=\"ok\""), std::string::npos);
}

}  // namespace
}  // namespace ww::fleet
