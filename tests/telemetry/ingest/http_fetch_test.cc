// The HTTP clients against hostile servers on 127.0.0.1 (issue 31, items 5, 12 and 15): a total
// deadline holds against a server sending one byte a second, the body cap (256 MiB, counted after
// decompression) against a 1.5 GB body, an endless chunked body and a gzip bomb; a fractional
// --step reaches Prometheus in a form it accepts; a Prometheus error's newlines and terminal
// escapes are escaped before they are printed. Through the binary where the issue is about it
// (fleet, triage --prometheus), with time, peak RSS (/usr/bin/time) and exit code printed.
#include "telemetry/ingest/http_fetch.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "evidence/stand_ins.h"
#include "support/support.h"
#include "telemetry/ingest/prom_client.h"

namespace ww::ingest {
namespace {

using ww::evidence::testing::Child;
using ww::evidence::testing::WaitForFile;
using ww::testing::ReadFile;
using ww::testing::RunCapture;
using ww::testing::SourceDir;
using ww::testing::TempDir;
using ww::testing::WattwatchBinary;

class HostileServer {
 public:
  HostileServer(const TempDir& dir, const std::string& mode, std::vector<std::string> extra = {}) {
    const std::string port_file = dir.path() + "/" + mode + ".port";
    std::vector<std::string> argv = {
        "python3",     SourceDir() + "/tests/telemetry/hostile_http.py",
        "--port-file", port_file,
        "--mode",      mode};
    argv.insert(argv.end(), extra.begin(), extra.end());
    child_ = std::make_unique<Child>(argv);
    if (WaitForFile(port_file)) port_ = std::stoi(ReadFile(port_file));
  }
  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  std::unique_ptr<Child> child_;
  int port_ = 0;
};

struct TimedRun {
  int exit_code = -1;
  std::string output;
  double seconds = 0;
  long max_rss_kb = 0;
};

// The binary under `timeout`, so a run that never ends fails instead of hanging the suite.
TimedRun RunTimed(const std::string& args, int timeout_s) {
  const auto t0 = std::chrono::steady_clock::now();
  const auto r = RunCapture(fmt::format("timeout -s KILL {} /usr/bin/time -f 'maxrss_kb=%M' {} {}",
                                        timeout_s, WattwatchBinary(), args));
  TimedRun out;
  out.exit_code = r.exit_code;
  out.output = r.output;
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const size_t at = r.output.rfind("maxrss_kb=");
  if (at != std::string::npos) out.max_rss_kb = std::atol(r.output.c_str() + at + 10);
  return out;
}

const char* kRange = "--start 1700000000 --end 1700000060";

TEST(HttpFetch, TrickleIsCutAtTheTotalDeadline) {
  TempDir dir;
  HostileServer server(dir, "trickle");
  ASSERT_GT(server.port(), 0);
  httplib::Client client(server.url());
  client.set_read_timeout(std::chrono::seconds(5));  // each byte comes within it
  HttpFetchLimits limits;
  limits.total_timeout_ms = 1500;
  const auto t0 = std::chrono::steady_clock::now();
  Result<HttpFetched> r = BoundedGet(client, "/", {}, {}, limits, "trickle");
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kDeadlineExceeded) << r.status().message();
  EXPECT_LT(s, 3.0);

  const TimedRun f = RunTimed("fleet --prometheus " + server.url() +
                                  " --once --timeout-s 3 --retries 1 --retry-backoff-s 0.1 "
                                  "--listen none",
                              90);
  std::printf(
      "fleet --once --timeout-s 3 against a 1 byte/s server: exit %d in %.1f s, max RSS "
      "%ld KB\n",
      f.exit_code, f.seconds, f.max_rss_kb);
  EXPECT_EQ(f.exit_code, 2) << f.output;
  EXPECT_LT(f.seconds, 15.0) << f.output;  // two tries of 3 s, not one byte a second for ever
  EXPECT_NE(f.output.find("total deadline"), std::string::npos) << f.output;
}

TEST(HttpFetch, BodiesOverTheCapAreRefusedAfterDecompression) {
  for (const std::string mode : {"huge", "chunked", "gzip-bomb"}) {
    TempDir dir;
    HostileServer server(dir, mode, {"--inflated-mb", "400"});
    ASSERT_GT(server.port(), 0) << mode;
    const TimedRun r =
        RunTimed("triage --prometheus " + server.url() + " " + kRange + " --step 15s", 120);
    std::printf("triage --prometheus, %s body: exit %d in %.1f s, max RSS %ld KB\n", mode.c_str(),
                r.exit_code, r.seconds, r.max_rss_kb);
    EXPECT_EQ(r.exit_code, 2) << mode << "\n" << r.output;
    EXPECT_NE(r.output.find("over 256 MiB"), std::string::npos) << mode << "\n" << r.output;
    EXPECT_GT(r.max_rss_kb, 0) << r.output;
    EXPECT_LT(r.max_rss_kb, 1024 * 1024) << mode;  // KB: under 1 GB (3.6 GB before)
  }
}

TEST(PromStep, FractionalStepsArePrometheusSyntax) {
  EXPECT_EQ(PromStepParam(15000), "15s");
  EXPECT_EQ(PromStepParam(500), "0.5");
  EXPECT_EQ(PromStepParam(1250), "1.25");
  EXPECT_EQ(PromStepParam(100), "0.1");
  EXPECT_EQ(*ParsePromDurationMs("500ms"), 500);
  EXPECT_EQ(*ParsePromDurationMs("1h30m"), 5400000);
  EXPECT_EQ(*ParsePromDurationMs("1m"), 60000);

  TempDir dir;
  const std::string log = dir.path() + "/requests.log";
  HostileServer server(dir, "prom", {"--log", log});
  ASSERT_GT(server.port(), 0);
  for (const std::string step : {"500ms", "0.5", "15s", "1m"}) {
    const TimedRun r =
        RunTimed("triage --prometheus " + server.url() + " " + kRange + " --step " + step, 60);
    EXPECT_EQ(r.exit_code, 0) << "--step " << step << "\n" << r.output;
  }
  const std::string seen = ReadFile(log);
  EXPECT_NE(seen.find("step=0.5\n"), std::string::npos) << seen;
  EXPECT_EQ(seen.find("0.500s"), std::string::npos) << seen;
}

TEST(PromError, NewlinesAndTerminalEscapesAreEscapedBeforePrinting) {
  TempDir dir;
  HostileServer server(dir, "prom-error");
  ASSERT_GT(server.port(), 0);
  const TimedRun r =
      RunTimed("triage --prometheus " + server.url() + " " + kRange + " --step 15s", 60);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_EQ(r.output.find('\x1b'), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find('\x07'), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("line one\\nline two \\x1b[2J"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace ww::ingest
