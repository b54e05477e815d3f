// The gpustat reader (gpustat.h): host lines and times, variants, ANSI codes, malformed lines.
#include "telemetry/ingest/gpustat.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/timefmt.h"
#include "telemetry/ingest/read_support.h"

namespace ww::ingest_tests {
namespace {

// ---------------------------------------------------------------- gpustat

constexpr const char* kGpustat =
    "dgx01                    Mon Jan  1 12:00:00 2024  535.104.05\n"
    "[0] Tesla V100-SXM2-32GB | 34°C,  ?? %,   0 % (E:   0 %  D:   0 %),   43 / 300 W |     0 / "
    "32768 MB |\n"
    "[1] Tesla V100-SXM2-32GB | 61°C,  ?? %, 100 % (E:   0 %  D:   0 %),  287 / 300 W | 30001 / "
    "32768 MB | alice:python/1234(30000M)\n"
    "dgx01                    Mon Jan  1 12:00:05 2024  535.104.05\n"
    "[0] Tesla V100-SXM2-32GB | 35°C,  ?? %,   1 % (E:   0 %  D:   0 %),   44 / 300 W |     0 / "
    "32768 MB |\n"
    "[1] Tesla V100-SXM2-32GB | 62°C,  ?? %,  99 % (E:   0 %  D:   0 %),  290 / 300 W | 30001 / "
    "32768 MB | alice:python/1234(30000M)\n";

TEST(Layouts, GpustatWithHostLinesReadsTimesAndReadings) {
  TempDir dir;
  WriteFile(dir / "gpustat.log", kGpustat);
  const Drained d = Read({dir / "gpustat.log"});
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  EXPECT_EQ(Format(d), "gpustat");
  ASSERT_EQ(d.samples.size(), 4u);
  const auto t0 = ParseTimestamp("2024-01-01 12:00:00")->unix_ms;
  EXPECT_EQ(d.samples[0].timestamp_ms, t0);
  EXPECT_EQ(d.samples[2].timestamp_ms, t0 + 5000);
  const GpuSample& g1 = d.samples[1];
  EXPECT_EQ(g1.key.gpu, 1);
  EXPECT_DOUBLE_EQ(*g1.temperature_c, 61);
  EXPECT_DOUBLE_EQ(*g1.util_gpu_pct, 100);
  EXPECT_DOUBLE_EQ(*g1.power_w, 287);
  EXPECT_DOUBLE_EQ(*g1.power_limit_w, 300);
  EXPECT_DOUBLE_EQ(*g1.mem_used_mib, 30001);
  EXPECT_DOUBLE_EQ(*g1.mem_total_mib, 32768);
  EXPECT_EQ(d.gpus[0].name, "Tesla V100-SXM2-32GB");
  EXPECT_THAT(d.text, HasSubstr("gpustat of host 'dgx01'"));
}

TEST(Layouts, GpustatVariants) {
  ingest::GpustatLine g;
  std::string err;
  // No encoder part, no power, the degree written 'C (an ASCII terminal).
  ASSERT_TRUE(ingest::ParseGpustatLine(
      "[0] NVIDIA A100-SXM4-40GB | 35'C,   0 % |     3 / 40536 MB |", &g, &err))
      << err;
  EXPECT_DOUBLE_EQ(*g.temperature_c, 35);
  EXPECT_DOUBLE_EQ(*g.util_pct, 0);
  EXPECT_FALSE(g.power_w);
  EXPECT_DOUBLE_EQ(*g.mem_total_mib, 40536);
  // Fan shown, power without limit, unknown temperature.
  g = {};
  ASSERT_TRUE(ingest::ParseGpustatLine(
      "[3] GeForce RTX 2080 Ti | ??°C,  34 %,  57 %,  120 W |  1234 / 11019 MB | bob(1200M)", &g,
      &err))
      << err;
  EXPECT_FALSE(g.temperature_c);
  EXPECT_DOUBLE_EQ(*g.fan_pct, 34);
  EXPECT_DOUBLE_EQ(*g.util_pct, 57);
  EXPECT_DOUBLE_EQ(*g.power_w, 120);
  EXPECT_FALSE(g.power_limit_w);
  // Bad values are named.
  EXPECT_FALSE(ingest::ParseGpustatLine("[0] X | 3x°C,  5 % |  1 / 2 MB |", &g, &err));
  EXPECT_THAT(err, HasSubstr("temperature"));
  EXPECT_FALSE(ingest::ParseGpustatLine("[0] X | 30°C,  5 % |  1 / 2 GB |", &g, &err));
  EXPECT_THAT(err, HasSubstr("memory"));
  // Locales of the host line.
  EXPECT_EQ(ingest::ParseGpustatHostLine("node  Mon 01 Jan 2024 01:00:00 PM UTC  535.54.03"),
            ParseTimestamp("2024-01-01 13:00:00")->unix_ms);
  EXPECT_EQ(ingest::ParseGpustatHostLine("node  2024-01-01 13:00:00  535.54.03"),
            ParseTimestamp("2024-01-01 13:00:00")->unix_ms);
}

TEST(Layouts, GpustatWithoutHostLinesNeedsIntervalAndAnsiCodesAreRemoved) {
  TempDir dir;
  std::string s;
  for (int i = 0; i < 3; ++i) {
    for (int g = 0; g < 2; ++g) {
      s += fmt::format(
          "\x1b[36m[{}]\x1b[0m \x1b[34mNVIDIA A100-SXM4-40GB\x1b[0m |\x1b[31m 35°C\x1b[0m, "
          "\x1b[32m {:>2} %\x1b[0m | \x1b[33m 1000\x1b[0m / \x1b[33m40536\x1b[0m MB |\n",
          g, 50 + i);
    }
  }
  WriteFile(dir / "plain.log", s);
  Drained d = Read({dir / "plain.log"});
  ASSERT_FALSE(d.status.ok());
  EXPECT_THAT(d.status.message(), HasSubstr("plain.log:1: gpustat output without host lines"));
  EXPECT_THAT(d.status.message(), HasSubstr("--interval-ms"));
  IngestOptions o;
  o.replay.interval_ms = 2000;
  d = Read({dir / "plain.log"}, o);
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  ASSERT_EQ(d.samples.size(), 6u);
  EXPECT_EQ(d.samples[4].timestamp_ms, 4000);
  EXPECT_DOUBLE_EQ(*d.samples[4].util_gpu_pct, 52);
}

TEST(Layouts, GpustatMalformedAndTruncated) {
  TempDir dir;
  std::string s = kGpustat;
  s += "[0] Tesla V100-SXM2-32GB | 35°C,  ?? %,   1 % (E:   0 %  D:   0 %),   44 / 30";  // cut
  WriteFile(dir / "cut.log", s);
  Drained d = Read({dir / "cut.log"});
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  EXPECT_THAT(d.warnings, HasSubstr("truncated last line skipped"));
  // Every GPU line malformed: an error naming the file and line.
  WriteFile(dir / "bad.log", "[0] X | hot, 5 % | 1 / 2 MB |\n[1] X | hot, 5 % | 1 / 2 MB |\n");
  IngestOptions o;
  o.replay.interval_ms = 1000;
  d = Read({dir / "bad.log"}, o);
  ASSERT_FALSE(d.status.ok());
  EXPECT_THAT(d.status.message(), HasSubstr("line 1: temperature: 'hot' is not a number"));
}

}  // namespace
}  // namespace ww::ingest_tests
