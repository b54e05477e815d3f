// The one hand-written JSON scanner of telemetry/ingest/: a cursor over JSON text for the readers
// whose inputs are too large for a DOM per record (Prometheus API responses in their plain shape,
// prom_json.cc; W&B JSON lines records, wandb.cc), and the bracket matching that cuts a document
// out of a stream. Anything a reader does not expect goes to nlohmann::json (which names what is
// wrong) or is reported as a malformed record; this file never decides what a value means.
// Whitespace is JSON's (space, tab, CR, LF) everywhere.
// Ownership: a cursor borrows the text it reads (views it returns point into it).
// Thread-safety: pure functions; a cursor is used by one thread at a time.
#pragma once

#include <cstddef>
#include <string_view>

namespace ww::ingest {

inline bool IsJsonSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// The index of the quote that closes a JSON string whose text starts at text[from] (just after
// the opening quote), a backslash escaping the byte after it; npos when the text ends first.
size_t JsonStringEnd(std::string_view text, size_t from);

// One past the bracket that closes the '{' or '[' at text[begin], strings skipped; npos when the
// text ends first (a truncated document), with *in_string (when given) true if it ended inside a
// string.
size_t JsonValueEnd(std::string_view text, size_t begin, bool* in_string = nullptr);

// Plain decimals ("1763465360.1", "152.37", "700") of at most 15 digits: the mantissa and the
// power of ten are exact doubles, so their quotient is the correctly rounded value, as
// std::from_chars gives, at a fraction of its cost. false for anything else.
bool FastDecimal(const char* p, const char* e, double* out);

class JsonCursor {
 public:
  explicit JsonCursor(std::string_view text)
      : begin_(text.data()), p_(text.data()), end_(text.data() + text.size()) {}

  void SkipSpace() {
    while (p_ < end_ && IsJsonSpace(*p_)) ++p_;
  }
  // Whether the next byte after whitespace is c (not consumed).
  bool At(char c) {
    SkipSpace();
    return p_ < end_ && *p_ == c;
  }
  bool Eat(char c) {
    if (!At(c)) return false;
    ++p_;
    return true;
  }
  bool AtEnd() {
    SkipSpace();
    return p_ >= end_;
  }
  size_t consumed() const { return static_cast<size_t>(p_ - begin_); }

  // A string of printable ASCII without escapes (keys, sample values, label-free words): *out is
  // its body. false for anything else.
  bool PlainString(std::string_view* out);
  // Any string whose closing quote is there, escapes left as written: *body is its text between
  // the quotes. false when the next token is not a string or the text ends inside it.
  bool RawString(std::string_view* body);
  // A JSON number (RFC 8259 grammar), as a double.
  bool Number(double* out);

  // Any value, as text, without validating it: a string (*raw with its quotes), an object or an
  // array (cut out by brackets), or a bare word up to whitespace, ',' or '}' (a number, true,
  // false, null, or whatever else stands there; possibly empty).
  enum class Raw { kString, kNested, kWord, kNothing, kOpenString, kUnbalanced };
  Raw RawValue(std::string_view* raw);
  // Any JSON value, validated (nlohmann's grammar); *raw is its text.
  bool Value(std::string_view* raw);

 private:
  static bool IsDigit(char c) { return c >= '0' && c <= '9'; }
  std::string_view Rest() const { return std::string_view(p_, static_cast<size_t>(end_ - p_)); }
  const char* begin_;
  const char* p_;
  const char* end_;
};

}  // namespace ww::ingest
