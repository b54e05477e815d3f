#include "telemetry/ingest/gpustat.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "core/sample_ranges.h"
#include "core/strings.h"
#include "core/timefmt.h"
#include "telemetry/ingest/format.h"

namespace ww::ingest {
namespace {

// gpustat --color (or `watch --color gpustat`) writes ANSI SGR codes around every field.
std::string_view StripAnsi(std::string_view line, std::string* buf) {
  if (line.find('\x1b') == std::string_view::npos) return line;
  buf->clear();
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] != '\x1b') {
      *buf += line[i];
      continue;
    }
    if (i + 1 < line.size() && line[i + 1] == '[') {
      i += 2;
      while (i < line.size() && !(line[i] >= 0x40 && line[i] <= 0x7e)) ++i;
    } else {
      ++i;  // ESC ( B and the like: two bytes
    }
  }
  return *buf;
}

enum class Num { kOk, kMissing, kBad };

// The number at the start of `text` ("34°C", " 43 ", "??", "57 %"); what follows must be one of
// `units` ("" for nothing).
Num LeadingNumber(std::string_view text, std::initializer_list<std::string_view> units,
                  double* out) {
  text = TrimSpace(text);
  size_t end = 0;
  if (text.substr(0, 2) == "??") {
    end = 2;
  } else {
    while (end < text.size() && ((text[end] >= '0' && text[end] <= '9') || text[end] == '.' ||
                                 (end == 0 && text[end] == '-'))) {
      ++end;
    }
    if (end == 0) return Num::kBad;
  }
  const std::string_view rest = TrimSpace(text.substr(end));
  if (std::find(units.begin(), units.end(), rest) == units.end()) return Num::kBad;
  if (end == 2 && text[0] == '?') return Num::kMissing;
  if (ParseNumber(text.substr(0, end), out) != Parse::kOk) return Num::kBad;
  return Num::kOk;
}

bool SetNumber(std::string_view text, std::initializer_list<std::string_view> units,
               const char* what, std::optional<double>* field, double lo, double hi,
               std::string* error) {
  double v = 0;
  switch (LeadingNumber(text, units, &v)) {
    case Num::kMissing:
      return true;
    case Num::kBad:
      *error = fmt::format("{}: '{}' is not a number", what, Excerpt(TrimSpace(text), 24));
      return false;
    case Num::kOk:
      if (v < lo || v > hi) {
        *error = fmt::format("{}: '{}' is out of the plausible range", what,
                             Excerpt(TrimSpace(text), 24));
        return false;
      }
      *field = v;
      return true;
  }
  return true;
}

class GpustatSource final : public FileSource {
 public:
  GpustatSource(std::unique_ptr<LineReader> reader, const std::string& host, uint16_t host_index,
                const ReaderOptions& options)
      : FileSource(std::move(reader), host, host_index, options.limits), options_(options) {}

  std::string Describe() const override {
    std::string d = "gpustat";
    if (!log_host_.empty()) d += fmt::format(" of host '{}'", log_host_);
    if (!driver_.empty()) d += fmt::format(", driver {}", driver_);
    d += fmt::format(": {} polls", polls_);
    d += dated_ ? ", times from the host lines"
                : fmt::format(", no host lines: {} ms apart (--interval-ms)", options_.interval_ms);
    d += "; temperature, utilization, ";
    d += saw_power_ ? "power, " : "no power (gpustat without --show-power), ";
    d += "memory used/total";
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
        FlushTick(out);
        *at_end = true;
        return Status::Ok();
      }
      const int64_t n = reader().line_number();
      if (raw.find('\0') != std::string_view::npos) {
        return Status::InvalidInput(fmt::format("{}:{}: binary data in a gpustat log", path(), n));
      }
      const std::string_view t = TrimSpace(StripAnsi(raw, &clean_));
      if (t.empty()) continue;
      if (t.front() != '[') {
        if (auto ms = ParseGpustatHostLine(t)) {
          // A poll's header: the poll before it is complete.
          const bool flushed = !tick_.empty();
          FlushTick(out);
          pending_ms_ = *ms;
          dated_ = true;
          NoteHost(t);
          if (flushed) return Status::Ok();
          continue;
        }
        Skip("lines that are not gpustat GPU or host lines skipped",
             fmt::format("line {}: '{}'", n, Excerpt(t, 40)));
        continue;
      }
      CountRecord();
      GpustatLine g;
      std::string error;
      if (!ParseGpustatLine(t, &g, &error)) {
        if (!complete) {
          Skip("truncated last line skipped", fmt::format("line {}", n));
          continue;
        }
        WW_RETURN_IF_ERROR(
            Bad("malformed gpustat GPU line skipped", fmt::format("line {}: {}", n, error)));
        continue;
      }
      bool flushed = false;
      for (const auto& [s, l] : tick_) {
        if (s.key.gpu == g.index) flushed = true;  // the GPU again: a poll without a host line
      }
      if (flushed) FlushTick(out);
      if (tick_.empty()) {
        if (pending_ms_) {
          tick_ms_ = *pending_ms_;
          pending_ms_.reset();
        } else if (options_.interval_ms > 0) {
          tick_ms_ =
              dated_ ? tick_ms_ + options_.interval_ms : synthetic_ticks_++ * options_.interval_ms;
        } else if (dated_) {
          WW_RETURN_IF_ERROR(Bad("poll without a host line (no time) skipped",
                                 fmt::format("line {}: GPU {} seen again before a host line; "
                                             "pass --interval-ms to place such polls",
                                             n, g.index)));
          continue;
        } else {
          return Status::InvalidInput(fmt::format(
              "{}:{}: gpustat output without host lines carries no times; pass --interval-ms "
              "with the polling interval (gpustat -i / the loop's sleep)",
              path(), n));
        }
        ++polls_;
      }
      GpuSample s;
      s.key = GpuKey{host_index(), static_cast<uint16_t>(g.index)};
      s.timestamp_ms = tick_ms_;
      s.temperature_c = g.temperature_c;
      s.util_gpu_pct = g.util_pct;
      s.power_w = g.power_w;
      s.power_limit_w = g.power_limit_w;
      s.mem_used_mib = g.mem_used_mib;
      s.mem_total_mib = g.mem_total_mib;
      saw_power_ |= g.power_w.has_value();
      if (!g.name.empty()) {
        GpuInfo& info = Info(s.key.gpu);
        if (info.name.empty()) info.name = ValidUtf8(g.name);
      }
      tick_.emplace_back(s, n);
      if (flushed) return Status::Ok();
    }
  }

 private:
  void NoteHost(std::string_view t) {
    // `watch gpustat` prints its own banner ("Every 2.0s: gpustat   host: DATE") above gpustat's.
    if (!log_host_.empty() || t.rfind("Every ", 0) == 0) return;
    auto toks = SplitWhitespace(t);
    if (toks.size() >= 3) {
      log_host_ = ValidUtf8(toks.front());
      driver_ = ValidUtf8(toks.back());
    }
  }

  void FlushTick(std::vector<GpuSample>* out) {
    for (const auto& [s, line] : tick_) Accept(s, line, out);
    tick_.clear();
  }

  ReaderOptions options_;
  std::string clean_;
  std::vector<std::pair<GpuSample, int64_t>> tick_;
  std::optional<int64_t> pending_ms_;
  int64_t tick_ms_ = 0;
  int64_t synthetic_ticks_ = 0;
  int64_t polls_ = 0;
  bool dated_ = false;
  bool saw_power_ = false;
  std::string log_host_, driver_;
};

}  // namespace

bool IsGpustatGpuLine(std::string_view line) {
  std::string buf;
  const std::string_view t = TrimSpace(StripAnsi(line, &buf));
  if (t.size() < 4 || t.front() != '[') return false;
  size_t i = 1;
  while (i < t.size() && t[i] >= '0' && t[i] <= '9') ++i;
  if (i == 1 || i >= t.size() || t[i] != ']') return false;
  const size_t bar = t.find('|', i);
  return bar != std::string_view::npos && t.find('|', bar + 1) != std::string_view::npos &&
         t.find("MB", bar) != std::string_view::npos && t.find('%', bar) != std::string_view::npos;
}

bool ParseGpustatLine(std::string_view line, GpustatLine* out, std::string* error) {
  const std::string_view t = TrimSpace(line);
  size_t i = 1;
  int index = 0;
  while (i < t.size() && t[i] >= '0' && t[i] <= '9' && index < 100000) {
    index = index * 10 + (t[i] - '0');
    ++i;
  }
  if (t.empty() || t.front() != '[' || i == 1 || i >= t.size() || t[i] != ']' || index >= 4096) {
    *error = "no GPU index '[N]' at the start";
    return false;
  }
  out->index = index;
  const auto segments = SplitFields(t.substr(i + 1), '|');
  if (segments.size() < 3) {
    *error = "fewer than three '|'-separated parts (name | readings | memory |)";
    return false;
  }
  out->name = std::string(TrimSpace(segments[0]));
  // Readings: "34°C,  ?? %,   0 % (E:   0 %  D:   0 %),   43 / 300 W"; the codec part in
  // parentheses holds no commas and is not read.
  std::string readings;
  int depth = 0;
  for (char c : segments[1]) {
    if (c == '(') ++depth;
    if (depth == 0) readings += c;
    if (c == ')' && depth > 0) --depth;
  }
  const auto parts = SplitFields(readings, ',');
  // gpustat writes `°C`; a terminal without UTF-8 shows `'C`, `C` or a replacement character.
  if (!SetNumber(parts[0],
                 {"°C", "'C", "C",
                  "\xef\xbf\xbd"
                  "C",
                  "\xb0"
                  "C",
                  "ºC"},
                 "temperature", &out->temperature_c, kTemperatureRangeC.lo, kTemperatureRangeC.hi,
                 error)) {
    return false;
  }
  std::vector<std::string_view> pcts;
  for (size_t k = 1; k < parts.size(); ++k) {
    const std::string_view p = TrimSpace(parts[k]);
    if (p.empty()) continue;
    if (p.back() == 'W') {
      const auto pw = SplitFields(p.substr(0, p.size() - 1), '/');
      if (!SetNumber(pw[0], {""}, "power draw", &out->power_w, kPowerRangeW.lo, kPowerRangeW.hi,
                     error))
        return false;
      if (pw.size() > 1 && !SetNumber(pw[1], {""}, "power limit", &out->power_limit_w,
                                      kPowerRangeW.lo, kPowerRangeW.hi, error)) {
        return false;
      }
    } else if (p.back() == '%') {
      pcts.push_back(p);
    } else {
      *error = fmt::format("'{}' is neither a percentage nor watts", Excerpt(p, 24));
      return false;
    }
  }
  if (pcts.empty() || pcts.size() > 2) {
    *error =
        fmt::format("{} percentages (expected utilization, or fan and utilization)", pcts.size());
    return false;
  }
  if (pcts.size() == 2 && !SetNumber(pcts[0], {"%"}, "fan", &out->fan_pct, 0, 100, error))
    return false;
  if (!SetNumber(pcts.back(), {"%"}, "utilization", &out->util_pct, 0, 100, error)) return false;
  // Memory: "    0 / 32768 MB".
  std::string_view mem = TrimSpace(segments[2]);
  if (mem.size() < 2 || mem.substr(mem.size() - 2) != "MB") {
    *error = fmt::format("memory: '{}' is not 'USED / TOTAL MB'", Excerpt(mem, 24));
    return false;
  }
  const auto mm = SplitFields(mem.substr(0, mem.size() - 2), '/');
  if (mm.size() != 2) {
    *error = fmt::format("memory: '{}' is not 'USED / TOTAL MB'", Excerpt(mem, 24));
    return false;
  }
  if (!SetNumber(mm[0], {""}, "memory used", &out->mem_used_mib, kMemoryRangeMib.lo,
                 kMemoryRangeMib.hi, error))
    return false;
  if (!SetNumber(mm[1], {""}, "memory total", &out->mem_total_mib, kMemoryRangeMib.lo,
                 kMemoryRangeMib.hi, error))
    return false;
  return true;
}

std::optional<int64_t> ParseGpustatHostLine(std::string_view line) {
  const auto toks = SplitWhitespace(TrimSpace(line));
  if (toks.size() < 3) return std::nullopt;
  // Windows / ISO: "host  2024-01-01 12:00:00  535.104.05".
  for (size_t i = 1; i + 1 < toks.size(); ++i) {
    if (toks[i].size() == 10 && toks[i][4] == '-' && toks[i + 1].find(':') != std::string::npos) {
      if (auto t = ParseTimestamp(std::string(toks[i]) + " " + std::string(toks[i + 1]))) {
        return t->unix_ms;
      }
    }
  }
  // A locale's date and time: month name, day, H:MM:SS[ AM|PM], four-digit year, in any order
  // (C: "Mon Jan  1 12:00:00 2024"; en_US: "Mon 01 Jan 2024 12:00:00 PM UTC").
  static const char* kMonths[] = {"jan", "feb", "mar", "apr", "may", "jun",
                                  "jul", "aug", "sep", "oct", "nov", "dec"};
  int mon = 0, day = 0, year = 0, hh = -1, mm = 0, ss = 0;
  bool pm = false, am = false;
  for (size_t i = 1; i < toks.size(); ++i) {
    const std::string w = AsciiLower(toks[i]);
    if (w.size() >= 3 && mon == 0) {
      for (int m = 0; m < 12; ++m) {
        if (w.compare(0, 3, kMonths[m]) == 0 && std::isalpha(static_cast<unsigned char>(w[0]))) {
          mon = m + 1;
        }
      }
      if (mon != 0) continue;
    }
    if (w == "pm") pm = true;
    if (w == "am") am = true;
    if (w.find(':') != std::string::npos && hh < 0) {
      if (std::sscanf(w.c_str(), "%d:%d:%d", &hh, &mm, &ss) < 2) hh = -1;
      continue;
    }
    const bool digits =
        !w.empty() && std::all_of(w.begin(), w.end(), [](char c) { return c >= '0' && c <= '9'; });
    if (digits && w.size() <= 2 && day == 0) day = std::stoi(w);
    if (digits && w.size() == 4 && year == 0) year = std::stoi(w);
  }
  if (mon == 0 || day < 1 || day > 31 || year < 1970 || hh < 0 || hh > 23 || mm > 59 || ss > 60) {
    return std::nullopt;
  }
  if (pm && hh < 12) hh += 12;
  if (am && hh == 12) hh = 0;
  auto t = ParseTimestamp(
      fmt::format("{:04d}-{:02d}-{:02d} {:02d}:{:02d}:{:02d}", year, mon, day, hh, mm, ss));
  if (!t) return std::nullopt;
  return t->unix_ms;
}

bool IsDateLine(std::string_view line) {
  const std::string_view t = TrimSpace(line);
  if (t.find(',') != std::string_view::npos || t.find('|') != std::string_view::npos) return false;
  const auto toks = SplitWhitespace(t);
  if (toks.size() < 4 || toks.size() > 8) return false;
  // ParseGpustatHostLine skips its first word (a host name): here the weekday.
  return ParseGpustatHostLine(t).has_value();
}

// --format gpustat: recognized by a GPU line (`[0] NVIDIA H100 ...`, maybe coloured) anywhere in
// the first lines.
namespace {
constexpr DetectRule kGpustatDetect[] = {
    {110, DetectRule::kLine,
     [](const DetectLine& l) {
       return (l.text.front() == '[' || l.text.front() == '\x1b') && IsGpustatGpuLine(l.text);
     }},
};
}  // namespace

extern const Format kGpustatFormat;
const Format kGpustatFormat{
    "gpustat", "gpustat output in a loop (--interval-ms without host lines)", kGpustatDetect,
    OpenLines<OpenFileSource<GpustatSource>>, write::kGpustatWriters};

}  // namespace ww::ingest
