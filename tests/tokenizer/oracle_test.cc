// Exact id equality with the reference implementations: tokenizers.js (@huggingface/tokenizers,
// the acceptance oracle) and the Rust `tokenizers` library through its Node binding (what
// transformers uses during training), on Qwen3's tokenizer.json and on variants of it that
// exercise the GPT-2 and Llama-3 families' features.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tokenizer/jsonl_text.h"
#include "tokenizer/test_util.h"

namespace ww {
namespace {

using ::ww::testing::IdsJson;
using ::ww::testing::Lines;
using ::ww::testing::OracleDir;
using ::ww::testing::OracleIds;
using ::ww::testing::Qwen3;
using ::ww::testing::Qwen3Path;
using ::ww::testing::ReadFile;
using ::ww::testing::RunCommand;
using ::ww::testing::TempDir;
using ::ww::testing::WriteFile;

struct Comparison {
  size_t lines = 0;
  size_t mismatches = 0;
  std::string first_mismatches;  // a few, for the failure message
};

// Encodes every line of `jsonl` with `tok` and compares with `expected` (one JSON array a line).
Comparison Compare(const Tokenizer& tok, const std::vector<std::string>& jsonl,
                   const std::vector<std::string>& expected, bool add_special_tokens) {
  Comparison c;
  EXPECT_EQ(jsonl.size(), expected.size());
  for (size_t i = 0; i < jsonl.size() && i < expected.size(); ++i) {
    auto text = ExtractJsonlText(jsonl[i], "text");
    EXPECT_TRUE(text.ok()) << "line " << i + 1 << ": " << text.status().message();
    if (!text.ok()) continue;
    ++c.lines;
    const std::string got = IdsJson(tok.Encode(*text, add_special_tokens));
    if (got != expected[i]) {
      if (++c.mismatches <= 5) {
        c.first_mismatches += "line " + std::to_string(i + 1) + ": " + jsonl[i].substr(0, 300) +
                              "\n  oracle: " + expected[i].substr(0, 300) +
                              "\n  ours:   " + got.substr(0, 300) + "\n";
      }
    }
  }
  return c;
}

TEST(Qwen3Oracle, TenThousandVariedLinesMatchJsAndRustExactly) {
  WW_REQUIRE_ORACLE();
  ASSERT_NE(Qwen3(), nullptr);
  TempDir dir;
  ASSERT_EQ(RunCommand("node " + OracleDir() + "/gen_lines.mjs --count 10000 --seed 1 > " +
                       (dir / "lines.jsonl")),
            0);
  const auto lines = Lines(ReadFile(dir / "lines.jsonl"));
  ASSERT_EQ(lines.size(), 10000u);
  for (const std::string impl : {"js", "rust"}) {
    const auto expected = OracleIds(impl, Qwen3Path(), dir / "lines.jsonl", dir / (impl + ".ids"));
    const Comparison c = Compare(*Qwen3(), lines, expected, false);
    EXPECT_EQ(c.lines, 10000u);
    EXPECT_EQ(c.mismatches, 0u) << impl << " oracle disagrees on " << c.mismatches
                                << " lines, first ones:\n"
                                << c.first_mismatches;
  }
}

// Raw invalid UTF-8 bytes inside JSON strings (not escapes): node decodes the file with the
// WHATWG decoder, one U+FFFD per maximal ill-formed subpart; so must we.
TEST(Qwen3Oracle, RawInvalidUtf8BytesBecomeReplacementCharacters) {
  WW_REQUIRE_ORACLE();
  ASSERT_NE(Qwen3(), nullptr);
  TempDir dir;
  const std::vector<std::string> bad = {
      "\x80",         "\xBF\xBF",     "\xC0\xAF",     "\xC3",
      "\xE0\x80\x80", "\xE2\x82",     "\xED\xA0\x80", "\xED\xBF\xBF",
      "\xF0\x9F",     "\xF0\x9F\x98", "\xF4\x90\x80", "\xF5\x80",
      "\xFE\xFF",     "\xFF",         "\xE2\x28\xA1", "\xF0\x28\x8C\xBC",
      "\xC3\xA9\x80", "caf\xE9",      "\xE9t\xE9"};
  const std::vector<std::string> context = {"",     "a",  " ", "hello", "  ",        "\xC3\xA9",
                                            "日本", "'s", "1", "\\n",   "<|im_end|>"};
  std::string file;
  uint32_t x = 12345;
  auto next = [&] {
    x = x * 1103515245u + 12345u;
    return (x >> 16) & 0x7fff;
  };
  for (int i = 0; i < 600; ++i) {
    std::string text;
    const int parts = 1 + static_cast<int>(next() % 6);
    for (int k = 0; k < parts; ++k) {
      text += context[next() % context.size()];
      text += bad[next() % bad.size()];
    }
    file += "{\"text\": \"" + text + "\"}\n";
  }
  // Very long white-space runs, where the regex backtracks the most.
  file += "{\"text\": \"" + std::string(50000, ' ') + "x\"}\n";
  std::string tabs;
  for (int i = 0; i < 20000; ++i) tabs += "\\t";
  file += "{\"text\": \"a" + tabs + "\"}\n";
  std::string crlf;
  for (int i = 0; i < 5000; ++i) crlf += "\\r\\n ";
  file += "{\"text\": \"" + crlf + "\"}\n";
  // Letters and digits first assigned in Unicode 15 (CJK Extension H, Kawi, Kaktovik numerals),
  // newer than PCRE2 10.42's tables: before a contraction they decide where the piece ends.
  for (const char* s : {"\\ud884\\udf50's", "\\ud807\\udf04's \\ud807\\udf50's",
                        "x\\ud834\\udec0's \\ud839\\udcd0's", "\\u4e00's"}) {
    file += std::string("{\"text\": \"") + s + "\"}\n";
  }
  WriteFile(dir / "bad.jsonl", file);
  const auto lines = Lines(file);
  const auto expected = OracleIds("js", Qwen3Path(), dir / "bad.jsonl", dir / "js.ids");
  const Comparison c = Compare(*Qwen3(), lines, expected, false);
  EXPECT_EQ(c.mismatches, 0u) << c.first_mismatches;
}

// Variants of Qwen3's tokenizer.json with the other families' settings, checked against the Rust
// library (the training reference) and tokenizers.js.
class VariantOracle : public ::testing::Test {
 protected:
  static nlohmann::json Base() { return nlohmann::json::parse(ReadFile(Qwen3Path())); }

  // Writes `j`, loads it, and compares 1500 generated lines with the Rust library and, unless
  // `skip_js`, tokenizers.js. Lines containing one of `js_blind_spots` are not compared with
  // tokenizers.js (known divergences of tokenizers.js from the Rust library).
  void Check(const nlohmann::json& j, bool add_special_tokens, bool skip_js = false,
             const std::vector<std::string>& js_blind_spots = {}) {
    TempDir dir;
    WriteFile(dir / "tokenizer.json", j.dump());
    auto tok = Tokenizer::Load(dir / "tokenizer.json");
    ASSERT_TRUE(tok.ok()) << tok.status().message();
    ASSERT_EQ(RunCommand("node " + OracleDir() + "/gen_lines.mjs --count 1500 --seed 7 > " +
                         (dir / "lines.jsonl")),
              0);
    const auto lines = Lines(ReadFile(dir / "lines.jsonl"));
    const std::string extra = add_special_tokens ? "--add-special-tokens" : "";
    for (const std::string impl : {"rust", "js"}) {
      if (impl == "js" && skip_js) continue;
      const auto expected = OracleIds(impl, dir / "tokenizer.json", dir / "lines.jsonl",
                                      dir / (impl + ".ids"), extra);
      if (impl == "js" && !js_blind_spots.empty()) {
        std::vector<std::string> kept_lines, kept_expected;
        for (size_t i = 0; i < lines.size() && i < expected.size(); ++i) {
          if (std::any_of(js_blind_spots.begin(), js_blind_spots.end(),
                          [&](const auto& b) { return lines[i].find(b) != std::string::npos; })) {
            continue;
          }
          kept_lines.push_back(lines[i]);
          kept_expected.push_back(expected[i]);
        }
        ASSERT_GT(kept_lines.size(), lines.size() / 2);
        const Comparison c = Compare(**tok, kept_lines, kept_expected, add_special_tokens);
        EXPECT_EQ(c.mismatches, 0u) << impl << ":\n" << c.first_mismatches;
        continue;
      }
      const Comparison c = Compare(**tok, lines, expected, add_special_tokens);
      EXPECT_EQ(c.mismatches, 0u) << impl << ":\n" << c.first_mismatches;
    }
  }
};

TEST_F(VariantOracle, Gpt2StyleByteLevelRegexWithPrefixSpace) {
  WW_REQUIRE_ORACLE();
  auto j = Base();
  j["normalizer"] = nullptr;
  j["pre_tokenizer"] = {{"type", "ByteLevel"},
                        {"add_prefix_space", true},
                        {"trim_offsets", true},
                        {"use_regex", true}};
  // GPT-2 has one added token, matched on normalized text.
  j["added_tokens"] = nlohmann::json::array({{{"id", 151643},
                                              {"content", "<|endoftext|>"},
                                              {"single_word", false},
                                              {"lstrip", false},
                                              {"rstrip", false},
                                              {"normalized", true},
                                              {"special", true}}});
  // tokenizers.js hard-codes ByteLevel's GPT-2 pattern as a JavaScript regex, whose \s includes
  // U+FEFF and lacks U+0085; Oniguruma's \s (the Rust library's, and ours) is the reverse.
  Check(j, false, false, {"\xEF\xBB\xBF", "\xC2\x85"});
}

TEST_F(VariantOracle, Llama3StyleIgnoreMergesAndBeginOfTextTemplate) {
  WW_REQUIRE_ORACLE();
  auto j = Base();
  j["normalizer"] = nullptr;
  j["model"]["ignore_merges"] = true;
  j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] =
      R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
  j["post_processor"] = nlohmann::json::parse(R"({
    "type": "Sequence", "processors": [
      {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": false, "use_regex": true},
      {"type": "TemplateProcessing",
       "single": [{"SpecialToken": {"id": "<|im_start|>", "type_id": 0}},
                  {"Sequence": {"id": "A", "type_id": 0}}],
       "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
       "special_tokens": {"<|im_start|>": {"id": "<|im_start|>", "ids": [151644],
                                           "tokens": ["<|im_start|>"]}}}]})");
  Check(j, true);
}

// lstrip/rstrip on added tokens: the Rust library is the reference; tokenizers.js is not asked.
TEST_F(VariantOracle, AddedTokensWithLstripAndRstripMatchRust) {
  WW_REQUIRE_ORACLE();
  auto j = Base();
  for (auto& a : j["added_tokens"]) {
    if (a["content"] == "<|im_end|>") a["lstrip"] = true;
    if (a["content"] == "<think>") a["rstrip"] = true;
    if (a["content"] == "<|endoftext|>") {
      a["lstrip"] = true;
      a["rstrip"] = true;
    }
  }
  Check(j, false, /*skip_js=*/true);
}

}  // namespace
}  // namespace ww
