// LiveGpuSource: a TelemetrySource that reads this host's GPUs through a vendor library (NVML,
// AMD SMI), with what `devices` and `record` need beyond samples: per-GPU stale/lost status of the
// last tick, which readings each GPU does not support, and which library answered. NvmlSource and
// AmdSmiSource implement it; OpenLiveGpuSource (source_spec.h) picks one.
// Ownership and thread-safety: as TelemetrySource (the caller owns it; one thread at a time).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "telemetry/source.h"

namespace ww {

// What happened to one GPU in the last tick, beyond its readings.
struct LiveGpuStatus {
  bool stale = false;            // a library call missed its deadline; the sample has no readings
  std::string stale_reason;      // e.g. "nvmlDeviceGetPowerUsage did not return within 200 ms"
  bool lost = false;             // the library says the GPU is gone (off the bus); no readings
  std::vector<uint64_t> xids;    // NVIDIA Xid critical errors reported since the previous tick
  int64_t read_latency_us = -1;  // time the worker spent on all calls; -1 when not read
};

enum class FieldSupport : uint8_t {
  kUnknown,      // never answered yet (the GPU was stale, lost, or the read failed)
  kSupported,    // answered at least once
  kUnsupported,  // the library says the device does not support it, or lacks the entry point
};

// GpuSample readings a GPU may not support, as bits, so `record` can write [Not Supported] for
// them rather than a value (house rule 2).
enum SampleFieldBit : uint32_t {
  kSamplePower = 1U << 0,
  kSamplePowerLimit = 1U << 1,
  kSampleUtilGpu = 1U << 2,
  kSampleUtilMem = 1U << 3,
  kSampleSmClock = 1U << 4,
  kSampleMemClock = 1U << 5,
  kSampleTemperature = 1U << 6,
  kSampleMemUsed = 1U << 7,
  kSampleMemTotal = 1U << 8,
  kSamplePstate = 1U << 9,
  kSampleClockEventReasons = 1U << 10,
};

struct LiveBackendInfo {
  std::string backend;          // "NVML", "AMD SMI"
  std::string library;          // the path or name that was dlopen'd
  std::string driver_version;   // empty when the library does not say
  std::string library_version;  // "24.7.0.0" where the library's own version matters; else empty
};

class LiveGpuSource : public TelemetrySource {
 public:
  // Per GPU, for the last Next().
  virtual const std::vector<LiveGpuStatus>& last_status() const = 0;
  // SampleFieldBit mask of the readings this GPU reported as unsupported so far.
  virtual uint32_t unsupported_sample_fields(size_t gpu) const = 0;
  // Per GPU, each field the library can read by its stable short name ("power.draw", ...).
  virtual std::vector<std::pair<std::string, FieldSupport>> field_support(size_t gpu) const = 0;
  // "hopper", "gfx942", ... or "" when not known.
  virtual std::string architecture(size_t gpu) const = 0;
  virtual LiveBackendInfo backend_info() const = 0;
};

}  // namespace ww
