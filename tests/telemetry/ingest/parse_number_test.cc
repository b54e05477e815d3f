// ingest::ParseNumber, the one number rule of every reader (nvidia-smi CSV and dmon, dcgmi dmon,
// dcgm-exporter, W&B, tables, home-made CSVs): each form read through the forward pass and the
// general path alike, quotes and blanks around a value, the missing markers (never 0), and what
// is malformed or implausible.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "telemetry/ingest/text.h"

namespace ww::ingest {
namespace {

struct NumberCase {
  const char* text;
  Parse want;
  double value = 0;  // for kOk
};

TEST(ParseNumberTest, OneRuleForEveryForm) {
  const std::vector<NumberCase> cases = {
      {"547.12 W", Parse::kOk, 547.12},
      {" 547.12W\r", Parse::kOk, 547.12},
      {"91 %\t", Parse::kOk, 91},
      {"5.", Parse::kOk, 5},
      {".5 W", Parse::kOk, 0.5},
      {"5e", Parse::kOk, 5},  // a unit that starts with e, not an exponent
      {"1e2 W", Parse::kOk, 100},
      {"-5", Parse::kOk, -5},
      {"+7 W", Parse::kOk, 7},
      {"\"547.12 W\"", Parse::kOk, 547.12},  // a quoted CSV cell
      {" \"91\" ", Parse::kOk, 91},
      {"4999.99999999999", Parse::kOk, 4999.99999999999},    // 15 digits: the forward pass
      {"4999.999999999999", Parse::kOk, 4999.999999999999},  // 16: the general path
      {"", Parse::kMissing},
      {"  ", Parse::kMissing},
      {"\"\"", Parse::kMissing},
      {"[N/A]", Parse::kMissing},
      {"[Not Supported]", Parse::kMissing},
      {"N/A", Parse::kMissing},
      {"-", Parse::kMissing},
      {"NaN", Parse::kMissing},
      {"nan", Parse::kMissing},
      {"\"NaN\"", Parse::kMissing},
      {"1e999", Parse::kImplausible},
      {"0x10", Parse::kBad},
      {"70\t W", Parse::kBad},
      {"NAN", Parse::kBad},
      {"7.0.1", Parse::kBad},
      {"inf", Parse::kBad},
      {"70 W W", Parse::kBad},
      {"W", Parse::kBad},
      {".", Parse::kBad},
  };
  for (const NumberCase& c : cases) {
    SCOPED_TRACE(std::string("'") + c.text + "'");
    double v = -1;
    EXPECT_EQ(ParseNumber(c.text, &v), c.want);
    if (c.want == Parse::kOk) {
      EXPECT_DOUBLE_EQ(v, c.value);
    }
  }
}

TEST(ParseNumberTest, TheInlineSmallIntegerPathAgreesWithTheRule) {
  // ParseSmallUint reads what it can (1-4 digits between spaces) as ParseNumber does and leaves
  // everything else to it.
  for (const std::string t : {"0", " 7", "15 ", " 66 \r", "0012", "4095", "9999"}) {
    double a = -1, b = -2;
    ASSERT_TRUE(ParseSmallUint(t, &a)) << t;
    ASSERT_EQ(ParseNumber(t, &b), Parse::kOk) << t;
    EXPECT_EQ(a, b) << t;
  }
  for (const std::string t : {"", " ", "12345", "-1", "+1", "1.5", "66 C", "\t7", "[N/A]", "0x1",
                              "7 7", "\"7\"", "1e2"}) {
    double v = -1;
    EXPECT_FALSE(ParseSmallUint(t, &v)) << t;
    EXPECT_EQ(v, -1) << "untouched: " << t;
  }
}

TEST(ParseNumberTest, RepeatedHeadersNoteNamesTheFirstRepeats) {
  EXPECT_EQ(RepeatedHeadersNote(1, 1, {5}),
            "skipped 1 repeated header line (identical to line 1); line 5");
  EXPECT_EQ(RepeatedHeadersNote(4, 2, {5, 9, 13}),
            "skipped 4 repeated header lines (identical to line 2); line 5; line 9; line 13");
}

}  // namespace
}  // namespace ww::ingest
