// The dcgmi dmon reader (dcgmi_dmon.h): ticks, entities, N/A, GRACT, epoch times, skips.
#include "telemetry/ingest/dcgmi_dmon.h"

#include <gtest/gtest.h>

#include "telemetry/ingest/read_support.h"

namespace ww::ingest_tests {
namespace {

// ---------------------------------------------------------------- dcgmi dmon

TEST(DcgmiDmon, TicksGpusEntitiesAndNA) {
  TempDir dir;
  const std::string p = dir / "node0.txt";
  WriteFile(p,
            "#Entity   POWER  GPUTL  FBUSD  SMACT  NVLTX  TMPTR\n"
            "ID        W                            \n"
            "GPU 0     500.1  100    60000  0.91   1000   61\n"
            "GPU 1     N/A    99     60001  0.90   2000   62\n"
            "GPU-I 3   1.0    1      1      0.1    1      1\n"
            "GPU 0     150.0  100    60000  0.05   3000   60\n"
            "GPU 1     151.0  100    60000  0.05   4000   60\n");
  Drained d = ReadOne(p, 100);
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  ASSERT_EQ(d.batches.size(), 2u);
  ASSERT_EQ(d.batches[0].size(), 2u);
  EXPECT_EQ(d.batches[1][0].timestamp_ms, 100);
  EXPECT_FALSE(d.batches[0][1].power_w.has_value());  // N/A is absent, never 0
  EXPECT_DOUBLE_EQ(*d.batches[0][1].util_gpu_pct, 99);
  EXPECT_DOUBLE_EQ(*d.batches[1][1].nvlink_tx_bytes_per_s, 4000);
  EXPECT_DOUBLE_EQ(*d.batches[0][0].temperature_c, 61);
  EXPECT_THAT(d.warnings, HasSubstr("rows of other DCGM entities skipped"));
}

TEST(DcgmiDmon, GractStandsInForUtilizationWithoutGputl) {
  TempDir dir;
  const std::string p = dir / "n.txt";
  WriteFile(p, "# Entity  GRACT  POWER\n      Id             W\n  GPU 0  0.875  300\n");
  Drained d = ReadOne(p, 1000);
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  EXPECT_DOUBLE_EQ(*d.samples[0].util_gpu_pct, 87.5);
}

TEST(DcgmiDmon, LeadingEpochTimestamps) {
  TempDir dir;
  const std::string p = dir / "n.txt";
  WriteFile(p,
            "# Entity POWER GPUTL\n"
            "1763465360.5 GPU 0 300 90\n"
            "1763465361.5 GPU 0 301 91\n");
  Drained d = ReadOne(p);
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  ASSERT_EQ(d.samples.size(), 2u);
  EXPECT_EQ(d.samples[0].timestamp_ms, 1763465360500);
  EXPECT_EQ(d.samples[1].timestamp_ms, 1763465361500);
}

TEST(DcgmiDmon, WrongFieldCountAndBadValuesAreDocumentedSkips) {
  TempDir dir;
  const std::string p = dir / "n.txt";
  std::string text = "# Entity POWER GPUTL\nId W\n";
  for (int i = 0; i < 200; ++i) text += "GPU 0 300 90\n";
  text += "GPU 0 300\n";       // a field short
  text += "GPU 0 abc 90\n";    // not a number
  text += "GPU 0 99999 90\n";  // 100 kW
  text += "GPU 0 30";          // cut off mid-write
  WriteFile(p, text);
  Drained d = ReadOne(p, 100);
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  EXPECT_EQ(d.samples.size(), 202u);
  EXPECT_THAT(d.warnings, HasSubstr("row with wrong number of fields skipped (1 time); line 203"));
  EXPECT_THAT(d.warnings, HasSubstr("line 204: POWER: 'abc' is not a number"));
  EXPECT_THAT(d.warnings, HasSubstr("line 205: POWER: '99999' is out of the plausible range"));
  EXPECT_THAT(d.warnings, HasSubstr("truncated last line skipped"));
}

}  // namespace
}  // namespace ww::ingest_tests
