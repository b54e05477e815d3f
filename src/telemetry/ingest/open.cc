#include "telemetry/ingest/open.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "core/strings.h"
#include "core/timefmt.h"
#include "telemetry/ingest/amd_smi.h"
#include "telemetry/ingest/gpustat.h"
#include "telemetry/ingest/merged_source.h"
#include "telemetry/ingest/output_paths.h"
#include "telemetry/ingest/table_csv.h"

namespace ww {
namespace {

// How far detection looks: dcgm-exporter lines or an nvidia-smi table may come after a page of
// other output (a CI log, a Slurm .out), so not only the first line.
constexpr int kSniffLines = 4000;
constexpr uint64_t kSniffBytes = 1 << 20;

// "nvidia-smi --query-gpu CSV ..., dcgmi dmon text, ..." from the rows.
std::string FormatList() {
  std::string out;
  for (const ingest::Format* f : ingest::Formats()) {
    out += fmt::format("{}{} ({})", out.empty() ? "" : ", ", f->what, f->name);
  }
  return out;
}

struct OrderedRule {
  const ingest::DetectRule* rule;
  const ingest::Format* format;
};

// The rules of one phase over every format, ascending priority (built once).
const std::vector<OrderedRule>& Rules(ingest::DetectRule::Phase phase) {
  static const auto build = [](ingest::DetectRule::Phase p) {
    std::vector<OrderedRule> rules;
    for (const ingest::Format* f : ingest::Formats()) {
      for (const ingest::DetectRule& r : f->detect) {
        if (r.phase == p) rules.push_back({&r, f});
      }
    }
    std::sort(rules.begin(), rules.end(), [](const OrderedRule& a, const OrderedRule& b) {
      return a.rule->priority < b.rule->priority;
    });
    return rules;
  };
  static const std::vector<OrderedRule> head = build(ingest::DetectRule::kHead);
  static const std::vector<OrderedRule> line = build(ingest::DetectRule::kLine);
  return phase == ingest::DetectRule::kHead ? head : line;
}

// The reader that names binary and unreadable files.
InputFormat PathReader() {
  for (const ingest::Format* f : ingest::Formats()) {
    if (f->opens_path) return f;
  }
  return nullptr;
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
  if (name == "auto") return InputFormat{nullptr};
  for (const ingest::Format* f : ingest::Formats()) {
    if (name == f->name) return f;
  }
  return Status::InvalidInput(
      fmt::format("--format: unknown format '{}' (expected auto, {})", name, InputFormatNames()));
}

const char* InputFormatName(InputFormat f) { return f ? f->name : "auto"; }

std::string InputFormatNames() {
  std::string out;
  for (const ingest::Format* f : ingest::Formats()) {
    if (!out.empty()) out += ", ";
    out += f->name;
  }
  return out;
}

std::string InputFormatHelp() {
  std::string out;
  for (const ingest::Format* f : ingest::Formats()) {
    out += fmt::format("  {:<16} {}\n", f->name, f->what);
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
  if (!joined.empty()) d += "; " + joined;
  return fmt::format("{}: {}{}", path, compression.empty() ? "" : compression + ", ", d);
}

Result<InputFormat> DetectInputFormat(const std::string& path, const IngestOptions& options) {
  if (options.format) return options.format;
  {
    // A saved Prometheus API response is one JSON line, often longer than a line reader takes.
    auto peek = LineReader::Open(path);
    if (!peek.ok()) return peek.status();
    std::string head;
    if ((*peek)->ReadUpTo(4096, &head).ok()) {
      const ingest::DetectLine h{head, head, head, 0, options};
      for (const OrderedRule& r : Rules(ingest::DetectRule::kHead)) {
        if (r.rule->matches(h)) return r.format;
      }
    }
  }
  auto reader = LineReader::Open(path);
  if (!reader.ok()) return reader.status();
  std::string_view line;
  bool complete;
  std::string first;
  int64_t first_no = 0;
  int lines = 0;
  int index = 0;
  for (;;) {
    auto r = (*reader)->Next(&line, &complete);
    if (!r.ok()) {
      // A binary file with no newline for a megabyte: the path-opening reader names it.
      if (first_no == 0) return PathReader();
      return r.status();
    }
    if (!*r) break;
    const std::string_view t = TrimSpace(line);
    if (t.empty()) continue;
    // `date; nvidia-smi --query-gpu=... --format=csv` in a loop: the date is not the first line.
    if (first_no == 0 && ingest::IsDateLine(t)) continue;
    if (first_no == 0) {
      first = std::string(t);
      first_no = (*reader)->line_number();
      if (line.find('\0') != std::string_view::npos) return PathReader();  // binary
    }
    const ingest::DetectLine here{t, line, first, index++, options};
    for (const OrderedRule& rule : Rules(ingest::DetectRule::kLine)) {
      if (rule.rule->matches(here)) return rule.format;
    }
    if (++lines >= kSniffLines || (*reader)->bytes_read() > kSniffBytes) break;
  }
  if (first_no == 0) return Status::InvalidInput(fmt::format("{}: empty file", path));
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
  ro.year = options.year;
  ro.limits.max_bad_fraction = options.replay.max_bad_row_fraction;
  ro.limits.max_bad_floor = options.replay.max_bad_rows_floor;
  const ingest::OpenRequest request{path, host, host_index, options, ro};
  Compression compression = Compression::kNone;
  std::unique_ptr<LineReader> lines;
  if (!(*format)->opens_path) {
    auto reader = LineReader::Open(path);
    if (!reader.ok()) return reader.status();
    // Known from the first bytes; taken now, since a reader may free its line reader once it has
    // read everything (the Prometheus JSON one does).
    WW_RETURN_IF_ERROR((*reader)->Sniff());
    compression = (*reader)->compression();
    lines = std::move(*reader);
  }
  Result<ingest::OpenedFile> opened = (*format)->open(request, std::move(lines));
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

namespace {

// The split rocm-smi layout's halves among the files (kNone for every other file), looked at
// only when the split format may be what they are.
std::vector<ingest::SplitHalf> SplitHalves(const std::vector<std::string>& paths,
                                           const IngestOptions& options) {
  std::vector<ingest::SplitHalf> halves(paths.size(), ingest::SplitHalf::kNone);
  if (options.format && std::string_view(options.format->name) != "rocm-smi-split") return halves;
  for (size_t i = 0; i < paths.size(); ++i) {
    // Regular files only: a pipe read here would lose its first line.
    std::error_code ec;
    if (paths[i] != "-" && std::filesystem::is_regular_file(paths[i], ec)) {
      halves[i] = ingest::SplitHalfOfFile(paths[i]);
    }
  }
  return halves;
}

}  // namespace

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
  auto groups = ingest::GroupSplitHalves(paths, SplitHalves(paths, options));
  if (!groups.ok()) return groups.status();
  for (const ingest::HostFiles& group : *groups) {
    const auto host_index = static_cast<uint16_t>(parts.size());
    if (group.files.size() == 2) {
      // One host's split rocm-smi data: named after the stem the two share, else their folder
      // (node3/power.csv, node3/usage.csv).
      const std::string& power = paths[group.files[0]];
      const std::string& use = paths[group.files[1]];
      std::string host = group.stem;
      if (host.empty()) {
        std::error_code ec;
        host = std::filesystem::absolute(power, ec).lexically_normal().parent_path().filename();
        if (ec || host.empty()) host = hosts[group.files[0]];
      }
      if (host != HostNameFromPath(power)) out.renamed_hosts = true;
      std::unique_ptr<TelemetrySource> halves[2];
      for (int h = 0; h < 2; ++h) {
        InputDescription d;
        auto f = OpenTelemetryFile(paths[group.files[h]], host, host_index, each, &d);
        if (!f.ok()) return f.status();
        d.joined = fmt::format("joined with {} by (time, device) as host '{}'",
                               h == 0 ? use : power, host);
        halves[h] = std::move(f->source);
        out.inputs.push_back(std::move(d));
      }
      parts.push_back(
          ingest::JoinSplitHalves(std::move(halves[0]), std::move(halves[1]), power, use));
      out.host_paths.push_back(power + " + " + use);
      continue;
    }
    const size_t i = group.files[0];
    const std::string& host = hosts[i];
    if (paths[i] != "-" && host != HostNameFromPath(paths[i])) out.renamed_hosts = true;
    InputDescription d;
    auto f = OpenTelemetryFile(paths[i], host, host_index, each, &d);
    if (!f.ok()) return f.status();
    parts.push_back(std::move(f->source));
    out.inputs.push_back(std::move(d));
    out.host_paths.push_back(paths[i]);
  }
  out.source = MergeSources(std::move(parts));
  return out;
}

}  // namespace ww
