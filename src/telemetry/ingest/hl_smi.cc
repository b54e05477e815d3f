// The hl-smi reader (hl_smi.h) and its row in the format registry.
#include "telemetry/ingest/hl_smi.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <vector>

#include "core/sample_ranges.h"
#include "core/strings.h"
#include "core/timefmt.h"
#include "telemetry/ingest/format.h"
#include "telemetry/ingest/gpustat.h"  // IsDateLine, ParseGpustatHostLine

namespace ww::ingest {
namespace {

enum class HlCol {
  kIgnore,
  kTimestamp,
  kIndex,
  kModuleId,
  kBusId,
  kName,
  kUuid,
  kUtil,
  kPower,
  kPowerLimit,
  kMemUsed,
  kMemTotal,
  kTemp,
};

// A field name as --query-aip takes it or as the header prints it ("power.draw [W]").
HlCol MapHlSmiColumn(std::string_view field) {
  std::string f = AsciiLower(TrimSpace(field));
  if (const size_t b = f.find(" ["); b != std::string::npos) f.resize(b);
  static const std::map<std::string, HlCol, std::less<>> kNames = {
      {"timestamp", HlCol::kTimestamp},
      {"index", HlCol::kIndex},
      {"module_id", HlCol::kModuleId},
      {"bus_id", HlCol::kBusId},
      {"name", HlCol::kName},
      {"uuid", HlCol::kUuid},
      {"utilization.aip", HlCol::kUtil},
      {"power.draw", HlCol::kPower},
      {"power.max", HlCol::kPowerLimit},
      {"power.limit", HlCol::kPowerLimit},
      {"memory.used", HlCol::kMemUsed},
      {"memory.total", HlCol::kMemTotal},
      {"temperature.aip", HlCol::kTemp},
  };
  auto it = kNames.find(f);
  return it == kNames.end() ? HlCol::kIgnore : it->second;
}

// Where a value goes and what it may be.
struct HlTarget {
  std::optional<double> GpuSample::*member;
  PlausibleRange range;
};
std::optional<HlTarget> HlTargetOf(HlCol c) {
  switch (c) {
    case HlCol::kUtil:
      return HlTarget{&GpuSample::util_gpu_pct, kPercentRange};
    case HlCol::kPower:
      return HlTarget{&GpuSample::power_w, kPowerRangeW};
    case HlCol::kPowerLimit:
      return HlTarget{&GpuSample::power_limit_w, kPowerRangeW};
    case HlCol::kMemUsed:
      return HlTarget{&GpuSample::mem_used_mib, kMemoryRangeMib};
    case HlCol::kMemTotal:
      return HlTarget{&GpuSample::mem_total_mib, kMemoryRangeMib};
    case HlCol::kTemp:
      return HlTarget{&GpuSample::temperature_c, kTemperatureRangeC};
    default:
      return std::nullopt;
  }
}

constexpr const char* kMonths[] = {"jan", "feb", "mar", "apr", "may", "jun",
                                   "jul", "aug", "sep", "oct", "nov", "dec"};
constexpr const char* kWeekdays[] = {"sun", "mon", "tue", "wed", "thu", "fri", "sat"};

bool AllDigits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

class HlSmiSource final : public FileSource {
 public:
  HlSmiSource(std::unique_ptr<LineReader> reader, const std::string& host, uint16_t host_index,
              const ReaderOptions& options, std::string query)
      : FileSource(std::move(reader), host, host_index, options.limits),
        options_(options),
        query_(std::move(query)) {}

  Status Init() {
    std::vector<std::string_view> names;
    if (!query_.empty()) {
      names = SplitFields(query_, ',');
      where_ = fmt::format("--query '{}'", query_);
    } else {
      std::string_view line;
      bool complete;
      for (;;) {
        auto r = reader().Next(&line, &complete);
        if (!r.ok()) return r.status();
        if (!*r) return Status::InvalidInput(fmt::format("{}: empty file", path()));
        const std::string_view t = TrimSpace(line);
        if (t.empty()) continue;
        if (IsDateLine(t)) {
          NoteDateLine(t, reader().line_number());
          continue;
        }
        break;
      }
      const int64_t n = reader().line_number();
      if (line.find('\0') != std::string_view::npos) {
        return Status::InvalidInput(
            fmt::format("{}:{}: binary data, not an hl-smi log", path(), n));
      }
      header_text_ = std::string(TrimSpace(line));
      header_line_ = n;
      where_ = Where(n);
      if (!LooksLikeHlSmiHeader(header_text_)) {
        return Status::InvalidInput(fmt::format(
            "{}: not an hl-smi CSV header (a --format=csv,noheader file: pass --format hl-smi "
            "--query with the --query-aip fields, e.g. --query "
            "timestamp,module_id,utilization.aip,power.draw,memory.used)",
            where_));
      }
      names = SplitFields(header_text_, ',');
    }
    for (std::string_view nm : names) {
      columns_.push_back(MapHlSmiColumn(nm));
      column_names_.emplace_back(TrimSpace(nm));
    }
    absent_.assign(columns_.size(), 0);
    for (size_t i = 0; i < columns_.size(); ++i) {
      switch (columns_[i]) {
        case HlCol::kTimestamp:
          ts_col_ = static_cast<int>(i);
          break;
        case HlCol::kIndex:
          index_col_ = static_cast<int>(i);
          break;
        case HlCol::kModuleId:
          if (module_col_ < 0) module_col_ = static_cast<int>(i);
          break;
        case HlCol::kBusId:
          bus_col_ = static_cast<int>(i);
          break;
        case HlCol::kName:
          name_col_ = static_cast<int>(i);
          break;
        case HlCol::kUuid:
          uuid_col_ = static_cast<int>(i);
          break;
        case HlCol::kUtil:
        case HlCol::kPower:
          has_reading_ = true;
          break;
        default:
          break;
      }
    }
    if (!has_reading_) {
      return Status::InvalidInput(
          fmt::format("{}: no power.draw or utilization.aip field: nothing to triage", where_));
    }
    if (ts_col_ < 0 && options_.interval_ms <= 0) {
      return Status::InvalidInput(fmt::format(
          "{}: no timestamp field; pass --interval-ms with hl-smi's -l interval", where_));
    }
    return Status::Ok();
  }

  std::string Describe() const override {
    std::string d = "hl-smi CSV:";
    for (size_t i = 0; i < columns_.size(); ++i) {
      if (columns_[i] != HlCol::kIgnore) d += fmt::format(" {}", column_names_[i]);
    }
    d += device_by_;
    if (!year_how_.empty()) d += fmt::format("; {}", year_how_);
    if (ts_col_ < 0) d += fmt::format("; no timestamps: {} ms apart", options_.interval_ms);
    return d;
  }

 protected:
  Status ReadBatch(std::vector<GpuSample>* out, bool* at_end) override {
    std::string_view raw;
    bool complete;
    for (;;) {
      auto r = reader().Next(&raw, &complete);
      if (!r.ok()) return r.status();
      if (!*r) {
        Flush(out);
        FinishWarnings();
        *at_end = true;
        return Status::Ok();
      }
      const int64_t n = reader().line_number();
      if (raw.find('\0') != std::string_view::npos) {
        return Status::InvalidInput(fmt::format("{}: binary data in an hl-smi log", Where(n)));
      }
      const std::string_view t = TrimSpace(raw);
      if (t.empty()) continue;
      if (!header_text_.empty() && t == header_text_) {
        Skip("repeated header lines skipped", fmt::format("line {}", n));
        continue;
      }
      if (IsDateLine(t)) {
        NoteDateLine(t, n);
        continue;
      }
      CountRecord();
      const auto fields = SplitFields(t, ',');
      if (fields.size() != columns_.size()) {
        if (!complete) {
          Skip("truncated last line skipped", fmt::format("line {}", n));
          continue;
        }
        WW_RETURN_IF_ERROR(Bad("rows with the wrong number of fields skipped",
                               fmt::format("line {}: {} fields, the header has {}", n,
                                           fields.size(), columns_.size())));
        continue;
      }
      GpuSample s;
      // The time.
      int64_t ms = 0;
      if (ts_col_ >= 0) {
        auto when = RowTime(fields[ts_col_], n);
        if (!when.ok()) return when.status();
        if (!*when) {
          WW_RETURN_IF_ERROR(Bad("rows with an unreadable timestamp skipped",
                                 fmt::format("line {}: '{}'", n, Excerpt(fields[ts_col_], 40))));
          continue;
        }
        ms = **when;
      }
      // The device.
      std::optional<int> gpu = DeviceOf(fields);
      if (!gpu) {
        WW_RETURN_IF_ERROR(
            Bad("rows with an unreadable device skipped", fmt::format("line {}", n)));
        continue;
      }
      bool bad = false;
      for (size_t i = 0; i < columns_.size() && !bad; ++i) {
        const auto target = HlTargetOf(columns_[i]);
        if (!target) continue;
        double v = 0;
        switch (ParseNumber(fields[i], &v)) {
          case Parse::kMissing:
            if (absent_[i]++ == 0) first_absent_line_[i] = n;
            break;
          case Parse::kOk:
            if (v >= target->range.lo && v <= target->range.hi) {
              s.*(target->member) = v;
              break;
            }
            [[fallthrough]];
          default:
            WW_RETURN_IF_ERROR(Bad("rows with a value that is not a plausible number skipped",
                                   fmt::format("line {}: {} '{}'", n, column_names_[i],
                                               Excerpt(TrimSpace(fields[i]), 24))));
            bad = true;
        }
      }
      if (bad) continue;
      // A new tick: another time, or a device seen again (no timestamps).
      const bool new_tick =
          !tick_.empty() &&
          (ts_col_ >= 0 ? ms != tick_ms_
                        : std::any_of(tick_.begin(), tick_.end(),
                                      [&](const GpuSample& x) { return x.key.gpu == *gpu; }));
      bool flushed = false;
      if (new_tick) {
        Flush(out);
        flushed = true;
      }
      if (tick_.empty()) {
        tick_ms_ = ts_col_ >= 0 ? ms : ticks_ * options_.interval_ms;
        ++ticks_;
      }
      s.key = GpuKey{host_index(), static_cast<uint16_t>(*gpu)};
      s.timestamp_ms = tick_ms_;
      if (name_col_ >= 0 || uuid_col_ >= 0) {
        GpuInfo& info = Info(s.key.gpu);
        if (info.name.empty() && name_col_ >= 0) {
          info.name = ValidUtf8(TrimSpace(fields[name_col_]));
        }
        if (info.uuid.empty() && uuid_col_ >= 0) {
          info.uuid = ValidUtf8(TrimSpace(fields[uuid_col_]));
        }
      }
      tick_.push_back(s);
      lines_.push_back(n);
      if (flushed) return Status::Ok();
    }
  }

 private:
  // A `date` line of the logging loop: its full date gives the year.
  void NoteDateLine(std::string_view t, int64_t line) {
    if (file_year_ > 0) return;
    if (auto ms = ParseGpustatHostLine(t)) {
      file_year_ = YearOf(*ms);
      file_year_from_ = fmt::format("the date line at line {}", line);
    }
  }

  static int YearOf(int64_t unix_ms) {
    const std::string iso = FormatIsoMs(unix_ms);
    return std::stoi(iso.substr(0, 4));
  }

  // The row's time; nullopt: unreadable (a documented skip); an error: the year is unknowable.
  Result<std::optional<int64_t>> RowTime(std::string_view text, int64_t line) {
    const auto t = ParseHlSmiTime(text);
    if (!t) return std::optional<int64_t>();
    int year = 0;
    if (t->year_text.size() == 4) {
      year = std::stoi(t->year_text);
      if (file_year_ == 0) {
        file_year_ = year;
        file_year_from_ = fmt::format("the full date at line {}", line);
      }
    } else {
      if (year_ == 0) WW_RETURN_IF_ERROR(ResolveYear(*t, line));
      year = year_;
      // A log running over New Year: hl-smi's cut year cannot say so; the month does.
      if (t->month < last_month_ && last_month_ == 12 && t->month == 1) ++year_;
      year = year_;
    }
    last_month_ = t->month;
    if (!t->zone.empty() && t->zone != "UTC" && t->zone != "GMT" && zone_note_.empty()) {
      zone_note_ = t->zone;
    }
    auto p = ParseTimestamp(fmt::format("{:04d}-{:02d}-{:02d} {:02d}:{:02d}:{:02d}", year, t->month,
                                        t->day, t->hour, t->minute, t->second));
    if (!p) return std::optional<int64_t>();
    return std::optional<int64_t>(p->unix_ms);
  }

  Status ResolveYear(const HlSmiTime& t, int64_t line) {
    const std::string cut = t.year_text.empty() ? "" : fmt::format("'{}'", t.year_text);
    auto fits = [&](int y) {
      return t.year_text.empty() || std::to_string(y).rfind(t.year_text, 0) == 0;
    };
    if (file_year_ > 0 && fits(file_year_)) {
      year_ = file_year_;
      year_how_ = fmt::format("year {} from {}", year_, file_year_from_);
    } else if (options_.year > 0) {
      year_ = options_.year;
      year_how_ = fmt::format("year {} from --year", year_);
      if (WeekdayOf(year_, t.month, t.day) != t.weekday) {
        year_how_ += fmt::format(" (the weekday at line {} does not fit it)", line);
      }
    } else {
      // The years the cut text allows (a decade for "202"), and which of them the weekday fits.
      std::vector<int> candidates;
      if (t.year_text.size() == 3) {
        const int decade = std::stoi(t.year_text) * 10;
        for (int y = decade; y < decade + 10; ++y) {
          if (y >= 1970 && WeekdayOf(y, t.month, t.day) == t.weekday) candidates.push_back(y);
        }
      }
      if (candidates.size() != 1) {
        std::string list;
        for (int y : candidates) list += fmt::format("{}{}", list.empty() ? "" : ", ", y);
        return Status::InvalidInput(fmt::format(
            "{}: hl-smi cut the timestamp's year{}{} and the file has no full date{}: pass --year "
            "YYYY",
            Where(line), cut.empty() ? "" : " to ", cut,
            candidates.empty() ? "" : fmt::format(" (the weekday fits {})", list)));
      }
      year_ = candidates.front();
      year_how_ = fmt::format("year {} from the weekday of line {} (the only year of {}x it fits)",
                              year_, line, t.year_text);
    }
    return Status::Ok();
  }

  std::optional<int> DeviceOf(const std::vector<std::string_view>& fields) {
    auto number = [&](int col) -> std::optional<int> {
      const std::string_view v = TrimSpace(fields[col]);
      if (!AllDigits(v) || v.size() > 4) return std::nullopt;
      const int i = std::stoi(std::string(v));
      return i < 4096 ? std::optional<int>(i) : std::nullopt;
    };
    if (index_col_ >= 0) {
      device_by_ = "; devices by index";
      return number(index_col_);
    }
    if (module_col_ >= 0) {
      device_by_ = "; devices by module_id";
      return number(module_col_);
    }
    if (bus_col_ >= 0) {
      device_by_ = "; devices by bus_id, in order of appearance";
      const std::string bus(TrimSpace(fields[bus_col_]));
      if (bus.empty()) return std::nullopt;
      auto [it, added] = bus_ids_.emplace(bus, static_cast<int>(bus_ids_.size()));
      return it->second < 4096 ? std::optional<int>(it->second) : std::nullopt;
    }
    device_by_ = "; devices by their place in each poll";
    return static_cast<int>(tick_.size());
  }

  void Flush(std::vector<GpuSample>* out) { AcceptTick(&tick_, lines_, out), lines_.clear(); }

  void FinishWarnings() {
    if (!year_how_.empty()) {
      Skip("timestamps with hl-smi's cut year", fmt::format("read with the {}", year_how_));
    }
    if (!zone_note_.empty()) {
      Skip("timestamps in a zone other than UTC",
           fmt::format("'{}' read as printed, not converted", zone_note_));
    }
    for (size_t i = 0; i < columns_.size(); ++i) {
      if (absent_[i] == 0) continue;
      Skip(fmt::format("{}: not available (N/A or empty), left absent", column_names_[i]),
           fmt::format("{} row{}, first at line {}", absent_[i], absent_[i] == 1 ? "" : "s",
                       first_absent_line_[i]));
    }
  }

  ReaderOptions options_;
  std::string query_;
  std::string where_;
  std::string header_text_;
  int64_t header_line_ = 0;
  std::vector<HlCol> columns_;
  std::vector<std::string> column_names_;
  std::vector<int64_t> absent_;
  std::map<size_t, int64_t> first_absent_line_;
  int ts_col_ = -1, index_col_ = -1, module_col_ = -1, bus_col_ = -1, name_col_ = -1,
      uuid_col_ = -1;
  bool has_reading_ = false;
  std::map<std::string, int> bus_ids_;
  std::string device_by_;
  // The year: the file's own (a date line, a full date), the one used, and how it was found.
  int file_year_ = 0;
  std::string file_year_from_;
  int year_ = 0;
  int last_month_ = 0;
  std::string year_how_;
  std::string zone_note_;
  std::vector<GpuSample> tick_;
  std::vector<int64_t> lines_;
  int64_t tick_ms_ = 0;
  int64_t ticks_ = 0;
};

}  // namespace

int WeekdayOf(int year, int month, int day) {
  // Days since 1970-01-01 (a Thursday), by Howard Hinnant's days_from_civil.
  year -= month <= 2 ? 1 : 0;
  const int era = (year >= 0 ? year : year - 399) / 400;
  const int yoe = year - era * 400;
  const int doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1;
  const int doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  const int64_t days = static_cast<int64_t>(era) * 146097 + doe - 719468;
  return static_cast<int>(((days % 7) + 7 + 4) % 7);
}

std::optional<HlSmiTime> ParseHlSmiTime(std::string_view text) {
  const auto toks = SplitWhitespace(TrimSpace(text));
  if (toks.size() < 4 || toks.size() > 6) return std::nullopt;
  HlSmiTime t;
  const std::string wd = AsciiLower(toks[0]);
  const std::string mon = AsciiLower(toks[1]);
  t.weekday = -1;
  for (int i = 0; i < 7; ++i) {
    if (wd == kWeekdays[i]) t.weekday = i;
  }
  for (int i = 0; i < 12; ++i) {
    if (mon == kMonths[i]) t.month = i + 1;
  }
  if (t.weekday < 0 || t.month == 0 || !AllDigits(toks[2]) || toks[2].size() > 2) {
    return std::nullopt;
  }
  t.day = std::stoi(std::string(toks[2]));
  int consumed = 0;
  if (std::sscanf(std::string(toks[3]).c_str(), "%2d:%2d:%2d%n", &t.hour, &t.minute, &t.second,
                  &consumed) != 3 ||
      consumed != static_cast<int>(toks[3].size())) {
    return std::nullopt;
  }
  if (t.day < 1 || t.day > 31 || t.hour > 23 || t.minute > 59 || t.second > 60 || t.hour < 0 ||
      t.minute < 0 || t.second < 0) {
    return std::nullopt;
  }
  for (size_t i = 4; i < toks.size(); ++i) {
    if (AllDigits(toks[i])) {
      if (i + 1 != toks.size() || toks[i].size() > 4) return std::nullopt;
      t.year_text = std::string(toks[i]);
    } else if (t.zone.empty() && toks[i].size() <= 6) {
      t.zone = std::string(toks[i]);
    } else {
      return std::nullopt;
    }
  }
  return t;
}

bool LooksLikeHlSmiHeader(std::string_view line) {
  bool aip = false, power = false, module = false;
  for (std::string_view f : SplitFields(line, ',')) {
    const HlCol c = MapHlSmiColumn(f);
    std::string lower = AsciiLower(TrimSpace(f));
    if (const size_t b = lower.find(" ["); b != std::string::npos) lower.resize(b);
    if (lower.size() > 4 && lower.ends_with(".aip")) aip = true;
    if (c == HlCol::kPower) power = true;
    if (c == HlCol::kModuleId) module = true;
  }
  return aip || (power && module);
}

// --format hl-smi: a header with an AIP field (utilization.aip, temperature.aip) or power.draw
// with module_id; a headerless row led by hl-smi's timestamp (then Init asks for --query).
namespace {
constexpr DetectRule kHlSmiDetect[] = {
    {25, DetectRule::kLine,
     [](const DetectLine& l) { return l.index == 0 && LooksLikeHlSmiHeader(l.text); }},
    {88, DetectRule::kLine,
     [](const DetectLine& l) {
       if (l.index != 0) return false;
       const size_t comma = l.text.find(',');
       if (comma == std::string_view::npos) return false;
       const auto t = ParseHlSmiTime(l.text.substr(0, comma));
       return t.has_value() && t->year_text.size() != 4;
     }},
};
}  // namespace

extern const Format kHlSmiFormat;
const Format kHlSmiFormat{
    "hl-smi",
    "Intel Gaudi hl-smi --query-aip CSV (header or --query; the year hl-smi cuts from --year)",
    kHlSmiDetect,
    [](const OpenRequest& r, std::unique_ptr<LineReader> lines) -> Result<OpenedFile> {
      return InitAndOpen(std::make_unique<HlSmiSource>(std::move(lines), r.host, r.host_index,
                                                       r.reader, r.options.replay.query));
    },
    write::kHlSmiWriters};

}  // namespace ww::ingest
