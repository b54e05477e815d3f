// Parsing NCCL RAS reports (the examples of NCCL's RAS documentation) and the two-query rule:
// only counts that did not move name a rank.
#include "evidence/ras.h"

#include <gtest/gtest.h>

#include <string>

namespace ww::evidence {
namespace {

// docs/userguide/source/troubleshooting/ras.rst (NVIDIA/nccl), a job with one rank group behind.
std::string MismatchText(int ahead, int behind) {
  return "NCCL version 2.26.2 compiled with CUDA 12.8\n"
         "CUDA runtime version 12080, driver version 12080\n\n"
         "Communicators... (0.00s)\n=============\n\n"
         "Group     Comms     Nodes     Ranks     Ranks     Ranks    Status  Errors\n"
         "    #  in group  per comm  per node  per comm  in group\n"
         "    0         1         4         8        32        32   RUNNING  MISMATCH\n\n"
         "Errors\n======\n\nWarnings\n========\n\n"
         "#0-0 (27a079b828ff1a75) MISMATCH\n"
         "  Communicator ranks have different AllReduce operation counts\n"
         "  26 ranks have launched up to operation " +
         std::to_string(ahead) +
         "\n"
         "  6 ranks have launched up to operation " +
         std::to_string(behind) +
         "\n"
         "  Rank 0 -- GPU 0 managed by process 483072 on node 172.16.64.210\n"
         "  Rank 2 -- GPU 2 managed by process 483074 on node 172.16.64.210\n"
         "  Rank 3 -- GPU 3 managed by process 483075 on node 172.16.64.210\n"
         "  Rank 4 -- GPU 4 managed by process 483076 on node 172.16.64.210\n"
         "  Rank 5 -- GPU 5 managed by process 483077 on node 172.16.64.210\n"
         "  Rank 7 -- GPU 7 managed by process 483079 on node 172.16.64.210\n\n";
}

TEST(RasText, ParsesTheDocumentedMismatchReport) {
  Result<RasSnapshot> s = ParseRasText(MismatchText(6650, 6649));
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->nccl_version, "2.26.2");
  ASSERT_EQ(s->communicators.size(), 1u);
  const RasCommunicator& c = s->communicators[0];
  EXPECT_EQ(c.hash, "0x27a079b828ff1a75");
  const auto& groups = c.counts.at("AllReduce");
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0].count, 6650u);
  EXPECT_EQ(groups[0].ranks_total, 26);
  EXPECT_TRUE(groups[0].ranks.empty());
  EXPECT_EQ(groups[1].count, 6649u);
  ASSERT_EQ(groups[1].ranks.size(), 6u);
  EXPECT_EQ(groups[1].ranks[1].rank, 2);
  EXPECT_EQ(groups[1].ranks[1].pid, 483074);
  EXPECT_EQ(groups[1].ranks[1].gpu, 2);
  EXPECT_EQ(groups[1].ranks[1].host, "172.16.64.210");
}

TEST(RasCompare, UnchangedCountsNameTheRanksBehind) {
  Result<RasSnapshot> a = ParseRasText(MismatchText(6650, 6649));
  Result<RasSnapshot> b = ParseRasText(MismatchText(6650, 6649));
  ASSERT_TRUE(a.ok() && b.ok());
  RasVerdict v = CompareRasSnapshots(*a, *b);
  ASSERT_EQ(v.stuck_communicators.size(), 1u);
  ASSERT_EQ(v.culprits.size(), 6u);
  EXPECT_EQ(v.culprits[0].why, "behind");
  EXPECT_EQ(v.culprits[0].at, 6649u);
  EXPECT_EQ(v.culprits[0].others_at, 6650u);
  EXPECT_EQ(v.culprits[1].sentence,
            "rank 2 (172.16.64.210 GPU2, pid 483074) is at AllReduce #6649 with 5 others; the "
            "other 26 are at #6650");
}

TEST(RasCompare, MovingCountsNameNobody) {
  Result<RasSnapshot> a = ParseRasText(MismatchText(6650, 6649));
  Result<RasSnapshot> b = ParseRasText(MismatchText(6700, 6699));
  ASSERT_TRUE(a.ok() && b.ok());
  RasVerdict v = CompareRasSnapshots(*a, *b);
  EXPECT_TRUE(v.culprits.empty());
  EXPECT_TRUE(v.stuck_communicators.empty());
  ASSERT_FALSE(v.lines.empty());
  EXPECT_NE(v.lines[0].find("moved"), std::string::npos);
}

// The JSON sample of the same documentation page (NCCL 2.29.1).
constexpr const char* kDocJson = R"({
  "nccl_version": "2.29.1", "cuda_runtime_version": 13000, "cuda_driver_version": 13000,
  "timestamp": "2025-12-19 13:06:53", "communicators_count": 1,
  "communicators": [ { "hash": "0xae94423cfbb2ef4a", "secondary_hash": "0xb7:0xb8", "size": 2,
    "ranks_count": 1, "missing_ranks_count": 1,
    "ranks": [ { "rank": 0, "host": "172.16.64.245", "pid": 1524344, "cuda_dev": 0,
      "nvml_dev": 0, "status": { "init_state": 0, "async_error": 0, "finalize_called": false,
      "destroy_flag": false, "abort_flag": false },
      "collective_counts": { "Broadcast": 0, "Reduce": 0, "AllGather": 0, "ReduceScatter": 0,
      "AllReduce": 0 } } ],
    "missing_ranks": [ { "rank": 1, "host": "172.16.64.245", "pid": 1524345, "cuda_dev": 1,
      "nvml_dev": 1, "status": { "unresponsive": true, "considered_dead": false } } ] } ],
  "ras": { "collection_time_sec": 0.000, "timeouts_count": 0 } })";

TEST(RasJson, ParsesTheDocumentedSampleAndNamesAMissingRankSeenTwice) {
  Result<RasSnapshot> s = ParseRasJson(kDocJson);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->nccl_version, "2.29.1");
  ASSERT_EQ(s->communicators.size(), 1u);
  ASSERT_EQ(s->communicators[0].missing.size(), 1u);
  EXPECT_TRUE(s->communicators[0].missing[0].unresponsive);
  RasVerdict v = CompareRasSnapshots(*s, *s);
  ASSERT_EQ(v.culprits.size(), 1u);
  EXPECT_EQ(v.culprits[0].why, "missing");
  EXPECT_EQ(v.culprits[0].sentence,
            "rank 1 (172.16.64.245 GPU1, pid 1524345) is missing in communicator "
            "0xae94423cfbb2ef4a (RAS could not reach it)");
}

TEST(RasParse, BadRepliesAreClearErrors) {
  EXPECT_FALSE(ParseRasJson("{\"communicators\": 3}").ok());
  EXPECT_FALSE(ParseRasJson("not json").ok());
  Result<RasSnapshot> t = ParseRasText("ERROR: Unknown command FOO\n");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("NCCL version"), std::string::npos);
}

}  // namespace
}  // namespace ww::evidence
