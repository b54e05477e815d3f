#include "fleet/jobs.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>

#include "core/strings.h"

namespace ww::fleet {

Result<std::vector<std::string>> ParseJobLabels(std::string_view flag) {
  std::vector<std::string> names;
  auto is_label_name = [](std::string_view n) {
    for (size_t i = 0; i < n.size(); ++i) {
      const char c = n[i];
      const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
      if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
    }
    return !n.empty();
  };
  size_t at = 0;
  while (at <= flag.size()) {
    size_t comma = flag.find(',', at);
    if (comma == std::string_view::npos) comma = flag.size();
    const std::string name(TrimSpace(flag.substr(at, comma - at)));
    if (name.empty()) {
      return Status::InvalidInput(
          fmt::format("--job-label '{}': an empty label name (expected e.g. hpc_job or "
                      "namespace,pod)",
                      flag));
    }
    if (name.rfind("__", 0) == 0) {
      // __name__ and the other reserved labels name a series, never a job: every GPU would
      // be unattributed, or each metric its own job.
      return Status::InvalidInput(fmt::format(
          "--job-label '{}': '{}' is a reserved Prometheus label (names starting with __ are "
          "the metric name and internal labels, not a job); use the label that names the job, "
          "e.g. hpc_job, or namespace,pod",
          flag, name));
    }
    if (!is_label_name(name)) {
      return Status::InvalidInput(
          fmt::format("--job-label '{}': '{}' is not a Prometheus label name "
                      "([a-zA-Z_][a-zA-Z0-9_]*; e.g. hpc_job, or namespace,pod)",
                      flag, name));
    }
    if (std::find(names.begin(), names.end(), name) != names.end()) {
      return Status::InvalidInput(fmt::format("--job-label '{}': '{}' twice", flag, name));
    }
    names.push_back(name);
    at = comma + 1;
  }
  return names;
}

std::optional<std::string> JobIdOf(const std::map<std::string, std::string>& labels,
                                   const std::vector<std::string>& names) {
  std::string id;
  for (size_t i = 0; i < names.size(); ++i) {
    auto it = labels.find(names[i]);
    if (it == labels.end() || it->second.empty()) return std::nullopt;
    if (i > 0) id.push_back('/');
    id += it->second;
  }
  return id;
}

uint64_t Fnv1a64(std::string_view bytes) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

uint64_t Fmix64(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  return h;
}

Result<Shard> ParseShard(std::string_view flag) {
  const std::string_view t = TrimSpace(flag);
  const size_t slash = t.find('/');
  Shard s;
  const auto num = [](std::string_view part, uint32_t* out) {
    const auto [p, ec] = std::from_chars(part.data(), part.data() + part.size(), *out);
    return ec == std::errc() && p == part.data() + part.size() && !part.empty();
  };
  if (slash == std::string_view::npos || !num(t.substr(0, slash), &s.index) ||
      !num(t.substr(slash + 1), &s.count) || s.count == 0 || s.count > 4096 || s.index >= s.count) {
    return Status::InvalidInput(fmt::format(
        "--shard '{}': expected K/N with 0 <= K < N <= 4096 (replica K of N, e.g. 0/2 and 1/2)",
        flag));
  }
  return s;
}

}  // namespace ww::fleet
