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

#include "report/triage_report.h"
#include "telemetry/ingest/open.h"
#include "triage/engine.h"
#include "triage/run.h"

namespace {

void TriageOnce(const std::string& path, const ww::IngestOptions& options) {
  auto in = ww::OpenTelemetryFiles({path}, options);
  if (!in.ok()) return;
  ww::triage::TriageEngine engine;
  ww::Status st = ww::triage::RunToEnd(*in->source, engine);
  for (const auto& d : in->inputs) (void)d.Text();
  (void)in->source->gpu_labels();
  if (!st.ok()) return;
  auto report = ww::report::MakeReport(engine, in->source->hosts(), in->source->warnings());
  (void)ww::report::RenderText(report);
  (void)ww::report::RenderJson(report).dump();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const int fd = ::memfd_create("ingest_fuzz", MFD_CLOEXEC);
  if (fd < 0) return 0;
  size_t done = 0;
  while (done < size) {
    const ssize_t n = ::write(fd, data + done, size - done);
    if (n <= 0) {
      ::close(fd);
      return 0;
    }
    done += static_cast<size_t>(n);
  }
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  ww::IngestOptions auto_detect;
  TriageOnce(path, auto_detect);
  ww::IngestOptions timed;
  timed.replay.interval_ms = 1000;
  TriageOnce(path, timed);
  for (ww::InputFormat f :
       {ww::InputFormat::kDcgmiDmon, ww::InputFormat::kDcgmExporter, ww::InputFormat::kWandb,
        ww::InputFormat::kSmiTable, ww::InputFormat::kCustomCsv}) {
    ww::IngestOptions forced;
    forced.format = f;
    forced.replay.interval_ms = 100;
    TriageOnce(path, forced);
  }
  ww::IngestOptions mapped;
  mapped.map = {{"power", "b"}, {"time", "a"}, {"gpu", "c"}};
  TriageOnce(path, mapped);
  ::close(fd);
  return 0;
}
