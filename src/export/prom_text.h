// Prometheus text exposition format 0.0.4, written by hand: prometheus-cpp is not packaged in
// Debian bookworm, and the format is small. Numbers print the same in every locale (fmt), label
// values are escaped, and every family has HELP and TYPE lines, so `promtool check metrics` passes.
// Ownership: value types. Thread-safety: none; one thread builds an exposition.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ww::exposition {

using Labels = std::vector<std::pair<std::string_view, std::string_view>>;

// A float as Prometheus reads it: shortest round-trip digits, NaN, +Inf, -Inf.
std::string FormatValue(double v);
// Escapes \, " and newline in a label value.
std::string EscapeLabelValue(std::string_view v);

class TextWriter {
 public:
  // Starts a metric family. `type` is gauge, counter, histogram or untyped.
  void Family(std::string_view name, std::string_view type, std::string_view help);
  // One sample line: name{labels} value. `name` may carry a suffix (_bucket, _sum, _count).
  void Sample(std::string_view name, const Labels& labels, double value);
  const std::string& text() const { return out_; }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
};

// A cumulative histogram with fixed upper bounds (seconds, for latencies).
class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  void Observe(double v);
  // Writes name_bucket{...,le=}, name_sum and name_count (the family line is the caller's).
  void Write(TextWriter& w, std::string_view name, const Labels& labels) const;
  uint64_t count() const { return count_; }
  // The bound of the bucket holding the q-quantile (an upper estimate), +Inf past the last.
  double QuantileUpperBound(double q) const;

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // per bucket, not cumulative; last = +Inf
  double sum_ = 0;
  uint64_t count_ = 0;
};

}  // namespace ww::exposition
