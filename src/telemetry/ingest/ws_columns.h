// What a column of a whitespace table holds and how its text becomes a value: the shared shape of
// the table reader's columns (ws_table.cc) and LLview's fixed column table (llview.cc, where each
// meaning and unit comes from: ws_table.h).
// Ownership: LlviewColumns() is a constant with static storage. Thread-safety: immutable.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "core/sample.h"

namespace ww::ingest::ws_table {

enum class Kind : uint8_t { kIgnore, kTime, kId, kGpu, kValue, kReasons, kPstate };

struct Column {
  Kind kind = Kind::kIgnore;
  std::string name;
  std::optional<double> GpuSample::*member = nullptr;
  double scale = 1;
  double lo = 0, hi = 0;
  std::string unit;  // as understood, for the description
  bool time_ms = false;
  bool mapped = false;
};

// LLview's per-GPU job table, by lower-case column name.
const std::map<std::string, Column, std::less<>>& LlviewColumns();

}  // namespace ww::ingest::ws_table
