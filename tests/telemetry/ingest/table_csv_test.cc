// The reader of tables with columns named by people (table_csv.h, table_columns.h): custom-csv
// column names and layouts, --map, repeated and changed headers, units that cannot be placed,
// one-column-per-GPU frames (--wide).
#include "telemetry/ingest/table_csv.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/timefmt.h"
#include "telemetry/ingest/read_support.h"

namespace ww::ingest_tests {
namespace {

// ---------------------------------------------------------------- custom CSV

TEST(CustomCsv, ColumnNamesPeopleUse) {
  auto m = [](const char* n) { return ingest::RecognizeColumn(n, false); };
  EXPECT_EQ(m("power_w").field, "power");
  EXPECT_EQ(m("Power Draw [W]").field, "power");
  EXPECT_EQ(m("gpu.power.watts").field, "power");
  EXPECT_EQ(m("watts").field, "power");
  EXPECT_EQ(m("power_limit_w").field, "power_limit");
  EXPECT_EQ(m("GPU Util (%)").field, "util");
  EXPECT_EQ(m("utilization").field, "util");
  EXPECT_EQ(m("gpu-util-pct").field, "util");
  EXPECT_EQ(m("mem_util_percent").field, "mem_util");
  EXPECT_EQ(m("memory_used_mib").field, "memory_used");
  EXPECT_EQ(m("mem used (MB)").unit, "MB (as MiB)");
  EXPECT_EQ(m("memory.total [MiB]").field, "memory_total");
  EXPECT_EQ(m("temp_c").field, "temperature");
  EXPECT_EQ(m("Temperature").field, "temperature");
  EXPECT_EQ(m("gpu_id").field, "gpu");
  EXPECT_EQ(m("device").field, "gpu");
  EXPECT_EQ(m("gpu").field, "gpu");
  EXPECT_EQ(m("ts").field, "time");
  EXPECT_EQ(m("timestamp_ms").unit, "epoch ms");
  EXPECT_EQ(m("Time").field, "time");
  EXPECT_EQ(m("gpu0_power_w").gpu, 0);
  EXPECT_EQ(m("power_gpu_3").gpu, 3);
  EXPECT_EQ(m("GPU 2 Util (%)").gpu, 2);
  EXPECT_EQ(m("cpu_util").field, "");
  EXPECT_EQ(m("loss").field, "");
  EXPECT_EQ(m("local_rank").field, "");
}

TEST(CustomCsv, LongLayoutEpochSecondsAndUnitsInCells) {
  TempDir dir;
  const std::string p = dir / "mine.csv";
  WriteFile(p,
            "ts,device,Power Draw [W],gpu_util_pct,mem_used_gb,loss\n"
            "1763465360,0,500.5 W,98,60,2.1\n"
            "1763465360,1,501,97,61,2.1\n"
            "1763465361,0,150,100,60,2.0\n"
            "1763465361,1,N/A,100,60,2.0\n");
  Drained d = ReadOne(p);
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  ASSERT_EQ(d.batches.size(), 2u);
  EXPECT_EQ(d.batches[0][1].key.gpu, 1);
  EXPECT_EQ(d.batches[1][0].timestamp_ms, 1763465361000);
  EXPECT_DOUBLE_EQ(*d.batches[0][0].power_w, 500.5);
  EXPECT_DOUBLE_EQ(*d.batches[0][1].mem_used_mib, 61 * 1024);
  EXPECT_FALSE(d.batches[1][1].power_w.has_value());
  EXPECT_THAT(d.description, HasSubstr("custom CSV: "));
  EXPECT_THAT(d.description, HasSubstr("power='Power Draw [W]' [W]"));
  EXPECT_THAT(d.description, HasSubstr("time='ts' [ISO 8601 or epoch]"));
  EXPECT_THAT(d.description, HasSubstr("ignored 'loss'"));
}

TEST(CustomCsv, WideLayoutIsoWithZoneAndMillis) {
  TempDir dir;
  const std::string p = dir / "wide.csv";
  WriteFile(p,
            "time;gpu0_power_w;gpu1_power_w;gpu0_util;gpu1_util\n"
            "2025-11-18T12:29:20.250+01:00;500;501;99;98\n"
            "2025-11-18T12:29:20.350+01:00;150;151;100;100\n");
  Drained d = ReadOne(p);
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  ASSERT_EQ(d.batches.size(), 2u);
  ASSERT_EQ(d.batches[0].size(), 2u);
  EXPECT_EQ(d.batches[0][0].timestamp_ms, 1763465360250);
  EXPECT_DOUBLE_EQ(*d.batches[1][1].power_w, 151);
  EXPECT_DOUBLE_EQ(*d.batches[0][1].util_gpu_pct, 98);
  EXPECT_THAT(d.description, HasSubstr("(2 GPUs)"));
}

TEST(CustomCsv, MapNamesWhatTheGuessMissed) {
  TempDir dir;
  const std::string p = dir / "odd.csv";
  WriteFile(p, "t,board,busy_frac,card\n1763465360000,400,0.5,0\n1763465360100,410,0.6,0\n");
  Drained guess = ReadOne(p);
  // "busy_frac" is utilization as a ratio; "board" means nothing, "t" neither.
  ASSERT_FALSE(guess.status.ok());
  Drained d = ReadOne(p, 0, {{"time", "t"}, {"power", "board"}, {"gpu", "card"}});
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  ASSERT_EQ(d.samples.size(), 2u);
  EXPECT_EQ(d.samples[1].timestamp_ms, 1763465360100);
  EXPECT_DOUBLE_EQ(*d.samples[0].power_w, 400);
  EXPECT_DOUBLE_EQ(*d.samples[1].util_gpu_pct, 60);
  EXPECT_THAT(d.description, HasSubstr("power='board' (--map)"));
  Drained bad = ReadOne(p, 0, {{"power", "nope"}});
  ASSERT_FALSE(bad.status.ok());
  EXPECT_THAT(bad.status.message(), HasSubstr("--map power=nope: no such column"));
}

TEST(CustomCsv, DuplicateAndOutOfOrderTimesAreSkipped) {
  TempDir dir;
  const std::string p = dir / "dup.csv";
  WriteFile(p, "time,power\n1763465360,100\n1763465361,101\n1763465361,102\n1763465359,99\n");
  Drained d = ReadOne(p);
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  EXPECT_EQ(d.samples.size(), 2u);
  EXPECT_THAT(d.warnings, HasSubstr("duplicate timestamp skipped (1 time)"));
  EXPECT_THAT(d.warnings, HasSubstr("out-of-order timestamp skipped (1 time)"));
}

TEST(Layouts, CustomCsvRepeatedHeaderSkippedChangedHeaderIsError) {
  TempDir dir;
  std::string s;
  for (int i = 0; i < 5; ++i) {
    s += "time,gpu,power_w,util_pct\n";
    s += fmt::format("2024-01-01T12:00:{:02},0,300,90\n", i);
  }
  WriteFile(dir / "loop.csv", s);
  Drained d = Read({dir / "loop.csv"});
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  EXPECT_EQ(d.samples.size(), 5u);
  EXPECT_THAT(d.warnings,
              HasSubstr("repeated header lines skipped (identical to line 1) (4 times)"));
  s += "time,gpu,util_pct,power_w\n2024-01-01T12:00:09,0,90,300\n";
  WriteFile(dir / "loop.csv", s);
  d = Read({dir / "loop.csv"});
  ASSERT_FALSE(d.status.ok());
  EXPECT_THAT(d.status.message(), HasSubstr("loop.csv:11: the header changes mid-file"));
}

TEST(Layouts, UnitsThatCannotBePlacedAreErrorsNamingTheColumn) {
  TempDir dir;
  WriteFile(dir / "dbm.csv", "time,gpu,power (dBm),util (%)\n2024-01-01T12:00:00,0,30,99\n");
  Drained d = Read({dir / "dbm.csv"});
  ASSERT_FALSE(d.status.ok());
  EXPECT_THAT(d.status.message(),
              HasSubstr("dbm.csv:1: column 'power (dBm)': unit 'dBm' cannot be placed"));
  // Degrees and "in W" are units it knows.
  WriteFile(dir / "deg.csv",
            "time,gpu,Power (in W),Temp (°C),util (%)\n2024-01-01T12:00:00,0,300,61,99\n");
  d = Read({dir / "deg.csv"});
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  EXPECT_DOUBLE_EQ(*d.samples[0].temperature_c, 61);
  EXPECT_DOUBLE_EQ(*d.samples[0].power_w, 300);
}

// ---------------------------------------------------------------- wide frames

TEST(Layouts, WidePandasFrameNeedsWideAndReadsPower) {
  TempDir dir;
  std::string s = ",timestamp,GPU 0,GPU 1\n";
  for (int i = 0; i < 4; ++i) {
    s += fmt::format("{},{},{},{}\n", i, 1704110400 + 30 * i, 300 + i, i == 2 ? "" : "55.5");
  }
  WriteFile(dir / "power.csv", s);
  Drained d = Read({dir / "power.csv"});
  ASSERT_FALSE(d.status.ok());
  EXPECT_THAT(d.status.message(), HasSubstr("power.csv:1: 2 columns of one GPU each ('GPU 0', "
                                            "'GPU 1') but no name says what they hold; pass "
                                            "--wide METRIC"));
  IngestOptions o;
  o.wide_metric = "power";
  d = Read({dir / "power.csv"}, o);
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  EXPECT_EQ(Format(d), "wide");
  ASSERT_EQ(d.samples.size(), 7u);  // GPU 1 has no reading at row 2
  EXPECT_EQ(d.samples[0].timestamp_ms, 1704110400000);
  EXPECT_DOUBLE_EQ(*d.samples[1].power_w, 55.5);
  EXPECT_FALSE(d.samples[0].util_gpu_pct);
  o.wide_metric = "bogus";
  d = Read({dir / "power.csv"}, o);
  ASSERT_FALSE(d.status.ok());
  EXPECT_THAT(d.status.message(), HasSubstr("--wide 'bogus': not a metric"));
}

TEST(Layouts, WideTimeThatJumpsBackStartsASegment) {
  TempDir dir;
  std::string s = "timestamp,gpu.0,gpu.1\n";
  for (int run = 0; run < 2; ++run) {
    for (int i = 0; i < 3; ++i) {
      s += fmt::format("2024-01-0{}T12:0{}:00,{},{}\n", 2 - run, i, 50 + i, 60 + i);
    }
  }
  WriteFile(dir / "runs.csv", s);
  IngestOptions o;
  o.wide_metric = "util";
  const Drained d = Read({dir / "runs.csv"}, o);
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  ASSERT_EQ(d.samples.size(), 12u);  // nothing dropped as out of order
  for (size_t i = 2; i < d.samples.size(); ++i) {
    EXPECT_GT(d.samples[i].timestamp_ms, d.samples[i - 2].timestamp_ms);
  }
  // The second run laid one interval (60 s) after the first's last row.
  EXPECT_EQ(d.samples[6].timestamp_ms - d.samples[4].timestamp_ms, 60000);
  EXPECT_THAT(d.warnings, HasSubstr("time jumps back: a new segment"));
  EXPECT_THAT(d.text, HasSubstr("2 segments"));
  EXPECT_DOUBLE_EQ(*d.samples[7].util_gpu_pct, 60);
}

TEST(Layouts, WidePandasIndexReadBackAndIntegerGpuColumns) {
  TempDir dir;
  // `Unnamed: 0` (a pandas index saved and read back) is not GPU 0; `0`, `1` (a pivot on an
  // integer gpu column) are GPUs.
  WriteFile(dir / "pivot.csv",
            "Unnamed: 0,timestamp,0,1\n0,1704110400,300,301\n1,1704110430,302,303\n");
  IngestOptions o;
  o.wide_metric = "power";
  const Drained d = Read({dir / "pivot.csv"}, o);
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  EXPECT_EQ(Format(d), "wide");
  ASSERT_EQ(d.samples.size(), 4u);
  EXPECT_EQ(d.samples[1].key.gpu, 1);
  EXPECT_DOUBLE_EQ(*d.samples[3].power_w, 303);
  // W&B keys without `system.`: the metric is in the name.
  WriteFile(dir / "short.csv", "timestamp,gpu.0.powerWatts,gpu.1.powerWatts\n1704110400,300,301\n");
  const Drained s = Read({dir / "short.csv"});
  ASSERT_TRUE(s.status.ok()) << s.status.message();
  ASSERT_EQ(s.samples.size(), 2u);
  EXPECT_DOUBLE_EQ(*s.samples[1].power_w, 301);
}

}  // namespace
}  // namespace ww::ingest_tests
