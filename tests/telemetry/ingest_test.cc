// The readers of issue 13: dcgmi dmon, dcgm-exporter text, W&B, nvidia-smi tables, home-made
// CSVs, gzip/zstd; format recognition by content; the real format samples in
// ../shared/traces/formats read with values checked by hand against the files.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <zlib.h>
#include <zstd.h>

#include <cmath>

#include "core/timefmt.h"
#include "support/support.h"
#include "telemetry/ingest/open.h"
#include "telemetry/ingest/prom_text.h"
#include "telemetry/ingest/smi_table.h"
#include "telemetry/ingest/table_csv.h"

namespace ww {
namespace {

using ::testing::HasSubstr;
using namespace ww::ingest;  // NOLINT: the readers under test
using ww::testing::SharedDir;
using ww::testing::TempDir;
using ww::testing::WriteFile;

const std::string kFormats = SharedDir() + "/traces/formats/";

struct Drained {
  Status status;
  std::vector<GpuSample> samples;
  std::vector<std::vector<GpuSample>> batches;
  std::vector<GpuInfo> gpus;
  std::vector<GpuLabels> labels;
  std::vector<std::string> hosts;
  std::string warnings;
  std::vector<InputDescription> inputs;
  std::string description;
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
    d.batches.push_back(std::move(batch));
  }
  d.gpus = in->source->gpus();
  d.labels = in->source->gpu_labels();
  d.hosts = in->source->hosts();
  for (const auto& w : in->source->warnings()) d.warnings += w + "\n";
  d.inputs = in->inputs;
  for (const auto& i : in->inputs) d.description += i.Text() + "\n";
  return d;
}

Drained ReadOne(const std::string& path, int64_t interval_ms = 0,
                std::vector<std::pair<std::string, std::string>> map = {}) {
  IngestOptions o;
  o.replay.interval_ms = interval_ms;
  o.map = std::move(map);
  return Read({path}, o);
}

std::string Gzip(const std::string& text) {
  z_stream z{};
  deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, text.size()) + 64, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  z.avail_in = static_cast<uInt>(text.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::string Zstd(const std::string& text) {
  std::string out(ZSTD_compressBound(text.size()), '\0');
  out.resize(ZSTD_compress(out.data(), out.size(), text.data(), text.size(), 3));
  return out;
}

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

// ---------------------------------------------------------------- dcgmi dmon

TEST(DcgmiDmon, TicksGpusEntitiesAndNA) {
  TempDir dir;
  const std::string p = dir / "node0.txt";
  WriteFile(p,
            "#Entity   POWER  GPUTL  FBUSD  SMACT  NVLTX  TMPTR\n"
            "ID        W                            \n"
            "GPU 0     500.1  100    60000  0.91   1000   61\n"
            "GPU 1     N/A    99     60001  0.90   2000   62\n"
            "GPU-I 3   1.0    1      1      0.1    1      1\n"
            "GPU 0     150.0  100    60000  0.05   3000   60\n"
            "GPU 1     151.0  100    60000  0.05   4000   60\n");
  Drained d = ReadOne(p, 100);
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  ASSERT_EQ(d.batches.size(), 2u);
  ASSERT_EQ(d.batches[0].size(), 2u);
  EXPECT_EQ(d.batches[1][0].timestamp_ms, 100);
  EXPECT_FALSE(d.batches[0][1].power_w.has_value());  // N/A is absent, never 0
  EXPECT_DOUBLE_EQ(*d.batches[0][1].util_gpu_pct, 99);
  EXPECT_DOUBLE_EQ(*d.batches[1][1].nvlink_tx_bytes_per_s, 4000);
  EXPECT_DOUBLE_EQ(*d.batches[0][0].temperature_c, 61);
  EXPECT_THAT(d.warnings, HasSubstr("rows of other DCGM entities skipped"));
}

TEST(DcgmiDmon, GractStandsInForUtilizationWithoutGputl) {
  TempDir dir;
  const std::string p = dir / "n.txt";
  WriteFile(p, "# Entity  GRACT  POWER\n      Id             W\n  GPU 0  0.875  300\n");
  Drained d = ReadOne(p, 1000);
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  EXPECT_DOUBLE_EQ(*d.samples[0].util_gpu_pct, 87.5);
}

TEST(DcgmiDmon, LeadingEpochTimestamps) {
  TempDir dir;
  const std::string p = dir / "n.txt";
  WriteFile(p,
            "# Entity POWER GPUTL\n"
            "1763465360.5 GPU 0 300 90\n"
            "1763465361.5 GPU 0 301 91\n");
  Drained d = ReadOne(p);
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  ASSERT_EQ(d.samples.size(), 2u);
  EXPECT_EQ(d.samples[0].timestamp_ms, 1763465360500);
  EXPECT_EQ(d.samples[1].timestamp_ms, 1763465361500);
}

TEST(DcgmiDmon, WrongFieldCountAndBadValuesAreDocumentedSkips) {
  TempDir dir;
  const std::string p = dir / "n.txt";
  std::string text = "# Entity POWER GPUTL\nId W\n";
  for (int i = 0; i < 200; ++i) text += "GPU 0 300 90\n";
  text += "GPU 0 300\n";       // a field short
  text += "GPU 0 abc 90\n";    // not a number
  text += "GPU 0 99999 90\n";  // 100 kW
  text += "GPU 0 30";          // cut off mid-write
  WriteFile(p, text);
  Drained d = ReadOne(p, 100);
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  EXPECT_EQ(d.samples.size(), 202u);
  EXPECT_THAT(d.warnings, HasSubstr("row with wrong number of fields skipped (1 time); line 203"));
  EXPECT_THAT(d.warnings, HasSubstr("line 204: POWER: 'abc' is not a number"));
  EXPECT_THAT(d.warnings, HasSubstr("line 205: POWER: '99999' is out of the plausible range"));
  EXPECT_THAT(d.warnings, HasSubstr("truncated last line skipped"));
}

// ---------------------------------------------------------------- dcgm-exporter

std::string Series(const std::string& name, int gpu, double v, const std::string& extra = "",
                   const std::string& ts = "") {
  return fmt::format(
      "{}{{gpu=\"{}\",UUID=\"GPU-{}\",pci_bus_id=\"0000:{}\",device=\"nvidia{}\","
      "modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"node7\"{}}} {}{}\n",
      name, gpu, gpu, gpu, gpu, extra, v, ts.empty() ? "" : " " + ts);
}

std::string Scrape(double power, double util, double energy, const std::string& extra = "",
                   const std::string& ts = "") {
  std::string s =
      "# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).\n"
      "# TYPE DCGM_FI_DEV_POWER_USAGE gauge\n";
  for (int g = 0; g < 2; ++g) s += Series("DCGM_FI_DEV_POWER_USAGE", g, power + g, extra, ts);
  for (int g = 0; g < 2; ++g) s += Series("DCGM_FI_DEV_GPU_UTIL", g, util, extra, ts);
  for (int g = 0; g < 2; ++g) {
    s += Series("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", g, energy, extra, ts);
  }
  for (int g = 0; g < 2; ++g) s += Series("DCGM_FI_PROF_NVLINK_TX_BYTES", g, 1e9, extra, ts);
  return s;
}

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

TEST(PromText, ParsesEscapesTimestampsAndSpecialValues) {
  PromSample s;
  std::string err;
  ASSERT_TRUE(ParsePromLine("x{a=\"b\\\"c\",d=\"}\"} -Inf 123", &s, &err)) << err;
  EXPECT_EQ(s.name, "x");
  EXPECT_TRUE(std::isinf(s.value));
  EXPECT_EQ(*s.timestamp_ms, 123);
  std::vector<PromLabel> labels;
  std::deque<std::string> scratch;
  ASSERT_TRUE(ParsePromLabels(s.label_block, &labels, &scratch, &err)) << err;
  ASSERT_EQ(labels.size(), 2u);
  EXPECT_EQ(labels[0].value, "b\"c");
  EXPECT_EQ(labels[1].value, "}");
  EXPECT_FALSE(ParsePromLine("x{a=\"b} 1", &s, &err));
  EXPECT_FALSE(ParsePromLine("x 1 notatime", &s, &err));
  EXPECT_FALSE(ParsePromLine("x", &s, &err));
}

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

// ---------------------------------------------------------------- W&B

TEST(Wandb, CsvExportWithPercentagesGivesLimitAndTotal) {
  TempDir dir;
  const std::string p = dir / "run.csv";
  WriteFile(p,
            "_runtime,_timestamp,system.gpu.0.gpu,system.gpu.0.powerWatts,"
            "system.gpu.0.powerPercent,system.gpu.0.memoryAllocatedBytes,"
            "system.gpu.0.memoryAllocated,system.gpu.1.gpu,system.gpu.1.powerWatts,"
            "system.gpu.process.0.gpu,system.cpu\n"
            "10.5,1763465360.5,98,350,50,42949672960,50,97,349,98,12\n"
            "12.5,1763465362.5,100,140,20,42949672960,50,100,141,100,12\n");
  Drained d = ReadOne(p);
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  ASSERT_EQ(d.batches.size(), 2u);
  ASSERT_EQ(d.batches[0].size(), 2u);
  const GpuSample& s = d.batches[0][0];
  EXPECT_EQ(s.timestamp_ms, 1763465360500);
  EXPECT_DOUBLE_EQ(*s.power_w, 350);
  EXPECT_DOUBLE_EQ(*s.power_limit_w, 700);
  EXPECT_DOUBLE_EQ(*s.mem_used_mib, 40960);
  EXPECT_DOUBLE_EQ(*s.mem_total_mib, 81920);
  EXPECT_DOUBLE_EQ(*d.batches[1][1].power_w, 141);
  EXPECT_THAT(d.description, HasSubstr("W&B system metrics CSV"));
}

TEST(Wandb, JsonLinesWithRuntimeOnlyAndNestedValues) {
  TempDir dir;
  const std::string p = dir / "wandb-events.jsonl";
  WriteFile(p,
            "{\"system.cpu\": 3.1, \"_wandb\": true, \"_runtime\": 1}\n"
            "{\"system.gpu.0.gpu\": 98, \"system.gpu.0.powerWatts\": 350.5, "
            "\"system.gpu.0.temp\": 61, \"_wandb\": {\"x\": [1, 2]}, \"_runtime\": 2}\n"
            "{\"system.gpu.0.gpu\": 99, \"system.gpu.0.powerWatts\": 351, \"_runtime\": 4}\n"
            "{\"system.gpu.0.gpu\": 99, \"system.gpu.0.po");
  EXPECT_STREQ(InputFormatName(*DetectInputFormat(p, {})), "wandb");
  Drained d = ReadOne(p);
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  ASSERT_EQ(d.samples.size(), 2u);
  EXPECT_EQ(d.samples[0].timestamp_ms, 2000);
  EXPECT_DOUBLE_EQ(*d.samples[0].power_w, 350.5);
  EXPECT_DOUBLE_EQ(*d.samples[0].temperature_c, 61);
  EXPECT_EQ(d.samples[1].timestamp_ms, 4000);
  EXPECT_THAT(d.warnings, HasSubstr("truncated last line skipped"));
}

// ---------------------------------------------------------------- nvidia-smi tables

// Layouts as drivers print them: 450-52x (narrow, MIG M. row), 440 (no third row), 550 (wide).
const char* kTable450 =
    "Tue Oct 27 06:02:13 2020       \n"
    "+-----------------------------------------------------------------------------+\n"
    "| NVIDIA-SMI 450.80.02    Driver Version: 450.80.02    CUDA Version: 11.0     |\n"
    "|-------------------------------+----------------------+----------------------+\n"
    "| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |\n"
    "| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |\n"
    "|                               |                      |               MIG M. |\n"
    "|===============================+======================+======================|\n"
    "|   0  NVIDIA A100 80G...  On   | 00000000:35:00.0 Off |                    0 |\n"
    "| N/A   46C    P0   273W / 300W |  57828MiB / 81920MiB |     97%      Default |\n"
    "|                               |                      |             Disabled |\n"
    "+-------------------------------+----------------------+----------------------+\n"
    "|   1  NVIDIA A100 80G...  On   | 00000000:36:00.0 Off |                    0 |\n"
    "| N/A   44C    P0    N/A /  N/A |  51826MiB / 81920MiB |      0%      Default |\n"
    "|                               |                      |             Disabled |\n"
    "+-------------------------------+----------------------+----------------------+\n"
    "                                                                               \n"
    "+-----------------------------------------------------------------------------+\n"
    "| Processes:                                                                  |\n"
    "|  GPU   GI   CI        PID   Type   Process name                  GPU Memory |\n"
    "|        ID   ID                                                   Usage      |\n"
    "|=============================================================================|\n"
    "|    0   N/A  N/A     12345      C   python                          57826MiB |\n"
    "+-----------------------------------------------------------------------------+\n";

const char* kTable550 =
    "Tue Oct 27 06:02:18 2020\n"
    "+-----------------------------------------------------------------------------------------+\n"
    "| NVIDIA-SMI 550.127.05             Driver Version: 550.127.05     CUDA Version: 12.4     |\n"
    "|-----------------------------------------+------------------------+----------------------+\n"
    "| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |\n"
    "| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |\n"
    "|                                         |                        |               MIG M. |\n"
    "|=========================================+========================+======================|\n"
    "|   0  NVIDIA A100 80GB PCIe          On  |   00000000:35:00.0 Off |                    0 |\n"
    "|  0%   29C    P8             23W /  300W |       1MiB /  81920MiB |      0%      Default |\n"
    "|                                         |                        |                  N/A |\n"
    "+-----------------------------------------+------------------------+----------------------+\n"
    "|   1  NVIDIA A100 80GB PCIe          On  |   00000000:36:00.0 Off |                    0 |\n"
    "|  0%   30C    P8             24W /  300W |       1MiB /  81920MiB |      0%      Default |\n"
    "|                                         |                        |                  N/A |\n"
    "+-----------------------------------------+------------------------+----------------------+\n";

TEST(SmiTable, SlurmOutWithTablesBetweenTrainingLines) {
  TempDir dir;
  const std::string p = dir / "slurm-4242.out";
  WriteFile(p, std::string("srun: job 4242 queued and waiting for resources\n"
                           "| epoch | loss |\n|   1   | 2.30 |\n"
                           "step 100 loss 2.31\n") +
                   kTable450 + "step 200 loss 2.10\n" + kTable550 + "done\n");
  EXPECT_STREQ(InputFormatName(*DetectInputFormat(p, {})), "smi-table");
  Drained d = ReadOne(p);
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  ASSERT_EQ(d.batches.size(), 2u);
  ASSERT_EQ(d.batches[0].size(), 2u);
  const GpuSample& a = d.batches[0][0];
  EXPECT_EQ(FormatIsoMs(a.timestamp_ms), "2020-10-27T06:02:13.000");
  EXPECT_DOUBLE_EQ(*a.power_w, 273);
  EXPECT_DOUBLE_EQ(*a.power_limit_w, 300);
  EXPECT_DOUBLE_EQ(*a.mem_used_mib, 57828);
  EXPECT_DOUBLE_EQ(*a.mem_total_mib, 81920);
  EXPECT_DOUBLE_EQ(*a.util_gpu_pct, 97);
  EXPECT_DOUBLE_EQ(*a.temperature_c, 46);
  EXPECT_EQ(*a.pstate, 0);
  EXPECT_FALSE(d.batches[0][1].power_w.has_value());  // "N/A /  N/A"
  const GpuSample& b = d.batches[1][1];
  EXPECT_EQ(FormatIsoMs(b.timestamp_ms), "2020-10-27T06:02:18.000");
  EXPECT_DOUBLE_EQ(*b.power_w, 24);
  EXPECT_EQ(*b.pstate, 8);
  ASSERT_EQ(d.gpus.size(), 2u);
  EXPECT_EQ(d.gpus[0].name, "NVIDIA A100 80G...");
  EXPECT_EQ(d.gpus[1].pci_bus_id, "00000000:36:00.0");
  EXPECT_THAT(d.description, HasSubstr("nvidia-smi tables: 2 tables"));
}

TEST(SmiTable, Driver440WithoutMigRowAndWithoutDateNeedsInterval) {
  TempDir dir;
  const std::string p = dir / "t.txt";
  const std::string t440 =
      "+-----------------------------------------------------------------------------+\n"
      "| NVIDIA-SMI 440.100      Driver Version: 440.100      CUDA Version: 10.2     |\n"
      "|-------------------------------+----------------------+----------------------+\n"
      "| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |\n"
      "| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |\n"
      "|===============================+======================+======================|\n"
      "|   0  Tesla V100-SXM2...  On   | 00000000:00:1E.0 Off |                    0 |\n"
      "| N/A   34C    P0    23W / 300W |      0MiB / 16160MiB |      0%      Default |\n"
      "+-------------------------------+----------------------+----------------------+\n";
  WriteFile(p, t440 + "\n" + t440);
  Drained none = ReadOne(p);
  ASSERT_FALSE(none.status.ok());
  EXPECT_THAT(none.status.message(), HasSubstr(p + ":2: an nvidia-smi table without a date line"));
  Drained d = ReadOne(p, 5000);
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  ASSERT_EQ(d.samples.size(), 2u);
  EXPECT_EQ(d.samples[1].timestamp_ms, 5000);
  EXPECT_DOUBLE_EQ(*d.samples[1].power_limit_w, 300);
  EXPECT_EQ(d.gpus[0].name, "Tesla V100-SXM2...");
}

TEST(SmiTable, DateLine) {
  EXPECT_EQ(FormatIsoMs(*ingest::ParseSmiDateLine("Wed Mar  2 10:00:00 2022       ")),
            "2022-03-02T10:00:00.000");
  EXPECT_FALSE(ingest::ParseSmiDateLine("step 100 loss 2.31 done").has_value());
}

// ---------------------------------------------------------------- detection, compression

TEST(Detect, ForcedFormatAndNvidiaSmiUnchanged) {
  TempDir dir;
  const std::string csv = dir / "n.csv";
  WriteFile(csv,
            "timestamp, index, power.draw [W], utilization.gpu [%]\n"
            "2025/11/18 11:29:20.000, 0, 500.00 W, 98 %\n");
  EXPECT_STREQ(InputFormatName(*DetectInputFormat(csv, {})), "nvidia-smi");
  IngestOptions forced;
  forced.format = *ParseInputFormat("custom-csv");
  Drained d = Read({csv}, forced);
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  EXPECT_DOUBLE_EQ(*d.samples[0].power_w, 500);
  EXPECT_THAT(d.description, HasSubstr("custom CSV"));
}

TEST(Detect, CompressedCsvAndTruncatedStream) {
  TempDir dir;
  std::string text = "time,gpu,power_w,util_pct\n";
  for (int i = 0; i < 5000; ++i) {
    text += fmt::format("{},0,{},90\n{},1,{},91\n", 1763465360 + i, 300 + i % 7, 1763465360 + i,
                        310 + i % 5);
  }
  WriteFile(dir / "a.csv.gz", Gzip(text) + Gzip("1763470360,0,333,90\n"));  // two members
  WriteFile(dir / "b.zst", Zstd(text));
  const std::string z = Zstd(text);
  // Two frames (a writer that flushes, or appended logs), cut in the second: zstd decodes whole
  // blocks, so the first frame is what a crashed node leaves readable.
  const size_t half = text.find('\n', text.size() / 2) + 1;
  const std::string first = Zstd(text.substr(0, half));
  const std::string second = Zstd(text.substr(half));
  WriteFile(dir / "cut.zst", first + second.substr(0, second.size() / 2));
  Drained a = ReadOne(dir / "a.csv.gz");
  ASSERT_TRUE(a.status.ok()) << a.status.message();
  EXPECT_EQ(a.samples.size(), 10001u);
  EXPECT_EQ(a.hosts[0], "a");
  Drained b = ReadOne(dir / "b.zst");
  ASSERT_TRUE(b.status.ok()) << b.status.message();
  EXPECT_EQ(b.samples.size(), 10000u);
  // Cut in the middle (what a crashed node leaves): the whole blocks before the cut are read,
  // with a warning saying where the stream stops (issue 31, item 15).
  Drained cut = ReadOne(dir / "cut.zst");
  ASSERT_TRUE(cut.status.ok()) << cut.status.message();
  EXPECT_GT(cut.samples.size(), 0u);
  EXPECT_LT(cut.samples.size(), 10000u);
  EXPECT_THAT(cut.warnings, HasSubstr("truncated zstd stream after"));
  // Cut before the first block ended: nothing to read, an error.
  WriteFile(dir / "stub.zst", z.substr(0, 64));
  Drained stub = ReadOne(dir / "stub.zst");
  ASSERT_FALSE(stub.status.ok());
  EXPECT_THAT(stub.status.message(), HasSubstr("zstd stream cut off before its first block"));
}

TEST(Detect, MergesFormatsAsHostsOfOneJob) {
  TempDir dir;
  WriteFile(dir / "node0.csv", "time,power_w,util\n1763465360,300,90\n1763465361,301,90\n");
  WriteFile(dir / "node1.prom", Scrape(500, 100, 10, "", "1763465360500"));
  Drained d = Read({dir / "node0.csv", dir / "node1.prom"});
  ASSERT_TRUE(d.status.ok()) << d.status.message();
  ASSERT_EQ(d.hosts.size(), 2u);
  EXPECT_EQ(d.hosts[1], "node1");
  ASSERT_EQ(d.samples.size(), 4u);
  EXPECT_EQ(d.samples[1].key.host, 1);  // merged in time order
}

}  // namespace
}  // namespace ww
