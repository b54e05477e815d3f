// The custom-csv and wide formats: how a home-made CSV header and a one-column-per-GPU frame are
// recognized, and their registry rows. Both are read by the table reader (table_csv.cc).
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "telemetry/ingest/format.h"
#include "telemetry/ingest/table_columns.h"
#include "telemetry/ingest/table_csv.h"

namespace ww::ingest {

using columns::BareGpuColumn;
using columns::Classify;
using columns::F;
using columns::IsReading;
using columns::PickDelimiter;
using columns::Role;
using columns::SplitCells;

bool LooksLikeCustomCsvHeader(std::string_view line) {
  const char d = PickDelimiter(line);
  std::vector<std::string_view> cells;
  SplitCells(line, d, &cells);
  if (cells.size() < 2) return false;
  for (auto c : cells) {
    if (IsReading(Classify(c, false).f)) return true;
  }
  return false;
}

bool LooksLikeWideGpuHeader(std::string_view line) {
  const char d = PickDelimiter(line);
  std::vector<std::string_view> cells;
  SplitCells(line, d, &cells);
  bool time = false, gpu_column = false;
  for (auto c : cells) {
    const Role r = Classify(c, false);
    time |= r.f == F::kTime;
    gpu_column |= r.f == F::kNone && BareGpuColumn(c) >= 0;
  }
  return time && gpu_column;
}

namespace {
// --format custom-csv: an nvidia-smi-like header with --map, --map on a first line that is not
// whitespace-only, or a header naming a power or utilization column (after every rule that
// looks further down the first lines).
constexpr DetectRule kCustomCsvDetect[] = {
    {80, DetectRule::kLine,
     [](const DetectLine& l) {
       return l.index == 0 && !l.options.map.empty() && LooksLikeNvsmiCsvHeader(l.text);
     }},
    // After the table's rule 100, which takes a whitespace-only first line.
    {101, DetectRule::kLine,
     [](const DetectLine& l) {
       return l.index == 0 && !l.options.map.empty() && l.text.front() != '{';
     }},
    {150, DetectRule::kLine,
     [](const DetectLine& l) { return l.index == 0 && LooksLikeCustomCsvHeader(l.text); }},
};

// --format wide: a `,timestamp,GPU 0,GPU 1` or `gpu.3` header.
constexpr DetectRule kWideDetect[] = {
    {70, DetectRule::kLine,
     [](const DetectLine& l) { return l.index == 0 && LooksLikeWideGpuHeader(l.text); }},
};

Result<OpenedFile> OpenCsv(const OpenRequest& r, std::unique_ptr<LineReader> lines) {
  return OpenCustomCsv(std::move(lines), r.host, r.host_index, r.reader, false);
}
}  // namespace

extern const Format kCustomCsvFormat;
const Format kCustomCsvFormat{"custom-csv", "CSVs with a power or utilization column (--map)",
                              kCustomCsvDetect, OpenCsv, write::kCustomCsvWriters};

extern const Format kWideFormat;
const Format kWideFormat{"wide",
                         "one column per GPU (',timestamp,GPU 0,GPU 1', 'gpu.3'; --wide METRIC)",
                         kWideDetect, OpenCsv, write::kWideWriters};

}  // namespace ww::ingest
