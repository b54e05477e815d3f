#include "measure/scaling.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

namespace ww::measure {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r'))
    s.remove_suffix(1);
  if (s.size() >= 2 && s.front() == '"' && s.back() == '"') s = s.substr(1, s.size() - 2);
  return s;
}

std::vector<std::string_view> SplitFields(std::string_view line) {
  std::vector<std::string_view> out;
  size_t start = 0;
  while (true) {
    const size_t comma = line.find(',', start);
    out.push_back(Trim(line.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start)));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Shown in messages; input lines can be arbitrary bytes, so keep it short and printable.
std::string Quote(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 40)) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  if (s.size() > 40) out += "...";
  return "\"" + out + "\"";
}

}  // namespace

Result<std::vector<ScalingPoint>> ParseScalingCsv(std::string_view text,
                                                  const std::string& source) {
  std::vector<ScalingPoint> points;
  std::optional<size_t> gpus_col, tps_col;
  size_t columns = 0;
  int line_no = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    const std::string_view trimmed = Trim(line);
    if (trimmed.empty() || trimmed.front() == '#') continue;  // blank lines and comments
    const std::vector<std::string_view> fields = SplitFields(line);
    if (!gpus_col) {
      for (size_t i = 0; i < fields.size(); ++i) {
        const std::string name = Lower(fields[i]);
        if (name == "gpus") gpus_col = i;
        if (name == "tokens_per_s") tps_col = i;
      }
      if (!gpus_col || !tps_col) {
        return Status::InvalidInput(
            fmt::format("{}:{}: expected a header naming the columns gpus and tokens_per_s (e.g. "
                        "\"gpus,tokens_per_s\"), got {}",
                        source, line_no, Quote(trimmed)));
      }
      columns = fields.size();
      continue;
    }
    if (fields.size() != columns) {
      return Status::InvalidInput(fmt::format("{}:{}: {} fields, the header has {}", source,
                                              line_no, fields.size(), columns));
    }
    ScalingPoint p;
    p.line = line_no;
    const std::string_view g = fields[*gpus_col];
    auto [gend, gec] = std::from_chars(g.data(), g.data() + g.size(), p.gpus);
    if (g.empty() || gec != std::errc() || gend != g.data() + g.size() || p.gpus <= 0) {
      return Status::InvalidInput(
          fmt::format("{}:{}: gpus: {} is not a positive integer", source, line_no, Quote(g)));
    }
    const std::string_view t = fields[*tps_col];
    auto [tend, tec] = std::from_chars(t.data(), t.data() + t.size(), p.tokens_per_s);
    if (t.empty() || tec != std::errc() || tend != t.data() + t.size() ||
        !std::isfinite(p.tokens_per_s) || p.tokens_per_s <= 0) {
      return Status::InvalidInput(fmt::format("{}:{}: tokens_per_s: {} is not a positive number",
                                              source, line_no, Quote(t)));
    }
    for (const ScalingPoint& q : points) {
      if (q.gpus == p.gpus) {
        return Status::InvalidInput(
            fmt::format("{}:{}: gpus: {} GPUs already measured on line {} (one row per GPU count; "
                        "average repeated runs first)",
                        source, line_no, p.gpus, q.line));
      }
    }
    points.push_back(p);
  }
  if (!gpus_col)
    return Status::InvalidInput(
        fmt::format("{}: empty: expected a header \"gpus,tokens_per_s\" and rows", source));
  if (points.size() < 2) {
    return Status::InvalidInput(
        fmt::format("{}: {} row{}: scaling needs throughput at 2 or more GPU counts", source,
                    points.size(), points.size() == 1 ? "" : "s"));
  }
  std::stable_sort(points.begin(), points.end(),
                   [](const ScalingPoint& a, const ScalingPoint& b) { return a.gpus < b.gpus; });
  return points;
}

ScalingReport ComputeScaling(const std::vector<ScalingPoint>& points, double min_efficiency) {
  ScalingReport report;
  report.min_efficiency = min_efficiency;
  if (points.empty()) return report;
  const ScalingPoint& base = points.front();
  for (size_t i = 0; i < points.size(); ++i) {
    const ScalingPoint& p = points[i];
    ScalingRow row;
    row.gpus = p.gpus;
    row.tokens_per_s = p.tokens_per_s;
    row.speedup = p.tokens_per_s / base.tokens_per_s;
    row.ideal_speedup = static_cast<double>(p.gpus) / static_cast<double>(base.gpus);
    row.efficiency = row.speedup / row.ideal_speedup;
    row.tokens_per_s_per_gpu = p.tokens_per_s / static_cast<double>(p.gpus);
    if (i > 0) {
      const ScalingPoint& prev = points[i - 1];
      row.marginal_tokens_per_s_per_gpu =
          (p.tokens_per_s - prev.tokens_per_s) / static_cast<double>(p.gpus - prev.gpus);
    }
    row.below_threshold = row.efficiency < min_efficiency;
    report.any_below_threshold = report.any_below_threshold || row.below_threshold;
    report.rows.push_back(row);
  }
  return report;
}

nlohmann::json ScalingToJson(const ScalingReport& r) {
  nlohmann::json j;
  j["min_efficiency"] = r.min_efficiency;
  j["baseline_gpus"] =
      r.rows.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.rows.front().gpus);
  j["rows"] = nlohmann::json::array();
  for (const ScalingRow& row : r.rows) {
    j["rows"].push_back(
        {{"gpus", row.gpus},
         {"tokens_per_s", row.tokens_per_s},
         {"speedup", row.speedup},
         {"ideal_speedup", row.ideal_speedup},
         {"efficiency", row.efficiency},
         {"tokens_per_s_per_gpu", row.tokens_per_s_per_gpu},
         {"marginal_tokens_per_s_per_gpu", row.marginal_tokens_per_s_per_gpu
                                               ? nlohmann::json(*row.marginal_tokens_per_s_per_gpu)
                                               : nlohmann::json(nullptr)},
         {"below_threshold", row.below_threshold}});
  }
  j["any_below_threshold"] = r.any_below_threshold;
  return j;
}

std::string FormatScaling(const ScalingReport& r) {
  if (r.rows.empty()) return "no rows\n";
  std::string out = fmt::format("strong scaling against {} GPUs (efficiency threshold {:.2f})\n\n",
                                r.rows.front().gpus, r.min_efficiency);
  out += fmt::format("{:>6} {:>14} {:>9} {:>7} {:>11} {:>13} {:>22}\n", "gpus", "tokens/s",
                     "speedup", "ideal", "efficiency", "tok/s/GPU", "tok/s per added GPU");
  for (const ScalingRow& row : r.rows) {
    out += fmt::format("{:>6} {:>14.1f} {:>8.2f}x {:>6.2f}x {:>11.3f} {:>13.1f} {:>22}{}\n",
                       row.gpus, row.tokens_per_s, row.speedup, row.ideal_speedup, row.efficiency,
                       row.tokens_per_s_per_gpu,
                       row.marginal_tokens_per_s_per_gpu
                           ? fmt::format("{:.1f}", *row.marginal_tokens_per_s_per_gpu)
                           : std::string("(baseline)"),
                       row.below_threshold ? "  <- below threshold" : "");
  }
  const ScalingRow& base = r.rows.front();
  out += fmt::format("\nlinear would add {:.1f} tok/s per GPU (the baseline's tok/s/GPU)\n",
                     base.tokens_per_s_per_gpu);
  for (const ScalingRow& row : r.rows) {
    if (!row.below_threshold) continue;
    out += fmt::format(
        "FLAG: {} GPUs run at {:.0f} % of linear ({:.2f}x instead of {:.2f}x): under {:.0f} %\n",
        row.gpus, 100.0 * row.efficiency, row.speedup, row.ideal_speedup, 100.0 * r.min_efficiency);
  }
  if (!r.any_below_threshold) {
    out += fmt::format("every GPU count scales at or above {:.0f} % of linear\n",
                       100.0 * r.min_efficiency);
  }
  return out;
}

int ScalingExitCode(const ScalingReport& r) { return r.any_below_threshold ? 1 : 0; }

Result<int> RunScalingCommand(Env* env, const ScalingCommandOptions& options, std::string* out) {
  auto text = env->ReadFileToString(options.runs_path, uint64_t{16} << 20);
  if (!text.ok()) return text.status();
  auto points = ParseScalingCsv(*text, options.runs_path);
  if (!points.ok()) return points.status();
  const ScalingReport report = ComputeScaling(*points, options.min_efficiency);
  *out = options.json ? ScalingToJson(report).dump(2) + "\n" : FormatScaling(report);
  return ScalingExitCode(report);
}

}  // namespace ww::measure
