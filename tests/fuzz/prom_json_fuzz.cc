// libFuzzer target for the Prometheus API JSON reader (src/telemetry/ingest/prom_json.h): the
// input is one response file (or several documents back to back), decoded, drained, triaged to
// the end and rendered. Invariants checked on every input that decodes: batches in strictly
// increasing time, one timestamp per batch, every sample's host in hosts(), values within the
// decoder's plausible ranges (never NaN/Inf), and the description and warnings valid to print.
// The corpus (tests/fuzz/corpus/prom_json/: valid responses and the malformed cases: truncated,
// wrong types, "status":"error", huge values, NaN/Inf strings, missing labels, out-of-order and
// duplicate timestamps) also runs as a test.
// Build and run: `make fuzz`, then
//   build/fuzz/fuzz/prom_json_fuzz tests/fuzz/corpus/prom_json -max_total_time=300
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "report/triage_report.h"
#include "telemetry/ingest/prom_json.h"
#include "triage/engine.h"
#include "triage/run.h"

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

void CheckValue(const std::optional<double>& v, double lo, double hi) {
  if (v) Check(std::isfinite(*v) && *v >= lo && *v <= hi);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  ww::ingest::PromJsonDecoder decoder;
  if (!decoder.AddDocuments(text, "fuzz.json").ok()) return 0;
  auto src = decoder.Finish("default");
  if (!src.ok()) return 0;
  (void)decoder.Describe();
  ww::TelemetrySource& source = **src;
  // Drain once for the invariants (a copy of the samples is cheap next to the decode).
  int64_t last_ms = INT64_MIN;
  std::vector<ww::GpuSample> all;
  for (;;) {
    std::vector<ww::GpuSample> batch;
    Check(source.Next(&batch).ok());
    if (batch.empty()) break;
    Check(batch.front().timestamp_ms > last_ms);
    last_ms = batch.front().timestamp_ms;
    for (const auto& s : batch) {
      Check(s.timestamp_ms == last_ms);
      Check(s.key.host < source.hosts().size());
      CheckValue(s.power_w, 0, 5000);
      CheckValue(s.util_gpu_pct, 0, 100);
      CheckValue(s.mem_used_mib, 0, 16.0 * 1024 * 1024);
      CheckValue(s.sm_activity_ratio, 0, 1.05);
    }
    all.insert(all.end(), batch.begin(), batch.end());
  }
  (void)source.warnings();
  (void)source.gpu_labels();
  (void)source.gpus();
  // And triage the same samples: whatever the reader lets through must be safe downstream.
  ww::ingest::PromJsonDecoder again;
  if (!again.AddDocuments(text, "fuzz.json").ok()) std::abort();
  auto src2 = again.Finish("default");
  Check(src2.ok());
  ww::triage::TriageEngine engine;
  if (!ww::triage::RunToEnd(**src2, engine).ok()) return 0;
  auto report = ww::report::MakeReport(engine, (*src2)->hosts(), (*src2)->warnings());
  (void)ww::report::RenderText(report);
  (void)ww::report::RenderJson(report).dump();
  return 0;
}
