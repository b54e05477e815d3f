// RecordWriter: nvidia-smi CSV byte for byte, JSONL with every field, rotation, and a round trip
// through the replay reader `wattwatch triage` uses.
#include "telemetry/record/record_writer.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <ctime>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/support.h"
#include "telemetry/ingest/nvsmi_log.h"

namespace ww::record {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ww::testing::Lines;
using ww::testing::ReadFile;

class RecordWriterTest : public ww::testing::TestDirFixture {
 protected:
  void SetUp() override {
    TestDirFixture::SetUp();
    setenv("TZ", "UTC", 1);
    tzset();
    info_.name = "NVIDIA H100 80GB HBM3";
    info_.uuid = "GPU-0000aaaa";
  }

  static GpuSample Full(int64_t ms, uint16_t gpu) {
    GpuSample s;
    s.timestamp_ms = ms;
    s.key = {0, gpu};
    s.power_w = 547.12;
    s.power_limit_w = 700;
    s.util_gpu_pct = 91;
    s.util_mem_pct = 40;
    s.sm_clock_mhz = 1980;
    s.mem_clock_mhz = 2619;
    s.temperature_c = 45;
    s.mem_used_mib = 41285;
    s.mem_total_mib = 81559;
    s.pstate = 0;
    s.clock_event_reasons = 0x4;
    return s;
  }

  RecordRow Row(const GpuSample& s) {
    RecordRow r;
    r.sample = &s;
    r.info = &info_;
    r.host = "node7";
    return r;
  }

  GpuInfo info_;
};

constexpr int64_t kT = 1712297839635;  // 2024-04-05 06:17:19.635 UTC

TEST_F(RecordWriterTest, CsvMatchesNvidiaSmiByteForByte) {
  const auto path = dir_ / "a.csv";
  auto w = RecordWriter::Open({path.string(), RecordFormat::kCsv});
  ASSERT_TRUE(w.ok()) << w.status().message();
  GpuSample s = Full(kT, 0);
  ASSERT_TRUE(w.value()->WriteTick({Row(s)}).ok());
  EXPECT_EQ(ReadFile(path),
            "timestamp, index, name, uuid, power.draw [W], power.limit [W], utilization.gpu [%], "
            "utilization.memory [%], clocks.current.sm [MHz], clocks.current.memory [MHz], "
            "temperature.gpu, memory.used [MiB], memory.total [MiB], pstate, "
            "clocks_event_reasons.sw_power_cap\n"
            "2024/04/05 06:17:19.635, 0, NVIDIA H100 80GB HBM3, GPU-0000aaaa, 547.12 W, 700.00 W, "
            "91 %, 40 %, 1980 MHz, 2619 MHz, 45, 41285 MiB, 81559 MiB, P0, Active\n");
}

TEST_F(RecordWriterTest, TimestampsAreLocalTimeWithoutZone) {
  setenv("TZ", "Asia/Seoul", 1);  // UTC+9, no DST
  tzset();
  std::string out;
  AppendLocalNvsmiTimestamp(out, kT);
  EXPECT_EQ(out, "2024/04/05 15:17:19.635");
  out.clear();
  AppendLocalNvsmiTimestamp(out, 1712297839005);
  EXPECT_EQ(out, "2024/04/05 15:17:19.005");
}

TEST_F(RecordWriterTest, MissingUnsupportedAndLostAreDistinct) {
  const auto path = dir_ / "b.csv";
  auto w = RecordWriter::Open({path.string(), RecordFormat::kCsv});
  ASSERT_TRUE(w.ok());
  GpuSample missing = Full(kT, 0);
  missing.power_w.reset();        // failed read
  missing.temperature_c.reset();  // unsupported
  missing.clock_event_reasons.reset();
  GpuSample lost;
  lost.timestamp_ms = kT;
  lost.key = {0, 1};
  GpuSample stale;
  stale.timestamp_ms = kT;
  stale.key = {0, 2};
  RecordRow r0 = Row(missing);
  r0.unsupported_mask = kColTemperature;
  RecordRow r1 = Row(lost);
  r1.lost = true;
  RecordRow r2 = Row(stale);
  r2.stale = true;
  r2.unsupported_mask = kColTemperature;  // stale says nothing about support
  ASSERT_TRUE(w.value()->WriteTick({r0, r1, r2}).ok());
  auto lines = Lines(ReadFile(path));
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_THAT(lines[1], HasSubstr("GPU-0000aaaa, [N/A], 700.00 W"));
  EXPECT_THAT(lines[1], HasSubstr("2619 MHz, [Not Supported], 41285 MiB"));
  EXPECT_THAT(lines[1], HasSubstr("P0, [N/A]"));
  EXPECT_THAT(lines[2], HasSubstr(", 1, NVIDIA H100 80GB HBM3, GPU-0000aaaa, [GPU is lost], "));
  EXPECT_THAT(lines[3], HasSubstr(", 2, NVIDIA H100 80GB HBM3, GPU-0000aaaa, [N/A], [N/A], "));
  EXPECT_THAT(lines[3], ::testing::Not(HasSubstr("Not Supported")));
}

TEST_F(RecordWriterTest, EachTickIsOnDiskWhenWriteTickReturns) {
  const auto path = dir_ / "c.csv";
  auto w = RecordWriter::Open({path.string(), RecordFormat::kCsv});
  ASSERT_TRUE(w.ok());
  for (int i = 0; i < 3; ++i) {
    GpuSample s = Full(kT + i * 100, 0);
    ASSERT_TRUE(w.value()->WriteTick({Row(s)}).ok());
    // Read back while the writer is still open: nothing is held in a user-space buffer.
    EXPECT_EQ(Lines(ReadFile(path)).size(), static_cast<size_t>(2 + i));
  }
}

TEST_F(RecordWriterTest, RotatesAtMaxSizeKeepingHeadersAndEveryRow) {
  const auto path = dir_ / "r.csv";
  RecordWriterOptions o{path.string(), RecordFormat::kCsv};
  o.max_size_bytes = 700;
  o.keep_files = 2;
  auto w = RecordWriter::Open(o);
  ASSERT_TRUE(w.ok());
  for (int i = 0; i < 12; ++i) {
    GpuSample s = Full(kT + i * 100, 0);
    ASSERT_TRUE(w.value()->WriteTick({Row(s)}).ok());
  }
  EXPECT_GT(w.value()->rotations(), 2);
  ASSERT_TRUE(fs::exists(path.string() + ".1"));
  ASSERT_TRUE(fs::exists(path.string() + ".2"));
  EXPECT_FALSE(fs::exists(path.string() + ".3"));  // keep_files = 2
  for (const std::string& p : {path.string(), path.string() + ".1", path.string() + ".2"}) {
    EXPECT_LE(fs::file_size(p), 700u);
    auto lines = Lines(ReadFile(p));
    ASSERT_GE(lines.size(), 2u);
    EXPECT_EQ(lines[0] + "\n", NvsmiCsvHeader());
  }
  // The newest rows are in FILE, contiguous with FILE.1.
  auto cur = Lines(ReadFile(path));
  EXPECT_THAT(cur.back(), HasSubstr("06:17:20.735"));  // the 12th tick
}

TEST_F(RecordWriterTest, JsonlHasEveryFieldAndNullForAbsent) {
  const auto path = dir_ / "j.jsonl";
  auto w = RecordWriter::Open({path.string(), RecordFormat::kJsonl});
  ASSERT_TRUE(w.ok());
  GpuSample s = Full(kT, 0);
  s.power_instant_w = 612.5;
  s.power_mean_w = 550.25;
  s.energy_mj = 123456789;
  s.pcie_tx_bytes_per_s = 2e9;
  s.sm_activity_ratio = 0.8;
  s.temperature_c.reset();
  std::vector<uint64_t> xids = {79};
  RecordRow r = Row(s);
  r.xids = &xids;
  ASSERT_TRUE(w.value()->WriteTick({r}).ok());
  auto lines = Lines(ReadFile(path));
  ASSERT_EQ(lines.size(), 1u);
  auto j = nlohmann::json::parse(lines[0]);
  EXPECT_EQ(j["timestamp"], "2024/04/05 06:17:19.635");
  EXPECT_EQ(j["timestamp_ms"], kT);
  EXPECT_EQ(j["host"], "node7");
  EXPECT_EQ(j["uuid"], "GPU-0000aaaa");
  EXPECT_EQ(j["power_w"], 547.12);
  EXPECT_EQ(j["power_instant_w"], 612.5);
  EXPECT_EQ(j["power_mean_w"], 550.25);
  EXPECT_EQ(j["energy_mj"], 123456789u);
  EXPECT_EQ(j["pcie_tx_bytes_per_s"], 2e9);
  EXPECT_TRUE(j["temperature_c"].is_null());
  EXPECT_TRUE(j["nvlink_rx_bytes_per_s"].is_null());
  EXPECT_EQ(j["sm_activity_ratio"], 0.8);
  EXPECT_EQ(j["stale"], false);
  EXPECT_EQ(j["xids"], nlohmann::json::array({79}));
  for (const char* key :
       {"power_limit_w", "util_gpu_pct", "util_mem_pct", "sm_clock_mhz", "mem_clock_mhz",
        "clock_event_reasons", "mem_used_mib", "mem_total_mib", "pstate", "pcie_rx_bytes_per_s",
        "nvlink_tx_bytes_per_s", "sm_occupancy_ratio", "tensor_activity_ratio",
        "dram_bw_util_ratio", "lost", "stale_reason"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
}

TEST_F(RecordWriterTest, UnwritablePathIsAnErrorNamingIt) {
  auto w = RecordWriter::Open({"/nonexistent-dir/x.csv", RecordFormat::kCsv});
  ASSERT_FALSE(w.ok());
  EXPECT_THAT(w.status().message(), HasSubstr("/nonexistent-dir/x.csv"));
}

TEST_F(RecordWriterTest, ReplayReaderReadsWhatRecordWrites) {
  const auto path = dir_ / "node0.csv";
  auto w = RecordWriter::Open({path.string(), RecordFormat::kCsv});
  ASSERT_TRUE(w.ok());
  GpuInfo other = info_;
  other.uuid = "GPU-1111bbbb";
  for (int i = 0; i < 5; ++i) {
    GpuSample a = Full(kT + i * 100, 0);
    GpuSample b = Full(kT + i * 100, 1);
    b.power_w = 100.0 + i;
    b.temperature_c.reset();
    RecordRow rb = Row(b);
    rb.info = &other;
    rb.unsupported_mask = kColTemperature;
    ASSERT_TRUE(w.value()->WriteTick({Row(a), rb}).ok());
  }
  w.value().reset();
  auto src = OpenNvsmiLog(path.string(), "node0", 0);
  ASSERT_TRUE(src.ok()) << src.status().message();
  std::vector<GpuSample> all;
  for (int guard = 0; guard < 100; ++guard) {
    const size_t before = all.size();
    ASSERT_TRUE(src.value()->Next(&all).ok());
    if (all.size() == before) break;
  }
  ASSERT_EQ(all.size(), 10u);
  int gpu1 = 0;
  for (const GpuSample& s : all) {
    if (s.key.gpu == 0) {
      EXPECT_DOUBLE_EQ(*s.power_w, 547.12);
      EXPECT_DOUBLE_EQ(*s.temperature_c, 45);
      EXPECT_EQ(*s.pstate, 0);
      EXPECT_DOUBLE_EQ(*s.mem_used_mib, 41285);
    } else {
      EXPECT_DOUBLE_EQ(*s.power_w, 100.0 + gpu1);
      EXPECT_FALSE(s.temperature_c);  // "[Not Supported]" reads back as absent, never 0
      ++gpu1;
    }
  }
  EXPECT_EQ(all.front().timestamp_ms, kT);  // local time (TZ=UTC here) round-trips
}

}  // namespace
}  // namespace ww::record
