// OpenSourceSpec: turns a `--source` argument (auto, nvml, amdsmi, dcgm-exporter:URL,
// replay:FILE[,FILE...], sim:SCENARIO) into a TelemetrySource, so every live command (top, watch,
// run) accepts the same sources the same way. Ownership: the caller owns the returned source.
// Thread-safety: a free function.
#pragma once

#include <memory>
#include <string>

#include "core/clock.h"
#include "core/status.h"
#include "telemetry/live_gpu_source.h"
#include "telemetry/nvml/nvml_source.h"
#include "telemetry/source.h"

namespace ww {

struct SourceSpecOptions {
  std::string nvml_lib;            // --nvml-lib; empty: $WATTWATCH_NVML_LIB, else
                                   // libnvidia-ml.so.1
  std::string amdsmi_lib;          // --amdsmi-lib; empty: $WATTWATCH_AMDSMI_LIB, else
                                   // libamd_smi.so
  std::string hostname;            // nvml: the host name its samples carry; empty: gethostname()
  Clock* clock = nullptr;          // nvml: the clock it stamps samples with; nullptr: SystemClock()
  int64_t call_deadline_ms = 500;  // nvml calls; dcgm-exporter: connect + read of one scrape
};

struct OpenedSource {
  std::unique_ptr<TelemetrySource> source;
  // true for nvml and dcgm-exporter: samples are taken now, on a schedule; false for replay/sim:
  // samples carry their own timestamps and are paced by --speed.
  bool live = false;
  // The spec as resolved, for labels: "nvml" or "amdsmi" for auto; else the spec itself.
  std::string label;
  nvml::NvmlSource* nvml = nullptr;  // borrowed from `source` when NVML answered
  LiveGpuSource* gpus = nullptr;     // borrowed from `source` for auto, nvml, amdsmi
};

// This host's GPUs through a vendor library. backend: "nvml", "amdsmi", or "auto": NVML when its
// library loads, else AMD SMI, else ROCm SMI; when none can be used, one kUnavailable message with
// each library's reason. "amdsmi": AMD SMI, else ROCm SMI; "rocm-smi": ROCm SMI only.
// options.library_path is NVML's; amdsmi_lib is AMD SMI's (ROCm SMI's: $WATTWATCH_ROCM_SMI_LIB).
Result<std::unique_ptr<LiveGpuSource>> OpenLiveGpuSource(const std::string& backend,
                                                         const nvml::NvmlSourceOptions& options,
                                                         const std::string& amdsmi_lib);

// kInvalidInput for a malformed spec or an unreadable log (the message names
// what and why); kUnavailable when NVML, its driver or a GPU is missing.
Result<OpenedSource> OpenSourceSpec(const std::string& spec, const SourceSpecOptions& options);

// "nvml, replay:FILE[,FILE...] or sim:SCENARIO" with one line per form, for
// --help texts.
const char* SourceSpecHelp();

}  // namespace ww
