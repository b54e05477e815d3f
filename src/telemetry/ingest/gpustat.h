// Reads gpustat output saved in a loop (`while sleep 5; do gpustat; done > gpu.log`,
// `gpustat -i 5 > gpu.log`, `watch gpustat` captured): per poll an optional host line
// `HOST  DATE  DRIVER` (gpustat's header: host name, the query time in the locale's date-time
// format, driver version), then one line per GPU, as gpustat's GPUStat.print_to writes it
// (wookayin/gpustat, gpustat/core.py):
//   [0] Tesla V100-SXM2-32GB | 34°C,  ?? %,   0 % (E:   0 %  D:   0 %),   43 / 300 W |
//       0 / 32768 MB | user:python/1234(1000M)
// that is `[index] name |temp°C, [fan %, ]util %[ (E: enc %  D: dec %)][,  draw[ / limit] W] |
// used / total MB |[ processes]`. `??` is gpustat's "not available" (absent, never 0); the
// degree sign may be written `°C`, `'C` or `C`; ANSI colour codes (--color) are removed.
// gpustat's MB are MiB (bytes // 1024**2 in core.py); power is whole watts
// (nvmlDeviceGetPowerUsage // 1000).
//
// Times: the host line's date ("Mon Jan  1 12:00:00 2024" as the C locale writes it, "Mon 01
// Jan 2024 12:00:00 PM UTC" as en_US does, "2024-01-01 12:00:00" on Windows), read as UTC like
// the other zone-less logs; without host lines ReaderOptions::interval_ms (--interval-ms) is
// required and polls are that far apart (a GPU index seen again starts a poll).
// Fields: temperature_c, util_gpu_pct, power_w, power_limit_w, mem_used_mib, mem_total_mib,
// GPU names. Fan, encoder/decoder and processes are not read.
// Documented skips: lines that are neither a GPU line nor a host line (watch's banner, process
// detail lines), malformed GPU lines (within the malformed budget), a truncated last line.
// Ownership: the source owns its file. Thread-safety: one thread at a time.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "core/status.h"
#include "telemetry/ingest/file_source.h"

namespace ww::ingest {

// True for a gpustat GPU line ("[0] NAME | 34°C, ... | 0 / 32768 MB |").
bool IsGpustatGpuLine(std::string_view line);

// One GPU line, parsed. Fields gpustat printed as `??` are absent.
struct GpustatLine {
  int index = -1;
  std::string name;
  std::optional<double> temperature_c, fan_pct, util_pct, power_w, power_limit_w, mem_used_mib,
      mem_total_mib;
};
// Parses a GPU line (ANSI codes already removed); an error message in *error when malformed.
bool ParseGpustatLine(std::string_view line, GpustatLine* out, std::string* error);

// The date of a gpustat host line, ms since the epoch read as UTC; nullopt when there is none.
std::optional<int64_t> ParseGpustatHostLine(std::string_view line);

// True for a line that is only a date and time as `date` or a locale prints it ("Mon Jan  1
// 12:00:00 UTC 2024", "Mon 01 Jan 2024 12:00:00 PM CET"): what a shell loop prints between
// samples. Lines with commas or more than eight words are not.
bool IsDateLine(std::string_view line);

}  // namespace ww::ingest
