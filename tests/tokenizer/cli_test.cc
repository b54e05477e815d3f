// `wattwatch tokenize` end to end: the real binary on generated data, against the JS oracle.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tokenizer/test_util.h"

namespace ww {
namespace {

using ::testing::HasSubstr;
using ::ww::testing::OracleDir;
using ::ww::testing::OracleIds;
using ::ww::testing::Qwen3Path;
using ::ww::testing::ReadFile;
using ::ww::testing::RunCommand;
using ::ww::testing::TempDir;
using ::ww::testing::WriteFile;

std::string Wattwatch() { return WW_BINARY; }

TEST(TokenizeCli, IdsEqualTheOracleAndCountsAddUp) {
  WW_REQUIRE_ORACLE();
  TempDir dir;
  ASSERT_EQ(RunCommand("node " + OracleDir() + "/gen_lines.mjs --count 2000 --seed 3 > " +
                       (dir / "in.jsonl")),
            0);
  OracleIds("js", Qwen3Path(), dir / "in.jsonl", dir / "js.ids");
  ASSERT_EQ(RunCommand(Wattwatch() + " tokenize --tokenizer " + Qwen3Path() + " --ids " +
                       (dir / "in.jsonl") + " > " + (dir / "ww.ids")),
            0);
  const std::string ours = ReadFile(dir / "ww.ids");
  EXPECT_EQ(ours, ReadFile(dir / "js.ids"));

  ASSERT_EQ(RunCommand(Wattwatch() + " tokenize --tokenizer " + Qwen3Path() + " --count --json " +
                       (dir / "in.jsonl") + " > " + (dir / "count.json")),
            0);
  const auto j = nlohmann::json::parse(ReadFile(dir / "count.json"));
  uint64_t tokens = 0;
  for (const auto& line : testing::Lines(ours)) tokens += nlohmann::json::parse(line).size();
  EXPECT_EQ(j["records"].get<uint64_t>(), 2000u);
  EXPECT_EQ(j["tokens"].get<uint64_t>(), tokens);
  EXPECT_LE(j["tokens_per_record"]["min"].get<uint64_t>(),
            j["tokens_per_record"]["p50"].get<uint64_t>());
}

TEST(TokenizeCli, BadLineExitsTwoNamingFileAndLine) {
  WW_REQUIRE_ORACLE();
  TempDir dir;
  WriteFile(dir / "bad.jsonl", "{\"text\": \"ok\"}\n\n{\"text\": 5}\n");
  const int rc = RunCommand(Wattwatch() + " tokenize --tokenizer " + Qwen3Path() + " " +
                            (dir / "bad.jsonl") + " > /dev/null 2> " + (dir / "err.txt"));
  EXPECT_EQ(rc, 2);
  EXPECT_THAT(ReadFile(dir / "err.txt"),
              HasSubstr("bad.jsonl:3: field 'text' is a JSON number, not a string"));
}

TEST(TokenizeCli, UnsupportedTokenizerExitsTwoNamingTheFeature) {
  TempDir dir;
  WriteFile(dir / "tok.json",
            R"({"model": {"type": "WordPiece", "vocab": {}}, "pre_tokenizer": null})");
  WriteFile(dir / "in.jsonl", "{\"text\": \"x\"}\n");
  const int rc = RunCommand(Wattwatch() + " tokenize --tokenizer " + (dir / "tok.json") + " " +
                            (dir / "in.jsonl") + " 2> " + (dir / "err.txt"));
  EXPECT_EQ(rc, 2);
  EXPECT_THAT(ReadFile(dir / "err.txt"), HasSubstr("model type 'WordPiece' is not supported"));
}

}  // namespace
}  // namespace ww
