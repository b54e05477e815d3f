// fleet's /jobs behind a token (--jobs-token-file, as watch's /state), and the warning when
// --listen reaches other machines without one (issue 31, item 15).
#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/stat.h>

#include <string>

#include "evidence/stand_ins.h"
#include "support/support.h"

namespace ww::fleet {
namespace {

using ww::evidence::testing::Child;
using ww::evidence::testing::WaitForFile;
using ww::testing::ReadFile;
using ww::testing::RunWattwatch;
using ww::testing::TempDir;
using ww::testing::WattwatchBinary;
using ww::testing::WriteFile;

TEST(FleetJobs, TokenFileGuardsJobs) {
  TempDir dir;
  const std::string token = dir.path() + "/token";
  WriteFile(token, "s3cret\n");
  chmod(token.c_str(), 0600);
  const std::string ready = dir.path() + "/ready";
  // Nothing listens on port 9: the cycles fail, the endpoint serves all the same.
  Child fleet({WattwatchBinary(), "fleet", "--prometheus", "http://127.0.0.1:9", "--listen",
               "127.0.0.1:0", "--ready-file", ready, "--jobs-token-file", token, "--interval-s",
               "1", "--retries", "0"});
  ASSERT_TRUE(WaitForFile(ready));
  const std::string addr = ReadFile(ready);
  httplib::Client client("http://" + addr.substr(0, addr.find('\n')));
  auto open = client.Get("/jobs");
  ASSERT_TRUE(open) << addr;
  EXPECT_EQ(open->status, 401);
  auto authed = client.Get("/jobs", {{"Authorization", "Bearer s3cret"}});
  ASSERT_TRUE(authed);
  EXPECT_EQ(authed->status, 200);
  EXPECT_EQ(client.Get("/metrics")->status, 200);  // /metrics stays open, as watch's

  WriteFile(dir.path() + "/empty", "\n");
  chmod((dir.path() + "/empty").c_str(), 0600);
  const auto bad = RunWattwatch(
      "fleet --prometheus http://127.0.0.1:9 --once --listen none "
      "--jobs-token-file " +
      dir.path() + "/empty");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("--jobs-token-file"), std::string::npos) << bad.output;
}

TEST(FleetJobs, ListenOnEveryAddressWithoutTokenWarns) {
  const auto r =
      RunWattwatch("fleet --prometheus http://127.0.0.1:9 --once --retries 0 --listen 0.0.0.0:0");
  EXPECT_NE(r.output.find("/jobs has no authentication and is reachable from other machines"),
            std::string::npos)
      << r.output;
  const auto local =
      RunWattwatch("fleet --prometheus http://127.0.0.1:9 --once --retries 0 --listen 127.0.0.1:0");
  EXPECT_EQ(local.output.find("/jobs has no authentication"), std::string::npos) << local.output;
}

}  // namespace
}  // namespace ww::fleet
