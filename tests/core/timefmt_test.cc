#include "core/timefmt.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

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

// The column parser reads only the seconds of a text that shares the previous one's minute: it
// must give ParseTimestamp's answer for every text, whatever came before (a minute boundary, a
// format change, garbage that shares the prefix, a zone appearing).
TEST(TimeFmt, TimestampParserAgreesWithParseTimestampInAnyOrder) {
  const std::vector<std::string> texts = {"2025/11/18 11:29:20.100",
                                          "2025/11/18 11:29:20.200",
                                          "2025/11/18 11:29:59.999",
                                          "2025/11/18 11:30:00.000",
                                          " 2025/11/18 11:30:00.5\r",
                                          "2025/11/18 11:30:61",
                                          "2025/11/18 11:30:",
                                          "2025/11/18 11:30:x",
                                          "2025/11/18 11:30:05 junk",
                                          "2025/11/18 11:30:05Z",
                                          "2025/11/18 11:30:05+02:00",
                                          "2025/11/18 11:30:05.",
                                          "2025-11-18T11:30:05.250",
                                          "2025/11/18 11:30:07",
                                          "",
                                          "hello",
                                          "2025/11/18 11:3",
                                          "2024/02/29 23:59:59.999",
                                          "2024/02/29 23:59:60",
                                          "1969/12/31 23:59:59.250"};
  TimestampParser parser;
  for (int round = 0; round < 3; ++round) {
    for (size_t k = 0; k < texts.size(); ++k) {
      // Visit in three orders: forward, backward, and strided.
      const size_t i = round == 0 ? k : round == 1 ? texts.size() - 1 - k : (k * 7) % texts.size();
      const auto want = ParseTimestamp(texts[i]);
      const auto got = parser.Parse(texts[i]);
      ASSERT_EQ(got.has_value(), want.has_value()) << "'" << texts[i] << "' round " << round;
      if (want) {
        EXPECT_EQ(got->unix_ms, want->unix_ms) << texts[i];
        EXPECT_EQ(got->had_zone, want->had_zone) << texts[i];
      }
    }
  }
}

}  // namespace
}  // namespace ww
