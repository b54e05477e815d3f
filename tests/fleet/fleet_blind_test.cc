// `wattwatch fleet` where it used to go blind (issue 31), through the binary against a stand-in
// Prometheus on 127.0.0.1:0: a fleet over 4096 hosts, answers that decode to nothing, a sample
// stamped 50 years ahead, and a replay against a dead Prometheus.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <cmath>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "support/support.h"

namespace ww::fleet {
namespace {

using ww::testing::RunWattwatch;
using ww::testing::TempDir;

constexpr int64_t kT0S = 1780000000;  // 2026-05-28T20:26:40Z
constexpr int64_t kStepS = 5;
constexpr int64_t kSamples = 61;     // 0..300 s
constexpr int64_t kHangFromS = 120;  // every GPU spins from here on: a hang

// A Prometheus over `hosts` hosts of one H100 each, two hosts per job (hpc_job), that trains
// for two minutes and then hangs (utilization pegged at a spin's power). It answers the fleet's
// instant queries of range vectors: the host listing (`group by`) and the data, all hosts or
// those a `Hostname=~"a|b"` matcher names.
class StandInPrometheus {
 public:
  explicit StandInPrometheus(int hosts) {
    for (int i = 0; i < hosts; ++i) hosts_.push_back(fmt::format("node-{:05d}", i));
    server_.Get("/api/v1/query", [this](const httplib::Request& req, httplib::Response& res) {
      res.set_content(Answer(req.get_param_value("query"), req.get_param_value("time")),
                      "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~StandInPrometheus() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return fmt::format("http://127.0.0.1:{}", port_); }

  // How the data answers are broken.
  std::atomic<bool> string_timestamps{false};
  std::atomic<bool> vector_answer{false};
  // A sample of job-0 (node-00000 and node-00001) stamped 50 years ahead, in every answer.
  std::atomic<bool> future_sample{false};
  std::atomic<int> listings{0}, data_requests{0};
  std::atomic<size_t> most_hosts_in_one_answer{0};

 private:
  std::string Answer(const std::string& query, const std::string& time) {
    const double t_s = std::stod(time);
    // By hand, not std::regex: its recursion per character does not suit a 6 KB host list.
    int64_t range_ms = 0;
    if (size_t at = query.rfind('['); at != std::string::npos) {
      range_ms = std::stoll(query.substr(at + 1));
    }
    const int64_t end_ms = std::llround(t_s * 1000);
    const int64_t begin_ms = end_ms - range_ms;
    if (query.rfind("group by", 0) == 0) {
      ++listings;
      std::string out = R"({"status":"success","data":{"resultType":"vector","result":[)";
      for (size_t i = 0; i < hosts_.size(); ++i) {
        out += fmt::format(R"({}{{"metric":{{"Hostname":"{}"}},"value":[{},"1"]}})", i ? "," : "",
                           hosts_[i], time);
      }
      return out + "]}}";
    }
    ++data_requests;
    std::set<std::string> wanted;
    const std::string key = "Hostname=~\"";
    if (size_t at = query.find(key); at != std::string::npos) {
      at += key.size();
      const std::string list = query.substr(at, query.find('"', at) - at);
      for (size_t from = 0; from <= list.size();) {
        const size_t bar = std::min(list.find('|', from), list.size());
        wanted.insert(list.substr(from, bar - from));
        from = bar + 1;
      }
    }
    std::string out = fmt::format(R"({{"status":"success","data":{{"resultType":"{}","result":[)",
                                  vector_answer ? "vector" : "matrix");
    bool first_series = true;
    size_t hosts_in_answer = 0;
    for (size_t h = 0; h < hosts_.size(); ++h) {
      if (!wanted.empty() && !wanted.count(hosts_[h])) continue;
      ++hosts_in_answer;
      for (const char* metric : {"DEV_POWER_USAGE", "DEV_GPU_UTIL", "DEV_FB_USED"}) {
        std::string points;
        for (int64_t k = 0; k < kSamples; ++k) {
          const int64_t ts_s = kT0S + k * kStepS;
          if (ts_s * 1000 <= begin_ms || ts_s * 1000 > end_ms) continue;
          const bool hung = k * kStepS >= kHangFromS;
          double v = 0;
          if (std::string_view(metric) == "DEV_POWER_USAGE") {
            v = hung ? 146 : 560 + 40 * ((k + static_cast<int64_t>(h)) % 3);
          } else if (std::string_view(metric) == "DEV_GPU_UTIL") {
            v = 100;
          } else {
            v = 70000;
          }
          if (!points.empty()) points += ",";
          if (vector_answer) {
            points = fmt::format(R"([{},"{}"])", ts_s, v);
          } else {
            points += string_timestamps ? fmt::format(R"(["{}","{}"])", ts_s, v)
                                        : fmt::format(R"([{},"{}"])", ts_s, v);
          }
        }
        if (h < 2 && future_sample && std::string_view(metric) == "DEV_POWER_USAGE" &&
            !points.empty()) {
          points += fmt::format(R"(,[{},"560"])", kT0S + 50LL * 365 * 86400);
        }
        if (points.empty()) continue;
        out += fmt::format(
            R"({}{{"metric":{{"__name__":"DCGM_FI_{}","gpu":"0","UUID":"GPU-{}","Hostname":"{}",)"
            R"("hpc_job":"job-{}","modelName":"NVIDIA H100 80GB HBM3"}},"{}":{}}})",
            first_series ? "" : ",", metric, h, hosts_[h], h / 2,
            vector_answer ? "value" : "values", vector_answer ? points : "[" + points + "]");
        first_series = false;
      }
    }
    size_t seen = most_hosts_in_one_answer;
    while (hosts_in_answer > seen &&
           !most_hosts_in_one_answer.compare_exchange_weak(seen, hosts_in_answer)) {
    }
    return out + "]}}";
  }

  std::vector<std::string> hosts_;
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
};

struct Replay {
  int exit_code = -1;
  std::string output;
  int jobs_closed = 0;  // jobs found (each closes at the replay's end)
  int hangs_confirmed = 0;
  std::set<std::string> hung_jobs;
  double seconds = 0;
};

// `fleet --start T0+60s --end T0+300s` over the stand-in, one cycle a minute.
Replay RunReplayExit(const std::string& url, const std::string& extra = "") {
  TempDir dir;
  const std::string events = dir / "events.jsonl";
  const auto t0 = std::chrono::steady_clock::now();
  auto r = RunWattwatch(
      fmt::format("fleet --prometheus {} --start {} --end {} --lookback-s 60 --interval-s 60 "
                  "--hang-confirm-s 60 --listen none --retries 0 --log-level warn --events {} {}",
                  url, kT0S + 60, kT0S + 300, events, extra));
  Replay out;
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  out.exit_code = r.exit_code;
  out.output = r.output;
  for (const auto& line : ww::testing::Lines(ww::testing::ReadFile(events))) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object()) continue;
    const std::string e = j.value("event", "");
    if (e == "job_closed") ++out.jobs_closed;
    if (e == "hang_confirmed") {
      ++out.hangs_confirmed;
      out.hung_jobs.insert(j.value("job_id", ""));
    }
  }
  return out;
}

// Before: the decoder refused the one answer of 4100 hosts, fleet logged nothing and counted
// the cycles a success: 0 jobs, exit 0. Now the hosts are listed and read in pages of at most
// 500: every job is judged and every hang confirmed.
TEST(FleetBlind, MoreThan4096HostsAreReadInPagesAndEveryHangIsFound) {
  StandInPrometheus prom(4100);
  const Replay r = RunReplayExit(prom.url(), "--json");
  EXPECT_EQ(r.exit_code, 0) << r.output.substr(0, 4000);
  EXPECT_EQ(r.jobs_closed, 2050) << r.output.substr(0, 4000);
  EXPECT_EQ(r.hangs_confirmed, 2050) << r.output.substr(0, 4000);
  EXPECT_GT(prom.listings.load(), 0);
  EXPECT_LE(prom.most_hosts_in_one_answer.load(), 500u);
  EXPECT_NE(r.output.find("\"up\": true"), std::string::npos);
  std::printf("4100 hosts: exit %d, %d jobs, %d hangs confirmed, %d pages, %.1f s\n", r.exit_code,
              r.jobs_closed, r.hangs_confirmed, prom.data_requests.load(), r.seconds);
}

// An answer that decodes to nothing is an error: counted, exported, logged, and a replay of it
// exits 2. Before: 0 jobs, exit 0, not a word.
TEST(FleetBlind, AnAnswerThatDecodesToNothingIsAnErrorNotAQuietSuccess) {
  for (const char* how : {"string timestamps", "vector"}) {
    StandInPrometheus prom(4);
    (std::string_view(how) == "vector" ? prom.vector_answer : prom.string_timestamps) = true;
    const Replay r = RunReplayExit(prom.url(), "--json");
    EXPECT_EQ(r.exit_code, 2) << how << "\n" << r.output.substr(0, 3000);
    EXPECT_NE(r.output.find("unusable answer"), std::string::npos) << how << "\n" << r.output;
    EXPECT_NE(r.output.find("\"unusable_answers\": 5"), std::string::npos)
        << how << "\n"
        << r.output.substr(0, 3000);
    EXPECT_NE(r.output.find("replay incomplete: 5 of 5 cycles failed"), std::string::npos)
        << how << "\n"
        << r.output.substr(0, 3000);
    std::printf("%s: exit %d, %d jobs\n", how, r.exit_code, r.jobs_closed);
  }
}

// One sample stamped 50 years ahead made its GPU's every later sample "old": the job's hang
// was never confirmed. It is dropped, counted and logged.
TEST(FleetBlind, ASampleStampedFarAheadIsDroppedNotBlinding) {
  StandInPrometheus prom(4);
  prom.future_sample = true;
  const Replay r = RunReplayExit(prom.url(), "--json");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.hangs_confirmed, 2) << r.output;
  EXPECT_TRUE(r.hung_jobs.count("job-0")) << r.output;
  EXPECT_NE(r.output.find("stamped outside the range asked for"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\"samples_out_of_range\": "), std::string::npos) << r.output;
  std::printf("future sample: exit %d, %d hangs confirmed\n", r.exit_code, r.hangs_confirmed);
}

// A replay against a dead Prometheus read nothing and exited 0 with `jobs: []`, a report that
// reads "no hangs". It exits 2 saying how many cycles failed.
TEST(FleetBlind, AReplayWithFailedCyclesExits2AndSaysHowMany) {
  const int port = ww::testing::FreePort();
  ASSERT_GT(port, 0);
  const Replay r = RunReplayExit(fmt::format("http://127.0.0.1:{}", port), "--json");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("replay incomplete: 5 of 5 cycles failed"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("\"cycles_failed\": 5"), std::string::npos) << r.output;
}

// __name__ names a series, never a job: it used to leave every GPU unattributed, silently.
TEST(FleetBlind, ReservedJobLabelIsRefused) {
  auto r = RunWattwatch(
      "fleet --prometheus http://127.0.0.1:9 --listen none --once --retries 0 --job-label "
      "__name__");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("'__name__' is a reserved Prometheus label"), std::string::npos)
      << r.output;
}

}  // namespace
}  // namespace ww::fleet
