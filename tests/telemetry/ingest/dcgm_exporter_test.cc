// The dcgm-exporter text reader (dcgm_exporter.h): scrapes split where a series repeats, the
// exporter's own timestamps and labels, documented skips.
#include "telemetry/ingest/dcgm_exporter.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "telemetry/ingest/read_support.h"

namespace ww::ingest_tests {
namespace {

// ---------------------------------------------------------------- dcgm-exporter

TEST(DcgmExporter, ScrapesSplitWhereASeriesRepeats) {
  TempDir dir;
  const std::string p = dir / "node7.prom";
  WriteFile(p, Scrape(500, 100, 1000, ",pod=\"trainer-0\",namespace=\"ml\",container=\"pt\"") +
                   "go_gc_duration_seconds 0.1\n" +
                   Scrape(150, 100, 2000, ",pod=\"trainer-0\",namespace=\"ml\",container=\"pt\""));
  Drained none = ReadOne(p);
  ASSERT_FALSE(none.status.ok());
  EXPECT_THAT(none.status.message(), HasSubstr("a second dcgm-exporter scrape without timestamps"));
  Drained d = ReadOne(p, 30000);
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  ASSERT_EQ(d.batches.size(), 2u);
  ASSERT_EQ(d.batches[1].size(), 2u);
  EXPECT_EQ(d.batches[1][0].timestamp_ms, 30000);
  EXPECT_DOUBLE_EQ(*d.batches[1][1].power_w, 151);
  EXPECT_DOUBLE_EQ(*d.batches[0][0].nvlink_tx_bytes_per_s, 1e9);
  ASSERT_EQ(d.labels.size(), 2u);
  EXPECT_EQ(d.labels[1].labels.at("pod"), "trainer-0");
  EXPECT_EQ(d.labels[1].labels.at("namespace"), "ml");
  EXPECT_EQ(d.labels[1].labels.at("container"), "pt");
  EXPECT_THAT(d.description, HasSubstr("30000 ms apart (--interval-ms)"));
}

// Other vendors' exporters read as dcgm-exporter scrapes (fields.h, ExporterSeries): AMD's
// device-metrics-exporter (W, %, MB, gpu_id) and Intel Gaudi's (mW, bytes), units converted.
TEST(DcgmExporter, AmdAndGaudiExporterScrapes) {
  TempDir dir;
  const std::string amd = dir / "mi300.prom";
  std::string text;
  for (int scrape = 0; scrape < 2; ++scrape) {
    for (int g = 0; g < 2; ++g) {
      const std::string l = fmt::format(
          "{{card_model=\"AMD Instinct MI300X OAM\",gpu_id=\"{}\",hostname=\"mi-node1\"}}", g);
      text += fmt::format("gpu_power_usage{} {}\ngpu_package_power{} {}\n", l, 130 + g, l, 131 + g);
      text += fmt::format("gpu_gfx_activity{} 100\ngpu_umc_activity{} 0\n", l, l);
      text += fmt::format("gpu_used_vram{} 150000\ngpu_total_vram{} 196592\n", l, l);
      text += fmt::format("gpu_junction_temperature{} 51\ngpu_clock{} 2100\n", l, l);
    }
  }
  WriteFile(amd, text);
  Drained a = ReadOne(amd, 15000);
  ASSERT_TRUE(a.status.ok()) << a.status.message();
  EXPECT_EQ(Format(a), "dcgm-exporter");
  ASSERT_EQ(a.samples.size(), 4u);
  EXPECT_DOUBLE_EQ(*a.samples[1].power_w, 131) << "gpu_power_usage, not gpu_package_power";
  EXPECT_DOUBLE_EQ(*a.samples[1].util_gpu_pct, 100);
  EXPECT_DOUBLE_EQ(*a.samples[1].mem_used_mib, 150000);
  EXPECT_DOUBLE_EQ(*a.samples[1].mem_total_mib, 196592);
  EXPECT_EQ(a.samples[1].key.gpu, 1);
  EXPECT_EQ(a.samples[2].timestamp_ms - a.samples[0].timestamp_ms, 15000);
  EXPECT_EQ(a.gpus[0].name, "AMD Instinct MI300X OAM");

  const std::string gaudi = dir / "gaudi.prom";
  WriteFile(gaudi,
            "# HELP habanalabs_power_mW Power usage in milli-watts\n"
            "habanalabs_power_mW{UUID=\"01P4-HL3090A0-18-U4V193-22-07-00\"} 245000\n"
            "habanalabs_power_default_limit_mW{UUID=\"01P4-HL3090A0-18-U4V193-22-07-00\"} 900000\n"
            "habanalabs_utilization{UUID=\"01P4-HL3090A0-18-U4V193-22-07-00\"} 100\n"
            "habanalabs_memory_used_bytes{UUID=\"01P4-HL3090A0-18-U4V193-22-07-00\"} 107374182400\n"
            "habanalabs_memory_total_bytes{UUID=\"01P4-HL3090A0-18-U4V193-22-07-00\"} "
            "137438953472\n");
  Drained g = ReadOne(gaudi, 30000);
  ASSERT_TRUE(g.status.ok()) << g.status.message();
  ASSERT_EQ(g.samples.size(), 1u);
  EXPECT_DOUBLE_EQ(*g.samples[0].power_w, 245) << "mW -> W";
  EXPECT_DOUBLE_EQ(*g.samples[0].power_limit_w, 900);
  EXPECT_DOUBLE_EQ(*g.samples[0].util_gpu_pct, 100);
  EXPECT_DOUBLE_EQ(*g.samples[0].mem_used_mib, 102400) << "bytes -> MiB";
  EXPECT_DOUBLE_EQ(*g.samples[0].mem_total_mib, 131072);
}

TEST(DcgmExporter, OwnTimestampsAndHpcJob) {
  TempDir dir;
  const std::string p = dir / "n.prom";
  WriteFile(p, Scrape(500, 100, 1000, ",hpc_job=\"4242\"", "1763465360000") +
                   Scrape(300, 100, 2000, ",hpc_job=\"4242\"", "1763465361000"));
  Drained d = ReadOne(p);
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  ASSERT_EQ(d.batches.size(), 2u);
  EXPECT_EQ(d.batches[0][0].timestamp_ms, 1763465360000);
  EXPECT_EQ(d.batches[1][1].timestamp_ms, 1763465361000);
  EXPECT_EQ(d.labels[0].labels.at("hpc_job"), "4242");
}

TEST(DcgmExporter, MigInstancesOtherHostsAndMissingLabelsAreDocumentedSkips) {
  TempDir dir;
  const std::string p = dir / "n.prom";
  WriteFile(p, Scrape(500, 100, 1000) +
                   "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",GPU_I_ID=\"1\",Hostname=\"node7\"} 10\n"
                   "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",Hostname=\"node8\"} 10\n"
                   "DCGM_FI_DEV_POWER_USAGE{Hostname=\"node7\"} 10\n"
                   "DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",Hostname=\"node7\" 10\n");
  Drained d = ReadOne(p);
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  EXPECT_EQ(d.samples.size(), 2u);
  EXPECT_THAT(d.warnings, HasSubstr("MIG instances skipped"));
  EXPECT_THAT(d.warnings, HasSubstr("series of another host skipped"));
  EXPECT_THAT(d.warnings, HasSubstr("series without a gpu or UUID label skipped"));
  EXPECT_THAT(d.warnings, HasSubstr("malformed DCGM line skipped"));
}

}  // namespace
}  // namespace ww::ingest_tests
