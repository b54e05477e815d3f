// Reads the default `nvidia-smi` table printed in a loop (`nvidia-smi -l 5 >> job.out`, or a
// training script calling nvidia-smi between its own lines in a Slurm .out): the date line
// (ctime, "Tue Oct 27 06:02:13 2020"), the `NVIDIA-SMI ... Driver Version` banner, the column
// header, then per GPU two or three `|`-separated rows:
//   |   0  Tesla K80           Off  | 00000000:00:1E.0 Off |                    0 |
//   | N/A   50C    P0    62W / 149W |      0MiB / 11441MiB |     81%      Default |
//   |                               |                      |                  N/A |   (450+)
// Cells are found by the `|` separators, not by column offsets, so the narrow layout of drivers
// up to 52x, the wide one of 530+ and the third (MIG M.) row of 450+ all read the same. Read:
// index, name (as printed, possibly cut with "..."), bus id, temperature, Perf -> pstate,
// Pwr:Usage/Cap -> power_w and power_limit_w, Memory-Usage -> mem_used_mib / mem_total_mib,
// GPU-Util. The processes table, MIG device tables and every line outside a table are passed
// over. Times come from the date line before each table (local time, read as given, without a
// zone); tables without one are ReaderOptions::interval_ms apart.
// Ownership: the source owns its file. Thread-safety: one thread at a time.
#pragma once

#include <memory>
#include <string>

#include "core/status.h"
#include "telemetry/ingest/file_source.h"

namespace ww::ingest {

// True for the table's banner line ("| NVIDIA-SMI 550.127.05   Driver Version: ...").
bool IsSmiTableBanner(std::string_view line);

// Parses nvidia-smi's date line ("Tue Oct 27 06:02:13 2020"): ms since the epoch, as UTC.
std::optional<int64_t> ParseSmiDateLine(std::string_view line);

}  // namespace ww::ingest
