#include "fleet/fleet_service.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <optional>

#include "fleet/fleet_fixtures.h"
#include "support/support.h"
#include "telemetry/ingest/prom_client.h"

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
    auto q = params.find("query");
    const bool listing = q != params.end() && q->second.rfind("group by", 0) == 0;
    if (listing) {
      listing_query = q->second;
    } else {
      for (const auto& [k, v] : params) last[k] = v;
    }
    if (answer) return answer(q == params.end() ? "" : q->second);
    if (listing && hosts) {
      std::string out = R"({"status":"success","data":{"resultType":"vector","result":[)";
      for (size_t i = 0; i < hosts->size(); ++i) {
        out += (i ? "," : "") + std::string(R"({"metric":{"Hostname":")") + (*hosts)[i] +
               R"("},"value":[1,"1"]})";
      }
      return ingest::HttpReply{200, out + "]}}"};
    }
    if (!reply.ok()) return reply.status();
    return *reply;
  }
  const std::string& url() const override { return url_; }
  Result<ingest::HttpReply> reply = ingest::HttpReply{};
  // The hosts the listing query names (`group by`); unset: the listing gets `reply` too.
  std::optional<std::vector<std::string>> hosts;
  // When set, answers every query.
  std::function<Result<ingest::HttpReply>(const std::string& query)> answer;
  std::string listing_query;
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
  http.hosts = std::vector<std::string>{"n0", "n1"};
  ManualClock clock;
  PromFleetQuery q(&http, &clock, "cluster=\"a\"");
  auto b = q.Samples(1763465358000, 1763465362500);
  ASSERT_TRUE(b.ok()) << b.status().message();
  // The hosts first, then one page of them.
  EXPECT_EQ(http.paths, (std::vector<std::string>{"/api/v1/query", "/api/v1/query"}));
  EXPECT_EQ(http.listing_query.rfind("group by (Hostname,hostname,instance) (count_over_time("
                                     "DCGM_FI_DEV_POWER_USAGE{cluster=\"a\"}[4500ms]) or ",
                                     0),
            0u)
      << http.listing_query;
  EXPECT_NE(http.last["query"].find(",Hostname=~\"n0|n1\"}"), std::string::npos)
      << http.last["query"];
  EXPECT_EQ(http.last["time"], "1763465362.500");
  // Every field of the DCGM field table (telemetry/fields.h), power and utilization among them.
  EXPECT_NE(http.last["query"].find("{__name__=~\"" + ingest::DcgmMetricRegex() + "\","),
            std::string::npos)
      << http.last["query"];
  EXPECT_NE(http.last["query"].find("DCGM_FI_DEV_POWER_USAGE|"), std::string::npos);
  EXPECT_NE(http.last["query"].find("|DCGM_FI_DEV_GPU_UTIL|"), std::string::npos);
  EXPECT_NE(http.last["query"].find(",cluster=\"a\",Hostname=~\"n0|n1\"}[4500ms]"),
            std::string::npos)
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

// --prometheus-vendor amd: AMD device-metrics-exporter's series, asked for by their names
// (no DCGM name in any request) and decoded as the same samples.
TEST(FleetQuery, AnotherVendorsSeriesAreAskedForAndRead) {
  CannedHttp http;
  http.reply = ingest::HttpReply{200, R"({"status":"success","data":{"resultType":"matrix",
    "result":[
     {"metric":{"__name__":"gpu_power_usage","gpu_id":"0","hostname":"mi1","hpc_job":"9"},
      "values":[[1763465360,"120"],[1763465361,"125"]]},
     {"metric":{"__name__":"gpu_gfx_activity","gpu_id":"0","hostname":"mi1","hpc_job":"9"},
      "values":[[1763465360,"100"],[1763465361,"100"]]}]}})"};
  http.hosts = std::vector<std::string>{"mi1"};
  ManualClock clock;
  PromFleetQuery q(&http, &clock, "", "amd");
  auto b = q.Samples(1763465358000, 1763465362000);
  ASSERT_TRUE(b.ok()) << b.status().message();
  EXPECT_NE(http.listing_query.find("count_over_time(gpu_power_usage[4000ms])"), std::string::npos)
      << http.listing_query;
  EXPECT_EQ(http.listing_query.find("DCGM_FI_"), std::string::npos) << http.listing_query;
  EXPECT_NE(http.last["query"].find("{__name__=~\"" + ingest::VendorMetricRegex("amd") + "\""),
            std::string::npos)
      << http.last["query"];
  EXPECT_EQ(http.last["query"].find("DCGM_FI_"), std::string::npos) << http.last["query"];
  ASSERT_EQ(b->samples.size(), 2u);
  EXPECT_DOUBLE_EQ(*b->samples[0].power_w + *b->samples[1].power_w, 245);
  EXPECT_DOUBLE_EQ(*b->samples[1].util_gpu_pct, 100);
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
  http.hosts = std::vector<std::string>{"n1"};
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
  http.hosts = std::vector<std::string>{};  // nothing scraped in the range: not an error
  auto empty = q.Samples(0, 1000);
  ASSERT_TRUE(empty.ok()) << empty.status().message();
  EXPECT_TRUE(empty->samples.empty());
}

// Hosts are read in pages of at most max_hosts_per_page(), each named by the label the decoder
// takes (Hostname, else hostname, else instance), regex characters escaped; the pages merge
// into one batch in time order.
TEST(FleetQuery, ReadsHostsInPagesAndMergesThem) {
  CannedHttp http;
  std::vector<std::string> queries;
  http.answer = [&](const std::string& query) -> Result<ingest::HttpReply> {
    queries.push_back(query);
    if (query.rfind("group by", 0) == 0) {
      return ingest::HttpReply{200, R"({"status":"success","data":{"resultType":"vector",
        "result":[{"metric":{"Hostname":"a.b"},"value":[1,"1"]},
                  {"metric":{"Hostname":"c"},"value":[1,"1"]},
                  {"metric":{"Hostname":"d"},"value":[1,"1"]},
                  {"metric":{"instance":"10.0.0.1:9400"},"value":[1,"1"]}]}})"};
    }
    std::string result;
    for (const char* h : {"a.b", "c", "d"}) {
      if (query.find(std::string("Hostname=~\"") + (h[0] == 'a' ? "a\\\\.b" : h)) ==
              std::string::npos &&
          query.find(std::string("|") + h + "\"") == std::string::npos) {
        continue;
      }
      result += std::string(result.empty() ? "" : ",") +
                R"({"metric":{"__name__":"DCGM_FI_DEV_GPU_UTIL","gpu":"0","Hostname":")" + h +
                R"("},"values":[[1763465360,"100"],[1763465361,"100"]]})";
    }
    if (query.find("instance=~\"10\\\\.0\\\\.0\\\\.1:9400\"") != std::string::npos) {
      result += std::string(result.empty() ? "" : ",") +
                R"({"metric":{"__name__":"DCGM_FI_DEV_GPU_UTIL","gpu":"0",)"
                R"("instance":"10.0.0.1:9400"},"values":[[1763465360,"100"]]})";
    }
    return ingest::HttpReply{
        200, R"({"status":"success","data":{"resultType":"matrix","result":[)" + result + "]}}"};
  };
  ManualClock clock;
  PromFleetQuery q(&http, &clock, "");
  q.set_max_hosts_per_page(2);
  auto b = q.Samples(1763465358000, 1763465362000);
  ASSERT_TRUE(b.ok()) << b.status().message();
  ASSERT_EQ(queries.size(), 4u);  // the listing, then a.b|c, d, and the instance page
  EXPECT_NE(queries[1].find("Hostname=~\"a\\\\.b|c\"}"), std::string::npos) << queries[1];
  EXPECT_NE(queries[2].find("Hostname=~\"d\"}"), std::string::npos) << queries[2];
  EXPECT_NE(queries[3].find("Hostname=\"\",hostname=\"\",instance=~\"10"), std::string::npos)
      << queries[3];
  EXPECT_EQ(b->hosts, (std::vector<std::string>{"a.b", "c", "d", "10.0.0.1:9400"}));
  EXPECT_EQ(b->pages, 3);
  EXPECT_EQ(b->hosts_listed, 4);
  ASSERT_EQ(b->samples.size(), 7u);
  for (size_t i = 1; i < b->samples.size(); ++i) {
    const auto& p = b->samples[i - 1];
    const auto& s = b->samples[i];
    EXPECT_TRUE(p.timestamp_ms < s.timestamp_ms ||
                (p.timestamp_ms == s.timestamp_ms && p.key.host < s.key.host));
  }
}

// An answer that decodes to nothing, or to an instant vector, is an error (IoError: counted as
// unusable), never an empty success.
TEST(FleetQuery, AnAnswerThatCannotBeUsedIsAnError) {
  CannedHttp http;
  http.hosts = std::vector<std::string>{"n1"};
  ManualClock clock;
  PromFleetQuery q(&http, &clock, "");
  http.reply = ingest::HttpReply{200, R"({"status":"success","data":{"resultType":"matrix",
    "result":[{"metric":{"__name__":"DCGM_FI_DEV_GPU_UTIL","gpu":"0","Hostname":"n1"},
               "values":[["1763465360","100"],["1763465361","100"]]}]}})"};
  auto strings = q.Samples(1763465358000, 1763465362000);
  ASSERT_FALSE(strings.ok());
  EXPECT_EQ(strings.status().code(), StatusCode::kIoError);
  EXPECT_NE(strings.status().message().find("unusable answer"), std::string::npos);
  EXPECT_NE(strings.status().message().find("not [unix_seconds"), std::string::npos)
      << strings.status().message();
  http.reply = ingest::HttpReply{200, R"({"status":"success","data":{"resultType":"vector",
    "result":[{"metric":{"__name__":"DCGM_FI_DEV_GPU_UTIL","gpu":"0","Hostname":"n1"},
               "value":[1763465360,"100"]}]}})"};
  auto vector = q.Samples(1763465358000, 1763465362000);
  ASSERT_FALSE(vector.ok());
  EXPECT_EQ(vector.status().code(), StatusCode::kIoError);
  EXPECT_NE(vector.status().message().find("instant vector"), std::string::npos);
}

// The service counts an unusable answer as a failed cycle: exported, never a success.
TEST(FleetService, AnUnusableAnswerIsCountedAndTheCycleFails) {
  const Store s = HangAndHealthy();
  Harness h(&s);
  ASSERT_TRUE(h.service.Start().ok());
  h.Advance(60);
  ASSERT_TRUE(h.service.Cycle().ok);
  h.query.fail = [](int) { return Status::IoError("unusable answer to the samples"); };
  h.Advance(30);
  EXPECT_FALSE(h.service.Cycle().ok);
  EXPECT_EQ(h.service.self().unusable_answers, 1u);
  EXPECT_EQ(h.service.self().cycles_failed, 1u);
  EXPECT_FALSE(h.service.self().prometheus_up);
  const std::string metrics = RenderFleetMetrics(h.service.table(), h.service.self());
  EXPECT_NE(metrics.find("wattwatch_fleet_unusable_answers_total 1"), std::string::npos);
  EXPECT_NE(metrics.find("wattwatch_fleet_cycles_failed_total 1"), std::string::npos);
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
