// Readers of AMD Instinct logs: `amd-smi monitor` / `amd-smi metric` (CSV, JSON, the monitor
// table), `rocm-smi --showpower --showuse --showmemuse --showtemp ...` (CSV, JSON, the
// `GPU[0] : KEY: VALUE` log) and the split layout teams commit (one host's rocm-smi data in two
// CSVs, `timestamp,device,power_watts,power_cap_watts` and
// `timestamp,device,gpu_use_percent,gfx_activity,vram_total_bytes,vram_used_bytes`).
//
// Names, units and N/A spellings are the tools' own (ROCm/amdsmi amdsmi_cli/amdsmi_commands.py,
// amdsmi_logger.py; ROCm/rocm_smi_lib python_smi_tools/rocm_smi.py):
//   - amd-smi: power in W (`power_usage`, `socket_power`), activity in % (`gfx`/`gfx_activity`
//     -> util_gpu_pct, `mem`/`umc_activity` -> util_mem_pct), VRAM in MB as amd-smi counts them
//     (bytes // 1024**2: MiB), clocks in MHz, temperatures in C (edge, else hotspot); JSON values
//     are `{"value": V, "unit": U}` or plain; `N/A` is absent. `timestamp` (epoch s) when
//     --watch wrote it.
//   - rocm-smi: keys as printed (`Average Graphics Package Power (W)` or `Current Socket Graphics
//     Package Power (W)`, `Max Graphics Package Power (W)`, `GPU use (%)`, `GPU Memory
//     Read/Write Activity (%)` / `GPU memory use (%)`, `GPU Memory Allocated (VRAM%)`, `VRAM
//     Total [Used] Memory (B)`, `Temperature (Sensor edge|junction) (C)`), devices `card0`;
//     no times in the output: `date` lines between polls, else --interval-ms.
//   - An MI250X package is two GCDs, each its own GPU; the package's power is on the primary
//     GCD and the secondary prints `N/A (Secondary die)` (rocm-smi) or N/A / 0 (amd-smi):
//     absent, never a 0 W reading. A power of exactly 0 W is read as absent for the same reason
//     (no powered Instinct draws 0 W) and counted in the description.
// Documented skips: rows whose field count is not the header's, records that are not numbers
// where numbers belong (malformed budget), lines that are none of the layout's (banners, process
// tables), a truncated last line.
// Ownership: sources own their files. Thread-safety: one thread at a time; the functions are pure.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "telemetry/source.h"

namespace ww::ingest {

// Which half of the split rocm-smi layout a CSV header is: kPower
// (`timestamp,device,power_watts[,power_cap_watts]`), kUse (`timestamp,device,gpu_use_percent,
// ...vram_used_bytes`), or kNone.
enum class SplitHalf { kNone, kPower, kUse };
SplitHalf SplitHalfOfHeader(std::string_view header);
// The same, of a file's first significant line (gzip/zstd read through); kNone when unreadable.
SplitHalf SplitHalfOfFile(const std::string& path);

// The host a split file belongs to by its name: the file name without folder and extension,
// less the words that name a half (power, pwr, watts, use, usage, util, utilization, activity,
// mem, memory, vram, busy) and their separators: `node3_power.csv` -> `node3`,
// `rocm-usage-node3.csv` -> `node3`, `power.csv` -> "".
std::string SplitHostStem(const std::string& path);

// The files of one job grouped into hosts: a group is one file, or the two halves of one host's
// split layout (power first). The rule (docs/triage.md, "Split rocm-smi CSVs"): halves in one
// folder with the same host stem are one host; a power half and a use half left over are one
// host when they are the only ones left and at least one of them has no stem of its own; any
// other half left unpaired while halves of the other kind are also unpaired, or two halves of
// one kind with one stem, is an error naming the files. A half alone is a host of its own.
// `halves[i]` is SplitHalfOfFile(paths[i]) (kNone for other formats).
struct HostFiles {
  std::vector<size_t> files;  // indexes into paths; two for a joined split pair
  std::string stem;           // a pair's host stem ("" when neither file has one)
};
Result<std::vector<HostFiles>> GroupSplitHalves(const std::vector<std::string>& paths,
                                                const std::vector<SplitHalf>& halves);

// One host's stream from its two halves (each a single-host source of the same host index):
// samples of one (time, GPU) joined into one; a reading only one half has at a time is kept as
// it is. An error at the end when no (time, GPU) is in both halves (not one host's files).
std::unique_ptr<TelemetrySource> JoinSplitHalves(std::unique_ptr<TelemetrySource> power,
                                                 std::unique_ptr<TelemetrySource> use,
                                                 std::string power_path, std::string use_path);

}  // namespace ww::ingest
