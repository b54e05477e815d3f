#include "report/top_view.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/format.h"
#include "core/timefmt.h"

namespace ww::report {

const char* TopSortName(TopSort s) {
  switch (s) {
    case TopSort::kGpu:
      return "gpu";
    case TopSort::kPower:
      return "power";
    case TopSort::kState:
      return "state";
  }
  return "gpu";
}

TopModel::TopModel(triage::TriageOptions options) : engine_(options, this) {}

void TopModel::SetSourceInfo(const std::vector<std::string>& hosts,
                             const std::vector<GpuInfo>& gpus) {
  hosts_ = hosts;
  engine_.SetHostNames(hosts);
  engine_.SetGpuInfo(gpus);
  for (const GpuInfo& g : gpus) {
    if (!g.name.empty()) names_[g.key] = g.name;
  }
}

void TopModel::Add(const GpuSample& s) {
  engine_.Add(s);
  auto it = rows_.find(s.key);
  if (it == rows_.end()) {
    TopRow r;
    r.key = s.key;
    const std::string host =
        s.key.host < hosts_.size() ? hosts_[s.key.host] : fmt::format("host{}", s.key.host);
    r.label = fmt::format("{}/GPU{}", host, s.key.gpu);
    auto n = names_.find(s.key);
    if (n != names_.end()) r.name = n->second;
    it = rows_.emplace(s.key, std::move(r)).first;
  }
  TopRow& r = it->second;
  r.last_ms = s.timestamp_ms;
  last_ms_ = std::max(last_ms_, s.timestamp_ms);
  // A field missing from this sample shows as unknown, not as the stale value (rule 2).
  r.power_w = s.power_w ? s.power_w : s.power_instant_w;
  if (s.power_limit_w) r.power_limit_w = s.power_limit_w;
  r.util_pct = s.util_gpu_pct;
  r.mem_used_mib = s.mem_used_mib;
  if (s.mem_total_mib) r.mem_total_mib = s.mem_total_mib;
  r.sm_clock_mhz = s.sm_clock_mhz;
  r.temperature_c = s.temperature_c;
  if (r.power_w) {
    r.peak_power_w = std::max(r.peak_power_w, *r.power_w);
    const int64_t second = s.timestamp_ms / 1000;
    const float p = static_cast<float>(*r.power_w);
    if (second != r.history_second || r.power_history_w.empty()) {
      r.power_history_w.push_back(p);
      r.history_second = second;
      if (r.power_history_w.size() > kHistoryPoints) r.power_history_w.pop_front();
    } else {
      r.power_history_w.back() = std::max(r.power_history_w.back(), p);
    }
  }
}

const triage::HangEpisode* TopModel::latest_hang() const {
  if (const auto* h = engine_.active_hang()) return h;
  return last_hang_ ? &*last_hang_ : nullptr;
}

std::vector<GpuKey> SortedKeys(const TopModel& model, TopSort sort) {
  std::vector<GpuKey> keys;
  for (const auto& [k, r] : model.rows()) keys.push_back(k);
  if (sort == TopSort::kPower) {
    std::stable_sort(keys.begin(), keys.end(), [&](GpuKey a, GpuKey b) {
      return model.rows().at(a).power_w.value_or(-1) > model.rows().at(b).power_w.value_or(-1);
    });
  } else if (sort == TopSort::kState) {
    // Worst first: hang, checkpoint, starved, communication, compute, idle, unknown.
    auto rank = [&](GpuKey k) {
      auto s = model.state(k);
      return s ? -static_cast<int>(*s) : 1;
    };
    std::stable_sort(keys.begin(), keys.end(),
                     [&](GpuKey a, GpuKey b) { return rank(a) < rank(b); });
  }
  return keys;
}

namespace {

const char* StateColor(GpuState s) {
  switch (s) {
    case GpuState::kIdle:
      return "\x1b[90m";
    case GpuState::kCompute:
      return "\x1b[32m";
    case GpuState::kCommunication:
      return "\x1b[36m";
    case GpuState::kDataStarved:
      return "\x1b[33m";
    case GpuState::kCheckpoint:
      return "\x1b[35m";
    case GpuState::kHang:
      return "\x1b[1;31m";
  }
  return "";
}

std::string CompactDuration(double s) { return FormatDuration(s, /*compact=*/true); }

// Clips a plain (ASCII) string to n columns.
std::string Clip(std::string s, int n) {
  if (n <= 0) return "";
  if (static_cast<int>(s.size()) > n) s.resize(static_cast<size_t>(n));
  return s;
}

std::string Sparkline(const std::deque<float>& h, int width, double scale_w) {
  static const char* kBlocks[] = {"\u2581", "\u2582", "\u2583", "\u2584",
                                  "\u2585", "\u2586", "\u2587", "\u2588"};
  std::string out;
  if (width <= 0 || scale_w <= 0) return out;
  const size_t n = std::min(h.size(), static_cast<size_t>(width));
  for (int i = 0; i < width - static_cast<int>(n); ++i) out += ' ';
  for (size_t i = h.size() - n; i < h.size(); ++i) {
    const double f = std::clamp(h[i] / scale_w, 0.0, 1.0);
    out += kBlocks[std::min(7, static_cast<int>(f * 7.999))];
  }
  return out;
}

std::string KeyList(const TopModel& m, const std::vector<GpuKey>& keys) {
  std::string s;
  for (GpuKey k : keys) {
    auto it = m.rows().find(k);
    s += (s.empty() ? "" : ", ") +
         (it != m.rows().end() ? it->second.label : fmt::format("host{}/GPU{}", k.host, k.gpu));
  }
  return s.empty() ? "undetermined" : s;
}

}  // namespace

std::vector<std::string> RenderTop(const TopModel& model, const TopViewState& v) {
  std::vector<std::string> lines;
  const int width = std::max(40, v.width);
  const char* reset = v.color ? "\x1b[0m" : "";
  const char* bold = v.color ? "\x1b[1m" : "";
  const char* rev = v.color ? "\x1b[7m" : "";

  std::string head = fmt::format("wattwatch top - {} - {} - {} GPUs - sort: {}", v.source_label,
                                 model.last_ms() ? FormatIsoMs(model.last_ms()) : "waiting",
                                 model.rows().size(), TopSortName(v.sort));
  if (v.finished) head += " - end of input";
  lines.push_back(std::string(bold) + Clip(head, width) + reset);

  const triage::HangEpisode* hang = model.latest_hang();
  const bool active = model.hang_active();
  std::vector<GpuKey> culprits;
  if (hang) culprits = hang->culprits;

  // Fixed columns: marker 2, label 15, state 14, power 24, util 6, mem 17 = 78, then sparkline.
  const int fixed = 2 + 15 + 14 + 24 + 6 + 17;
  const int spark_w = std::clamp(width - fixed - 12, 0, static_cast<int>(TopModel::kHistoryPoints));
  lines.push_back(Clip(
      fmt::format("  {:<15}{:<14}{:<24}{:>5} {:<17}{}", "GPU", "STATE", "POWER / LIMIT", "UTIL",
                  "  MEMORY", spark_w > 0 ? "POWER, last " + std::to_string(spark_w) + " s" : ""),
      width));

  const std::vector<GpuKey> keys = SortedKeys(model, v.sort);
  const int selected =
      keys.empty() ? 0 : std::clamp(v.selected, 0, static_cast<int>(keys.size()) - 1);
  // Rows that fit: leave room for the header, the hang box, details and the key help.
  const int reserved = 2 + 8 + (v.details ? 8 : 0) + 2;
  const int fit = std::max(1, v.height - reserved);
  int first = 0;
  if (static_cast<int>(keys.size()) > fit) {
    first = std::clamp(selected - fit / 2, 0, static_cast<int>(keys.size()) - fit);
  }
  const int last = std::min(static_cast<int>(keys.size()), first + fit);
  for (int i = first; i < last; ++i) {
    const TopRow& r = model.rows().at(keys[static_cast<size_t>(i)]);
    const auto st = model.state(r.key);
    const std::string state_name = st ? std::string(StateName(*st)) : "-";
    std::string power;
    const double limit = r.power_limit_w.value_or(r.peak_power_w);
    if (r.power_w) {
      const double f = limit > 0 ? std::clamp(*r.power_w / limit, 0.0, 1.0) : 0.0;
      const int fill = static_cast<int>(std::lround(f * 10));
      power = "[" + std::string(static_cast<size_t>(fill), '#') +
              std::string(static_cast<size_t>(10 - fill), '.') + "] " +
              (r.power_limit_w ? fmt::format("{:.0f}/{:.0f} W", *r.power_w, *r.power_limit_w)
                               : fmt::format("{:.0f} W", *r.power_w));
    } else {
      power = "[   n/a    ]";
    }
    const std::string util = r.util_pct ? fmt::format("{:.0f}%", *r.util_pct) : "n/a";
    std::string mem = "n/a";
    if (r.mem_used_mib) {
      mem = r.mem_total_mib
                ? fmt::format("{:.1f}/{:.0f} GiB", *r.mem_used_mib / 1024, *r.mem_total_mib / 1024)
                : fmt::format("{:.1f} GiB", *r.mem_used_mib / 1024);
    }
    const bool is_sel = i == selected;
    const bool is_culprit =
        hang && std::find(culprits.begin(), culprits.end(), r.key) != culprits.end();
    std::string line = is_sel ? "> " : "  ";
    line += is_sel ? std::string(rev) + fmt::format("{:<15}", Clip(r.label, 14)) + reset
                   : fmt::format("{:<15}", Clip(r.label, 14));
    line += (v.color && st ? StateColor(*st) : "") + fmt::format("{:<14}", state_name) +
            (v.color && st ? reset : "");
    line += fmt::format("{:<24}{:>5}   {:<15}", Clip(power, 23), util, Clip(mem, 15));
    line += Sparkline(r.power_history_w, spark_w, limit);
    if (is_culprit) {
      line += std::string(" ") + (v.color ? "\x1b[1;31m" : "") + "<< culprit" + reset;
    }
    lines.push_back(line);
  }
  if (keys.empty()) lines.push_back("  (no samples yet)");
  if (first > 0 || last < static_cast<int>(keys.size())) {
    lines.push_back(fmt::format("  ... showing {}-{} of {} GPUs", first + 1, last, keys.size()));
  }

  lines.push_back("");
  if (hang) {
    const double dur_s = static_cast<double>(hang->end_ms - hang->start_ms) / 1000.0;
    std::string h = active ? fmt::format("HANG since {} ({}), {} GPUs stuck - culprit: {}",
                                         FormatIsoMs(hang->start_ms), CompactDuration(dur_s),
                                         hang->gpus.size(), KeyList(model, hang->culprits))
                           : fmt::format("last hang {} -> {} ({}), culprit: {}",
                                         FormatIsoMs(hang->start_ms), FormatIsoMs(hang->end_ms),
                                         CompactDuration(dur_s), KeyList(model, hang->culprits));
    lines.push_back(std::string(v.color ? "\x1b[1;31m" : "") + Clip(h, width) + reset);
    int shown = 0;
    for (const auto& reason : hang->reasons) {
      if (++shown > 5) break;
      lines.push_back(Clip("  - " + reason, width));
    }
  } else {
    lines.push_back("no hang");
  }

  if (v.details && !keys.empty()) {
    const TopRow& r = model.rows().at(keys[static_cast<size_t>(selected)]);
    lines.push_back("");
    lines.push_back(
        std::string(bold) +
        Clip(fmt::format("{} - {}", r.label, r.name.empty() ? "unknown model" : r.name), width) +
        reset);
    std::string d =
        fmt::format("  power {} W, limit {} W, peak {:.0f} W; util {}; SM {} MHz; {} C",
                    r.power_w ? fmt::format("{:.0f}", *r.power_w) : "n/a",
                    r.power_limit_w ? fmt::format("{:.0f}", *r.power_limit_w) : "n/a",
                    r.peak_power_w, r.util_pct ? fmt::format("{:.0f} %", *r.util_pct) : "n/a",
                    r.sm_clock_mhz ? fmt::format("{:.0f}", *r.sm_clock_mhz) : "n/a",
                    r.temperature_c ? fmt::format("{:.0f}", *r.temperature_c) : "n/a");
    lines.push_back(Clip(d, width));
    for (const auto& g : model.engine().gpu_stats()) {
      if (g.key != r.key) continue;
      lines.push_back(Clip("  calibration: " + g.calibration, width));
      std::string shares = "  time so far:";
      const double t = g.total_seconds();
      for (size_t s = 0; s < g.seconds.size(); ++s) {
        if (t > 0 && g.seconds[s] > 0) {
          shares += fmt::format(" {} {:.0f} %", kGpuStateNames[s], 100 * g.seconds[s] / t);
        }
      }
      lines.push_back(Clip(shares, width));
    }
    if (hang && std::find(hang->gpus.begin(), hang->gpus.end(), r.key) != hang->gpus.end()) {
      const bool c = std::find(culprits.begin(), culprits.end(), r.key) != culprits.end();
      lines.push_back(Clip(c ? "  in the hang: CULPRIT (the ranks the others wait on)"
                             : "  in the hang: waiting on the culprit",
                           width));
    }
  }
  lines.push_back("");
  std::string keys_help =
      "q quit  s sort (gpu/power/state)  j/k or arrows pick a GPU  enter details";
  if (!v.status.empty()) keys_help += "  |  " + v.status;
  lines.push_back(Clip(keys_help, width));
  if (static_cast<int>(lines.size()) > v.height && v.height > 0) {
    lines.resize(static_cast<size_t>(v.height));
  }
  return lines;
}

}  // namespace ww::report
