#include "fleet/fleet_service.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "fleet/fleet_fixtures.h"
#include "support/support.h"

namespace ww::fleet {
namespace {

using fixture::FakeQuery;
using fixture::Store;

FleetOptions ServiceOpts() {
  FleetOptions o;
  o.listen = "none";
  o.interval_s = 30;
  o.lookback_s = 300;
  o.retries = 2;
  o.retry_backoff_s = 1;
  o.close_after_s = 120;
  o.triage.hang_confirm_s = 10;
  return o;
}

// The service on a manual clock: each Cycle() reads up to the clock's now; Advance moves it.
struct Harness {
  explicit Harness(const Store* store, FleetOptions o = ServiceOpts())
      : query(store), clock(store->first_ms()), service(std::move(o), &query, &clock) {}
  void Advance(double s) { clock.AdvanceNs(static_cast<int64_t>(s * 1e9)); }
  FakeQuery query;
  ManualClock clock;
  FleetService service;
};

Store HangAndHealthy() {
  Store s;
  s.AddJob("hang-spin", {"gpu-a"}, "h");
  s.AddJob("healthy", {"gpu-d"}, "ok");
  return s;
}

TEST(FleetService, CyclesReadOnlyWhatIsNewAndConfirmTheHang) {
  const Store s = HangAndHealthy();
  Harness h(&s);
  ASSERT_TRUE(h.service.Start().ok());
  h.Advance(60);
  CycleReport first = h.service.Cycle();
  EXPECT_TRUE(first.ok);
  EXPECT_EQ(first.end_ms - first.start_ms, 300'000);  // --lookback-s
  for (int i = 0; i < 5; ++i) {                       // to 4 min in: the hang began at 87 s
    h.Advance(30);
    CycleReport r = h.service.Cycle();
    ASSERT_TRUE(r.ok);
    // The last cycle's end minus two scrape intervals (late samples), to now.
    EXPECT_EQ(r.start_ms, h.query.ranges[h.query.ranges.size() - 2].second - 2000);
    EXPECT_LE(r.samples, 8 * 32);  // 8 GPUs x 30 new samples (+ the first of a sub-second edge)
  }
  ASSERT_TRUE(h.service.table().jobs().count("h"));
  EXPECT_TRUE(h.service.table().jobs().at("h")->engine().hang_active());
  EXPECT_FALSE(h.service.table().jobs().at("ok")->engine().hang_active());
  EXPECT_TRUE(h.service.self().prometheus_up);
  EXPECT_EQ(h.service.self().scrape_interval_ms, 1000);
}

TEST(FleetService, AnOutageHoldsVerdictsClosesNothingAndIsCaughtUp) {
  const Store s = HangAndHealthy();
  FleetOptions o = ServiceOpts();
  o.close_after_s = 60;  // shorter than the outage: an outage must still close nothing
  Harness h(&s, o);
  ASSERT_TRUE(h.service.Start().ok());
  for (int i = 0; i < 6; ++i) {
    h.Advance(30);
    ASSERT_TRUE(h.service.Cycle().ok);
  }
  const auto before = FleetJobsJson(h.service.table(), h.service.self());
  const int64_t covered = h.service.self().covered_until_ms;
  const size_t requests_before = h.query.ranges.size();
  h.query.fail = [](int) { return Status::Unavailable("cannot reach Prometheus: Connection"); };
  for (int i = 0; i < 4; ++i) {  // 2 minutes out
    h.Advance(30);
    EXPECT_FALSE(h.service.Cycle().ok);
  }
  // Each failed request was retried twice (--retries), with backoff on the clock.
  EXPECT_EQ(h.query.ranges.size() - requests_before, 4u * 3u);
  EXPECT_EQ(h.service.self().query_errors, 4u);
  EXPECT_EQ(h.service.self().query_retries, 8u);
  EXPECT_FALSE(h.service.self().prometheus_up);
  EXPECT_EQ(h.service.self().covered_until_ms, covered);
  const auto during = FleetJobsJson(h.service.table(), h.service.self());
  EXPECT_EQ(during["jobs"], before["jobs"]);  // same verdicts, reasons, counts; no job closed
  EXPECT_EQ(h.service.table().jobs_closed_total(), 0);

  h.query.fail = nullptr;
  h.Advance(30);
  ASSERT_TRUE(h.service.Cycle().ok);
  EXPECT_EQ(h.query.ranges.back().first >= covered - 2000, true);
  EXPECT_EQ(h.query.ranges[requests_before + 12].first, covered - 2000);  // read from the gap
  EXPECT_TRUE(h.service.self().prometheus_up);
  EXPECT_EQ(h.service.self().gap_seconds, 0u);
}

TEST(FleetService, AnOutageLongerThanTheLookbackIsAGap) {
  const Store s = HangAndHealthy();
  FleetOptions o = ServiceOpts();
  o.lookback_s = 60;
  o.retries = 0;
  Harness h(&s, o);
  ASSERT_TRUE(h.service.Start().ok());
  h.Advance(60);
  ASSERT_TRUE(h.service.Cycle().ok);
  h.query.fail = [](int) { return Status::Unavailable("down"); };
  h.Advance(150);
  EXPECT_FALSE(h.service.Cycle().ok);
  h.query.fail = nullptr;
  h.Advance(30);
  ASSERT_TRUE(h.service.Cycle().ok);
  EXPECT_EQ(h.service.self().gap_seconds, 120u);  // 180 s out, 60 s of it caught up
}

TEST(FleetService, ARefusedFirstQueryStopsTheService) {
  const Store s = HangAndHealthy();
  Harness h(&s);
  h.query.fail = [](int) {
    return Status::InvalidInput("Prometheus refused the query (HTTP 400, bad_data): parse error");
  };
  ASSERT_TRUE(h.service.Start().ok());
  std::atomic<int> stop{0};
  const Status st = h.service.Run(&stop);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("bad_data"), std::string::npos);
  EXPECT_EQ(h.query.ranges.size(), 1u);  // a refusal is not retried
}

TEST(FleetService, AsksTheQueryToKeepItsJobLabels) {
  const Store s = HangAndHealthy();
  FleetOptions o = ServiceOpts();
  o.job_label = "namespace,pod";
  Harness h(&s, o);
  ASSERT_TRUE(h.service.Start().ok());
  EXPECT_EQ(h.query.kept, (std::vector<std::string>{"namespace", "pod"}));
}

TEST(FleetService, BadFlagsNameThemselves) {
  const Store s = HangAndHealthy();
  FleetOptions o = ServiceOpts();
  o.job_label = "job-id";
  Harness h(&s, o);
  const Status st = h.service.Start();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("--job-label"), std::string::npos);
  FleetOptions o2 = ServiceOpts();
  o2.shard = "2/2";
  Harness h2(&s, o2);
  EXPECT_NE(h2.service.Start().message().find("--shard"), std::string::npos);
}

// PromFleetQuery over a canned HTTP transport: the request it makes and how answers map.
class CannedHttp final : public ingest::PromHttp {
 public:
  Result<ingest::HttpReply> Get(const std::string& path,
                                const std::multimap<std::string, std::string>& params) override {
    paths.push_back(path);
    for (const auto& [k, v] : params) last[k] = v;
    if (!reply.ok()) return reply.status();
    return *reply;
  }
  const std::string& url() const override { return url_; }
  Result<ingest::HttpReply> reply = ingest::HttpReply{};
  std::vector<std::string> paths;
  std::map<std::string, std::string> last;
  std::string url_ = "http://prom:9090";
};

TEST(FleetQuery, AskOnceForEveryGpuAndDecodeTheRawSamples) {
  CannedHttp http;
  http.reply = ingest::HttpReply{200, R"({"status":"success","data":{"resultType":"matrix",
    "result":[
     {"metric":{"__name__":"DCGM_FI_DEV_POWER_USAGE","gpu":"0","Hostname":"n1","hpc_job":"42",
                "modelName":"NVIDIA H100 80GB HBM3"},
      "values":[[1763465360,"150.5"],[1763465361,"151"],[1763465362,"NaN"]]},
     {"metric":{"__name__":"DCGM_FI_DEV_GPU_UTIL","gpu":"0","Hostname":"n1","hpc_job":"42"},
      "values":[[1763465360,"100"],[1763465361,"100"],[1763465362,"100"]]},
     {"metric":{"__name__":"DCGM_FI_DEV_POWER_USAGE","gpu":"1","Hostname":"n0"},
      "values":[[1763465360,"500"],[1763465361,"510"]]}]},
    "warnings":["store gateway down"]})"};
  ManualClock clock;
  PromFleetQuery q(&http, &clock, "cluster=\"a\"");
  auto b = q.Samples(1763465358000, 1763465362500);
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_EQ(http.paths, std::vector<std::string>{"/api/v1/query"});
  EXPECT_EQ(http.last["time"], "1763465362.500");
  EXPECT_NE(http.last["query"].find("DCGM_FI_DEV_POWER_USAGE|DCGM_FI_DEV_GPU_UTIL"),
            std::string::npos);
  EXPECT_NE(http.last["query"].find(",cluster=\"a\"}[4500ms]"), std::string::npos)
      << http.last["query"];
  EXPECT_EQ(b->hosts, (std::vector<std::string>{"n0", "n1"}));
  EXPECT_EQ(b->samples.size(), 5u);
  EXPECT_EQ(b->server_warnings, 1);
  EXPECT_EQ(b->spacing_ms, 1000);
  bool labelled = false;
  for (const auto& l : b->labels) {
    if (l.key.host == 1) labelled = l.labels.at("hpc_job") == "42";
  }
  EXPECT_TRUE(labelled);
}

// A job label of the site's own (a relabel rule's `job_id`) is kept per GPU once the service
// names it; without that only the exporter's mappings are, so the GPU would be unattributed.
TEST(FleetQuery, KeepsTheJobLabelsItIsTold) {
  CannedHttp http;
  http.reply = ingest::HttpReply{200, R"({"status":"success","data":{"resultType":"matrix",
    "result":[
     {"metric":{"__name__":"DCGM_FI_DEV_POWER_USAGE","gpu":"0","Hostname":"n1","job_id":"7",
                "hpc_job":"42"},
      "values":[[1763465360,"150.5"],[1763465361,"151"]]}]}})"};
  ManualClock clock;
  PromFleetQuery q(&http, &clock, "");
  auto before = q.Samples(1763465358000, 1763465362000);
  ASSERT_TRUE(before.ok()) << before.status().message();
  ASSERT_EQ(before->labels.size(), 1u);
  EXPECT_EQ(before->labels[0].labels.count("job_id"), 0u);
  EXPECT_EQ(before->labels[0].labels.at("hpc_job"), "42");
  q.KeepLabels({"job_id", "hostname"});
  auto after = q.Samples(1763465358000, 1763465362000);
  ASSERT_TRUE(after.ok()) << after.status().message();
  ASSERT_EQ(after->labels.size(), 1u);
  EXPECT_EQ(after->labels[0].labels.at("job_id"), "7");
  EXPECT_EQ(after->labels[0].labels.count("hpc_job"), 0u);  // only what was asked for
  EXPECT_EQ(after->labels[0].labels.at("hostname"), "n1");  // the host is always kept
}

TEST(FleetQuery, FailuresSayWhetherARetryHelps) {
  CannedHttp http;
  ManualClock clock;
  PromFleetQuery q(&http, &clock, "");
  http.reply = ingest::HttpReply{503, "service unavailable"};
  EXPECT_EQ(q.Samples(0, 1000).status().code(), StatusCode::kUnavailable);
  http.reply = Status::Unavailable("cannot reach Prometheus at http://prom:9090: Connection");
  EXPECT_EQ(q.Samples(0, 1000).status().code(), StatusCode::kUnavailable);
  http.reply = ingest::HttpReply{
      400, R"({"status":"error","errorType":"bad_data","error":"parse error at char 3"})"};
  auto r = q.Samples(0, 1000);
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(r.status().message().find("bad_data"), std::string::npos) << r.status().message();
  http.reply = ingest::HttpReply{200, R"({"status":"success","data":{"resultType":"matrix",
    "result":[]}})"};
  auto empty = q.Samples(0, 1000);
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->samples.empty());
}

}  // namespace
}  // namespace ww::fleet

namespace ww::fleet {
namespace {

// The hook runs once per hang confirmed while it lasts, with the job in WATTWATCH_JOB_ID; a hang
// that was already over in the range read (history) is written down but runs nothing.
TEST(FleetService, HookRunsForACurrentHangNotForHistory) {
  Store s;
  s.AddJob("hang-spin", {"gpu-a"}, "h");
  ww::testing::TempDir dir;
  const std::string out = dir / "hook.txt";
  const std::string events = dir / "events.jsonl";
  FleetOptions o = ServiceOpts();
  o.actions.hook_argv = {"sh", "-c", "echo \"$WATTWATCH_JOB_ID $WATTWATCH_CULPRITS\" >> " + out};
  o.events_path = events;
  {
    Harness h(&s, o);
    ASSERT_TRUE(h.service.Start().ok());
    for (int i = 0; i < 8; ++i) {  // to 4 min in: the hang began at 87 s and goes on
      h.Advance(30);
      ASSERT_TRUE(h.service.Cycle().ok);
    }
  }  // the service's destructor waits for the hook
  EXPECT_EQ(ww::testing::ReadFile(out), "h gpu-a/GPU2\n");

  const std::string out2 = dir / "hook2.txt";
  o.actions.hook_argv = {"sh", "-c", "echo ran >> " + out2};
  o.lookback_s = 600;  // the first cycle reads the whole trace, hang and its end
  {
    Harness h(&s, o);
    ASSERT_TRUE(h.service.Start().ok());
    h.Advance(400);
    ASSERT_TRUE(h.service.Cycle().ok);
  }
  EXPECT_FALSE(std::filesystem::exists(out2));
  int historical = 0, current = 0;
  for (const auto& line : ww::testing::Lines(ww::testing::ReadFile(events))) {
    auto j = nlohmann::json::parse(line);
    if (j.value("event", "") != "hang_confirmed") continue;
    (j.value("historical", false) ? historical : current) += 1;
    EXPECT_EQ(j["job_id"], "h");
  }
  EXPECT_EQ(current, 1);
  EXPECT_EQ(historical, 1);
}

}  // namespace
}  // namespace ww::fleet
