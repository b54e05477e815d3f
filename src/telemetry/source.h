// TelemetrySource: the seam between where GPU readings come from (a log file, NVML, the
// simulator) and everything that consumes them. Production, replay and tests share one interface.
// Ownership: the caller owns the source. Thread-safety: a source is used by one thread at a time.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/sample.h"
#include "core/status.h"

namespace ww {

// How a source is doing, for the watcher's self-metrics (house rule 5). Counters are cumulative
// since the source opened; a source that cannot tell leaves them at 0.
struct SourceHealth {
  uint64_t samples_stale = 0;         // GPU-samples that came back without a fresh reading
  int64_t last_read_latency_us = -1;  // wall time of the last Next(); -1: not measured
  int64_t last_success_unix_ms = 0;   // when a Next() last returned readings; 0: never
};

// Labels a source knows for a GPU beyond GpuInfo: dcgm-exporter's pod, namespace, container,
// hpc_job and hostname, so a fleet view can group GPUs by the job that ran on them.
struct GpuLabels {
  GpuKey key;
  std::map<std::string, std::string> labels;
};

class TelemetrySource {
 public:
  virtual ~TelemetrySource() = default;

  // Appends the next batch of samples (usually one sampling tick) to *out, in nondecreasing
  // timestamp order across calls. Appends nothing once the source is exhausted.
  // A non-ok Status is unusable input or a failed device; the message names file, line and field.
  virtual Status Next(std::vector<GpuSample>* out) = 0;

  // Host names, indexed by GpuKey::host. Stable once the first batch was returned.
  virtual const std::vector<std::string>& hosts() const = 0;

  // What is known about each GPU seen so far (name, uuid); may grow as samples arrive.
  virtual std::vector<GpuInfo> gpus() const { return {}; }

  // Rows or readings skipped so far, with the reasons, for "documented skip" reporting.
  virtual std::vector<std::string> warnings() const { return {}; }

  // Labels per GPU, for sources that have them (dcgm-exporter); may grow as samples arrive.
  virtual std::vector<GpuLabels> gpu_labels() const { return {}; }

  // The source's own health; callers never reach through to a concrete source for it.
  virtual SourceHealth health() const { return {}; }
};

}  // namespace ww
