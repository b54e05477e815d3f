// The golden /metrics of a replayed trace, compared the node_exporter way
// (prometheus/node_exporter end-to-end-test.sh): the real wattwatch binary replays a committed
// fixture, /metrics is fetched at a fixed point, the lines that legitimately vary from run to run
// are dropped, and what is left must equal the committed golden file byte for byte.
//
//   fixture  tests/data/golden/watch_replay/node0.csv  (`wattwatch simulate hang-spin`, see README
//            there: a job that trains, then spins in a collective until killed)
//   golden   tests/data/golden/watch_replay.metrics
//   run      wattwatch watch --source replay:FIXTURE --speed 100000 --linger --job-id golden
//            --listen 127.0.0.1:0 --ready-file ADDR   (ADDR gets the bound HOST:PORT)
//   point    /state says "source_ended": true; with --linger the watcher keeps serving the final
//            metrics, which no longer change except for the dropped lines
//   dropped  the timing self-metrics' buckets and sums (wattwatch_sample_duration_seconds,
//            wattwatch_tick_lateness_seconds; their _count stays: one per read, one per tick),
//            wattwatch_last_sample_timestamp_seconds (wall time) and wattwatch_build_info
//            (the version)
//
// To regenerate after an intended change of the exposition or of the engine:
//   WW_UPDATE_GOLDEN=1 build/asan/tests/export/export_tests --gtest_filter='GoldenMetrics*'
// then review `git diff tests/data/golden/` and commit it with the change.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "support/support.h"

namespace ww::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const std::string kFixture = SourceDir() + "/tests/data/golden/watch_replay/node0.csv";
const std::string kGolden = SourceDir() + "/tests/data/golden/watch_replay.metrics";

// The sample lines that differ between two runs of the same replay.
bool VariesBetweenRuns(const std::string& line) {
  for (const char* prefix :
       {"wattwatch_sample_duration_seconds_bucket{", "wattwatch_sample_duration_seconds_sum{",
        "wattwatch_tick_lateness_seconds_bucket{", "wattwatch_tick_lateness_seconds_sum{",
        "wattwatch_last_sample_timestamp_seconds{", "wattwatch_build_info{"}) {
    if (line.rfind(prefix, 0) == 0) return true;
  }
  return false;
}

std::string Stable(const std::string& metrics) {
  std::string out;
  for (const std::string& line : Lines(metrics)) {
    if (!VariesBetweenRuns(line)) out += line + "\n";
  }
  return out;
}

// The watcher process: SIGKILLed and reaped if a test leaves without stopping it.
class Child {
 public:
  explicit Child(const std::vector<std::string>& args, const std::string& log_path) {
    pid_ = fork();
    if (pid_ == 0) {
      if (std::freopen(log_path.c_str(), "w", stdout) == nullptr) _exit(126);
      dup2(fileno(stdout), STDERR_FILENO);
      std::vector<char*> argv;
      for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
      argv.push_back(nullptr);
      execv(argv[0], argv.data());
      _exit(127);
    }
  }
  ~Child() {
    if (pid_ > 0) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
  }
  // SIGTERM, then the exit code (-1 when it died of a signal).
  int Stop() {
    kill(pid_, SIGTERM);
    int status = 0;
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }
  bool Running() const { return pid_ > 0 && waitpid(pid_, nullptr, WNOHANG) == 0; }

 private:
  pid_t pid_ = -1;
};

TEST(GoldenMetrics, ReplayedTraceMatchesTheGoldenFile) {
  ASSERT_TRUE(std::filesystem::exists(kFixture)) << kFixture;
  TempDir dir;
  const std::string addr_file = dir / "addr", log = dir / "watch.log";
  Child watcher({WattwatchBinary(), "watch", "--source", "replay:" + kFixture, "--speed", "100000",
                 "--linger", "--job-id", "golden", "--listen", "127.0.0.1:0", "--ready-file",
                 addr_file, "--log-level", "warn"},
                log);

  // The bound address, once /metrics serves (the file is renamed into place whole).
  std::string addr;
  for (int i = 0; i < 3000 && addr.empty() && watcher.Running(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (std::filesystem::exists(addr_file)) addr = Lines(ReadFile(addr_file)).at(0);
  }
  ASSERT_FALSE(addr.empty()) << "no --ready-file; the watcher said:\n" << ReadFile(log);

  httplib::Client client("http://" + addr);
  client.set_read_timeout(10);
  bool ended = false;
  for (int i = 0; i < 6000 && !ended; ++i) {
    auto state = client.Get("/state");
    ASSERT_TRUE(state) << httplib::to_string(state.error()) << "\n" << ReadFile(log);
    ended = nlohmann::json::parse(state->body).value("source_ended", false);
    if (!ended) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(ended) << "the replay did not end within 60 s";
  auto metrics = client.Get("/metrics");
  ASSERT_TRUE(metrics);
  ASSERT_EQ(metrics->status, 200);
  EXPECT_EQ(watcher.Stop(), 0) << ReadFile(log);

  // The dropped lines are there to drop: the filter hides values, never missing metrics.
  for (const char* family :
       {"wattwatch_sample_duration_seconds_bucket{", "wattwatch_tick_lateness_seconds_sum{",
        "wattwatch_last_sample_timestamp_seconds{", "wattwatch_build_info{"}) {
    EXPECT_THAT(metrics->body, HasSubstr(family));
  }
  // promtool reads the whole exposition without findings.
  WriteFile(dir / "metrics.prom", metrics->body);
  const auto lint = RunCapture("promtool check metrics < " + (dir / "metrics.prom"));
  EXPECT_EQ(lint.exit_code, 0) << lint.output;
  EXPECT_EQ(lint.output, "");

  const std::string actual = Stable(metrics->body);
  // The fixture's hang must be in what is compared, or the golden would prove little.
  EXPECT_THAT(actual, HasSubstr("wattwatch_gpu_state{host=\"node0\",job_id=\"golden\""));
  EXPECT_THAT(actual, Not(HasSubstr("wattwatch_wasted_gpu_seconds_total{host=\"node0\","
                                    "job_id=\"golden\"} 0\n")));

  const char* update = std::getenv("WW_UPDATE_GOLDEN");
  if (update != nullptr && std::string(update) == "1") {
    WriteFile(kGolden, actual);
    std::cout << "WW_UPDATE_GOLDEN=1: wrote " << kGolden << "; review and commit it\n";
    return;
  }
  ASSERT_TRUE(std::filesystem::exists(kGolden))
      << kGolden << " is missing: run with WW_UPDATE_GOLDEN=1 to create it";
  const std::string golden = ReadFile(kGolden);
  if (actual != golden) {
    WriteFile(dir / "actual.metrics", actual);
    const auto diff = RunCapture("diff -u " + kGolden + " " + (dir / "actual.metrics"));
    ADD_FAILURE() << "/metrics differs from the golden file (WW_UPDATE_GOLDEN=1 regenerates it "
                     "when the change is intended):\n"
                  << diff.output;
  }
}

}  // namespace
}  // namespace ww::testing
