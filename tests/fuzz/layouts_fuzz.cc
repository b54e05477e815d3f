// libFuzzer target for the readers of issue 30's layouts: gpustat output, one-column-per-GPU
// frames (--wide), LLview per-GPU tables, whitespace tables (--map, --split-id) and nvidia-smi
// CSV with repeated headers. The input is one file, opened as detected and forced into each of
// these formats with the flags each takes, then triaged to the end and rendered, so whatever a
// reader lets through must also be safe for the engine and the report. The corpus
// (tests/fuzz/corpus/layouts/) also runs as a test.
// Build and run: `make fuzz`, then
//   build/fuzz/fuzz/layouts_fuzz tests/fuzz/corpus/layouts -max_total_time=300
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <string>

#include "fuzz_triage.h"
#include "report/triage_report.h"
#include "telemetry/ingest/gpustat.h"
#include "telemetry/ingest/open.h"
#include "triage/engine.h"
#include "triage/run.h"

using ww::fuzz::TriageOnce;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // The line parsers alone, on the whole input as one line.
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  ww::ingest::GpustatLine line;
  std::string error;
  (void)ww::ingest::ParseGpustatLine(text, &line, &error);
  (void)ww::ingest::ParseGpustatHostLine(text);
  const ww::fuzz::MemFile file(data, size, "layouts_fuzz");
  if (file.path().empty()) return 0;
  const std::string& path = file.path();
  ww::IngestOptions auto_detect;
  TriageOnce(path, auto_detect);
  ww::IngestOptions timed;
  timed.replay.interval_ms = 1000;
  timed.wide_metric = "power";
  TriageOnce(path, timed);
  for (const char* name : {"gpustat", "wide", "llview", "table"}) {
    const ww::InputFormat f = *ww::ParseInputFormat(name);
    ww::IngestOptions forced;
    forced.format = f;
    forced.replay.interval_ms = 100;
    forced.wide_metric = "util";
    TriageOnce(path, forced);
  }
  ww::IngestOptions split;
  split.format = *ww::ParseInputFormat("table");
  split.map = {{"power", "b"}, {"time", "a"}};
  split.split_id = "c";
  TriageOnce(path, split);
  return 0;
}
