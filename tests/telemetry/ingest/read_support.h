// What the reader tests of tests/telemetry/ingest/ share: opening files as `triage` does and
// draining the source into one value to assert on, compressing a text, and dcgm-exporter scrapes
// written the way the exporter prints them. Tests include it and sit in namespace ww::ingest_tests.
// Ownership: values only. Thread-safety: test thread only.
#pragma once

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <zlib.h>
#include <zstd.h>

#include <string>
#include <utility>
#include <vector>

#include "support/support.h"
#include "telemetry/ingest/open.h"

namespace ww::ingest_tests {

// The names every reader test uses.
using ::testing::HasSubstr;
using ww::testing::SharedDir;
using ww::testing::TempDir;
using ww::testing::WriteFile;
using namespace ww::ingest;  // NOLINT: the readers under test

inline const std::string kFormats = ww::testing::SharedDir() + "/traces/formats/";

struct Drained {
  Status status;
  std::vector<GpuSample> samples;
  std::vector<std::vector<GpuSample>> batches;
  std::vector<GpuInfo> gpus;
  std::vector<GpuLabels> labels;
  std::vector<std::string> hosts;
  std::string warnings;
  std::vector<InputDescription> inputs;  // their `file` is gone with the source: use text
  std::string description;               // every input's description, a line each
  std::string text;                      // the first input's description, read while open
};

inline Drained Read(const std::vector<std::string>& paths, IngestOptions options = {}) {
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
  if (!d.inputs.empty()) d.text = d.inputs[0].Text();
  return d;
}

inline Drained ReadOne(const std::string& path, int64_t interval_ms = 0,
                       std::vector<std::pair<std::string, std::string>> map = {}) {
  IngestOptions o;
  o.replay.interval_ms = interval_ms;
  o.map = std::move(map);
  return Read({path}, o);
}

// The format the first input was read as.
inline std::string Format(const Drained& d) { return d.inputs.empty() ? "" : d.inputs[0].format; }

inline std::string Gzip(const std::string& text) {
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

inline std::string Zstd(const std::string& text) {
  std::string out(ZSTD_compressBound(text.size()), '\0');
  out.resize(ZSTD_compress(out.data(), out.size(), text.data(), text.size(), 3));
  return out;
}

// dcgm-exporter series and scrapes of two GPUs, as the exporter prints them.
inline std::string Series(const std::string& name, int gpu, double v, const std::string& extra = "",
                          const std::string& ts = "") {
  return fmt::format(
      "{}{{gpu=\"{}\",UUID=\"GPU-{}\",pci_bus_id=\"0000:{}\",device=\"nvidia{}\","
      "modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"node7\"{}}} {}{}\n",
      name, gpu, gpu, gpu, gpu, extra, v, ts.empty() ? "" : " " + ts);
}

inline std::string Scrape(double power, double util, double energy, const std::string& extra = "",
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

}  // namespace ww::ingest_tests
