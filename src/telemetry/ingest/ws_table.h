// Reads whitespace-separated tables with a header line: LLview/JuRepTool per-GPU job tables
// (`llview`, the `GPU_<jobid>_node.dat` files of JSC's JUWELS, JURECA and JEDI job reports) and
// any other such table whose columns are named with --map (`table`).
//
// LLview (FZJ-JSC/LLview): the header is
//   jobid ts nodeid gpu_usage gpu_memu gpu_pu gpu_temp gpu_memur gpu_sclk gpu_clk gpu_clkr
//   gpu_pfst gpu_pcie_tx gpu_pcie_rx [gpu_nvlink_tx gpu_nvlink_rx]
// one row per GPU per 60 s tick, nodeid = `<host>_<gpu>`. Meanings and units, from LLview's
// source: the dataset `GPU_node_dat` in
// configs/server/LLgenDB/conf_jobreport/data_csv_dat/jobreport_datafiles_gpu.yaml (its columns,
// `column_convert: gpu_memu->Bytes2GiB, gpu_pu->toThousand, gpu_pcie_*->KiBtoGiB,
// gpu_nvlink_*->KiBtoGiB`, conversion functions in da/LL_jobreport/LL_convert.pm: to_gib
// bytes/1024^3, to_thousand /1000, kib_to_gib /1024/1024) and configs/jureptool/plots.yml (the
// plotted header, unit and description of each):
//   ts             epoch seconds (column_ts)
//   gpu_usage      % of the sample period a kernel ran          -> util_gpu_pct
//   gpu_memu       GiB of device memory used                    -> mem_used_mib (x 1024)
//   gpu_pu         W, board power                               -> power_w
//   gpu_temp       degrees C                                    -> temperature_c
//   gpu_memur      % of the period device memory was read/written -> util_mem_pct
//   gpu_sclk       MHz, SM clock                                -> sm_clock_mhz
//   gpu_clk        MHz, memory clock                            -> mem_clock_mhz
//   gpu_clkr       clock throttle reasons, NVML bits (1 GpuIdle, 2 AppClkSet, 4 SwPwrCap,
//                  8 HwSlowDown, ...)                           -> clock_event_reasons
//   gpu_pfst       performance state 0..15                      -> pstate
//   gpu_pcie_tx/rx, gpu_nvlink_tx/rx  GiB/s                     -> *_bytes_per_s (x 2^30)
// LLview attributes whose unit its source does not document for this table (gpu_active,
// gpu_memf, gpu_memt, gpu_link, gpu_pciw, gpu_rtp*, gpu_e*) are listed as not read; any other
// column is an error naming it (a table of another kind: --format table --map ...).
// Hosts and GPUs come from nodeid: several hosts in one file are the hosts of the job (the file
// must then be given alone, as a Prometheus JSON response).
//
// `table`: the header's names are recognized as custom-csv recognizes them (table_columns.h), and
// --map FIELD=COLUMN names the rest; `--split-id COLUMN` splits a `<host>_<gpu>` column (the
// last `_` or `-` before digits). Times: epoch seconds or ms, ISO 8601 (a date and a time in two
// columns under one name are joined); without a time column --interval-ms, a GPU seen again
// starting the next tick. Rows must come in time order (a tick's rows together).
// Errors name the file, line and column; malformed rows are documented skips within the budget.
// Ownership: the source owns its file. Thread-safety: one thread at a time.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "core/status.h"
#include "telemetry/ingest/file_source.h"

namespace ww::ingest {

// True for an LLview per-GPU table header (jobid/ts/nodeid and gpu_* columns).
bool LooksLikeLlviewHeader(std::string_view line);
// True for a whitespace-separated header (no commas, tabs or semicolons decide it) naming a
// power or utilization column custom-csv would recognize.
bool LooksLikeWhitespaceTableHeader(std::string_view line);

// llview: true for LLview's columns, false for a generic table (`table`).
// multiple_files: other files are opened beside this one (then it must hold one host).
Result<OpenedFile> OpenWhitespaceTable(std::unique_ptr<LineReader> reader, const std::string& host,
                                       uint16_t host_index, const ReaderOptions& options,
                                       bool llview, bool multiple_files);

}  // namespace ww::ingest
