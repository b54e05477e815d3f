// libFuzzer target for the whitespace-table reader (src/telemetry/ingest/ws_table.h: LLview
// per-GPU job tables and --map/--split-id tables): the input as a file, detected and forced as
// llview and as table (with --map and --split-id), triaged to the end and rendered. The corpus
// (tests/fuzz/corpus/ws_table/) also runs as a test; tests/fuzz/layouts_fuzz.cc drives every
// reader of issue 30 together.
// Build and run: `make fuzz`, then
//   build/fuzz/fuzz/ws_table_fuzz tests/fuzz/corpus/ws_table -max_total_time=300
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
  const ww::fuzz::MemFile file(data, size, "ws_table_fuzz");
  if (file.path().empty()) return 0;
  const std::string& path = file.path();
  ww::IngestOptions auto_detect;
  TriageOnce(path, auto_detect);
  ww::IngestOptions timed;
  timed.replay.interval_ms = 1000;
  timed.wide_metric = "power";
  TriageOnce(path, timed);
  for (const char* name : {"llview", "table"}) {
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
