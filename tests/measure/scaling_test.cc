// Strong-scaling math with exact expected values, and every way a runs CSV can be wrong.
#include "measure/scaling.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace ww::measure {
namespace {

using ::testing::HasSubstr;

TEST(Scaling, TableAgainstTheSmallestCount) {
  // Rows out of order on purpose: the baseline is the smallest count, not the first row.
  auto points = ParseScalingCsv("gpus,tokens_per_s\n8,3000\n2,1000\n4,1800\n", "runs.csv");
  ASSERT_TRUE(points.ok()) << points.status().message();
  const ScalingReport r = ComputeScaling(*points, 0.8);
  ASSERT_EQ(r.rows.size(), 3u);
  EXPECT_EQ(r.rows[0].gpus, 2);
  EXPECT_DOUBLE_EQ(r.rows[0].speedup, 1.0);
  EXPECT_DOUBLE_EQ(r.rows[0].efficiency, 1.0);
  EXPECT_DOUBLE_EQ(r.rows[0].tokens_per_s_per_gpu, 500.0);
  EXPECT_FALSE(r.rows[0].marginal_tokens_per_s_per_gpu.has_value());

  EXPECT_EQ(r.rows[1].gpus, 4);
  EXPECT_DOUBLE_EQ(r.rows[1].speedup, 1.8);
  EXPECT_DOUBLE_EQ(r.rows[1].ideal_speedup, 2.0);
  EXPECT_DOUBLE_EQ(r.rows[1].efficiency, 0.9);
  EXPECT_DOUBLE_EQ(r.rows[1].tokens_per_s_per_gpu, 450.0);
  EXPECT_DOUBLE_EQ(*r.rows[1].marginal_tokens_per_s_per_gpu, 400.0);  // (1800-1000)/2
  EXPECT_FALSE(r.rows[1].below_threshold);

  EXPECT_EQ(r.rows[2].gpus, 8);
  EXPECT_DOUBLE_EQ(r.rows[2].speedup, 3.0);
  EXPECT_DOUBLE_EQ(r.rows[2].ideal_speedup, 4.0);
  EXPECT_DOUBLE_EQ(r.rows[2].efficiency, 0.75);
  EXPECT_DOUBLE_EQ(r.rows[2].tokens_per_s_per_gpu, 375.0);
  EXPECT_DOUBLE_EQ(*r.rows[2].marginal_tokens_per_s_per_gpu, 300.0);  // (3000-1800)/4
  EXPECT_TRUE(r.rows[2].below_threshold);
  EXPECT_TRUE(r.any_below_threshold);
  EXPECT_EQ(ScalingExitCode(r), 1);
  EXPECT_THAT(FormatScaling(r), HasSubstr("FLAG: 8 GPUs run at 75 % of linear"));

  const ScalingReport lenient = ComputeScaling(*points, 0.75);  // at the threshold is not under it
  EXPECT_FALSE(lenient.any_below_threshold);
  EXPECT_EQ(ScalingExitCode(lenient), 0);

  const nlohmann::json j = ScalingToJson(r);
  EXPECT_EQ(j["baseline_gpus"], 2);
  EXPECT_EQ(j["rows"].size(), 3u);
  EXPECT_TRUE(j["rows"][0]["marginal_tokens_per_s_per_gpu"].is_null());
  EXPECT_DOUBLE_EQ(j["rows"][2]["efficiency"].get<double>(), 0.75);
  EXPECT_EQ(j["any_below_threshold"], true);
}

TEST(Scaling, SuperlinearAndFlatRows) {
  auto points = ParseScalingCsv("gpus,tokens_per_s\n1,100\n2,250\n4,250\n", "r");
  ASSERT_TRUE(points.ok());
  const ScalingReport r = ComputeScaling(*points, 0.8);
  EXPECT_DOUBLE_EQ(r.rows[1].efficiency, 1.25);  // superlinear (cache effects) is reported as is
  EXPECT_DOUBLE_EQ(*r.rows[2].marginal_tokens_per_s_per_gpu, 0.0);
  EXPECT_DOUBLE_EQ(r.rows[2].efficiency, 0.625);
}

TEST(ScalingCsv, AcceptsColumnsInAnyOrderCommentsAndCrlf) {
  auto points = ParseScalingCsv(
      "# runs from the field report\r\nrun, Tokens_Per_S ,GPUS,note\r\n\r\na, 53000.5 ,16,two "
      "nodes\r\nb,1.4e4,4,\"one node\"\r\n",
      "r.csv");
  ASSERT_TRUE(points.ok()) << points.status().message();
  ASSERT_EQ(points->size(), 2u);
  EXPECT_EQ((*points)[0].gpus, 4);
  EXPECT_DOUBLE_EQ((*points)[0].tokens_per_s, 14000.0);
  EXPECT_EQ((*points)[0].line, 5);
  EXPECT_EQ((*points)[1].gpus, 16);
  EXPECT_DOUBLE_EQ((*points)[1].tokens_per_s, 53000.5);
}

struct BadCsv {
  const char* text;
  const char* message;
};

class ScalingCsvErrors : public ::testing::TestWithParam<BadCsv> {};

TEST_P(ScalingCsvErrors, NameFileLineAndField) {
  auto points = ParseScalingCsv(GetParam().text, "runs.csv");
  ASSERT_FALSE(points.ok()) << GetParam().text;
  EXPECT_EQ(points.status().code(), StatusCode::kInvalidInput);
  EXPECT_THAT(points.status().message(), HasSubstr(GetParam().message));
}

INSTANTIATE_TEST_SUITE_P(
    All, ScalingCsvErrors,
    ::testing::Values(
        BadCsv{"", "runs.csv: empty"},
        BadCsv{"4,1000\n8,2000\n",
               "runs.csv:1: expected a header naming the columns gpus and tokens_per_s"},
        BadCsv{"gpus,throughput\n4,1\n", "runs.csv:1: expected a header"},
        BadCsv{"gpus,tokens_per_s\n0,1000\n8,2000\n",
               "runs.csv:2: gpus: \"0\" is not a positive integer"},
        BadCsv{"gpus,tokens_per_s\n4,1000\n-8,2000\n", "runs.csv:3: gpus: \"-8\""},
        BadCsv{"gpus,tokens_per_s\n4.5,1000\n8,2000\n", "runs.csv:2: gpus: \"4.5\""},
        BadCsv{"gpus,tokens_per_s\nfour,1000\n8,2000\n", "runs.csv:2: gpus"},
        BadCsv{"gpus,tokens_per_s\n99999999999999999999,1\n8,2\n", "runs.csv:2: gpus"},
        BadCsv{"gpus,tokens_per_s\n4,0\n8,2000\n",
               "runs.csv:2: tokens_per_s: \"0\" is not a positive number"},
        BadCsv{"gpus,tokens_per_s\n4,-3\n8,2000\n", "runs.csv:2: tokens_per_s"},
        BadCsv{"gpus,tokens_per_s\n4,nan\n8,2000\n", "runs.csv:2: tokens_per_s: \"nan\""},
        BadCsv{"gpus,tokens_per_s\n4,inf\n8,2000\n", "runs.csv:2: tokens_per_s: \"inf\""},
        BadCsv{"gpus,tokens_per_s\n4,1e999\n8,2000\n", "runs.csv:2: tokens_per_s"},
        BadCsv{"gpus,tokens_per_s\n4,12k\n8,2000\n", "runs.csv:2: tokens_per_s: \"12k\""},
        BadCsv{"gpus,tokens_per_s\n4,\n8,2000\n", "runs.csv:2: tokens_per_s: \"\""},
        BadCsv{"gpus,tokens_per_s\n4,1000,x\n8,2000\n", "runs.csv:2: 3 fields, the header has 2"},
        BadCsv{"gpus,tokens_per_s\n8,1000\n4,900\n8,2000\n",
               "runs.csv:4: gpus: 8 GPUs already measured on line 2"},
        BadCsv{"gpus,tokens_per_s\n8,1000\n",
               "runs.csv: 1 row: scaling needs throughput at 2 or more"},
        BadCsv{"gpus,tokens_per_s\n", "runs.csv: 0 rows"}));

}  // namespace
}  // namespace ww::measure
