#include "core/timefmt.h"

#include <gtest/gtest.h>

namespace ww {
namespace {

TEST(TimeFmt, ParsesNvidiaSmiFormatAndPrintsIsoWithMs) {
  auto t = ParseTimestamp("2024/04/05 06:17:19.635");
  ASSERT_TRUE(t.has_value());
  EXPECT_FALSE(t->had_zone);
  EXPECT_EQ(FormatIsoMs(t->unix_ms), "2024-04-05T06:17:19.635");
}

TEST(TimeFmt, FractionOfAnyLengthAndMissing) {
  EXPECT_EQ(FormatIsoMs(ParseTimestamp("2026-11-18 11:29:20.7")->unix_ms),
            "2026-11-18T11:29:20.700");
  EXPECT_EQ(FormatIsoMs(ParseTimestamp("2026-11-18 11:29:20")->unix_ms), "2026-11-18T11:29:20.000");
  EXPECT_EQ(FormatIsoMs(ParseTimestamp("2026-11-18T11:29:20.123456")->unix_ms),
            "2026-11-18T11:29:20.123");
}

TEST(TimeFmt, ZonesAreAppliedAndRemembered) {
  auto z = ParseTimestamp("2026-11-18T11:29:20.500Z");
  ASSERT_TRUE(z && z->had_zone);
  auto plus = ParseTimestamp("2026-11-18T13:29:20.500+02:00");
  ASSERT_TRUE(plus && plus->had_zone);
  EXPECT_EQ(z->unix_ms, plus->unix_ms);
  EXPECT_EQ(FormatIsoMs(z->unix_ms, true), "2026-11-18T11:29:20.500Z");
}

TEST(TimeFmt, RejectsGarbage) {
  for (const char* bad : {"", "2024", "2024/13/01 00:00:00", "2024/04/05 25:00:00",
                          "2024/04/05 06:17:19.", "hello", "2024/04/05 06:17:19 junk"}) {
    EXPECT_FALSE(ParseTimestamp(bad).has_value()) << bad;
  }
}

TEST(TimeFmt, LeapDayAndPreEpoch) {
  EXPECT_EQ(FormatIsoMs(ParseTimestamp("2024-02-29 23:59:59.999")->unix_ms),
            "2024-02-29T23:59:59.999");
  EXPECT_EQ(FormatIsoMs(ParseTimestamp("1969-12-31 23:59:59.250")->unix_ms),
            "1969-12-31T23:59:59.250");
}

}  // namespace
}  // namespace ww
