#include "triage/run.h"

namespace ww::triage {

Status RunToEnd(TelemetrySource& source, TriageEngine& engine) {
  std::vector<GpuSample> batch;
  bool named = false;
  for (;;) {
    batch.clear();
    Status st = source.Next(&batch);
    if (!st.ok()) return st;
    if (batch.empty()) break;
    if (!named) {
      engine.SetGpuInfo(source.gpus());
      engine.SetHostNames(source.hosts());
      named = true;
    }
    for (const GpuSample& s : batch) engine.Add(s);
  }
  engine.Finish();
  return Status::Ok();
}

}  // namespace ww::triage
