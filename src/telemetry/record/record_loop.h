// The `wattwatch record` loop: every interval, read every GPU through NVML or AMD SMI and write the
// tick to the log (RecordWriter), paced by a live Pacer so a tick that runs late by whole intervals
// skips them and counts them rather than bursting. The CLI binds its flags straight to
// RecordOptions.
//
// Ownership: Record() owns the source and writer it opens; RunRecordLoop borrows them. The clock
// and the stop flag are borrowed and must outlive the call. Thread-safety: one thread; *stop may
// be set from a signal handler.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "core/clock.h"
#include "core/status.h"
#include "telemetry/live_gpu_source.h"
#include "telemetry/nvml/nvml_source.h"
#include "telemetry/record/record_writer.h"

namespace ww::record {

struct RecordOptions {
  RecordWriterOptions writer;    // --out, --format, --keep (max_size_bytes comes from max_size)
  std::string max_size;          // --max-size "64M", "1G", "500K", "1048576"; empty: never rotate
  nvml::NvmlSourceOptions nvml;  // --nvml-lib, --hostname (clock and deadline are set by Record)
  std::string source = "auto";   // --source: auto (NVML, else AMD SMI), nvml, amdsmi
  std::string amdsmi_lib;        // --amdsmi-lib; empty: $WATTWATCH_AMDSMI_LIB, else libamd_smi.so
  int64_t interval_ms = 100;     // --interval-ms
  double duration_s = 0;         // --duration-s; 0: until *stop
  int64_t deadline_ms = 0;       // --deadline-ms per GPU; 0: the interval, within 20..1000 ms
};

struct RecordSummary {
  uint64_t ticks = 0;          // ticks written
  uint64_t dropped_ticks = 0;  // ticks skipped because the one before ran late
  size_t gpus = 0;
  uint64_t stale_samples = 0;  // GPU-samples whose library calls missed the deadline
  // "12 ticks x 2 GPUs to node0.csv (0 stale GPU-samples, 0 ticks skipped)".
  std::string Describe(std::string_view path) const;
};

// Each line the source warns (a stale GPU, an Xid) as it first appears.
using RecordNote = std::function<void(const std::string& line)>;

// "64M", "1G", "500k", "1048576" -> bytes (binary multiples; B, K/KB/KiB, M.., G.. in any case).
// kInvalidInput naming --max-size for anything else, or 0.
Result<uint64_t> ParseSizeBytes(std::string_view text);

// Opens the GPU library (options.source) and the log and runs the loop. kUnavailable when no
// library, driver or GPU can be used;
// kInvalidInput for a bad --max-size; kIoError for an unwritable log.
Result<RecordSummary> Record(const RecordOptions& options, Clock& clock,
                             const std::atomic<int>* stop, const RecordNote& note);

// The loop alone, on an open source and writer: the first tick at once, then one per interval
// until duration_s (the last tick is the one before it) or *stop (seen within 100 ms).
Result<RecordSummary> RunRecordLoop(LiveGpuSource& source, RecordWriter& writer, Clock& clock,
                                    const RecordOptions& options, const std::atomic<int>* stop,
                                    const RecordNote& note);

}  // namespace ww::record
