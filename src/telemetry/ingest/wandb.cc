// The wandb format: W&B system metrics as CSV export or JSON lines; how either is recognized,
// which of the two a file is, and the format's registry row. Both are read by the table reader
// (table_csv.cc).
#include <memory>
#include <string_view>
#include <utility>

#include "core/strings.h"
#include "telemetry/ingest/format.h"
#include "telemetry/ingest/table_csv.h"

namespace ww::ingest {

bool LooksLikeWandbCsvHeader(std::string_view line) {
  return line.find("system.gpu.") != std::string_view::npos &&
         (line.find("_timestamp") != std::string_view::npos ||
          line.find("_runtime") != std::string_view::npos);
}

bool LooksLikeWandbJsonLine(std::string_view line) {
  const std::string_view t = TrimSpace(line);
  return !t.empty() && t.front() == '{' && t.find("\"system.gpu.") != std::string_view::npos;
}

namespace {
// --format wandb: a W&B CSV header on the first line or a W&B JSON record anywhere in the first
// lines; JSON lines when the first record is an object, else the CSV export.
constexpr DetectRule kWandbDetect[] = {
    {40, DetectRule::kLine,
     [](const DetectLine& l) { return l.index == 0 && LooksLikeWandbCsvHeader(l.text); }},
    {140, DetectRule::kLine, [](const DetectLine& l) { return LooksLikeWandbJsonLine(l.text); }},
};

Result<OpenedFile> OpenWandb(const OpenRequest& r, std::unique_ptr<LineReader> lines) {
  std::string_view line;
  bool complete;
  bool jsonl = false;
  {
    auto peek = LineReader::Open(r.path);
    if (!peek.ok()) return peek.status();
    for (;;) {
      auto next = (*peek)->Next(&line, &complete);
      if (!next.ok()) return next.status();
      if (!*next) break;
      if (TrimSpace(line).empty()) continue;
      jsonl = TrimSpace(line).front() == '{';
      break;
    }
  }
  return jsonl ? OpenWandbJsonl(std::move(lines), r.host, r.host_index, r.reader)
               : OpenCustomCsv(std::move(lines), r.host, r.host_index, r.reader, true);
}

}  // namespace

extern const Format kWandbFormat;
const Format kWandbFormat{"wandb", "W&B system metrics (CSV or JSON lines)", kWandbDetect,
                          OpenWandb, write::kWandbWriters};

}  // namespace ww::ingest
