// simulate's output formats from the writer rows of the format registry (output_format.h).
#include "telemetry/sim/output_format.h"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

namespace ww::sim {

std::span<const OutputFormat> OutputFormats() {
  static const std::vector<OutputFormat> formats = [] {
    std::vector<OutputFormat> out;
    for (const ingest::Format* f : ingest::Formats()) {
      for (const write::WriterRow& w : f->writers) {
        out.push_back({w.name != nullptr ? w.name : f->name, &w, f});
      }
    }
    std::stable_sort(out.begin(), out.end(), [](const OutputFormat& a, const OutputFormat& b) {
      return a.writer->order < b.writer->order;
    });
    return out;
  }();
  return formats;
}

const OutputFormat& DefaultOutputFormat() { return OutputFormats().front(); }

Result<const OutputFormat*> ParseOutputFormat(std::string_view name) {
  for (const OutputFormat& f : OutputFormats()) {
    if (name == f.name) return &f;
  }
  return Status::InvalidInput(
      fmt::format("--format {}: unknown; formats: {}", name, OutputFormatNames()));
}

std::string OutputFormatNames() {
  std::string out;
  for (const OutputFormat& f : OutputFormats()) {
    if (!out.empty()) out += ", ";
    out += f.name;
  }
  return out;
}

std::string OutputFormatHelp() {
  constexpr int kNameWidth = 16;
  const std::string indent(2 + kNameWidth + 1, ' ');
  std::string out;
  for (const OutputFormat& f : OutputFormats()) {
    if (f.writer->help == nullptr) continue;
    // The default says so; a line break in the text continues under its first line.
    std::string text = &f == &DefaultOutputFormat() ? "(default) " : "";
    for (const char* c = f.writer->help; *c != '\0'; ++c) {
      text += *c;
      if (*c == '\n') text += indent;
    }
    fmt::format_to(std::back_inserter(out), "  {:<{}} {}\n", f.name, kNameWidth, text);
    if (f.writer->example != nullptr) {
      fmt::format_to(std::back_inserter(out), "{}  wattwatch simulate {}\n", indent,
                     fmt::format(fmt::runtime(f.writer->example), f.name));
    }
  }
  return out;
}

Status CheckOutputInterval(const OutputFormat& format, int64_t interval_ms) {
  if (format.writer->whole_seconds_because != nullptr && interval_ms % 1000 != 0) {
    return Status::InvalidInput(
        fmt::format("--format {}: --interval-ms {} is not whole seconds ({})", format.name,
                    interval_ms, format.writer->whole_seconds_because));
  }
  return Status::Ok();
}

}  // namespace ww::sim
