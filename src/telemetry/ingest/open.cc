#include "telemetry/ingest/open.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "core/strings.h"
#include "core/timefmt.h"
#include "telemetry/ingest/dcgm_exporter.h"
#include "telemetry/ingest/dcgmi_dmon.h"
#include "telemetry/ingest/gpustat.h"
#include "telemetry/ingest/output_paths.h"
#include "telemetry/ingest/prom_json.h"
#include "telemetry/ingest/prom_text.h"
#include "telemetry/ingest/smi_table.h"
#include "telemetry/ingest/table_csv.h"
#include "telemetry/ingest/ws_table.h"

namespace ww {
namespace {

// The formats, once: their --format names and what each reads (the "not recognized" message,
// triage --help and docs/triage.md list them from here).
struct FormatName {
  InputFormat format;
  const char* name;
  const char* what;
};
constexpr FormatName kFormats[] = {
    {InputFormat::kAuto, "auto", ""},
    {InputFormat::kNvidiaSmi, "nvidia-smi",
     "nvidia-smi --query-gpu CSV (header once, before every sample, or none) and nvidia-smi dmon"},
    {InputFormat::kDcgmiDmon, "dcgmi-dmon", "dcgmi dmon text"},
    {InputFormat::kDcgmExporter, "dcgm-exporter", "dcgm-exporter /metrics text"},
    {InputFormat::kWandb, "wandb", "W&B system metrics (CSV or JSON lines)"},
    {InputFormat::kSmiTable, "smi-table", "the nvidia-smi table in a loop (a Slurm .out)"},
    {InputFormat::kCustomCsv, "custom-csv", "CSVs with a power or utilization column (--map)"},
    {InputFormat::kPromJson, "prometheus-json", "Prometheus query_range JSON"},
    {InputFormat::kGpustat, "gpustat",
     "gpustat output in a loop (--interval-ms without host lines)"},
    {InputFormat::kWide, "wide",
     "one column per GPU (',timestamp,GPU 0,GPU 1', 'gpu.3'; --wide METRIC)"},
    {InputFormat::kLlview, "llview", "LLview/JuRepTool per-GPU job tables (JSC)"},
    {InputFormat::kTable, "table", "whitespace-separated tables (--map, --split-id)"},
};

// How far detection looks: dcgm-exporter lines or an nvidia-smi table may come after a page of
// other output (a CI log, a Slurm .out), so not only the first line.
constexpr int kSniffLines = 4000;
constexpr uint64_t kSniffBytes = 1 << 20;

bool LooksLikeNvsmiCsvHeader(std::string_view line) {
  const std::string l = AsciiLower(line);
  for (const char* name : {"power.draw", "utilization.gpu", "utilization.memory", "memory.used",
                           "temperature.gpu", "clocks.", "pci.bus_id", "enforced.power.limit",
                           "power.limit", "clocks_event_reasons", "clocks_throttle_reasons"}) {
    if (l.find(name) != std::string::npos) return true;
  }
  return false;
}

// A headerless nvidia-smi CSV row: its first field is nvidia-smi's timestamp.
bool LooksLikeNvsmiRow(std::string_view line) {
  const size_t comma = line.find(',');
  if (comma == std::string_view::npos) return false;
  return ParseTimestamp(line.substr(0, comma)).has_value();
}

// "nvidia-smi --query-gpu CSV ..., dcgmi dmon text, ..." from kFormats.
std::string FormatList() {
  std::string out;
  for (const auto& f : kFormats) {
    if (f.format == InputFormat::kAuto) continue;
    out += fmt::format("{}{} ({})", out.empty() ? "" : ", ", f.what, f.name);
  }
  return out;
}

std::string Unrecognized(const std::string& path, int64_t line_no, std::string_view first) {
  return fmt::format(
      "{}:{}: not a telemetry log wattwatch recognizes (first line: '{}'); it reads {}; gzip or "
      "zstd compressed; force one with --format {{{}}}, or name your columns with --map "
      "FIELD=COLUMN (e.g. --map power=gpu_watts --map time=t)",
      path, line_no, ingest::Excerpt(first, 100), FormatList(), InputFormatNames());
}

}  // namespace

std::vector<std::string> HostNamesForPaths(const std::vector<std::string>& paths) {
  std::vector<std::string> names(paths.size());
  std::vector<std::vector<std::string>> dirs(paths.size());  // parent folders, innermost first
  std::map<std::string, std::vector<size_t>> by_stem;
  for (size_t i = 0; i < paths.size(); ++i) {
    if (paths[i] == "-") {
      names[i] = "stdin";
    } else {
      names[i] = HostNameFromPath(paths[i]);
      std::error_code ec;
      const auto abs = std::filesystem::absolute(paths[i], ec).lexically_normal();
      for (auto p = abs.parent_path(); !ec && p.has_filename(); p = p.parent_path()) {
        dirs[i].push_back(p.filename().string());
      }
    }
    by_stem[names[i]].push_back(i);
  }
  for (const auto& [stem, group] : by_stem) {
    if (group.size() < 2) continue;
    // As many parent folders as tell the group apart: a/node0, b/node0.
    for (size_t depth = 1;; ++depth) {
      std::map<std::string, int> count;
      bool any_left = false;
      std::vector<std::string> candidate;
      for (size_t i : group) {
        std::string n = stem;
        for (size_t d = 0; d < depth && d < dirs[i].size(); ++d)
          n = fmt::format("{}/{}", dirs[i][d], n);
        any_left |= depth < dirs[i].size();
        ++count[n];
        candidate.push_back(std::move(n));
      }
      const bool distinct =
          std::all_of(count.begin(), count.end(), [](const auto& c) { return c.second == 1; });
      if (distinct || !any_left) {
        std::map<std::string, int> seen;
        for (size_t k = 0; k < group.size(); ++k) {
          std::string n = candidate[k];
          if (int m = ++seen[n]; m > 1)
            n += fmt::format("#{}", m);  // same folders: node0.csv{,.gz}
          names[group[k]] = std::move(n);
        }
        break;
      }
    }
  }
  return names;
}

Result<InputFormat> ParseInputFormat(std::string_view name) {
  for (const auto& f : kFormats) {
    if (name == f.name) return f.format;
  }
  return Status::InvalidInput(
      fmt::format("--format: unknown format '{}' (expected auto, {})", name, InputFormatNames()));
}

const char* InputFormatName(InputFormat f) {
  for (const auto& k : kFormats) {
    if (k.format == f) return k.name;
  }
  return "auto";
}

std::string InputFormatNames() {
  std::string out;
  for (const auto& f : kFormats) {
    if (f.format == InputFormat::kAuto) continue;
    if (!out.empty()) out += ", ";
    out += f.name;
  }
  return out;
}

std::string InputFormatHelp() {
  std::string out;
  for (const auto& f : kFormats) {
    if (f.format == InputFormat::kAuto) continue;
    out += fmt::format("  {:<16} {}\n", f.name, f.what);
  }
  return out;
}

Status ParseMapFlag(std::string_view flag, std::vector<std::pair<std::string, std::string>>* out) {
  const size_t eq = flag.find('=');
  if (eq == std::string_view::npos || eq == 0 || eq + 1 >= flag.size()) {
    return Status::InvalidInput(fmt::format("--map '{}': expected FIELD=COLUMN", flag));
  }
  const std::string field = AsciiLower(TrimSpace(flag.substr(0, eq)));
  const auto& names = ingest::MapFieldNames();
  if (std::find(names.begin(), names.end(), field) == names.end()) {
    std::string list;
    for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
    return Status::InvalidInput(
        fmt::format("--map '{}': unknown field '{}' (fields: {})", flag, field, list));
  }
  out->emplace_back(field, std::string(TrimSpace(flag.substr(eq + 1))));
  return Status::Ok();
}

std::string InputDescription::Text() const {
  std::string d = file ? file->Describe() : fixed;
  return fmt::format("{}: {}{}", path, compression.empty() ? "" : compression + ", ", d);
}

Result<InputFormat> DetectInputFormat(const std::string& path, const IngestOptions& options) {
  if (options.format != InputFormat::kAuto) return options.format;
  {
    // A saved Prometheus API response is one JSON line, often longer than a line reader takes.
    auto peek = LineReader::Open(path);
    if (!peek.ok()) return peek.status();
    std::string head;
    if ((*peek)->ReadUpTo(4096, &head).ok() && ingest::LooksLikePromJson(head)) {
      return InputFormat::kPromJson;
    }
  }
  auto reader = LineReader::Open(path);
  if (!reader.ok()) return reader.status();
  std::string_view line;
  bool complete;
  std::string first;
  int64_t first_no = 0;
  int lines = 0;
  bool first_seen = false;
  InputFormat found = InputFormat::kAuto;
  size_t table_fields = 0;  // the first line looked like a whitespace table's header
  for (;;) {
    auto r = (*reader)->Next(&line, &complete);
    if (!r.ok()) {
      // A binary file with no newline for a megabyte: the nvidia-smi reader names it.
      if (!first_seen) return InputFormat::kNvidiaSmi;
      return r.status();
    }
    if (!*r) break;
    const std::string_view t = TrimSpace(line);
    if (t.empty()) continue;
    // `date; nvidia-smi --query-gpu=... --format=csv` in a loop: the date is not the first line.
    if (!first_seen && ingest::IsDateLine(t)) continue;
    if (!first_seen) {
      first_seen = true;
      first = std::string(t);
      first_no = (*reader)->line_number();
      if (line.find('\0') != std::string_view::npos) return InputFormat::kNvidiaSmi;  // binary
      if (!options.replay.query.empty()) return InputFormat::kNvidiaSmi;
      if (ingest::IsDcgmiDmonHeader(t)) return InputFormat::kDcgmiDmon;
      if (t.front() == '#' && !ingest::IsPromSampleLine(t, "# HELP DCGM") &&
          !ingest::IsPromSampleLine(t, "# TYPE DCGM")) {
        // nvidia-smi dmon ("# gpu pwr ...", "#Date Time gpu ...") or a commented CSV.
        const std::string l = AsciiLower(t);
        if (l.find("gpu") != std::string::npos || l.find("idx") != std::string::npos) {
          return InputFormat::kNvidiaSmi;
        }
      }
      if (ingest::LooksLikeWandbCsvHeader(t)) return InputFormat::kWandb;
      if (ingest::LooksLikeLlviewHeader(t)) return InputFormat::kLlview;
      if (!options.split_id.empty()) return InputFormat::kTable;
      if (ingest::LooksLikeWideGpuHeader(t)) return InputFormat::kWide;
      if (LooksLikeNvsmiCsvHeader(t)) {
        return options.map.empty() ? InputFormat::kNvidiaSmi : InputFormat::kCustomCsv;
      }
      if (LooksLikeNvsmiRow(t)) return InputFormat::kNvidiaSmi;  // --format=csv,noheader
      const bool whitespace_only = t.find_first_of(",;\t") == std::string_view::npos &&
                                   ingest::SplitWhitespace(t).size() >= 2;
      if (!options.map.empty() && t.front() != '{') {
        return whitespace_only ? InputFormat::kTable : InputFormat::kCustomCsv;
      }
      if (ingest::LooksLikeCustomCsvHeader(t)) found = InputFormat::kCustomCsv;
      // A whitespace table only when the next line has as many fields ("GPU power log" above
      // a CSV is a title, not a header); a date and a time may be two of them.
      if (ingest::LooksLikeWhitespaceTableHeader(t)) {
        table_fields = ingest::SplitWhitespace(t).size();
      }
    } else if (table_fields > 0) {
      const size_t n = ingest::SplitWhitespace(t).size();
      if (t.find(',') == std::string_view::npos && (n == table_fields || n == table_fields + 1)) {
        return InputFormat::kTable;
      }
      table_fields = 0;
    }
    if ((t.front() == '[' || t.front() == '\x1b') && ingest::IsGpustatGpuLine(t)) {
      return InputFormat::kGpustat;
    }
    if (ingest::IsPromSampleLine(t, "DCGM_FI_")) return InputFormat::kDcgmExporter;
    if (ingest::IsSmiTableBanner(t)) return InputFormat::kSmiTable;
    if (ingest::LooksLikeWandbJsonLine(t)) return InputFormat::kWandb;
    if (found != InputFormat::kAuto) return found;
    if (++lines >= kSniffLines || (*reader)->bytes_read() > kSniffBytes) break;
  }
  if (!first_seen) return Status::InvalidInput(fmt::format("{}: empty file", path));
  return Status::InvalidInput(Unrecognized(path, first_no, first));
}

Result<ingest::OpenedFile> OpenTelemetryFile(const std::string& path, const std::string& host,
                                             uint16_t host_index, const IngestOptions& options,
                                             InputDescription* description) {
  auto format = DetectInputFormat(path, options);
  if (!format.ok()) return format.status();
  ingest::ReaderOptions ro;
  ro.interval_ms = options.replay.interval_ms;
  ro.map = options.map;
  ro.wide_metric = options.wide_metric;
  ro.split_id = options.split_id;
  ro.limits.max_bad_fraction = options.replay.max_bad_row_fraction;
  ro.limits.max_bad_floor = options.replay.max_bad_rows_floor;
  Result<ingest::OpenedFile> opened = Status::Internal("unreachable");
  Compression compression = Compression::kNone;
  if (*format == InputFormat::kNvidiaSmi) {
    auto src = OpenNvsmiLog(path, host, host_index, options.replay);
    if (!src.ok()) return src.status();
    ingest::OpenedFile f;
    f.source = std::move(*src);
    f.description = "nvidia-smi log";
    opened = std::move(f);
  } else {
    auto reader = LineReader::Open(path);
    if (!reader.ok()) return reader.status();
    // Known from the first bytes; taken now, since a reader may free its line reader once it has
    // read everything (the Prometheus JSON one does).
    WW_RETURN_IF_ERROR((*reader)->Sniff());
    compression = (*reader)->compression();
    switch (*format) {
      case InputFormat::kDcgmiDmon:
        opened = ingest::OpenDcgmiDmon(std::move(*reader), host, host_index, ro);
        break;
      case InputFormat::kDcgmExporter:
        opened = ingest::OpenDcgmExporter(std::move(*reader), host, host_index, ro);
        break;
      case InputFormat::kSmiTable:
        opened = ingest::OpenSmiTable(std::move(*reader), host, host_index, ro);
        break;
      case InputFormat::kCustomCsv:
      case InputFormat::kWide:
        opened = ingest::OpenCustomCsv(std::move(*reader), host, host_index, ro, false);
        break;
      case InputFormat::kGpustat:
        opened = ingest::OpenGpustat(std::move(*reader), host, host_index, ro);
        break;
      case InputFormat::kLlview:
      case InputFormat::kTable:
        opened =
            ingest::OpenWhitespaceTable(std::move(*reader), host, host_index, ro,
                                        *format == InputFormat::kLlview, options.multiple_files);
        break;
      case InputFormat::kPromJson:
        if (host_index != 0 || options.multiple_files) {
          return Status::InvalidInput(fmt::format(
              "{}: a Prometheus JSON response holds its own hosts (by Hostname/instance); give it "
              "alone, or concatenate the responses into one file",
              path));
        }
        opened = ingest::OpenPromJson(std::move(*reader), host);
        break;
      case InputFormat::kWandb: {
        // W&B: JSON lines when the first record is an object, else the CSV export.
        std::string_view line;
        bool complete;
        bool jsonl = false;
        {
          auto peek = LineReader::Open(path);
          if (!peek.ok()) return peek.status();
          for (;;) {
            auto r = (*peek)->Next(&line, &complete);
            if (!r.ok()) return r.status();
            if (!*r) break;
            if (TrimSpace(line).empty()) continue;
            jsonl = TrimSpace(line).front() == '{';
            break;
          }
        }
        opened = jsonl ? ingest::OpenWandbJsonl(std::move(*reader), host, host_index, ro)
                       : ingest::OpenCustomCsv(std::move(*reader), host, host_index, ro, true);
        break;
      }
      default:
        return Status::Internal("unknown format");
    }
  }
  if (!opened.ok()) return opened.status();
  if (description) {
    description->path = path;
    description->format = InputFormatName(*format);
    description->fixed = opened->description;
    description->file = opened->file;
    description->compression = CompressionName(compression);
  }
  return opened;
}

Result<OpenedInputs> OpenTelemetryFiles(const std::vector<std::string>& paths,
                                        const IngestOptions& options) {
  if (paths.empty()) return Status::InvalidInput("no telemetry log given");
  if (paths.size() > 4096) return Status::InvalidInput("more than 4096 hosts");
  WW_RETURN_IF_ERROR(CheckDistinctInputs(paths));
  OpenedInputs out;
  IngestOptions each = options;
  each.multiple_files = paths.size() > 1;
  std::vector<std::unique_ptr<TelemetrySource>> parts;
  const std::vector<std::string> hosts = HostNamesForPaths(paths);
  for (size_t i = 0; i < paths.size(); ++i) {
    const std::string& host = hosts[i];
    if (paths[i] != "-" && host != HostNameFromPath(paths[i])) out.renamed_hosts = true;
    InputDescription d;
    auto f = OpenTelemetryFile(paths[i], host, static_cast<uint16_t>(i), each, &d);
    if (!f.ok()) return f.status();
    parts.push_back(std::move(f->source));
    out.inputs.push_back(std::move(d));
  }
  out.source = MergeSources(std::move(parts));
  return out;
}

}  // namespace ww
