// The column recognizer of tables whose columns are named by people (custom-csv, wide, W&B CSV
// and JSON lines, whitespace tables): what a header cell means (field, GPU of a wide layout,
// unit and scale), the plausible range of each field, and CSV cell splitting. table_csv.h says
// which names and units are recognized. Pure functions; no thread-safety concerns.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/sample_ranges.h"

namespace ww::ingest {

// The FIELD names --map accepts.
const std::vector<std::string>& MapFieldNames();

// What a column name means: the result of the recognizer, exposed for tests and detection.
struct ColumnMeaning {
  std::string field;     // one of MapFieldNames(), or "" when not recognized
  int gpu = -1;          // wide layout: the GPU this column belongs to
  std::string unit;      // as understood: "W", "%", "MiB", "epoch s", ...
  double scale = 1;      // multiplies a value into the field's unit (GiB -> MiB: 1024)
  bool time_ms = false;  // time: epoch milliseconds by its name (`_ms`)
  std::string bad_unit;  // a bracketed unit that cannot be placed ("power (dBm)"): an error
};
ColumnMeaning RecognizeColumn(std::string_view name, bool wandb);

// The recognizer as the table reader (table_source.h) uses it.
namespace columns {

enum class F : uint8_t {
  kNone,
  kTime,
  kRuntime,
  kGpu,
  kUuid,
  kName,
  kPower,
  kPowerLimit,
  kPowerPct,
  kUtil,
  kMemUtil,
  kMemUsed,
  kMemUsedPct,
  kMemTotal,
  kTemp,
  kSmClock,
  kMemClock,
};

// The --map FIELD name of f ("" for kNone), and back.
const char* FieldName(F f);
F FieldFromName(std::string_view n);

enum class TimeUnit : uint8_t { kAuto, kSec, kMs };

struct Role {
  F f = F::kNone;
  int gpu = -1;
  double scale = 1;
  TimeUnit time_unit = TimeUnit::kAuto;
  std::string unit;
  std::string name;  // header text
  bool mapped = false;
  std::string bad_unit;  // a unit in brackets that cannot be placed ("power (dBm)")
};

// A header cell (quotes and spaces trimmed) as the recognizer reads it; wandb: W&B's keys only.
Role Classify(std::string_view raw_name, bool wandb);
// The plausible values of a field, in its unit.
PlausibleRange RangeFor(F f);
// The fields that make a table worth triaging: power and utilization.
inline bool IsReading(F f) { return f == F::kPower || f == F::kUtil; }
// The delimiter of a CSV header: ',', '\t' or ';' (the most frequent outside quotes).
char PickDelimiter(std::string_view header);
// Quote-aware split (RFC 4180 without embedded newlines); cells keep their quotes, which
// TrimSpaceAndQuotes and ParseNumber drop.
void SplitCells(std::string_view line, char delim, std::vector<std::string_view>* out);
// A column that names one GPU and nothing else: `GPU 0`, `gpu.3`, `gpu_3`, `cuda1`, `device 2`,
// or a bare `3` (pandas pivot on an integer gpu column). Its GPU, or -1. (`Unnamed: 0`, a pandas
// index read back, is not one.)
int BareGpuColumn(std::string_view raw);

}  // namespace columns
}  // namespace ww::ingest
