// Timestamps as nvidia-smi writes them and as wattwatch prints them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ww {

// Parses "2024/04/05 06:17:19.635", "2024-04-05 06:17:19", "2024-04-05T06:17:19.635Z",
// "2024-04-05T06:17:19+02:00". Fractional seconds of any length; returns ms since the epoch,
// interpreting zone-less times as UTC (they are printed back without a zone). The second member
// says whether the text carried a zone. nullopt when the text is not a timestamp.
struct ParsedTime {
  int64_t unix_ms;
  bool had_zone;
};
std::optional<ParsedTime> ParseTimestamp(std::string_view text);

// Formats as ISO 8601 with milliseconds: "2026-11-18T11:29:20.700", with a trailing "Z" when
// with_zone is true.
std::string FormatIsoMs(int64_t unix_ms, bool with_zone = false);
// Appends the same into out without allocating a new string (hot path of --labels).
void AppendIsoMs(std::string& out, int64_t unix_ms, bool with_zone = false);

}  // namespace ww
