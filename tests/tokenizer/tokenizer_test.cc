// Unit tests of the tokenizer's parts: UTF-8 repair, the two merge loops, loading errors, and
// concurrent use. End-to-end equality with the reference libraries is in oracle_test.cc.
#include "tokenizer/tokenizer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "tokenizer/hf_bpe.h"
#include "tokenizer/test_util.h"

namespace ww {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::ww::testing::Qwen3;

const std::string kFffd = "\xEF\xBF\xBD";

// The Unicode standard's examples of maximal subparts (chapter 3, "U+FFFD Substitution of
// Maximal Subparts"), which the WHATWG decoder and Rust's from_utf8_lossy follow.
TEST(SanitizeUtf8, OneReplacementPerMaximalSubpart) {
  EXPECT_EQ(SanitizeUtf8("abc"), "abc");
  EXPECT_EQ(SanitizeUtf8("\xC3\xA9"), "\xC3\xA9");
  EXPECT_EQ(SanitizeUtf8("\x80"), kFffd);
  EXPECT_EQ(SanitizeUtf8("\xC0\xAF"), kFffd + kFffd);              // C0 never starts a sequence
  EXPECT_EQ(SanitizeUtf8("\xE0\x80\x80"), kFffd + kFffd + kFffd);  // overlong: E0 needs A0..BF
  EXPECT_EQ(SanitizeUtf8("\xED\xA0\x80"), kFffd + kFffd + kFffd);  // surrogate
  EXPECT_EQ(SanitizeUtf8("\xF0\x9F\x98"), kFffd);                  // truncated: one subpart
  EXPECT_EQ(SanitizeUtf8("\xF0\x9F\x98x"), kFffd + "x");
  EXPECT_EQ(SanitizeUtf8("\xF4\x90\x80\x80"), kFffd + kFffd + kFffd + kFffd);  // > U+10FFFF
  EXPECT_EQ(SanitizeUtf8("\xE2\x28\xA1"), kFffd + "(" + kFffd);
  EXPECT_EQ(SanitizeUtf8("a\xFF"
                         "b"),
            "a" + kFffd + "b");
  EXPECT_EQ(SanitizeUtf8(std::string("\0x", 2)), std::string("\0x", 2));
}

TEST(SanitizeUtf8, EncodeTreatsInvalidBytesAsReplacementCharacters) {
  WW_REQUIRE_ORACLE();
  ASSERT_NE(Qwen3(), nullptr);
  EXPECT_EQ(Qwen3()->Encode("caf\xE9 ok"), Qwen3()->Encode("caf" + kFffd + " ok"));
  EXPECT_EQ(Qwen3()->Encode("\xF0\x9F\x98"), Qwen3()->Encode(kFffd));
}

// The short-piece loop (rescans ranks) and the heap loop (for long pieces) must agree on every
// input, or a piece's ids would depend on its length class.
TEST(BpeMerge, ShortAndHeapLoopsAgree) {
  WW_REQUIRE_ORACLE();
  ASSERT_NE(Qwen3(), nullptr);
  const auto* bpe = dynamic_cast<const HfBpeTokenizer*>(Qwen3());
  ASSERT_NE(bpe, nullptr);
  std::mt19937 rng(42);
  const std::vector<std::string> alphabet = {"a",        "b",
                                             "e",        "n",
                                             "t",        "s",
                                             " ",        "  ",
                                             "\n",       "th",
                                             "in",       "er",
                                             "\xC3\xA9", "\xE4\xB8\xAD",
                                             "=",        "0",
                                             "1",        "\xF0\x9F\x98\x80",
                                             "'"};
  for (int i = 0; i < 3000; ++i) {
    std::string piece;
    const int n = 1 + static_cast<int>(rng() % 40);
    for (int k = 0; k < n; ++k) piece += alphabet[rng() % alphabet.size()];
    ASSERT_EQ(bpe->MergeForTest(piece, false), bpe->MergeForTest(piece, true)) << piece;
  }
  // A whole merge tree down to one token, and a run that merges pairwise.
  EXPECT_EQ(bpe->MergeForTest(" the", false).size(), 1u);
  EXPECT_EQ(bpe->MergeForTest(std::string(64, ' '), true),
            bpe->MergeForTest(std::string(64, ' '), false));
}

TEST(PreTokenizer, QwenPatternCutsAsDocumented) {
  WW_REQUIRE_ORACLE();
  const auto* bpe = dynamic_cast<const HfBpeTokenizer*>(Qwen3());
  ASSERT_NE(bpe, nullptr);
  // Contractions in any case, digits one by one, `\s+(?!\S)` leaving the last space to the word.
  EXPECT_THAT(bpe->PreTokenizeForTest("It'S 2024   ok\r\n\tx"),
              ElementsAre("It", "'S", " ", "2", "0", "2", "4", "  ", " ok", "\r\n", "\tx"));
  // U+0085 is white space for Oniguruma (and so for the Rust library), unlike PCRE2's UCP \s.
  EXPECT_THAT(bpe->PreTokenizeForTest("a\xC2\x85\xC2\x85"
                                      "b"),
              ElementsAre("a", "\xC2\x85",
                          "\xC2\x85"
                          "b"));
}

TEST(Encode, CountTokensEqualsEncodeSizeAndSpecialTokensSplitOut) {
  WW_REQUIRE_ORACLE();
  const Tokenizer* t = Qwen3();
  ASSERT_NE(t, nullptr);
  const std::string text = "Hello<|im_end|>world <|endoftext|>\n<think>\n</think> <|im_sta";
  EXPECT_EQ(t->CountTokens(text), t->Encode(text).size());
  const auto ids = t->Encode(text);
  const auto im_end = t->TokenToId("<|im_end|>");
  ASSERT_TRUE(im_end.has_value());
  EXPECT_EQ(*im_end, 151645u);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), *im_end), 1);
  EXPECT_EQ(t->TokenToId("<|endoftext|>"), std::optional<uint32_t>(151643));
  EXPECT_EQ(t->TokenToId("Ġthe"), std::optional<uint32_t>(279));
  EXPECT_EQ(t->TokenToId("no such token"), std::nullopt);
  EXPECT_EQ(t->VocabSize(), 151669u);
  EXPECT_TRUE(t->Encode("").empty());
  // NFC: a decomposed é tokenizes like the composed one; the Angstrom sign like Å.
  EXPECT_EQ(t->Encode("caf"
                      "e\xCC\x81"),
            t->Encode("caf\xC3\xA9"));
  EXPECT_EQ(t->Encode("\xE2\x84\xAB"), t->Encode("\xC3\x85"));
}

TEST(Encode, ConcurrentCallsGiveTheSameIds) {
  WW_REQUIRE_ORACLE();
  const Tokenizer* t = Qwen3();
  ASSERT_NE(t, nullptr);
  std::vector<std::string> texts;
  for (int i = 0; i < 400; ++i) {
    texts.push_back("line " + std::to_string(i * 7919) + " of some text, don't   stop\n" +
                    std::string(static_cast<size_t>(i % 50), 'x') + " \xE4\xB8\xAD\xE6\x96\x87");
  }
  std::vector<std::vector<uint32_t>> serial;
  for (const auto& s : texts) serial.push_back(t->Encode(s));
  std::vector<std::vector<std::vector<uint32_t>>> parallel(4);
  std::vector<std::thread> threads;
  for (int w = 0; w < 4; ++w) {
    threads.emplace_back([&, w] {
      for (int rep = 0; rep < 3; ++rep) {
        parallel[w].clear();
        for (const auto& s : texts) parallel[w].push_back(t->Encode(s));
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int w = 0; w < 4; ++w) EXPECT_EQ(parallel[w], serial) << "thread " << w;
}

// A minimal byte-level tokenizer.json, to check what Load accepts and refuses.
nlohmann::json TinyByteLevel() {
  nlohmann::json vocab = nlohmann::json::object();
  for (int c = 'a'; c <= 'z'; ++c) vocab[std::string(1, static_cast<char>(c))] = c - 'a';
  vocab["Ġ"] = 26;
  vocab["ab"] = 27;
  vocab["abc"] = 28;
  vocab["Ġab"] = 29;
  return {
      {"version", "1.0"},
      {"added_tokens", nlohmann::json::array()},
      {"normalizer", nullptr},
      {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}}},
      {"post_processor", nullptr},
      {"model",
       {{"type", "BPE"},
        {"vocab", vocab},
        {"merges", nlohmann::json::array({"a b", "ab c", "Ġ ab"})}}}};
}

Status LoadStatus(const nlohmann::json& j) {
  auto r = Tokenizer::FromJsonText(j.dump(), "tiny.json");
  return r.ok() ? Status::Ok() : r.status();
}

TEST(Load, TinyByteLevelModelMergesByRank) {
  auto r = Tokenizer::FromJsonText(TinyByteLevel().dump(), "tiny.json");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_THAT((*r)->Encode("abc ab abd"), ElementsAre(28, 29, 29, 3));
  EXPECT_EQ((*r)->VocabSize(), 30u);
  // Merges given as [a, b] pairs (newer files) load the same.
  auto j = TinyByteLevel();
  j["model"]["merges"] = nlohmann::json::array({{"a", "b"}, {"ab", "c"}, {"Ġ", "ab"}});
  auto r2 = Tokenizer::FromJsonText(j.dump(), "tiny.json");
  ASSERT_TRUE(r2.ok());
  EXPECT_EQ((*r2)->Encode("abc ab abd"), (*r)->Encode("abc ab abd"));
}

TEST(Load, RefusesUnsupportedFeaturesByName) {
  struct Case {
    std::function<void(nlohmann::json&)> edit;
    std::string message;
  };
  const std::vector<Case> cases = {
      {[](auto& j) {
         j["normalizer"] = {{"type", "BertNormalizer"}};
       },
       "normalizer 'BertNormalizer'"},
      {[](auto& j) {
         j["normalizer"] = {{"type", "Sequence"},
                            {"normalizers", {{{"type", "NFC"}}, {{"type", "Precompiled"}}}}};
       },
       "normalizer 'Precompiled'"},
      {[](auto& j) { j["model"]["type"] = "WordPiece"; },
       "model type 'WordPiece' is not supported"},
      {[](auto& j) { j["model"]["type"] = "Unigram"; }, "model type 'Unigram' is not supported"},
      {[](auto& j) { j["model"]["dropout"] = 0.1; }, "model.dropout"},
      {[](auto& j) {
         j["pre_tokenizer"] = {{"type", "Whitespace"}};
       },
       "pre_tokenizer 'Whitespace'"},
      {[](auto& j) {
         j["pre_tokenizer"] = {{"type", "Metaspace"}, {"prepend_scheme", "sometimes"}};
       },
       "prepend_scheme 'sometimes'"},
      {[](auto& j) {
         // After ByteLevel the Rust library hands later steps the byte-mapped text.
         j["pre_tokenizer"] = {{"type", "Sequence"},
                               {"pretokenizers",
                                {{{"type", "ByteLevel"}, {"use_regex", true}},
                                 {{"type", "Digits"}, {"individual_digits", true}}}}};
       },
       "pre_tokenizer 'Digits' after ByteLevel"},
      {[](auto& j) {
         j["pre_tokenizer"] = {
             {"type", "Sequence"},
             {"pretokenizers",
              {{{"type", "Split"}, {"pattern", {{"Regex", "\\s+"}}}, {"behavior", "Sideways"}},
               {{"type", "ByteLevel"}, {"use_regex", false}}}}};
       },
       "behavior 'Sideways'"},
      {[](auto& j) {
         j["post_processor"] = {{"type", "SomethingNew"}};
       },
       "post_processor 'SomethingNew'"},
      {[](auto& j) {
         j["added_tokens"] = {{{"id", 30}, {"content", "<x>"}, {"single_word", true}}};
       },
       "single_word"},
  };
  for (const auto& c : cases) {
    auto j = TinyByteLevel();
    c.edit(j);
    const Status s = LoadStatus(j);
    EXPECT_EQ(s.code(), StatusCode::kInvalidInput) << c.message;
    EXPECT_THAT(s.message(), HasSubstr(c.message));
    EXPECT_THAT(s.message(), HasSubstr("tiny.json"));
  }
}

TEST(Load, BadFilesGiveErrorsNamingThem) {
  EXPECT_THAT(LoadStatus(nlohmann::json::array()).message(), HasSubstr("not a JSON object"));
  auto j = TinyByteLevel();
  j["model"]["merges"] = nlohmann::json::array({"a q9"});
  EXPECT_THAT(LoadStatus(j).message(), HasSubstr("model.merges[0]"));
  auto bad = Tokenizer::FromJsonText("{\"model\": ", "broken.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("broken.json: not valid JSON"));
  auto missing = Tokenizer::Load("/nonexistent/tokenizer.json");
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  testing::TempDir dir;
  testing::WriteFile(dir / "junk.model", std::string("\x0a\xff\xff\xff\x01garbage", 12));
  auto junk = Tokenizer::Load(dir / "junk.model");
  ASSERT_FALSE(junk.ok());
  EXPECT_THAT(junk.status().message(), HasSubstr("junk.model"));
}

// A SentencePiece-style (no ByteLevel) BPE: characters are the symbols, Metaspace marks word
// starts, characters outside the vocabulary fall back to <0xAB> byte tokens or to <unk>.
nlohmann::json TinyCharLevel() {
  nlohmann::json vocab = {{"<unk>", 0}, {"<s>", 1}, {"<0xC3>", 2}, {"<0xA9>", 3}};
  for (const char* t : {"\u2581", "h", "e", "l", "o", "w", "r", "d", "\u2581h", "ll", "llo",
                        "\u2581he", "\u2581hello", "x"}) {
    vocab[nlohmann::json::parse(std::string("\"") + t + "\"").get<std::string>()] = vocab.size();
  }
  return {
      {"added_tokens", {{{"id", 1}, {"content", "<s>"}, {"special", true}}}},
      {"normalizer", nullptr},
      {"pre_tokenizer",
       {{"type", "Metaspace"},
        {"replacement", "\u2581"},
        {"prepend_scheme", "first"},
        {"split", true}}},
      {"post_processor", nullptr},
      {"model",
       {{"type", "BPE"},
        {"unk_token", "<unk>"},
        {"byte_fallback", true},
        {"fuse_unk", true},
        {"vocab", vocab},
        {"merges",
         nlohmann::json::array(
             {{"\u2581", "h"}, {"l", "l"}, {"ll", "o"}, {"\u2581h", "e"}, {"\u2581he", "llo"}})}}}};
}

TEST(Load, CharLevelBpeWithMetaspaceByteFallbackAndUnk) {
  auto r = Tokenizer::FromJsonText(TinyCharLevel().dump(), "tiny.json");
  ASSERT_TRUE(r.ok()) << r.status().message();
  const Tokenizer& t = **r;
  const uint32_t kMeta = *t.TokenToId("\u2581"), kHello = *t.TokenToId("\u2581hello");
  // "first": only the text's first piece gets the ▁ prefix; split cuts before every ▁.
  EXPECT_THAT(t.Encode("hello hello"), ElementsAre(kHello, kHello));
  EXPECT_THAT(t.Encode("<s>hello"),
              ElementsAre(1, *t.TokenToId("h"), *t.TokenToId("e"), *t.TokenToId("llo")));
  // é is not in the vocabulary: its two bytes' fallback tokens.
  EXPECT_THAT(t.Encode("x\u00e9"), ElementsAre(kMeta, *t.TokenToId("x"), 2, 3));
  // Characters with neither: one <unk> for the run (fuse_unk), then ordinary symbols again.
  EXPECT_THAT(t.Encode("\u4e2d\u6587x"), ElementsAre(kMeta, 0, *t.TokenToId("x")));
  auto j = TinyCharLevel();
  j["model"]["fuse_unk"] = false;
  auto unfused = Tokenizer::FromJsonText(j.dump(), "tiny.json");
  ASSERT_TRUE(unfused.ok());
  EXPECT_THAT((*unfused)->Encode("\u4e2d\u6587x"), ElementsAre(kMeta, 0, 0, *t.TokenToId("x")));
  EXPECT_EQ(t.CountTokens("hello hello x\u00e9"), t.Encode("hello hello x\u00e9").size());
}

TEST(Load, NormalizersApplyInOrder) {
  auto j = TinyCharLevel();
  j["pre_tokenizer"] = nullptr;
  j["normalizer"] = nlohmann::json::parse(R"({"type": "Sequence", "normalizers": [
      {"type": "NFD"}, {"type": "StripAccents"}, {"type": "Lowercase"},
      {"type": "Strip", "strip_left": true, "strip_right": true},
      {"type": "Replace", "pattern": {"Regex": " +"}, "content": " "},
      {"type": "Prepend", "prepend": "\u2581"},
      {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]})");
  auto r = Tokenizer::FromJsonText(j.dump(), "tiny.json");
  ASSERT_TRUE(r.ok()) << r.status().message();
  const uint32_t kHello = *(*r)->TokenToId("\u2581hello");
  // Accents dropped, case folded, outer spaces stripped, inner runs of spaces made one, each
  // word marked: the same ids as plain "hello hello".
  EXPECT_THAT((*r)->Encode("  H\u00c9LLO    h\u00e9llo \t"), ElementsAre(kHello, kHello));
  EXPECT_TRUE((*r)->Encode("").empty());  // Prepend leaves empty text empty
}

}  // namespace
}  // namespace ww
