// The nvidia-smi reader's rows (nvsmi_source.h): one line of a --query-gpu CSV or dmon log to one
// parsed Row, with the documented skips of malformed rows, cut-off last lines and clock steps.
#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "telemetry/ingest/gpustat.h"
#include "telemetry/ingest/nvsmi_source.h"

namespace ww::ingest::nvsmi {

// Splits a CSV line at its commas into fields_; returns false when the line holds a NUL byte
// (binary data). One pass, 16 bytes at a time where SSE2 is there: a memchr per field cost
// more than the fields themselves at 10^7 rows.
bool NvsmiLogSource::SplitCsv(std::string_view line) {
  fields_.clear();
  const char* const data = line.data();
  const size_t n = line.size();
  size_t field_start = 0;
  size_t i = 0;
#if defined(__SSE2__)
  const __m128i comma = _mm_set1_epi8(',');
  const __m128i zero = _mm_setzero_si128();
  for (; i + 16 <= n; i += 16) {
    const __m128i chunk = _mm_loadu_si128(reinterpret_cast<const __m128i*>(data + i));
    if (_mm_movemask_epi8(_mm_cmpeq_epi8(chunk, zero)) != 0) return false;
    auto mask = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(chunk, comma)));
    while (mask != 0) {
      const size_t at = i + static_cast<size_t>(__builtin_ctz(mask));
      fields_.emplace_back(data + field_start, at - field_start);
      field_start = at + 1;
      mask &= mask - 1;
    }
  }
#endif
  for (; i < n; ++i) {
    if (data[i] == ',') {
      fields_.emplace_back(data + field_start, i - field_start);
      field_start = i + 1;
    } else if (data[i] == '\0') {
      return false;
    }
  }
  fields_.emplace_back(data + field_start, n - field_start);
  return true;
}

bool NvsmiLogSource::EndOfRows() {
  // A malformed row that turned out to be the last one is a log cut off mid-write.
  if (deferred_bad_) {
    warnings_.Add("truncated last line skipped", deferred_bad_->first);
    budget_.UncountRecord();
    deferred_bad_.reset();
  }
  if (!reader_->truncated_note().empty() && !truncated_noted_) {
    truncated_noted_ = true;
    warnings_.Add("compressed stream cut off (read up to the cut)", reader_->truncated_note());
  }
  if (reader_->nul_tail_bytes() > 0 && !nul_tail_noted_) {
    nul_tail_noted_ = true;
    warnings_.Add("NUL bytes at the end skipped", reader_->NulTailNote());
  }
  return false;
}

// Reads and parses the next data row into *out (overwritten); false at the end. Malformed rows
// are skipped here.
Result<bool> NvsmiLogSource::ReadRow(Row* out) {
  std::string_view line;
  bool complete;
  for (;;) {
    auto more = reader_->Next(&line, &complete);
    if (!more.ok()) return more.status();
    if (!*more) return EndOfRows();
    const int64_t n = reader_->line_number();
    std::string_view t = TrimSpace(line);
    if (t.empty()) continue;
    if (deferred_bad_) {
      auto d = std::move(*deferred_bad_);
      deferred_bad_.reset();
      WW_RETURN_IF_ERROR(Bad(d.first, d.second));
    }
    if (t.front() == '#') continue;  // dmon repeats its header; comments
    if (!dmon_ && options_.query.empty() && std::isalpha(static_cast<unsigned char>(t.front()))) {
      // A shell loop around `nvidia-smi --query-gpu=... --format=csv` (no noheader) prints the
      // header before every sample: identical lines are skipped and counted. A header that
      // changes mid-file (another --query-gpu appended) would read columns as the wrong fields.
      if (t == header_text_) {
        if (repeated_headers_++ < 3) repeated_header_lines_.push_back(n);
        continue;
      }
      if (t.find(',') == std::string_view::npos && IsDateLine(t)) {
        ++date_lines_;  // `date` before each sample; the rows carry their own timestamps
        continue;
      }
      // Every data row has digits (its timestamp, its values); a header has none.
      if (std::none_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
          LooksLikeHeaderLine(t)) {
        return Status::InvalidInput(fmt::format(
            "{}:{}: the CSV header changes mid-file: '{}' (line {}: '{}'); split the file "
            "where the --query-gpu changed and give the parts separately",
            reader_->path(), n, Excerpt(t, 100), header_line_, Excerpt(header_text_, 100)));
      }
    }
    const bool text = dmon_ ? line.find('\0') == std::string_view::npos : SplitCsv(line);
    if (!text) {
      return Status::InvalidInput(
          fmt::format("{}:{}: binary data in a telemetry log", reader_->path(), n));
    }
    budget_.CountRecord();
    if (dmon_) fields_ = SplitWhitespace(t);
    if (fields_.size() != columns_.size()) {
      deferred_bad_.emplace(
          fmt::format("line {}: {} fields, header has {}{}", n, fields_.size(), columns_.size(),
                      fields_.size() > columns_.size() ? DecimalCommaHint(line) : ""),
          "row with wrong number of fields skipped");
      continue;
    }
    Row& row = *out;
    row.line = n;
    row.timestamp_ms = 0;
    row.has_time = false;
    row.index.reset();
    row.index_lost = false;
    row.id.clear();
    ResetSample(&row.sample);
    std::string_view id_view;  // the first uuid / bus id field; copied only when needed
    bool row_bad = false;
    std::string bad_msg;
    for (size_t i = 0; i < columns_.size(); ++i) {
      Column& c = columns_[i];
      std::string_view f = fields_[i];
      switch (c.col) {
        case Col::kIgnore:
        case Col::kDate:
        case Col::kTime:
        case Col::kTimestamp:
        case Col::kName:
          break;
        case Col::kIndex: {
          double v;
          const Parse p = ParseSmallUint(f, &v) ? Parse::kOk : ParseNumber(f, &v);
          if (p == Parse::kOk && v >= 0 && v < 4096 && v == std::floor(v)) {
            row.index = static_cast<int>(v);
          } else if (IsGpuLost(f)) {
            // Placed after the previous row (AssignGpu): nvidia-smi writes GPUs in index order.
            row.sample.gpu_lost = true;
            row.index_lost = true;
          } else {
            row_bad = true;
            bad_msg = fmt::format("line {}: {}: '{}' is not a GPU index", n, c.name, TrimSpace(f));
          }
          break;
        }
        case Col::kUuid:
        case Col::kBusId: {
          const std::string_view v = TrimSpace(f);  // once: this runs for every row
          if (v == kGpuIsLost) {
            row.sample.gpu_lost = true;
          } else if (id_view.empty()) {
            id_view = v;
          }
          break;
        }
        case Col::kPstate: {
          std::string_view v = TrimSpace(f);
          if (v.size() >= 2 && (v[0] == 'P' || v[0] == 'p')) {
            int ps = -1;
            auto [ptr, ec] = std::from_chars(v.data() + 1, v.data() + v.size(), ps);
            if (ec == std::errc() && ptr == v.data() + v.size() && ps >= 0 && ps <= 15) {
              row.sample.pstate = ps;
              break;
            }
          }
          if (!(v.empty() || v.front() == '[' || v == "N/A" || v == "-")) {
            row_bad = true;
            bad_msg = fmt::format("line {}: {}: '{}' is not a pstate", n, c.name, v);
          }
          break;
        }
        case Col::kReasonsMask: {
          std::string_view v = TrimSpace(f);
          uint64_t mask = 0;
          if (v.size() > 2 && v[0] == '0' && (v[1] == 'x' || v[1] == 'X')) {
            auto [ptr, ec] = std::from_chars(v.data() + 2, v.data() + v.size(), mask, 16);
            if (ec == std::errc() && ptr == v.data() + v.size()) {
              row.sample.clock_event_reasons = mask;
              break;
            }
          }
          if (!(v.empty() || v.front() == '[' || v == "N/A")) {
            row_bad = true;
            bad_msg = fmt::format("line {}: {}: '{}' is not a hex bitmask", n, c.name, v);
          }
          break;
        }
        case Col::kReasonBit: {
          std::string_view v = TrimSpace(f);
          if (v == "Active") {
            row.sample.clock_event_reasons = row.sample.clock_event_reasons.value_or(0) | c.bit;
          } else if (v == "Not Active") {
            row.sample.clock_event_reasons = row.sample.clock_event_reasons.value_or(0);
          }
          break;
        }
        default: {
          double v;
          Parse p;
          if (c.repeats && c.last_valid && f == c.last_text) {
            v = c.last_value;  // the same text as the row before: the same number
            p = Parse::kOk;
          } else {
            p = c.col == Col::kTemp && ParseSmallUint(f, &v) ? Parse::kOk : ParseNumber(f, &v);
            if (p == Parse::kOk && (v < c.lo || v > c.hi)) p = Parse::kImplausible;
            if (c.repeats && f.size() <= 32) {
              c.last_text.assign(f);
              c.last_valid = p == Parse::kOk;
              c.last_value = v;
            }
          }
          // Triage reads the temperature as supporting evidence only (triage/thermal.h): a cell
          // it cannot use drops that reading, never the row, and is not reported.
          if (p != Parse::kOk && options_.triage_fields_only && c.col == Col::kTemp) break;
          if (p == Parse::kOk) {
            std::optional<double>& field = row.sample.*c.member;
            // enforced.power.limit wins over power.limit when both are logged.
            if (c.col != Col::kPowerLimit || !field.has_value()) field = v;
          } else if (p == Parse::kMissing) {
            if (IsGpuLost(f)) {
              row.sample.gpu_lost = true;
            } else if (options_.triage_fields_only && c.col == Col::kMemTotal) {
              // Read for the board's identity only: its absence costs triage nothing to say.
            } else if (c.absent_rows++ == 0) {
              c.first_absent_line = n;
            }
          } else if (p == Parse::kBad) {
            row_bad = true;
            bad_msg = fmt::format("line {}: {}: '{}' is not a number", n, c.name, TrimSpace(f));
          } else if (p == Parse::kImplausible) {
            row_bad = true;
            bad_msg = fmt::format("line {}: {}: '{}' is out of the plausible range", n, c.name,
                                  TrimSpace(f));
          }
        }
      }
    }
    // The id places a row without an index and names a GPU seen for the first time; a row of a
    // known index needs no copy of it (this runs for every row).
    if (!id_view.empty() && !(row.index && KnownGpu(static_cast<uint16_t>(*row.index)))) {
      row.id = ValidUtf8(id_view);
    }
    // Timestamp.
    if (ts_col_ >= 0) {
      auto t = ts_parser_.Parse(fields_[static_cast<size_t>(ts_col_)]);
      if (!t) {
        deferred_bad_.emplace(fmt::format("line {}: timestamp: '{}' is not a timestamp", n,
                                          TrimSpace(fields_[static_cast<size_t>(ts_col_)])),
                              "row with unparseable timestamp skipped");
        continue;
      }
      row.timestamp_ms = t->unix_ms;
      row.has_time = true;
    } else if (time_col_ >= 0) {
      auto t = ParseDmonTime(date_col_ >= 0 ? fields_[static_cast<size_t>(date_col_)] : "",
                             fields_[static_cast<size_t>(time_col_)]);
      if (!t) {
        WW_RETURN_IF_ERROR(Bad(fmt::format("line {}: time: '{}' is not a time", n,
                                           fields_[static_cast<size_t>(time_col_)]),
                               "row with unparseable timestamp skipped"));
        continue;
      }
      row.timestamp_ms = *t;
      row.has_time = true;
    }
    if (row.has_time && !ApplyClockSteps(&row)) {
      warnings_.Add("row stamped more than a day after the one before skipped (clock jump?)",
                    fmt::format("line {}: {}", n, FormatIsoMs(row.timestamp_ms)));
      continue;
    }
    if (!complete) {
      // A last line without newline whose fields all parsed: keep it only if it is whole.
      if (row_bad) {
        warnings_.Add("truncated last line skipped", fmt::format("line {}", n));
        budget_.UncountRecord();
        continue;
      }
    }
    if (row_bad) {
      WW_RETURN_IF_ERROR(Bad(bad_msg, "malformed value (field left absent)"));
      if (!row.index && index_col_ >= 0) continue;  // can't place the row without its GPU
    }
    if (row.sample.gpu_lost) {
      warnings_.Add("GPU reported lost ([GPU is lost]; readings absent)",
                    fmt::format("line {}", n));
    }
    if (name_col_ >= 0) {
      const std::string_view v = TrimSpace(fields_[static_cast<size_t>(name_col_)]);
      if (v != name_ && !IsGpuLost(v)) name_ = ValidUtf8(v);
    }
    return true;
  }
}

// A clock stepped back (NTP, a DST change logged in local time) makes every later row look
// out of order: all of them would be skipped. A step back of at least clock_step_back_min_ms
// shifts the rest of the log forward instead, to one interval after the newest row, and says
// so. Shorter steps stay skipped rows (jitter). A step forward is a gap for the engine.
// False for a row stamped more than a day after the newest one that no second row confirms (a
// stray clock, a corrupted field: a row stamped 2100): taken, it would make every later row
// "out of order" or, read as the clock stepping back, shift the rest of the log by decades.
// The caller skips it. A second row that agrees with it is a real gap (the logger paused).
bool NvsmiLogSource::ApplyClockSteps(Row* row) {
  row->timestamp_ms += clock_offset_ms_;
  constexpr int64_t kFarAheadMs = 86'400'000;
  if (newest_row_ms_ && row->timestamp_ms - *newest_row_ms_ > kFarAheadMs) {
    const bool confirmed = far_row_ms_ && std::abs(row->timestamp_ms - *far_row_ms_) <= kFarAheadMs;
    if (!confirmed) {
      far_row_ms_ = row->timestamp_ms;
      return false;
    }
  }
  far_row_ms_.reset();
  if (newest_row_ms_) {
    const int64_t d = row->timestamp_ms - *newest_row_ms_;
    if (d >= 10 && d <= 60000) row_step_ms_ = d;
    if (-d >= options_.clock_step_back_min_ms) {
      const int64_t shift = -d + std::max<int64_t>(row_step_ms_, 1);
      clock_offset_ms_ += shift;
      row->timestamp_ms += shift;
      warnings_.Add("clock stepped back; later timestamps shifted forward to keep the log in order",
                    fmt::format("line {}: {:.1f} s back (the rest shifted forward by as much)",
                                row->line, static_cast<double>(shift) / 1000.0));
    }
  }
  newest_row_ms_ = std::max(newest_row_ms_.value_or(INT64_MIN), row->timestamp_ms);
  return true;
}

std::optional<int64_t> NvsmiLogSource::ParseDmonTime(std::string_view date, std::string_view time) {
  std::string text;
  if (!date.empty()) {
    if (date.size() != 8) return std::nullopt;
    text =
        fmt::format("{}-{}-{} {}", date.substr(0, 4), date.substr(4, 2), date.substr(6, 2), time);
  } else {
    text = fmt::format("1970-01-01 {}", time);
  }
  auto t = ParseTimestamp(text);
  if (!t) return std::nullopt;
  int64_t ms = t->unix_ms;
  if (date.empty()) {
    ms += day_offset_ms_;
    if (last_dmon_ms_ && ms < *last_dmon_ms_ - 12 * 3600 * 1000LL) {
      day_offset_ms_ += 86400 * 1000LL;
      ms += 86400 * 1000LL;
    }
    last_dmon_ms_ = ms;
  }
  return ms;
}

Status NvsmiLogSource::Bad(const std::string& message, const std::string& kind) {
  const Status over = budget_.Bad(reader_->path(), message);
  warnings_.Add(kind, message);
  return over;
}

}  // namespace ww::ingest::nvsmi
