#include "telemetry/ingest/text.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>

namespace ww::ingest {

namespace {

// ParseNumber's rule for every value its forward pass does not read.
Parse ParseNumberGeneral(std::string_view s, double* out) {
  const char* p = s.data();
  const char* e = p + s.size();
  while (p < e && (*p == ' ' || *p == '\t' || *p == '"')) ++p;
  while (e > p && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r' || e[-1] == '"')) --e;
  if (p == e || *p == '[') return Parse::kMissing;
  const size_t len = static_cast<size_t>(e - p);
  if ((len == 1 && *p == '-') ||
      (len == 3 && (std::string_view(p, 3) == "N/A" || std::string_view(p, 3) == "NaN" ||
                    std::string_view(p, 3) == "nan"))) {
    return Parse::kMissing;
  }
  auto is_unit_char = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '%';
  };
  // Fast path: digits with an optional fraction, then an optional unit; exact up to 15 digits.
  uint64_t mant = 0;
  int digits = 0, frac_digits = 0;
  bool dot = false;
  const char* q = p;
  for (; q < e; ++q) {
    const char c = *q;
    if (c >= '0' && c <= '9') {
      mant = mant * 10 + static_cast<uint64_t>(c - '0');
      ++digits;
      if (dot) ++frac_digits;
    } else if (c == '.' && !dot) {
      dot = true;
    } else {
      break;
    }
  }
  if (digits > 0 && digits <= 15) {
    const char* r = q;
    while (r < e && *r == ' ') ++r;
    if (r == e || (is_unit_char(*r) && *r != 'e' && *r != 'E')) {
      while (r < e && is_unit_char(*r)) ++r;
      if (r == e) {
        static constexpr double kPow10[] = {1,   1e1, 1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                            1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};
        *out = static_cast<double>(mant) / kPow10[frac_digits];
        return Parse::kOk;
      }
    }
  }
  // General path: strip a trailing unit, then from_chars (signs, exponents, long numbers).
  const char* end = e;
  while (end > p && is_unit_char(end[-1])) --end;
  while (end > p && end[-1] == ' ') --end;
  // "1e9" lost its exponent digits' marker to the unit strip only if it ended in a letter; an
  // exponent always ends in a digit, so nothing to undo here.
  if (end == p) return Parse::kBad;
  const char* start = p;
  if (*start == '+') ++start;
  double v = 0;
  auto [ptr, ec] = std::from_chars(start, end, v);
  if (ec == std::errc::result_out_of_range) return Parse::kImplausible;
  if (ec != std::errc() || ptr != end) return Parse::kBad;
  if (std::isnan(v)) return Parse::kMissing;
  if (!std::isfinite(v)) return Parse::kImplausible;
  *out = v;
  return Parse::kOk;
}

bool IsUnitChar(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '%'; }

}  // namespace

Parse ParseNumber(std::string_view s, double* out) {
  // What nearly every field holds (blanks, up to 15 digits with at most one '.', blanks, a unit,
  // blanks) in one forward pass; anything else (quotes, signs, exponents, missing markers, long
  // numbers) goes to ParseNumberGeneral, which reads these the same way.
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

std::string ValidUtf8(std::string_view s) {
  // Nearly every name and uuid is ASCII: copied whole. The byte loop below starts at the first
  // byte that is not.
  size_t i = 0;
  while (i < s.size() && static_cast<unsigned char>(s[i]) < 0x80) ++i;
  if (i == s.size()) return std::string(s);
  std::string out;
  out.reserve(s.size() + 8);
  out.append(s.substr(0, i));
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    const size_t len = c < 0x80           ? 1
                       : (c >> 5) == 0x6  ? 2
                       : (c >> 4) == 0xE  ? 3
                       : (c >> 3) == 0x1E ? 4
                                          : 0;
    bool ok = len > 0 && i + len <= s.size();
    uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1Fu) : len == 3 ? (c & 0x0Fu) : (c & 0x07u);
    for (size_t k = 1; ok && k < len; ++k) {
      const auto b = static_cast<unsigned char>(s[i + k]);
      ok = (b & 0xC0) == 0x80;
      cp = (cp << 6) | (b & 0x3Fu);
    }
    // No overlong forms, no surrogates, nothing above U+10FFFF.
    if (ok && len == 2) ok = cp >= 0x80;
    if (ok && len == 3) ok = cp >= 0x800 && (cp < 0xD800 || cp > 0xDFFF);
    if (ok && len == 4) ok = cp >= 0x10000 && cp <= 0x10FFFF;
    if (ok) {
      out.append(s.substr(i, len));
      i += len;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return out;
}

std::vector<std::string_view> SplitWhitespace(std::string_view s) {
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

std::string Excerpt(std::string_view line, size_t max_chars) {
  std::string s(line.substr(0, max_chars));
  for (char& c : s) {
    if (static_cast<unsigned char>(c) < 0x20 && c != '\t') c = '?';
  }
  std::string out = ValidUtf8(s);
  if (line.size() > max_chars) out += "...";
  return out;
}

std::string EscapeForTerminal(std::string_view text, size_t max_chars) {
  const std::string valid = ValidUtf8(text.substr(0, max_chars));
  std::string out;
  out.reserve(valid.size());
  for (size_t i = 0; i < valid.size(); ++i) {
    const auto c = static_cast<unsigned char>(valid[i]);
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      out += fmt::format("\\x{:02x}", c);
    } else if (c == 0xC2 && i + 1 < valid.size() &&
               static_cast<unsigned char>(valid[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(valid[i + 1]) <= 0x9f) {
      // U+0080..U+009F: C1 controls (0x9b is CSI on terminals that take 8-bit controls).
      out += fmt::format("\\u{:04x}", static_cast<unsigned char>(valid[i + 1]));
      ++i;
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  if (text.size() > max_chars) out += "...";
  return out;
}

void Warnings::Add(const std::string& kind, std::string message) {
  auto& w = by_kind_[kind];
  if (w.count++ < 3) w.examples.push_back(std::move(message));
}

std::vector<std::string> Warnings::Render() const {
  std::vector<std::string> out;
  for (const auto& [kind, w] : by_kind_) {
    std::string line = fmt::format("{} ({} time{})", kind, w.count, w.count == 1 ? "" : "s");
    for (const auto& e : w.examples) line += "; " + e;
    out.push_back(std::move(line));
  }
  return out;
}

int64_t Warnings::Count(const std::string& kind) const {
  auto it = by_kind_.find(kind);
  return it == by_kind_.end() ? 0 : it->second.count;
}

std::string RepeatedHeadersNote(int64_t count, int64_t header_line,
                                const std::vector<int64_t>& first_lines) {
  std::string where;
  for (int64_t l : first_lines) where += fmt::format("; line {}", l);
  return fmt::format("skipped {} repeated header line{} (identical to line {}){}", count,
                     count == 1 ? "" : "s", header_line, where);
}

std::string DecimalCommaHint(std::string_view line) {
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  for (size_t i = 1; i + 1 < line.size(); ++i) {
    if (line[i] != ',' || !digit(line[i - 1]) || !digit(line[i + 1])) continue;
    size_t b = i, e = i + 1;
    while (b > 0 && (digit(line[b - 1]) || line[b - 1] == '.')) --b;
    while (e < line.size() && digit(line[e])) ++e;
    return fmt::format(
        " (values like '{}' have a decimal comma: the log was written in a locale such as de_DE; "
        "a comma inside a number splits it into two fields. Log with LC_ALL=C nvidia-smi ... so "
        "numbers are written '123.45')",
        Excerpt(line.substr(b, e - b), 20));
  }
  return "";
}

}  // namespace ww::ingest
