// `wattwatch devices` as a library: what each GPU NVML sees is, and which fields it can give.
// A model built from an NvmlSource after one read, rendered as text or JSON by pure functions,
// so the command in apps/ only binds flags and prints.
// Value types and free functions. ReadDevicesReport opens NVML (its own source, closed before it
// returns); the rest touches nothing outside its arguments.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "core/sample.h"
#include "core/status.h"
#include "telemetry/live_gpu_source.h"
#include "telemetry/nvml/nvml_source.h"

namespace ww::nvml {

struct DeviceEntry {
  size_t index = 0;
  std::string name, uuid, pci_bus_id;  // empty when NVML did not say
  std::string architecture;            // "hopper", ...; empty when unknown
  std::optional<double> power_limit_w;
  std::optional<double> mem_total_mib;
  // Field names (NvmlFieldName) by what the GPU answered in the read.
  std::vector<std::string> supported, unsupported, unknown;
  bool stale = false;  // its calls missed the deadline: support is not known yet
  std::string stale_reason;
  bool lost = false;
};

struct DevicesReport {
  std::string host;
  std::string driver_version;    // empty when the library did not say
  std::string library_version;   // AMD SMI's "24.7.0.0"; empty for NVML
  std::string backend = "NVML";  // "NVML", "AMD SMI"
  std::string nvml_library;      // the path or name that was dlopen'd (whichever backend's)
  std::vector<DeviceEntry> gpus;
};

// What `wattwatch devices` reads with; its flags bind straight to these fields.
struct DevicesOptions {
  // One read of every field: a longer deadline than sampling's, since nothing waits on it.
  DevicesOptions() { nvml.call_deadline_ms = 2000; }
  NvmlSourceOptions nvml;
  std::string source = "auto";  // --source: auto (NVML, else AMD SMI), nvml, amdsmi
  std::string amdsmi_lib;       // --amdsmi-lib
  bool json = false;
};

// From a source after one Next() (whose samples carry the power limits).
DevicesReport BuildDevicesReport(const LiveGpuSource& source,
                                 const std::vector<GpuSample>& samples);

// Opens the GPU library (options.source), reads every GPU once (which learns what each one
// supports) and builds the report. kUnavailable when there is no library, no driver or no GPU.
Result<DevicesReport> ReadDevicesReport(const DevicesOptions& options);

// One header line, then per GPU its identity line and its supported / unsupported / unknown
// fields (the last two only when non-empty).
std::string RenderDevicesText(const DevicesReport& report);
// One JSON object (2-space indent, trailing newline): host, driver_version, nvml_library, backend,
// library_version, and per
// GPU index, name, uuid, pci_bus_id, architecture, power_limit_w (null when absent), supported,
// unsupported, unknown, stale, lost, and stale_reason when stale.
std::string RenderDevicesJson(const DevicesReport& report);

}  // namespace ww::nvml
