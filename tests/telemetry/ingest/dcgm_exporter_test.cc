// The dcgm-exporter text reader (dcgm_exporter.h): scrapes split where a series repeats, the
// exporter's own timestamps and labels, documented skips.
#include "telemetry/ingest/dcgm_exporter.h"

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
