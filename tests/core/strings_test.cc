#include "core/strings.h"

#include <gtest/gtest.h>

#include <cmath>

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

// One duration format for the summary, the HTML report and `top` (three copies before).
TEST(Format, DurationsForPeople) {
  EXPECT_EQ(FormatDuration(18.72), "18.7 s");
  EXPECT_EQ(FormatDuration(149.4), "2m29s");
  EXPECT_EQ(FormatDuration(59.96), "60.0 s");  // under a minute keeps its tenths
  EXPECT_EQ(FormatDuration(3723.5), "1h02m04s");
  EXPECT_EQ(FormatDuration(3723.5, /*compact=*/true), "1h02m");
  EXPECT_EQ(FormatDuration(42.4, /*compact=*/true), "42s");
  // A clock jump or a NaN in a log must not overflow llround or print garbage.
  EXPECT_EQ(FormatDuration(1e300), "277777777777h46m40s");
  EXPECT_EQ(FormatDuration(std::nan("")), "? s");
}

TEST(Format, OneGpuLabel) {
  EXPECT_EQ(GpuLabel("node0", 3), "node0/GPU3");
  EXPECT_EQ(GpuLabelForHostIndex(2, 7), "host2/GPU7");
}

}  // namespace
}  // namespace ww
