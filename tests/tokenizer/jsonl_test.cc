// JSON-lines extraction (field lookup, lone surrogates, invalid bytes) and the threaded driver.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>

#include "tokenizer/jsonl_text.h"
#include "tokenizer/test_util.h"

namespace ww {
namespace {

using ::testing::HasSubstr;
using ::ww::testing::Qwen3;

const std::string kReplacementChar = "\xEF\xBF\xBD";

TEST(ExtractJsonlText, ReadsTheFieldAndRepairsInvalidText) {
  EXPECT_EQ(*ExtractJsonlText(R"({"text": "a\nb", "n": 1})", "text"), "a\nb");
  EXPECT_EQ(*ExtractJsonlText(R"({"content": "x"})", "content"), "x");
  // A valid pair stays an emoji; lone halves become U+FFFD, like JavaScript's TextEncoder.
  EXPECT_EQ(*ExtractJsonlText(R"({"text": "\ud83d\ude00"})", "text"), "\xF0\x9F\x98\x80");
  EXPECT_EQ(*ExtractJsonlText(R"({"text": "a\udc80b"})", "text"), "a" + kReplacementChar + "b");
  EXPECT_EQ(*ExtractJsonlText(R"({"text": "\ud800"})", "text"), kReplacementChar);
  EXPECT_EQ(*ExtractJsonlText(R"({"text": "\ude00\ud83d"})", "text"),
            kReplacementChar + kReplacementChar);
  EXPECT_EQ(*ExtractJsonlText(R"({"text": "\ud83d\ud83d\ude00"})", "text"),
            kReplacementChar + "\xF0\x9F\x98\x80");
  // An escaped backslash followed by "udc80" is text, not an escape.
  EXPECT_EQ(*ExtractJsonlText(R"({"text": "\\udc80"})", "text"), "\\udc80");
  // Raw invalid bytes in a string: one U+FFFD per maximal subpart.
  EXPECT_EQ(*ExtractJsonlText("{\"text\": \"caf\xE9\"}", "text"), "caf" + kReplacementChar);
}

TEST(ExtractJsonlText, BadLinesSayWhatIsWrong) {
  EXPECT_THAT(ExtractJsonlText("{\"text\": ", "text").status().message(),
              HasSubstr("not valid JSON"));
  EXPECT_THAT(ExtractJsonlText("[1, 2]", "text").status().message(),
              HasSubstr("a JSON array where an object was expected"));
  EXPECT_THAT(ExtractJsonlText(R"({"body": "x"})", "text").status().message(),
              HasSubstr("field 'text' missing"));
  EXPECT_THAT(ExtractJsonlText(R"({"text": 3})", "text").status().message(),
              HasSubstr("field 'text' is a JSON number, not a string"));
}

TEST(TokenizeJsonl, KeepsOrderAcrossThreadsAndBatches) {
  WW_REQUIRE_ORACLE();
  const Tokenizer* t = Qwen3();
  ASSERT_NE(t, nullptr);
  std::string file;
  std::vector<std::string> texts;
  for (int i = 0; i < 257; ++i) {
    texts.push_back("record " + std::to_string(i) + std::string(static_cast<size_t>(i % 13), '!'));
    file += "{\"text\": \"" + texts.back() + "\"}\r\n";
    if (i % 50 == 0) file += "   \n";  // blank lines are skipped
  }
  std::istringstream in(file);
  JsonlTokenizeOptions options;
  options.threads = 2;
  options.batch_lines = 16;
  options.keep_ids = true;
  std::vector<JsonlLineResult> got;
  auto summary = TokenizeJsonl(in, "mem.jsonl", *t, options,
                               [&](const JsonlLineResult& r) { got.push_back(r); });
  ASSERT_TRUE(summary.ok()) << summary.status().message();
  ASSERT_EQ(got.size(), texts.size());
  EXPECT_EQ(summary->records, texts.size());
  uint64_t tokens = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    EXPECT_EQ(got[i].ids, t->Encode(texts[i])) << i;
    EXPECT_EQ(got[i].token_count, got[i].ids.size());
    tokens += got[i].token_count;
    if (i > 0) {
      EXPECT_GT(got[i].line_number, got[i - 1].line_number);
    }
  }
  EXPECT_EQ(summary->tokens, tokens);
  EXPECT_EQ(got[1].line_number, 3u);  // line 2 is blank
}

TEST(TokenizeJsonl, FirstBadLineStopsWithFileAndLine) {
  WW_REQUIRE_ORACLE();
  std::istringstream in("{\"text\": \"a\"}\n{\"text\": \"b\"}\n{\"txt\": \"c\"}\n{oops\n");
  JsonlTokenizeOptions options;
  options.batch_lines = 2;
  int calls = 0;
  auto r = TokenizeJsonl(in, "data/train.jsonl", *Qwen3(), options,
                         [&](const JsonlLineResult&) { ++calls; });
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidInput);
  EXPECT_THAT(r.status().message(), HasSubstr("data/train.jsonl:3: field 'text' missing"));
  EXPECT_EQ(calls, 2);
}

}  // namespace
}  // namespace ww
