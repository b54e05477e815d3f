// The AMD readers (amd_smi.h): amd-smi monitor/metric CSV, JSON and table, rocm-smi CSV, JSON
// and log, the split rocm-smi CSVs and their host rule; N/A absent, units, MI250X GCDs,
// detection. Samples written after the tools' public code and docs (ROCm/amdsmi amdsmi_cli,
// ROCm/rocm_smi_lib python_smi_tools/rocm_smi.py).
#include "telemetry/ingest/amd_smi.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "core/timefmt.h"
#include "telemetry/ingest/read_support.h"

namespace ww::ingest_tests {
namespace {

constexpr int64_t kAmdT0 = 1717000000;  // epoch s

const GpuSample* AmdAt(const Drained& d, uint16_t gpu, int64_t ms) {
  for (const GpuSample& s : d.samples) {
    if (s.key.gpu == gpu && s.timestamp_ms == ms) return &s;
  }
  return nullptr;
}

// ---------------------------------------------------------------- amd-smi

// `amd-smi monitor -p -t -u -m -v --csv --watch 5`: GPU 1 without power (N/A).
constexpr const char* kAmdMonitorCsv =
    "timestamp,gpu,power_usage,hotspot_temperature,memory_temperature,gfx,gfx_clock,mem,"
    "mem_clock,vram_used,vram_total\n"
    "1717000000,0,171,32,33,99,2100,31,900,1235,196300\n"
    "1717000000,1,N/A,33,34,98,2100,30,900,1236,196300\n"
    "1717000005,0,175,33,33,100,2100,32,900,1235,196300\n"
    "1717000005,1,N/A,33,34,97,2100,30,900,1236,196300\n";

TEST(AmdSmi, MonitorCsvReadsUnitsAndLeavesNaAbsent) {
  TempDir dir;
  WriteFile(dir / "node0.csv", kAmdMonitorCsv);
  const Drained d = Read({dir / "node0.csv"});
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  EXPECT_EQ(Format(d), "amd-smi");
  ASSERT_EQ(d.samples.size(), 4u);
  const GpuSample* g0 = AmdAt(d, 0, kAmdT0 * 1000);
  ASSERT_TRUE(g0);
  EXPECT_DOUBLE_EQ(*g0->power_w, 171);
  EXPECT_DOUBLE_EQ(*g0->util_gpu_pct, 99);
  EXPECT_DOUBLE_EQ(*g0->util_mem_pct, 31);  // monitor's `mem`: UMC activity
  EXPECT_DOUBLE_EQ(*g0->mem_used_mib, 1235);
  EXPECT_DOUBLE_EQ(*g0->mem_total_mib, 196300);
  EXPECT_DOUBLE_EQ(*g0->temperature_c, 32);
  EXPECT_DOUBLE_EQ(*g0->sm_clock_mhz, 2100);
  const GpuSample* g1 = AmdAt(d, 1, (kAmdT0 + 5) * 1000);
  ASSERT_TRUE(g1);
  EXPECT_FALSE(g1->power_w);  // N/A, never 0
  EXPECT_DOUBLE_EQ(*g1->util_gpu_pct, 97);
  EXPECT_THAT(d.text, HasSubstr("amd-smi CSV: 2 polls, times from the timestamp column"));
}

// `amd-smi metric --csv`: temperature.mem (HBM, 48 C) is flattened to `mem` beside edge and
// hotspot; it is not memory activity. MI300X: edge N/A, hotspot read.
TEST(AmdSmi, MetricCsvTakesMemBesideTemperaturesAsTemperature) {
  TempDir dir;
  WriteFile(dir / "m.csv",
            "timestamp,gpu,gfx_activity,umc_activity,mm_activity,socket_power,gfx_voltage,"
            "soc_voltage,mem_voltage,throttle_status,power_management,edge,hotspot,mem,"
            "total_vram,used_vram,free_vram\n"
            "1717000000,0,100,12,N/A,742,N/A,N/A,N/A,UNTHROTTLED,ENABLED,N/A,71,48,196592,"
            "180000,16592\n");
  const Drained d = Read({dir / "m.csv"});
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  EXPECT_EQ(Format(d), "amd-smi");
  ASSERT_EQ(d.samples.size(), 1u);
  const GpuSample& s = d.samples[0];
  EXPECT_DOUBLE_EQ(*s.util_gpu_pct, 100);
  EXPECT_DOUBLE_EQ(*s.util_mem_pct, 12);
  EXPECT_DOUBLE_EQ(*s.power_w, 742);
  EXPECT_DOUBLE_EQ(*s.temperature_c, 71);
  EXPECT_DOUBLE_EQ(*s.mem_used_mib, 180000);
}

// `amd-smi metric --json`: readings as {"value", "unit"}, sections nested; an older amd-smi's
// plain values; two documents from a shell loop.
TEST(AmdSmi, MetricJsonValueUnitAndPlainValues) {
  TempDir dir;
  WriteFile(dir / "m.json", R"([
    {
        "timestamp": 1717000000,
        "gpu": 0,
        "usage": {"gfx_activity": {"value": 99, "unit": "%"},
                  "umc_activity": {"value": 40, "unit": "%"}, "mm_activity": "N/A"},
        "power": {"socket_power": {"value": 550, "unit": "W"}, "gfx_voltage": "N/A"},
        "temperature": {"edge": "N/A", "hotspot": {"value": 60, "unit": "C"},
                        "mem": {"value": 45, "unit": "C"}},
        "mem_usage": {"total_vram": {"value": 192, "unit": "GB"},
                      "used_vram": {"value": 2048, "unit": "MB"}}
    }
]
[{"timestamp": 1717000005, "gpu": 0, "usage": {"gfx_activity": 98, "umc_activity": 41},
  "power": {"socket_power": "N/A"}, "mem_usage": {"total_vram": 196608, "used_vram": 2049}}]
)");
  const Drained d = Read({dir / "m.json"});
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  EXPECT_EQ(Format(d), "amd-smi");
  ASSERT_EQ(d.samples.size(), 2u);
  const GpuSample& a = d.samples[0];
  EXPECT_DOUBLE_EQ(*a.util_gpu_pct, 99);
  EXPECT_DOUBLE_EQ(*a.util_mem_pct, 40);  // umc_activity, not temperature.mem
  EXPECT_DOUBLE_EQ(*a.power_w, 550);
  EXPECT_DOUBLE_EQ(*a.temperature_c, 60);
  EXPECT_DOUBLE_EQ(*a.mem_total_mib, 192 * 1024);
  EXPECT_DOUBLE_EQ(*a.mem_used_mib, 2048);
  const GpuSample& b = d.samples[1];
  EXPECT_EQ(b.timestamp_ms, (kAmdT0 + 5) * 1000);
  EXPECT_FALSE(b.power_w);
  EXPECT_DOUBLE_EQ(*b.mem_used_mib, 2049);
}

// The monitor table as the amd-smi README prints it, with --watch's TIMESTAMP; and the older
// headings (GPU_T, GFX%, VRAM_USAGE as USED/TOTAL GB), read with --interval-ms.
TEST(AmdSmi, MonitorTablesNewAndOld) {
  TempDir dir;
  WriteFile(dir / "mon.txt",
            " TIMESTAMP  GPU  POWER  GPU_TEMP  MEM_TEMP  GFX_UTIL  GFX_CLOCK  MEM_UTIL  "
            "MEM_CLOCK  VRAM_USED  VRAM_TOTAL   PCIE_BW\n"
            "1717000000    0  171 W     32 °C     33 °C      99 %   1920 MHz      31 %   "
            "1000 MHz    1235 MB   196300 MB  N/A Mb/s\n"
            "1717000000    1    N/A     33 °C     34 °C      98 %   1920 MHz      30 %   "
            "1000 MHz    1236 MB   196300 MB  N/A Mb/s\n"
            "\nPROCESS INFO:\nGPU  NAME  PID  GTT_MEM\n  0  rvs  1564865  0.0 B\n");
  const Drained d = Read({dir / "mon.txt"});
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  EXPECT_EQ(Format(d), "amd-smi");
  ASSERT_EQ(d.samples.size(), 2u);
  EXPECT_DOUBLE_EQ(*d.samples[0].power_w, 171);
  EXPECT_DOUBLE_EQ(*d.samples[0].temperature_c, 32);
  EXPECT_FALSE(d.samples[1].power_w);
  EXPECT_DOUBLE_EQ(*d.samples[1].util_mem_pct, 30);
  EXPECT_DOUBLE_EQ(*d.samples[1].mem_total_mib, 196300);

  WriteFile(dir / "old.txt",
            "GPU  POWER  GPU_T  MEM_T  GFX_CLK  GFX%  MEM%  ENC%  DEC%  VRAM_USAGE\n"
            "  0  171 W  32 °C  33 °C  114 MHz  0 %  0 %  N/A  N/A  0.3/192.0 GB\n"
            "  0  172 W  32 °C  33 °C  114 MHz  5 %  1 %  N/A  N/A  0.5/192.0 GB\n");
  const Drained old = ReadOne(dir / "old.txt", 5000);
  ASSERT_TRUE(old.status.ok()) << old.status.message();
  EXPECT_EQ(Format(old), "amd-smi");
  ASSERT_EQ(old.samples.size(), 2u);
  EXPECT_EQ(old.samples[1].timestamp_ms - old.samples[0].timestamp_ms, 5000);
  EXPECT_DOUBLE_EQ(*old.samples[1].util_gpu_pct, 5);
  EXPECT_DOUBLE_EQ(*old.samples[1].mem_used_mib, 0.5 * 1024);
  EXPECT_DOUBLE_EQ(*old.samples[1].mem_total_mib, 192 * 1024);
  // Without times and --interval-ms: a clear error.
  const Drained untimed = ReadOne(dir / "old.txt");
  EXPECT_FALSE(untimed.status.ok());
  EXPECT_THAT(untimed.status.message(), HasSubstr("--interval-ms"));
}

// ---------------------------------------------------------------- rocm-smi

// MI250X: card1 is card0's secondary GCD; its power is N/A (Secondary die), never 0 W.
constexpr const char* kRocmCsv =
    "Mon Jun  3 12:00:00 UTC 2024\n"
    "device,Temperature (Sensor edge) (C),Temperature (Sensor junction) (C),"
    "Average Graphics Package Power (W),Max Graphics Package Power (W),GPU use (%),"
    "GPU Memory Allocated (VRAM%),GPU Memory Read/Write Activity (%),VRAM Total Memory (B),"
    "VRAM Total Used Memory (B)\n"
    "card0,45.0,50.0,312.0,560.0,100,87,35,68702699520,59768832000\n"
    "card1,44.0,49.0,N/A (Secondary die),N/A,100,87,34,68702699520,59768832000\n"
    "Mon Jun  3 12:00:05 UTC 2024\n"
    "device,Temperature (Sensor edge) (C),Temperature (Sensor junction) (C),"
    "Average Graphics Package Power (W),Max Graphics Package Power (W),GPU use (%),"
    "GPU Memory Allocated (VRAM%),GPU Memory Read/Write Activity (%),VRAM Total Memory (B),"
    "VRAM Total Used Memory (B)\n"
    "card0,45.0,50.0,310.0,560.0,100,87,35,68702699520,59768832000\n"
    "card1,44.0,49.0,N/A (Secondary die),N/A,0,87,34,68702699520,59768832000\n";

TEST(RocmSmi, CsvWithDateLinesAndASecondaryDie) {
  TempDir dir;
  WriteFile(dir / "node0.csv", kRocmCsv);
  const Drained d = Read({dir / "node0.csv"});
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  EXPECT_EQ(Format(d), "rocm-smi");
  ASSERT_EQ(d.samples.size(), 4u);
  const int64_t t0 = ParseTimestamp("2024-06-03 12:00:00")->unix_ms;
  const GpuSample* g0 = AmdAt(d, 0, t0);
  ASSERT_TRUE(g0);
  EXPECT_DOUBLE_EQ(*g0->power_w, 312);
  EXPECT_DOUBLE_EQ(*g0->power_limit_w, 560);
  EXPECT_DOUBLE_EQ(*g0->util_gpu_pct, 100);
  EXPECT_DOUBLE_EQ(*g0->util_mem_pct, 35);
  EXPECT_DOUBLE_EQ(*g0->temperature_c, 45);  // edge
  EXPECT_DOUBLE_EQ(*g0->mem_total_mib, 68702699520.0 / (1024 * 1024));
  EXPECT_DOUBLE_EQ(*g0->mem_used_mib, 59768832000.0 / (1024 * 1024));
  const GpuSample* g1 = AmdAt(d, 1, t0 + 5000);
  ASSERT_TRUE(g1);
  EXPECT_FALSE(g1->power_w);
  EXPECT_FALSE(g1->power_limit_w);
  EXPECT_DOUBLE_EQ(*g1->util_gpu_pct, 0);  // a real 0 % stays 0
  EXPECT_THAT(d.text, HasSubstr("GPU 1 without power readings"));
  EXPECT_THAT(d.text, HasSubstr("times from the date lines"));
}

// --json (one line per poll, json.dumps' separators), MI300's "Current Socket" spelling and an
// older rocm-smi's "GPU memory use (%)"; VRAM% x total when used bytes are missing.
TEST(RocmSmi, JsonBothPowerSpellings) {
  TempDir dir;
  WriteFile(dir / "r.json",
            "{\"card0\": {\"Current Socket Graphics Package Power (W)\": \"741.0\", "
            "\"GPU use (%)\": \"100\", \"GPU memory use (%)\": \"12\", "
            "\"GPU Memory Allocated (VRAM%)\": \"50\", \"VRAM Total Memory (B)\": "
            "\"206141652992\", \"Temperature (Sensor edge) (C)\": \"N/A\", "
            "\"Temperature (Sensor junction) (C)\": \"66.0\"}, \"system\": {\"Driver version\": "
            "\"6.8.5\"}}\n"
            "{\"card0\": {\"Average Graphics Package Power (W)\": \"300.5\", "
            "\"GPU use (%)\": \"99\"}}\n");
  const Drained d = ReadOne(dir / "r.json", 5000);
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  EXPECT_EQ(Format(d), "rocm-smi");
  ASSERT_EQ(d.samples.size(), 2u);
  const GpuSample& a = d.samples[0];
  EXPECT_DOUBLE_EQ(*a.power_w, 741);
  EXPECT_DOUBLE_EQ(*a.util_mem_pct, 12);
  EXPECT_DOUBLE_EQ(*a.temperature_c, 66);  // junction when edge is N/A
  EXPECT_DOUBLE_EQ(*a.mem_used_mib, 206141652992.0 / (1024 * 1024) / 2);
  EXPECT_DOUBLE_EQ(*d.samples[1].power_w, 300.5);
  EXPECT_EQ(d.samples[1].timestamp_ms - a.timestamp_ms, 5000);
}

// The plain log: sections of `GPU[N]\t\t: KEY: VALUE` between banners, a date before each run.
TEST(RocmSmi, LogBetweenBanners) {
  std::string log;
  for (int poll = 0; poll < 2; ++poll) {
    log += poll == 0 ? "Mon Jun  3 12:00:00 UTC 2024\n" : "Mon Jun  3 12:00:05 UTC 2024\n";
    log +=
        "\n\n========================================= ROCm System Management Interface "
        "=========================================\n"
        "=================================== Power Consumption "
        "===================================\n"
        "GPU[0]\t\t: Average Graphics Package Power (W): 89.0\n"
        "GPU[1]\t\t: Average Graphics Package Power (W): N/A (Secondary die)\n"
        "\n\t\tPrimary die (usually one above or below the secondary) shows total (primary + "
        "secondary) socket power information\n"
        "========================================================================================="
        "\n"
        "================================== % time GPU is busy ==================================\n"
        "GPU[0]\t\t: GPU use (%): 0\n"
        "GPU[1]\t\t: GPU use (%): 0\n"
        "GPU[0]\t\t: GFX Activity: 1230456\n"
        "================================== Current Memory Use ==================================\n"
        "GPU[0]\t\t: GPU Memory Allocated (VRAM%): 0\n"
        "GPU[0]\t\t: GPU Memory Read/Write Activity (%): 0\n"
        "GPU[1]\t\t: GPU Memory Read/Write Activity (%): 0\n"
        "=============================== End of ROCm SMI Log ===============================\n";
  }
  TempDir dir;
  WriteFile(dir / "rocm.log", log);
  const Drained d = Read({dir / "rocm.log"});
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  EXPECT_EQ(Format(d), "rocm-smi");
  ASSERT_EQ(d.samples.size(), 4u);
  EXPECT_DOUBLE_EQ(*d.samples[0].power_w, 89);
  EXPECT_DOUBLE_EQ(*d.samples[0].util_gpu_pct, 0);
  EXPECT_FALSE(d.samples[1].power_w);
  EXPECT_EQ(d.samples[2].timestamp_ms - d.samples[0].timestamp_ms, 5000);
  EXPECT_THAT(d.text, HasSubstr("rocm-smi log: 2 polls"));
}

// ---------------------------------------------------------------- the split layout

std::string SplitPowerHalf(int gpus, int64_t from_s, int rows, double watts = 500) {
  std::string s = "timestamp,device,power_watts,power_cap_watts\n";
  for (int r = 0; r < rows; ++r) {
    for (int g = 0; g < gpus; ++g) {
      s += fmt::format("{},card{},{},750\n", from_s + 5 * r, g, watts + g);
    }
  }
  return s;
}

std::string SplitUseHalf(int gpus, int64_t from_s, int rows) {
  std::string s =
      "timestamp,device,gpu_use_percent,gfx_activity,vram_total_bytes,vram_used_bytes\n";
  for (int r = 0; r < rows; ++r) {
    for (int g = 0; g < gpus; ++g) {
      s += fmt::format("{},card{},100,97,206141652992,1073741824\n", from_s + 5 * r, g);
    }
  }
  return s;
}

TEST(RocmSplit, TwoHalvesOfOneHostAreJoinedByTimeAndDevice) {
  TempDir dir;
  WriteFile(dir / "node3_power.csv", SplitPowerHalf(8, kAmdT0, 3));
  WriteFile(dir / "node3_usage.csv", SplitUseHalf(8, kAmdT0, 3));
  const Drained d = Read({dir / "node3_power.csv", dir / "node3_usage.csv"});
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  ASSERT_EQ(d.hosts, std::vector<std::string>{"node3"});
  ASSERT_EQ(d.samples.size(), 24u);  // 8 GPUs x 3 times, one sample each
  for (const GpuSample& s : d.samples) {
    EXPECT_DOUBLE_EQ(*s.power_w, 500 + s.key.gpu);
    EXPECT_DOUBLE_EQ(*s.power_limit_w, 750);
    EXPECT_DOUBLE_EQ(*s.util_gpu_pct, 100);
    EXPECT_DOUBLE_EQ(*s.gr_engine_active_ratio, 0.97);
    EXPECT_DOUBLE_EQ(*s.mem_used_mib, 1024);
    EXPECT_DOUBLE_EQ(*s.mem_total_mib, 206141652992.0 / (1024 * 1024));
  }
  EXPECT_EQ(d.inputs[0].format, "rocm-smi-split");
  auto opened = OpenTelemetryFiles({dir / "node3_power.csv", dir / "node3_usage.csv"});
  ASSERT_TRUE(opened.ok());
  EXPECT_EQ(opened->host_paths,
            std::vector<std::string>{dir / "node3_power.csv" + " + " + dir / "node3_usage.csv"});
  EXPECT_THAT(d.description, HasSubstr("(power half)"));
  EXPECT_THAT(d.description, HasSubstr("joined with " + (dir / "node3_usage.csv") +
                                       " by (time, device) as host 'node3'"));
}

TEST(RocmSplit, HostStemsAndTheRuleForFilesGivenTogether) {
  EXPECT_EQ(SplitHostStem("/x/node3_power.csv"), "node3");
  EXPECT_EQ(SplitHostStem("rocm-usage-node3.csv.gz"), "rocm-node3");
  EXPECT_EQ(SplitHostStem("power.csv"), "");
  TempDir dir;
  // Two hosts by name, in any order; a third file of another format is its own host.
  WriteFile(dir / "a_power.csv", SplitPowerHalf(2, kAmdT0, 2));
  WriteFile(dir / "b_power.csv", SplitPowerHalf(2, kAmdT0, 2, 300));
  WriteFile(dir / "b_use.csv", SplitUseHalf(2, kAmdT0, 2));
  WriteFile(dir / "a_use.csv", SplitUseHalf(2, kAmdT0, 2));
  const Drained two =
      Read({dir / "a_power.csv", dir / "b_power.csv", dir / "b_use.csv", dir / "a_use.csv"});
  ASSERT_TRUE(two.status.ok()) << two.status.message();
  EXPECT_EQ(two.hosts, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(two.samples.size(), 8u);
  // The only two halves given, one without a stem: one host.
  WriteFile(dir / "power.csv", SplitPowerHalf(2, kAmdT0, 2));
  const Drained given = Read({dir / "power.csv", dir / "a_use.csv"});
  ASSERT_TRUE(given.status.ok()) << given.status.message();
  EXPECT_EQ(given.samples.size(), 4u);
  EXPECT_EQ(given.hosts, std::vector<std::string>{"a"});
  // Halves without stems in a host's folder: the folder names the host.
  std::filesystem::create_directories(dir / "n7");
  WriteFile(dir / "n7/power.csv", SplitPowerHalf(2, kAmdT0, 2));
  WriteFile(dir / "n7/usage.csv", SplitUseHalf(2, kAmdT0, 2));
  const Drained folder = Read({dir / "n7/power.csv", dir / "n7/usage.csv"});
  ASSERT_TRUE(folder.status.ok()) << folder.status.message();
  EXPECT_EQ(folder.hosts, std::vector<std::string>{"n7"});
}

TEST(RocmSplit, AmbiguousHalvesAreAnError) {
  TempDir dir;
  WriteFile(dir / "node1_power.csv", SplitPowerHalf(2, kAmdT0, 2));
  WriteFile(dir / "node2_usage.csv", SplitUseHalf(2, kAmdT0, 2));
  // Halves of different hosts by name.
  Drained d = Read({dir / "node1_power.csv", dir / "node2_usage.csv"});
  ASSERT_FALSE(d.status.ok());
  EXPECT_THAT(d.status.message(), HasSubstr("cannot tell which power file"));
  // Two power halves and one use half, none sharing a stem with it.
  WriteFile(dir / "x_power.csv", SplitPowerHalf(2, kAmdT0, 2));
  WriteFile(dir / "usage.csv", SplitUseHalf(2, kAmdT0, 2));
  d = Read({dir / "node1_power.csv", dir / "x_power.csv", dir / "usage.csv"});
  ASSERT_FALSE(d.status.ok());
  EXPECT_THAT(d.status.message(), HasSubstr("cannot tell which power file"));
  // Two power halves of one stem.
  WriteFile(dir / "node1_pwr.csv", SplitPowerHalf(2, kAmdT0, 2));
  d = Read({dir / "node1_power.csv", dir / "node1_pwr.csv"});
  ASSERT_FALSE(d.status.ok());
  EXPECT_THAT(d.status.message(), HasSubstr("are both the power half"));
  // Halves with no (time, device) in common.
  WriteFile(dir / "c_power.csv", SplitPowerHalf(2, kAmdT0, 2));
  WriteFile(dir / "c_use.csv", SplitUseHalf(2, kAmdT0 + 3600, 2));
  d = Read({dir / "c_power.csv", dir / "c_use.csv"});
  ASSERT_FALSE(d.status.ok());
  EXPECT_THAT(d.status.message(), HasSubstr("no (time, device) is in both"));
  // A half alone is a host with half the readings.
  d = Read({dir / "node1_power.csv"});
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  EXPECT_EQ(d.samples.size(), 4u);
  EXPECT_FALSE(d.samples[0].util_gpu_pct);
}

// ---------------------------------------------------------------- detection

// Home-made CSVs with generic names stay custom-csv; the AMD rules need the tools' own keys.
TEST(AmdSmi, DetectionLeavesHomeMadeCsvsAlone) {
  TempDir dir;
  WriteFile(dir / "h.csv", "timestamp,gpu,power,util\n1717000000,0,300,99\n");
  EXPECT_EQ(Format(Read({dir / "h.csv"})), "custom-csv");
  WriteFile(dir / "d.csv", "device,power,mem\ncard0,300,10\n");
  EXPECT_NE(Format(Read({dir / "d.csv"})), "rocm-smi");
  WriteFile(dir / "p.csv", "timestamp,device,power_watts,energy_j\n1717000000,card0,300,5\n");
  EXPECT_EQ(Format(Read({dir / "p.csv"})), "custom-csv");
}

}  // namespace
}  // namespace ww::ingest_tests
