// The real format samples in ../shared/traces/formats read with values checked by hand against the
// files (issue 13), plain and compressed; a workload's stdout refused with one clear message.
#include <gtest/gtest.h>

#include "telemetry/ingest/open.h"
#include "telemetry/ingest/read_support.h"

namespace ww::ingest_tests {
namespace {

// ---------------------------------------------------------------- real files

TEST(RealFormats, DcgmiDmonV100) {
  const std::string f = kFormats + "mertside_GV100-baseline-LSTM-1380-0.dcgmi-dmon.txt";
  WW_REQUIRE_SHARED_FILE(f);
  EXPECT_STREQ(InputFormatName(*DetectInputFormat(f, {})), "dcgmi-dmon");
  // Without the -d of the command: one clear message.
  Drained none = ReadOne(f);
  ASSERT_FALSE(none.status.ok());
  EXPECT_THAT(none.status.message(), HasSubstr("pass --interval-ms"));
  EXPECT_THAT(none.status.message(), HasSubstr(f + ":3:"));

  Drained d = ReadOne(f, 50);
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  ASSERT_EQ(d.samples.size(), 3561u);  // `grep -c '^ *GPU' FILE`
  ASSERT_EQ(d.gpus.size(), 1u);
  EXPECT_EQ(d.samples.size(), d.batches.size());  // one GPU: one sample per tick
  const GpuSample& first = d.samples.front();
  // Line 3: GPU 0 ... 128617363 25723472 0 0 0.000 0.000 24.152 307252100911 1230
  EXPECT_EQ(first.timestamp_ms, 0);
  EXPECT_DOUBLE_EQ(*first.power_w, 24.152);
  EXPECT_DOUBLE_EQ(*first.util_gpu_pct, 0);
  EXPECT_DOUBLE_EQ(*first.util_mem_pct, 0);
  EXPECT_DOUBLE_EQ(*first.pcie_tx_bytes_per_s, 128617363);
  EXPECT_DOUBLE_EQ(*first.pcie_rx_bytes_per_s, 25723472);
  EXPECT_EQ(*first.energy_mj, 307252100911u);
  EXPECT_DOUBLE_EQ(*first.sm_activity_ratio, 0);
  EXPECT_DOUBLE_EQ(*first.tensor_activity_ratio, 0);
  EXPECT_DOUBLE_EQ(*first.dram_bw_util_ratio, 0);
  EXPECT_FALSE(first.sm_clock_mhz.has_value());  // SACLK is the application clock setting
  // Row 1000 (awk '$1=="GPU"' | sed -n 1000p): PCITX 4429635, TOTEC 307253323305.
  const GpuSample& r1000 = d.samples[999];
  EXPECT_EQ(r1000.timestamp_ms, 999 * 50);
  EXPECT_DOUBLE_EQ(*r1000.pcie_tx_bytes_per_s, 4429635);
  EXPECT_EQ(*r1000.energy_mj, 307253323305u);
  // Last row: 37.361 W; peak 50.818 W; GPUTL (13th column) peaks at 64 %, MCUTL at 5 %.
  EXPECT_DOUBLE_EQ(*d.samples.back().power_w, 37.361);
  EXPECT_EQ(d.samples.back().timestamp_ms, 3560 * 50);
  double peak = 0, peak_util = 0, peak_mem = 0;
  for (const auto& s : d.samples) {
    peak = std::max(peak, *s.power_w);
    peak_util = std::max(peak_util, *s.util_gpu_pct);
    peak_mem = std::max(peak_mem, *s.util_mem_pct);
  }
  EXPECT_DOUBLE_EQ(peak, 50.818);
  EXPECT_DOUBLE_EQ(peak_util, 64);
  EXPECT_DOUBLE_EQ(peak_mem, 5);
  EXPECT_THAT(d.description, HasSubstr("dcgmi dmon: fields"));
  EXPECT_THAT(d.description, HasSubstr("ignored"));
}

TEST(RealFormats, DcgmExporterKopsL4EmbeddedInMarkdown) {
  const std::string f =
      kFormats + "cncf_kops_TestObservability_AcceleratorMetrics_ViaDCGM_output.md";
  WW_REQUIRE_SHARED_FILE(f);
  EXPECT_STREQ(InputFormatName(*DetectInputFormat(f, {})), "dcgm-exporter");
  Drained d = ReadOne(f);
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  // The file holds one GPU (gpu="0"), its scrape printed twice (kubectl logs, then the test's
  // own echo: every value identical, the energy counter included): one sample.
  ASSERT_EQ(d.samples.size(), 1u);
  EXPECT_THAT(d.warnings, HasSubstr("scrape identical to the one before skipped"));
  ASSERT_EQ(d.gpus.size(), 1u);
  EXPECT_EQ(d.gpus[0].name, "NVIDIA L4");
  EXPECT_EQ(d.gpus[0].uuid, "GPU-c2f76b33-7953-256e-8f33-1343419b1a1c");
  EXPECT_EQ(d.gpus[0].pci_bus_id, "00000000:31:00.0");
  const GpuSample& s = d.samples[0];
  EXPECT_DOUBLE_EQ(*s.power_w, 16.365);
  EXPECT_DOUBLE_EQ(*s.util_gpu_pct, 0);
  EXPECT_DOUBLE_EQ(*s.sm_clock_mhz, 210);
  EXPECT_DOUBLE_EQ(*s.mem_clock_mhz, 405);
  EXPECT_DOUBLE_EQ(*s.temperature_c, 31);
  EXPECT_DOUBLE_EQ(*s.mem_used_mib, 0);
  EXPECT_DOUBLE_EQ(*s.mem_total_mib, 0 + 22563 + 470);  // used + free + reserved
  EXPECT_EQ(*s.energy_mj, 4742776u);
  EXPECT_DOUBLE_EQ(*s.pcie_tx_bytes_per_s, 112603);
  EXPECT_DOUBLE_EQ(*s.pcie_rx_bytes_per_s, 17544);
  EXPECT_DOUBLE_EQ(*s.tensor_activity_ratio, 0);
  ASSERT_EQ(d.labels.size(), 1u);
  EXPECT_EQ(d.labels[0].labels.at("hostname"), "i-030791dc5a37cd257");
}

TEST(RealFormats, DcgmExporterEricssonT4UnderLoad) {
  const std::string f = kFormats + "cncf_ericsson-ccd_accelerator_metrics.md";
  WW_REQUIRE_SHARED_FILE(f);
  Drained d = ReadOne(f);
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  ASSERT_EQ(d.samples.size(), 1u);
  ASSERT_EQ(d.gpus.size(), 1u);
  EXPECT_EQ(d.gpus[0].name, "Tesla T4");
  const GpuSample& s = d.samples[0];
  EXPECT_DOUBLE_EQ(*s.power_w, 68.244);
  EXPECT_DOUBLE_EQ(*s.util_gpu_pct, 91);  // DEV_GPU_UTIL, not GR_ENGINE_ACTIVE x 100
  EXPECT_DOUBLE_EQ(*s.util_mem_pct, 73);
  EXPECT_DOUBLE_EQ(*s.temperature_c, 74);
  EXPECT_DOUBLE_EQ(*s.sm_clock_mhz, 660);
  EXPECT_DOUBLE_EQ(*s.mem_used_mib, 5120);
  EXPECT_DOUBLE_EQ(*s.mem_total_mib, 5120 + 9791 + 447);
  EXPECT_DOUBLE_EQ(*s.tensor_activity_ratio, 0.005822);
  EXPECT_DOUBLE_EQ(*s.dram_bw_util_ratio, 0.092781);
  EXPECT_DOUBLE_EQ(*s.pcie_rx_bytes_per_s, 6935930);
  EXPECT_EQ(*s.energy_mj, 15152422938u);
  EXPECT_EQ(d.labels[0].labels.at("hostname"), "cp-bm14r7");
  EXPECT_THAT(d.description, HasSubstr("dcgm-exporter text: DEV_POWER_USAGE DEV_GPU_UTIL"));
}

TEST(RealFormats, WorkloadStdoutIsRefusedWithOneClearMessage) {
  const std::string f = kFormats + "mertside_GV100-baseline-LSTM-RUN-OUT.txt";
  WW_REQUIRE_SHARED_FILE(f);
  Drained d = ReadOne(f);
  ASSERT_FALSE(d.status.ok());
  EXPECT_THAT(d.status.message(), HasSubstr(f + ":1: not a telemetry log"));
  EXPECT_THAT(d.status.message(), HasSubstr("first line: '(25000,)'"));
  EXPECT_THAT(d.status.message(), HasSubstr("dcgmi-dmon"));
  EXPECT_THAT(d.status.message(), HasSubstr("--map FIELD=COLUMN"));
}

TEST(RealFormats, CompressedRealFilesReadTheSame) {
  const std::string f = kFormats + "mertside_GV100-baseline-LSTM-1380-0.dcgmi-dmon.txt";
  WW_REQUIRE_SHARED_FILE(f);
  TempDir dir;
  const std::string text = ww::testing::ReadFile(f);
  WriteFile(dir / "a.gz", Gzip(text));
  WriteFile(dir / "b.zst", Zstd(text));
  Drained plain = ReadOne(f, 50);
  for (const std::string& p : {dir / "a.gz", dir / "b.zst"}) {
    Drained c = ReadOne(p, 50);
    ASSERT_TRUE(c.status.ok()) << p << ": " << c.status.message();
    ASSERT_EQ(c.samples.size(), plain.samples.size());
    EXPECT_EQ(*c.samples[1234].energy_mj, *plain.samples[1234].energy_mj);
    EXPECT_THAT(c.description,
                HasSubstr(p.back() == 'z' ? ": gzip, dcgmi dmon" : ": zstd, dcgmi dmon"));
  }
}

}  // namespace
}  // namespace ww::ingest_tests
