// Packing and step counting against straightforward reference implementations, plus the
// sharding/batching rules spelled out in packing.h.
#include "gate/packing.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

namespace ww::gate {
namespace {

using ::testing::ElementsAre;

uint64_t NaiveFirstFit(std::vector<uint32_t> lengths, uint32_t cap) {
  std::vector<uint32_t> room;
  for (uint32_t len : lengths) {
    len = std::min(len, cap);
    if (len == 0) continue;
    auto it = std::find_if(room.begin(), room.end(), [&](uint32_t r) { return r >= len; });
    if (it == room.end())
      room.push_back(cap - len);
    else
      *it -= len;
  }
  return room.size();
}

uint64_t NaiveBestFitDecreasing(std::vector<uint32_t> lengths, uint32_t cap) {
  for (auto& l : lengths) l = std::min(l, cap);
  std::sort(lengths.rbegin(), lengths.rend());
  std::vector<uint32_t> room;
  for (uint32_t len : lengths) {
    if (len == 0) continue;
    int best = -1;
    for (size_t i = 0; i < room.size(); ++i) {
      if (room[i] >= len && (best < 0 || room[i] < room[static_cast<size_t>(best)]))
        best = static_cast<int>(i);
    }
    if (best < 0)
      room.push_back(cap - len);
    else
      room[static_cast<size_t>(best)] -= len;
  }
  return room.size();
}

TEST(Packing, FirstFitMatchesReferenceOnRandomCorpora) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const uint32_t cap = 1 + rng() % 300;
    std::vector<uint32_t> lengths(rng() % 400);
    for (auto& l : lengths) l = rng() % (cap + cap / 2 + 1);  // some exceed cap
    ASSERT_EQ(CountBinsFirstFit(lengths.data(), lengths.size(), cap), NaiveFirstFit(lengths, cap))
        << "trial " << trial << " cap " << cap;
  }
}

TEST(Packing, BestFitDecreasingMatchesReferenceOnRandomCorpora) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 200; ++trial) {
    const uint32_t cap = 1 + rng() % 5000;  // past 4096 exercises a third bitmap level
    std::vector<uint32_t> lengths(rng() % 300);
    for (auto& l : lengths) l = rng() % (cap + 10);
    ASSERT_EQ(CountBinsBestFitDecreasing(lengths.data(), lengths.size(), cap),
              NaiveBestFitDecreasing(lengths, cap))
        << "trial " << trial << " cap " << cap;
  }
}

TEST(Packing, KnownSmallCases) {
  const std::vector<uint32_t> l = {6, 6, 4, 4, 3, 3, 2};
  EXPECT_EQ(CountBinsFirstFit(l.data(), l.size(), 10), 3u);  // [6,4] [6,4] [3,3,2]
  EXPECT_EQ(CountBinsBestFitDecreasing(l.data(), l.size(), 10), 3u);
  const std::vector<uint32_t> order = {3, 8, 3, 8};  // first-fit: [3,3] [8] [8]; bfd the same
  EXPECT_EQ(CountBinsFirstFit(order.data(), order.size(), 10), 3u);
  const std::vector<uint32_t> trunc = {100, 100, 0, 0};  // truncated to 10 each; empties dropped
  EXPECT_EQ(CountBinsFirstFit(trunc.data(), trunc.size(), 10), 2u);
  EXPECT_EQ(CountBins(Packing::kNone, trunc.data(), trunc.size(), 10), 4u);
}

CorpusLengths Corpus(std::vector<uint32_t> lengths, std::vector<size_t> starts = {0}) {
  return CorpusLengths{std::move(lengths), std::move(starts)};
}

TEST(PlanSteps, StridedContiguousAndDropLast) {
  BatchingConfig c;
  c.data_parallel = 2;
  c.seq_len = 100;
  c.grad_accum = 2;
  // 9 samples, no packing: drop_last gives 4 each -> 2 steps; without, 5 each -> 3 steps (ceil).
  auto plan = PlanSteps(Corpus(std::vector<uint32_t>(9, 10)), c);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->ranks[0].samples, 4u);
  EXPECT_EQ(plan->ranks[1].steps, 2u);
  c.drop_last = false;
  plan = PlanSteps(Corpus(std::vector<uint32_t>(9, 10)), c);
  EXPECT_EQ(plan->ranks[1].samples, 5u);
  EXPECT_EQ(plan->ranks[1].steps, 3u);
  EXPECT_TRUE(plan->steps_equal);
}

TEST(PlanSteps, RankScopePackingDivergesAndGlobalPackingDoesNot) {
  // Strided over 2 ranks: rank 0 gets the long samples, rank 1 the short ones.
  std::vector<uint32_t> lengths;
  for (int i = 0; i < 40; ++i) {
    lengths.push_back(90);
    lengths.push_back(10);
  }
  BatchingConfig c;
  c.data_parallel = 2;
  c.seq_len = 100;
  c.packing = Packing::kGreedy;
  c.grad_accum = 1;
  auto plan = PlanSteps(Corpus(lengths), c);
  ASSERT_TRUE(plan.ok());
  EXPECT_THAT(std::vector<uint64_t>({plan->ranks[0].steps, plan->ranks[1].steps}),
              ElementsAre(40u, 4u));
  EXPECT_FALSE(plan->steps_equal);
  EXPECT_EQ(plan->equalized_max_steps, 4u);

  c.max_steps = 4;
  plan = PlanSteps(Corpus(lengths), c);
  EXPECT_TRUE(plan->steps_equal);
  c.max_steps = 5;
  plan = PlanSteps(Corpus(lengths), c);
  EXPECT_FALSE(plan->steps_equal);

  c.max_steps.reset();
  c.scope = PackingScope::kGlobal;
  plan = PlanSteps(Corpus(lengths), c);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->total_bins, 40u);  // each 90 pairs with a 10
  EXPECT_EQ(plan->ranks[0].bins, 20u);
  EXPECT_TRUE(plan->steps_equal);
}

TEST(PlanSteps, ByFileDealsWholeFiles) {
  BatchingConfig c;
  c.data_parallel = 2;
  c.seq_len = 10;
  c.sharding = Sharding::kByFile;
  // Three files of 4, 2, 3 samples: rank 0 gets files 0 and 2 (7 samples), rank 1 file 1.
  auto plan = PlanSteps(Corpus(std::vector<uint32_t>(9, 1), {0, 4, 6}), c);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->ranks[0].samples, 7u);
  EXPECT_EQ(plan->ranks[1].samples, 2u);
  EXPECT_FALSE(plan->steps_equal);
  c.scope = PackingScope::kGlobal;
  c.packing = Packing::kGreedy;
  EXPECT_FALSE(PlanSteps(Corpus(std::vector<uint32_t>(9, 1), {0, 4, 6}), c).ok());
}

TEST(PlanSteps, ContiguousBlocksAndMicroBatches) {
  BatchingConfig c;
  c.data_parallel = 2;
  c.seq_len = 10;
  c.sharding = Sharding::kContiguous;
  c.packing = Packing::kGreedy;
  c.micro_batch_size = 2;
  c.grad_accum = 2;
  // Rank 0: first 8 samples of 5 tokens -> 4 bins -> 2 micro-batches -> 1 step.
  // Rank 1: last 8 samples of 10 tokens -> 8 bins -> 4 micro-batches -> 2 steps.
  std::vector<uint32_t> lengths(8, 5);
  lengths.insert(lengths.end(), 8, 10);
  auto plan = PlanSteps(Corpus(lengths), c);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->ranks[0].bins, 4u);
  EXPECT_EQ(plan->ranks[0].steps, 1u);
  EXPECT_EQ(plan->ranks[1].steps, 2u);
  EXPECT_EQ(plan->ranks[1].tokens, 80u);
}

TEST(PlanSteps, RejectsZeroSizes) {
  BatchingConfig c;
  c.grad_accum = 0;
  EXPECT_FALSE(PlanSteps(Corpus({1, 2}), c).ok());
}

}  // namespace
}  // namespace ww::gate
