// SampleExtent: the dataset readers say where each sample's bytes lie, and iobench reads exactly
// those bytes. Checked by decoding the token ids found at each extent against the ids the corpus
// was written with, in every format, across chunk boundaries.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/env.h"
#include "dataset/corpus_writers.h"
#include "dataset/sample_length_reader.h"

namespace ww::dataset {
namespace {

using namespace ww::dataset::testing;
using ::testing::ElementsAreArray;

const std::vector<uint32_t> kExtentLengths = {5, 0, 17, 3, 8, 1, 40, 2};

struct Extents {
  std::vector<uint32_t> lengths;
  std::vector<SampleExtent> extents;
  std::vector<std::string> files;
};

Extents ReadExtents(Env* env, DataFormat format, const std::string& path) {
  ReaderOptions options;
  options.chunk_samples = 3;  // extents must stay right across chunk boundaries
  auto reader = OpenSampleLengthReader(env, format, path, options);
  EXPECT_TRUE(reader.ok()) << reader.status().message();
  Extents out;
  if (!reader.ok()) return out;
  (*reader)->set_extent_sink(&out.extents);
  Status st = ReadAllLengths(reader->get(), &out.lengths);
  EXPECT_TRUE(st.ok()) << st.message();
  for (const auto& [file, size] : (*reader)->files()) out.files.push_back(file);
  return out;
}

// The ids stored at each extent, decoded as little-endian integers of item_bytes.
std::vector<std::vector<uint64_t>> IdsAt(Env* env, const Extents& e, size_t item_bytes) {
  std::vector<std::vector<uint64_t>> out;
  for (const SampleExtent& x : e.extents) {
    auto file = env->OpenFile(e.files.at(x.file_index));
    EXPECT_TRUE(file.ok());
    std::string bytes(x.bytes, '\0');
    EXPECT_TRUE((*file)->ReadAt(x.offset, x.bytes, bytes.data()).ok());
    std::vector<uint64_t> ids;
    for (size_t i = 0; i + item_bytes <= bytes.size(); i += item_bytes) {
      uint64_t v = 0;
      std::memcpy(&v, bytes.data() + i, item_bytes);
      ids.push_back(v);
    }
    out.push_back(ids);
  }
  return out;
}

std::vector<std::vector<uint64_t>> Expected(const std::vector<uint32_t>& lengths,
                                            uint32_t vocab = 1000) {
  std::vector<std::vector<uint64_t>> out;
  for (size_t s = 0; s < lengths.size(); ++s) {
    std::vector<uint64_t> ids;
    for (size_t i = 0; i < lengths[s]; ++i) ids.push_back(TokenAt(s, i, vocab));
    out.push_back(ids);
  }
  return out;
}

TEST(SampleExtents, MegatronPointsIntoTheBin) {
  MemEnv env;
  auto [idx, bin] = MegatronBytes(kExtentLengths, /*uint16*/ 8, 1000);
  env.AddFile("x.idx", idx);
  env.AddFile("x.bin", bin);
  const Extents e = ReadExtents(&env, DataFormat::kMegatron, "x");
  ASSERT_EQ(e.extents.size(), kExtentLengths.size());
  for (const SampleExtent& x : e.extents) EXPECT_EQ(e.files[x.file_index], "x.bin");
  EXPECT_EQ(IdsAt(&env, e, 2), Expected(kExtentLengths));
}

TEST(SampleExtents, NpyRowsAndOffsetPairs) {
  MemEnv env;
  std::vector<int32_t> rows;
  for (size_t s = 0; s < 4; ++s) {
    for (size_t i = 0; i < 6; ++i) rows.push_back(static_cast<int32_t>(TokenAt(s, i, 1000)));
  }
  env.AddFile("rows.npy", NpyBytes<int32_t>("<i4", {4, 6}, rows));
  Extents e = ReadExtents(&env, DataFormat::kNpy, "rows.npy");
  EXPECT_EQ(IdsAt(&env, e, 4), Expected({6, 6, 6, 6}));

  std::vector<int64_t> offsets = {0};
  std::vector<uint16_t> tokens;
  for (size_t s = 0; s < kExtentLengths.size(); ++s) {
    for (size_t i = 0; i < kExtentLengths[s]; ++i)
      tokens.push_back(static_cast<uint16_t>(TokenAt(s, i, 1000)));
    offsets.push_back(static_cast<int64_t>(tokens.size()));
  }
  env.AddFile("p.offsets.npy", NpyBytes<int64_t>("<i8", {offsets.size()}, offsets));
  env.AddFile("p.tokens.npy", NpyBytes<uint16_t>("<u2", {tokens.size()}, tokens));
  e = ReadExtents(&env, DataFormat::kNpy, "p");
  for (const SampleExtent& x : e.extents) EXPECT_EQ(e.files[x.file_index], "p.tokens.npy");
  EXPECT_EQ(IdsAt(&env, e, 2), Expected(kExtentLengths));
}

TEST(SampleExtents, NpyLengthsOnlyHasNoSampleData) {
  MemEnv env;
  env.AddFile("l.npy", NpyBytes<int32_t>("<i4", {3}, {4, 5, 6}));
  const Extents e = ReadExtents(&env, DataFormat::kNpy, "l.npy");
  EXPECT_THAT(e.lengths, ElementsAreArray({4u, 5u, 6u}));
  EXPECT_TRUE(e.extents.empty());
}

TEST(SampleExtents, JsonlLinesIncludingTheNewline) {
  MemEnv env;
  // A blank line and CRLF endings: extents cover exactly each sample's line.
  const std::string text = "{\"input_ids\": [1, 2]}\r\n\n{\"input_ids\": []}\n{\"input_ids\": [3]}";
  env.AddFile("a.jsonl", text);
  const Extents e = ReadExtents(&env, DataFormat::kJsonl, "a.jsonl");
  ASSERT_EQ(e.extents.size(), 3u);
  std::vector<std::string> lines;
  for (const SampleExtent& x : e.extents) lines.push_back(text.substr(x.offset, x.bytes));
  EXPECT_THAT(lines, ElementsAreArray({std::string("{\"input_ids\": [1, 2]}\r\n"),
                                       std::string("{\"input_ids\": []}\n"),
                                       std::string("{\"input_ids\": [3]}")}));
}

TEST(SampleExtents, JsonlAcrossRefills) {
  // Lines longer in total than one 4 MiB refill block: offsets must account for the kept tail.
  MemEnv env;
  std::vector<uint32_t> lengths(3000, 400);
  const std::string text = JsonlBytes(lengths);
  ASSERT_GT(text.size(), size_t{4} << 20);
  env.AddFile("big.jsonl", text);
  const Extents e = ReadExtents(&env, DataFormat::kJsonl, "big.jsonl");
  ASSERT_EQ(e.extents.size(), lengths.size());
  uint64_t expect_offset = 0;
  for (size_t s = 0; s < e.extents.size(); ++s) {
    ASSERT_EQ(e.extents[s].offset, expect_offset) << "sample " << s;
    const std::string line = text.substr(e.extents[s].offset, e.extents[s].bytes);
    ASSERT_EQ(line.back(), '\n');
    ASSERT_EQ(line.rfind("{\"id\": " + std::to_string(s) + ",", 0), 0u) << line.substr(0, 40);
    expect_offset += e.extents[s].bytes;
  }
  EXPECT_EQ(expect_offset, text.size());
}

TEST(SampleExtents, ArrowValuesOfEachBatch) {
  MemEnv env;
  const std::vector<std::vector<uint32_t>> batches = {{5, 0, 17}, {3, 8, 1, 40, 2}};
  env.AddFile("s.arrow", ArrowStreamBytes(batches));
  Extents e = ReadExtents(&env, DataFormat::kArrow, "s.arrow");
  EXPECT_EQ(IdsAt(&env, e, 4), Expected(kExtentLengths));
  env.AddFile("l.arrow", ArrowStreamBytes(batches, /*large=*/true));
  e = ReadExtents(&env, DataFormat::kArrow, "l.arrow");
  EXPECT_EQ(IdsAt(&env, e, 8), Expected(kExtentLengths));
}

}  // namespace
}  // namespace ww::dataset
