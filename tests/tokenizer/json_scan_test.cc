// The tokenizer.json scanner's error paths: each error names the file and the member (the name is
// built from a temporary, which the scanner once kept only by reference).
#include "tokenizer/json_scan.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace ww::tokjson {
namespace {

TEST(JsonScan, VocabErrorsNameTheFileAndMember) {
  auto no_entry = [](const std::string&, uint64_t) {};
  for (const char* bad : {R"({"a": "zero"})", R"({"a": -1})", R"({"a": 1,})", R"({"a" 1})",
                          R"({"a": 1)", R"({"\ud800": 1, "b": 1.5})"}) {
    Status st = ParseVocab(bad, "/models/x/tokenizer.json", no_entry);
    ASSERT_FALSE(st.ok()) << bad;
    EXPECT_NE(st.message().find("/models/x/tokenizer.json (model.vocab)"), std::string::npos)
        << st.message();
    EXPECT_NE(st.message().find("at byte"), std::string::npos) << st.message();
  }
  std::vector<std::pair<std::string, uint64_t>> seen;
  ASSERT_TRUE(ParseVocab(R"({"a": 0, "\u00e9": 7})", "f", [&](const std::string& t, uint64_t id) {
                seen.emplace_back(t, id);
              }).ok());
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[1].first, "\xC3\xA9");
  EXPECT_EQ(seen[1].second, 7u);
}

TEST(JsonScan, MergesErrorsNameTheFileAndMember) {
  auto accept = [](size_t, const std::string&, const std::string&, bool) { return Status::Ok(); };
  for (const char* bad :
       {R"(["a b", 3])", R"([["a"], ["b", "c"]])", R"(["a b")", R"([["a", 1]])"}) {
    Status st = ParseMerges(bad, "/m/tokenizer.json", accept);
    ASSERT_FALSE(st.ok()) << bad;
    EXPECT_NE(st.message().find("/m/tokenizer.json"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("model.merges"), std::string::npos) << st.message();
  }
  size_t n = 0;
  ASSERT_TRUE(ParseMerges(R"(["a b", ["c", "d"]])", "f",
                          [&](size_t rank, const std::string& a, const std::string& b, bool pair) {
                            EXPECT_EQ(rank, n);
                            EXPECT_EQ(pair, n == 1);
                            EXPECT_EQ(a, n == 0 ? "a b" : "c");
                            EXPECT_EQ(b, n == 0 ? "" : "d");
                            ++n;
                            return Status::Ok();
                          })
                  .ok());
  EXPECT_EQ(n, 2u);
}

TEST(JsonScan, SplitRefusesABrokenModelMember) {
  auto big = SplitBigMembers(R"({"model": {"vocab": {"a": 1}, "merges": ["a b"]}, "x": 1})", "f");
  ASSERT_TRUE(big.ok()) << big.status().message();
  EXPECT_EQ(big->vocab, R"({"a": 1})");
  EXPECT_EQ(big->merges, R"(["a b"])");
  EXPECT_EQ(big->rest.find("\"a\": 1"), std::string::npos);
  EXPECT_FALSE(SplitBigMembers(R"({"model": {"vocab": {"a": 1})", "f").ok());
}

TEST(JsonScan, FindTokenIdsAddedTokensFirstAnyModelType) {
  const std::string bpe =
      R"({"added_tokens": [{"id": 9, "content": "</s>"}, {"id": "x", "content": "<pad>"}],
          "model": {"type": "BPE", "vocab": {"a": 0, "</s>": 2, "<pad>": 3}, "merges": []}})";
  auto ids = FindTokenIds(bpe, "t.json", {"</s>", "<pad>", "<unk>"});
  ASSERT_TRUE(ids.ok()) << ids.status().message();
  EXPECT_EQ(ids->id_count, 10u);
  EXPECT_EQ(ids->ids.at("</s>"), 9u);   // the added token's id, not the vocabulary's
  EXPECT_EQ(ids->ids.at("<pad>"), 3u);  // an added token without a numeric id is skipped
  EXPECT_EQ(ids->ids.count("<unk>"), 0u);

  const std::string unigram = R"({"model": {"type": "Unigram", "vocab": [["<s>", 0], ["b", -1]]}})";
  ids = FindTokenIds(unigram, "u.json", {"b"});
  ASSERT_TRUE(ids.ok()) << ids.status().message();
  EXPECT_EQ(ids->id_count, 2u);
  EXPECT_EQ(ids->ids.at("b"), 1u);

  auto not_object = FindTokenIds("[1, 2]", "/x/tokenizer.json", {});
  ASSERT_FALSE(not_object.ok());
  EXPECT_NE(not_object.status().message().find("/x/tokenizer.json: not a tokenizer.json"),
            std::string::npos);
  auto no_vocab = FindTokenIds(R"({"model": {}})", "/y/tokenizer.json", {});
  ASSERT_FALSE(no_vocab.ok());
  EXPECT_NE(no_vocab.status().message().find("no vocabulary"), std::string::npos);
  auto bad_vocab = FindTokenIds(R"({"model": {"vocab": {"a": -1}}})", "/z/tokenizer.json", {});
  ASSERT_FALSE(bad_vocab.ok());
  EXPECT_NE(bad_vocab.status().message().find("(model.vocab)"), std::string::npos);
}

}  // namespace
}  // namespace ww::tokjson
