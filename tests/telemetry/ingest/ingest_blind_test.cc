// Files where a hang used to be hidden (issue 31), through `wattwatch triage`: dcgm-exporter text
// with a GPU without a usable `gpu` label, timestamps in seconds, one scrape stamped decades
// ahead; a custom CSV with one row stamped decades ahead.
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>

#include "support/support.h"
#include "telemetry/ingest/dcgm_exporter.h"

namespace ww::ingest {
namespace {

using ::testing::HasSubstr;
using ww::testing::RunWattwatch;
using ww::testing::TempDir;
using ww::testing::WriteFile;

constexpr int64_t kT0Ms = 1780000000000;  // 2026-05-28T20:26:40Z
constexpr int kScrapes = 61;              // every 5 s for 300 s
constexpr int kHangFrom = 24;             // 120 s in: every GPU spins, nobody works

struct TraceSpec {
  int gpus = 8;
  // The labels of GPU g before Hostname (gpu, UUID, ...).
  std::function<std::string(int)> labels = [](int g) {
    return fmt::format("gpu=\"{}\",UUID=\"GPU-{}\"", g, g);
  };
  bool seconds = false;    // stamp lines in seconds instead of ms
  int far_future_at = -1;  // this scrape stamped 50 years ahead
};

// A host of H100s that trains for two minutes, then hangs for three.
std::string Trace(const TraceSpec& spec) {
  std::string out;
  for (int k = 0; k < kScrapes; ++k) {
    int64_t ts_ms = kT0Ms + int64_t{k} * 5000;
    if (k == spec.far_future_at) ts_ms += int64_t{50} * 365 * 86400 * 1000;
    const int64_t stamp = spec.seconds ? ts_ms / 1000 : ts_ms;
    const bool hung = k >= kHangFrom;
    // As dcgm-exporter prints them: each metric for every GPU, metric after metric.
    for (const char* metric : {"POWER_USAGE", "GPU_UTIL", "FB_USED"}) {
      for (int g = 0; g < spec.gpus; ++g) {
        const std::string l =
            spec.labels(g) + ",modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"node7\"";
        const double power = hung ? 146 : 560 + 40 * ((k + g) % 3);
        const double v = metric[0] == 'P' ? power : metric[0] == 'G' ? 100 : 70000;
        out += fmt::format("DCGM_FI_DEV_{}{{{}}} {} {}\n", metric, l, v, stamp);
      }
    }
  }
  return out;
}

ww::testing::CommandResult Triage(const TraceSpec& spec) {
  TempDir dir;
  const std::string p = dir / "node7.prom";
  WriteFile(p, Trace(spec));
  return RunWattwatch(fmt::format("triage {} --fail-on-hang --color never", p));
}

TEST(DcgmIdentity, TheTraceHangsWithEveryGpuLabelled) {
  const auto r = Triage({});
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_THAT(r.output, ::testing::Not(HasSubstr("duplicate timestamp")));
}

// One GPU known by UUID only was numbered 0, onto GPU 0: its samples and GPU 0's became
// "duplicate timestamps", every GPU read idle and --fail-on-hang exited 0.
TEST(DcgmIdentity, AGpuWithoutAUsableGpuLabelIsIdentifiedByUuidAndTheHangIsFound) {
  for (const char* bad : {"", "abc", "-1", "4096", "70000"}) {
    TraceSpec spec;
    spec.labels = [bad](int g) {
      if (g != 7) return fmt::format("gpu=\"{}\",UUID=\"GPU-{}\"", g, g);
      return std::string(*bad ? fmt::format("gpu=\"{}\",", bad) : "") + "UUID=\"GPU-7\"";
    };
    const auto r = Triage(spec);
    EXPECT_EQ(r.exit_code, 3) << "gpu label '" << bad << "'\n" << r.output;
    EXPECT_THAT(r.output, HasSubstr("identified by UUID or PCI bus id")) << bad;
    EXPECT_THAT(r.output, HasSubstr("UUID GPU-7")) << bad;
    EXPECT_THAT(r.output, ::testing::Not(HasSubstr("duplicate timestamp"))) << bad;
  }
}

TEST(DcgmIdentity, AGpuWithOnlyAPciBusIdIsIdentifiedByIt) {
  TraceSpec spec;
  spec.labels = [](int g) {
    if (g != 3) return fmt::format("gpu=\"{}\",UUID=\"GPU-{}\"", g, g);
    return std::string("pci_bus_id=\"00000000:3B:00.0\"");
  };
  const auto r = Triage(spec);
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_THAT(r.output, HasSubstr("pci_bus_id 00000000:3B:00.0 (no gpu label)"));
}

// Seconds where the format has milliseconds put every scrape in January 1970, without a word.
TEST(DcgmIdentity, TimestampsInSecondsAreReadAsSecondsWithAWarning) {
  TraceSpec spec;
  spec.seconds = true;
  const auto r = Triage(spec);
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_THAT(r.output, HasSubstr("read as seconds"));
  EXPECT_THAT(r.output, HasSubstr("2026-05-28"));
  EXPECT_THAT(r.output, ::testing::Not(HasSubstr("1970-01")));
}

// One scrape stamped 50 years ahead made every later one "out of order": the hang after it was
// never seen. It is skipped, with a warning naming its line.
TEST(DcgmIdentity, AScrapeStampedDecadesAheadIsSkippedNotBlinding) {
  TraceSpec spec;
  spec.far_future_at = 10;
  const auto r = Triage(spec);
  EXPECT_EQ(r.exit_code, 3) << r.output;
  EXPECT_THAT(r.output, HasSubstr("more than a day after the one before skipped"));
  EXPECT_THAT(r.output, HasSubstr("at 2076-"));  // the stray scrape, named with its line
  EXPECT_THAT(r.output, ::testing::Not(HasSubstr("out-of-order timestamp")));
}

// The same through the custom CSV reader: one row 74 years ahead stretched the log over 74 years
// and made the rest of it "out of order". (nvidia-smi's CSV has its own reader.)
TEST(FileTimeJump, ACustomCsvRowStampedDecadesAheadIsSkipped) {
  TempDir dir;
  const std::string p = dir / "node7.csv";
  std::string csv = "time_s,gpu,power_w,util_pct,mem_used_mib\n";
  for (int k = 0; k < kScrapes; ++k) {
    int64_t t = kT0Ms / 1000 + int64_t{k} * 5;
    if (k == 10) t += int64_t{74} * 365 * 86400;
    for (int g = 0; g < 2; ++g) csv += fmt::format("{},{},{},100,70000\n", t, g, 560 + g);
  }
  WriteFile(p, csv);
  const auto r = RunWattwatch(fmt::format("triage {} --color never", p));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("2026-05-28T20:26:40.000 .. 2026-05-28T20:31:40.000"));
  EXPECT_THAT(r.output,
              HasSubstr("more than a day after the one before skipped (clock jump?) (2 times)"));
  EXPECT_THAT(r.output, ::testing::Not(HasSubstr("out-of-order")));
}

// The same in an nvidia-smi CSV: one row stamped 74 years ahead. Before, the reader took the
// rows after it for a clock that stepped back and shifted the rest of the file 74 years forward.
TEST(FileTimeJump, AnNvidiaSmiRowStampedDecadesAheadIsSkippedNotShiftingTheRest) {
  TempDir dir;
  const std::string p = dir / "node7.csv";
  std::string csv = "timestamp, index, power.draw [W], utilization.gpu [%], memory.used [MiB]\n";
  for (int k = 0; k < kScrapes; ++k) {
    for (int g = 0; g < 2; ++g) {
      const int year = k == 10 && g == 1 ? 2100 : 2026;
      csv += fmt::format("{}/05/28 20:{:02d}:{:02d}.{:03d}, {}, {} W, 100 %, 70000 MiB\n", year,
                         26 + (40 + k * 5) / 60, (40 + k * 5) % 60, g, g, 560 + g);
    }
  }
  WriteFile(p, csv);
  const auto r = RunWattwatch(fmt::format("triage {} --color never", p));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, HasSubstr("2026-05-28T20:26:40.000 .. 2026-05-28T20:31:40.001"));
  EXPECT_THAT(r.output, HasSubstr("row stamped more than a day after the one before skipped"));
  EXPECT_THAT(r.output, ::testing::Not(HasSubstr("shifted forward")));
  EXPECT_THAT(r.output, ::testing::Not(HasSubstr("out-of-order")));
}

// The decoder: labelled GPUs keep their index; GPUs known otherwise are numbered from the top
// down, never onto a labelled one, whatever the order they come in.
TEST(DcgmIdentity, DecoderNumbersUnlabelledGpusApartFromLabelledOnes) {
  DcgmScrapeDecoder d(0);
  std::string why;
  EXPECT_EQ(d.Line("DCGM_FI_DEV_GPU_UTIL{UUID=\"GPU-x\"} 100", &why),
            DcgmScrapeDecoder::LineResult::kRead);
  EXPECT_EQ(d.Line("DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-a\"} 100", &why),
            DcgmScrapeDecoder::LineResult::kRead);
  EXPECT_EQ(d.Line("DCGM_FI_DEV_GPU_UTIL{gpu=\"abc\",UUID=\"GPU-y\"} 100", &why),
            DcgmScrapeDecoder::LineResult::kRead);
  EXPECT_EQ(d.Line("DCGM_FI_DEV_GPU_UTIL{pci_bus_id=\"0000:3B:00.0\"} 100", &why),
            DcgmScrapeDecoder::LineResult::kRead);
  std::vector<GpuSample> out;
  d.End(0, &out);
  ASSERT_EQ(out.size(), 4u);
  std::vector<int> gpus;
  for (const auto& s : out) gpus.push_back(s.key.gpu);
  EXPECT_EQ(gpus, (std::vector<int>{0, 4093, 4094, 4095}));
  EXPECT_EQ(d.TakeNotes().size(), 3u);
  EXPECT_TRUE(d.TakeNotes().empty());
}

}  // namespace
}  // namespace ww::ingest
