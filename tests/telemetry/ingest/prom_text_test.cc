// The Prometheus text line parser (prom_text.h): escapes, timestamps, special values.
#include "telemetry/ingest/prom_text.h"

#include <gtest/gtest.h>

#include "telemetry/ingest/read_support.h"

namespace ww::ingest_tests {
namespace {

TEST(PromText, ParsesEscapesTimestampsAndSpecialValues) {
  PromSample s;
  std::string err;
  ASSERT_TRUE(ParsePromLine("x{a=\"b\\\"c\",d=\"}\"} -Inf 123", &s, &err)) << err;
  EXPECT_EQ(s.name, "x");
  EXPECT_TRUE(std::isinf(s.value));
  EXPECT_EQ(*s.timestamp_ms, 123);
  std::vector<PromLabel> labels;
  std::deque<std::string> scratch;
  ASSERT_TRUE(ParsePromLabels(s.label_block, &labels, &scratch, &err)) << err;
  ASSERT_EQ(labels.size(), 2u);
  EXPECT_EQ(labels[0].value, "b\"c");
  EXPECT_EQ(labels[1].value, "}");
  EXPECT_FALSE(ParsePromLine("x{a=\"b} 1", &s, &err));
  EXPECT_FALSE(ParsePromLine("x 1 notatime", &s, &err));
  EXPECT_FALSE(ParsePromLine("x", &s, &err));
}

}  // namespace
}  // namespace ww::ingest_tests
