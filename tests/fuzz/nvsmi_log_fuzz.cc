// libFuzzer target for the nvidia-smi log reader: the input is one log file (csv, dmon or
// anything else), read as `triage --format nvidia-smi` three ways (header, --query for headerless
// logs,
// --interval-ms for logs without time) and triaged to the end, so whatever the reader lets
// through must also be safe for the engine and the report.
// Build and run: `make fuzz`, then
//   build/fuzz/fuzz/nvsmi_log_fuzz tests/fuzz/corpus/nvsmi_log -max_total_time=300
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_triage.h"
#include "report/triage_report.h"
#include "telemetry/ingest/open.h"
#include "triage/engine.h"
#include "triage/run.h"

namespace {

// As `triage --format nvidia-smi FILE` reads it.
void TriageOnce(const std::string& path, const ww::ReplayOptions& options) {
  ww::IngestOptions io;
  io.format = *ww::ParseInputFormat("nvidia-smi");
  io.replay = options;
  ww::fuzz::TriageOnce(path, io);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // An in-memory file: no disk traffic, nothing left behind when the fuzzer is killed.
  const ww::fuzz::MemFile file(data, size, "nvsmi_log_fuzz");
  if (file.path().empty()) return 0;
  const std::string& path = file.path();

  TriageOnce(path, {});
  ww::ReplayOptions triage_fields;  // as `triage` itself reads it (cmd_triage.cc)
  triage_fields.triage_fields_only = true;
  TriageOnce(path, triage_fields);
  ww::ReplayOptions headerless;
  headerless.query =
      "timestamp,index,uuid,power.draw,power.draw.instant,enforced.power.limit,utilization.gpu,"
      "memory.used,pstate,clocks_event_reasons.active,clocks_event_reasons.sw_power_cap";
  TriageOnce(path, headerless);
  ww::ReplayOptions untimed;
  untimed.interval_ms = 100;
  TriageOnce(path, untimed);
  return 0;
}
