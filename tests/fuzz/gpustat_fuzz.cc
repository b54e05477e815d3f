// libFuzzer target for the gpustat reader (src/telemetry/ingest/gpustat.h): its line parsers on
// the whole input, then the input as a file, detected and forced as gpustat (with and without
// --interval-ms), triaged to the end and rendered, so whatever the reader lets through must also
// be safe for the engine and the report. The corpus (tests/fuzz/corpus/gpustat/) also runs as a
// test; tests/fuzz/layouts_fuzz.cc drives every reader of issue 30 together.
// Build and run: `make fuzz`, then
//   build/fuzz/fuzz/gpustat_fuzz tests/fuzz/corpus/gpustat -max_total_time=300
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
  const ww::fuzz::MemFile file(data, size, "gpustat_fuzz");
  if (file.path().empty()) return 0;
  const std::string& path = file.path();
  ww::IngestOptions auto_detect;
  TriageOnce(path, auto_detect);
  ww::IngestOptions timed;
  timed.replay.interval_ms = 1000;
  timed.wide_metric = "power";
  TriageOnce(path, timed);
  ww::IngestOptions forced;
  forced.format = *ww::ParseInputFormat("gpustat");
  forced.replay.interval_ms = 100;
  forced.wide_metric = "util";
  TriageOnce(path, forced);
  return 0;
}
