// One verdict (issue 28): the same samples given to the three real services, `triage --json` on
// a CSV, `watch --source replay:` of that CSV (its /state) and `fleet` against a stand-in
// Prometheus that holds them (its /jobs), all on 127.0.0.1 with ports the kernel picks. The three
// must agree whether the job is hung, and on which GPUs; a log too short to confirm a hang is no
// hang to any of them (triage says why: unknown or suspected, never none).
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <thread>

#include "support/support.h"

namespace ww::verdict_agreement {
namespace {

using nlohmann::json;

constexpr int kGpus = 4;
constexpr const char* kHost = "node-a";
constexpr const char* kBoard = "NVIDIA H100 80GB HBM3";

// One GPU's reading at one second of the job.
struct Reading {
  double power_w;
  double util_pct;
  double mem_mib;
};
// second, gpu -> reading; nullopt: the trace has ended.
using Trace = std::function<std::optional<Reading>(int second, int gpu)>;

Reading Training(int s, int g) { return {560.0 + 40 * ((s + g) % 3), 100, 70000}; }
Reading Spinning() { return {146, 100, 70000}; }  // pegged utilization at a wait's power

// The trace as nvidia-smi writes it, every GPU stamped at the same second from t0_s.
std::string Csv(const Trace& trace, int64_t t0_s) {
  std::string out =
      "timestamp, index, name, power.draw [W], utilization.gpu [%], memory.used [MiB]\n";
  for (int s = 0;; ++s) {
    if (!trace(s, 0)) return out;
    const time_t t = static_cast<time_t>(t0_s + s);
    tm utc{};
    gmtime_r(&t, &utc);
    char stamp[32];
    strftime(stamp, sizeof stamp, "%Y/%m/%d %H:%M:%S.000", &utc);
    for (int g = 0; g < kGpus; ++g) {
      const Reading r = *trace(s, g);
      out += fmt::format("{}, {}, {}, {:.2f} W, {:.0f} %, {:.0f} MiB\n", stamp, g, kBoard,
                         r.power_w, r.util_pct, r.mem_mib);
    }
  }
}

// Prometheus holding the trace as dcgm-exporter's series (hpc_job="job-1"), ending when it
// starts: the fleet started after it reads the whole job at once, as history.
class TracePrometheus {
 public:
  explicit TracePrometheus(Trace trace) : trace_(std::move(trace)) {
    while (trace_(seconds_, 0)) ++seconds_;
    const auto now = std::chrono::system_clock::now().time_since_epoch();
    first_s_ = std::chrono::duration_cast<std::chrono::seconds>(now).count() - (seconds_ - 1);
    server_.Get("/api/v1/query", [this](const httplib::Request& req, httplib::Response& res) {
      res.set_content(Answer(req.get_param_value("query"), std::stod(req.get_param_value("time"))),
                      "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~TracePrometheus() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return fmt::format("http://127.0.0.1:{}", port_); }

 private:
  std::string Answer(const std::string& query, double time_s) {
    const std::string ok = R"({"status":"success","data":{"resultType":)";
    if (query.rfind("group by", 0) == 0) {
      return ok +
             fmt::format(
                 R"("vector","result":[{{"metric":{{"Hostname":"{}"}},"value":[{},"1"]}}]}}}})",
                 kHost, time_s);
    }
    const size_t at = query.rfind('[');
    const double range_s = at == std::string::npos ? 0 : std::stod(query.substr(at + 1)) / 1000;
    std::string series;
    for (int g = 0; g < kGpus; ++g) {
      for (const char* metric : {"POWER_USAGE", "GPU_UTIL", "FB_USED"}) {
        std::string points;
        for (int s = 0; s < seconds_; ++s) {
          const int64_t ts = first_s_ + s;
          if (ts <= time_s - range_s || ts > time_s) continue;
          const Reading r = *trace_(s, g);
          const double v = metric[0] == 'P' ? r.power_w : metric[0] == 'G' ? r.util_pct : r.mem_mib;
          points += fmt::format(R"({}[{},"{}"])", points.empty() ? "" : ",", ts, v);
        }
        if (points.empty()) continue;
        series += fmt::format(
            R"({}{{"metric":{{"__name__":"DCGM_FI_DEV_{}","gpu":"{}","UUID":"GPU-{}","Hostname":"{}",)"
            R"("hpc_job":"job-1","modelName":"{}"}},"values":[{}]}})",
            series.empty() ? "" : ",", metric, g, g, kHost, kBoard, points);
      }
    }
    return ok + R"("matrix","result":[)" + series + "]}}";
  }

  Trace trace_;
  int seconds_ = 0;
  int64_t first_s_ = 0;
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
};

// A wattwatch service in the background (output to files in dir), stopped with SIGTERM.
class Service {
 public:
  Service(const std::filesystem::path& dir, std::vector<std::string> args) {
    ready_ = dir / (args[0] + ".addr");
    args.insert(args.end(), {"--listen", "127.0.0.1:0", "--ready-file", ready_.string()});
    pid_ = fork();
    if (pid_ == 0) {
      const int out = open((dir / (args[0] + ".log")).c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(out, 1);
      dup2(out, 2);
      std::vector<char*> argv = {const_cast<char*>(WW_BINARY)};
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(WW_BINARY, argv.data());
      _exit(127);
    }
  }
  ~Service() {
    kill(pid_, SIGTERM);
    int status = 0;
    waitpid(pid_, &status, 0);
  }
  // GET path, again every 50 ms until done(answer) or 60 s have passed; the last answer.
  json Poll(const std::string& path, const std::function<bool(const json&)>& done) {
    json last;
    for (int i = 0; i < 1200; ++i) {
      std::string addr;
      std::ifstream(ready_) >> addr;
      if (!addr.empty()) {
        httplib::Client c("http://" + addr);
        if (auto r = c.Get(path); r && r->status == 200) {
          last = json::parse(r->body, nullptr, false);
          if (done(last)) return last;
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return last;
  }

 private:
  std::filesystem::path ready_;
  pid_t pid_ = -1;
};

// What each service says of one trace: hung or not, and the GPUs of the hang ("GPU0", ...).
struct Said {
  std::string verdict;  // triage: hang_verdict; fleet: the job's verdict; watch: hang or none
  bool hung = false;
  std::set<std::string> gpus;
};

std::set<std::string> GpuSuffixes(const json& names) {
  std::set<std::string> out;
  for (const auto& n : names) {
    const std::string s = n.is_string() ? n.get<std::string>() : "GPU" + n["gpu"].dump();
    out.insert(s.substr(s.rfind('/') + 1));
  }
  return out;
}

class VerdictAgreement : public ::testing::Test {
 protected:
  static constexpr int64_t kT0S = 1780000000;

  Said Triage(const std::string& csv) {
    const auto r = ww::testing::RunWattwatch("triage --json " + csv, false);
    const json j = json::parse(r.output, nullptr, false);
    Said s;
    s.verdict = j.value("hang_verdict", "?");
    s.hung = s.verdict == "confirmed";
    for (const auto& e : j["hang_episodes"]) s.gpus.merge(GpuSuffixes(e["gpus"]));
    return s;
  }
  Said Watch(const std::string& csv) {
    // At 20x: a hang holds /state for seconds. Read while the replay runs: at its end the engine
    // finishes, and a hang still open is closed (ongoing), no longer in /state.
    Service watch(dir_.path(), {"watch", "--source", "replay:" + csv, "--speed", "20", "--linger",
                                "--no-evidence", "--log-level", "warn"});
    const json state = watch.Poll("/state", [](const json& j) {
      return (j.contains("hang") && j["hang"].is_object()) || j.value("source_ended", false);
    });
    Said s;
    s.hung = state.contains("hang") && state["hang"].is_object();
    s.verdict = s.hung ? "hang" : "none";
    if (s.hung) s.gpus = GpuSuffixes(state["hang"]["gpus"]);
    return s;
  }
  Said Fleet(const Trace& trace) {
    TracePrometheus prometheus(trace);
    Service fleet(dir_.path(), {"fleet", "--prometheus", prometheus.url(), "--lookback-s", "3600",
                                "--interval-s", "1", "--log-level", "warn"});
    const json jobs = fleet.Poll("/jobs", [](const json& j) {
      return j.contains("jobs") && j["jobs"].size() == 1 && j["jobs"][0].value("samples", 0) > 0;
    });
    Said s;
    if (!jobs.contains("jobs") || jobs["jobs"].size() != 1) {
      s.verdict = "no job: " + jobs.dump();
      return s;
    }
    const json& job = jobs["jobs"][0];
    s.verdict = job.value("verdict", "?");
    s.hung = s.verdict == "hang";
    if (job["hang"].is_object()) s.gpus = GpuSuffixes(job["hang"]["gpus"]);
    return s;
  }
  void Agree(const std::string& name, const Trace& trace, bool hung) {
    const std::string csv = dir_.Write(name + ".csv", Csv(trace, kT0S));
    const Said t = Triage(csv), w = Watch(csv), f = Fleet(trace);
    EXPECT_EQ(t.hung, hung) << name << ": triage says " << t.verdict;
    EXPECT_EQ(w.hung, hung) << name << ": watch says " << w.verdict;
    EXPECT_EQ(f.hung, hung) << name << ": fleet says " << f.verdict;
    EXPECT_EQ(t.gpus, w.gpus) << name << ": the GPUs of the hang, triage and watch";
    EXPECT_EQ(t.gpus, f.gpus) << name << ": the GPUs of the hang, triage and fleet";
    if (!hung) {
      EXPECT_NE(t.verdict, "confirmed") << name;
    }
    verdicts_.push_back(t.verdict);
  }

  ww::testing::TempDir dir_;
  std::vector<std::string> verdicts_;
};

TEST_F(VerdictAgreement, TriageFleetAndWatchAgreeOnTheSameSamples) {
  // 90 s of training, then every rank spins to the end: a hang of every GPU.
  Agree(
      "hang",
      [](int s, int g) -> std::optional<Reading> {
        if (s >= 180) return std::nullopt;
        return s < 90 ? Training(s, g) : Spinning();
      },
      true);
  // Three minutes of training: no hang.
  Agree(
      "healthy",
      [](int s, int g) -> std::optional<Reading> {
        if (s >= 180) return std::nullopt;
        return Training(s, g);
      },
      false);
  // Ten seconds of every rank spinning: too short to confirm (one snapshot suspects it).
  Agree(
      "too-short",
      [](int s, int g) -> std::optional<Reading> {
        if (s >= 10) return std::nullopt;
        return Spinning();
      },
      false);
  EXPECT_EQ(verdicts_, (std::vector<std::string>{"confirmed", "none", "suspected"}));
}

}  // namespace
}  // namespace ww::verdict_agreement
