// The nvidia-smi reader (nvsmi_log.h): its header (the columns a log or --query names), its
// warnings, opening a file, and its row in the format registry (name, detection, open).
#include "telemetry/ingest/nvsmi_log.h"

#include <fmt/format.h>

#include <algorithm>

#include "telemetry/ingest/format.h"
#include "telemetry/ingest/gpustat.h"
#include "telemetry/ingest/nvsmi_source.h"
#include "telemetry/ingest/prom_text.h"

namespace ww {
namespace ingest::nvsmi {

Status NvsmiLogSource::Init() {
  if (!options_.query.empty()) {
    std::string_view q = options_.query;
    size_t pos = 0;
    while (pos <= q.size()) {
      size_t comma = q.find(',', pos);
      if (comma == std::string_view::npos) comma = q.size();
      columns_.push_back(MapCsvName(q.substr(pos, comma - pos)));
      pos = comma + 1;
    }
    return FinishHeader(0);
  }
  // The first non-empty line is the header (after `date` lines: `date; nvidia-smi ...` in a
  // loop).
  std::string_view line;
  bool complete;
  for (;;) {
    auto r = reader_->Next(&line, &complete);
    if (!r.ok()) return r.status();
    if (!*r) return Status::InvalidInput(fmt::format("{}: empty file", reader_->path()));
    if (TrimSpace(line).empty()) continue;
    if (IsDateLine(TrimSpace(line))) {
      ++date_lines_;
      continue;
    }
    break;
  }
  const int64_t n = reader_->line_number();
  if (line.find('\0') != std::string_view::npos) {
    return Status::InvalidInput(
        fmt::format("{}:{}: binary data, not a telemetry log", reader_->path(), n));
  }
  std::string_view t = TrimSpace(line);
  if (!t.empty() && t.front() == '#') {
    dmon_ = true;
    t.remove_prefix(1);
    for (std::string_view tok : SplitWhitespace(t)) columns_.push_back(MapDmonName(tok));
  } else {
    SplitCsv(line);
    for (std::string_view f : fields_) columns_.push_back(MapCsvName(f));
    header_text_ = std::string(t);
    header_line_ = n;
  }
  return FinishHeader(n);
}

Status NvsmiLogSource::FinishHeader(int64_t line) {
  for (Column& c : columns_) {
    if (options_.triage_fields_only) {
      switch (c.col) {
        case Col::kClockSm:
        case Col::kClockMem:
        case Col::kPstate:
        case Col::kReasonsMask:
        case Col::kReasonBit:
          c.col = Col::kIgnore;
          break;
        default:
          break;
      }
    }
    c.member = MemberFor(c.col);
    c.repeats =
        c.col == Col::kPowerLimit || c.col == Col::kEnforcedLimit || c.col == Col::kMemTotal;
    if (c.member != nullptr &&
        std::find(reset_members_.begin(), reset_members_.end(), c.member) == reset_members_.end()) {
      reset_members_.push_back(c.member);
    }
    const PlausibleRange r = RangeFor(c.col);
    c.lo = r.lo;
    c.hi = r.hi;
  }
  int known = 0;
  for (size_t i = 0; i < columns_.size(); ++i) {
    const Column& c = columns_[i];
    if (c.col == Col::kIgnore) continue;
    ++known;
    if (c.col == Col::kTimestamp) ts_col_ = static_cast<int>(i);
    if (c.col == Col::kDate) date_col_ = static_cast<int>(i);
    if (c.col == Col::kTime) time_col_ = static_cast<int>(i);
    if (c.col == Col::kIndex) index_col_ = static_cast<int>(i);
    if (c.col == Col::kUuid) uuid_col_ = static_cast<int>(i);
    if (c.col == Col::kBusId) bus_col_ = static_cast<int>(i);
    if (c.col == Col::kName) name_col_ = static_cast<int>(i);
  }
  const std::string where = options_.query.empty() ? fmt::format("{}:{}", reader_->path(), line)
                                                   : fmt::format("--query '{}'", options_.query);
  if (known == 0 || (ts_col_ < 0 && time_col_ < 0 && index_col_ < 0 && !HasReading())) {
    return Status::InvalidInput(
        fmt::format("{}: not an nvidia-smi log header (expected columns such as timestamp, index, "
                    "power.draw, utilization.gpu; for --format=csv,noheader files pass --query)",
                    where));
  }
  if (!HasReading()) {
    return Status::InvalidInput(
        fmt::format("{}: no power.draw or utilization.gpu column: nothing to triage", where));
  }
  if (ts_col_ < 0 && time_col_ < 0 && options_.interval_ms <= 0) {
    // One reading per GPU (`nvidia-smi --query-gpu=index,... --format=csv` run once, as pasted
    // into a bug report) is a snapshot and needs no clock; more readings need the interval.
    if (index_col_ < 0 && uuid_col_ < 0 && bus_col_ < 0) {
      return Status::InvalidInput(fmt::format(
          "{}: no timestamp column; pass --interval-ms with the logging interval", where));
    }
    snapshot_only_ = where;
  }
  positional_ = index_col_ < 0 && uuid_col_ < 0 && bus_col_ < 0;
  return Status::Ok();
}

bool NvsmiLogSource::HasReading() const {
  for (const Column& c : columns_) {
    if (c.col == Col::kPowerAvg || c.col == Col::kPowerInstant || c.col == Col::kUtilGpu) {
      return true;
    }
  }
  return false;
}

std::vector<GpuInfo> NvsmiLogSource::gpus() const {
  std::vector<GpuInfo> out;
  for (const auto& [gpu, info] : infos_) out.push_back(info);
  return out;
}

std::vector<std::string> NvsmiLogSource::warnings() const {
  auto lines = warnings_.Render();
  if (repeated_headers_ > 0) {
    lines.push_back(RepeatedHeadersNote(repeated_headers_, header_line_, repeated_header_lines_));
  }
  if (date_lines_ > 0) {
    lines.push_back(
        fmt::format("skipped {} date line{} between samples (the rows' own "
                    "timestamps are used)",
                    date_lines_, date_lines_ == 1 ? "" : "s"));
  }
  for (const Column& c : columns_) {
    if (c.absent_rows == 0) continue;
    lines.push_back(fmt::format(
        "{}: not available ([N/A], [Not Supported], - or empty) in {} row{}, left absent; "
        "first at line {}",
        TrimSpace(c.name), c.absent_rows, c.absent_rows == 1 ? "" : "s", c.first_absent_line));
  }
  for (auto& l : lines) l = ValidUtf8(fmt::format("{}: {}", reader_->path(), l));
  return lines;
}

}  // namespace ingest::nvsmi

Result<std::unique_ptr<TelemetrySource>> OpenNvsmiLog(const std::string& path,
                                                      const std::string& host_name,
                                                      uint16_t host_index,
                                                      const ReplayOptions& options) {
  auto reader = LineReader::Open(path);
  if (!reader.ok()) return reader.status();
  auto src = std::make_unique<ingest::nvsmi::NvsmiLogSource>(std::move(*reader), host_name,
                                                             host_index, options);
  WW_RETURN_IF_ERROR(src->Init());
  return std::unique_ptr<TelemetrySource>(std::move(src));
}

namespace ingest {
// --format nvidia-smi: forced by --query; `nvidia-smi dmon`'s commented header; a --query-gpu
// header (without --map) or a headerless row starting with nvidia-smi's timestamp. Binary and
// unreadable files come here too (opens_path): this reader names what is wrong with them.
namespace {
constexpr DetectRule kNvidiaSmiDetect[] = {
    {10, DetectRule::kLine,
     [](const DetectLine& l) { return l.index == 0 && !l.options.replay.query.empty(); }},
    // After dcgmi-dmon's header (20): "# gpu pwr ...", "#Date Time gpu ..." or a commented CSV,
    // but not dcgm-exporter's # HELP / # TYPE lines.
    {30, DetectRule::kLine,
     [](const DetectLine& l) {
       if (l.index != 0 || l.text.front() != '#' || IsPromSampleLine(l.text, "# HELP DCGM") ||
           IsPromSampleLine(l.text, "# TYPE DCGM")) {
         return false;
       }
       const std::string lower = AsciiLower(l.text);
       return lower.find("gpu") != std::string::npos || lower.find("idx") != std::string::npos;
     }},
    {81, DetectRule::kLine,
     [](const DetectLine& l) {
       return l.index == 0 && l.options.map.empty() && LooksLikeNvsmiCsvHeader(l.text);
     }},
    // --format=csv,noheader: the first field is nvidia-smi's timestamp.
    {90, DetectRule::kLine,
     [](const DetectLine& l) {
       if (l.index != 0) return false;
       const size_t comma = l.text.find(',');
       return comma != std::string_view::npos &&
              ParseTimestamp(l.text.substr(0, comma)).has_value();
     }},
};
}  // namespace

extern const Format kNvidiaSmiFormat;
const Format kNvidiaSmiFormat{
    "nvidia-smi",
    "nvidia-smi --query-gpu CSV (header once, before every sample, or none) and nvidia-smi dmon",
    kNvidiaSmiDetect,
    [](const OpenRequest& r, std::unique_ptr<LineReader>) -> Result<OpenedFile> {
      auto src = OpenNvsmiLog(r.path, r.host, r.host_index, r.options.replay);
      if (!src.ok()) return src.status();
      OpenedFile f;
      f.source = std::move(*src);
      f.description = "nvidia-smi log";
      return f;
    },
    write::kNvidiaSmiWriters,
    /*opens_path=*/true};
}  // namespace ingest

}  // namespace ww
