// Prometheus HTTP API responses as telemetry: the query_range JSON reader (saved files, one or
// several documents, malformed input), its detection by content, and the client of
// `triage --prometheus` against a scripted server (step discovery, the 11,000-point split,
// errors) and a real cpp-httplib server on 127.0.0.1 (headers, token file, unreachable).
#include "telemetry/ingest/prom_json.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <zlib.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/clock.h"
#include "support/support.h"
#include "telemetry/ingest/dcgm_exporter_live.h"
#include "telemetry/ingest/open.h"
#include "telemetry/ingest/prom_client.h"

namespace ww {
namespace prom_json_test {

using ::testing::HasSubstr;
using ::testing::Not;
using namespace ww::ingest;  // NOLINT: the readers under test
using ww::testing::TempDir;
using ww::testing::WriteFile;

// One matrix series: `labels` in Prometheus's JSON (without braces), points (unix s, "value").
std::string Series(const std::string& name, const std::string& labels,
                   const std::vector<std::pair<double, std::string>>& points) {
  std::string v;
  for (const auto& [t, val] : points) {
    v += fmt::format("{}[{},\"{}\"]", v.empty() ? "" : ",", t, val);
  }
  return fmt::format(R"({{"metric":{{"__name__":"{}"{}{}}},"values":[{}]}})", name,
                     labels.empty() ? "" : ",", labels, v);
}

std::string Matrix(const std::vector<std::string>& series, const std::string& extra = "") {
  std::string r;
  for (const auto& s : series) r += (r.empty() ? "" : ",") + s;
  return fmt::format(R"({{"status":"success",{}"data":{{"resultType":"matrix","result":[{}]}}}})",
                     extra, r);
}

struct Read {
  Status status;
  std::vector<GpuSample> samples;
  std::vector<std::string> hosts;
  std::vector<GpuInfo> gpus;
  std::vector<GpuLabels> labels;
  std::string warnings;
  std::string description;
};

Read Drain(std::unique_ptr<TelemetrySource> src) {
  Read r;
  for (;;) {
    std::vector<GpuSample> batch;
    r.status = src->Next(&batch);
    if (!r.status.ok() || batch.empty()) break;
    for (const auto& s : batch) EXPECT_EQ(s.timestamp_ms, batch.front().timestamp_ms);
    r.samples.insert(r.samples.end(), batch.begin(), batch.end());
  }
  r.hosts = src->hosts();
  r.gpus = src->gpus();
  r.labels = src->gpu_labels();
  for (const auto& w : src->warnings()) r.warnings += w + "\n";
  return r;
}

Read Decode(const std::string& text) {
  PromJsonDecoder d;
  Read r;
  r.status = d.AddDocuments(text, "incident.json");
  if (!r.status.ok()) return r;
  auto src = d.Finish("default");
  if (!src.ok()) {
    r.status = src.status();
    return r;
  }
  r = Drain(std::move(*src));
  r.description = d.Describe();
  return r;
}

const std::string kNode0Gpu0 =
    R"("gpu":"0","UUID":"GPU-aaa","modelName":"NVIDIA H100 80GB HBM3","Hostname":"node0",)"
    R"("pod":"trainer-0","instance":"10.0.0.1:9400","job":"dcgm")";
const std::string kNode0Gpu1 =
    R"("gpu":"1","UUID":"GPU-bbb","modelName":"NVIDIA H100 80GB HBM3","Hostname":"node0")";
const std::string kNode1Gpu0 = R"("gpu":"0","UUID":"GPU-ccc","Hostname":"node1")";

TEST(PromJson, HostsByHostnameGpusByGpuLabelFieldsWithDcgmUnits) {
  const std::string doc = Matrix({
      Series("DCGM_FI_DEV_POWER_USAGE", kNode0Gpu0, {{1000, "650.5"}, {1001, "120"}}),
      Series("DCGM_FI_DEV_POWER_USAGE", kNode0Gpu1, {{1000, "640"}, {1001, "121"}}),
      Series("DCGM_FI_DEV_POWER_USAGE", kNode1Gpu0, {{1000, "600"}, {1001, "122"}}),
      Series("DCGM_FI_DEV_GPU_UTIL", kNode0Gpu0, {{1000, "100"}, {1001, "0"}}),
      Series("DCGM_FI_DEV_FB_USED", kNode0Gpu0, {{1000, "70000"}}),
      Series("DCGM_FI_DEV_FB_FREE", kNode0Gpu0, {{1000, "11000"}}),
      Series("DCGM_FI_DEV_POWER_MGMT_LIMIT", kNode0Gpu0, {{1000, "700"}}),
      Series("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", kNode0Gpu0, {{1000, "0.42"}}),
      Series("DCGM_FI_PROF_NVLINK_TX_BYTES", kNode0Gpu0, {{1000, "1.5e9"}}),
  });
  Read r = Decode(doc);
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_EQ(r.hosts, (std::vector<std::string>{"node0", "node1"}));
  ASSERT_EQ(r.samples.size(), 6u);
  const GpuSample& a = r.samples[0];
  EXPECT_EQ(a.timestamp_ms, 1000000);
  EXPECT_EQ(a.key, (GpuKey{0, 0}));
  EXPECT_EQ(a.power_w, 650.5);
  EXPECT_EQ(a.util_gpu_pct, 100);
  EXPECT_EQ(a.mem_used_mib, 70000);
  EXPECT_EQ(a.mem_total_mib, 81000);  // used + free
  EXPECT_EQ(a.power_limit_w, 700);
  EXPECT_EQ(a.tensor_activity_ratio, 0.42);
  EXPECT_EQ(a.nvlink_tx_bytes_per_s, 1.5e9);
  EXPECT_EQ(r.samples[1].key, (GpuKey{0, 1}));
  EXPECT_FALSE(r.samples[1].util_gpu_pct.has_value());  // not in the response: absent, not 0
  EXPECT_EQ(r.samples[2].key, (GpuKey{1, 0}));
  EXPECT_EQ(r.samples[2].power_w, 600);
  EXPECT_EQ(r.samples[5].timestamp_ms, 1001000);
  ASSERT_GE(r.gpus.size(), 2u);
  EXPECT_EQ(r.gpus[0].name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(r.gpus[0].uuid, "GPU-aaa");
  ASSERT_FALSE(r.labels.empty());
  EXPECT_EQ(r.labels[0].labels.at("pod"), "trainer-0");
  EXPECT_THAT(r.description, HasSubstr("2 host(s) by label Hostname"));
}

TEST(PromJson, OneDocumentPerMetricReadsAsOne) {
  const auto p = Series("DCGM_FI_DEV_POWER_USAGE", kNode0Gpu0, {{1000, "650"}, {1001, "100"}});
  const auto u = Series("DCGM_FI_DEV_GPU_UTIL", kNode0Gpu0, {{1000, "99"}, {1001, "1"}});
  Read one = Decode(Matrix({p, u}));
  Read two = Decode(Matrix({p}) + "\n" + Matrix({u}) + "\n");
  ASSERT_TRUE(two.status.ok()) << two.status.message();
  ASSERT_EQ(one.samples.size(), two.samples.size());
  for (size_t i = 0; i < one.samples.size(); ++i) {
    EXPECT_EQ(one.samples[i].power_w, two.samples[i].power_w);
    EXPECT_EQ(one.samples[i].util_gpu_pct, two.samples[i].util_gpu_pct);
  }
  EXPECT_EQ(two.samples[1].util_gpu_pct, 1);
}

// The hand scan gives up on a document in the middle (an escaped value) after it had stored
// points of an earlier series of that document and of a series known from the document before:
// they are taken back and the DOM reads the document once, so the result is the plain one's.
TEST(PromJson, DocumentTheScanGivesUpOnReadsAsThePlainOne) {
  const auto p1 = Series("DCGM_FI_DEV_POWER_USAGE", kNode0Gpu0, {{1000, "650"}, {1001, "100"}});
  const auto p2 = Series("DCGM_FI_DEV_POWER_USAGE", kNode0Gpu0, {{1002, "300"}, {1003, "301"}});
  const auto u = Series("DCGM_FI_DEV_GPU_UTIL", kNode0Gpu0, {{1000, "99"}, {1001, "1"}});
  const auto m = Series("DCGM_FI_DEV_FB_USED", kNode0Gpu0, {{1000, "102"}, {1001, "7"}});
  std::string escaped = m;
  escaped.replace(escaped.find("\"102\""), 5, R"("1\u00302")");
  Read plain = Decode(Matrix({p1}) + "\n" + Matrix({p2, u, m}));
  Read dom = Decode(Matrix({p1}) + "\n" + Matrix({p2, u, escaped}));
  ASSERT_TRUE(plain.status.ok()) << plain.status.message();
  ASSERT_TRUE(dom.status.ok()) << dom.status.message();
  EXPECT_EQ(dom.warnings, plain.warnings);
  EXPECT_THAT(dom.warnings, Not(HasSubstr("duplicate")));
  ASSERT_EQ(dom.samples.size(), 4u);
  ASSERT_EQ(plain.samples.size(), dom.samples.size());
  for (size_t i = 0; i < plain.samples.size(); ++i) {
    EXPECT_EQ(dom.samples[i].timestamp_ms, plain.samples[i].timestamp_ms);
    EXPECT_EQ(dom.samples[i].power_w, plain.samples[i].power_w);
    EXPECT_EQ(dom.samples[i].util_gpu_pct, plain.samples[i].util_gpu_pct);
    EXPECT_EQ(dom.samples[i].mem_used_mib, plain.samples[i].mem_used_mib);
  }
  EXPECT_EQ(dom.samples[0].mem_used_mib, 102);
  EXPECT_EQ(dom.samples[3].power_w, 301);
}

TEST(PromJson, StatusErrorCarriesPrometheusErrorTypeAndMessage) {
  Read r = Decode(
      R"({"status":"error","errorType":"bad_data","error":"exceeded maximum resolution of 11,000 points per timeseries"})");
  ASSERT_FALSE(r.status.ok());
  EXPECT_THAT(r.status.message(), HasSubstr("incident.json: document 1"));
  EXPECT_THAT(r.status.message(), HasSubstr("bad_data"));
  EXPECT_THAT(r.status.message(), HasSubstr("11,000 points"));
}

TEST(PromJson, StructuralErrorsAreClear) {
  const std::string ok = Matrix({Series("DCGM_FI_DEV_POWER_USAGE", kNode0Gpu0, {{1, "1"}})});
  EXPECT_THAT(Decode(ok.substr(0, ok.size() - 5)).status.message(), HasSubstr("truncated JSON"));
  EXPECT_THAT(Decode("[1,2]").status.message(), HasSubstr("expected a Prometheus API response"));
  EXPECT_THAT(Decode(R"({"data":{}})").status.message(), HasSubstr("no \"status\""));
  EXPECT_THAT(Decode(R"({"status":"success","data":{"resultType":"scalar","result":[1,"2"]}})")
                  .status.message(),
              HasSubstr("resultType \"scalar\""));
  EXPECT_THAT(
      Decode(R"({"status":"success","data":{"resultType":"matrix","result":[]}})").status.message(),
      HasSubstr("no DCGM_FI_* series"));
  EXPECT_THAT(Decode(R"({"status":"success",x})").status.message(), HasSubstr("not valid JSON"));
  EXPECT_THAT(Decode(ok + "garbage").status.message(), HasSubstr("byte"));
}

TEST(PromJson, MalformedPointsAndSeriesAreDocumentedSkips) {
  const std::string doc = Matrix(
      {
          Series("DCGM_FI_DEV_POWER_USAGE", kNode0Gpu0,
                 {{1003, "300"},
                  {1001, "100"},
                  {1002, "NaN"},
                  {1002, "200"},
                  {1004, "+Inf"},
                  {1005, "1e308"},
                  {1006, "abc"},
                  {9e12, "5"}}),
          R"({"metric":{"__name__":"DCGM_FI_DEV_GPU_UTIL","gpu":"0","Hostname":"node0"},"values":[[1001,5],["x","1"],[1001]]})",
          Series("DCGM_FI_DEV_POWER_USAGE", R"("Hostname":"node0")", {{1001, "1"}}),
          R"({"metric":{"gpu":"0"},"values":[[1001,"1"]]})",
          Series("up", R"("instance":"a")", {{1001, "1"}}),
      },
      R"("warnings":["query range partially out of retention"],)");
  Read r = Decode(doc);
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  std::vector<int64_t> ts;
  for (const auto& s : r.samples) ts.push_back(s.timestamp_ms);
  // Sorted, one per timestamp (the first of the duplicates, NaN: no reading), implausible
  // values dropped; the time from the year 2255 skipped.
  EXPECT_EQ(ts, (std::vector<int64_t>{1001000, 1002000, 1003000, 1004000, 1005000}));
  EXPECT_EQ(r.samples[0].power_w, 100);
  EXPECT_FALSE(r.samples[1].power_w.has_value());
  EXPECT_EQ(r.samples[2].power_w, 300);
  EXPECT_FALSE(r.samples[3].power_w.has_value());
  EXPECT_FALSE(r.samples[4].power_w.has_value());
  EXPECT_THAT(r.warnings, HasSubstr("server warning (partial data?) (1 time)"));
  EXPECT_THAT(r.warnings, HasSubstr("partially out of retention"));
  EXPECT_THAT(r.warnings, HasSubstr("out-of-order points sorted"));
  EXPECT_THAT(r.warnings, HasSubstr("duplicate timestamp skipped"));
  EXPECT_THAT(r.warnings, HasSubstr("implausible value skipped"));
  EXPECT_THAT(r.warnings, HasSubstr("value that is not a number skipped"));
  EXPECT_THAT(r.warnings, HasSubstr("timestamp outside 1970..2200"));
  EXPECT_THAT(r.warnings,
              HasSubstr("point that is not [unix_seconds, \"value\"] skipped (3 times)"));
  EXPECT_THAT(r.warnings, HasSubstr("without a gpu or UUID label"));
  EXPECT_THAT(r.warnings, HasSubstr("without __name__"));
  EXPECT_THAT(r.warnings, HasSubstr("non-DCGM series skipped"));
}

TEST(PromJson, SeriesWithoutHostLabelGoToTheDefaultHostAndInstanceNamesHosts) {
  Read r = Decode(Matrix({
      Series("DCGM_FI_DEV_POWER_USAGE", R"("gpu":"0")", {{10, "50"}}),
      Series("DCGM_FI_DEV_POWER_USAGE", R"("gpu":"0","instance":"10.0.0.9:9400")", {{10, "60"}}),
  }));
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_EQ(r.hosts, (std::vector<std::string>{"10.0.0.9:9400", "default"}));
}

TEST(PromJson, DetectedFromContentAlsoAsOneLongLineAndGzip) {
  TempDir dir;
  std::vector<std::pair<double, std::string>> points;
  for (int i = 0; i < 60000; ++i) points.emplace_back(1700000000 + i, i % 2 ? "650.25" : "80");
  const std::string doc = Matrix({Series("DCGM_FI_DEV_POWER_USAGE", kNode0Gpu0, points)});
  ASSERT_GT(doc.size(), size_t{1} << 20);  // longer than the line readers take
  const std::string path = dir.path() + "/incident.json";
  WriteFile(path, doc);
  auto f = DetectInputFormat(path, {});
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_STREQ(InputFormatName(*f), "prometheus-json");
  auto in = OpenTelemetryFiles({path});
  ASSERT_TRUE(in.ok()) << in.status().message();
  Read r = Drain(std::move(in->source));
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.samples.size(), 60000u);
  EXPECT_EQ(r.samples[1].power_w, 650.25);
  EXPECT_THAT(in->inputs[0].Text(), HasSubstr("prometheus-json: 1 series (DEV_POWER_USAGE)"));
  EXPECT_THAT(in->inputs[0].Text(), HasSubstr("samples 1 s apart"));

  // gzip: the same, recognized through the magic bytes.
  const std::string gz_path = dir.path() + "/incident.json.gz";
  gzFile gz = gzopen(gz_path.c_str(), "wb");
  ASSERT_NE(gz, nullptr);
  gzwrite(gz, doc.data(), static_cast<unsigned>(doc.size()));
  gzclose(gz);
  auto g = OpenTelemetryFiles({gz_path});
  ASSERT_TRUE(g.ok()) << g.status().message();
  EXPECT_EQ(Drain(std::move(g->source)).samples.size(), 60000u);

  // A Prometheus file holds its hosts: with another file it is refused, by name.
  const std::string csv = dir.path() + "/node9.csv";
  WriteFile(csv, "timestamp, index, power.draw [W]\n2024/01/01 00:00:00.000, 0, 100 W\n");
  auto both = OpenTelemetryFiles({path, csv});
  ASSERT_FALSE(both.ok());
  EXPECT_THAT(both.status().message(), HasSubstr("holds its own hosts"));
}

// A scripted Prometheus: raw samples every `scrape_ms` from `first_ms` to `last_ms` for two
// GPUs of one host, answered as the real API does; records every request.
class ScriptedProm : public PromHttp {
 public:
  int64_t first_ms = 1700000000000, last_ms = 1700000000000 + 30000 * 1000, scrape_ms = 1000;
  bool empty = false;
  // Another vendor's exporter: its power series, GPU label and unit (x value_scale).
  std::string power_metric = "DCGM_FI_DEV_POWER_USAGE";
  std::string gpu_label = "gpu";
  double value_scale = 1;
  std::vector<std::multimap<std::string, std::string>> range_requests;
  std::vector<std::string> paths;

  Result<HttpReply> Get(const std::string& path,
                        const std::multimap<std::string, std::string>& params) override {
    paths.push_back(path);
    const auto param = [&](const char* k) {
      auto it = params.find(k);
      return it == params.end() ? std::string() : it->second;
    };
    nlohmann::json result = nlohmann::json::array();
    if (path == "/api/v1/query_range") {
      range_requests.push_back(params);
      const int64_t from = std::llround(std::stod(param("start")) * 1000);
      const int64_t to = std::llround(std::stod(param("end")) * 1000);
      const int64_t step = std::llround(std::stod(param("step")) * 1000);
      if ((to - from) / step + 1 > 11000) {
        return HttpReply{400, R"({"status":"error","errorType":"bad_data","error":"exceeded )"
                              R"(maximum resolution of 11,000 points per timeseries"})"};
      }
      for (int gpu = 0; gpu < 2 && !empty; ++gpu) {
        nlohmann::json values = nlohmann::json::array();
        for (int64_t t = from; t <= to; t += step) {
          if (t < first_ms || t > last_ms) continue;
          values.push_back({t / 1000.0, fmt::format("{}", (100 + gpu) * value_scale)});
        }
        result.push_back(
            {{"metric",
              {{"__name__", power_metric}, {gpu_label, std::to_string(gpu)}, {"Hostname", "n0"}}},
             {"values", values}});
      }
    } else if (path == "/api/v1/query") {
      const std::string q = param("query");
      const size_t open = q.rfind('[');
      if (open != std::string::npos && !empty) {
        const int64_t at = std::llround(std::stod(param("time")) * 1000);
        const int64_t w = std::stoll(q.substr(open + 1));
        nlohmann::json values = nlohmann::json::array();
        for (int64_t t = first_ms; t <= last_ms; t += scrape_ms) {
          // Jitter of a few ms as real scrapes have.
          if (t > at - w && t <= at) values.push_back({(t + (t / scrape_ms) % 3) / 1000.0, "1"});
        }
        if (!values.empty()) {
          result.push_back(
              {{"metric", {{"__name__", power_metric}, {gpu_label, "0"}}}, {"values", values}});
        }
      }
    } else if (path == "/api/v1/label/__name__/values") {
      return HttpReply{200, R"({"status":"success","data":["DCGM_FI_DEV_GPU_TEMP"]})"};
    } else if (path == "/api/v1/series") {
      return HttpReply{200, R"({"status":"success","data":[]})"};
    }
    nlohmann::json body = {{"status", "success"},
                           {"data", {{"resultType", "matrix"}, {"result", result}}}};
    return HttpReply{200, body.dump()};
  }
  const std::string& url() const override { return url_; }

 private:
  std::string url_ = "http://prom.test:9090";
};

TEST(PromClient, StepIsTheScrapeIntervalAndLongRangesAreSplitUnder11000Points) {
  ScriptedProm prom;
  PromRangeQuery q;
  q.start_ms = prom.first_ms;
  q.end_ms = prom.last_ms;
  q.selector = R"({job="dcgm"})";
  auto f = FetchDcgmRange(prom, q);
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ(f->step_ms, 1000);
  ASSERT_EQ(prom.range_requests.size(), 4u);  // 30,001 points at 10,000 per request
  for (const auto& r : prom.range_requests) {
    EXPECT_EQ(r.find("step")->second, "1s");
    EXPECT_THAT(r.find("query")->second, HasSubstr(R"(__name__=~"DCGM_FI_DEV_POWER_USAGE|)"));
    EXPECT_THAT(r.find("query")->second, HasSubstr(R"(,job="dcgm"})"));
  }
  Read r = Drain(std::move(f->source));
  ASSERT_TRUE(r.status.ok());
  EXPECT_EQ(r.samples.size(), 2u * 30001);  // every stored sample once, none twice
  EXPECT_EQ(r.samples.front().timestamp_ms, prom.first_ms);
  EXPECT_EQ(r.samples.back().timestamp_ms, prom.last_ms);
  EXPECT_THAT(f->description, HasSubstr("step 1 s, the scrape interval"));
}

// --prometheus-vendor: AMD's and Gaudi's series, fetched by their names, read as DCGM rows.
TEST(PromClient, OtherVendorsSeriesByTheirNamesUnitsConverted) {
  ScriptedProm prom;
  prom.power_metric = "habanalabs_power_mW";
  prom.gpu_label = "UUID";
  prom.value_scale = 1000;  // mW
  PromRangeQuery q;
  q.start_ms = prom.first_ms;
  q.end_ms = prom.first_ms + 60000;
  q.vendor = "gaudi";
  auto f = FetchDcgmRange(prom, q);
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ(f->step_ms, 1000) << "the scrape interval from habanalabs_power_mW";
  ASSERT_FALSE(prom.range_requests.empty());
  const std::string query = prom.range_requests[0].find("query")->second;
  EXPECT_THAT(query, HasSubstr("habanalabs_power_mW|"));
  EXPECT_THAT(query, ::testing::Not(HasSubstr("DCGM_FI_")));
  Read r = Drain(std::move(f->source));
  ASSERT_TRUE(r.status.ok());
  ASSERT_EQ(r.samples.size(), 2u * 61);
  EXPECT_DOUBLE_EQ(*r.samples[0].power_w + *r.samples[1].power_w, 100 + 101) << "mW -> W";

  EXPECT_THAT(VendorMetricRegex("amd"), HasSubstr("gpu_power_usage|gpu_gfx_activity"));
  q.vendor = "intel";
  auto bad = FetchDcgmRange(prom, q);
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("--prometheus-vendor 'intel'"));
}

TEST(PromClient, ExplicitStepAndTheServersErrorWords) {
  ScriptedProm prom;
  PromRangeQuery q;
  q.start_ms = prom.first_ms;
  q.end_ms = prom.first_ms + 60000;
  q.step_ms = 15000;
  auto f = FetchDcgmRange(prom, q);
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ(Drain(std::move(f->source)).samples.size(), 2u * 5);
  EXPECT_EQ(prom.paths, (std::vector<std::string>{"/api/v1/query_range"}));

  q.max_points_per_series = 20000;  // past the server's limit: its own message comes back
  q.end_ms = prom.first_ms + 12000 * 1000;
  q.step_ms = 1000;
  auto e = FetchDcgmRange(prom, q);
  ASSERT_FALSE(e.ok());
  EXPECT_THAT(e.status().message(), HasSubstr("HTTP 400, bad_data"));
  EXPECT_THAT(e.status().message(), HasSubstr("11,000 points"));
}

TEST(PromClient, NoSeriesNamesTheSelectorAndWhatTheServerHas) {
  ScriptedProm prom;
  prom.empty = true;
  PromRangeQuery q;
  q.start_ms = prom.first_ms;
  q.end_ms = prom.first_ms + 60000;
  q.selector = R"({Hostname="nope"})";
  auto f = FetchDcgmRange(prom, q);
  ASSERT_FALSE(f.ok());
  EXPECT_THAT(f.status().message(), HasSubstr(R"(no DCGM series matched)"));
  EXPECT_THAT(f.status().message(), HasSubstr(R"(Hostname="nope")"));
  EXPECT_THAT(f.status().message(), HasSubstr("DCGM_FI_DEV_GPU_TEMP"));
  EXPECT_THAT(f.status().message(), HasSubstr("http://prom.test:9090"));

  q.selector = "job=x";
  EXPECT_THAT(FetchDcgmRange(prom, q).status().message(), HasSubstr("in braces"));
}

TEST(PromClient, TimesAndDurations) {
  EXPECT_EQ(*ParsePromTimeMs("1700000000"), 1700000000000);
  EXPECT_EQ(*ParsePromTimeMs("1700000000.25"), 1700000000250);
  EXPECT_EQ(*ParsePromTimeMs("2023-11-14T22:13:20Z"), 1700000000000);
  EXPECT_EQ(*ParsePromTimeMs("2023-11-15T00:13:20+02:00"), 1700000000000);
  EXPECT_FALSE(ParsePromTimeMs("yesterday").ok());
  EXPECT_EQ(*ParsePromDurationMs("15s"), 15000);
  EXPECT_EQ(*ParsePromDurationMs("1m30s"), 90000);
  EXPECT_EQ(*ParsePromDurationMs("500ms"), 500);
  EXPECT_EQ(*ParsePromDurationMs("2h"), 7200000);
  EXPECT_EQ(*ParsePromDurationMs("0.5"), 500);
  EXPECT_FALSE(ParsePromDurationMs("5x").ok());
  EXPECT_FALSE(ParsePromDurationMs("").ok());
}

// The real transport: cpp-httplib on 127.0.0.1:0 wants a bearer token.
TEST(PromClient, RealHttpHeadersTokenFileAndUnreachable) {
  httplib::Server server;
  std::string seen_auth;
  server.Get(
      "/prefix/api/v1/query_range", [&](const httplib::Request& req, httplib::Response& res) {
        seen_auth = req.get_header_value("Authorization");
        if (seen_auth != "Bearer s3cret") {
          res.status = 401;
          res.set_content(R"({"status":"error","errorType":"unauthorized","error":"bad token"})",
                          "application/json");
          return;
        }
        res.set_content(Matrix({Series("DCGM_FI_DEV_POWER_USAGE", R"("gpu":"0","Hostname":"h")",
                                       {{1700000000, "99"}, {1700000015, "98"}})}),
                        "application/json");
      });
  const int port = server.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  std::thread t([&] { server.listen_after_bind(); });
  const std::string url = fmt::format("http://127.0.0.1:{}/prefix", port);
  PromRangeQuery q;
  q.start_ms = 1700000000000;
  q.end_ms = 1700000015000;
  q.step_ms = 15000;

  auto bare = MakePromHttp(url, {});
  ASSERT_TRUE(bare.ok());
  auto refused = FetchDcgmRange(**bare, q);
  EXPECT_THAT(refused.status().message(), HasSubstr("HTTP 401, unauthorized): bad token"));

  TempDir dir;
  WriteFile(dir.path() + "/token", "s3cret\n");
  PromHttpOptions ho;
  ASSERT_TRUE(ReadTokenFile(dir.path() + "/token", &ho.headers).ok());
  auto authed = MakePromHttp(url, ho);
  ASSERT_TRUE(authed.ok());
  auto f = FetchDcgmRange(**authed, q);
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ(Drain(std::move(f->source)).samples.size(), 2u);

  PromHttpOptions h2;
  ASSERT_TRUE(ParseHeaderFlag("Authorization: Bearer s3cret", &h2.headers).ok());
  EXPECT_FALSE(ParseHeaderFlag("no colon", &h2.headers).ok());
  auto f2 = FetchDcgmRange(**MakePromHttp(url, h2), q);
  EXPECT_TRUE(f2.ok()) << f2.status().message();
  server.stop();
  t.join();

  // Nobody listens there any more: the message names the URL and the error.
  auto gone = FetchDcgmRange(**MakePromHttp(url, {}), q);
  ASSERT_FALSE(gone.ok());
  EXPECT_THAT(gone.status().message(), HasSubstr("cannot reach Prometheus at " + url));
  EXPECT_FALSE(MakePromHttp("prom:9090", {}).ok());
}

// `--source dcgm-exporter:URL`: a real cpp-httplib exporter stand-in on 127.0.0.1:0.
TEST(DcgmExporterLive, ScrapesDecodesAndGoesStaleWhenTheExporterStops) {
  httplib::Server server;
  server.set_keep_alive_max_count(1);  // stop() returns at once, not after keep-alive
  int scrapes = 0;
  server.Get("/metrics", [&](const httplib::Request&, httplib::Response& res) {
    ++scrapes;
    res.set_content(
        fmt::format("# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).\n"
                    "# TYPE DCGM_FI_DEV_POWER_USAGE gauge\n"
                    "DCGM_FI_DEV_POWER_USAGE{{gpu=\"0\",UUID=\"GPU-a\",Hostname=\"n7\","
                    "modelName=\"NVIDIA A100-SXM4-80GB\"}} {}\n"
                    "DCGM_FI_DEV_POWER_USAGE{{gpu=\"1\",UUID=\"GPU-b\",Hostname=\"n7\"}} 80\n"
                    "DCGM_FI_DEV_GPU_UTIL{{gpu=\"0\",UUID=\"GPU-a\",Hostname=\"n7\"}} 97\n",
                    300 + scrapes),
        "text/plain");
  });
  const int port = server.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  std::thread t([&] { server.listen_after_bind(); });
  ManualClock clock(1700000000000);
  DcgmExporterLiveOptions o;
  o.url = fmt::format("http://127.0.0.1:{}", port);  // /metrics by default
  o.clock = &clock;
  o.call_deadline_ms = 300;
  auto src = OpenDcgmExporterLive(o);
  ASSERT_TRUE(src.ok()) << src.status().message();
  EXPECT_EQ((*src)->hosts(), (std::vector<std::string>{"n7"}));
  std::vector<GpuSample> batch;
  ASSERT_TRUE((*src)->Next(&batch).ok());
  ASSERT_EQ(batch.size(), 2u);
  EXPECT_EQ(batch[0].timestamp_ms, 1700000000000);
  EXPECT_EQ(batch[0].power_w, 302);  // the second scrape (the first was at open)
  EXPECT_EQ(batch[0].util_gpu_pct, 97);
  EXPECT_EQ(batch[1].power_w, 80);
  EXPECT_EQ((*src)->gpus()[0].name, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ((*src)->health().samples_stale, 0u);
  EXPECT_EQ((*src)->health().last_success_unix_ms, 1700000000000);

  server.stop();
  t.join();
  clock.AdvanceNs(1000000000);
  batch.clear();
  ASSERT_TRUE((*src)->Next(&batch).ok());  // a live source never ends: stale samples
  ASSERT_EQ(batch.size(), 2u);
  EXPECT_EQ(batch[0].timestamp_ms, 1700000001000);
  EXPECT_FALSE(batch[0].power_w.has_value());
  EXPECT_EQ((*src)->health().samples_stale, 2u);
  EXPECT_EQ((*src)->health().last_success_unix_ms, 1700000000000);
  std::string w;
  for (const auto& s : (*src)->warnings()) w += s;
  EXPECT_THAT(w, HasSubstr("stopped answering"));
  EXPECT_THAT(w, HasSubstr(o.url));

  // Nobody there at open: kUnavailable naming the URL.
  auto none = OpenDcgmExporterLive(o);
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(none.status().message(), HasSubstr("dcgm-exporter at " + o.url));
  o.url = "localhost:9400";
  EXPECT_EQ(OpenDcgmExporterLive(o).status().code(), StatusCode::kInvalidInput);
}

}  // namespace prom_json_test
}  // namespace ww
