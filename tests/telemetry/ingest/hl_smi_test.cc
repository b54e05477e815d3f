// The hl-smi reader (hl_smi.h): headers with and without units, devices, the year hl-smi cuts,
// headerless files, malformed rows.
#include "telemetry/ingest/hl_smi.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/timefmt.h"
#include "telemetry/ingest/read_support.h"

namespace ww::ingest_tests {
namespace {

constexpr const char* kHlSmiUnits =
    "timestamp, module_id, name, utilization.aip [%], power.draw [W], memory.used [MiB], "
    "memory.total [MiB], temperature.aip [C]\n"
    "Wed Oct 19 18:23:37 UTC 202, 0, HL-225, 100 %, 182 W, 60000 MiB, 98304 MiB, 41 C\n"
    "Wed Oct 19 18:23:37 UTC 202, 1, HL-225, 100 %, N/A, 60001 MiB, 98304 MiB, 42 C\n"
    "Wed Oct 19 18:23:38 UTC 202, 0, HL-225, 99 %, 185 W, 60000 MiB, 98304 MiB, 41 C\n"
    "Wed Oct 19 18:23:38 UTC 202, 1, HL-225, 100 %, 181 W, 60001 MiB, 98304 MiB, 42 C\n";

TEST(HlSmi, HeaderWithUnitsReadsEveryField) {
  TempDir dir;
  WriteFile(dir / "hl.csv", kHlSmiUnits);
  const Drained d = Read({dir / "hl.csv"});
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  EXPECT_EQ(Format(d), "hl-smi");
  ASSERT_EQ(d.samples.size(), 4u);
  ASSERT_EQ(d.batches.size(), 2u) << "one batch per poll";
  const int64_t t0 = ParseTimestamp("2022-10-19 18:23:37")->unix_ms;
  EXPECT_EQ(d.samples[0].timestamp_ms, t0);
  EXPECT_EQ(d.samples[2].timestamp_ms, t0 + 1000);
  const GpuSample& g0 = d.samples[0];
  EXPECT_DOUBLE_EQ(*g0.util_gpu_pct, 100) << "utilization.aip is util_gpu_pct";
  EXPECT_DOUBLE_EQ(*g0.power_w, 182);
  EXPECT_DOUBLE_EQ(*g0.mem_used_mib, 60000);
  EXPECT_DOUBLE_EQ(*g0.mem_total_mib, 98304);
  EXPECT_DOUBLE_EQ(*g0.temperature_c, 41);
  EXPECT_FALSE(d.samples[1].power_w) << "N/A is absent, never 0";
  EXPECT_EQ(d.samples[1].key.gpu, 1);
  EXPECT_EQ(d.gpus[0].name, "HL-225");
  // The weekday names the year: Wed Oct 19 falls on a Wednesday in 2022 only, of 2020-2029.
  EXPECT_THAT(d.warnings, HasSubstr("year 2022 from the weekday"));
  EXPECT_THAT(d.warnings, HasSubstr("power.draw [W]: not available"));
  EXPECT_THAT(d.text, HasSubstr("devices by module_id"));
}

TEST(HlSmi, NounitsIndexAndPowerMax) {
  TempDir dir;
  WriteFile(dir / "hl.csv",
            "timestamp, index, bus_id, utilization.aip [%], power.draw [W], power.max [W]\n"
            "Tue Nov 18 11:29:21 UTC 2025, 0, 0000:19:00.0, 97, 420, 850\n"
            "Tue Nov 18 11:29:21 UTC 2025, 1, 0000:1a:00.0, 97, 421, 850\n");
  const Drained d = Read({dir / "hl.csv"});
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  ASSERT_EQ(d.samples.size(), 2u);
  EXPECT_DOUBLE_EQ(*d.samples[1].power_w, 421);
  EXPECT_DOUBLE_EQ(*d.samples[1].power_limit_w, 850);
  EXPECT_EQ(d.samples[0].timestamp_ms, ParseTimestamp("2025-11-18 11:29:21")->unix_ms);
  EXPECT_THAT(d.warnings, ::testing::Not(HasSubstr("cut year"))) << "a whole year needs none";
}

TEST(HlSmi, YearFromTheFilesDateLinesThenFlagElseRefused) {
  TempDir dir;
  // Wed Jan 1 is a Wednesday in 2020 and in 2025: the weekday cannot tell.
  const std::string rows =
      "timestamp, module_id, utilization.aip [%], power.draw [W]\n"
      "Wed Jan 01 00:00:00 UTC 202, 0, 100 %, 200 W\n"
      "Wed Jan 01 00:00:00 UTC 202, 1, 100 %, 201 W\n";
  WriteFile(dir / "ambiguous.csv", rows);
  const Drained refused = Read({dir / "ambiguous.csv"});
  ASSERT_FALSE(refused.status.ok());
  EXPECT_THAT(refused.status.message(), HasSubstr("ambiguous.csv:2"));
  EXPECT_THAT(refused.status.message(), HasSubstr("pass --year"));
  EXPECT_THAT(refused.status.message(), HasSubstr("2020, 2025"));

  IngestOptions with_year;
  with_year.year = 2025;
  const Drained flagged = Read({dir / "ambiguous.csv"}, with_year);
  ASSERT_TRUE(flagged.status.ok()) << flagged.status.message();
  EXPECT_EQ(flagged.samples[0].timestamp_ms, ParseTimestamp("2025-01-01 00:00:00")->unix_ms);
  EXPECT_THAT(flagged.warnings, HasSubstr("year 2025 from --year"));

  // A `date; hl-smi ...` loop: the date line's year wins over --year.
  WriteFile(dir / "dated.csv", "Wed Jan  1 00:00:00 UTC 2020\n" + rows);
  const Drained dated = Read({dir / "dated.csv"}, with_year);
  ASSERT_TRUE(dated.status.ok()) << dated.status.message();
  EXPECT_EQ(dated.samples[0].timestamp_ms, ParseTimestamp("2020-01-01 00:00:00")->unix_ms);
  EXPECT_THAT(dated.warnings, HasSubstr("year 2020 from the date line at line 1"));
}

TEST(HlSmi, HeaderlessNeedsQuery) {
  TempDir dir;
  WriteFile(dir / "hl.csv",
            "Wed Oct 19 18:23:37 UTC 202, 0, 100, 200\n"
            "Wed Oct 19 18:23:37 UTC 202, 1, 100, 201\n");
  const Drained bare = Read({dir / "hl.csv"});
  ASSERT_FALSE(bare.status.ok());
  EXPECT_THAT(bare.status.message(), HasSubstr("--query"));
  IngestOptions o;
  auto f = ParseInputFormat("hl-smi");
  ASSERT_TRUE(f.ok());
  o.format = *f;
  o.replay.query = "timestamp,module_id,utilization.aip,power.draw";
  const Drained d = Read({dir / "hl.csv"}, o);
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  ASSERT_EQ(d.samples.size(), 2u);
  EXPECT_DOUBLE_EQ(*d.samples[1].power_w, 201);
}

TEST(HlSmi, MalformedRowsAreDocumentedSkips) {
  TempDir dir;
  std::string text = "timestamp, module_id, utilization.aip [%], power.draw [W]\n";
  for (int i = 0; i < 200; ++i) {
    text += fmt::format("Wed Oct 19 18:{:02d}:{:02d} UTC 202, 0, 100 %, 200 W\n", i / 60, i % 60);
  }
  text += "Wed Oct 19 19:00:00 UTC 202, 0, 100 %\n";             // a field short
  text += "Wed Oct 19 19:00:01 UTC 202, 0, 100 %, lots W\n";     // not a number
  text += "Someday Oct 19 19:00:02 UTC 202, 0, 100 %, 200 W\n";  // not a time
  WriteFile(dir / "hl.csv", text);
  const Drained d = Read({dir / "hl.csv"});
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  EXPECT_EQ(d.samples.size(), 200u);
  EXPECT_THAT(d.warnings, HasSubstr("wrong number of fields"));
  EXPECT_THAT(d.warnings, HasSubstr("not a plausible number"));
  EXPECT_THAT(d.warnings, HasSubstr("unreadable timestamp"));
}

TEST(HlSmi, TimeAndWeekday) {
  const auto t = ParseHlSmiTime("Wed Oct  5 08:03:07 UTC 202");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->weekday, 3);
  EXPECT_EQ(t->month, 10);
  EXPECT_EQ(t->day, 5);
  EXPECT_EQ(t->second, 7);
  EXPECT_EQ(t->zone, "UTC");
  EXPECT_EQ(t->year_text, "202");
  EXPECT_FALSE(ParseHlSmiTime("2022-10-05 08:03:07"));
  EXPECT_FALSE(ParseHlSmiTime("Wed Oct 19 25:03:07 UTC 202"));
  EXPECT_EQ(WeekdayOf(2022, 10, 19), 3);
  EXPECT_EQ(WeekdayOf(1970, 1, 1), 4);
  EXPECT_EQ(WeekdayOf(2024, 2, 29), 4);
}

}  // namespace
}  // namespace ww::ingest_tests
