// Reads `dcgmi dmon` text logs (`dcgmi dmon -e 1001,1002,... -d 100 > gpu.dmon`): the
// `# Entity FIELD...` header with DCGM's short field names, the units line (`Id ... W mJ`),
// then one `GPU N v1 v2 ...` row per entity per tick. The header repeats every few rows; rows of
// other entity types (GPU-I, GPU-CI, Switch, Link, CPU) are documented skips; `N/A` is absent.
//
// Rows carry no timestamps: pass ReaderOptions::interval_ms (the command's `-d`); samples get
// synthetic times from 1970-01-01 in steps of it. Rows with a leading timestamp (epoch seconds
// or ISO 8601, e.g. piped through `ts '%s'`) use it instead.
//
// Fields read (DCGM field id, short name -> GpuSample): 155 POWER -> power_w (W),
// 160 PMLMT (power management limit) -> power_limit_w (W),
// 156 TOTEC -> energy_mj (mJ), 203 GPUTL -> util_gpu_pct, 204 MCUTL -> util_mem_pct,
// 252 FBUSD -> mem_used_mib, 250 FBTTL -> mem_total_mib, 150 TMPTR -> temperature_c,
// 100 SMCLK -> sm_clock_mhz, 101 MMCLK -> mem_clock_mhz, 1002 SMACT -> sm_activity_ratio,
// 1003 SMOCC -> sm_occupancy_ratio, 1004 TENSO -> tensor_activity_ratio,
// 1005 DRAMA -> dram_bw_util_ratio, 1009/1010 PCITX/PCIRX -> pcie_{tx,rx}_bytes_per_s,
// 1011/1012 NVLTX/NVLRX -> nvlink_{tx,rx}_bytes_per_s, and 1001 GRACT (graphics engine active
// ratio) -> util_gpu_pct x 100 when the log has no GPUTL column (GpuSample has no field of its
// own for it). Other fields (FP64A, FP32A, FP16A, SACLK the application clock setting, MUSAM,
// GUSAM, ...) are ignored.
// Ownership: the source owns its file. Thread-safety: one thread at a time.
#pragma once

#include <memory>
#include <string>

#include "core/status.h"
#include "telemetry/ingest/file_source.h"

namespace ww::ingest {

// True when the line is a dcgmi dmon header ("# Entity ..." / "#Entity ...").
bool IsDcgmiDmonHeader(std::string_view line);

}  // namespace ww::ingest
