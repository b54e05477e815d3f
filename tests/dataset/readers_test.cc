// Readers: each format yields the lengths it was written with; malformed files (truncated,
// wrong magic, lying headers, offsets out of order, huge counts) give InvalidInput naming the
// file, never a crash.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <functional>

#include "core/env.h"
#include "dataset/corpus_writers.h"
#include "dataset/sample_length_reader.h"

namespace ww::dataset {
namespace {

using ::testing::ElementsAreArray;
using ::testing::HasSubstr;
using namespace ww::dataset::testing;

Result<std::vector<uint32_t>> ReadAll(Env* env, DataFormat format, const std::string& path,
                                      ReaderOptions options = {}) {
  options.chunk_samples = 3;  // small chunks exercise the chunk boundaries
  auto reader = OpenSampleLengthReader(env, format, path, options);
  if (!reader.ok()) return reader.status();
  std::vector<uint32_t> lengths;
  WW_RETURN_IF_ERROR(ReadAllLengths(reader->get(), &lengths));
  return lengths;
}

const std::vector<uint32_t> kLengths = {5, 0, 17, 3, 8, 1, 40, 2};

TEST(MegatronReader, ReadsLengthsFromIdxAndSamplesIds) {
  MemEnv env;
  auto [idx, bin] = MegatronBytes(kLengths, /*dtype=uint16*/ 8, 1000);
  env.AddFile("d/x.idx", idx);
  env.AddFile("d/x.bin", bin);
  ReaderOptions options;
  options.chunk_samples = 3;
  auto reader = OpenMegatronReader(&env, "d/x", options);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  std::vector<uint32_t> lengths;
  ASSERT_TRUE(ReadAllLengths(reader->get(), &lengths).ok());
  EXPECT_THAT(lengths, ElementsAreArray(kLengths));
  EXPECT_EQ((*reader)->declared_samples(), kLengths.size());
  EXPECT_EQ((*reader)->token_dtype()->name, "uint16");
  EXPECT_GT((*reader)->token_ids().ids_seen, 0u);
  EXPECT_LT((*reader)->token_ids().max_id, 1000);
  EXPECT_GE((*reader)->token_ids().min_id, 0);
  // A ".idx" suffix names the same pair.
  auto again = ReadAll(&env, DataFormat::kMegatron, "d/x.idx");
  ASSERT_TRUE(again.ok());
  EXPECT_THAT(*again, ElementsAreArray(kLengths));
}

struct MegatronCase {
  const char* name;
  std::function<void(std::string* idx, std::string* bin)> mutate;
  const char* message;
};

TEST(MegatronReader, RejectsMalformedIndexes) {
  const std::vector<MegatronCase> cases = {
      {"truncated", [](std::string* idx, std::string*) { idx->resize(20); }, "truncated"},
      {"truncated body", [](std::string* idx, std::string*) { idx->resize(idx->size() - 5); },
       "bytes"},
      {"wrong magic", [](std::string* idx, std::string*) { (*idx)[0] = 'X'; }, "wrong magic"},
      {"bad version", [](std::string* idx, std::string*) { (*idx)[9] = 7; }, "version 7"},
      {"bad dtype", [](std::string* idx, std::string*) { (*idx)[17] = 42; }, "dtype code 42"},
      {"lying count", [](std::string* idx, std::string*) { (*idx)[18] = 9; },
       "declares 9 sequences"},
      {"huge count",
       [](std::string* idx, std::string*) {
         const uint64_t huge = uint64_t{1} << 62;
         std::memcpy(&(*idx)[18], &huge, 8);
       },
       "truncated file or a header that lies"},
      {"negative size",
       [](std::string* idx, std::string*) {
         const int32_t neg = -4;
         std::memcpy(&(*idx)[34 + 4 * 2], &neg, 4);
       },
       "negative size"},
      {"pointers out of order",
       [](std::string* idx, std::string*) {
         const int64_t p = 2;
         std::memcpy(&(*idx)[34 + 4 * 8 + 8 * 3], &p, 8);
       },
       "pointers out of order"},
      {"bin too short", [](std::string*, std::string* bin) { bin->resize(bin->size() - 2); },
       "truncated .bin"},
      {"bin too long", [](std::string*, std::string* bin) { bin->append(4, '\0'); },
       "do not match"},
      {"doc index decreasing",
       [](std::string* idx, std::string*) {
         const int64_t v = 0;
         std::memcpy(&(*idx)[idx->size() - 16], &v, 8);
       },
       "document index"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    auto [idx, bin] = MegatronBytes(kLengths, 4);
    c.mutate(&idx, &bin);
    MemEnv env;
    env.AddFile("x.idx", idx);
    env.AddFile("x.bin", bin);
    auto got = ReadAll(&env, DataFormat::kMegatron, "x");
    ASSERT_FALSE(got.ok());
    EXPECT_EQ(got.status().code(), StatusCode::kInvalidInput) << got.status().message();
    EXPECT_THAT(got.status().message(), HasSubstr("x.idx"));
    EXPECT_THAT(got.status().message(), HasSubstr(c.message));
  }
}

TEST(MegatronReader, MissingBinIsNotFound) {
  MemEnv env;
  env.AddFile("x.idx", MegatronBytes(kLengths).first);
  auto got = ReadAll(&env, DataFormat::kMegatron, "x");
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(got.status().message(), HasSubstr("x.bin"));
}

TEST(NpyReader, ReadsLengthsRowsAndOffsetPairs) {
  MemEnv env;
  std::vector<int64_t> lens(kLengths.begin(), kLengths.end());
  env.AddFile("lengths.npy", NpyBytes<int64_t>("<i8", {lens.size()}, lens));
  auto got = ReadAll(&env, DataFormat::kNpy, "lengths.npy");
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_THAT(*got, ElementsAreArray(kLengths));

  env.AddFile("rows.npy", NpyBytes<uint16_t>("<u2", {4, 6}, std::vector<uint16_t>(24, 7)));
  auto rows = ReadAll(&env, DataFormat::kNpy, "rows.npy");
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  EXPECT_THAT(*rows, ElementsAreArray(std::vector<uint32_t>(4, 6)));

  std::vector<int64_t> offsets = {0};
  std::vector<int32_t> tokens;
  for (uint32_t len : kLengths) {
    offsets.push_back(offsets.back() + len);
    for (uint32_t i = 0; i < len; ++i) tokens.push_back(static_cast<int32_t>(i * 3));
  }
  env.AddFile("pair.offsets.npy", NpyBytes<int64_t>("<i8", {offsets.size()}, offsets));
  env.AddFile("pair.tokens.npy", NpyBytes<int32_t>("<i4", {tokens.size()}, tokens));
  ReaderOptions options;
  options.chunk_samples = 3;
  auto reader = OpenNpyReader(&env, "pair", options);
  ASSERT_TRUE(reader.ok()) << reader.status().message();
  std::vector<uint32_t> pair;
  ASSERT_TRUE(ReadAllLengths(reader->get(), &pair).ok());
  EXPECT_THAT(pair, ElementsAreArray(kLengths));
  EXPECT_EQ((*reader)->token_ids().max_id, 39 * 3);
}

TEST(NpyReader, RejectsMalformedArrays) {
  MemEnv env;
  std::string good = NpyBytes<int32_t>("<i4", {3}, {1, 2, 3});
  std::string wrong_magic = good;
  wrong_magic[1] = 'X';
  std::string truncated = good.substr(0, good.size() - 2);
  std::string lying_shape = NpyBytes<int32_t>("<i4", {1000000000000}, {1, 2, 3});
  std::string negative = NpyBytes<int32_t>("<i4", {3}, {1, -2, 3});
  std::string floats = NpyBytes<float>("<f4", {2}, {1.0f, 2.0f});
  std::string bad_len = good;
  bad_len[8] = '\xff';
  bad_len[9] = '\xff';
  const std::vector<std::pair<std::string, std::string>> cases = {
      {wrong_magic, "wrong magic"}, {truncated, "data bytes"}, {lying_shape, "data bytes"},
      {negative, "length -2"},      {floats, "float32"},       {bad_len, "past the end"},
  };
  for (const auto& [bytes, message] : cases) {
    SCOPED_TRACE(message);
    env.AddFile("bad.npy", bytes);
    auto got = ReadAll(&env, DataFormat::kNpy, "bad.npy");
    ASSERT_FALSE(got.ok());
    EXPECT_EQ(got.status().code(), StatusCode::kInvalidInput);
    EXPECT_THAT(got.status().message(), HasSubstr("bad.npy"));
    EXPECT_THAT(got.status().message(), HasSubstr(message));
  }
  env.AddFile("o.offsets.npy", NpyBytes<int64_t>("<i8", {4}, {0, 5, 3, 9}));
  env.AddFile("o.tokens.npy", NpyBytes<int32_t>("<i4", {9}, std::vector<int32_t>(9, 1)));
  auto ooo = ReadAll(&env, DataFormat::kNpy, "o");
  ASSERT_FALSE(ooo.ok());
  EXPECT_THAT(ooo.status().message(), HasSubstr("offsets out of order"));
  env.AddFile("e.offsets.npy", NpyBytes<int64_t>("<i8", {3}, {0, 5, 8}));
  env.AddFile("e.tokens.npy", NpyBytes<int32_t>("<i4", {9}, std::vector<int32_t>(9, 1)));
  auto end = ReadAll(&env, DataFormat::kNpy, "e");
  ASSERT_FALSE(end.ok());
  EXPECT_THAT(end.status().message(), HasSubstr("offsets end at 8"));
}

TEST(JsonlReader, CountsTheFieldAndSeesEveryId) {
  MemEnv env;
  env.AddFile("a.jsonl", JsonlBytes(kLengths, 500) + "\n  \n");  // trailing blank lines are skipped
  ReaderOptions options;
  options.chunk_samples = 3;
  auto reader = OpenJsonlReader(&env, "a.jsonl", options, /*text=*/false);
  ASSERT_TRUE(reader.ok());
  std::vector<uint32_t> lengths;
  ASSERT_TRUE(ReadAllLengths(reader->get(), &lengths).ok());
  EXPECT_THAT(lengths, ElementsAreArray(kLengths));
  uint64_t total = 0;
  for (uint32_t len : kLengths) total += len;
  EXPECT_EQ((*reader)->token_ids().ids_seen, total);  // "meta.ids" is not counted
  EXPECT_LT((*reader)->token_ids().max_id, 500);
}

TEST(JsonlReader, ErrorsNameFileLineAndField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"{\"input_ids\": [1,2]}\n{\"input_ids\": [1,\n", "a.jsonl:2: invalid JSON"},
      {"{\"input_ids\": [1,2]}\n{\"other\": [1]}\n", "a.jsonl:2: no field 'input_ids'"},
      {"{\"input_ids\": \"hello\"}\n", "a.jsonl:1: field 'input_ids' is a string"},
      {"{\"input_ids\": [[1,2]]}\n", "nested lists"},
      {"{\"input_ids\": [1.5]}\n", "non-integer"},
      {"[1,2,3]\n", "line is an array"},
  };
  for (const auto& [text, message] : cases) {
    SCOPED_TRACE(message);
    MemEnv env;
    env.AddFile("a.jsonl", text);
    auto got = ReadAll(&env, DataFormat::kJsonl, "a.jsonl");
    ASSERT_FALSE(got.ok());
    EXPECT_EQ(got.status().code(), StatusCode::kInvalidInput);
    EXPECT_THAT(got.status().message(), HasSubstr(message));
  }
}

TEST(JsonlReader, LineLongerThanTheLimitIsAnError) {
  MemEnv env;
  env.AddFile("a.jsonl", JsonlBytes({5000}));
  ReaderOptions options;
  options.max_line_bytes = 1000;
  auto got = ReadAll(&env, DataFormat::kJsonl, "a.jsonl", options);
  // The first 4 MiB block holds the whole line, so the limit applies only across refills; a
  // short file parses. A file bigger than one block with a giant line hits the limit.
  ASSERT_TRUE(got.ok());
  env.AddFile("big.jsonl", "{\"input_ids\": [" + std::string(5 << 20, ' ') + "1]}\n");
  auto big = ReadAll(&env, DataFormat::kJsonl, "big.jsonl", options);
  ASSERT_FALSE(big.ok());
  EXPECT_THAT(big.status().message(), HasSubstr("line longer than 1000 bytes"));
}

TEST(TextJsonlReader, WithoutTokenizerIsUnavailable) {
  MemEnv env;
  env.AddFile("t.jsonl", "{\"text\": \"hello\"}\n");
  ReaderOptions options;
  options.field = "text";
  auto got = ReadAll(&env, DataFormat::kTextJsonl, "t.jsonl", options);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.status().code(), StatusCode::kUnavailable);
  EXPECT_THAT(got.status().message(), HasSubstr("text-jsonl needs a tokenizer"));
}

// A whitespace "tokenizer" stands in for the BPE one: the reader's job is the plumbing.
class SplitCounter final : public TokenCounter {
 public:
  Status Encode(std::string_view text, std::vector<uint32_t>* ids) override {
    ids->clear();
    bool in_word = false;
    for (char c : text) {
      if (c == ' ') {
        in_word = false;
      } else if (!in_word) {
        ids->push_back(static_cast<uint32_t>(c));
        in_word = true;
      }
    }
    return Status::Ok();
  }
};

TEST(TextJsonlReader, CountsTokensFromTheTokenizer) {
  MemEnv env;
  env.AddFile("t.jsonl",
              "{\"text\": \"a b c\", \"n\": 1}\n{\"text\": \"\"}\n{\"text\": \"hello world\"}\n");
  SplitCounter counter;
  ReaderOptions options;
  options.field = "text";
  options.tokenizer = &counter;
  auto got = ReadAll(&env, DataFormat::kTextJsonl, "t.jsonl", options);
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_THAT(*got, ElementsAreArray({3u, 0u, 2u}));
}

TEST(ArrowReader, ReadsListAndLargeListColumnsAcrossBatches) {
  for (bool large : {false, true}) {
    SCOPED_TRACE(large ? "large_list" : "list");
    MemEnv env;
    env.AddFile("c.arrow", ArrowStreamBytes({{5, 0, 17}, {}, {3, 8, 1, 40, 2}}, large));
    ReaderOptions options;
    options.chunk_samples = 2;
    auto reader = OpenArrowReader(&env, "c.arrow", options);
    ASSERT_TRUE(reader.ok()) << reader.status().message();
    std::vector<uint32_t> lengths;
    ASSERT_TRUE(ReadAllLengths(reader->get(), &lengths).ok());
    EXPECT_THAT(lengths, ElementsAreArray(kLengths));
    EXPECT_EQ((*reader)->token_dtype()->bits, large ? 64 : 32);
    EXPECT_GT((*reader)->token_ids().ids_seen, 0u);
    EXPECT_LT((*reader)->token_ids().max_id, 1000);
  }
}

TEST(ArrowReader, FileFormatWrapperIsAccepted) {
  MemEnv env;
  env.AddFile("f.arrow", std::string("ARROW1\0\0", 8) + ArrowStreamBytes({{4, 4}}));
  auto got = ReadAll(&env, DataFormat::kArrow, "f.arrow");
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_THAT(*got, ElementsAreArray({4u, 4u}));
}

TEST(ArrowReader, RejectsMalformedStreams) {
  const std::string good = ArrowStreamBytes({{5, 6, 7}});
  MemEnv env;
  env.AddFile("ok.arrow", good);
  ReaderOptions missing;
  missing.field = "labels";
  auto no_col = ReadAll(&env, DataFormat::kArrow, "ok.arrow", missing);
  ASSERT_FALSE(no_col.ok());
  EXPECT_THAT(no_col.status().message(),
              HasSubstr("no column 'labels' (columns: text, input_ids)"));
  ReaderOptions text_col;
  text_col.field = "text";
  auto wrong_type = ReadAll(&env, DataFormat::kArrow, "ok.arrow", text_col);
  ASSERT_FALSE(wrong_type.ok());
  EXPECT_THAT(wrong_type.status().message(), HasSubstr("not a list of token ids"));

  // Every truncation is a clean error.
  for (size_t cut = 0; cut + 8 < good.size(); cut += 13) {
    env.AddFile("cut.arrow", good.substr(0, cut));
    auto got = ReadAll(&env, DataFormat::kArrow, "cut.arrow");
    EXPECT_FALSE(got.ok()) << "cut at " << cut;
  }
  // A metadata length that points past the end.
  std::string lying = good;
  const int32_t huge = 1 << 30;
  std::memcpy(&lying[4], &huge, 4);
  env.AddFile("lie.arrow", lying);
  auto lie = ReadAll(&env, DataFormat::kArrow, "lie.arrow");
  ASSERT_FALSE(lie.ok());
  EXPECT_THAT(lie.status().message(), HasSubstr("metadata bytes"));
}

TEST(ArrowReader, OffsetsOutOfOrderAreRejected) {
  // Corrupt the second list offset of the only batch: find the offsets buffer by its contents
  // (0, 5, 11, 18 as int32 after the text column's 4 zero offsets).
  std::string bytes = ArrowStreamBytes({{5, 6, 7}});
  const int32_t want[4] = {0, 5, 11, 18};
  const std::string needle(reinterpret_cast<const char*>(want), sizeof(want));
  const size_t at = bytes.find(needle);
  ASSERT_NE(at, std::string::npos);
  const int32_t back = 2;
  std::memcpy(&bytes[at + 8], &back, 4);
  MemEnv env;
  env.AddFile("o.arrow", bytes);
  auto got = ReadAll(&env, DataFormat::kArrow, "o.arrow");
  ASSERT_FALSE(got.ok());
  EXPECT_THAT(got.status().message(), HasSubstr("offsets out of order"));
}

}  // namespace
}  // namespace ww::dataset
