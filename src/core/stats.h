// Order statistics shared by the watcher's self-report, `tokenize` and the benches.
// Pure; no thread-safety concerns.
#pragma once

#include <algorithm>
#include <cmath>
#include <vector>

namespace ww {

// Nearest-rank percentile of already sorted values: the value at rank ceil(q * n) (1-based),
// q in [0, 1]; q = 0 gives the minimum, q = 1 the maximum. T{} for no values.
template <typename T>
T PercentileOfSorted(const std::vector<T>& sorted, double q) {
  if (sorted.empty()) return T{};
  q = std::clamp(q, 0.0, 1.0);
  const double rank = std::ceil(q * static_cast<double>(sorted.size()));
  const size_t index = rank < 1 ? 0 : static_cast<size_t>(rank) - 1;
  return sorted[std::min(index, sorted.size() - 1)];
}

// The same on unsorted values (sorts a copy).
template <typename T>
T Percentile(std::vector<T> values, double q) {
  std::sort(values.begin(), values.end());
  return PercentileOfSorted(values, q);
}

}  // namespace ww
