// Opens telemetry files whatever wrote them: the format is recognized from the content (magic
// bytes for gzip/zstd, then the first lines), never from the file name, or forced with
// --format. One file is one host; several files are merged in timestamp order.
//
// Formats (names for --format): nvidia-smi (`--query-gpu ... --format=csv` and `nvidia-smi
// dmon`), dcgmi-dmon, dcgm-exporter (Prometheus text as scraped from :9400/metrics), wandb
// (system metrics, CSV or JSON lines), smi-table (the default `nvidia-smi` table in a loop, also
// inside a Slurm .out), custom-csv (home-made CSVs; --map FIELD=COLUMN), prometheus-json (saved
// /api/v1/query_range responses; one file may hold several hosts), gpustat (its output in a
// loop), wide (one column per GPU, `,timestamp,GPU 0,GPU 1`; --wide METRIC), llview (LLview /
// JuRepTool per-GPU job tables; hosts from nodeid), table (whitespace-separated tables; --map,
// --split-id). Identical repeated header lines are skipped everywhere. A file nothing
// recognizes is an error naming its first line, the formats read and --map.
// Ownership: the caller owns the returned source. Thread-safety: free functions.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"
#include "telemetry/ingest/file_source.h"
#include "telemetry/replay/nvsmi_log.h"

namespace ww {

enum class InputFormat {
  kAuto,
  kNvidiaSmi,
  kDcgmiDmon,
  kDcgmExporter,
  kWandb,
  kSmiTable,
  kCustomCsv,
  kPromJson,
  kGpustat,
  kWide,
  kLlview,
  kTable
};

// "auto", "nvidia-smi", "dcgmi-dmon", "dcgm-exporter", "wandb", "smi-table", "custom-csv",
// "prometheus-json", "gpustat", "wide", "llview", "table".
Result<InputFormat> ParseInputFormat(std::string_view name);
const char* InputFormatName(InputFormat f);
// "nvidia-smi, dcgmi-dmon, dcgm-exporter, wandb, smi-table, custom-csv, ..."
std::string InputFormatNames();
// One line per format: "  NAME  what it reads", from the same table (triage --help, docs).
std::string InputFormatHelp();

struct IngestOptions {
  InputFormat format = InputFormat::kAuto;
  ReplayOptions replay;  // the nvidia-smi reader's options; interval_ms serves every format
  std::vector<std::pair<std::string, std::string>> map;  // --map FIELD=COLUMN
  std::string wide_metric;      // --wide METRIC: what `GPU 0`-style columns hold
  std::string split_id;         // --split-id COLUMN: a `<host>_<gpu>` column of a whitespace table
  bool multiple_files = false;  // set by OpenTelemetryFiles: a prometheus-json file must be alone
};

// Parses "FIELD=COLUMN" (--map); FIELD is one of ingest::MapFieldNames().
Status ParseMapFlag(std::string_view flag, std::vector<std::pair<std::string, std::string>>* out);

struct InputDescription {
  std::string path;
  std::string format;  // InputFormatName
  std::string fixed;
  const ingest::FileSource* file = nullptr;  // borrowed from the opened source
  std::string compression;                   // "", "gzip", "zstd"
  // "node0.csv.gz: gzip, dcgm-exporter text: POWER_USAGE GPU_UTIL ..."
  std::string Text() const;
};

struct OpenedInputs {
  std::unique_ptr<TelemetrySource> source;
  std::vector<InputDescription> inputs;  // one per file, in host order
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
// is an error (each file is one host); "-" reads standard input.
Result<OpenedInputs> OpenTelemetryFiles(const std::vector<std::string>& paths,
                                        const IngestOptions& options = {});

}  // namespace ww
