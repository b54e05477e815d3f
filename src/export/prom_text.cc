#include "export/prom_text.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace ww::exposition {

std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  return fmt::format("{}", v);
}

std::string EscapeLabelValue(std::string_view v) {
  std::string out;
  out.reserve(v.size());
  for (char c : v) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

void TextWriter::Family(std::string_view name, std::string_view type, std::string_view help) {
  // HELP text escapes only \ and newline.
  std::string h;
  for (char c : help) {
    if (c == '\\') {
      h += "\\\\";
    } else if (c == '\n') {
      h += "\\n";
    } else {
      h += c;
    }
  }
  fmt::format_to(std::back_inserter(out_), "# HELP {} {}\n# TYPE {} {}\n", name, h, name, type);
}

void TextWriter::Sample(std::string_view name, const Labels& labels, double value) {
  out_ += name;
  bool first = true;
  for (const auto& [k, v] : labels) {
    if (v.empty()) continue;  // an empty label value is the same as no label
    out_ += first ? '{' : ',';
    first = false;
    fmt::format_to(std::back_inserter(out_), "{}=\"{}\"", k, EscapeLabelValue(v));
  }
  if (!first) out_ += '}';
  out_ += ' ';
  out_ += FormatValue(value);
  out_ += '\n';
}

Histogram::Histogram(std::vector<double> upper_bounds) : bounds_(std::move(upper_bounds)) {
  std::sort(bounds_.begin(), bounds_.end());
  counts_.assign(bounds_.size() + 1, 0);
}

void Histogram::Observe(double v) {
  const auto it = std::lower_bound(bounds_.begin(), bounds_.end(), v);
  ++counts_[static_cast<size_t>(it - bounds_.begin())];
  if (std::isfinite(v)) sum_ += v;
  ++count_;
}

void Histogram::Write(TextWriter& w, std::string_view name, const Labels& labels) const {
  const std::string bucket = std::string(name) + "_bucket";
  uint64_t cumulative = 0;
  Labels with_le = labels;
  with_le.emplace_back("le", "");
  for (size_t i = 0; i <= bounds_.size(); ++i) {
    cumulative += counts_[i];
    const std::string le = i < bounds_.size() ? FormatValue(bounds_[i]) : "+Inf";
    with_le.back().second = le;
    w.Sample(bucket, with_le, static_cast<double>(cumulative));
  }
  w.Sample(std::string(name) + "_sum", labels, sum_);
  w.Sample(std::string(name) + "_count", labels, static_cast<double>(count_));
}

double Histogram::QuantileUpperBound(double q) const {
  if (count_ == 0) return 0;
  const double target = q * static_cast<double>(count_);
  uint64_t cumulative = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cumulative += counts_[i];
    if (static_cast<double>(cumulative) >= target) return bounds_[i];
  }
  return std::numeric_limits<double>::infinity();
}

}  // namespace ww::exposition
