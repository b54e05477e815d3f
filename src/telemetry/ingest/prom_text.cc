#include "telemetry/ingest/prom_text.h"

#include <charconv>
#include <cmath>
#include <limits>

namespace ww::ingest {
namespace {

bool IsNameStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
}
bool IsNameChar(char c) { return IsNameStart(c) || (c >= '0' && c <= '9'); }

bool ParseExpositionValue(std::string_view v, double* out) {
  if (v == "NaN" || v == "nan") {
    *out = std::numeric_limits<double>::quiet_NaN();
    return true;
  }
  if (v == "+Inf" || v == "Inf" || v == "inf") {
    *out = std::numeric_limits<double>::infinity();
    return true;
  }
  if (v == "-Inf" || v == "-inf") {
    *out = -std::numeric_limits<double>::infinity();
    return true;
  }
  if (!v.empty() && v.front() == '+') v.remove_prefix(1);
  if (v.empty()) return false;
  auto [ptr, ec] = std::from_chars(v.data(), v.data() + v.size(), *out);
  if (ec == std::errc::result_out_of_range) {
    *out = std::numeric_limits<double>::infinity();
    return true;
  }
  return ec == std::errc() && ptr == v.data() + v.size();
}

}  // namespace

bool IsPromSampleLine(std::string_view line, std::string_view prefix) {
  size_t i = 0;
  while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
  return line.substr(i, prefix.size()) == prefix;
}

bool ParsePromLine(std::string_view line, PromSample* out, std::string* error) {
  size_t i = 0;
  const size_t n = line.size();
  while (i < n && (line[i] == ' ' || line[i] == '\t')) ++i;
  const size_t name_start = i;
  if (i >= n || !IsNameStart(line[i])) {
    *error = "no metric name";
    return false;
  }
  while (i < n && IsNameChar(line[i])) ++i;
  out->name = line.substr(name_start, i - name_start);
  out->label_block = {};
  if (i < n && line[i] == '{') {
    const size_t block_start = ++i;
    bool in_quotes = false;
    for (; i < n; ++i) {
      const char c = line[i];
      if (in_quotes) {
        if (c == '\\') {
          ++i;
        } else if (c == '"') {
          in_quotes = false;
        }
      } else if (c == '"') {
        in_quotes = true;
      } else if (c == '}') {
        break;
      }
    }
    if (i >= n) {
      *error = in_quotes ? "unterminated label value" : "no closing '}'";
      return false;
    }
    out->label_block = line.substr(block_start, i - block_start);
    ++i;  // '}'
  }
  if (i >= n || (line[i] != ' ' && line[i] != '\t')) {
    *error = i >= n ? "no value" : "no space before the value";
    return false;
  }
  while (i < n && (line[i] == ' ' || line[i] == '\t')) ++i;
  size_t j = i;
  while (j < n && line[j] != ' ' && line[j] != '\t' && line[j] != '\r') ++j;
  if (j == i) {
    *error = "no value";
    return false;
  }
  if (!ParseExpositionValue(line.substr(i, j - i), &out->value)) {
    *error = "value is not a number";
    return false;
  }
  i = j;
  while (i < n && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
  out->timestamp_ms.reset();
  if (i < n) {
    j = i;
    while (j < n && line[j] != ' ' && line[j] != '\t' && line[j] != '\r') ++j;
    int64_t ts = 0;
    auto [ptr, ec] = std::from_chars(line.data() + i, line.data() + j, ts);
    if (ec != std::errc() || ptr != line.data() + j) {
      *error = "timestamp is not an integer (ms)";
      return false;
    }
    out->timestamp_ms = ts;
    i = j;
    while (i < n && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
    if (i < n) {
      *error = "text after the timestamp";
      return false;
    }
  }
  return true;
}

bool ParsePromLabels(std::string_view block, std::vector<PromLabel>* out,
                     std::deque<std::string>* scratch, std::string* error) {
  out->clear();
  size_t i = 0;
  const size_t n = block.size();
  for (;;) {
    while (i < n && (block[i] == ' ' || block[i] == '\t' || block[i] == ',')) ++i;
    if (i >= n) return true;
    const size_t name_start = i;
    if (!IsNameStart(block[i])) {
      *error = "bad label name";
      return false;
    }
    while (i < n && IsNameChar(block[i])) ++i;
    PromLabel l;
    l.name = block.substr(name_start, i - name_start);
    while (i < n && block[i] == ' ') ++i;
    if (i >= n || block[i] != '=') {
      *error = "label without '='";
      return false;
    }
    ++i;
    while (i < n && block[i] == ' ') ++i;
    if (i >= n || block[i] != '"') {
      *error = "label value not quoted";
      return false;
    }
    const size_t v_start = ++i;
    bool escaped = false;
    while (i < n && block[i] != '"') {
      if (block[i] == '\\') {
        escaped = true;
        ++i;
      }
      ++i;
    }
    if (i >= n) {
      *error = "unterminated label value";
      return false;
    }
    std::string_view raw = block.substr(v_start, i - v_start);
    ++i;  // closing quote
    if (escaped) {
      std::string u;
      for (size_t k = 0; k < raw.size(); ++k) {
        if (raw[k] == '\\' && k + 1 < raw.size()) {
          ++k;
          u += raw[k] == 'n' ? '\n' : raw[k];
        } else {
          u += raw[k];
        }
      }
      scratch->push_back(std::move(u));
      l.value = scratch->back();
    } else {
      l.value = raw;
    }
    out->push_back(l);
  }
}

}  // namespace ww::ingest
