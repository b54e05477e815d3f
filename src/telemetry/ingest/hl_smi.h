// The hl-smi reader: Intel Gaudi's `hl-smi --query-aip=FIELDS --format=csv[,noheader][,nounits]
// [-l N]`, one row per device per poll. Fields read: timestamp, index / module_id / bus_id (the
// device), name, uuid, utilization.aip (-> util_gpu_pct: the share of time the AIP's engines are
// busy, as utilization.gpu is NVIDIA's), power.draw, power.max / power.limit, memory.used,
// memory.total (MiB), temperature.aip; other fields are skipped. Headers carry units in brackets
// ("power.draw [W]"); cells carry them unless nounits ("285 W", "98304 MiB"); N/A is absent.
// A noheader file needs its fields named: --format hl-smi --query FIELDS.
//
// hl-smi cuts the timestamp's year to three digits ("Wed Oct 19 18:23:37 UTC 202"). The year is
// taken, in this order, from the file's own full dates (a `date` line of the logging loop, a row
// with four digits), from --year, from the weekday when exactly one year of the cut decade puts
// it on that date; else the file is refused, asking for --year. A warning says which year was
// used and why. Times are read as printed (the zone hl-smi prints is not applied).
//
// Documented skips: rows with the wrong number of fields or an unreadable time or device,
// repeated headers, duplicate and out-of-order times per device (FileSource).
// Ownership: the source owns its file. Thread-safety: one thread at a time.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace ww::ingest {

// hl-smi's timestamp: "Wed Oct 19 18:23:37 UTC 202" (day possibly space-padded, zone optional,
// the year cut or whole).
struct HlSmiTime {
  int weekday = 0;  // 0 Sunday .. 6 Saturday
  int month = 0;    // 1..12
  int day = 0, hour = 0, minute = 0, second = 0;
  std::string zone;       // "UTC", "" when none
  std::string year_text;  // as printed: "202" (cut), "2022", "" (none)
};
std::optional<HlSmiTime> ParseHlSmiTime(std::string_view text);

// The weekday (0 Sunday) of a date.
int WeekdayOf(int year, int month, int day);

// True for a header line of hl-smi's CSV (a field ending in ".aip", or power.draw with
// module_id).
bool LooksLikeHlSmiHeader(std::string_view line);

}  // namespace ww::ingest
