// Parsing helpers shared by the file readers (nvidia-smi CSV/dmon, dcgmi dmon, dcgm-exporter
// text, W&B, nvidia-smi tables, home-made CSVs): numbers with or without units, whitespace
// splitting, UTF-8 cleaning of text that ends up in reports, and warnings grouped by kind.
// Pure functions and value types; no thread-safety concerns.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ww::ingest {

enum class Parse { kOk, kMissing, kBad, kImplausible };

// Parses a numeric reading: "547.12 W", "547.12", "91 %", "-5", "+5", "1e9", with an optional
// unit (letters or '%') after it. One rule for every reader (nvidia-smi CSV and dmon included):
//   - blanks (spaces, tabs, a CR) and double quotes around the value are not part of it: a cell
//     quoted by a spreadsheet or a CSV library, `"547.12 W"`, reads as 547.12;
//   - missing markers are kMissing, never 0: "", anything starting with '[' ("[N/A]",
//     "[Not Supported]", "[GPU is lost]"), "N/A", "-", and "NaN" / "nan" (what pandas and numpy
//     write for a reading they do not have);
//   - a number beyond double's range is kImplausible; anything else ("inf", "NAN", "12abc3") is
//     kBad.
// Plain digits with a unit (nearly every field of every row) are read in one forward pass,
// exact up to 15 digits.
Parse ParseNumber(std::string_view s, double* out);

// The commonest field of all, inline: 1-4 digits between spaces (a GPU index, a temperature).
// False for anything else, which ParseNumber then reads (the same value where both read it).
inline bool ParseSmallUint(std::string_view s, double* out) {
  size_t i = 0;
  const size_t n = s.size();
  while (i < n && s[i] == ' ') ++i;
  unsigned v = 0;
  const size_t first = i;
  while (i < n && i - first < 4 && static_cast<unsigned>(s[i] - '0') < 10) {
    v = v * 10 + static_cast<unsigned>(s[i++] - '0');
  }
  if (i == first) return false;
  while (i < n && (s[i] == ' ' || s[i] == '\r')) ++i;
  if (i != n) return false;
  *out = v;
  return true;
}

// Text from a log (GPU names, uuids, values quoted in warnings) ends up in the JSON report, which
// must be valid UTF-8: a byte that does not start a well-formed sequence becomes U+FFFD.
std::string ValidUtf8(std::string_view s);

// Whitespace-separated tokens (spaces and tabs).
std::vector<std::string_view> SplitWhitespace(std::string_view s);

// A short, printable excerpt of a line for messages: at most `max_chars`, control bytes shown as
// '?', valid UTF-8.
std::string Excerpt(std::string_view line, size_t max_chars = 80);

// A peer's text for the operator's terminal (a Prometheus error, a server warning): valid UTF-8,
// at most max_chars bytes, and every control character (C0, DEL, C1: newlines, ESC sequences
// that would move the cursor or recolor the terminal) written as an escape: "\n", "\x1b".
std::string EscapeForTerminal(std::string_view text, size_t max_chars = 500);

// For a row with more fields than its header: " (values like '123,45' ...)" when a comma sits
// between two digits, as a decimal-comma locale (de_DE, fr_FR) writes numbers, which shifts every
// column after it; "" otherwise. nvidia-smi separates fields with ", ", never a bare comma.
std::string DecimalCommaHint(std::string_view line);

// "skipped N repeated header line(s) (identical to line H); line a; line b": the note of a reader
// that skips the header a shell loop prints before every sample. `first_lines`: the first three.
std::string RepeatedHeadersNote(int64_t count, int64_t header_line,
                                const std::vector<int64_t>& first_lines);

// Warnings grouped by kind: a count and the first three messages, rendered as
// "KIND (N times); example; example".
class Warnings {
 public:
  void Add(const std::string& kind, std::string message);
  std::vector<std::string> Render() const;
  int64_t Count(const std::string& kind) const;

 private:
  struct Kind {
    int64_t count = 0;
    std::vector<std::string> examples;
  };
  std::map<std::string, Kind> by_kind_;
};

}  // namespace ww::ingest
