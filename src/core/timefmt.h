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

// ParseTimestamp for a column of timestamps (a log's rows): the same results, but text that
// shares the previous one's date, hour and minute is read from the seconds on (most rows of a
// log do). Not thread-safe; one per column.
class TimestampParser {
 public:
  std::optional<ParsedTime> Parse(std::string_view text);

 private:
  std::string head_;  // "2025/11/18 11:29:" of the last text that parsed up to its minute
  int64_t head_secs_ = 0;
};

// Formats as ISO 8601 with milliseconds: "2026-11-18T11:29:20.700", with a trailing "Z" when
// with_zone is true.
std::string FormatIsoMs(int64_t unix_ms, bool with_zone = false);
// Appends the same into out without allocating a new string (hot path of --labels).
void AppendIsoMs(std::string& out, int64_t unix_ms, bool with_zone = false);

}  // namespace ww
