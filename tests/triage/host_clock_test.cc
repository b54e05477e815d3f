// Host clocks (src/triage/host_clock.h): the skew estimate from moments each host's GPUs change
// together (table), the --host-offset parser, and the decorator that shifts a host and keeps the
// merged stream in time order.
#include "triage/host_clock.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>

namespace ww::triage {
namespace {

using ::testing::HasSubstr;

// Host transitions: at every moment in `moments_ms` (+ offset), every GPU stops (odd) or starts
// (even) working within jitter_ms.
std::vector<WorkTransition> HostAt(const std::vector<int64_t>& moments_ms, int64_t offset_ms,
                                   int gpus, int64_t jitter_ms, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> jitter(0, jitter_ms);
  std::vector<WorkTransition> out;
  for (size_t i = 0; i < moments_ms.size(); ++i) {
    for (int g = 0; g < gpus; ++g) {
      out.push_back(
          {moments_ms[i] + offset_ms + jitter(rng), static_cast<uint16_t>(g), i % 2 == 1});
    }
  }
  std::sort(out.begin(), out.end(),
            [](const WorkTransition& a, const WorkTransition& b) { return a.t_ms < b.t_ms; });
  return out;
}

TEST(HostSkewTable, EstimatesFromSharedMoments) {
  const TriageOptions o;
  // Training stops for a checkpoint at 100 s, resumes at 145 s, stops at 400 s, resumes at 430 s.
  const std::vector<int64_t> m = {100000, 145000, 400000, 430000};
  struct Row {
    const char* what;
    int64_t offset_ms;
    std::vector<int64_t> moments;
    bool found;
  };
  const std::vector<Row> rows = {
      {"in sync", 0, m, true},
      {"30 s ahead", 30000, m, true},
      {"12.5 s behind", -12500, m, true},
      // One shared moment is no estimate (a lone coincidence).
      {"one moment", 30000, {100000}, false},
      // Further apart than any skew we look for: not the same moments.
      {"beyond max_host_skew_s", 600000, m, false},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.what);
    const auto skews = EstimateHostSkews(
        {HostAt(r.moments, 0, 8, 150, 1), HostAt(r.moments, r.offset_ms, 8, 150, 2)}, {8, 8}, o);
    if (!r.found) {
      EXPECT_TRUE(skews.empty());
      continue;
    }
    ASSERT_EQ(skews.size(), 1u);
    EXPECT_EQ(skews[0].host, 1);
    EXPECT_NEAR(skews[0].offset_s, static_cast<double>(r.offset_ms) / 1000.0, 0.3);
    EXPECT_EQ(skews[0].matches, static_cast<int>(r.moments.size()));
  }
  // GPUs that change one by one (a straggler, starvation) make no host moment.
  std::vector<WorkTransition> scattered;
  for (int g = 0; g < 8; ++g)
    scattered.push_back({100000 + g * 5000, static_cast<uint16_t>(g), false});
  EXPECT_TRUE(EstimateHostSkews({HostAt(m, 0, 8, 150, 1), scattered}, {8, 8}, o).empty());
}

TEST(HostOffsetTest, ParsesHostEqualsSeconds) {
  auto a = ParseHostOffset("node1=-30.5");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->first, "node1");
  EXPECT_DOUBLE_EQ(a->second, -30.5);
  auto b = ParseHostOffset("a=b=2");  // a host name may hold '='; the number is after the last
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->first, "a=b");
  for (const char* bad : {"node1", "=3", "node1=", "node1=3s", "node1=1e9"}) {
    EXPECT_FALSE(ParseHostOffset(bad).ok()) << bad;
  }
}

// Two hosts, one batch per tick in time order; host 1 shifted -250 ms must still come out in
// order, every sample once.
class TwoHosts final : public TelemetrySource {
 public:
  Status Next(std::vector<GpuSample>* out) override {
    if (tick_ >= 50) return Status::Ok();
    for (uint16_t h = 0; h < 2; ++h) {
      GpuSample s;
      s.timestamp_ms = tick_ * 100;
      s.key = {h, 0};
      s.power_w = tick_;
      out->push_back(s);
    }
    ++tick_;
    return Status::Ok();
  }
  const std::vector<std::string>& hosts() const override { return hosts_; }

 private:
  int64_t tick_ = 0;
  std::vector<std::string> hosts_ = {"node0", "node1"};
};

TEST(HostOffsetTest, ShiftsAHostAndKeepsTimeOrder) {
  TwoHosts inner;
  auto src = HostOffsetSource::Create(&inner, {{"node1", -0.25}});
  ASSERT_TRUE(src.ok());
  std::vector<GpuSample> all;
  for (;;) {
    std::vector<GpuSample> batch;
    ASSERT_TRUE((*src)->Next(&batch).ok());
    if (batch.empty()) break;
    all.insert(all.end(), batch.begin(), batch.end());
  }
  ASSERT_EQ(all.size(), 100u);
  for (size_t i = 1; i < all.size(); ++i) EXPECT_LE(all[i - 1].timestamp_ms, all[i].timestamp_ms);
  for (const GpuSample& s : all) {
    EXPECT_EQ(s.timestamp_ms, static_cast<int64_t>(*s.power_w) * 100 - (s.key.host == 1 ? 250 : 0));
  }
  EXPECT_THAT(HostOffsetSource::Create(&inner, {{"node9", 1}}).status().message(),
              HasSubstr("no such host (hosts: node0, node1)"));
}

}  // namespace
}  // namespace ww::triage
