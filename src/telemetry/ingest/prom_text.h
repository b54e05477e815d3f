// The Prometheus text exposition format, one sample line at a time:
//   metric_name{label="value",...} VALUE [TIMESTAMP_MS]
// (https://prometheus.io/docs/instrumenting/exposition_formats/). Reusable by anything that has
// a scrape body: the dcgm-exporter file reader here, and a live scraper calling it on each line
// of an HTTP response. `# HELP` / `# TYPE` / blank lines are the caller's to skip.
// Pure functions; the parsed sample borrows from the line (and from `scratch` for label values
// with escapes), valid until the next call.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ww::ingest {

struct PromLabel {
  std::string_view name;
  std::string_view value;  // unescaped
};

struct PromSample {
  std::string_view name;
  std::string_view label_block;  // the raw text between the braces ("" without labels)
  double value = 0;              // NaN for "NaN"; +-Inf for "+Inf"/"-Inf"
  std::optional<int64_t> timestamp_ms;
};

// Splits a sample line into name, raw label block, value and timestamp. false with *error (a
// short reason: "no value", "unterminated label value", ...) for a malformed line.
bool ParsePromLine(std::string_view line, PromSample* out, std::string* error);

// Parses a raw label block into labels; escaped values (\\ \" \n) are unescaped into scratch.
bool ParsePromLabels(std::string_view block, std::vector<PromLabel>* out,
                     std::deque<std::string>* scratch, std::string* error);

// True for a line that starts a metric sample named with the prefix (e.g. "DCGM_FI_"), after
// optional leading blanks.
bool IsPromSampleLine(std::string_view line, std::string_view prefix);

}  // namespace ww::ingest
