// The pieces the watcher's hook-up uses before a hang: --nccl-ras parsing and the Flight Recorder
// variables `run` gives the child.
#include "evidence/setup.h"

#include <gtest/gtest.h>

namespace ww::evidence {
namespace {

TEST(RasAddress, AcceptsTheFormsOfNcclRasAddr) {
  Result<HostPort> a = ParseRasAddress("node3:28029");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "node3");
  EXPECT_EQ(a->port, 28029);
  Result<HostPort> b = ParseRasAddress("28028");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->host, "localhost");
  Result<HostPort> c = ParseRasAddress("[::1]:28028");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->host, "::1");
  for (const char* bad : {"node3:", "node3:x", "node3:70000", "[::1]28028", ""}) {
    Result<HostPort> r = ParseRasAddress(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("--nccl-ras"), std::string::npos);
  }
}

TEST(FlightRecorderEnv, SetsWhatTheUserDidNotAndSaysSo) {
  const FrChildEnv plan = PlanFlightRecorderEnv("/runs/incidents/fr", {});
  EXPECT_EQ(plan.pipe_prefix, "/runs/incidents/fr/pipe_");
  EXPECT_EQ(plan.dump_prefix, "/runs/incidents/fr/dump_");
  ASSERT_EQ(plan.set.size(), 4u);
  EXPECT_EQ(plan.set[2], (std::pair<std::string, std::string>{"TORCH_FR_BUFFER_SIZE", "2000"}));
  EXPECT_EQ(plan.message,
            "Flight Recorder: set for the job TORCH_NCCL_DEBUG_INFO_PIPE_FILE=/runs/incidents/fr/"
            "pipe_ TORCH_NCCL_DEBUG_INFO_TEMP_FILE=/runs/incidents/fr/dump_ "
            "TORCH_FR_BUFFER_SIZE=2000 TORCH_NCCL_TRACE_BUFFER_SIZE=2000 (on a hang, its ranks "
            "dump to /runs/incidents/fr/dump_<rank>)");
}

TEST(FlightRecorderEnv, KeepsTheUsersOwnSettings) {
  const FrChildEnv plan = PlanFlightRecorderEnv("/x", {{"TORCH_NCCL_DEBUG_INFO_PIPE_FILE", "/s/p_"},
                                                       {"TORCH_FR_DUMP_TEMP_FILE", "/s/d_"},
                                                       {"TORCH_NCCL_TRACE_BUFFER_SIZE", "500"}});
  EXPECT_EQ(plan.pipe_prefix, "/s/p_");
  EXPECT_EQ(plan.dump_prefix, "/s/d_");
  // Only the newer buffer variable is added, with the user's size.
  ASSERT_EQ(plan.set.size(), 1u);
  EXPECT_EQ(plan.set[0], (std::pair<std::string, std::string>{"TORCH_FR_BUFFER_SIZE", "500"}));
}

}  // namespace
}  // namespace ww::evidence
