// `wattwatch check`: the command an on-call engineer runs on a node that looks stuck. It samples
// a source (NVML, a dcgm-exporter URL, or a replayed log for tests) for a fixed time, triages
// what it saw with the same engine as `wattwatch triage`, and returns the report: a confirmed
// hang (the wait lasted hang_confirm_s while sampled), a suspected one (the readings fit a
// collective wait but the sampling was too short to confirm it), none or unknown.
// Ownership: the caller owns the options; the source is opened and closed inside RunCheck.
// Thread-safety: RunCheck is a free function; progress is called on the calling thread.
#pragma once

#include <atomic>
#include <functional>
#include <string>

#include "core/clock.h"
#include "core/status.h"
#include "report/triage_report.h"
#include "telemetry/source_spec.h"
#include "triage/options.h"

namespace ww::report {

struct CheckOptions {
  std::string source = "auto";  // auto, nvml, amdsmi, dcgm-exporter:URL, replay:FILE,..., sim:S
  SourceSpecOptions source_options;
  double seconds = 30;         // how long to sample (replay: how much of the log's own time)
  int64_t interval_ms = 1000;  // live sources: one reading every this often
  triage::TriageOptions triage;
  const std::atomic<int>* stop =
      nullptr;  // nonzero on a signal: stop sampling, judge what was seen
  // Called after each reading of a live source with the seconds left and the GPUs seen.
  std::function<void(double seconds_left, size_t gpus)> progress;
};

// Samples, triages and reports. kInvalidInput / kUnavailable when the source cannot be opened
// or fails; a report with no GPU when the source returned none.
Result<TriageReport> RunCheck(const CheckOptions& options, Clock& clock);

}  // namespace ww::report
