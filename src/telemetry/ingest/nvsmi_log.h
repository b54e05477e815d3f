// Reads the GPU telemetry logs people already have: `nvidia-smi --query-gpu=... --format=csv`
// (with or without `noheader` / `nounits`, any interval) and `nvidia-smi dmon` output.
//
// Documented skips (counted, reported through warnings(), never turned into zeros):
//   - a last line cut off mid-write (no newline, or fewer fields than the header);
//   - a row with the wrong number of fields;
//   - a row whose timestamp does not parse, or goes back in time (less than
//     clock_step_back_min_ms: a larger step back is a clock step, and the rest of the log is
//     shifted forward, with a warning), or repeats a GPU's timestamp;
//   - without an index column, a tick whose row count differs from the GPUs found at the start
//     (a GPU's rows missing): ticks are re-split by time and such ticks skipped, with a warning;
//   - a GPU reading `[GPU is lost]` gets GpuSample::gpu_lost (and a warning), not absent fields;
//   - a value that is "[N/A]", "[Not Supported]", "[Unknown Error]", "-", "NaN", ... (the field is
//     absent for that sample; the one rule of every reader: ingest::ParseNumber in text.h);
//   - a value that is not a number or is physically implausible (power above 5 kW, utilization
//     above 100 %, ...): the field is absent and a warning names file, line and column.
// Errors (exit 2 at the CLI): unreadable file, no recognizable header, no timestamp column without
// --interval-ms, binary data, or more than 1 % of rows (and over 20) malformed.
// The reader is split by stage: nvsmi_columns.h (column names), nvsmi_source.h (the source, with
// nvsmi_rows.cc and nvsmi_ticks.cc). Several files are merged by merged_source.h.
// Ownership: the source owns its file. Thread-safety: one thread at a time.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "telemetry/source.h"

namespace ww {

struct ReplayOptions {
  // For `--format=csv,noheader` logs: the `--query-gpu` list that produced them, e.g.
  // "timestamp,index,power.draw,utilization.gpu". Empty: the file has a header.
  std::string query;
  // For logs without timestamps (dmon without -o DT, or a query without `timestamp`): the sampling
  // interval; samples get synthetic times from 1970-01-01 in steps of it. 0: required timestamps.
  int64_t interval_ms = 0;
  // Malformed rows tolerated before the file is rejected: a fraction of data rows, and a floor.
  // Parse only the columns triage reads (timestamp, identity, power, limit, utilizations,
  // memory used and total: the board is known by its limit and memory when its name is not;
  // temperature, as evidence only: a bad temperature cell drops that reading, not the row);
  // the rest are skipped unparsed, which is most of the cost of a wide log.
  bool triage_fields_only = false;
  double max_bad_row_fraction = 0.01;
  // A timestamp this far (or more) before the newest one is a clock step back (NTP, DST): the
  // rest of the log is shifted forward to continue in order, with a warning. Smaller steps back
  // are out-of-order rows, skipped.
  int64_t clock_step_back_min_ms = 10000;
  int64_t max_bad_rows_floor = 20;
};

// Opens one log file as one host. host_index is the GpuKey::host stamped on every sample.
Result<std::unique_ptr<TelemetrySource>> OpenNvsmiLog(const std::string& path,
                                                      const std::string& host_name,
                                                      uint16_t host_index,
                                                      const ReplayOptions& options = {});

// An nvidia-smi --query-gpu CSV header: it names one of nvidia-smi's fields (power.draw, ...).
bool LooksLikeNvsmiCsvHeader(std::string_view line);

}  // namespace ww
