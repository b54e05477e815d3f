// The layouts of issue 30: nvidia-smi CSV with the header before every sample (GPUs by bus id),
// gpustat output, one-column-per-GPU frames (--wide), LLview per-GPU job tables and whitespace
// tables (--map, --split-id); repeated and changed headers; bad input named by file and line.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

#include "core/timefmt.h"
#include "support/support.h"
#include "telemetry/ingest/gpustat.h"
#include "telemetry/ingest/open.h"
#include "telemetry/ingest/ws_table.h"

namespace ww::layouts {
namespace {

using ::testing::HasSubstr;
using ww::testing::TempDir;
using ww::testing::WriteFile;

struct Drained {
  Status status;
  std::vector<GpuSample> samples;
  std::vector<GpuInfo> gpus;
  std::vector<std::string> hosts;
  std::string warnings;
  std::vector<InputDescription> inputs;  // their `file` is gone with the source: use text
  std::string text;                      // the first input's description, read while open
};

Drained Read(const std::vector<std::string>& paths, IngestOptions options = {}) {
  Drained d;
  auto in = OpenTelemetryFiles(paths, options);
  if (!in.ok()) {
    d.status = in.status();
    return d;
  }
  for (;;) {
    std::vector<GpuSample> batch;
    d.status = in->source->Next(&batch);
    if (!d.status.ok() || batch.empty()) break;
    d.samples.insert(d.samples.end(), batch.begin(), batch.end());
  }
  d.gpus = in->source->gpus();
  d.hosts = in->source->hosts();
  for (const auto& w : in->source->warnings()) d.warnings += w + "\n";
  d.inputs = in->inputs;
  if (!d.inputs.empty()) d.text = d.inputs[0].Text();
  return d;
}

std::string Format(const Drained& d) { return d.inputs.empty() ? "" : d.inputs[0].format; }

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

// ---------------------------------------------------------------- LLview

constexpr const char* kLlviewHeader =
    "jobid              ts       nodeid  gpu_usage gpu_memu     gpu_pu   gpu_temp  gpu_memur "
    "gpu_sclk  gpu_clk gpu_clkr gpu_pfst gpu_pcie_tx gpu_pcie_rx gpu_nvlink_tx gpu_nvlink_rx\n";

std::string Llview(int ticks) {
  std::string s = kLlviewHeader;
  for (int t = 0; t < ticks; ++t) {
    for (const char* host : {"jwb0263", "jwb0264"}) {
      for (int g = 0; g < 2; ++g) {
        s += fmt::format(
            "9438058    {:>10} {:>12} {:>10.3f} {:>7.3f} {:>10.3f} {:>10.3f} {:>10.3f} {:>8} "
            "{:>8} {:>8} {:>8} {:>11.3f} {:>11.3f} {:>11.3f} {:>11.3f}\n",
            1709302348 + 60 * t, fmt::format("{}_{:02}", host, g), 98.0, 30.5, 350.25, 61.0, 40.0,
            1410, 1215, 0, 0, 0.5, 0.25, 20.0, 19.5);
      }
    }
  }
  return s;
}

TEST(Layouts, LlviewHostsFromNodeidAndUnitsFromLlviewsSource) {
  TempDir dir;
  WriteFile(dir / "GPU_9438058_node.dat", Llview(3));
  const Drained d = Read({dir / "GPU_9438058_node.dat"});
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  EXPECT_EQ(Format(d), "llview");
  EXPECT_EQ(d.hosts, (std::vector<std::string>{"jwb0263", "jwb0264"}));
  ASSERT_EQ(d.samples.size(), 12u);
  const GpuSample& s = d.samples[3];
  EXPECT_EQ(s.key.host, 1);
  EXPECT_EQ(s.key.gpu, 1);
  EXPECT_EQ(s.timestamp_ms, 1709302348000);
  EXPECT_DOUBLE_EQ(*s.util_gpu_pct, 98);
  EXPECT_DOUBLE_EQ(*s.mem_used_mib, 30.5 * 1024);  // GiB
  EXPECT_DOUBLE_EQ(*s.power_w, 350.25);
  EXPECT_DOUBLE_EQ(*s.temperature_c, 61);
  EXPECT_DOUBLE_EQ(*s.util_mem_pct, 40);
  EXPECT_DOUBLE_EQ(*s.sm_clock_mhz, 1410);
  EXPECT_DOUBLE_EQ(*s.mem_clock_mhz, 1215);
  EXPECT_EQ(*s.clock_event_reasons, 0u);
  EXPECT_EQ(*s.pstate, 0);
  const double gib = 1024.0 * 1024 * 1024;
  EXPECT_DOUBLE_EQ(*s.pcie_tx_bytes_per_s, 0.5 * gib);  // GiB/s
  EXPECT_DOUBLE_EQ(*s.pcie_rx_bytes_per_s, 0.25 * gib);
  EXPECT_DOUBLE_EQ(*s.nvlink_tx_bytes_per_s, 20 * gib);
  EXPECT_DOUBLE_EQ(*s.nvlink_rx_bytes_per_s, 19.5 * gib);
  EXPECT_THAT(d.text, HasSubstr("LLview per-GPU table"));
}

TEST(Layouts, LlviewBadInputNamesFileLineAndColumn) {
  TempDir dir;
  std::string s = kLlviewHeader;
  s.insert(s.size() - 1, " gpu_mystery");
  WriteFile(dir / "unknown.dat", s + "9438058 1709302348 jwb0263_00 1 2 3 4 5 6 7 0 0 1 1 1 1 9\n");
  Drained d = Read({dir / "unknown.dat"});
  ASSERT_FALSE(d.status.ok());
  EXPECT_THAT(d.status.message(),
              HasSubstr("unknown.dat:1: column 'gpu_mystery' is not an LLview GPU column"));
  // A value that is not a number, in every row: named.
  std::string bad = Llview(1);
  for (size_t at = bad.find("350.250"); at != std::string::npos; at = bad.find("350.250"))
    bad.replace(at, 7, "lots");
  WriteFile(dir / "bad.dat", bad);
  d = Read({dir / "bad.dat"});
  ASSERT_FALSE(d.status.ok());
  EXPECT_THAT(d.status.message(), HasSubstr("line 2: gpu_pu: 'lots' is not a number"));
  // A truncated last line is a documented skip.
  std::string cut = Llview(2);
  cut.resize(cut.size() - 30);
  WriteFile(dir / "cut.dat", cut);
  d = Read({dir / "cut.dat"});
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  EXPECT_EQ(d.samples.size(), 7u);
  EXPECT_THAT(d.warnings, HasSubstr("truncated last line skipped"));
  // Several hosts in a file given beside another: refused.
  WriteFile(dir / "other.dat", Llview(1));
  d = Read({dir / "other.dat", dir / "cut.dat"});
  ASSERT_FALSE(d.status.ok());
  EXPECT_THAT(d.status.message(), HasSubstr("holds 2 hosts of its own"));
}

// ---------------------------------------------------------------- whitespace tables

TEST(Layouts, WhitespaceTableWithMapAndSplitId) {
  TempDir dir;
  WriteFile(dir / "gpu.txt",
            "t node_gpu watts busy\n"
            "1704110400 n1-0 300 99\n1704110400 n1-1 280 98\n1704110400 n2-0 100 5\n"
            "1704110460 n1-0 301 99\n1704110460 n1-1 281 97\n1704110460 n2-0 101 4\n");
  IngestOptions o;
  o.map = {{"power", "watts"}, {"util", "busy"}, {"time", "t"}};
  o.split_id = "node_gpu";
  const Drained d = Read({dir / "gpu.txt"}, o);
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  EXPECT_EQ(Format(d), "table");
  EXPECT_EQ(d.hosts, (std::vector<std::string>{"n1", "n2"}));
  ASSERT_EQ(d.samples.size(), 6u);
  EXPECT_EQ(d.samples[2].key.host, 1);
  EXPECT_DOUBLE_EQ(*d.samples[4].power_w, 281);
  EXPECT_DOUBLE_EQ(*d.samples[4].util_gpu_pct, 97);
  // Recognized names need no --map; a missing split column is named.
  WriteFile(dir / "plain.txt",
            "time gpu power_w util_pct\n2024-01-01 12:00:00 0 300 99\n"
            "2024-01-01 12:00:01 0 301 98\n");
  const Drained p = Read({dir / "plain.txt"});
  ASSERT_TRUE(p.status.ok()) << p.status.message();
  EXPECT_EQ(Format(p), "table");
  ASSERT_EQ(p.samples.size(), 2u);
  EXPECT_EQ(p.samples[1].timestamp_ms, ParseTimestamp("2024-01-01 12:00:01")->unix_ms);
  o.split_id = "nope";
  const Drained e = Read({dir / "gpu.txt"}, o);
  ASSERT_FALSE(e.status.ok());
  EXPECT_THAT(e.status.message(), HasSubstr("--split-id nope: no such column"));
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
}  // namespace ww::layouts
