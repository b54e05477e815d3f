// The formats `simulate --format` writes, made from the writer rows attached to the telemetry
// formats that read them back (ingest/format.h, Format::writers): --format parsing, its list and
// --help, and the interval each can carry. Nothing here names a format.
// Ownership: the list is built once and lives for the program. Thread-safety: any thread.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "core/status.h"
#include "telemetry/ingest/format.h"
#include "telemetry/write/sample_writers.h"

namespace ww::sim {

// A writer with its name and the format that reads its files back.
struct OutputFormat {
  const char* name;                // --format NAME
  const write::WriterRow* writer;  // extension, job-wide, interval rule, help, factory
  const ingest::Format* reader;
};

// Every output format, in WriterRow::order: the order of --format's list and --help. The first
// is the default.
std::span<const OutputFormat> OutputFormats();
const OutputFormat& DefaultOutputFormat();

// An unknown name is an error listing the valid ones.
Result<const OutputFormat*> ParseOutputFormat(std::string_view name);
// "nvidia-smi, dcgmi-dmon, ...": every name in order.
std::string OutputFormatNames();
// The formats' lines of `simulate --help`: name, what it writes, an example.
std::string OutputFormatHelp();

// The sampling intervals a format can carry: a format whose times have 1 s resolution needs
// whole seconds. An error names the format and the interval.
Status CheckOutputInterval(const OutputFormat& format, int64_t interval_ms);

}  // namespace ww::sim
