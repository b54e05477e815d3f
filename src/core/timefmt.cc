#include "core/timefmt.h"

#include <array>
#include <cstdio>

namespace ww {
namespace {

// Days since 1970-01-01 for a proleptic Gregorian date (H. Hinnant's algorithm).
int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

void CivilFromDays(int64_t z, int64_t& y, unsigned& m, unsigned& d) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  y = static_cast<int64_t>(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  d = doy - (153 * mp + 2) / 5 + 1;
  m = mp < 10 ? mp + 3 : mp - 9;
  y += m <= 2;
}

bool ReadDigits(std::string_view s, size_t& i, size_t n, int& out) {
  if (i + n > s.size()) return false;
  int v = 0;
  for (size_t k = 0; k < n; ++k) {
    char c = s[i + k];
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  out = v;
  i += n;
  return true;
}

}  // namespace

namespace {

std::string_view TrimTimestamp(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

// "YYYY-MM-DD HH:MM:" (or '/' and 'T'): seconds since the epoch at that minute, and *i left at
// the seconds. Together with ParseSecondsOnward, the whole of ParseTimestamp.
std::optional<int64_t> ParseUpToMinute(std::string_view s, size_t* i_out) {
  size_t i = 0;
  int year = 0, mon = 0, day = 0, hh = 0, mm = 0;
  if (!ReadDigits(s, i, 4, year)) return std::nullopt;
  if (i >= s.size() || (s[i] != '/' && s[i] != '-')) return std::nullopt;
  const char date_sep = s[i++];
  if (!ReadDigits(s, i, 2, mon)) return std::nullopt;
  if (i >= s.size() || s[i++] != date_sep) return std::nullopt;
  if (!ReadDigits(s, i, 2, day)) return std::nullopt;
  if (i >= s.size() || (s[i] != ' ' && s[i] != 'T')) return std::nullopt;
  ++i;
  if (!ReadDigits(s, i, 2, hh)) return std::nullopt;
  if (i >= s.size() || s[i++] != ':') return std::nullopt;
  if (!ReadDigits(s, i, 2, mm)) return std::nullopt;
  if (i >= s.size() || s[i++] != ':') return std::nullopt;
  if (mon < 1 || mon > 12 || day < 1 || day > 31 || hh > 23 || mm > 59) return std::nullopt;
  *i_out = i;
  const int64_t days = DaysFromCivil(year, static_cast<unsigned>(mon), static_cast<unsigned>(day));
  return days * 86400 + hh * 3600 + mm * 60;
}

// "SS[.fff][Z|+HH[:MM]]" from s[i] to the end, added to the minute's seconds.
std::optional<ParsedTime> ParseSecondsOnward(std::string_view s, size_t i, int64_t minute_secs) {
  int ss = 0;
  if (!ReadDigits(s, i, 2, ss)) return std::nullopt;
  if (ss > 60) return std::nullopt;
  int64_t ms = 0;
  if (i < s.size() && (s[i] == '.' || s[i] == ',')) {
    ++i;
    int digits = 0;
    int64_t frac = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      if (digits < 3) frac = frac * 10 + (s[i] - '0');
      ++digits;
      ++i;
    }
    if (digits == 0) return std::nullopt;
    for (int k = digits; k < 3; ++k) frac *= 10;
    ms = frac;
  }
  bool had_zone = false;
  int64_t offset_min = 0;
  if (i < s.size()) {
    if (s[i] == 'Z') {
      had_zone = true;
      ++i;
    } else if (s[i] == '+' || s[i] == '-') {
      const int sign = s[i] == '-' ? -1 : 1;
      ++i;
      int oh, om = 0;
      if (!ReadDigits(s, i, 2, oh)) return std::nullopt;
      if (i < s.size() && s[i] == ':') ++i;
      if (i < s.size() && !ReadDigits(s, i, 2, om)) return std::nullopt;
      offset_min = sign * (oh * 60 + om);
      had_zone = true;
    }
  }
  if (i != s.size()) return std::nullopt;
  const int64_t secs = minute_secs + ss - offset_min * 60;
  return ParsedTime{secs * 1000 + ms, had_zone};
}

}  // namespace

std::optional<ParsedTime> ParseTimestamp(std::string_view s) {
  s = TrimTimestamp(s);
  size_t i = 0;
  const auto minute = ParseUpToMinute(s, &i);
  if (!minute) return std::nullopt;
  return ParseSecondsOnward(s, i, *minute);
}

std::optional<ParsedTime> TimestampParser::Parse(std::string_view s) {
  s = TrimTimestamp(s);
  // The same text up to the minute parses to the same minute: only the seconds onward are read.
  if (!head_.empty() && s.size() > head_.size() && s.compare(0, head_.size(), head_) == 0) {
    return ParseSecondsOnward(s, head_.size(), head_secs_);
  }
  size_t i = 0;
  const auto minute = ParseUpToMinute(s, &i);
  if (!minute) return std::nullopt;
  head_.assign(s.substr(0, i));
  head_secs_ = *minute;
  return ParseSecondsOnward(s, i, *minute);
}

void AppendIsoMs(std::string& out, int64_t unix_ms, bool with_zone) {
  int64_t secs = unix_ms >= 0 ? unix_ms / 1000 : -((-unix_ms + 999) / 1000);
  const int ms = static_cast<int>(unix_ms - secs * 1000);
  int64_t days = secs >= 0 ? secs / 86400 : -((-secs + 86399) / 86400);
  int64_t rem = secs - days * 86400;
  int64_t y;
  unsigned m, d;
  CivilFromDays(days, y, m, d);
  std::array<char, 40> buf;
  const int n = std::snprintf(buf.data(), buf.size(), "%04lld-%02u-%02uT%02d:%02d:%02d.%03d%s",
                              static_cast<long long>(y), m, d, static_cast<int>(rem / 3600),
                              static_cast<int>(rem / 60 % 60), static_cast<int>(rem % 60), ms,
                              with_zone ? "Z" : "");
  out.append(buf.data(), static_cast<size_t>(n));
}

std::string FormatIsoMs(int64_t unix_ms, bool with_zone) {
  std::string s;
  AppendIsoMs(s, unix_ms, with_zone);
  return s;
}

}  // namespace ww
