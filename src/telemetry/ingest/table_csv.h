// Reads tables whose columns are named by people rather than by nvidia-smi: home-made CSVs
// (`custom-csv`) and Weights & Biases system metrics (`wandb`, CSV as exported or JSON lines
// as `run.history(stream="system")` / wandb-events.jsonl write them).
//
// Column names are recognized case-insensitively whatever joins their words (`_ . - space`)
// and with a unit as a suffix or in brackets (`_w`, `_watts`, `_pct`, `_percent`, `_mib`,
// `_mb`, `_gib`, `_c`, ` [W]`, ` (%)`): time / timestamp / ts / datetime (ISO 8601 with or
// without zone, epoch seconds or milliseconds: `_ms` / `_s` suffix, else > 1e11 is ms), gpu /
// gpu id / gpu index / device / index (the GPU of a row), uuid, name / model, power / power
// draw / pwr, power limit / cap, util / utilization / gpu util / usage / load, memory util,
// memory used / mem / vram (MiB, MB taken as MiB, GiB, bytes), memory total, temperature /
// temp, sm clock / clock, memory clock. One column per GPU (`gpu0_power_w`, `power_gpu_1`,
// `GPU 2 Util (%)`) is the wide layout: one row holds every GPU. W&B columns are
// system.gpu.N.{gpu, memory, memoryAllocated, memoryAllocatedBytes, powerWatts, powerPercent,
// temp, smClock, memoryClock} with _timestamp (epoch s) or _runtime (s since start).
// `--map FIELD=COLUMN` names a column the guess missed or got wrong. Per-GPU columns that name
// no metric (`GPU 0`, `gpu.3`: W&B panels pivoted by pandas) hold what `--wide METRIC` says.
// In the wide layout a time that jumps back (runs concatenated) starts a new segment, laid one
// interval after the previous one (a warning says where).
// Identical repeated header lines are skipped and counted; a header that changes is an error.
//
// Documented skips: rows with the wrong number of fields, unparseable times, values that are
// not numbers or implausible (field absent), duplicate and out-of-order times per GPU.
// Ownership: the source owns its file. Thread-safety: one thread at a time.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/status.h"
#include "telemetry/ingest/file_source.h"
#include "telemetry/ingest/table_columns.h"  // RecognizeColumn, MapFieldNames

namespace ww::ingest {

// True when a CSV header (first line) has a power or utilization column the recognizer knows.
bool LooksLikeCustomCsvHeader(std::string_view line);
bool LooksLikeWandbCsvHeader(std::string_view line);
// True when a CSV header has a time column and at least one column of one GPU that names no
// metric (`GPU 0`, `gpu.3`: a W&B panel pivoted by pandas): `wide`, read with --wide METRIC.
// (Per-GPU columns that name their metric, `gpu0_power_w`, `system.gpu.5.powerWatts`, are
// custom-csv's wide layout and need no flag.)
bool LooksLikeWideGpuHeader(std::string_view line);
bool LooksLikeWandbJsonLine(std::string_view line);
// (custom_csv.cc and wandb.cc: detection and the formats' rows; table_csv.cc: the reader.)

Result<OpenedFile> OpenCustomCsv(std::unique_ptr<LineReader> reader, const std::string& host,
                                 uint16_t host_index, const ReaderOptions& options, bool wandb);
Result<OpenedFile> OpenWandbJsonl(std::unique_ptr<LineReader> reader, const std::string& host,
                                  uint16_t host_index, const ReaderOptions& options);

}  // namespace ww::ingest
