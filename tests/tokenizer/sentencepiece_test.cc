// SentencePiece models through libsentencepiece: a tiny model is trained with `spm_train` on
// generated text, then our ids are compared with `spm_encode`'s (the reference CLI).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "tokenizer/test_util.h"
#include "tokenizer/tokenizer.h"

namespace ww {
namespace {

using ::ww::testing::Lines;
using ::ww::testing::ReadFile;
using ::ww::testing::RunCommand;
using ::ww::testing::TempDir;
using ::ww::testing::WriteFile;

std::string Corpus(int lines, uint32_t seed) {
  const std::vector<std::string> words = {"the",        "gradient", "rank",   "hangs",  "while",
                                          "power",      "drops",    "to",     "idle",   "NCCL",
                                          "checkpoint", "épocas",   "über",   "данные", "模型",
                                          "训练",       "1234",     "x86_64", "GPU",    "—"};
  std::string out;
  uint32_t x = seed;
  for (int i = 0; i < lines; ++i) {
    const int n = 3 + static_cast<int>((x >> 8) % 12);
    for (int k = 0; k < n; ++k) {
      x = x * 1664525u + 1013904223u;
      out += words[(x >> 16) % words.size()];
      out += (x & 7) == 0 ? "  " : " ";
    }
    out += "\n";
  }
  return out;
}

TEST(SentencePiece, MatchesSpmEncodeOnATrainedModel) {
  if (RunCommand("command -v spm_train >/dev/null && command -v spm_encode >/dev/null") != 0) {
    if (testing::InCi()) FAIL() << "spm_train/spm_encode missing (Debian package sentencepiece)";
    GTEST_SKIP() << "spm_train missing";
  }
  TempDir dir;
  WriteFile(dir / "train.txt", Corpus(3000, 1));
  ASSERT_EQ(
      RunCommand("spm_train --input=" + (dir / "train.txt") + " --model_prefix=" + (dir / "m") +
                 " --vocab_size=200 --hard_vocab_limit=false --model_type=bpe"
                 " --character_coverage=1.0"
                 " --minloglevel=2 >/dev/null 2>&1"),
      0);
  const std::string test_text = Corpus(300, 99) + "unseen words ☕ zzz\n";
  WriteFile(dir / "test.txt", test_text);
  ASSERT_EQ(RunCommand("spm_encode --model=" + (dir / "m.model") + " --output_format=id < " +
                       (dir / "test.txt") + " > " + (dir / "ids.txt")),
            0);
  auto tok = Tokenizer::Load(dir / "m.model");
  ASSERT_TRUE(tok.ok()) << tok.status().message();
  const auto text_lines = Lines(test_text);
  const auto id_lines = Lines(ReadFile(dir / "ids.txt"));
  ASSERT_EQ(text_lines.size(), id_lines.size());
  for (size_t i = 0; i < text_lines.size(); ++i) {
    std::string got;
    for (uint32_t id : (*tok)->Encode(text_lines[i])) {
      if (!got.empty()) got += ' ';
      got += std::to_string(id);
    }
    EXPECT_EQ(got, id_lines[i]) << "line " << i + 1 << ": " << text_lines[i];
  }
  // BOS comes first with add_special_tokens; pieces map back to ids.
  const auto with_bos = (*tok)->Encode("the rank", true);
  ASSERT_FALSE(with_bos.empty());
  EXPECT_EQ(with_bos[0], *(*tok)->TokenToId("<s>"));
  EXPECT_EQ((*tok)->TokenToId("no-such-piece"), std::nullopt);
  EXPECT_EQ((*tok)->VocabSize(), Lines(ReadFile(dir / "m.vocab")).size());
}

}  // namespace
}  // namespace ww
