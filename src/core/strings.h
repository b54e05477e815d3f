// Small string helpers shared by the parsers and reports. ASCII only: every caller parses
// machine-written headers, units and flags, never user prose. Pure; no thread-safety concerns.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ww {

// Strips spaces, tabs, CR and LF from both ends.
std::string_view TrimSpace(std::string_view s);
// TrimSpace, then one pair of surrounding double quotes (CSV cells written by spreadsheets).
std::string_view TrimSpaceAndQuotes(std::string_view s);
std::string AsciiLower(std::string_view s);
// Splits on `sep` with no quoting rules; keeps empty fields ("a,,b" -> {"a", "", "b"}).
std::vector<std::string_view> SplitFields(std::string_view s, char sep);
// Levenshtein distance (insert, delete, substitute: 1 each): the measure behind every "did you
// mean" (subcommands, flags, job-spec keys).
size_t EditDistance(std::string_view a, std::string_view b);

}  // namespace ww
