// The wandb format (wandb.cc, read by table_csv.cc): the CSV export with percentages, JSON lines,
// W&B per-GPU column names in a plain CSV.
#include <gtest/gtest.h>

#include "telemetry/ingest/read_support.h"
#include "telemetry/ingest/table_csv.h"

namespace ww::ingest_tests {
namespace {

// ---------------------------------------------------------------- W&B

TEST(Wandb, CsvExportWithPercentagesGivesLimitAndTotal) {
  TempDir dir;
  const std::string p = dir / "run.csv";
  WriteFile(p,
            "_runtime,_timestamp,system.gpu.0.gpu,system.gpu.0.powerWatts,"
            "system.gpu.0.powerPercent,system.gpu.0.memoryAllocatedBytes,"
            "system.gpu.0.memoryAllocated,system.gpu.1.gpu,system.gpu.1.powerWatts,"
            "system.gpu.process.0.gpu,system.cpu\n"
            "10.5,1763465360.5,98,350,50,42949672960,50,97,349,98,12\n"
            "12.5,1763465362.5,100,140,20,42949672960,50,100,141,100,12\n");
  Drained d = ReadOne(p);
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  ASSERT_EQ(d.batches.size(), 2u);
  ASSERT_EQ(d.batches[0].size(), 2u);
  const GpuSample& s = d.batches[0][0];
  EXPECT_EQ(s.timestamp_ms, 1763465360500);
  EXPECT_DOUBLE_EQ(*s.power_w, 350);
  EXPECT_DOUBLE_EQ(*s.power_limit_w, 700);
  EXPECT_DOUBLE_EQ(*s.mem_used_mib, 40960);
  EXPECT_DOUBLE_EQ(*s.mem_total_mib, 81920);
  EXPECT_DOUBLE_EQ(*d.batches[1][1].power_w, 141);
  EXPECT_THAT(d.description, HasSubstr("W&B system metrics CSV"));
}

TEST(Wandb, JsonLinesWithRuntimeOnlyAndNestedValues) {
  TempDir dir;
  const std::string p = dir / "wandb-events.jsonl";
  WriteFile(p,
            "{\"system.cpu\": 3.1, \"_wandb\": true, \"_runtime\": 1}\n"
            "{\"system.gpu.0.gpu\": 98, \"system.gpu.0.powerWatts\": 350.5, "
            "\"system.gpu.0.temp\": 61, \"_wandb\": {\"x\": [1, 2]}, \"_runtime\": 2}\n"
            "{\"system.gpu.0.gpu\": 99, \"system.gpu.0.powerWatts\": 351, \"_runtime\": 4}\n"
            "{\"system.gpu.0.gpu\": 99, \"system.gpu.0.po");
  EXPECT_STREQ(InputFormatName(*DetectInputFormat(p, {})), "wandb");
  Drained d = ReadOne(p);
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  ASSERT_EQ(d.samples.size(), 2u);
  EXPECT_EQ(d.samples[0].timestamp_ms, 2000);
  EXPECT_DOUBLE_EQ(*d.samples[0].power_w, 350.5);
  EXPECT_DOUBLE_EQ(*d.samples[0].temperature_c, 61);
  EXPECT_EQ(d.samples[1].timestamp_ms, 4000);
  EXPECT_THAT(d.warnings, HasSubstr("truncated last line skipped"));
}

TEST(Layouts, WandbPerGpuColumnsWithAPlainTimestampNeedNoFlag) {
  TempDir dir;
  WriteFile(dir / "sys.csv",
            "timestamp,system.gpu.0.powerWatts,system.gpu.1.powerWatts,system.gpu.0.gpu\n"
            "1704110400,300,310,99\n1704110430,305,,98\n");
  const Drained d = Read({dir / "sys.csv"});
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  ASSERT_EQ(d.samples.size(), 3u);
  EXPECT_DOUBLE_EQ(*d.samples[1].power_w, 310);
  EXPECT_DOUBLE_EQ(*d.samples[0].util_gpu_pct, 99);
}

}  // namespace
}  // namespace ww::ingest_tests
