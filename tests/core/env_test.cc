// The environment seam: the real machine's page cache (a file read is fully resident, a dropped
// one is not), /proc/meminfo parsed once into both figures, files refused without blocking when
// they are not regular (a FIFO), EnvWrapper forwarding every call but the one a test overrides,
// and MemEnv's in-memory files (what the fuzz targets and a fake /proc use).
#include "core/env.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "core/page_cache_testing.h"
#include "support/support.h"

namespace ww {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::ww::testing::TempDir;
using ::ww::testing::WriteFile;

double Residency(Env* env, const std::string& path, uint64_t size) {
  auto r = env->ResidentBytes(path);
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
  WriteFile(path, bytes);
  testing::SyncFile(path);
  Env* env = DefaultEnv();

  ASSERT_TRUE(env->DropCachedPages(path).ok());
  const double dropped = Residency(env, path, kSize);
  if (dropped > 0.05) {
    if (auto why = testing::NoColdReads(path)) GTEST_SKIP() << dir.path() << ": " << *why;
  }
  EXPECT_LT(dropped, 0.05) << "posix_fadvise(DONTNEED) left pages cached on a real disk";

  ReadWhole(path);
  EXPECT_DOUBLE_EQ(Residency(env, path, kSize), 1.0);

  ASSERT_TRUE(env->DropCachedPages(path).ok());
  EXPECT_LT(Residency(env, path, kSize), 0.05);
}

TEST(PageCache, DropsPagesOfAFileJustWritten) {
  // No fsync: the pages are dirty, which DONTNEED alone skips; the drop writes them back first.
  TempDir dir;
  const std::string path = dir / "fresh.bin";
  constexpr uint64_t kSize = uint64_t{4} << 20;
  WriteFile(path, std::string(kSize, 'x'));
  if (auto why = testing::NoColdReads(path)) GTEST_SKIP() << *why;
  ASSERT_TRUE(DefaultEnv()->DropCachedPages(path).ok());
  EXPECT_LT(Residency(DefaultEnv(), path, kSize), 0.05);
}

TEST(PageCache, TmpIsARealDiskHere) {
  // The page-cache tests skip on tmpfs; on this project's machines the build tree is a disk.
  TempDir dir;
  const auto why = testing::NoColdReads(dir.path());
  if (why)
    GTEST_SKIP() << "temp dir " << dir.path() << ": " << *why
                 << " (cold-read tests are skipped here)";
  SUCCEED();
}

TEST(PageCache, DropOfAMissingFileIsAnError) {
  Status st = DefaultEnv()->DropCachedPages("/nonexistent/ww/file.bin");
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kNotFound);
  EXPECT_NE(st.message().find("/nonexistent/ww/file.bin"), std::string::npos);
}

TEST(PageCache, AllocatedBytesSeesSparseFiles) {
  TempDir dir;
  const std::string path = dir / "sparse.bin";
  { std::ofstream(path, std::ios::binary).seekp((64 << 20) - 1).put('\0'); }
  auto allocated = DefaultEnv()->AllocatedBytes(path);
  ASSERT_TRUE(allocated.has_value());
  EXPECT_LT(*allocated, uint64_t{1} << 20);
  EXPECT_FALSE(DefaultEnv()->AllocatedBytes(dir / "missing").has_value());
}

TEST(MemInfo, ParsesBothFiguresInKibibytes) {
  auto v = ParseMemInfo(
      "MemTotal:       24683652 kB\nMemFree:        21764828 kB\nMemAvailable:   24192100 kB\n");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->total_bytes, uint64_t{24683652} * 1024);
  EXPECT_EQ(v->available_bytes, uint64_t{24192100} * 1024);
  // Before Linux 3.14 there is no MemAvailable: total alone.
  auto old = ParseMemInfo("MemTotal: 1 kB\nMemFree: 1 kB\n");
  ASSERT_TRUE(old.ok());
  EXPECT_EQ(old->total_bytes, 1024u);
  EXPECT_FALSE(old->available_bytes);
  // A malformed value leaves its field empty rather than reading as 0.
  auto bad = ParseMemInfo("MemTotal: lots\nMemAvailable: 7 MB\n");
  ASSERT_TRUE(bad.ok());
  EXPECT_FALSE(bad->total_bytes);
  EXPECT_FALSE(bad->available_bytes);
  EXPECT_FALSE(ParseMemInfo("MemTotal: 99999999999999999999 kB\n")->total_bytes);
  EXPECT_FALSE(ParseMemInfo("").ok());
  EXPECT_FALSE(ParseMemInfo("Cached: 5 kB\n").ok());
}

TEST(MemInfo, ThisMachineHasBoth) {
  auto v = DefaultEnv()->ReadMemInfo();
  ASSERT_TRUE(v.ok()) << v.status().message();
  ASSERT_TRUE(v->total_bytes && v->available_bytes);
  EXPECT_GT(*v->available_bytes, uint64_t{16} << 20);
  EXPECT_LE(*v->available_bytes, *v->total_bytes);
}

TEST(PosixEnv, ReadsSmallFilesAndProcFilesWholeAndRefusesLargeOnes) {
  TempDir dir;
  WriteFile(dir / "a.txt", "hello\n");
  auto text = DefaultEnv()->ReadFileToString(dir / "a.txt", 1024);
  ASSERT_TRUE(text.ok()) << text.status().message();
  EXPECT_EQ(*text, "hello\n");
  auto big = DefaultEnv()->ReadFileToString(dir / "a.txt", 3);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), StatusCode::kInvalidInput);
  EXPECT_THAT(big.status().message(), HasSubstr("a.txt: 6 bytes is too large"));
  // /proc files report size 0 and still have text.
  auto stat = DefaultEnv()->ReadFileToString("/proc/self/stat", 1 << 20);
  ASSERT_TRUE(stat.ok()) << stat.status().message();
  EXPECT_THAT(*stat, HasSubstr(std::to_string(getpid()) + " ("));
  auto missing = DefaultEnv()->ReadFileToString(dir / "none", 10);
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  // A directory is not a file.
  auto as_dir = DefaultEnv()->OpenFile(dir.path());
  ASSERT_FALSE(as_dir.ok());
  EXPECT_THAT(as_dir.status().message(), HasSubstr("not a regular file (a directory)"));
}

TEST(PosixEnv, ListsADirectory) {
  TempDir dir;
  WriteFile(dir / "x", "");
  WriteFile(dir / "y", "");
  auto names = DefaultEnv()->GetChildren(dir.path());
  ASSERT_TRUE(names.ok());
  std::sort(names->begin(), names->end());
  EXPECT_THAT(*names, ElementsAre("x", "y"));
  EXPECT_EQ(DefaultEnv()->GetChildren(dir / "none").status().code(), StatusCode::kNotFound);
}

// Opening a FIFO for reading waits for a writer; with none, a plain open() never returns. Each
// call runs in a death-test child under alarm(), so a regression fails (killed by SIGALRM)
// instead of hanging the suite.
TEST(PosixEnvDeathTest, AFifoIsRefusedAtOnceNotWaitedOn) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  TempDir dir;
  const std::string fifo = dir / "data.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto refused = [&](auto call) {
    alarm(10);
    const Status st = call();
    const bool named =
        st.message().find("data.fifo: not a regular file (a FIFO)") != std::string::npos;
    std::_Exit(!st.ok() && named ? 0 : 1);
  };
  EXPECT_EXIT(refused([&] { return DefaultEnv()->OpenFile(fifo).status(); }),
              ::testing::ExitedWithCode(0), "");
  EXPECT_EXIT(refused([&] { return DefaultEnv()->ReadFileToString(fifo, 100).status(); }),
              ::testing::ExitedWithCode(0), "");
  EXPECT_EXIT(refused([&] { return DefaultEnv()->ResidentBytes(fifo).status(); }),
              ::testing::ExitedWithCode(0), "");
  EXPECT_EXIT(refused([&] { return DefaultEnv()->DropCachedPages(fifo); }),
              ::testing::ExitedWithCode(0), "");
  EXPECT_FALSE(DefaultEnv()->FileExists(fifo));
}

// Overrides one call; every other goes to the real machine.
class SmallMachine final : public EnvWrapper {
 public:
  using EnvWrapper::EnvWrapper;
  int mem_reads = 0;
  Result<MemInfo> ReadMemInfo() override {
    ++mem_reads;
    MemInfo m;
    m.total_bytes = 4096;
    m.available_bytes = 1024;
    return m;
  }
};

TEST(EnvWrapper, OverridesOneCallAndForwardsTheRest) {
  TempDir dir;
  WriteFile(dir / "f", "abc");
  SmallMachine env(DefaultEnv());
  EXPECT_EQ(env.target(), DefaultEnv());
  auto mem = env.ReadMemInfo();
  ASSERT_TRUE(mem.ok());
  EXPECT_EQ(mem->available_bytes, 1024u);
  EXPECT_EQ(env.mem_reads, 1);
  // Forwarded: real files, real free space.
  Env* as_env = &env;
  EXPECT_TRUE(as_env->FileExists(dir / "f"));
  EXPECT_EQ(*as_env->ReadFileToString(dir / "f", 10), "abc");
  auto file = as_env->OpenFile(dir / "f");
  ASSERT_TRUE(file.ok());
  EXPECT_EQ((*file)->size_bytes(), 3u);
  EXPECT_TRUE(as_env->FreeBytes(dir.path()).ok());
  EXPECT_TRUE(as_env->ResidentBytes(dir / "f").ok());
  EXPECT_TRUE(as_env->AllocatedBytes(dir / "f").has_value());
  EXPECT_TRUE(as_env->GetChildren(dir.path()).ok());
}

TEST(MemEnv, HoldsFilesInMemoryAndListsDirectories) {
  MemEnv env;
  env.AddFile("/proc/100/stat", "100 (x) S 1");
  env.AddFile("/proc/100/io", "read_bytes: 0\n");
  env.AddFile("/proc/200/stat", "200 (y) S 1");
  auto children = env.GetChildren("/proc");
  ASSERT_TRUE(children.ok());
  EXPECT_THAT(*children, ElementsAre("100", "200"));
  EXPECT_THAT(*env.GetChildren("/proc/100/"), ElementsAre("io", "stat"));
  EXPECT_EQ(env.GetChildren("/sys").status().code(), StatusCode::kNotFound);

  EXPECT_EQ(*env.ReadFileToString("/proc/200/stat", 100), "200 (y) S 1");
  EXPECT_EQ(env.ReadFileToString("/proc/200/stat", 3).status().code(), StatusCode::kInvalidInput);
  EXPECT_EQ(env.ReadFileToString("/nope", 3).status().code(), StatusCode::kNotFound);
  auto file = env.OpenFile("/proc/100/io");
  ASSERT_TRUE(file.ok());
  char buf[4];
  ASSERT_TRUE((*file)->ReadAt(0, 4, buf).ok());
  EXPECT_EQ(std::string(buf, 4), "read");
  EXPECT_FALSE((*file)->ReadAt(10, 10, buf).ok()) << "a read past the end is an error";
  EXPECT_EQ(*env.ResidentBytes("/proc/100/io"), 14u);
  EXPECT_TRUE(env.DropCachedPages("/proc/100/io").ok());
  EXPECT_FALSE(env.FileExists("/proc/100"));
  env.RemoveFile("/proc/100/io");
  EXPECT_FALSE(env.FileExists("/proc/100/io"));
  // Machine calls go to the base.
  EXPECT_TRUE(env.ReadMemInfo().ok());
}

}  // namespace
}  // namespace ww
