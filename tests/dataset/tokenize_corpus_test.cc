// `wattwatch tokenize`'s report: nearest-rank percentiles of tokens per record (the one
// ww::Percentile), and TokenizeCorpus end to end on a fixture tokenizer from standard input.
#include "dataset/tokenize_corpus.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/clock.h"

namespace ww::dataset {
namespace {

using ::testing::HasSubstr;

TEST(TokensPerRecord, NearestRankPercentiles) {
  // 1..10: nearest rank p50 is the 5th value, p95 the 10th. The app's former twin rounded
  // q * (n - 1) and gave 6 for p50: `tokenize` now agrees with every other percentile printed.
  const TokensPerRecord t = SummarizeTokensPerRecord({7, 3, 10, 1, 5, 2, 9, 4, 8, 6});
  EXPECT_EQ(t.min, 1u);
  EXPECT_EQ(t.p50, 5u);
  EXPECT_EQ(t.p95, 10u);
  EXPECT_EQ(t.max, 10u);
  EXPECT_DOUBLE_EQ(t.mean, 5.5);
  const TokensPerRecord none = SummarizeTokensPerRecord({});
  EXPECT_EQ(none.max, 0u);
  EXPECT_EQ(none.mean, 0.0);
}

TEST(TokenizeCorpus, CountsFromStandardInputAsTableAndJson) {
  ManualClock clock(0);
  TokenizeCorpusOptions o;
  o.tokenizer_path =
      std::string(WW_SOURCE_DIR) + "/tests/fuzz/corpus/tokenizer_json/tokenizer_min.json";
  o.input_path = "-";
  o.clock = &clock;
  // The fixture merges "a b" into "ab": "abab" is 2 tokens, "ab" 1; the blank line is skipped.
  std::istringstream in("{\"text\": \"abab\"}\n\n{\"text\": \"ab\"}\n");
  std::ostringstream out;
  ASSERT_TRUE(TokenizeCorpus(o, in, out).ok());
  EXPECT_THAT(out.str(), HasSubstr("records            2\n"));
  EXPECT_THAT(out.str(), HasSubstr("tokens             3\n"));
  EXPECT_THAT(out.str(), HasSubstr("tokens per record  min 1  p50 1  p95 2  max 2  mean 1.5\n"));

  o.json = true;
  std::istringstream again("{\"text\": \"abab\"}\n{\"text\": \"ab\"}\n");
  std::ostringstream json_out;
  ASSERT_TRUE(TokenizeCorpus(o, again, json_out).ok());
  const auto j = nlohmann::json::parse(json_out.str());
  EXPECT_EQ(j["tokens"], 3);
  EXPECT_EQ(j["tokens_per_record"]["p95"], 2);
  EXPECT_EQ(j["field"], "text");

  o.json = false;
  o.ids = true;
  std::istringstream ids_in("{\"text\": \"abab\"}\n");
  std::ostringstream ids_out;
  ASSERT_TRUE(TokenizeCorpus(o, ids_in, ids_out).ok());
  const std::string ids_text = ids_out.str();  // one string: str() returns a new copy each call
  EXPECT_EQ(std::count(ids_text.begin(), ids_text.end(), ','), 1) << ids_text;

  std::istringstream bad("{\"text\": 5}\n");
  std::ostringstream bad_out;
  Status st = TokenizeCorpus(o, bad, bad_out);
  ASSERT_FALSE(st.ok());
  EXPECT_THAT(st.message(), HasSubstr("-:1: field 'text'"));
  o.input_path = "/nonexistent/in.jsonl";
  st = TokenizeCorpus(o, bad, bad_out);
  EXPECT_EQ(st.code(), StatusCode::kNotFound);
  EXPECT_THAT(st.message(), HasSubstr("/nonexistent/in.jsonl: cannot open"));
}

}  // namespace
}  // namespace ww::dataset
