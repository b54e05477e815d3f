// libFuzzer target for the readers of other people's telemetry (src/telemetry/ingest): the
// input is one file of any kind, opened through OpenTelemetryFiles as detected, with
// --interval-ms, and forced into each format in turn, then triaged to the end and rendered,
// so whatever a reader lets through must also be safe for the engine and the report. The
// corpus (tests/fuzz/corpus/ingest/) also runs as a test.
// Build and run: `make fuzz`, then
//   build/fuzz/fuzz/ingest_fuzz tests/fuzz/corpus/ingest -max_total_time=300
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <string>

#include "fuzz_triage.h"
#include "report/triage_report.h"
#include "telemetry/ingest/open.h"
#include "triage/engine.h"
#include "triage/run.h"

using ww::fuzz::TriageOnce;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const ww::fuzz::MemFile file(data, size, "ingest_fuzz");
  if (file.path().empty()) return 0;
  const std::string& path = file.path();
  ww::IngestOptions auto_detect;
  TriageOnce(path, auto_detect);
  ww::IngestOptions timed;
  timed.replay.interval_ms = 1000;
  TriageOnce(path, timed);
  // Every format of the registry (nvidia-smi's reader has its own target too).
  for (ww::InputFormat f : ww::ingest::Formats()) {
    ww::IngestOptions forced;
    forced.format = f;
    forced.replay.interval_ms = 100;
    TriageOnce(path, forced);
  }
  ww::IngestOptions mapped;
  mapped.map = {{"power", "b"}, {"time", "a"}, {"gpu", "c"}};
  TriageOnce(path, mapped);
  return 0;
}
