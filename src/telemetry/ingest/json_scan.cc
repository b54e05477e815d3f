// The JSON cursor of ingest/ (json_scan.h): bracket matching, strings, numbers, raw values.
#include "telemetry/ingest/json_scan.h"

#include <charconv>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <system_error>

namespace ww::ingest {

size_t JsonStringEnd(std::string_view text, size_t from) {
  for (size_t k = from; k < text.size(); ++k) {
    if (text[k] == '\\') {
      ++k;
    } else if (text[k] == '"') {
      return k;
    }
  }
  return std::string_view::npos;
}

size_t JsonValueEnd(std::string_view text, size_t begin, bool* in_string) {
  int depth = 0;
  for (size_t i = begin; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '"') {
      i = JsonStringEnd(text, i + 1);
      if (i == std::string_view::npos) {
        if (in_string != nullptr) *in_string = true;
        return std::string_view::npos;
      }
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (--depth == 0) return i + 1;
    }
  }
  if (in_string != nullptr) *in_string = false;
  return std::string_view::npos;
}

bool FastDecimal(const char* p, const char* e, double* out) {
  static constexpr double kPow10[] = {1,   1e1, 1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                      1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};
  uint64_t mant = 0;
  int digits = 0;
  int frac = -1;
  for (; p < e; ++p) {
    if (*p >= '0' && *p <= '9') {
      mant = mant * 10 + static_cast<uint64_t>(*p - '0');
      ++digits;
      if (frac >= 0) ++frac;
    } else if (*p == '.' && frac < 0 && digits > 0) {
      frac = 0;
    } else {
      return false;
    }
  }
  if (digits == 0 || digits > 15 || frac == 0) return false;
  *out = static_cast<double>(mant) / kPow10[frac < 0 ? 0 : frac];
  return true;
}

bool JsonCursor::PlainString(std::string_view* out) {
  if (!Eat('"')) return false;
  const char* b = p_;
  while (p_ < end_) {
    const auto c = static_cast<unsigned char>(*p_);
    if (c == '"') {
      *out = std::string_view(b, static_cast<size_t>(p_ - b));
      ++p_;
      return true;
    }
    if (c == '\\' || c < 0x20 || c >= 0x80) return false;
    ++p_;
  }
  return false;
}

bool JsonCursor::RawString(std::string_view* body) {
  if (!At('"')) return false;
  const std::string_view rest = Rest();
  const size_t close = JsonStringEnd(rest, 1);
  if (close == std::string_view::npos) return false;
  *body = rest.substr(1, close - 1);
  p_ += close + 1;
  return true;
}

bool JsonCursor::Number(double* out) {
  SkipSpace();
  const char* b = p_;
  const char* q = p_;
  if (q < end_ && *q == '-') ++q;
  if (q >= end_ || !IsDigit(*q)) return false;
  if (*q == '0') {
    ++q;
  } else {
    while (q < end_ && IsDigit(*q)) ++q;
  }
  if (q < end_ && *q == '.') {
    ++q;
    if (q >= end_ || !IsDigit(*q)) return false;
    while (q < end_ && IsDigit(*q)) ++q;
  }
  if (q < end_ && (*q == 'e' || *q == 'E')) {
    ++q;
    if (q < end_ && (*q == '+' || *q == '-')) ++q;
    if (q >= end_ || !IsDigit(*q)) return false;
    while (q < end_ && IsDigit(*q)) ++q;
  }
  if (!FastDecimal(b, q, out)) {
    const auto [ptr, ec] = std::from_chars(b, q, *out);
    if (ec != std::errc() || ptr != q) return false;
  }
  p_ = q;
  return true;
}

JsonCursor::Raw JsonCursor::RawValue(std::string_view* raw) {
  SkipSpace();
  if (p_ >= end_) return Raw::kNothing;
  const std::string_view rest = Rest();
  size_t len = 0;
  Raw kind = Raw::kWord;
  if (*p_ == '{' || *p_ == '[') {
    bool in_string = false;
    len = JsonValueEnd(rest, 0, &in_string);
    if (len == std::string_view::npos) return in_string ? Raw::kOpenString : Raw::kUnbalanced;
    kind = Raw::kNested;
  } else if (*p_ == '"') {
    const size_t close = JsonStringEnd(rest, 1);
    if (close == std::string_view::npos) return Raw::kOpenString;
    len = close + 1;
    kind = Raw::kString;
  } else {
    while (len < rest.size() && !IsJsonSpace(rest[len]) && rest[len] != ',' && rest[len] != '}') {
      ++len;
    }
  }
  *raw = rest.substr(0, len);
  p_ += len;
  return kind;
}

bool JsonCursor::Value(std::string_view* raw) {
  const char* before = p_;
  const Raw kind = RawValue(raw);
  if ((kind != Raw::kString && kind != Raw::kNested && kind != Raw::kWord) ||
      !nlohmann::json::accept(raw->begin(), raw->end())) {
    p_ = before;
    return false;
  }
  return true;
}

}  // namespace ww::ingest
