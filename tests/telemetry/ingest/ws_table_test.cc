// The whitespace table reader (ws_table.h, llview.cc): LLview per-GPU job tables (hosts from
// nodeid, units from LLview's source, bad input named) and generic tables (--map, --split-id).
#include "telemetry/ingest/ws_table.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/timefmt.h"
#include "telemetry/ingest/read_support.h"

namespace ww::ingest_tests {
namespace {

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

}  // namespace
}  // namespace ww::ingest_tests
