// The nvidia-smi log reader (src/telemetry/ingest/nvsmi_log.h) on small logs written here, one
// property each: the formats people actually have (csv with/without units and header, any column
// subset and order, dmon), the documented skips (a field that failed is absent, never 0; cut-off
// last lines, time going back, implausible values) and the errors (file, line and column named).
#include "telemetry/ingest/nvsmi_log.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>

#include "telemetry/ingest/merged_source.h"
#include "telemetry/test_files.h"
#include "telemetry/write/nvsmi_writer.h"

namespace ww::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Optional;

constexpr const char* kH100 = "NVIDIA H100 80GB HBM3";

// Rows of `ticks` ticks of `gpus` GPUs, 100 ms apart, with the nvidia-smi header and units.
// power = 100 + 10*gpu + tick, util = gpu*10: every value says which row it came from.
std::string IndexedLog(int ticks, int gpus, int64_t interval_ms = 100) {
  std::string s =
      "timestamp, index, name, power.draw [W], utilization.gpu [%], memory.used [MiB]\n";
  for (int t = 0; t < ticks; ++t) {
    for (int g = 0; g < gpus; ++g) {
      s += fmt::format("{}, {}, {}, {:.2f} W, {} %, {} MiB\n", Ts(t * interval_ms), g, kH100,
                       100.0 + 10 * g + t, g * 10, 70000 + g);
    }
  }
  return s;
}

TEST(NvsmiLogTest, HeaderWithUnitsAndLeadingSpaces) {
  TempDir dir;
  const std::string path = dir.Write("node0.csv", IndexedLog(3, 2));
  ReadAll r = ReadReplay({path});
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_THAT(r.warnings, IsEmpty());
  ASSERT_EQ(r.samples.size(), 6u);
  ASSERT_EQ(r.batches.size(), 3u);  // one batch per tick
  for (size_t i = 0; i < r.samples.size(); ++i) {
    const GpuSample& s = r.samples[i];
    const int tick = static_cast<int>(i / 2), gpu = static_cast<int>(i % 2);
    EXPECT_EQ(s.timestamp_ms, kBaseMs + tick * 100) << i;
    EXPECT_EQ(s.key.host, 0);
    EXPECT_EQ(s.key.gpu, gpu);
    EXPECT_THAT(s.power_w, Optional(100.0 + 10 * gpu + tick));
    EXPECT_THAT(s.util_gpu_pct, Optional(gpu * 10.0));
    EXPECT_THAT(s.mem_used_mib, Optional(70000.0 + gpu));
    // Not logged: absent, not 0.
    EXPECT_FALSE(s.power_limit_w.has_value());
    EXPECT_FALSE(s.temperature_c.has_value());
  }
  ASSERT_EQ(r.hosts, std::vector<std::string>{"node0"});
  ASSERT_EQ(r.gpus.size(), 2u);
  EXPECT_EQ(r.gpus[0].name, kH100);
}

TEST(NvsmiLogTest, NumberFormsReadTheSameOnEveryPath) {
  // Plain digits and a unit take the reader's fast path, everything else the general one: the
  // forms at the border between them read as numbers would, or the row is malformed.
  struct Case {
    const char* field;
    std::optional<double> want;  // nullopt: absent (missing or malformed)
  };
  const std::vector<Case> cases = {
      {" 547.12 W", 547.12},
      {"547.12W", 547.12},
      {" 5. W", 5},
      {" .5 W", 0.5},
      {" 91 %\t", 91},
      {" 70 W\r", 70},
      {" 1e2 W", 100},
      {" +7 W", 7},               // a plus sign: the rule of every reader
      {" \"547.12 W\"", 547.12},  // a quoted cell, as in every reader
      {" NaN", std::nullopt},
      {" 4999.99999999999 W", 4999.99999999999},    // 15 digits: the fast path
      {" 4999.999999999999 W", 4999.999999999999},  // 16: from_chars
      {" 0.000000000000001 W", 1e-15},
      {" 70 W W", std::nullopt},
      {" 70\t W", std::nullopt},
      {" 7.0.1 W", std::nullopt},
      {" [N/A]", std::nullopt},
      {" N/A", std::nullopt},
      {" -", std::nullopt},
      {" .", std::nullopt},
      {" W", std::nullopt},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.field);
    TempDir dir;
    std::string log = "timestamp, index, power.draw [W], utilization.gpu [%]\n";
    for (int t = 0; t < 3; ++t) log += fmt::format("{}, 0, {}, 50 %\n", Ts(t * 100), c.field);
    ReadAll r = ReadReplay({dir.Write("node0.csv", log)});
    ASSERT_TRUE(r.status.ok()) << r.status.message();
    ASSERT_EQ(r.samples.size(), 3u);
    if (c.want) {
      EXPECT_THAT(r.samples[0].power_w, Optional(*c.want));
    } else {
      EXPECT_FALSE(r.samples[0].power_w.has_value());
    }
  }
}

TEST(NvsmiLogTest, NaNIsNotAvailableAsInEveryReader) {
  // One rule for every reader (ingest::ParseNumber): "NaN" is a reading the logger did not have,
  // left absent and counted as not available, not a malformed row.
  TempDir dir;
  std::string log = "timestamp, index, power.draw [W], utilization.gpu [%]\n";
  for (int t = 0; t < 3; ++t)
    log += fmt::format("{}, 0, {}, 50 %\n", Ts(t * 100), t == 1 ? "NaN" : "70 W");
  ReadAll r = ReadReplay({dir.Write("node0.csv", log)});
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  ASSERT_EQ(r.samples.size(), 3u);
  EXPECT_THAT(r.samples[0].power_w, Optional(70.0));
  EXPECT_FALSE(r.samples[1].power_w.has_value());
  EXPECT_THAT(r.AllWarnings(), HasSubstr("power.draw [W]: not available"));
  EXPECT_THAT(r.AllWarnings(), ::testing::Not(HasSubstr("malformed")));
}

TEST(NvsmiLogTest, NoUnits) {
  // --format=csv,nounits: bare numbers in both header and rows.
  TempDir dir;
  const std::string path =
      dir.Write("a.csv", "timestamp, index, power.draw, utilization.gpu, temperature.gpu\n" +
                             Ts(0) + ", 0, 547.12, 91, 45\n" + Ts(0) + ", 1, 121.5, 100, 40\n");
  ReadAll r = ReadReplay({path});
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  ASSERT_EQ(r.samples.size(), 2u);
  EXPECT_THAT(r.samples[0].power_w, Optional(547.12));
  EXPECT_THAT(r.samples[0].util_gpu_pct, Optional(91.0));
  EXPECT_THAT(r.samples[0].temperature_c, Optional(45.0));
  EXPECT_THAT(r.samples[1].power_w, Optional(121.5));
}

TEST(NvsmiLogTest, NoHeaderWithQuery) {
  // --format=csv,noheader: the first line is data; the columns come from --query.
  TempDir dir;
  const std::string path = dir.Write(
      "a.csv", Ts(0) + ", 0, 547.12 W, 91 %\n" + Ts(0) + ", 1, 120.00 W, 100 %\n" + Ts(100) +
                   ", 0, 550.00 W, 92 %\n" + Ts(100) + ", 1, 119.00 W, 100 %\n");
  ReplayOptions o;
  o.query = "timestamp,index,power.draw,utilization.gpu";
  ReadAll r = ReadReplay({path}, o);
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  ASSERT_EQ(r.samples.size(), 4u);  // the first line is a row, not a header
  EXPECT_EQ(r.samples[0].timestamp_ms, kBaseMs);
  EXPECT_THAT(r.samples[0].power_w, Optional(547.12));
  EXPECT_EQ(r.samples[3].key.gpu, 1);
  EXPECT_THAT(r.samples[3].power_w, Optional(119.0));

  // Without --query the first row is no header: the error says what to do.
  ReadAll bad = ReadReplay({path});
  ASSERT_FALSE(bad.status.ok());
  EXPECT_EQ(bad.status.code(), StatusCode::kInvalidInput);
  EXPECT_THAT(bad.status.message(), HasSubstr(path + ":1:"));
  EXPECT_THAT(bad.status.message(), HasSubstr("--query"));
}

TEST(NvsmiLogTest, ColumnsInAnyOrderAndSubset) {
  TempDir dir;
  const std::string shuffled = dir.Write("shuffled.csv",
                                         "utilization.gpu [%], power.draw [W], index, timestamp\n"
                                         "91 %, 547.12 W, 3, " +
                                             Ts(0) +
                                             "\n"
                                             "100 %, 120.00 W, 5, " +
                                             Ts(0) + "\n");
  ReadAll r = ReadReplay({shuffled});
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  ASSERT_EQ(r.samples.size(), 2u);
  EXPECT_EQ(r.samples[0].key.gpu, 3);
  EXPECT_EQ(r.samples[1].key.gpu, 5);
  EXPECT_THAT(r.samples[0].power_w, Optional(547.12));
  EXPECT_THAT(r.samples[0].util_gpu_pct, Optional(91.0));
  EXPECT_EQ(r.samples[1].timestamp_ms, kBaseMs);

  // Utilization only: power is absent (not 0), the log still reads.
  const std::string subset =
      dir.Write("subset.csv", "timestamp, index, utilization.gpu [%]\n" + Ts(0) + ", 0, 42 %\n");
  ReadAll s = ReadReplay({subset});
  ASSERT_TRUE(s.status.ok()) << s.status.message();
  ASSERT_EQ(s.samples.size(), 1u);
  EXPECT_FALSE(s.samples[0].power_w.has_value());
  EXPECT_THAT(s.samples[0].util_gpu_pct, Optional(42.0));

  // Unknown columns are ignored.
  const std::string extra =
      dir.Write("extra.csv", "timestamp, driver_version, index, fan.speed [%], power.draw [W]\n" +
                                 Ts(0) + ", 550.54.15, 0, 30 %, 88.10 W\n");
  ReadAll e = ReadReplay({extra});
  ASSERT_TRUE(e.status.ok()) << e.status.message();
  ASSERT_EQ(e.samples.size(), 1u);
  EXPECT_THAT(e.samples[0].power_w, Optional(88.1));
}

TEST(NvsmiLogTest, IdentityColumnsInAnyOrder) {
  // uuid before index, and two models on one host (a display board next to a compute board):
  // every GPU keeps its own uuid and name (the name seeds its power calibration).
  TempDir dir;
  std::string s = "timestamp, uuid, name, index, power.draw [W]\n";
  for (int t = 0; t < 3; ++t) {
    s += Ts(t * 100) + ", GPU-aaaa, NVIDIA RTX A4000, 0, 30.00 W\n";
    s += Ts(t * 100) + ", GPU-bbbb, NVIDIA H100 PCIe, 1, 300.00 W\n";
  }
  ReadAll r = ReadReplay({dir.Write("a.csv", s)});
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  ASSERT_EQ(r.samples.size(), 6u);
  ASSERT_EQ(r.gpus.size(), 2u);
  EXPECT_EQ(r.gpus[0].uuid, "GPU-aaaa");
  EXPECT_EQ(r.gpus[1].uuid, "GPU-bbbb");
  EXPECT_EQ(r.gpus[0].name, "NVIDIA RTX A4000");
  EXPECT_EQ(r.gpus[1].name, "NVIDIA H100 PCIe");
}

TEST(NvsmiLogTest, PowerVariantsLimitsAndClocks) {
  TempDir dir;
  const std::string path = dir.Write(
      "a.csv",
      "timestamp, index, power.draw.average [W], power.draw.instant [W], enforced.power.limit [W], "
      "clocks.current.sm [MHz], clocks.current.memory [MHz], pstate, memory.total [MiB]\n" +
          Ts(0) + ", 0, 512.30 W, 640.75 W, 700.00 W, 1980 MHz, 2619 MHz, P0, 81559 MiB\n");
  ReadAll r = ReadReplay({path});
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  ASSERT_EQ(r.samples.size(), 1u);
  const GpuSample& s = r.samples[0];
  EXPECT_THAT(s.power_w, Optional(512.3));
  EXPECT_THAT(s.power_instant_w, Optional(640.75));
  EXPECT_THAT(s.power_limit_w, Optional(700.0));
  EXPECT_THAT(s.sm_clock_mhz, Optional(1980.0));
  EXPECT_THAT(s.mem_clock_mhz, Optional(2619.0));
  EXPECT_THAT(s.pstate, Optional(0));
  EXPECT_THAT(s.mem_total_mib, Optional(81559.0));
}

TEST(NvsmiLogTest, EnforcedLimitWinsOverPowerLimitInEitherOrder) {
  // A capped board: power.limit is the configured default, enforced.power.limit what applies.
  TempDir dir;
  for (const auto& [header, row] : std::vector<std::pair<std::string, std::string>>{
           {"power.limit [W], enforced.power.limit [W]", "700.00 W, 450.00 W"},
           {"enforced.power.limit [W], power.limit [W]", "450.00 W, 700.00 W"}}) {
    const std::string path = dir.Write("a.csv", "timestamp, index, power.draw [W], " + header +
                                                    "\n" + Ts(0) + ", 0, 300 W, " + row + "\n");
    ReadAll r = ReadReplay({path});
    ASSERT_TRUE(r.status.ok()) << r.status.message();
    ASSERT_EQ(r.samples.size(), 1u);
    EXPECT_THAT(r.samples[0].power_limit_w, Optional(450.0)) << header;
  }
}

TEST(NvsmiLogTest, ClockEventReasons) {
  TempDir dir;
  const std::string path = dir.Write(
      "a.csv",
      "timestamp, index, power.draw [W], clocks_event_reasons.gpu_idle, "
      "clocks_event_reasons.sw_power_cap, clocks_throttle_reasons.hw_slowdown\n" +
          Ts(0) + ", 0, 300 W, Not Active, Active, Active\n" +  // sw_power_cap | hw_slowdown
          Ts(0) + ", 1, 300 W, Not Active, Not Active, Not Active\n" +  // known: none active
          Ts(0) + ", 2, 300 W, [N/A], [N/A], [N/A]\n" +                 // unknown: absent
          Ts(0) + ", 3, 300 W, Active, Not Active, Not Active\n");
  ReadAll r = ReadReplay({path});
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  ASSERT_EQ(r.samples.size(), 4u);
  EXPECT_THAT(r.samples[0].clock_event_reasons, Optional(uint64_t{0x4 | 0x8}));
  EXPECT_THAT(r.samples[1].clock_event_reasons, Optional(uint64_t{0}));
  EXPECT_FALSE(r.samples[2].clock_event_reasons.has_value());
  EXPECT_THAT(r.samples[3].clock_event_reasons, Optional(uint64_t{0x1}));

  const std::string hex =
      dir.Write("hex.csv", "timestamp, index, power.draw [W], clocks_event_reasons.active\n" +
                               Ts(0) + ", 0, 300 W, 0x0000000000000004\n" + Ts(0) +
                               ", 1, 300 W, 0x0000000000000000\n" + Ts(0) + ", 2, 300 W, [N/A]\n");
  ReadAll h = ReadReplay({hex});
  ASSERT_TRUE(h.status.ok()) << h.status.message();
  ASSERT_EQ(h.samples.size(), 3u);
  EXPECT_THAT(h.samples[0].clock_event_reasons, Optional(uint64_t{4}));
  EXPECT_THAT(h.samples[1].clock_event_reasons, Optional(uint64_t{0}));
  EXPECT_FALSE(h.samples[2].clock_event_reasons.has_value());
}

TEST(NvsmiLogTest, FailedReadingsAreAbsentNeverZero) {
  // What nvidia-smi prints when a read fails: the field is absent for that sample, the rest of
  // the row (and the GPU's place) stays.
  for (const std::string marker :
       {"[N/A]", "[Not Supported]", "[Unknown Error]", "[GPU is lost]"}) {
    SCOPED_TRACE(marker);
    TempDir dir;
    const std::string path = dir.Write(
        "a.csv",
        "timestamp, index, power.draw [W], utilization.gpu [%], temperature.gpu, pstate\n" + Ts(0) +
            ", 0, " + marker + ", " + marker + ", 45, " + marker + "\n" + Ts(0) +
            ", 1, 300.00 W, 97 %, " + marker + ", P0\n");
    ReadAll r = ReadReplay({path});
    ASSERT_TRUE(r.status.ok()) << r.status.message();
    ASSERT_EQ(r.samples.size(), 2u);
    EXPECT_EQ(r.samples[0].key.gpu, 0);
    EXPECT_FALSE(r.samples[0].power_w.has_value());
    EXPECT_FALSE(r.samples[0].util_gpu_pct.has_value());
    EXPECT_FALSE(r.samples[0].pstate.has_value());
    EXPECT_THAT(r.samples[0].temperature_c, Optional(45.0));
    EXPECT_EQ(r.samples[1].key.gpu, 1);
    EXPECT_THAT(r.samples[1].power_w, Optional(300.0));
    EXPECT_FALSE(r.samples[1].temperature_c.has_value());
  }
}

TEST(NvsmiLogTest, TriageReadsTemperatureAsEvidenceABadCellDropsOnlyIt) {
  // Triage's reading (triage_fields_only) parses temperature.gpu for the thermal evidence
  // (triage/thermal.h) but never lets it cost a row: garbage, out of range or [N/A] drop the
  // reading and nothing else, where the full reader rejects a garbage row.
  TempDir dir;
  const std::string path = dir.Write(
      "a.csv", "timestamp, index, power.draw [W], utilization.gpu [%], temperature.gpu\n" + Ts(0) +
                   ", 0, 300.00 W, 97 %, 61\n" + Ts(0) + ", 1, 301.00 W, 97 %, hot\n" + Ts(0) +
                   ", 2, 302.00 W, 97 %, 900\n" + Ts(0) + ", 3, 303.00 W, 97 %, [N/A]\n");
  ReplayOptions o;
  o.triage_fields_only = true;
  ReadAll r = ReadReplay({path}, o);
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  ASSERT_EQ(r.samples.size(), 4u) << "no row lost to its temperature";
  EXPECT_THAT(r.samples[0].temperature_c, Optional(61.0));
  for (size_t i = 1; i < 4; ++i) {
    EXPECT_FALSE(r.samples[i].temperature_c.has_value()) << i;
    EXPECT_THAT(r.samples[i].power_w, Optional(300.0 + static_cast<double>(i)));
  }
  EXPECT_THAT(r.warnings, IsEmpty());
}

// nvidia-smi --query-gpu=timestamp,power.draw,... without index: 8 rows per tick, rows a
// millisecond apart, ticks 100 ms apart; memory.used = 1000 + the GPU's real index, so every row
// says where it belongs. One tick stalls 250 ms (longer than the interval) between two rows.
std::string PositionalLog(int ticks, int stall_tick, int64_t stall_ms) {
  std::string s = "timestamp, power.draw [W], utilization.gpu [%], memory.used [MiB]\n";
  int64_t t = 0;
  for (int tick = 0; tick < ticks; ++tick) {
    for (int g = 0; g < 8; ++g) {
      if (tick == stall_tick && g == 4) t += stall_ms;
      s += fmt::format("{}, {}.00 W, {} %, {} MiB\n", Ts(t), 100 + g, 90 + g, 1000 + g);
      t += 1;
    }
    t += 100 - 8;
  }
  return s;
}

TEST(NvsmiLogTest, NoIndexColumnGpuIsPositionInTick) {
  TempDir dir;
  const std::string path = dir.Write("a.csv", PositionalLog(20, /*stall_tick=*/6, 250));
  ReadAll r = ReadReplay({path});
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  ASSERT_EQ(r.samples.size(), 160u);
  EXPECT_THAT(r.warnings, IsEmpty()) << r.AllWarnings();
  std::map<int, int> per_gpu;
  for (const GpuSample& s : r.samples) {
    ASSERT_TRUE(s.mem_used_mib.has_value());
    // The stall must not shift the GPUs of that tick or of later ticks.
    EXPECT_EQ(s.key.gpu, static_cast<int>(*s.mem_used_mib) - 1000) << s.timestamp_ms;
    ++per_gpu[s.key.gpu];
  }
  EXPECT_EQ(per_gpu.size(), 8u);
  for (const auto& [gpu, n] : per_gpu) EXPECT_EQ(n, 20) << gpu;
  for (const auto& batch : r.batches) EXPECT_EQ(batch.size(), 8u);
}

TEST(NvsmiLogTest, StallInTheFirstTickDoesNotShiftGpus) {
  TempDir dir;
  const std::string path = dir.Write("a.csv", PositionalLog(20, /*stall_tick=*/0, 250));
  ReadAll r = ReadReplay({path});
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  ASSERT_EQ(r.samples.size(), 160u);
  for (const GpuSample& s : r.samples) {
    EXPECT_EQ(s.key.gpu, static_cast<int>(*s.mem_used_mib) - 1000) << s.timestamp_ms;
  }
}

TEST(NvsmiLogTest, NoIndexColumnSingleGpu) {
  // A workstation with one GPU: every row is its own tick.
  TempDir dir;
  std::string s = "timestamp, power.draw [W], utilization.gpu [%]\n";
  for (int t = 0; t < 30; ++t) s += fmt::format("{}, {}.00 W, 90 %\n", Ts(t * 1000), 100 + t);
  ReadAll r = ReadReplay({dir.Write("a.csv", s)});
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  ASSERT_EQ(r.samples.size(), 30u);
  EXPECT_EQ(r.batches.size(), 30u);
  for (const GpuSample& x : r.samples) EXPECT_EQ(x.key.gpu, 0);
  EXPECT_THAT(r.samples.back().power_w, Optional(129.0));
}

TEST(NvsmiLogTest, UuidColumnWithoutIndex) {
  // GPUs numbered in order of first appearance; the uuid is kept for the report.
  TempDir dir;
  std::string s = "timestamp, uuid, power.draw [W], utilization.gpu [%]\n";
  for (int t = 0; t < 3; ++t) {
    s += Ts(t * 100) + ", GPU-bbbb, 500.00 W, 95 %\n";
    s += Ts(t * 100) + ", GPU-aaaa, 110.00 W, 100 %\n";
  }
  const std::string path = dir.Write("a.csv", s);
  ReadAll r = ReadReplay({path});
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  ASSERT_EQ(r.samples.size(), 6u);
  for (const GpuSample& x : r.samples) {
    EXPECT_EQ(x.key.gpu, *x.power_w > 300 ? 0 : 1);
  }
  ASSERT_EQ(r.gpus.size(), 2u);
  EXPECT_EQ(r.gpus[0].uuid, "GPU-bbbb");
  EXPECT_EQ(r.gpus[1].uuid, "GPU-aaaa");
}

constexpr const char* kDmonHeader =
    "# gpu    pwr  gtemp  mtemp     sm    mem    enc    dec    jpg    ofa   mclk   pclk\n"
    "# Idx      W      C      C      %      %      %      %      %      %    MHz    MHz\n";

TEST(NvsmiLogTest, DmonWithoutTimesNeedsInterval) {
  TempDir dir;
  std::string s = kDmonHeader;
  s += "    0    547     45      -     91     40      0      0      0      0   2619   1980\n";
  s += "    1    120     40      -    100      2      0      0      0      0   2619   1980\n";
  s += "    0      -     45      -     92     41      0      0      0      0   2619   1980\n";
  s += "    1    121     40      -    100      2      0      0      0      0   2619   1980\n";
  s += kDmonHeader;  // dmon repeats its header
  s += "    0    549     45      -     93     40      0      0      0      0   2619   1980\n";
  s += "    1    119     40      -    100      2      0      0      0      0   2619   1980\n";
  const std::string path = dir.Write("dmon.txt", s);

  ReadAll no_interval = ReadReplay({path});
  ASSERT_FALSE(no_interval.status.ok());
  EXPECT_THAT(no_interval.status.message(), HasSubstr(path));
  EXPECT_THAT(no_interval.status.message(), HasSubstr("--interval-ms"));

  ReplayOptions o;
  o.interval_ms = 1000;
  ReadAll r = ReadReplay({path}, o);
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  ASSERT_EQ(r.samples.size(), 6u);
  for (size_t i = 0; i < r.samples.size(); ++i) {
    EXPECT_EQ(r.samples[i].key.gpu, i % 2) << i;
    EXPECT_EQ(r.samples[i].timestamp_ms, static_cast<int64_t>(i / 2) * 1000) << i;
  }
  EXPECT_THAT(r.samples[0].power_w, Optional(547.0));
  EXPECT_THAT(r.samples[0].util_gpu_pct, Optional(91.0));
  EXPECT_THAT(r.samples[0].temperature_c, Optional(45.0));
  EXPECT_THAT(r.samples[0].sm_clock_mhz, Optional(1980.0));
  EXPECT_THAT(r.samples[0].mem_clock_mhz, Optional(2619.0));
  EXPECT_FALSE(r.samples[2].power_w.has_value());  // "-"
  EXPECT_THAT(r.samples[2].util_gpu_pct, Optional(92.0));
  EXPECT_THAT(r.samples[4].power_w, Optional(549.0));
}

TEST(NvsmiLogTest, DmonWithDateAndTime) {
  TempDir dir;
  const std::string header =
      "#Date       Time        gpu    pwr  gtemp  mtemp     sm    mem   mclk   pclk\n"
      "#YYYYMMDD   HH:MM:SS    Idx      W      C      C      %      %    MHz    MHz\n";
  std::string s = header;
  s += " 20251118   11:29:20      0    547     45      -     91     40   2619   1980\n";
  s += " 20251118   11:29:20      1      -     40      -    100      2   2619   1980\n";
  s += header;
  s += " 20251118   11:29:21      0    548     45      -     91     40   2619   1980\n";
  s += " 20251118   11:29:21      1    120     40      -    100      2   2619   1980\n";
  const std::string path = dir.Write("dmon.txt", s);
  ReadAll r = ReadReplay({path});
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  ASSERT_EQ(r.samples.size(), 4u);
  // The one '-' power reading is absent and counted (a documented skip), nothing else.
  ASSERT_EQ(r.warnings.size(), 1u) << r.AllWarnings();
  EXPECT_THAT(r.warnings[0], HasSubstr("pwr: not available ([N/A], [Not Supported], - or empty) "
                                       "in 1 row, left absent; first at line 4"));
  EXPECT_EQ(r.samples[0].timestamp_ms, kBaseMs);
  EXPECT_EQ(r.samples[3].timestamp_ms, kBaseMs + 1000);
  EXPECT_EQ(r.samples[1].key.gpu, 1);
  EXPECT_FALSE(r.samples[1].power_w.has_value());
  EXPECT_THAT(r.samples[3].power_w, Optional(120.0));
}

TEST(NvsmiLogTest, DmonTimeOnlyCrossesMidnight) {
  TempDir dir;
  std::string s =
      "# Time        gpu    pwr     sm\n"
      "# HH:MM:SS    Idx      W      %\n"
      "  23:59:59      0    547     91\n"
      "  00:00:00      0    548     92\n";
  const std::string path = dir.Write("dmon.txt", s);
  ReadAll r = ReadReplay({path});
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  ASSERT_EQ(r.samples.size(), 2u);
  EXPECT_EQ(r.samples[1].timestamp_ms - r.samples[0].timestamp_ms, 1000);
}

TEST(NvsmiLogTest, TruncatedLastLineIsSkippedWithWarning) {
  for (const bool newline : {false, true}) {
    SCOPED_TRACE(newline ? "with newline" : "without newline");
    TempDir dir;
    const std::string path =
        dir.Write("a.csv", IndexedLog(2, 2) + Ts(200) + ", 0, NVIDIA H1" + (newline ? "\n" : ""));
    ReadAll r = ReadReplay({path});
    ASSERT_TRUE(r.status.ok()) << r.status.message();
    EXPECT_EQ(r.samples.size(), 4u);
    EXPECT_THAT(r.AllWarnings(), HasSubstr("truncated last line skipped"));
    EXPECT_THAT(r.AllWarnings(), HasSubstr(path));
    EXPECT_THAT(r.AllWarnings(), HasSubstr("line 6"));
  }
}

TEST(NvsmiLogTest, CompleteLastLineWithoutNewlineIsKept) {
  TempDir dir;
  std::string log = IndexedLog(2, 2);
  log.pop_back();  // the final row is whole, only the newline is missing
  const std::string path = dir.Write("a.csv", log);
  ReadAll r = ReadReplay({path});
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_EQ(r.samples.size(), 4u);
  EXPECT_THAT(r.warnings, IsEmpty()) << r.AllWarnings();
}

TEST(NvsmiLogTest, OutOfOrderAndDuplicateTimestampsAreSkipped) {
  TempDir dir;
  const std::string header = "timestamp, index, power.draw [W]\n";
  std::string s = header;
  s += Ts(0) + ", 0, 100 W\n" + Ts(0) + ", 1, 101 W\n";
  s += Ts(100) + ", 0, 102 W\n" + Ts(100) + ", 1, 103 W\n";
  s += Ts(50) + ", 0, 666 W\n" + Ts(50) + ", 1, 666 W\n";  // back in time
  s += Ts(100) + ", 0, 777 W\n";                           // repeats GPU 0's last time
  s += Ts(200) + ", 0, 104 W\n" + Ts(200) + ", 1, 105 W\n";
  const std::string path = dir.Write("a.csv", s);
  ReadAll r = ReadReplay({path});
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  ASSERT_EQ(r.samples.size(), 6u);
  for (const GpuSample& x : r.samples) {
    EXPECT_LT(*x.power_w, 600) << "a skipped row was kept at " << x.timestamp_ms;
  }
  EXPECT_THAT(r.AllWarnings(), HasSubstr("out-of-order timestamp skipped (2 times)"));
  EXPECT_THAT(r.AllWarnings(), HasSubstr("duplicate timestamp skipped (1 time)"));
  EXPECT_THAT(r.AllWarnings(), HasSubstr("line 8"));
  // Per GPU, time only moves forward.
  std::map<int, int64_t> last;
  for (const GpuSample& x : r.samples) {
    if (last.count(x.key.gpu)) {
      EXPECT_GT(x.timestamp_ms, last[x.key.gpu]);
    }
    last[x.key.gpu] = x.timestamp_ms;
  }
}

TEST(NvsmiLogTest, MixedIntervalsAreAccepted) {
  // Someone switched from -lms 100 to -l 1 and later to -lms 50 mid-log.
  TempDir dir;
  std::string s = "timestamp, index, power.draw [W], utilization.gpu [%]\n";
  int64_t t = 0;
  int rows = 0;
  for (int64_t step : {100, 100, 100, 1000, 1000, 1000, 50, 50, 50, 50}) {
    for (int g = 0; g < 4; ++g) {
      s += fmt::format("{}, {}, 300.00 W, 95 %\n", Ts(t), g);
      ++rows;
    }
    t += step;
  }
  const std::string path = dir.Write("a.csv", s);
  ReadAll r = ReadReplay({path});
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_EQ(static_cast<int>(r.samples.size()), rows);
  EXPECT_THAT(r.warnings, IsEmpty()) << r.AllWarnings();
  EXPECT_EQ(r.batches.size(), 10u);
}

TEST(NvsmiLogTest, ImplausibleValuesAreAbsentWithWarning) {
  TempDir dir;
  std::string s = IndexedLog(10, 2);
  s += Ts(1000) + ", 0, " + kH100 + ", 1e308 W, 95 %, 70000 MiB\n";
  s += Ts(1000) + ", 1, " + kH100 + ", 99999 W, 95 %, 70000 MiB\n";
  s += Ts(1100) + ", 0, " + kH100 + ", 300.00 W, 250 %, 70000 MiB\n";
  s += Ts(1100) + ", 1, " + kH100 + ", 1e999 W, 95 %, 70000 MiB\n";  // out of double's range
  const std::string path = dir.Write("a.csv", s);
  ReadAll r = ReadReplay({path});
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  ASSERT_EQ(r.samples.size(), 24u);  // the rows stay; only the values go
  const GpuSample* s1000g0 = &r.samples[20];
  const GpuSample* s1000g1 = &r.samples[21];
  const GpuSample* s1100g0 = &r.samples[22];
  const GpuSample* s1100g1 = &r.samples[23];
  EXPECT_FALSE(s1000g0->power_w.has_value());
  EXPECT_THAT(s1000g0->util_gpu_pct, Optional(95.0));
  EXPECT_FALSE(s1000g1->power_w.has_value());
  EXPECT_THAT(s1100g0->power_w, Optional(300.0));
  EXPECT_FALSE(s1100g0->util_gpu_pct.has_value());
  EXPECT_FALSE(s1100g1->power_w.has_value());
  const std::string w = r.AllWarnings();
  EXPECT_THAT(w, HasSubstr("malformed value (field left absent) (4 times)"));
  EXPECT_THAT(w, HasSubstr("line 22: power.draw [W]: '1e308 W' is out of the plausible range"));
  EXPECT_THAT(w, HasSubstr("line 24: utilization.gpu [%]: '250 %' is out of the plausible range"));
}

TEST(NvsmiLogTest, WrongTypeIsAWarningThenAnErrorNamingFileLineAndColumn) {
  TempDir dir;
  // One bad value in 40 rows: a warning, the field absent.
  std::string few = IndexedLog(20, 2);
  few += Ts(2000) + ", 0, " + kH100 + ", abc, 95 %, 70000 MiB\n";
  const std::string few_path = dir.Write("few.csv", few);
  ReadAll r = ReadReplay({few_path});
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  ASSERT_EQ(r.samples.size(), 41u);
  EXPECT_FALSE(r.samples.back().power_w.has_value());
  EXPECT_THAT(r.samples.back().util_gpu_pct, Optional(95.0));
  EXPECT_THAT(r.AllWarnings(), HasSubstr("line 42: power.draw [W]: 'abc' is not a number"));

  // Every row bad: past the tolerance (1 % and over 20 rows) the file is rejected.
  std::string many = "timestamp, index, power.draw [W], utilization.gpu [%]\n";
  for (int t = 0; t < 30; ++t) many += Ts(t * 100) + ", 0, abc, 95 %\n";
  const std::string many_path = dir.Write("many.csv", many);
  ReadAll bad = ReadReplay({many_path});
  ASSERT_FALSE(bad.status.ok());
  EXPECT_EQ(bad.status.code(), StatusCode::kInvalidInput);
  EXPECT_THAT(bad.status.message(), HasSubstr(many_path));
  EXPECT_THAT(bad.status.message(), HasSubstr("too many malformed rows"));
  EXPECT_THAT(bad.status.message(), HasSubstr("line 2: power.draw [W]: 'abc' is not a number"));
}

TEST(NvsmiLogTest, RowsWithWrongFieldCountAreSkipped) {
  TempDir dir;
  std::string s = IndexedLog(5, 2);
  s += Ts(500) + ", 0, extra, field, " + kH100 + ", 1 W, 2 %, 3 MiB\n";
  s += IndexedLog(1, 2).substr(IndexedLog(1, 2).find('\n') + 1);  // rows at t=0 again: dups
  s += Ts(600) + ", 0, " + kH100 + ", 300.00 W, 95 %, 70000 MiB\n";
  const std::string path = dir.Write("a.csv", s);
  ReadAll r = ReadReplay({path});
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_EQ(r.samples.size(), 11u);
  EXPECT_THAT(r.AllWarnings(), HasSubstr("row with wrong number of fields skipped (1 time); "
                                         "line 12: 8 fields, header has 6"));
  // The rows replayed from t=0 after it go back in time: skipped, not mixed in.
  EXPECT_THAT(r.AllWarnings(), HasSubstr("out-of-order timestamp skipped (2 times); line 13"));
}

TEST(NvsmiLogTest, UnusableFilesAreClearErrors) {
  TempDir dir;
  struct Case {
    std::string name;
    std::string content;
    std::string expect;  // in the message, after the path
  };
  const std::vector<Case> cases = {
      {"empty.csv", "", "empty file"},
      {"blank.csv", "\n\n  \n", "empty file"},
      {"header_only.csv", "timestamp, index, power.draw [W], utilization.gpu [%]\n",
       "no data rows"},
      {"binary.csv",
       std::string("\x7f"
                   "ELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x03\0>\0\n",
                   20),
       ":1: binary data"},
      {"binary_row.csv",
       "timestamp, index, power.draw [W]\n" + Ts(0) + ", 0, 1" + std::string(1, '\0') + "0 W\n",
       ":2: binary data"},
      {"no_header.csv", "hello, world\n1, 2\n", ":1: not an nvidia-smi log header"},
      {"no_reading.csv", "timestamp, index, temperature.gpu\n" + Ts(0) + ", 0, 40\n",
       ":1: no power.draw or utilization.gpu column"},
      // One reading per GPU without time is a snapshot; a second one needs the interval.
      {"no_time.csv", "index, power.draw [W]\n0, 100 W\n0, 100 W\n",
       ":1: no timestamp column and more than one reading per GPU; pass --interval-ms"},
      {"no_time_positional.csv", "power.draw [W]\n100 W\n",
       ":1: no timestamp column; pass --interval-ms"},
      {"bad_timestamps.csv",
       [] {
         std::string s = "timestamp, index, power.draw [W]\n";
         for (int i = 0; i < 30; ++i) s += fmt::format("yesterday, 0, {} W\n", i);
         return s;
       }(),
       "line 2: timestamp: 'yesterday' is not a timestamp"},
      // No index column, 8 GPUs at 100 ms, stamps without milliseconds: 80 rows on each second.
      {"whole_seconds_100ms.csv",
       [] {
         std::string s = "timestamp, power.draw [W], utilization.gpu [%]\n";
         for (int tick = 0; tick < 40; ++tick) {
           for (int g = 0; g < 8; ++g) {
             s += fmt::format("{}, {} W, 90 %\n", Ts(tick / 10 * 1000), 100 + 10 * g + tick % 3);
           }
         }
         return s;
       }(),
       "the timestamps have whole seconds only and up to 80 rows share one"},
      // Stamps that are just disordered say nothing about seconds.
      {"no_ticks.csv",
       [] {
         std::string s = "timestamp, power.draw [W], utilization.gpu [%]\n";
         for (int i = 0; i < 64; ++i) s += fmt::format("{}, 100 W, 90 %\n", Ts(i * 37 % 101 * 7));
         return s;
       }(),
       "do not fall into ticks by timestamp, so GPUs"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string path = dir.Write(c.name, c.content);
    ReadAll r = ReadReplay({path});
    ASSERT_FALSE(r.status.ok()) << r.samples.size() << " samples";
    EXPECT_EQ(r.status.code(), StatusCode::kInvalidInput);
    EXPECT_THAT(r.status.message(), HasSubstr(path));
    EXPECT_THAT(r.status.message(), HasSubstr(c.expect));
  }
  ReadAll missing = ReadReplay({dir.path() + "/nope.csv"});
  ASSERT_FALSE(missing.status.ok());
  EXPECT_EQ(missing.status.code(), StatusCode::kNotFound);
  EXPECT_THAT(missing.status.message(), HasSubstr("nope.csv"));
}

TEST(NvsmiLogTest, MultipleFilesAreHostsMergedInTimeOrder) {
  TempDir dir;
  std::string a = "timestamp, index, power.draw [W]\n", b = a;
  for (int t = 0; t < 10; ++t) {
    for (int g = 0; g < 2; ++g) {
      a += fmt::format("{}, {}, {} W\n", Ts(t * 100), g, 100 + t);
      b += fmt::format("{}, {}, {} W\n", Ts(t * 100 + 50), g, 200 + t);  // half a tick later
    }
  }
  const std::string pa = dir.Write("logs/node0.csv", a);
  const std::string pb = dir.Write("other/node1.log", b);
  ReadAll r = ReadReplay({pb, pa});
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  EXPECT_EQ(r.hosts, (std::vector<std::string>{"node1", "node0"}));
  ASSERT_EQ(r.samples.size(), 40u);
  for (size_t i = 1; i < r.samples.size(); ++i) {
    EXPECT_GE(r.samples[i].timestamp_ms, r.samples[i - 1].timestamp_ms) << i;
  }
  for (const GpuSample& s : r.samples) {
    // host index = position on the command line; values tell which file a sample came from
    EXPECT_EQ(s.key.host, *s.power_w >= 200 ? 0 : 1);
  }
  EXPECT_EQ(r.samples.front().key.host, 1);  // node0 starts first
  EXPECT_EQ(r.gpus.size(), 4u);

  // The same file name twice (one per directory) still gives two hosts.
  const std::string pc = dir.Write("x/node0.csv", a);
  ReadAll twice = ReadReplay({pa, pc});
  ASSERT_TRUE(twice.status.ok()) << twice.status.message();
  // Named by the folders that tell them apart, as triage names them (HostNamesForPaths).
  EXPECT_EQ(twice.hosts, (std::vector<std::string>{"logs/node0", "x/node0"}));
  EXPECT_EQ(twice.samples.size(), 40u);

  // One bad file fails the whole replay, naming that file.
  const std::string bad = dir.Write("node2.csv", "");
  ReadAll with_bad = ReadReplay({pa, bad});
  ASSERT_FALSE(with_bad.status.ok());
  EXPECT_THAT(with_bad.status.message(), HasSubstr(bad));
}

TEST(NvsmiLogTest, TextFromTheLogIsValidUtf8) {
  // A GPU name in Latin-1, a value with a stray byte, a file name that is not UTF-8: what the
  // source hands out goes into the JSON report, which must stay valid UTF-8 (found by the fuzzer:
  // `triage --json` aborted in nlohmann::json::dump).
  TempDir dir;
  const std::string path = dir.Write(
      "node\xff.csv", "timestamp, index, name, uuid, power.draw [W]\n" + Ts(0) +
                          ", 0, Carte \xe9, GPU-\xc0\xaf, 1\xfe W\n" + Ts(0) +
                          ", 1, NVIDIA H100 \xe2\x80\x94 \xf0\x9f\x9a\x80, GPU-1, 100 W\n");
  ReadAll r = ReadReplay({path});
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  ASSERT_EQ(r.gpus.size(), 2u);
  EXPECT_EQ(r.gpus[0].name, "Carte \xef\xbf\xbd");
  EXPECT_EQ(r.gpus[0].uuid, "GPU-\xef\xbf\xbd\xef\xbf\xbd");  // an overlong '/' is not UTF-8
  EXPECT_EQ(r.gpus[1].name, "NVIDIA H100 \xe2\x80\x94 \xf0\x9f\x9a\x80");  // valid: unchanged
  EXPECT_EQ(r.hosts, std::vector<std::string>{"node\xef\xbf\xbd"});
  ASSERT_FALSE(r.warnings.empty());
  nlohmann::json j = {{"hosts", r.hosts},
                      {"warnings", r.warnings},
                      {"name", r.gpus[0].name},
                      {"uuid", r.gpus[0].uuid}};
  EXPECT_NO_THROW((void)j.dump());
  EXPECT_THAT(r.AllWarnings(), HasSubstr("'1\xef\xbf\xbd W' is not a number"));
}

TEST(NvsmiLogTest, HostNameFromPath) {
  EXPECT_EQ(HostNameFromPath("/var/log/gpu/node07.csv"), "node07");
  EXPECT_EQ(HostNameFromPath("node07.csv.zst"), "node07");
  EXPECT_EQ(HostNameFromPath("node07"), "node07");
  EXPECT_EQ(HostNameFromPath("dir.d/node07.log"), "node07");
  EXPECT_EQ(HostNameFromPath(".hidden"), ".hidden");
}

GpuSample FullSample(int64_t t_ms, uint16_t gpu) {
  GpuSample s;
  s.timestamp_ms = kBaseMs + t_ms;
  s.key.gpu = gpu;
  s.power_w = 547.12 + gpu;
  s.power_limit_w = 700;
  s.util_gpu_pct = 91 + gpu;
  s.util_mem_pct = 40;
  s.sm_clock_mhz = 1980;
  s.mem_clock_mhz = 2619;
  s.temperature_c = 45;
  s.mem_used_mib = 70000 + gpu;
  s.mem_total_mib = 81559;
  s.pstate = gpu % 2 == 0 ? 0 : 2;
  s.clock_event_reasons = gpu % 2 == 0 ? 0x4 : 0;
  return s;
}

void ExpectSameWritten(const GpuSample& a, const GpuSample& b) {
  EXPECT_EQ(a.timestamp_ms, b.timestamp_ms);
  EXPECT_EQ(a.key, b.key);
  EXPECT_EQ(a.power_w, b.power_w);
  EXPECT_EQ(a.power_limit_w, b.power_limit_w);
  EXPECT_EQ(a.util_gpu_pct, b.util_gpu_pct);
  EXPECT_EQ(a.util_mem_pct, b.util_mem_pct);
  EXPECT_EQ(a.sm_clock_mhz, b.sm_clock_mhz);
  EXPECT_EQ(a.mem_clock_mhz, b.mem_clock_mhz);
  EXPECT_EQ(a.temperature_c, b.temperature_c);
  EXPECT_EQ(a.mem_used_mib, b.mem_used_mib);
  EXPECT_EQ(a.mem_total_mib, b.mem_total_mib);
  EXPECT_EQ(a.pstate, b.pstate);
  EXPECT_EQ(a.clock_event_reasons, b.clock_event_reasons);  // the writer logs sw_power_cap only
}

TEST(NvsmiLogTest, WriterRoundTripFullColumns) {
  TempDir dir;
  const std::string path = dir.path() + "/rt.csv";
  std::vector<GpuSample> written;
  for (int t = 0; t < 5; ++t) {
    for (uint16_t g = 0; g < 3; ++g) written.push_back(FullSample(t * 100, g));
  }
  // Absent readings travel as [N/A] and come back absent.
  written[4].power_w.reset();
  written[4].pstate.reset();
  written[5].clock_event_reasons.reset();
  written[7].util_gpu_pct.reset();
  written[7].mem_used_mib.reset();
  {
    std::FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    NvsmiCsvWriter w(f, NvsmiColumns::kFull);
    w.WriteHeader();
    for (const GpuSample& s : written) w.WriteRow(s, kH100, fmt::format("GPU-{:04d}", s.key.gpu));
    std::fclose(f);
  }
  ReadAll r = ReadReplay({path});
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  // Each [N/A] reading of a triage field is counted per column (pstate and the reasons are not
  // triage readings: absent without a count).
  ASSERT_EQ(r.warnings.size(), 3u) << r.AllWarnings();
  EXPECT_THAT(r.warnings[0], HasSubstr("power.draw [W]: not available"));
  EXPECT_THAT(r.warnings[1], HasSubstr("utilization.gpu [%]: not available"));
  EXPECT_THAT(r.warnings[2], HasSubstr("memory.used [MiB]: not available ([N/A], [Not Supported], "
                                       "- or empty) in 1 row, left absent; first at line 9"));
  ASSERT_EQ(r.samples.size(), written.size());
  for (size_t i = 0; i < written.size(); ++i) {
    SCOPED_TRACE(i);
    ExpectSameWritten(r.samples[i], written[i]);
  }
  ASSERT_EQ(r.gpus.size(), 3u);
  EXPECT_EQ(r.gpus[2].name, kH100);
}

TEST(NvsmiLogTest, WriterRoundTripMinimalColumnsIsPositional) {
  // kMinimal has no index: the reader must place the rows by position, and the writer's rows of
  // one tick share a timestamp, so ticks are told apart by time alone.
  TempDir dir;
  const std::string path = dir.path() + "/rt.csv";
  std::vector<GpuSample> written;
  for (int t = 0; t < 10; ++t) {
    for (uint16_t g = 0; g < 8; ++g) {
      GpuSample s;
      s.timestamp_ms = kBaseMs + t * 100;
      s.key.gpu = g;
      s.power_w = 100.25 + g;
      s.util_gpu_pct = 10 * g;
      s.mem_used_mib = 1000 + g;
      written.push_back(s);
    }
  }
  {
    std::FILE* f = std::fopen(path.c_str(), "w");
    ASSERT_NE(f, nullptr);
    NvsmiCsvWriter w(f, NvsmiColumns::kMinimal);
    w.WriteHeader();
    for (const GpuSample& s : written) w.WriteRow(s, "", "");
    std::fclose(f);
  }
  ReadAll r = ReadReplay({path});
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  ASSERT_EQ(r.samples.size(), written.size());
  for (size_t i = 0; i < written.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(r.samples[i].timestamp_ms, written[i].timestamp_ms);
    EXPECT_EQ(r.samples[i].key, written[i].key);
    EXPECT_EQ(r.samples[i].power_w, written[i].power_w);
    EXPECT_EQ(r.samples[i].util_gpu_pct, written[i].util_gpu_pct);
    EXPECT_EQ(r.samples[i].mem_used_mib, written[i].mem_used_mib);
  }
}

TEST(NvsmiLogTest, TimestampFormatsNvidiaSmiWrites) {
  // Same instant in the formats seen in the wild; all parse to the same sample time.
  TempDir dir;
  for (const std::string ts :
       {"2025/11/18 11:29:20.700", "2025-11-18 11:29:20.700", "2025-11-18T11:29:20.700Z"}) {
    SCOPED_TRACE(ts);
    const std::string path =
        dir.Write("a.csv", "timestamp, index, power.draw [W]\n" + ts + ", 0, 100 W\n");
    ReadAll r = ReadReplay({path});
    ASSERT_TRUE(r.status.ok()) << r.status.message();
    ASSERT_EQ(r.samples.size(), 1u);
    EXPECT_EQ(r.samples[0].timestamp_ms, kBaseMs + 700);
  }
}

// Issue 19, item 4: `[GPU is lost]` is the driver saying the GPU fell off the bus (Xid 79), not a
// failed read: the sample is marked lost (its readings absent), in its place even when the index
// itself reads lost. `[Unknown Error]`, `[N/A]`, `[Not Supported]` only leave the field absent.
TEST(NvsmiLogTest, GpuIsLostMarksTheSampleLost) {
  TempDir dir;
  std::string s = "timestamp, index, name, power.draw [W], utilization.gpu [%]\n";
  for (int t = 0; t < 3; ++t) {
    for (int g = 0; g < 4; ++g) {
      std::string index = std::to_string(g), rest = fmt::format("{}, 300 W, 90 %", kH100);
      if (g == 2 && t >= 1) {
        rest = "[GPU is lost], [GPU is lost], [GPU is lost]";
        if (t == 2) index = "[GPU is lost]";
      }
      if (g == 1) rest = fmt::format("{}, [Unknown Error], [N/A]", kH100);
      s += fmt::format("{}, {}, {}\n", Ts(t * 100), index, rest);
    }
  }
  ReadAll r = ReadReplay({dir.Write("a.csv", s)});
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  ASSERT_EQ(r.samples.size(), 12u);
  for (const GpuSample& x : r.samples) {
    const int t = static_cast<int>(x.timestamp_ms - r.samples[0].timestamp_ms) / 100;
    EXPECT_EQ(x.gpu_lost, x.key.gpu == 2 && t >= 1) << "GPU " << x.key.gpu << " tick " << t;
    if (x.gpu_lost) {
      EXPECT_FALSE(x.power_w.has_value());
    }
  }
  // Per tick, one sample per GPU 0-3: the lost index was placed after GPU 1.
  for (size_t tick = 0; tick < 3; ++tick) {
    for (uint16_t g = 0; g < 4; ++g) EXPECT_EQ(r.samples[tick * 4 + g].key.gpu, g);
  }
  EXPECT_FALSE(r.samples[1].power_w.has_value());
  EXPECT_FALSE(r.samples[1].gpu_lost);
  EXPECT_THAT(r.AllWarnings(), HasSubstr("GPU reported lost"));
  ASSERT_EQ(r.gpus.size(), 4u);
  EXPECT_EQ(r.gpus[2].name, kH100);  // the name from before the loss
}

// Item 6: without an index column, GPU 3's rows go missing for ticks 100-129 (after the first 64
// ticks the tick size is found from). Counted off in ticks
// of 8, every later row would land on the wrong GPU; the reader sees the tick size change,
// re-splits by time and skips ticks it cannot place. No row may land on another GPU.
TEST(NvsmiLogTest, NoIndexColumnMissingRowsAreNotShiftedOntoOtherGpus) {
  std::string s = "timestamp, power.draw [W], utilization.gpu [%], memory.used [MiB]\n";
  int64_t t = 0;
  for (int tick = 0; tick < 200; ++tick) {
    for (int g = 0; g < 8; ++g) {
      if (!(g == 3 && tick >= 100 && tick < 130)) {
        s += fmt::format("{}, {}.00 W, {} %, {} MiB\n", Ts(t), 100 + g, 90 + g, 1000 + g);
      }
      t += 1;
    }
    t += 100 - 8;
  }
  TempDir dir;
  ReadAll r = ReadReplay({dir.Write("a.csv", s)});
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  int wrong = 0;
  for (const GpuSample& x : r.samples) {
    if (x.key.gpu != static_cast<int>(*x.mem_used_mib) - 1000) ++wrong;
  }
  EXPECT_EQ(wrong, 0) << r.AllWarnings();
  // Whole ticks before and after the gap are all there.
  EXPECT_GE(r.samples.size(), (200u - 32u) * 8u);
  EXPECT_THAT(r.AllWarnings(), HasSubstr("tick size changed"));
  EXPECT_THAT(r.AllWarnings(), HasSubstr("tick without one row per GPU skipped"));
  // After GPU 3 is back, the reader counts again: the last ticks are whole and in place.
  for (size_t i = r.samples.size() - 80; i < r.samples.size(); ++i) {
    EXPECT_EQ(r.samples[i].key.gpu, static_cast<int>(*r.samples[i].mem_used_mib) - 1000);
  }
}

// Item 7: a clock step back (NTP, DST) of an hour must not drop the rest of the log as out of
// order: later rows are shifted forward to continue, with a warning; a small step back is jitter
// (rows skipped, as before).
TEST(NvsmiLogTest, ClockStepBackShiftsTheRestOfTheLogForward) {
  std::string s = "timestamp, index, power.draw [W]\n";
  for (int tick = 0; tick < 40; ++tick) {
    const int64_t t = tick * 100 - (tick >= 20 ? 3600000 : 0);
    for (int g = 0; g < 2; ++g) s += fmt::format("{}, {}, {} W\n", Ts(t), g, 100 + tick);
  }
  TempDir dir;
  ReadAll r = ReadReplay({dir.Write("a.csv", s)});
  ASSERT_TRUE(r.status.ok()) << r.status.message();
  ASSERT_EQ(r.samples.size(), 80u) << r.AllWarnings();
  EXPECT_THAT(r.AllWarnings(), HasSubstr("clock stepped back"));
  EXPECT_THAT(r.AllWarnings(), HasSubstr("3600.0 s back"));
  // Continuous: one interval after the last row before the step.
  EXPECT_EQ(r.samples[40].timestamp_ms - r.samples[38].timestamp_ms, 100);
  for (size_t i = 2; i < r.samples.size(); ++i) {
    EXPECT_EQ(r.samples[i].timestamp_ms - r.samples[i - 2].timestamp_ms, 100) << i;
  }
}

}  // namespace
}  // namespace ww::testing
