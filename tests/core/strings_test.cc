#include "core/strings.h"

#include <gtest/gtest.h>

#include "core/format.h"
#include "core/stats.h"

namespace ww {
namespace {

TEST(Strings, TrimSpaceStripsBothEnds) {
  EXPECT_EQ(TrimSpace("  power.draw [W]\r\n"), "power.draw [W]");
  EXPECT_EQ(TrimSpace("\t\t"), "");
  EXPECT_EQ(TrimSpace(""), "");
  EXPECT_EQ(TrimSpace("a b"), "a b");
}

TEST(Strings, TrimSpaceAndQuotesRemovesOnePair) {
  EXPECT_EQ(TrimSpaceAndQuotes(" \"gpus\" "), "gpus");
  EXPECT_EQ(TrimSpaceAndQuotes("\"\"x\"\""), "\"x\"");
  EXPECT_EQ(TrimSpaceAndQuotes("\""), "\"");
}

// The "did you mean" measure: one edit each for insert, delete, substitute; symmetric.
TEST(Strings, EditDistanceCountsSingleEdits) {
  EXPECT_EQ(EditDistance("triage", "triage"), 0u);
  EXPECT_EQ(EditDistance("tirage", "triage"), 2u);  // a swap is two substitutions
  EXPECT_EQ(EditDistance("--jsn", "--json"), 1u);
  EXPECT_EQ(EditDistance("", "abc"), 3u);
  EXPECT_EQ(EditDistance("abc", ""), 3u);
  EXPECT_EQ(EditDistance("kitten", "sitting"), 3u);
  EXPECT_EQ(EditDistance("sitting", "kitten"), 3u);
}

TEST(Strings, AsciiLowerLeavesNonAsciiBytes) {
  EXPECT_EQ(AsciiLower("Power.Draw [W]"), "power.draw [w]");
  EXPECT_EQ(AsciiLower("\xC3\x84"), "\xC3\x84");
}

TEST(Strings, SplitFieldsKeepsEmptyFields) {
  const auto f = SplitFields("a,,b,", ',');
  ASSERT_EQ(f.size(), 4u);
  EXPECT_EQ(f[0], "a");
  EXPECT_EQ(f[1], "");
  EXPECT_EQ(f[2], "b");
  EXPECT_EQ(f[3], "");
  EXPECT_EQ(SplitFields("", ',').size(), 1u);
}

TEST(Stats, NearestRankPercentile) {
  const std::vector<int> v = {15, 20, 35, 40, 50};
  EXPECT_EQ(PercentileOfSorted(v, 0.0), 15);
  EXPECT_EQ(PercentileOfSorted(v, 0.05), 15);
  EXPECT_EQ(PercentileOfSorted(v, 0.30), 20);
  EXPECT_EQ(PercentileOfSorted(v, 0.40), 20);
  EXPECT_EQ(PercentileOfSorted(v, 0.50), 35);
  EXPECT_EQ(PercentileOfSorted(v, 1.0), 50);
  EXPECT_EQ(Percentile(std::vector<int>{50, 15, 40, 35, 20}, 0.5), 35);
  EXPECT_EQ(Percentile(std::vector<double>{}, 0.5), 0.0);
}

TEST(Format, BytesInBinaryUnits) {
  EXPECT_EQ(FormatBytes(512), "512 B");
  EXPECT_EQ(FormatBytes(1536), "1.5 KiB");
  EXPECT_EQ(FormatBytes(2.0 * 1024 * 1024 * 1024, 2), "2.00 GiB");
}

TEST(Format, OneGpuLabel) {
  EXPECT_EQ(GpuLabel("node0", 3), "node0/GPU3");
  EXPECT_EQ(GpuLabelForHostIndex(2, 7), "host2/GPU7");
}

}  // namespace
}  // namespace ww
