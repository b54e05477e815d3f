#include "telemetry/replay/nvsmi_log.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <deque>
#include <map>
#include <optional>
#include <queue>
#include <unordered_map>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "core/sample_ranges.h"
#include "core/strings.h"
#include "core/timefmt.h"
#include "telemetry/ingest/format.h"
#include "telemetry/ingest/gpustat.h"
#include "telemetry/ingest/prom_text.h"
#include "telemetry/ingest/text.h"
#include "telemetry/io/line_reader.h"

namespace ww {
namespace {

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
};

// Text taken from a log (GPU names, uuids, values quoted in warnings, file names) ends up in the
// Names and uuids go into the JSON report, which must be valid UTF-8: ingest::ValidUtf8 turns a
// byte that does not start a well-formed sequence into U+FFFD (one definition for every reader).
using ingest::ValidUtf8;

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  return s;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// NVML clock event reason bits (nvml.h: nvmlClocksEventReason*).
const std::map<std::string, uint64_t, std::less<>>& ReasonBits() {
  static const std::map<std::string, uint64_t, std::less<>> bits = {
      {"gpu_idle", 0x1},
      {"applications_clocks_setting", 0x2},
      {"sw_power_cap", 0x4},
      {"hw_slowdown", 0x8},
      {"sync_boost", 0x10},
      {"sw_thermal_slowdown", 0x20},
      {"hw_thermal_slowdown", 0x40},
      {"hw_power_brake_slowdown", 0x80},
      {"display_clock_setting", 0x100},
  };
  return bits;
}

// Maps a --query-gpu / CSV header name (units stripped, lower case) to a column.
Column MapCsvName(std::string_view raw) {
  Column c;
  c.name = std::string(Trim(raw));
  std::string name = Lower(c.name);
  if (auto bracket = name.find('['); bracket != std::string::npos) name.resize(bracket);
  name = std::string(Trim(name));
  static const std::unordered_map<std::string, Col> kNames = {
      {"timestamp", Col::kTimestamp},
      {"index", Col::kIndex},
      {"name", Col::kName},
      {"gpu_name", Col::kName},
      {"uuid", Col::kUuid},
      {"gpu_uuid", Col::kUuid},
      {"pci.bus_id", Col::kBusId},
      {"gpu_bus_id", Col::kBusId},
      {"power.draw", Col::kPowerAvg},
      {"power.draw.average", Col::kPowerAvg},
      {"power.draw.instant", Col::kPowerInstant},
      {"power.limit", Col::kPowerLimit},
      {"enforced.power.limit", Col::kEnforcedLimit},
      {"power.limit.enforced", Col::kEnforcedLimit},
      {"utilization.gpu", Col::kUtilGpu},
      {"utilization.memory", Col::kUtilMem},
      {"clocks.sm", Col::kClockSm},
      {"clocks.current.sm", Col::kClockSm},
      {"clocks.mem", Col::kClockMem},
      {"clocks.memory", Col::kClockMem},
      {"clocks.current.memory", Col::kClockMem},
      {"temperature.gpu", Col::kTemp},
      {"memory.used", Col::kMemUsed},
      {"memory.total", Col::kMemTotal},
      {"pstate", Col::kPstate},
      {"clocks_event_reasons.active", Col::kReasonsMask},
      {"clocks_throttle_reasons.active", Col::kReasonsMask},
  };
  if (auto it = kNames.find(name); it != kNames.end()) {
    c.col = it->second;
    return c;
  }
  for (std::string_view prefix : {"clocks_event_reasons.", "clocks_throttle_reasons."}) {
    if (name.rfind(prefix, 0) == 0) {
      auto it = ReasonBits().find(std::string_view(name).substr(prefix.size()));
      if (it != ReasonBits().end()) {
        c.col = Col::kReasonBit;
        c.bit = it->second;
      }
    }
  }
  return c;
}

// dmon column names (`nvidia-smi dmon -s pucm -o DT`).
Column MapDmonName(std::string_view raw) {
  Column c;
  c.name = std::string(raw);
  static const std::unordered_map<std::string, Col> kNames = {
      {"date", Col::kDate},    {"time", Col::kTime},    {"gpu", Col::kIndex},
      {"idx", Col::kIndex},    {"pwr", Col::kPowerAvg}, {"gtemp", Col::kTemp},
      {"sm", Col::kUtilGpu},   {"mem", Col::kUtilMem},  {"mclk", Col::kClockMem},
      {"pclk", Col::kClockSm}, {"fb", Col::kMemUsed},
  };
  if (auto it = kNames.find(Lower(raw)); it != kNames.end()) c.col = it->second;
  return c;
}

enum class Parse { kOk, kMissing, kBad, kImplausible };

// A unit after a reading: "W", "MiB", "MHz", "%".
bool IsUnitChar(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '%'; }

// Parses a numeric reading: "547.12 W", "547.12", "91 %", "-5", "1e3", "[N/A]", "-". Every case
// but plain digits with a unit, which ParseNumber reads itself before it falls back to this.
Parse ParseNumberGeneral(std::string_view s, double* out) {
  const char* p = s.data();
  const char* e = p + s.size();
  while (p < e && (*p == ' ' || *p == '\t')) ++p;
  while (e > p && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r')) --e;
  if (p == e || *p == '[') return Parse::kMissing;
  if ((e - p == 1 && *p == '-') || (e - p == 3 && std::string_view(p, 3) == "N/A")) {
    return Parse::kMissing;
  }
  // Strip a trailing unit, then from_chars (signs, exponents, long numbers).
  const char* end = e;
  while (end > p && IsUnitChar(end[-1])) --end;
  while (end > p && end[-1] == ' ') --end;
  if (end == p) return Parse::kBad;
  double v = 0;
  auto [ptr, ec] = std::from_chars(p, end, v);
  if (ec == std::errc::result_out_of_range) return Parse::kImplausible;
  if (ec != std::errc() || ptr != end) return Parse::kBad;
  if (!std::isfinite(v)) return Parse::kImplausible;
  *out = v;
  return Parse::kOk;
}

// A numeric reading. What nearly every field holds (blanks, up to 15 digits with at most one '.',
// blanks, a unit, blanks) is read in one forward pass, exact up to 15 digits; anything else goes
// to ParseNumberGeneral (this runs for every field of every row).
Parse ParseNumber(std::string_view s, double* out) {
  const char* p = s.data();
  const char* const e = p + s.size();
  while (p < e && (*p == ' ' || *p == '\t')) ++p;
  uint64_t mant = 0;
  const char* q = p;
  while (q < e && static_cast<unsigned>(*q - '0') < 10)
    mant = mant * 10 + static_cast<unsigned>(*q++ - '0');
  ptrdiff_t digits = q - p;
  ptrdiff_t frac_digits = 0;
  if (q < e && *q == '.') {
    const char* const f = ++q;
    while (q < e && static_cast<unsigned>(*q - '0') < 10)
      mant = mant * 10 + static_cast<unsigned>(*q++ - '0');
    frac_digits = q - f;
    digits += frac_digits;
  }
  if (digits == 0 || digits > 15) return ParseNumberGeneral(s, out);
  while (q < e && *q == ' ') ++q;
  while (q < e && IsUnitChar(*q)) ++q;
  while (q < e && (*q == ' ' || *q == '\t' || *q == '\r')) ++q;
  if (q != e) return ParseNumberGeneral(s, out);
  static constexpr double kPow10[] = {1,   1e1, 1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                      1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};
  // mant and 10^k are exact, so the quotient is the correctly rounded value (from_chars').
  *out = frac_digits == 0 ? static_cast<double>(mant)
                          : static_cast<double>(mant) / kPow10[frac_digits];
  return Parse::kOk;
}

using Range = PlausibleRange;

Range PlausibleRange(Col col) {
  switch (col) {
    case Col::kPowerAvg:
    case Col::kPowerInstant:
    case Col::kPowerLimit:
    case Col::kEnforcedLimit:
      return kPowerRangeW;
    case Col::kUtilGpu:
    case Col::kUtilMem:
      return kPercentRange;
    case Col::kClockSm:
    case Col::kClockMem:
      return kClockRangeMhz;
    case Col::kTemp:
      return kTemperatureRangeC;
    case Col::kMemUsed:
    case Col::kMemTotal:
      return kMemoryRangeMib;
    default:
      return {-1e300, 1e300};
  }
}

std::optional<double> GpuSample::*MemberFor(Col col) {
  switch (col) {
    case Col::kPowerAvg:
      return &GpuSample::power_w;
    case Col::kPowerInstant:
      return &GpuSample::power_instant_w;
    case Col::kPowerLimit:
      return &GpuSample::power_limit_w;
    case Col::kEnforcedLimit:
      return &GpuSample::power_limit_w;
    case Col::kUtilGpu:
      return &GpuSample::util_gpu_pct;
    case Col::kUtilMem:
      return &GpuSample::util_mem_pct;
    case Col::kClockSm:
      return &GpuSample::sm_clock_mhz;
    case Col::kClockMem:
      return &GpuSample::mem_clock_mhz;
    case Col::kTemp:
      return &GpuSample::temperature_c;
    case Col::kMemUsed:
      return &GpuSample::mem_used_mib;
    case Col::kMemTotal:
      return &GpuSample::mem_total_mib;
    default:
      return nullptr;
  }
}

// Warnings grouped by kind: a count and the first few messages.
class Warnings {
 public:
  void Add(const std::string& kind, std::string message) {
    auto& w = by_kind_[kind];
    if (w.count++ < 3) w.examples.push_back(std::move(message));
  }
  std::vector<std::string> Render() const {
    std::vector<std::string> out;
    for (const auto& [kind, w] : by_kind_) {
      std::string line = fmt::format("{} ({} time{})", kind, w.count, w.count == 1 ? "" : "s");
      for (const auto& e : w.examples) line += "; " + e;
      out.push_back(std::move(line));
    }
    return out;
  }

 private:
  struct Kind {
    int64_t count = 0;
    std::vector<std::string> examples;
  };
  std::map<std::string, Kind> by_kind_;
};

// `[GPU is lost]`: the driver lost the GPU (Xid 79, fell off the bus). Other bracketed values
// (`[N/A]`, `[Not Supported]`, `[Unknown Error]`) leave only that field absent.
constexpr std::string_view kGpuIsLost = "[GPU is lost]";
bool IsGpuLost(std::string_view field) { return Trim(field) == kGpuIsLost; }

struct Row {
  int64_t line = 0;
  int64_t timestamp_ms = 0;
  bool has_time = false;
  std::optional<int> index;
  bool index_lost = false;  // the index field read [GPU is lost]
  std::string id;           // uuid or bus id when there is no index
  GpuSample sample;
};

class NvsmiLogSource final : public TelemetrySource {
 public:
  NvsmiLogSource(std::unique_ptr<LineReader> reader, const std::string& host, uint16_t host_index,
                 ReplayOptions options)
      : reader_(std::move(reader)),
        hosts_{ValidUtf8(host)},
        host_index_(host_index),
        options_(std::move(options)) {}

  Status Init() {
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
      if (Trim(line).empty()) continue;
      if (ingest::IsDateLine(Trim(line))) {
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
    std::string_view t = Trim(line);
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

  Status Next(std::vector<GpuSample>* out) override {
    if (positional_ && !positional_ready_) WW_RETURN_IF_ERROR(CalibratePositional());
    for (;;) {
      // One Row reused for every row (a GpuSample is ~400 bytes: each copy shows at 10^7 rows).
      Row& row = scratch_row_;
      bool have = true;
      if (!lookahead_.empty()) {
        row = std::move(lookahead_.front());
        lookahead_.pop_front();
      } else {
        auto r = ReadRow(&row);
        if (!r.ok()) return r.status();
        have = *r;
      }
      if (!have) {
        if (!pending_tick_.empty()) {
          // The last tick, if short, is dropped like any other in a re-split stretch.
          if (resync_ && position_ != tick_rows_) drop_pending_ = true;
          FlushTick(out);
          if (!out->empty()) return Status::Ok();
        }
        return Finish();
      }
      const bool tick_done = AssignGpu(row);
      if (snapshot_only_ && synthetic_ticks_ > 1) {
        return Status::InvalidInput(fmt::format(
            "{}: no timestamp column and more than one reading per GPU; pass --interval-ms with "
            "the logging interval (one reading per GPU is read as a snapshot)",
            *snapshot_only_));
      }
      if (tick_done && !pending_tick_.empty()) {
        const size_t before = out->size();
        FlushTick(out);
        AcceptIntoTick(row);
        // A dropped tick gave nothing: an empty batch would read as the end of the source.
        if (out->size() > before) return Status::Ok();
        continue;
      }
      AcceptIntoTick(row);
    }
  }

  const std::vector<std::string>& hosts() const override { return hosts_; }
  std::vector<GpuInfo> gpus() const override {
    std::vector<GpuInfo> out;
    for (const auto& [gpu, info] : infos_) out.push_back(info);
    return out;
  }
  std::vector<std::string> warnings() const override {
    auto lines = warnings_.Render();
    if (repeated_headers_ > 0) {
      std::string where;
      for (int64_t l : repeated_header_lines_) where += fmt::format("; line {}", l);
      lines.push_back(fmt::format("skipped {} repeated header line{} (identical to line {}){}",
                                  repeated_headers_, repeated_headers_ == 1 ? "" : "s",
                                  header_line_, where));
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
          Trim(c.name), c.absent_rows, c.absent_rows == 1 ? "" : "s", c.first_absent_line));
    }
    for (auto& l : lines) l = ValidUtf8(fmt::format("{}: {}", reader_->path(), l));
    return lines;
  }

 private:
  static std::vector<std::string_view> SplitWhitespace(std::string_view s) {
    std::vector<std::string_view> out;
    size_t i = 0;
    while (i < s.size()) {
      while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
      size_t j = i;
      while (j < s.size() && s[j] != ' ' && s[j] != '\t') ++j;
      if (j > i) out.push_back(s.substr(i, j - i));
      i = j;
    }
    return out;
  }

  // Splits a CSV line at its commas into fields_; returns false when the line holds a NUL byte
  // (binary data). One pass, 16 bytes at a time where SSE2 is there: a memchr per field cost
  // more than the fields themselves at 10^7 rows.
  bool SplitCsv(std::string_view line) {
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

  Status FinishHeader(int64_t line) {
    for (Column& c : columns_) {
      if (options_.triage_fields_only) {
        switch (c.col) {
          case Col::kClockSm:
          case Col::kClockMem:
          case Col::kTemp:
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
      if (c.member != nullptr && std::find(reset_members_.begin(), reset_members_.end(),
                                           c.member) == reset_members_.end()) {
        reset_members_.push_back(c.member);
      }
      const Range r = PlausibleRange(c.col);
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
      return Status::InvalidInput(fmt::format(
          "{}: not an nvidia-smi log header (expected columns such as timestamp, index, "
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

  bool HasReading() const {
    for (const Column& c : columns_) {
      if (c.col == Col::kPowerAvg || c.col == Col::kPowerInstant || c.col == Col::kUtilGpu) {
        return true;
      }
    }
    return false;
  }

  // Reads and parses the next data row into *out (overwritten); false at the end. Malformed rows
  // are skipped here.
  Result<bool> ReadRow(Row* out) {
    std::string_view line;
    bool complete;
    for (;;) {
      auto r = reader_->Next(&line, &complete);
      if (!r.ok()) return r.status();
      if (!*r) {
        // A malformed row that turned out to be the last one is a log cut off mid-write.
        if (deferred_bad_) {
          warnings_.Add("truncated last line skipped", deferred_bad_->first);
          --data_rows_;
          deferred_bad_.reset();
        }
        if (!reader_->truncated_note().empty() && !truncated_noted_) {
          truncated_noted_ = true;
          warnings_.Add("compressed stream cut off (read up to the cut)",
                        reader_->truncated_note());
        }
        if (reader_->nul_tail_bytes() > 0 && !nul_tail_noted_) {
          nul_tail_noted_ = true;
          warnings_.Add("NUL bytes at the end skipped", reader_->NulTailNote());
        }
        return false;
      }
      const int64_t n = reader_->line_number();
      std::string_view t = Trim(line);
      if (t.empty()) continue;
      if (deferred_bad_) {
        auto d = std::move(*deferred_bad_);
        deferred_bad_.reset();
        WW_RETURN_IF_ERROR(Bad(0, d.first, d.second));
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
        if (t.find(',') == std::string_view::npos && ingest::IsDateLine(t)) {
          ++date_lines_;  // `date` before each sample; the rows carry their own timestamps
          continue;
        }
        // Every data row has digits (its timestamp, its values); a header has none.
        if (std::none_of(t.begin(), t.end(), [](char c) { return c >= '0' && c <= '9'; }) &&
            LooksLikeHeader(t)) {
          return Status::InvalidInput(fmt::format(
              "{}:{}: the CSV header changes mid-file: '{}' (line {}: '{}'); split the file "
              "where the --query-gpu changed and give the parts separately",
              reader_->path(), n, ingest::Excerpt(t, 100), header_line_,
              ingest::Excerpt(header_text_, 100)));
        }
      }
      const bool text = dmon_ ? line.find('\0') == std::string_view::npos : SplitCsv(line);
      if (!text) {
        return Status::InvalidInput(
            fmt::format("{}:{}: binary data in a telemetry log", reader_->path(), n));
      }
      ++data_rows_;
      if (dmon_) fields_ = SplitWhitespace(t);
      if (fields_.size() != columns_.size()) {
        deferred_bad_.emplace(
            fmt::format("line {}: {} fields, header has {}{}", n, fields_.size(), columns_.size(),
                        fields_.size() > columns_.size() ? ingest::DecimalCommaHint(line) : ""),
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
            Parse p = ParseNumber(f, &v);
            if (p == Parse::kOk && v >= 0 && v < 4096 && v == std::floor(v)) {
              row.index = static_cast<int>(v);
            } else if (IsGpuLost(f)) {
              // Placed after the previous row (AssignGpu): nvidia-smi writes GPUs in index order.
              row.sample.gpu_lost = true;
              row.index_lost = true;
            } else {
              row_bad = true;
              bad_msg = fmt::format("line {}: {}: '{}' is not a GPU index", n, c.name, Trim(f));
            }
            break;
          }
          case Col::kUuid:
          case Col::kBusId: {
            const std::string_view v = Trim(f);  // once: this runs for every row
            if (v == kGpuIsLost) {
              row.sample.gpu_lost = true;
            } else if (id_view.empty()) {
              id_view = v;
            }
            break;
          }
          case Col::kPstate: {
            std::string_view v = Trim(f);
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
            std::string_view v = Trim(f);
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
            std::string_view v = Trim(f);
            if (v == "Active") {
              row.sample.clock_event_reasons = row.sample.clock_event_reasons.value_or(0) | c.bit;
            } else if (v == "Not Active") {
              row.sample.clock_event_reasons = row.sample.clock_event_reasons.value_or(0);
            }
            break;
          }
          default: {
            double v;
            Parse p = ParseNumber(f, &v);
            if (p == Parse::kOk && (v < c.lo || v > c.hi)) p = Parse::kImplausible;
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
              bad_msg = fmt::format("line {}: {}: '{}' is not a number", n, c.name, Trim(f));
            } else if (p == Parse::kImplausible) {
              row_bad = true;
              bad_msg = fmt::format("line {}: {}: '{}' is out of the plausible range", n, c.name,
                                    Trim(f));
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
                                            Trim(fields_[static_cast<size_t>(ts_col_)])),
                                "row with unparseable timestamp skipped");
          continue;
        }
        row.timestamp_ms = t->unix_ms;
        row.has_time = true;
      } else if (time_col_ >= 0) {
        auto t = ParseDmonTime(date_col_ >= 0 ? fields_[static_cast<size_t>(date_col_)] : "",
                               fields_[static_cast<size_t>(time_col_)]);
        if (!t) {
          WW_RETURN_IF_ERROR(Bad(n,
                                 fmt::format("line {}: time: '{}' is not a time", n,
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
          --data_rows_;
          continue;
        }
      }
      if (row_bad) {
        WW_RETURN_IF_ERROR(Bad(n, bad_msg, "malformed value (field left absent)"));
        if (!row.index && index_col_ >= 0) continue;  // can't place the row without its GPU
      }
      if (row.sample.gpu_lost) {
        warnings_.Add("GPU reported lost ([GPU is lost]; readings absent)",
                      fmt::format("line {}", n));
      }
      if (name_col_ >= 0) {
        const std::string_view v = Trim(fields_[static_cast<size_t>(name_col_)]);
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
  bool ApplyClockSteps(Row* row) {
    row->timestamp_ms += clock_offset_ms_;
    constexpr int64_t kFarAheadMs = 86'400'000;
    if (newest_row_ms_ && row->timestamp_ms - *newest_row_ms_ > kFarAheadMs) {
      const bool confirmed =
          far_row_ms_ && std::abs(row->timestamp_ms - *far_row_ms_) <= kFarAheadMs;
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
        warnings_.Add(
            "clock stepped back; later timestamps shifted forward to keep the log in order",
            fmt::format("line {}: {:.1f} s back (the rest shifted forward by as much)", row->line,
                        static_cast<double>(shift) / 1000.0));
      }
    }
    newest_row_ms_ = std::max(newest_row_ms_.value_or(INT64_MIN), row->timestamp_ms);
    return true;
  }

  // A line of column names: at least two fields (and half of them) are nvidia-smi query names.
  static bool LooksLikeHeader(std::string_view t) {
    int known = 0, fields = 0;
    size_t pos = 0;
    while (pos <= t.size()) {
      size_t comma = t.find(',', pos);
      if (comma == std::string_view::npos) comma = t.size();
      ++fields;
      if (MapCsvName(t.substr(pos, comma - pos)).col != Col::kIgnore) ++known;
      pos = comma + 1;
    }
    return known >= 2 && known * 2 >= fields;
  }

  std::optional<int64_t> ParseDmonTime(std::string_view date, std::string_view time) {
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

  Status Bad(int64_t line, const std::string& message, const std::string& kind) {
    ++bad_rows_;
    if (!first_bad_) first_bad_ = message;
    warnings_.Add(kind, message);
    const double limit = std::max<double>(
        static_cast<double>(options_.max_bad_rows_floor),
        options_.max_bad_row_fraction * static_cast<double>(std::max<int64_t>(data_rows_, 1000)));
    if (static_cast<double>(bad_rows_) > limit) {
      return Status::InvalidInput(
          fmt::format("{}: too many malformed rows ({} of {} so far); first: {}", reader_->path(),
                      bad_rows_, data_rows_, *first_bad_));
    }
    return Status::Ok();
  }

  Status Finish() {
    const double limit =
        std::max<double>(static_cast<double>(options_.max_bad_rows_floor),
                         options_.max_bad_row_fraction * static_cast<double>(data_rows_));
    if (static_cast<double>(bad_rows_) > limit) {
      return Status::InvalidInput(fmt::format("{}: too many malformed rows ({} of {}); first: {}",
                                              reader_->path(), bad_rows_, data_rows_, *first_bad_));
    }
    if (emitted_ == 0) {
      if (first_bad_) {
        return Status::InvalidInput(
            fmt::format("{}: no usable samples; first problem: {}", reader_->path(), *first_bad_));
      }
      return Status::InvalidInput(
          fmt::format("{}: no data rows after the header", reader_->path()));
    }
    return Status::Ok();
  }

  // Without index/uuid/bus-id columns the GPU is the row's position within its tick. Find how
  // many rows a tick has from the timestamps of the first rows: gaps inside a tick are a few ms,
  // gaps between ticks are about one interval.
  Status CalibratePositional() {
    positional_ready_ = true;
    while (lookahead_.size() < 512) {
      Row row;
      auto r = ReadRow(&row);
      if (!r.ok()) return r.status();
      if (!*r) break;
      lookahead_.push_back(std::move(row));
    }
    if (ts_col_ < 0 && time_col_ < 0) {
      tick_rows_ = 1;  // synthetic time: one GPU per tick unless the log says otherwise
      return Status::Ok();
    }
    std::vector<int64_t> diffs;
    for (size_t i = 1; i < lookahead_.size(); ++i) {
      diffs.push_back(
          std::max<int64_t>(0, lookahead_[i].timestamp_ms - lookahead_[i - 1].timestamp_ms));
    }
    if (diffs.size() < 2) {
      tick_rows_ = std::max<int>(1, static_cast<int>(lookahead_.size()));
      return Status::Ok();
    }
    auto pct = [](std::vector<int64_t> v, double q) {
      std::sort(v.begin(), v.end());
      return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1))];
    };
    double best_score = 0;
    int best_n = 0;
    const int max_n = std::min<int>(64, static_cast<int>(diffs.size() + 1) / 2);
    for (int n = 1; n <= max_n; ++n) {
      std::vector<int64_t> between, within;
      for (size_t i = 0; i < diffs.size(); ++i) {
        ((i + 1) % static_cast<size_t>(n) == 0 ? between : within).push_back(diffs[i]);
      }
      if (between.empty()) continue;
      const double lo_between = static_cast<double>(pct(between, 0.05));
      const double hi_within = within.empty() ? 0.0 : static_cast<double>(pct(within, 0.95));
      const double score = lo_between / (hi_within + 1.0);
      if (score > best_score * 1.5 || (best_n == 0 && score > 0)) {
        best_score = score;
        best_n = n;
        // Halfway (geometrically) between the rows of one tick and the step to the next.
        tick_split_ms_ = std::max<int64_t>(
            1, static_cast<int64_t>(std::sqrt((hi_within + 1.0) * std::max(lo_between, 1.0))));
      }
    }
    if (best_n == 0 || best_score < 3) {
      // Say why when it is the stamps: whole seconds at a sub-second rate (a logger's own
      // strftime, or nvidia-smi's table) put several ticks of rows on one stamp.
      size_t whole = 0, most_on_one = 0, run = 0;
      for (size_t i = 0; i < lookahead_.size(); ++i) {
        if (lookahead_[i].timestamp_ms % 1000 == 0) ++whole;
        run = i > 0 && lookahead_[i].timestamp_ms == lookahead_[i - 1].timestamp_ms ? run + 1 : 1;
        most_on_one = std::max(most_on_one, run);
      }
      const std::string stamps =
          whole == lookahead_.size() && most_on_one > 1
              ? fmt::format(
                    " (the timestamps have whole seconds only and up to {} rows share one, so "
                    "the ticks within a second cannot be told apart)",
                    most_on_one)
              : std::string();
      return Status::InvalidInput(fmt::format(
          "{}: no index, uuid or pci.bus_id column, and the rows do not fall into ticks by "
          "timestamp{}, so GPUs cannot be told apart; log with --query-gpu=timestamp,index,...",
          reader_->path(), stamps));
    }
    tick_rows_ = best_n;
    return Status::Ok();
  }

  // Sets row.sample.key; returns true when this row starts a new tick.
  bool AssignGpu(Row& row) {
    row.sample.key.host = host_index_;
    if (row.index_lost) {
      // The GPU after the previous row's, wrapping after the highest index seen.
      int next = last_row_index_ + 1;
      if (next > max_index_) next = 0;
      row.index = next;
    }
    if (!row.has_time) {
      // Synthetic time: one tick per interval.
      bool new_tick = false;
      if (row.index) {
        new_tick = pending_tick_.empty() ? false : *row.index <= last_index_;
        last_index_ = *row.index;
      } else {
        new_tick = !pending_tick_.empty();
      }
      if (new_tick || synthetic_ticks_ == 0) ++synthetic_ticks_;
      row.timestamp_ms = (synthetic_ticks_ - 1) * options_.interval_ms;
    }
    row.sample.timestamp_ms = row.timestamp_ms;
    if (row.index) {
      last_row_index_ = *row.index;
      max_index_ = std::max(max_index_, *row.index);
      row.sample.key.gpu = static_cast<uint16_t>(*row.index);
      return TickHas(row.sample.key.gpu);
    }
    if (!row.id.empty()) {
      auto [it, inserted] =
          id_to_gpu_.try_emplace(row.id, static_cast<uint16_t>(id_to_gpu_.size()));
      row.sample.key.gpu = it->second;
      return TickHas(row.sample.key.gpu);
    }
    // Positional: nvidia-smi writes every GPU's row each tick, in index order, so rows are
    // counted off in ticks of the size found at the start. (Timestamps alone can't split ticks:
    // nvidia-smi sometimes stalls between two rows of one tick for longer than the interval.)
    const bool has_prev = prev_row_ms_.has_value();
    const bool looks_new =
        row.has_time && has_prev && row.timestamp_ms - *prev_row_ms_ >= tick_split_ms_;
    if (row.has_time) prev_row_ms_ = row.timestamp_ms;
    bool new_tick = false;
    if (!resync_) {
      new_tick = position_ >= tick_rows_;
      // Counting off is right while every tick has tick_rows_ rows. When a GPU's rows go missing,
      // the count runs into the next tick: a counted boundary then falls between rows logged
      // together. Twice in a row is not a stall (one late row): re-split ticks by time.
      if (new_tick && tick_rows_ > 1 && row.has_time && has_prev && !looks_new) {
        // The tick just counted may mix two ticks: dropped rather than put on wrong GPUs (after a
        // stall that ends right before the next tick, one good tick is lost).
        drop_pending_ = true;
        warnings_.Add(
            "tick without one row per GPU skipped (no index column: rows cannot be placed)",
            fmt::format("before line {}: a tick boundary between rows logged together", row.line));
        if (++misaligned_ticks_ >= 2) {
          resync_ = true;
          good_ticks_ = 0;
          warnings_.Add(
              "tick size changed: ticks re-split by timestamp",
              fmt::format("line {}: rows no longer come {} per timestamp", row.line, tick_rows_));
          // What was counted into the open tick mixes two ticks: dropped. This row sits in the
          // middle of a tick by time, so the rest of that tick is dropped too (short).
          drop_pending_ = true;
          position_ = 0;
          row.sample.key.gpu = static_cast<uint16_t>(position_++);
          return true;
        }
      } else if (new_tick) {
        misaligned_ticks_ = 0;
      }
    }
    if (resync_) {
      new_tick = looks_new || !row.has_time;
      if (new_tick) {
        // Positions only name GPUs in a tick with every GPU's row: a shorter or longer one is
        // dropped, since which GPU is missing cannot be told without an index column.
        if (position_ != tick_rows_) {
          drop_pending_ = true;
          warnings_.Add(
              "tick without one row per GPU skipped (no index column: rows cannot be placed)",
              fmt::format("before line {}: {} rows, {} GPUs", row.line, position_, tick_rows_));
          good_ticks_ = 0;
        } else if (++good_ticks_ >= 3) {
          resync_ = false;  // whole ticks again: back to counting (stalls are tolerated there)
          misaligned_ticks_ = 0;
        }
      }
    }
    if (new_tick) position_ = 0;
    row.sample.key.gpu = static_cast<uint16_t>(position_++);
    return new_tick;
  }

  // Clears what ReadRow can set in a sample: the members of the logged columns and the few set
  // by hand. Every other member is never set here, so it stays empty (a whole-sample reset, ~400
  // bytes, was a tenth of the row's cost).
  void ResetSample(GpuSample* s) const {
    for (auto member : reset_members_) (s->*member).reset();
    s->pstate.reset();
    s->clock_event_reasons.reset();
    s->gpu_lost = false;
    s->key = GpuKey{};
    s->timestamp_ms = 0;
  }

  // Whether this GPU has its GpuInfo already (AcceptIntoTick).
  bool KnownGpu(uint16_t gpu) const { return gpu < known_gpu_.size() && known_gpu_[gpu]; }

  bool TickHas(uint16_t gpu) const {
    for (const GpuSample& s : pending_tick_) {
      if (s.key.gpu == gpu) return true;
    }
    return false;
  }

  void AcceptIntoTick(const Row& row) {
    const uint16_t gpu = row.sample.key.gpu;
    if (last_ms_.size() <= gpu) last_ms_.resize(gpu + 1u, INT64_MIN);
    const bool first = !KnownGpu(gpu);
    int64_t& last = last_ms_[gpu];
    if (row.timestamp_ms <= last) {
      warnings_.Add(
          row.timestamp_ms == last ? "duplicate timestamp skipped"
                                   : "out-of-order timestamp skipped",
          fmt::format("line {}: GPU {} at {}", row.line, gpu, FormatIsoMs(row.timestamp_ms)));
      return;
    }
    last = row.timestamp_ms;
    if (first) {
      if (known_gpu_.size() <= gpu) known_gpu_.resize(gpu + 1u, false);
      known_gpu_[gpu] = true;
      GpuInfo info;
      info.key = row.sample.key;
      info.name = ValidUtf8(name_);
      if (uuid_col_ >= 0 || bus_col_ >= 0) info.uuid = ValidUtf8(row.id);
      infos_[gpu] = std::move(info);
    }
    pending_tick_.push_back(row.sample);
  }

  void FlushTick(std::vector<GpuSample>* out) {
    if (drop_pending_) {
      drop_pending_ = false;
      pending_tick_.clear();
      return;
    }
    emitted_ += static_cast<int64_t>(pending_tick_.size());
    if (out->empty()) {
      out->swap(pending_tick_);  // no copy of the tick; pending_tick_ keeps out's buffer
    } else {
      out->insert(out->end(), pending_tick_.begin(), pending_tick_.end());
    }
    pending_tick_.clear();
  }

  std::unique_ptr<LineReader> reader_;
  std::vector<std::string> hosts_;
  uint16_t host_index_;
  ReplayOptions options_;
  std::vector<Column> columns_;
  std::vector<std::string_view> fields_;
  bool dmon_ = false;
  int ts_col_ = -1, date_col_ = -1, time_col_ = -1, index_col_ = -1, uuid_col_ = -1, bus_col_ = -1,
      name_col_ = -1;
  bool positional_ = false;
  bool positional_ready_ = false;
  int tick_rows_ = 1;
  int position_ = 0;
  // Positional logs: a gap between two rows at least this long starts a new tick (from the
  // calibration); the tick-size check and the re-split by time (see AssignGpu).
  int64_t tick_split_ms_ = INT64_MAX;
  std::optional<int64_t> prev_row_ms_;
  int misaligned_ticks_ = 0;
  bool resync_ = false;
  int good_ticks_ = 0;
  bool drop_pending_ = false;
  // Clock steps back: added to every later timestamp so the log stays in order (ReadRow).
  int64_t clock_offset_ms_ = 0;
  std::optional<int64_t> newest_row_ms_;
  int64_t row_step_ms_ = 0;  // the latest row-to-row step of at least 10 ms: about one interval
  int last_index_ = -1;
  int last_row_index_ = -1;  // index of the previous row (a lost index follows it)
  int max_index_ = 0;
  int64_t synthetic_ticks_ = 0;
  // No time column and no --interval-ms: only one reading per GPU is readable (a snapshot); the
  // header's place, for the error when a second comes.
  std::optional<std::string> snapshot_only_;
  // A row stamped more than a day ahead, skipped (ApplyClockSteps), until the next row says
  // whether it was a jump (it agrees) or one bad stamp.
  std::optional<int64_t> far_row_ms_;
  bool truncated_noted_ = false;  // the line reader's truncated_note() is in warnings_
  std::optional<int64_t> last_dmon_ms_;
  int64_t day_offset_ms_ = 0;
  std::deque<Row> lookahead_;
  Row scratch_row_;
  TimestampParser ts_parser_;  // the timestamp column
  std::vector<GpuSample> pending_tick_;
  std::unordered_map<std::string, uint16_t> id_to_gpu_;
  std::vector<int64_t> last_ms_;  // by GPU: its newest accepted timestamp (INT64_MIN: none)
  std::map<uint16_t, GpuInfo> infos_;
  std::vector<bool> known_gpu_;                                    // by GPU: has an entry in infos_
  std::vector<std::optional<double> GpuSample::*> reset_members_;  // ResetSample
  std::string name_;
  std::string header_text_;  // the CSV header line, trimmed: repeats of it are skipped
  int64_t header_line_ = 0;
  int64_t repeated_headers_ = 0;
  int64_t date_lines_ = 0;                      // `date` output between samples, skipped
  std::vector<int64_t> repeated_header_lines_;  // the first three
  Warnings warnings_;
  bool nul_tail_noted_ = false;
  int64_t data_rows_ = 0;
  int64_t bad_rows_ = 0;
  int64_t emitted_ = 0;
  std::optional<std::string> first_bad_;
  // A malformed row held back until we know whether it is the file's last line.
  std::optional<std::pair<std::string, std::string>> deferred_bad_;
};

// Merges several single-host sources into one stream ordered by tick time.
class MergedSource final : public TelemetrySource {
 public:
  explicit MergedSource(std::vector<std::unique_ptr<TelemetrySource>> parts)
      : parts_(std::move(parts)), heads_(parts_.size()) {
    for (const auto& p : parts_) hosts_.push_back(p->hosts().front());
  }

  Status Next(std::vector<GpuSample>* out) override {
    if (!primed_) {
      for (size_t i = 0; i < parts_.size(); ++i) WW_RETURN_IF_ERROR(Refill(i));
      primed_ = true;
    }
    int best = -1;
    for (size_t i = 0; i < heads_.size(); ++i) {
      if (heads_[i].empty()) continue;
      if (best < 0 ||
          heads_[i].front().timestamp_ms < heads_[static_cast<size_t>(best)].front().timestamp_ms) {
        best = static_cast<int>(i);
      }
    }
    if (best < 0) return Status::Ok();
    auto& h = heads_[static_cast<size_t>(best)];
    out->insert(out->end(), h.begin(), h.end());
    return Refill(static_cast<size_t>(best));
  }

  const std::vector<std::string>& hosts() const override { return hosts_; }
  std::vector<GpuInfo> gpus() const override {
    std::vector<GpuInfo> out;
    for (const auto& p : parts_) {
      auto g = p->gpus();
      out.insert(out.end(), g.begin(), g.end());
    }
    return out;
  }
  std::vector<std::string> warnings() const override {
    std::vector<std::string> out;
    for (const auto& p : parts_) {
      auto w = p->warnings();
      out.insert(out.end(), w.begin(), w.end());
    }
    return out;
  }
  std::vector<GpuLabels> gpu_labels() const override {
    std::vector<GpuLabels> out;
    for (const auto& p : parts_) {
      auto l = p->gpu_labels();
      out.insert(out.end(), l.begin(), l.end());
    }
    return out;
  }

 private:
  Status Refill(size_t i) {
    heads_[i].clear();
    return parts_[i]->Next(&heads_[i]);
  }

  std::vector<std::unique_ptr<TelemetrySource>> parts_;
  std::vector<std::vector<GpuSample>> heads_;
  std::vector<std::string> hosts_;
  bool primed_ = false;
};

}  // namespace

std::unique_ptr<TelemetrySource> MergeSources(std::vector<std::unique_ptr<TelemetrySource>> parts) {
  if (parts.size() == 1) return std::move(parts.front());
  return std::make_unique<MergedSource>(std::move(parts));
}

std::string HostNameFromPath(const std::string& path) {
  std::string name = path;
  if (auto slash = name.find_last_of('/'); slash != std::string::npos)
    name = name.substr(slash + 1);
  for (const char* ext : {".gz", ".zst"}) {
    const std::string e(ext);
    if (name.size() > e.size() && name.compare(name.size() - e.size(), e.size(), e) == 0) {
      name.resize(name.size() - e.size());
    }
  }
  if (auto dot = name.find_last_of('.'); dot != std::string::npos && dot > 0) name.resize(dot);
  return name;
}

Result<std::unique_ptr<TelemetrySource>> OpenNvsmiLog(const std::string& path,
                                                      const std::string& host_name,
                                                      uint16_t host_index,
                                                      const ReplayOptions& options) {
  auto reader = LineReader::Open(path);
  if (!reader.ok()) return reader.status();
  auto src = std::make_unique<NvsmiLogSource>(std::move(*reader), host_name, host_index, options);
  WW_RETURN_IF_ERROR(src->Init());
  return std::unique_ptr<TelemetrySource>(std::move(src));
}

bool LooksLikeNvsmiCsvHeader(std::string_view line) {
  const std::string l = AsciiLower(line);
  for (const char* name : {"power.draw", "utilization.gpu", "utilization.memory", "memory.used",
                           "temperature.gpu", "clocks.", "pci.bus_id", "enforced.power.limit",
                           "power.limit", "clocks_event_reasons", "clocks_throttle_reasons"}) {
    if (l.find(name) != std::string::npos) return true;
  }
  return false;
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
    /*opens_path=*/true};
}  // namespace ingest

}  // namespace ww
