// `wattwatch fleet` as a user runs it: bad flags and an unreachable Prometheus, through the binary.
#include <gtest/gtest.h>

#include "support/support.h"

namespace ww::fleet {
namespace {

using ww::testing::RunWattwatch;

TEST(FleetCli, BadFlagsExit2NamingTheFlag) {
  const struct {
    const char* args;
    const char* says;
  } cases[] = {
      {"--prometheus http://127.0.0.1:9 --shard 2/2", "--shard '2/2'"},
      {"--prometheus http://127.0.0.1:9 --job-label job-id", "--job-label 'job-id'"},
      {"--prometheus http://127.0.0.1:9 --selector 'job=\"dcgm\"'", "--selector"},
      {"--prometheus ftp://x", "--prometheus 'ftp://x'"},
      {"--prometheus http://127.0.0.1:9 --start 2026-01-01T00:00:00Z", "--start and --end"},
      {"--prometheus http://127.0.0.1:9 --listen 127.0.0.1:99999", "99999"},
  };
  for (const auto& c : cases) {
    auto r = RunWattwatch(std::string("fleet --listen none ") + c.args);
    if (std::string(c.args).find("--listen 127") != std::string::npos) {
      r = RunWattwatch(std::string("fleet ") + c.args);
    }
    EXPECT_EQ(r.exit_code, 2) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find(c.says), std::string::npos) << c.args << "\n" << r.output;
  }
}

TEST(FleetCli, OnceAgainstNoPrometheusRetriesThenExits2) {
  // Port 9 (discard) on loopback: nothing listens, the connection is refused at once.
  auto r = RunWattwatch(
      "fleet --prometheus http://127.0.0.1:9 --once --retries 1 --retry-backoff-s 0.1 "
      "--listen none --json");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("cannot reach Prometheus at http://127.0.0.1:9"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("retry 1 of 1"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\"query_errors\": 1"), std::string::npos) << r.output;
}

TEST(FleetCli, HelpTeaches) {
  auto r = RunWattwatch("fleet --help");
  EXPECT_EQ(r.exit_code, 0);
  for (const char* want : {"--prometheus", "--job-label", "--shard", "namespace,pod",
                           "Examples:", "Exit codes:", "fmix64(FNV-1a 64(job id))"}) {
    EXPECT_NE(r.output.find(want), std::string::npos) << want;
  }
}

}  // namespace
}  // namespace ww::fleet
