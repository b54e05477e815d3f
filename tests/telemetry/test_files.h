// Test helpers for the telemetry tests (TempDir and the rest come from tests/support): a reader
// loop that drains a TelemetrySource into its batches, warnings and GPU infos.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/sample.h"
#include "core/status.h"
#include "support/support.h"
#include "telemetry/ingest/nvsmi_log.h"
#include "telemetry/ingest/open.h"
#include "telemetry/write/nvsmi_writer.h"

namespace ww::testing {

struct ReadAll {
  Status status;  // the open or the read error; ok when the whole file was read
  std::vector<std::vector<GpuSample>> batches;
  std::vector<GpuSample> samples;  // all batches, in order
  std::vector<std::string> hosts;
  std::vector<GpuInfo> gpus;
  std::vector<std::string> warnings;

  std::string AllWarnings() const {
    std::string s;
    for (const auto& w : warnings) s += w + "\n";
    return s;
  }
};

// Reads nvidia-smi logs as `triage --format nvidia-smi FILES...` does (host names included).
inline ReadAll ReadReplay(const std::vector<std::string>& paths,
                          const ReplayOptions& options = {}) {
  ReadAll r;
  IngestOptions io;
  io.format = *ParseInputFormat("nvidia-smi");
  io.replay = options;
  auto opened = OpenTelemetryFiles(paths, io);
  if (!opened.ok()) {
    r.status = opened.status();
    return r;
  }
  TelemetrySource* src = opened->source.get();
  for (;;) {
    std::vector<GpuSample> batch;
    r.status = src->Next(&batch);
    if (!r.status.ok() || batch.empty()) break;
    r.samples.insert(r.samples.end(), batch.begin(), batch.end());
    r.batches.push_back(std::move(batch));
  }
  r.hosts = src->hosts();
  r.gpus = src->gpus();
  r.warnings = src->warnings();
  return r;
}

// 2025-11-18T11:29:20.000Z, the simulator's default start.
inline constexpr int64_t kBaseMs = 1763465360000;

// nvidia-smi's timestamp for kBaseMs + offset_ms: "2025/11/18 11:29:20.100".
inline std::string Ts(int64_t offset_ms) {
  std::string s;
  AppendNvsmiTimestamp(s, kBaseMs + offset_ms);
  return s;
}

}  // namespace ww::testing
