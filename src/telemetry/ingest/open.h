// Opens telemetry files whatever wrote them: the format is recognized from the content (magic
// bytes for gzip/zstd, then the first lines), never from the file name, or forced with
// --format. One file is one host; several files are merged in timestamp order.
//
// The formats are the rows of ingest::Formats() (format.h); this file only loops over them.
// Identical repeated header lines are skipped everywhere. A file nothing recognizes is an error
// naming its first line, the formats read and --map.
// Ownership: the caller owns the returned source. Thread-safety: free functions.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"
#include "telemetry/ingest/file_source.h"
#include "telemetry/ingest/format.h"

namespace ww {

// "auto" (nullptr) or a format's name (ingest::Formats()); unknown names are an error listing them.
Result<InputFormat> ParseInputFormat(std::string_view name);
const char* InputFormatName(InputFormat f);  // "auto" for nullptr
// "nvidia-smi, dcgmi-dmon, dcgm-exporter, wandb, smi-table, custom-csv, ..."
std::string InputFormatNames();
// One line per format: "  NAME  what it reads", from the same rows (triage --help, docs).
std::string InputFormatHelp();

// Parses "FIELD=COLUMN" (--map); FIELD is one of ingest::MapFieldNames().
Status ParseMapFlag(std::string_view flag, std::vector<std::pair<std::string, std::string>>* out);

struct InputDescription {
  std::string path;
  std::string format;  // InputFormatName
  std::string fixed;
  const ingest::FileSource* file = nullptr;  // borrowed from the opened source
  std::string compression;                   // "", "gzip", "zstd"
  // A split rocm-smi half: "joined with node3_usage.csv by (time, device) as host 'node3'".
  std::string joined;
  // "node0.csv.gz: gzip, dcgm-exporter text: POWER_USAGE GPU_UTIL ..."
  std::string Text() const;
};

struct OpenedInputs {
  std::unique_ptr<TelemetrySource> source;
  std::vector<InputDescription> inputs;  // one per file, in host order
  // One per host: its file, or "POWER + USE" for the two halves of a split rocm-smi layout.
  std::vector<std::string> host_paths;
  // Some host is not its file name without extension (same-named files from different
  // folders): a summary should say which file each host is.
  bool renamed_hosts = false;
};

// Recognizes one file's format from its content (decompressed), without reading it all.
Result<InputFormat> DetectInputFormat(const std::string& path, const IngestOptions& options);

// Opens one file as host `host_index`.
Result<ingest::OpenedFile> OpenTelemetryFile(const std::string& path, const std::string& host,
                                             uint16_t host_index, const IngestOptions& options,
                                             InputDescription* description = nullptr);

// Host names for the files of one job: the file name without extension; same-named files from
// different folders get as many parent folders as tell them apart ("a/node0", "b/node0"), and
// "#2" when even those agree; "-" (standard input) is "stdin".
std::vector<std::string> HostNamesForPaths(const std::vector<std::string>& paths);

// Opens the files as the hosts of one job (host names: HostNamesForPaths). The same file twice
// is an error (each file is one host, except the two halves of a split rocm-smi layout, joined
// into one host by ingest::GroupSplitHalves' rule, amd_smi.h); "-" reads standard input.
Result<OpenedInputs> OpenTelemetryFiles(const std::vector<std::string>& paths,
                                        const IngestOptions& options = {});

}  // namespace ww
