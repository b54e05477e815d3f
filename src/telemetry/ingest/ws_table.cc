// Reads whitespace-separated tables with a header line (ws_table.h): the `table` format and the
// reader behind `llview` (whose columns and registry row are llview.cc).
#include "telemetry/ingest/ws_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <unordered_map>

#include "core/sample_ranges.h"
#include "core/strings.h"
#include "core/timefmt.h"
#include "telemetry/ingest/format.h"
#include "telemetry/ingest/table_columns.h"
#include "telemetry/ingest/ws_columns.h"

namespace ww::ingest {
namespace {

using ws_table::Column;
using ws_table::Kind;
using ws_table::LlviewColumns;

struct FieldTarget {
  std::optional<double> GpuSample::*member;
  double lo, hi;
};
// A --map / custom-csv field name -> where its value goes.
std::optional<FieldTarget> TargetFor(std::string_view field) {
  static const std::map<std::string, FieldTarget, std::less<>> kTargets = {
      {"power", {&GpuSample::power_w, kPowerRangeW.lo, kPowerRangeW.hi}},
      {"power_limit", {&GpuSample::power_limit_w, kPowerRangeW.lo, kPowerRangeW.hi}},
      {"util", {&GpuSample::util_gpu_pct, kPercentRange.lo, kPercentRange.hi}},
      {"mem_util", {&GpuSample::util_mem_pct, kPercentRange.lo, kPercentRange.hi}},
      {"memory_used", {&GpuSample::mem_used_mib, kMemoryRangeMib.lo, kMemoryRangeMib.hi}},
      {"memory_total", {&GpuSample::mem_total_mib, kMemoryRangeMib.lo, kMemoryRangeMib.hi}},
      {"temperature", {&GpuSample::temperature_c, kTemperatureRangeC.lo, kTemperatureRangeC.hi}},
      {"sm_clock", {&GpuSample::sm_clock_mhz, kClockRangeMhz.lo, kClockRangeMhz.hi}},
      {"mem_clock", {&GpuSample::mem_clock_mhz, kClockRangeMhz.lo, kClockRangeMhz.hi}},
  };
  auto it = kTargets.find(field);
  if (it == kTargets.end()) return std::nullopt;
  return it->second;
}

// "jwb0263_00" -> ("jwb0263", 0): the digits after the last '_' or '-'.
bool SplitHostGpu(std::string_view id, std::string_view* host, int* gpu) {
  const size_t at = id.find_last_of("_-");
  if (at == std::string_view::npos || at == 0 || at + 1 >= id.size() || id.size() - at > 5) {
    return false;
  }
  int g = 0;
  for (size_t i = at + 1; i < id.size(); ++i) {
    if (id[i] < '0' || id[i] > '9') return false;
    g = g * 10 + (id[i] - '0');
  }
  if (g >= 4096) return false;
  *host = id.substr(0, at);
  *gpu = g;
  return true;
}

// A line of the table: neither blank nor a comment.
bool IsTableLine(std::string_view line) {
  const std::string_view t = TrimSpace(line);
  return !t.empty() && t.front() != '#';
}

class WsTableSource final : public TelemetrySource {
 public:
  WsTableSource(std::unique_ptr<LineReader> reader, std::string file_host, uint16_t host_index,
                const ReaderOptions& options, bool llview, bool multiple_files)
      : reader_(std::move(reader)),
        file_host_(std::move(file_host)),
        host_index_(host_index),
        options_(options),
        llview_(llview),
        multiple_files_(multiple_files),
        budget_(options.limits, "rows") {}

  Status Init() {
    std::string_view line;
    auto found = NextLineWhere(*reader_, &line, IsTableLine);
    if (!found.ok()) return found.status();
    if (!*found) return Status::InvalidInput(fmt::format("{}: empty file", path()));
    header_line_ = reader_->line_number();
    header_text_ = std::string(TrimSpace(line));
    for (std::string_view tok : SplitWhitespace(header_text_)) {
      WW_RETURN_IF_ERROR(AddColumn(tok));
    }
    WW_RETURN_IF_ERROR(ApplyMap());
    WW_RETURN_IF_ERROR(CheckColumns());
    return FindHosts();
  }

  std::string Describe() const {
    std::string d = llview_ ? "LLview per-GPU table" : "whitespace table";
    std::string read, ignored;
    for (const Column& c : columns_) {
      if (c.kind == Kind::kIgnore) {
        ignored += (ignored.empty() ? "" : " ") + c.name;
        continue;
      }
      read += fmt::format("{}{}{}{}", read.empty() ? "" : " ", c.name,
                          c.unit.empty() ? "" : " [" + c.unit + "]", c.mapped ? " (--map)" : "");
    }
    d += ": " + read;
    if (!ignored.empty()) d += "; not read: " + ignored;
    if (time_col_ < 0) d += fmt::format("; no time column: {} ms apart", options_.interval_ms);
    if (id_col_ >= 0)
      d += fmt::format("; {} host{} from '{}'", hosts_.size(), hosts_.size() == 1 ? "" : "s",
                       columns_[static_cast<size_t>(id_col_)].name);
    return d;
  }

  Status Next(std::vector<GpuSample>* out) override {
    if (finished_) return Status::Ok();
    std::string_view line;
    bool complete;
    for (;;) {
      auto r = reader_->Next(&line, &complete);
      if (!r.ok()) return r.status();
      if (!*r) {
        Flush(out);
        if (!out->empty()) return Status::Ok();
        return Finish();
      }
      const int64_t n = reader_->line_number();
      const std::string_view t = TrimSpace(line);
      if (t.empty() || t.front() == '#') continue;
      if (t.find('\0') != std::string_view::npos) {
        return Status::InvalidInput(fmt::format("{}:{}: binary data in a table", path(), n));
      }
      if (t == header_text_) {
        if (repeated_headers_++ < 3) repeated_lines_.push_back(n);
        continue;
      }
      tokens_ = SplitWhitespace(t);
      if (!tokens_.empty() && LooksLikeOtherHeader()) {
        return Status::InvalidInput(fmt::format(
            "{}:{}: the header changes mid-file ('{}'; line {}: '{}'); split the file where it "
            "changes",
            path(), n, Excerpt(t, 80), header_line_, Excerpt(header_text_, 80)));
      }
      budget_.CountRecord();
      JoinDateTime();
      if (tokens_.size() != columns_.size()) {
        if (!complete) {
          warnings_.Add("truncated last line skipped", fmt::format("line {}", n));
          continue;
        }
        WW_RETURN_IF_ERROR(Bad("row with wrong number of fields skipped",
                               fmt::format("line {}: {} fields, header (line {}) has {}", n,
                                           tokens_.size(), header_line_, columns_.size())));
        continue;
      }
      GpuSample s;
      std::optional<int64_t> ms;
      bool placed = id_col_ < 0 && gpu_col_ < 0;  // one GPU per host and tick otherwise
      bool row_bad = false;
      std::string bad_msg;
      uint16_t host = 0;
      for (size_t i = 0; i < columns_.size(); ++i) {
        const Column& c = columns_[i];
        const std::string_view f = tokens_[i];
        switch (c.kind) {
          case Kind::kIgnore:
            break;
          case Kind::kTime:
            ms = ParseTime(c, f);
            if (!ms) {
              row_bad = true;
              bad_msg = fmt::format("line {}: {}: '{}' is not a time", n, c.name, Excerpt(f, 32));
            }
            break;
          case Kind::kId: {
            std::string_view h;
            int g = 0;
            if (!SplitHostGpu(f, &h, &g)) {
              row_bad = true;
              bad_msg =
                  fmt::format("line {}: {}: '{}' is not <host>_<gpu>", n, c.name, Excerpt(f, 32));
              break;
            }
            auto it = host_ids_.find(h);
            if (it == host_ids_.end()) {
              row_bad = true;
              bad_msg = fmt::format(
                  "line {}: {}: host '{}' was not in the file when it was "
                  "opened",
                  n, c.name, Excerpt(h, 32));
              break;
            }
            host = it->second;
            s.key.gpu = static_cast<uint16_t>(g);
            placed = true;
            break;
          }
          case Kind::kGpu: {
            double v = 0;
            if (ParseNumber(f, &v) != Parse::kOk || v < 0 || v >= 4096 || v != std::floor(v)) {
              row_bad = true;
              bad_msg =
                  fmt::format("line {}: {}: '{}' is not a GPU index", n, c.name, Excerpt(f, 16));
              break;
            }
            s.key.gpu = static_cast<uint16_t>(v);
            placed = true;
            break;
          }
          case Kind::kValue:
          case Kind::kReasons:
          case Kind::kPstate: {
            double v = 0;
            Parse p = ParseNumber(f, &v);
            if (p == Parse::kMissing) break;
            if (p == Parse::kOk) {
              if (c.kind == Kind::kReasons) {
                if (v >= 0 && v < 1e15 && v == std::floor(v)) {
                  s.clock_event_reasons = static_cast<uint64_t>(v);
                  break;
                }
                p = Parse::kImplausible;
              } else if (c.kind == Kind::kPstate) {
                if (v >= 0 && v <= 15 && v == std::floor(v)) {
                  s.pstate = static_cast<int>(v);
                  break;
                }
                p = Parse::kImplausible;
              } else {
                v *= c.scale;
                if (v >= c.lo && v <= c.hi) {
                  s.*c.member = v;
                  break;
                }
                p = Parse::kImplausible;
              }
            }
            row_bad = true;
            bad_msg = fmt::format("line {}: {}: '{}' is {}", n, c.name, Excerpt(f, 24),
                                  p == Parse::kBad ? "not a number" : "out of the plausible range");
            break;
          }
        }
      }
      if (row_bad) {
        if (!complete) {
          warnings_.Add("truncated last line skipped", fmt::format("line {}", n));
          continue;
        }
        WW_RETURN_IF_ERROR(Bad("malformed row skipped", bad_msg));
        continue;
      }
      if (!placed) continue;
      s.key.host = static_cast<uint16_t>(host_base_ + host);
      // Ticks: a new time, or (without times) a GPU seen again.
      bool new_tick = false;
      if (ms) {
        new_tick = !tick_.empty() && *ms != tick_ms_;
      } else {
        for (const auto& [p, l] : tick_) new_tick |= p.key == s.key;
      }
      const bool flushed = new_tick;
      if (new_tick) Flush(out);
      if (tick_.empty()) tick_ms_ = ms ? *ms : synthetic_ticks_++ * options_.interval_ms;
      s.timestamp_ms = tick_ms_;
      tick_.emplace_back(s, n);
      if (flushed && !out->empty()) return Status::Ok();
    }
  }

  const std::vector<std::string>& hosts() const override { return hosts_; }
  std::vector<GpuInfo> gpus() const override {
    std::vector<GpuInfo> out;
    for (const auto& [key, last] : last_ms_) {
      GpuInfo info;
      info.key = GpuKey{static_cast<uint16_t>(key >> 16), static_cast<uint16_t>(key & 0xffff)};
      out.push_back(info);
    }
    return out;
  }
  std::vector<std::string> warnings() const override {
    auto lines = warnings_.Render();
    if (repeated_headers_ > 0) {
      lines.push_back(RepeatedHeadersNote(repeated_headers_, header_line_, repeated_lines_));
    }
    for (auto& l : lines) l = ValidUtf8(fmt::format("{}: {}", path(), l));
    return lines;
  }

 private:
  const std::string& path() const { return reader_->path(); }

  Status AddColumn(std::string_view tok) {
    Column c;
    c.name = std::string(tok);
    const std::string lower = AsciiLower(tok);
    if (!options_.split_id.empty() && AsciiLower(options_.split_id) == lower) {
      c.kind = Kind::kId;
      c.unit = "<host>_<gpu>";
      columns_.push_back(c);
      return Status::Ok();
    }
    if (llview_) {
      auto it = LlviewColumns().find(lower);
      if (it == LlviewColumns().end()) {
        bool mapped = false;
        for (const auto& [field, column] : options_.map) mapped |= AsciiLower(column) == lower;
        if (!mapped) {
          return Status::InvalidInput(fmt::format(
              "{}:{}: column '{}' is not an LLview GPU column wattwatch knows (from LLview's "
              "jobreport_datafiles_gpu.yaml and jureptool plots.yml); read the table with "
              "--format table --map FIELD=COLUMN, or name it with --map",
              path(), reader_->line_number(), Excerpt(tok, 40)));
        }
      } else {
        Column known = it->second;
        known.name = c.name;
        columns_.push_back(known);
        return Status::Ok();
      }
    }
    const ColumnMeaning m = RecognizeColumn(tok, false);
    bool mapped = false;
    for (const auto& [field, column] : options_.map) mapped |= AsciiLower(column) == lower;
    if (!m.bad_unit.empty() && !mapped) {
      return Status::InvalidInput(fmt::format(
          "{}:{}: column '{}': unit '{}' cannot be placed (read as {}); convert the column, or "
          "name it with --map FIELD=COLUMN to read its numbers as they are",
          path(), reader_->line_number(), Excerpt(tok, 60), Excerpt(m.bad_unit, 20), m.field));
    }
    if (m.field == "time") {
      c.kind = Kind::kTime;
      c.time_ms = m.time_ms;
      c.unit = m.unit.empty() ? "ISO 8601 or epoch" : m.unit;
    } else if (m.field == "gpu") {
      c.kind = Kind::kGpu;
    } else if (auto target = TargetFor(m.field)) {
      c.kind = Kind::kValue;
      c.member = target->member;
      c.lo = target->lo;
      c.hi = target->hi;
      c.scale = m.scale;
      c.unit = m.unit;
    }
    columns_.push_back(c);
    return Status::Ok();
  }

  Status ApplyMap() {
    for (const auto& [field, column] : options_.map) {
      // (A named copy: clang before 16 cannot capture a structured binding.)
      const std::string want = AsciiLower(TrimSpace(column));
      auto it = std::find_if(columns_.begin(), columns_.end(),
                             [&](const Column& c) { return AsciiLower(c.name) == want; });
      if (it == columns_.end()) {
        return Status::InvalidInput(fmt::format("{}:{}: --map {}={}: no such column ('{}')", path(),
                                                header_line_, field, column,
                                                Excerpt(header_text_, 100)));
      }
      Column& c = *it;
      const ColumnMeaning guessed = RecognizeColumn(c.name, false);
      c.mapped = true;
      c.scale = guessed.field == field ? guessed.scale : 1;
      c.unit = guessed.field == field ? guessed.unit : "";
      if (field == "time") {
        c.kind = Kind::kTime;
        c.time_ms = guessed.time_ms;
      } else if (field == "gpu") {
        c.kind = Kind::kGpu;
      } else if (auto target = TargetFor(field)) {
        c.kind = Kind::kValue;
        c.member = target->member;
        c.lo = target->lo;
        c.hi = target->hi;
      } else {
        return Status::InvalidInput(fmt::format(
            "--map {}={}: a whitespace table reads time, gpu and the readings (power, util, "
            "mem_util, memory_used, memory_total, temperature, sm_clock, mem_clock, power_limit)",
            field, column));
      }
    }
    return Status::Ok();
  }

  Status CheckColumns() {
    bool reading = false;
    for (size_t i = 0; i < columns_.size(); ++i) {
      const Column& c = columns_[i];
      if (c.kind == Kind::kTime && time_col_ < 0) time_col_ = static_cast<int>(i);
      if (c.kind == Kind::kId && id_col_ < 0) id_col_ = static_cast<int>(i);
      if (c.kind == Kind::kGpu && gpu_col_ < 0) gpu_col_ = static_cast<int>(i);
      reading |= c.member == &GpuSample::power_w || c.member == &GpuSample::util_gpu_pct;
    }
    const std::string where = fmt::format("{}:{}", path(), header_line_);
    if (!reading) {
      return Status::InvalidInput(
          fmt::format("{}: no power or utilization column recognized in '{}'; name them with --map "
                      "power=COLUMN --map util=COLUMN",
                      where, Excerpt(header_text_, 100)));
    }
    if (time_col_ < 0 && options_.interval_ms <= 0) {
      return Status::InvalidInput(fmt::format(
          "{}: no time column recognized; pass --interval-ms with the logging interval, or "
          "--map time=COLUMN",
          where));
    }
    if (!options_.split_id.empty() && id_col_ < 0) {
      return Status::InvalidInput(fmt::format("{}: --split-id {}: no such column ('{}')", where,
                                              options_.split_id, Excerpt(header_text_, 100)));
    }
    return Status::Ok();
  }

  // The hosts of an id column, known before the first sample (the engine names hosts then): a
  // first pass over the file reads the column alone. Standard input cannot be read twice: its
  // hosts are those of its first tick.
  Status FindHosts() {
    if (id_col_ < 0) {
      hosts_ = {ValidUtf8(file_host_)};
      host_base_ = host_index_;
      return Status::Ok();
    }
    std::set<std::string, std::less<>> names;
    auto scan = LineReader::Open(path());
    if (scan.ok() && path() != "-") {
      std::string_view line;
      bool complete;
      const size_t col = static_cast<size_t>(id_col_);
      for (;;) {
        auto r = (*scan)->Next(&line, &complete);
        if (!r.ok() || !*r) break;
        if ((*scan)->line_number() <= header_line_) continue;
        // The id column's token, without splitting the rest of the row.
        size_t i = 0, k = 0;
        std::string_view tok;
        while (i < line.size()) {
          while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
          size_t j = i;
          while (j < line.size() && line[j] != ' ' && line[j] != '\t') ++j;
          if (j > i && k++ == col) {
            tok = line.substr(i, j - i);
            break;
          }
          i = j;
        }
        std::string_view h;
        int g = 0;
        if (!tok.empty() && SplitHostGpu(TrimSpace(tok), &h, &g) && names.find(h) == names.end()) {
          if (names.size() >= 4096) {
            return Status::InvalidInput(fmt::format("{}: more than 4096 hosts", path()));
          }
          names.emplace(h);
        }
      }
    }
    if (names.empty()) {
      return Status::InvalidInput(fmt::format("{}:{}: no row with a '<host>_<gpu>' {} value",
                                              path(), header_line_,
                                              columns_[static_cast<size_t>(id_col_)].name));
    }
    if (names.size() > 1 && (multiple_files_ || host_index_ != 0)) {
      return Status::InvalidInput(
          fmt::format("{}: holds {} hosts of its own (by {}); give it alone", path(), names.size(),
                      columns_[static_cast<size_t>(id_col_)].name));
    }
    host_base_ = names.size() == 1 ? host_index_ : 0;
    for (const auto& n : names) {
      host_ids_.emplace(n, static_cast<uint16_t>(hosts_.size()));
      hosts_.push_back(ValidUtf8(n));
    }
    return Status::Ok();
  }

  // A row of column names that is not the header: no token is a number and two or more name
  // columns this reader knows.
  bool LooksLikeOtherHeader() const {
    if (tokens_.size() < 2 || !std::isalpha(static_cast<unsigned char>(tokens_[0].front()))) {
      return false;
    }
    int known = 0;
    for (std::string_view tok : tokens_) {
      double v = 0;
      if (ParseNumber(tok, &v) == Parse::kOk) return false;
      if (llview_ ? LlviewColumns().count(AsciiLower(tok)) > 0
                  : !RecognizeColumn(tok, false).field.empty()) {
        ++known;
      }
    }
    return known >= 2;
  }

  // "2024-01-01 12:00:00" under one time column is two tokens: joined back.
  void JoinDateTime() {
    if (time_col_ < 0 || tokens_.size() != columns_.size() + 1) return;
    const size_t t = static_cast<size_t>(time_col_);
    if (t + 1 >= tokens_.size()) return;
    const std::string_view d = tokens_[t];
    if (d.size() != 10 || (d[4] != '-' && d[4] != '/') ||
        tokens_[t + 1].find(':') == std::string_view::npos) {
      return;
    }
    tokens_[t] = std::string_view(
        d.data(), static_cast<size_t>(tokens_[t + 1].data() - d.data()) + tokens_[t + 1].size());
    tokens_.erase(tokens_.begin() + static_cast<long>(t) + 1);
  }

  std::optional<int64_t> ParseTime(const Column& c, std::string_view cell) {
    double v = 0;
    if (cell.find(':') == std::string_view::npos && ParseNumber(cell, &v) == Parse::kOk) {
      const bool ms = c.time_ms || std::fabs(v) > 1e11;
      const double out = ms ? v : v * 1000;
      if (!(out > -1e15 && out < 1e15)) return std::nullopt;
      return static_cast<int64_t>(std::llround(out));
    }
    auto t = ParseTimestamp(cell);
    if (!t) return std::nullopt;
    return t->unix_ms;
  }

  Status Bad(const std::string& kind, std::string message) {
    return budget_.Bad(path(), &warnings_, kind, std::move(message));
  }

  void Flush(std::vector<GpuSample>* out) {
    for (const auto& [s, line] : tick_) {
      const uint32_t key = (static_cast<uint32_t>(s.key.host) << 16) | s.key.gpu;
      auto [it, inserted] = last_ms_.try_emplace(key, INT64_MIN);
      if (s.timestamp_ms <= it->second) {
        warnings_.Add(s.timestamp_ms == it->second ? "duplicate timestamp skipped"
                                                   : "out-of-order timestamp skipped",
                      fmt::format("line {}: {} GPU {} at {}", line, hosts_[s.key.host - host_base_],
                                  s.key.gpu, FormatIsoMs(s.timestamp_ms)));
        continue;
      }
      it->second = s.timestamp_ms;
      out->push_back(s);
      ++emitted_;
    }
    tick_.clear();
  }

  Status Finish() {
    finished_ = true;
    return budget_.Finish(path(), emitted_, reader_->line_number());
  }

  std::unique_ptr<LineReader> reader_;
  std::string file_host_;
  uint16_t host_index_;
  ReaderOptions options_;
  bool llview_;
  bool multiple_files_;
  int64_t header_line_ = 0;
  std::string header_text_;
  std::vector<Column> columns_;
  std::vector<std::string_view> tokens_;
  int time_col_ = -1, id_col_ = -1, gpu_col_ = -1;
  std::vector<std::string> hosts_;
  std::map<std::string, uint16_t, std::less<>> host_ids_;
  uint16_t host_base_ = 0;  // added to a host's index here: its GpuKey::host
  std::vector<std::pair<GpuSample, int64_t>> tick_;
  int64_t tick_ms_ = 0;
  int64_t synthetic_ticks_ = 0;
  std::unordered_map<uint32_t, int64_t> last_ms_;
  Warnings warnings_;
  int64_t repeated_headers_ = 0;
  std::vector<int64_t> repeated_lines_;
  MalformedBudget budget_;
  int64_t emitted_ = 0;
  bool finished_ = false;
};

}  // namespace

bool LooksLikeWhitespaceTableHeader(std::string_view line) {
  const std::string_view t = TrimSpace(line);
  // Comments (`# HELP ... Power draw (in W).`), Prometheus samples, JSON, CSV: not a header.
  if (t.empty() || t.front() == '#' || t.find_first_of(",;\t{}=\"") != std::string_view::npos) {
    return false;
  }
  const auto toks = SplitWhitespace(t);
  if (toks.size() < 2) return false;
  bool reading = false;
  for (auto tok : toks) {
    double v = 0;
    if (ParseNumber(tok, &v) == Parse::kOk) return false;
    const std::string f = RecognizeColumn(tok, false).field;
    reading |= f == "power" || f == "util";
  }
  return reading;
}

Result<OpenedFile> OpenWhitespaceTable(std::unique_ptr<LineReader> reader, const std::string& host,
                                       uint16_t host_index, const ReaderOptions& options,
                                       bool llview, bool multiple_files) {
  auto src = std::make_unique<WsTableSource>(std::move(reader), host, host_index, options, llview,
                                             multiple_files);
  WW_RETURN_IF_ERROR(src->Init());
  std::string description = src->Describe();
  return OpenedFileOf(std::move(src), std::move(description));
}

// --format table: forced by --split-id, by --map on a whitespace-only first line, or by a header
// line followed by a row of as many fields.
namespace {
bool WhitespaceOnly(std::string_view t) {
  return t.find_first_of(",;\t") == std::string_view::npos && SplitWhitespace(t).size() >= 2;
}

constexpr DetectRule kTableDetect[] = {
    {60, DetectRule::kLine,
     [](const DetectLine& l) { return l.index == 0 && !l.options.split_id.empty(); }},
    {100, DetectRule::kLine,
     [](const DetectLine& l) {
       return l.index == 0 && !l.options.map.empty() && l.text.front() != '{' &&
              WhitespaceOnly(l.text);
     }},
    // A whitespace table only when the next line has as many fields ("GPU power log" above a CSV
    // is a title, not a header); a date and a time may be two of them.
    {105, DetectRule::kLine,
     [](const DetectLine& l) {
       if (l.index != 1 || !LooksLikeWhitespaceTableHeader(l.first)) return false;
       const size_t header = SplitWhitespace(l.first).size();
       const size_t n = SplitWhitespace(l.text).size();
       return l.text.find(',') == std::string_view::npos && (n == header || n == header + 1);
     }},
};

Result<OpenedFile> OpenTable(const OpenRequest& r, std::unique_ptr<LineReader> lines, bool llview) {
  return OpenWhitespaceTable(std::move(lines), r.host, r.host_index, r.reader, llview,
                             r.options.multiple_files);
}
}  // namespace

extern const Format kTableFormat;
const Format kTableFormat{"table", "whitespace-separated tables (--map, --split-id)", kTableDetect,
                          [](const OpenRequest& r, std::unique_ptr<LineReader> lines) {
                            return OpenTable(r, std::move(lines), /*llview=*/false);
                          }};

}  // namespace ww::ingest
