// What one telemetry format is to the rest of wattwatch: a row naming it, saying how to recognize
// it from the content, how to open it, and what the simulator writes in it. Each reader file
// defines its format's row next to its reader; the registry (formats.cc, `Formats()`) lists the
// rows, and everything that enumerates formats (--format parsing and its help, detection, opening,
// the "not recognized" message, the ingest fuzz target, docs/triage.md's list, checked by a test)
// loops over them.
//
// Adding a format: a reader file defining `const Format kXxxFormat` and one line in formats.cc;
// for `simulate --format`, a writer file defining its WriterRow, attached to the Format row.
// Ownership: rows are constants with static storage. Thread-safety: immutable, any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/status.h"
#include "telemetry/ingest/file_source.h"
#include "telemetry/ingest/nvsmi_log.h"
#include "telemetry/write/sample_writers.h"

namespace ww {

namespace ingest {
struct Format;
}
// A format, or nullptr for "auto" (recognized from the content).
using InputFormat = const ingest::Format*;

struct IngestOptions {
  InputFormat format = nullptr;  // nullptr: recognized from the content
  ReplayOptions replay;          // the nvidia-smi reader's options; interval_ms serves every format
  std::vector<std::pair<std::string, std::string>> map;  // --map FIELD=COLUMN
  std::string wide_metric;      // --wide METRIC: what `GPU 0`-style columns hold
  std::string split_id;         // --split-id COLUMN: a `<host>_<gpu>` column of a whitespace table
  int year = 0;                 // --year: for hl-smi's cut years; 0: unset
  bool multiple_files = false;  // set by OpenTelemetryFiles: a prometheus-json file must be alone
};

namespace ingest {

// One significant line of a file being recognized (blank lines and a leading `date` line are
// skipped before it), with what came before it.
struct DetectLine {
  std::string_view text;   // trimmed
  std::string_view raw;    // as read (a NUL byte says binary)
  std::string_view first;  // the first significant line, trimmed (== text when index is 0)
  int index = 0;           // 0: the first significant line, 1: the second, ...
  const IngestOptions& options;
};

// One way to recognize a format. Detection reads the file's first 4 KiB once and asks every
// kHead rule, then reads significant lines (at most 4000 lines or 1 MiB) and asks every kLine
// rule of every format about each, in ascending priority over all formats: the first rule that
// matches names the format. Priorities are unique (a test checks); a rule that only judges the
// first line tests `index == 0`.
struct DetectRule {
  enum Phase { kHead, kLine };
  int priority;
  Phase phase;
  bool (*matches)(const DetectLine& line);  // kHead: `text` holds the first 4 KiB
};

// What a reader is opened with.
struct OpenRequest {
  const std::string& path;
  const std::string& host;
  uint16_t host_index;
  const IngestOptions& options;
  const ReaderOptions& reader;  // options translated for the readers of ingest/
};

struct Format {
  const char* name;  // --format NAME
  const char* what;  // what it reads, in words: --help, docs, the "not recognized" message
  std::span<const DetectRule> detect;
  // `lines` is the file opened and sniffed (compression known), or nullptr when `opens_path`.
  Result<OpenedFile> (*open)(const OpenRequest& request, std::unique_ptr<LineReader> lines);
  // What `simulate --format` writes that this reader reads back (write/sample_writers.h): rows
  // defined next to their writers; none for a format the simulator does not write.
  std::span<const write::WriterRow> writers = {};
  // The reader opens the path itself (it names a binary or unreadable file in its own words),
  // and detection hands it such files.
  bool opens_path = false;
};

// Format::open for a reader opened as `Open(lines, host, host_index, reader_options)`.
template <auto kOpen>
Result<OpenedFile> OpenLines(const OpenRequest& request, std::unique_ptr<LineReader> lines) {
  return kOpen(std::move(lines), request.host, request.host_index, request.reader);
}

// Every format, in the order --help and the docs list them.
std::span<const Format* const> Formats();

}  // namespace ingest
}  // namespace ww
