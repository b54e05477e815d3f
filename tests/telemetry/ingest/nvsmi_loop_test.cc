// nvidia-smi CSV written by a shell loop (the header before every sample, GPUs by bus id, date
// lines between samples) and a header that changes (issue 30).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "telemetry/ingest/read_support.h"

namespace ww::ingest_tests {
namespace {

// ---------------------------------------------------------------- repeated headers

constexpr const char* kLoopHeader =
    "name, pci.bus_id, timestamp, utilization.gpu [%], power.draw [W]\n";

std::string NvsmiLoop(int samples) {
  std::string s;
  for (int i = 0; i < samples; ++i) {
    s += kLoopHeader;
    for (int g = 0; g < 2; ++g) {
      s += fmt::format(
          "NVIDIA A100-SXM4-40GB, 00000000:{:02X}:00.0, 2024/01/01 12:00:{:02}.000, "
          "{} %, {}.50 W\n",
          7 + g * 8, i, 90 + g, 300 + i);
    }
  }
  return s;
}

TEST(Layouts, NvsmiHeaderBeforeEverySampleIsSkippedAndCounted) {
  TempDir dir;
  WriteFile(dir / "a100.csv", NvsmiLoop(20));
  const Drained d = Read({dir / "a100.csv"});
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  EXPECT_EQ(Format(d), "nvidia-smi");
  ASSERT_EQ(d.samples.size(), 40u);
  // Two GPUs told apart by bus id, named.
  ASSERT_EQ(d.gpus.size(), 2u);
  EXPECT_EQ(d.gpus[0].name, "NVIDIA A100-SXM4-40GB");
  EXPECT_EQ(d.samples[1].key.gpu, 1);
  EXPECT_DOUBLE_EQ(*d.samples[1].util_gpu_pct, 91);
  EXPECT_DOUBLE_EQ(*d.samples[39].power_w, 319.5);
  EXPECT_THAT(d.warnings, HasSubstr("skipped 19 repeated header lines (identical to line 1)"));
  EXPECT_THAT(d.warnings, Not(HasSubstr("malformed")));
}

TEST(Layouts, NvsmiLoopWithDateLinesBetweenSamples) {
  TempDir dir;
  std::string s;
  const std::string loop = NvsmiLoop(4);
  size_t at = 0;
  int i = 0;
  for (size_t next = loop.find(kLoopHeader, 1); at != std::string::npos; ++i) {
    s += fmt::format("Mon Jan  1 12:00:{:02} UTC 2024\n", i);
    s += loop.substr(at, next == std::string::npos ? std::string::npos : next - at);
    at = next;
    next = next == std::string::npos ? next : loop.find(kLoopHeader, next + 1);
  }
  WriteFile(dir / "dated.csv", s);
  const Drained d = Read({dir / "dated.csv"});
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  EXPECT_EQ(Format(d), "nvidia-smi");
  EXPECT_EQ(d.samples.size(), 8u);
  EXPECT_THAT(d.warnings, HasSubstr("skipped 4 date lines between samples"));
  EXPECT_THAT(d.warnings, HasSubstr("skipped 3 repeated header lines"));
}

TEST(Layouts, NvsmiHeaderThatChangesIsAnErrorNamingTheLine) {
  TempDir dir;
  std::string s = NvsmiLoop(3);
  s += "name, pci.bus_id, timestamp, power.draw [W]\n";
  s += "NVIDIA A100-SXM4-40GB, 00000000:07:00.0, 2024/01/01 12:00:09.000, 300 W\n";
  WriteFile(dir / "changed.csv", s);
  const Drained d = Read({dir / "changed.csv"});
  ASSERT_FALSE(d.status.ok());
  EXPECT_THAT(d.status.message(), HasSubstr("changed.csv:10: the CSV header changes mid-file"));
}

}  // namespace
}  // namespace ww::ingest_tests
