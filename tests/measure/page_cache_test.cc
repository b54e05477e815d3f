// The page-cache seam on the real machine: a file read is fully resident, a dropped one is not;
// MemAvailable parsing.
#include "measure/page_cache.h"

#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "gate/corpus_writers.h"
#include "measure/measure_testing.h"

namespace ww::measure {
namespace {

using gate::testing::TempDir;

double Residency(PageCache* cache, const std::string& path, uint64_t size) {
  auto r = cache->ResidentBytes(path);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? static_cast<double>(*r) / static_cast<double>(size) : -1;
}

void ReadWhole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> buf(1 << 20);
  while (in.read(buf.data(), static_cast<std::streamsize>(buf.size())) || in.gcount() > 0) {
  }
}

TEST(PageCache, ResidentAfterReadingAndNotAfterDropping) {
  TempDir dir;
  const std::string path = dir / "data.bin";
  constexpr uint64_t kSize = uint64_t{16} << 20;
  std::string bytes(kSize, '\0');
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 131 + (i >> 12));
  gate::testing::WriteFile(path, bytes);
  testing::SyncFile(path);
  PageCache* cache = DefaultPageCache();

  ASSERT_TRUE(cache->Drop(path).ok());
  const double dropped = Residency(cache, path, kSize);
  if (dropped > 0.05) {
    if (auto why = testing::NoColdReads(path)) GTEST_SKIP() << dir.str() << ": " << *why;
  }
  EXPECT_LT(dropped, 0.05) << "posix_fadvise(DONTNEED) left pages cached on a real disk";

  ReadWhole(path);
  EXPECT_DOUBLE_EQ(Residency(cache, path, kSize), 1.0);

  ASSERT_TRUE(cache->Drop(path).ok());
  EXPECT_LT(Residency(cache, path, kSize), 0.05);
}

TEST(PageCache, DropsPagesOfAFileJustWritten) {
  // No fsync: the pages are dirty, which DONTNEED alone skips; Drop writes them back first.
  TempDir dir;
  const std::string path = dir / "fresh.bin";
  constexpr uint64_t kSize = uint64_t{4} << 20;
  gate::testing::WriteFile(path, std::string(kSize, 'x'));
  if (auto why = testing::NoColdReads(path)) GTEST_SKIP() << *why;
  ASSERT_TRUE(DefaultPageCache()->Drop(path).ok());
  EXPECT_LT(Residency(DefaultPageCache(), path, kSize), 0.05);
}

TEST(PageCache, TmpIsARealDiskHere) {
  // The page-cache tests skip on tmpfs; on this project's machines /tmp is a disk, so they run.
  TempDir dir;
  const auto why = testing::NoColdReads(dir.str());
  if (why)
    GTEST_SKIP() << "temp dir " << dir.str() << ": " << *why
                 << " (cold-read tests are skipped here)";
  SUCCEED();
}

TEST(PageCache, DropOfAMissingFileIsAnError) {
  Status st = DefaultPageCache()->Drop("/nonexistent/ww/file.bin");
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("/nonexistent/ww/file.bin"), std::string::npos);
}

TEST(PageCache, AllocatedBytesSeesSparseFiles) {
  TempDir dir;
  const std::string path = dir / "sparse.bin";
  { std::ofstream(path, std::ios::binary).seekp((64 << 20) - 1).put('\0'); }
  auto allocated = DefaultPageCache()->AllocatedBytes(path);
  ASSERT_TRUE(allocated.has_value());
  EXPECT_LT(*allocated, uint64_t{1} << 20);
  EXPECT_FALSE(DefaultPageCache()->AllocatedBytes(dir / "missing").has_value());
}

TEST(MemAvailable, ParsesKibibytes) {
  auto v = ParseMemAvailable(
      "MemTotal:       24683652 kB\nMemFree:        21764828 kB\nMemAvailable:   24192100 kB\n");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, uint64_t{24192100} * 1024);
  EXPECT_FALSE(ParseMemAvailable("MemTotal: 1 kB\n").ok());
  EXPECT_FALSE(ParseMemAvailable("MemAvailable: lots\n").ok());
  EXPECT_FALSE(ParseMemAvailable("").ok());
}

TEST(MemAvailable, ThisMachineHasSome) {
  auto v = DefaultPageCache()->MemAvailableBytes();
  ASSERT_TRUE(v.ok()) << v.status().message();
  EXPECT_GT(*v, uint64_t{16} << 20);
}

}  // namespace
}  // namespace ww::measure
