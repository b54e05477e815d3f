// Opening telemetry files (open.h): a forced format, recognition by content, compressed and
// truncated streams, several formats as hosts of one job, the "not recognized" message.
#include "telemetry/ingest/open.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "telemetry/ingest/read_support.h"

namespace ww::ingest_tests {
namespace {

// ---------------------------------------------------------------- detection, compression

TEST(Detect, ForcedFormatAndNvidiaSmiUnchanged) {
  TempDir dir;
  const std::string csv = dir / "n.csv";
  WriteFile(csv,
            "timestamp, index, power.draw [W], utilization.gpu [%]\n"
            "2025/11/18 11:29:20.000, 0, 500.00 W, 98 %\n");
  EXPECT_STREQ(InputFormatName(*DetectInputFormat(csv, {})), "nvidia-smi");
  IngestOptions forced;
  forced.format = *ParseInputFormat("custom-csv");
  Drained d = Read({csv}, forced);
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  EXPECT_DOUBLE_EQ(*d.samples[0].power_w, 500);
  EXPECT_THAT(d.description, HasSubstr("custom CSV"));
}

TEST(Detect, CompressedCsvAndTruncatedStream) {
  TempDir dir;
  std::string text = "time,gpu,power_w,util_pct\n";
  for (int i = 0; i < 5000; ++i) {
    text += fmt::format("{},0,{},90\n{},1,{},91\n", 1763465360 + i, 300 + i % 7, 1763465360 + i,
                        310 + i % 5);
  }
  WriteFile(dir / "a.csv.gz", Gzip(text) + Gzip("1763470360,0,333,90\n"));  // two members
  WriteFile(dir / "b.zst", Zstd(text));
  const std::string z = Zstd(text);
  // Two frames (a writer that flushes, or appended logs), cut in the second: zstd decodes whole
  // blocks, so the first frame is what a crashed node leaves readable.
  const size_t half = text.find('\n', text.size() / 2) + 1;
  const std::string first = Zstd(text.substr(0, half));
  const std::string second = Zstd(text.substr(half));
  WriteFile(dir / "cut.zst", first + second.substr(0, second.size() / 2));
  Drained a = ReadOne(dir / "a.csv.gz");
  ASSERT_TRUE(a.status.ok()) << a.status.message();
  EXPECT_EQ(a.samples.size(), 10001u);
  EXPECT_EQ(a.hosts[0], "a");
  Drained b = ReadOne(dir / "b.zst");
  ASSERT_TRUE(b.status.ok()) << b.status.message();
  EXPECT_EQ(b.samples.size(), 10000u);
  // Cut in the middle (what a crashed node leaves): the whole blocks before the cut are read,
  // with a warning saying where the stream stops (issue 31, item 15).
  Drained cut = ReadOne(dir / "cut.zst");
  ASSERT_TRUE(cut.status.ok()) << cut.status.message();
  EXPECT_GT(cut.samples.size(), 0u);
  EXPECT_LT(cut.samples.size(), 10000u);
  EXPECT_THAT(cut.warnings, HasSubstr("truncated zstd stream after"));
  // Cut before the first block ended: nothing to read, an error.
  WriteFile(dir / "stub.zst", z.substr(0, 64));
  Drained stub = ReadOne(dir / "stub.zst");
  ASSERT_FALSE(stub.status.ok());
  EXPECT_THAT(stub.status.message(), HasSubstr("zstd stream cut off before its first block"));
}

TEST(Detect, MergesFormatsAsHostsOfOneJob) {
  TempDir dir;
  WriteFile(dir / "node0.csv", "time,power_w,util\n1763465360,300,90\n1763465361,301,90\n");
  WriteFile(dir / "node1.prom", Scrape(500, 100, 10, "", "1763465360500"));
  Drained d = Read({dir / "node0.csv", dir / "node1.prom"});
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  ASSERT_EQ(d.hosts.size(), 2u);
  EXPECT_EQ(d.hosts[1], "node1");
  ASSERT_EQ(d.samples.size(), 4u);
  EXPECT_EQ(d.samples[1].key.host, 1);  // merged in time order
}

TEST(Layouts, NotRecognizedMessageListsTheNewLayouts) {
  TempDir dir;
  WriteFile(dir / "x.txt", "hello world\nfoo bar\n");
  const Drained d = Read({dir / "x.txt"});
  ASSERT_FALSE(d.status.ok());
  for (const char* name : {"gpustat", "wide", "llview", "table"}) {
    EXPECT_THAT(d.status.message(), HasSubstr(name));
  }
  EXPECT_THAT(InputFormatHelp(), HasSubstr("LLview"));
  EXPECT_TRUE(ParseInputFormat("llview").ok());
}

}  // namespace
}  // namespace ww::ingest_tests
