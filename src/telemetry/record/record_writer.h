// RecordWriter: writes live samples as a log other tools read.
//  - CSV: exactly what `nvidia-smi --query-gpu=timestamp,index,name,uuid,power.draw,power.limit,
//    utilization.gpu,utilization.memory,clocks.sm,clocks.mem,temperature.gpu,memory.used,
//    memory.total,pstate,clocks_event_reasons.sw_power_cap --format=csv` prints: same header
//    names, units, local-time timestamps without zone, "[N/A]" for a missing reading,
//    "[Not Supported]" for one the device cannot give, "[GPU is lost]" for a lost GPU.
//  - JSONL: one object per GPU-sample with every field (null when absent), stale/lost flags,
//    the stale reason and Xid events.
// Each tick goes to the file in one write(2), unbuffered, so a kill loses at most the tick in
// flight. With max_size_bytes set, a tick that would grow the file past it first rotates
// FILE -> FILE.1 -> FILE.2 ... (keeping keep_files old files) and starts a new FILE with a header.
//
// Ownership: the writer owns its file descriptor. Thread-safety: one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/sample.h"
#include "core/status.h"

namespace ww::record {

enum class RecordFormat { kCsv, kJsonl };

// Bits of RecordRow::unsupported_mask: the CSV columns a device cannot provide.
enum CsvColumn : uint32_t {
  kColPowerDraw = 1u << 0,
  kColPowerLimit = 1u << 1,
  kColUtilGpu = 1u << 2,
  kColUtilMem = 1u << 3,
  kColSmClock = 1u << 4,
  kColMemClock = 1u << 5,
  kColTemperature = 1u << 6,
  kColMemUsed = 1u << 7,
  kColMemTotal = 1u << 8,
  kColPstate = 1u << 9,
  kColSwPowerCap = 1u << 10,
};

// One GPU in one tick. Pointers are borrowed for the duration of WriteTick.
struct RecordRow {
  const GpuSample* sample = nullptr;
  const GpuInfo* info = nullptr;  // name and uuid; may be null
  std::string_view host;
  uint32_t unsupported_mask = 0;  // CsvColumn bits
  bool stale = false;
  std::string_view stale_reason;
  bool lost = false;
  const std::vector<uint64_t>* xids = nullptr;  // may be null
};

struct RecordWriterOptions {
  std::string path;
  RecordFormat format = RecordFormat::kCsv;
  uint64_t max_size_bytes = 0;  // 0: never rotate
  int keep_files = 5;           // rotated files kept: FILE.1 .. FILE.keep_files
};

class RecordWriter {
 public:
  // Creates (truncates) the file and writes the CSV header. kIoError naming the path on failure.
  static Result<std::unique_ptr<RecordWriter>> Open(const RecordWriterOptions& options);
  ~RecordWriter();
  RecordWriter(const RecordWriter&) = delete;
  RecordWriter& operator=(const RecordWriter&) = delete;

  Status WriteTick(const std::vector<RecordRow>& rows);

  uint64_t current_file_bytes() const { return size_; }
  int rotations() const { return rotations_; }

 private:
  explicit RecordWriter(RecordWriterOptions options) : options_(std::move(options)) {}
  Status OpenFile();
  Status Rotate();
  Status WriteAll(std::string_view data);

  RecordWriterOptions options_;
  int fd_ = -1;
  uint64_t size_ = 0;
  uint64_t header_size_ = 0;
  int rotations_ = 0;
  std::string buf_;
  int64_t cached_second_ = INT64_MIN;
  std::string cached_prefix_;  // "YYYY/MM/DD HH:MM:SS" of cached_second_
};

// The nvidia-smi CSV header line (with newline).
std::string_view NvsmiCsvHeader();
// Appends unix_ms as nvidia-smi does: local time, no zone, "2024/04/05 06:17:19.635".
void AppendLocalNvsmiTimestamp(std::string& out, int64_t unix_ms);

}  // namespace ww::record
