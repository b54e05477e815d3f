// The nvidia-smi reader's columns: what a `--query-gpu` CSV or `nvidia-smi dmon` column name means
// (Col), where its value goes in a GpuSample and which range is plausible, and the header tests
// that format detection and the reader share. Internal to the nvidia-smi reader (nvsmi_*.cc).
// Pure functions and value types; no thread-safety concerns.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/sample.h"
#include "core/sample_ranges.h"

namespace ww::ingest::nvsmi {

enum class Col : uint8_t {
  kIgnore,
  kTimestamp,
  kDate,  // dmon -o D: YYYYMMDD
  kTime,  // dmon -o T: HH:MM:SS
  kIndex,
  kName,
  kUuid,
  kBusId,
  kPowerAvg,
  kPowerInstant,
  kPowerLimit,
  kEnforcedLimit,
  kUtilGpu,
  kUtilMem,
  kClockSm,
  kClockMem,
  kTemp,
  kMemUsed,
  kMemTotal,
  kPstate,
  kReasonsMask,  // clocks_event_reasons.active as a hex bitmask
  kReasonBit,    // clocks_event_reasons.<name>: "Active" / "Not Active"
};

struct Column {
  Col col = Col::kIgnore;
  uint64_t bit = 0;
  std::string name;  // as written in the header, for messages
  // For plain numeric columns, resolved once from the header: where the value goes and what
  // range is plausible.
  std::optional<double> GpuSample::*member = nullptr;
  double lo = 0, hi = 0;
  // Rows whose value read as not available ([N/A], [Not Supported], -, empty): left absent,
  // counted for the warnings (a documented skip), with the first such line.
  int64_t absent_rows = 0;
  int64_t first_absent_line = 0;
  // Columns that repeat row after row (power.limit, memory.total: one value per board, the same
  // on every GPU of a model) keep their last field's text and what it parsed to, so an identical
  // field is not parsed again (ParseNumber is a pure function of the text). Fields this short only.
  bool repeats = false;
  std::string last_text;
  double last_value = 0;
  bool last_valid = false;  // last_text parsed to a plausible number (last_value)
};

// Maps a --query-gpu / CSV header name (units stripped, lower case) to a column.
Column MapCsvName(std::string_view raw);
// dmon column names (`nvidia-smi dmon -s pucm -o DT`).
Column MapDmonName(std::string_view raw);

// The plausible range of a column's readings (a value outside is a malformed field).
PlausibleRange RangeFor(Col col);
// Where a plain numeric column's value goes; nullptr for the others.
std::optional<double> GpuSample::*MemberFor(Col col);

// A line of column names: at least two fields (and half of them) are nvidia-smi query names.
bool LooksLikeHeaderLine(std::string_view line);

}  // namespace ww::ingest::nvsmi
