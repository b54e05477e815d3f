#include "report/check.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "triage/engine.h"

namespace ww::report {

Result<TriageReport> RunCheck(const CheckOptions& options, Clock& clock) {
  if (!(options.seconds > 0) || options.seconds > 86400) {
    return Status::InvalidInput("--seconds must be in (0, 86400]");
  }
  auto opened = OpenSourceSpec(options.source, options.source_options);
  if (!opened.ok()) return opened.status();
  TelemetrySource& source = *opened->source;
  triage::TriageEngine engine(options.triage);
  const int64_t span_ms = static_cast<int64_t>(std::llround(options.seconds * 1000));
  const int64_t start_ns = clock.NowMonotonicNs();
  const int64_t interval_ns = std::max<int64_t>(options.interval_ms, 1) * 1'000'000;
  int64_t first_sample_ms = INT64_MIN;
  std::vector<GpuSample> batch;
  bool named = false;
  size_t gpus_seen = 0;
  for (int64_t tick = 1;; ++tick) {
    if (options.stop != nullptr && options.stop->load() != 0) break;
    batch.clear();
    Status st = source.Next(&batch);
    if (!st.ok()) return st;
    if (batch.empty() && !opened->live) break;  // the log ended before --seconds
    if (!batch.empty() && !named) {
      engine.SetGpuInfo(source.gpus());
      engine.SetHostNames(source.hosts());
      named = true;
    }
    bool done = false;
    for (const GpuSample& s : batch) {
      if (first_sample_ms == INT64_MIN) first_sample_ms = s.timestamp_ms;
      // Replayed logs carry their own time: --seconds of it, not of the wall clock.
      if (!opened->live && s.timestamp_ms - first_sample_ms > span_ms) {
        done = true;
        break;
      }
      engine.Add(s);
    }
    gpus_seen = std::max(gpus_seen, source.gpus().size());
    if (done) break;
    if (opened->live) {
      const int64_t elapsed_ns = clock.NowMonotonicNs() - start_ns;
      if (options.progress) {
        options.progress(std::max(0.0, options.seconds - static_cast<double>(elapsed_ns) / 1e9),
                         gpus_seen);
      }
      if (elapsed_ns >= span_ms * 1'000'000) break;
      clock.SleepUntilMonotonicNs(start_ns + tick * interval_ns);
    }
  }
  engine.Finish();
  TriageReport r = MakeReport(engine, source.hosts(), source.warnings());
  return r;
}

}  // namespace ww::report
