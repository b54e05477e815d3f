// Writes GpuSamples as an nvidia-smi `--query-gpu=... --format=csv` log: the same header names,
// units and timestamp format that nvidia-smi prints, so wattwatch and everyone else's tools read
// it back. Absent readings are written as "[N/A]", never as 0.
// Ownership: the writer does not own the stream. Thread-safety: one thread at a time.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "core/sample.h"

namespace ww {

enum class NvsmiColumns {
  kFull,     // timestamp, index, name, uuid, power, limit, utils, clocks, temp, memory, pstate
  kMinimal,  // timestamp, power.draw, utilization.gpu, memory.used: no index, like many real logs
};

class NvsmiCsvWriter {
 public:
  NvsmiCsvWriter(std::FILE* out, NvsmiColumns columns) : out_(out), columns_(columns) {}

  void WriteHeader();
  // name and uuid are only written in kFull.
  void WriteRow(const GpuSample& s, const std::string& name, const std::string& uuid);

 private:
  std::FILE* out_;
  NvsmiColumns columns_;
  std::string line_;
};

// "2024/04/05 06:17:19.635": nvidia-smi's timestamp format (no zone).
void AppendNvsmiTimestamp(std::string& out, int64_t unix_ms);

}  // namespace ww
