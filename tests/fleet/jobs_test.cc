#include "fleet/jobs.h"

#include <gtest/gtest.h>

#include <set>

namespace ww::fleet {
namespace {

TEST(FleetJobs, LabelsParseAndNameWhatIsWrong) {
  auto one = ParseJobLabels("hpc_job");
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(*one, std::vector<std::string>{"hpc_job"});
  auto two = ParseJobLabels("namespace, pod");
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(*two, (std::vector<std::string>{"namespace", "pod"}));
  for (const char* bad : {"", "hpc_job,", "pod,pod", "job-id", "1job", "a b", "pod,ns.x"}) {
    auto r = ParseJobLabels(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("--job-label"), std::string::npos);
  }
  EXPECT_NE(ParseJobLabels("job-id").status().message().find("not a Prometheus label name"),
            std::string::npos);
  // Any label a relabel rule adds names jobs, not only the exporter's own mappings.
  auto own = ParseJobLabels("slurm_job,_Team2");
  ASSERT_TRUE(own.ok()) << own.status().message();
  EXPECT_EQ(*own, (std::vector<std::string>{"slurm_job", "_Team2"}));
}

TEST(FleetJobs, JobIdJoinsValuesAndMissingMeansUnattributed) {
  const std::map<std::string, std::string> labels = {
      {"namespace", "training"}, {"pod", "llama-0"}, {"hpc_job", ""}};
  EXPECT_EQ(JobIdOf(labels, {"namespace", "pod"}), "training/llama-0");
  EXPECT_EQ(JobIdOf(labels, {"pod"}), "llama-0");
  EXPECT_EQ(JobIdOf(labels, {"hpc_job"}), std::nullopt);  // empty value
  EXPECT_EQ(JobIdOf(labels, {"namespace", "container"}), std::nullopt);
}

TEST(FleetJobs, HashesAreTheDocumentedOnes) {
  // FNV-1a 64 reference values (draft-eastlake-fnv).
  EXPECT_EQ(Fnv1a64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(Fnv1a64("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(Fnv1a64("foobar"), 0x85944171f73967e8ull);
  EXPECT_EQ(Fmix64(0), 0u);
  EXPECT_EQ(ShardHash("a"), Fmix64(0xaf63dc4c8601ec8cull));
}

TEST(FleetJobs, ShardFlag) {
  auto s = ParseShard("1/3");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->index, 1u);
  EXPECT_EQ(s->count, 3u);
  for (const char* bad : {"3/3", "1", "a/2", "0/0", "-1/2", "1/2/3", "0/5000"}) {
    EXPECT_FALSE(ParseShard(bad).ok()) << bad;
  }
}

TEST(FleetJobs, ShardsSplitEveryJobOnceAndEvenly) {
  for (uint32_t n : {2u, 3u, 8u}) {
    std::vector<int> per(n);
    for (int i = 0; i < 3000; ++i) {
      const std::string id = "job-" + std::to_string(i);
      int owners = 0;
      for (uint32_t k = 0; k < n; ++k) {
        if (Shard{k, n}.Owns(id)) {
          ++owners;
          ++per[k];
        }
      }
      ASSERT_EQ(owners, 1) << id;
    }
    for (uint32_t k = 0; k < n; ++k) {
      EXPECT_GT(per[k], 3000 / static_cast<int>(n) * 8 / 10) << k << "/" << n;
    }
  }
}

TEST(FleetJobs, NamesThatDifferOnlyInTheirStemStillSplit) {
  // Plain FNV-1a mod 2 is the parity of the bytes' low bits: "hang-S", "ckpt-S", "ok-S" keep
  // their relative parities for every S, so they could never be split; fmix64 mixes them.
  std::set<std::vector<bool>> patterns;
  for (int s = 0; s < 50; ++s) {
    std::vector<bool> p;
    for (const char* stem : {"hang-", "ckpt-", "ok-"}) {
      p.push_back(Shard{0, 2}.Owns(stem + std::to_string(s)));
    }
    patterns.insert(p);
  }
  EXPECT_GE(patterns.size(), 4u);
}

}  // namespace
}  // namespace ww::fleet
