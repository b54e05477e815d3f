// The split rocm-smi layout's host rule and join (amd_smi.h): which two files are one host, and
// one sample stream from the two.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <map>

#include "core/strings.h"
#include "telemetry/ingest/amd_smi.h"
#include "telemetry/ingest/merged_source.h"

namespace ww::ingest {
namespace {

bool IsHalfWord(std::string_view w) {
  static constexpr std::string_view kWords[] = {"power", "pwr",    "watts",       "use",
                                                "usage", "util",   "utilization", "activity",
                                                "mem",   "memory", "vram",        "busy"};
  const std::string l = AsciiLower(w);
  return std::find(std::begin(kWords), std::end(kWords), l) != std::end(kWords);
}

std::string FolderOf(const std::string& path) {
  std::error_code ec;
  const auto abs = std::filesystem::absolute(path, ec).lexically_normal();
  return ec ? std::string() : abs.parent_path().string();
}

const char* HalfName(SplitHalf h) { return h == SplitHalf::kPower ? "power" : "use"; }

}  // namespace

std::string SplitHostStem(const std::string& path) {
  const std::string name = HostNameFromPath(path);
  // Words and the separators before them; a half's word goes with its separator.
  std::string out;
  size_t i = 0;
  while (i < name.size()) {
    size_t sep_end = i;
    while (sep_end < name.size() &&
           (name[sep_end] == '_' || name[sep_end] == '-' || name[sep_end] == '.')) {
      ++sep_end;
    }
    size_t word_end = sep_end;
    while (word_end < name.size() && name[word_end] != '_' && name[word_end] != '-' &&
           name[word_end] != '.') {
      ++word_end;
    }
    const std::string_view word(name.data() + sep_end, word_end - sep_end);
    if (!word.empty() && !IsHalfWord(word)) {
      out += out.empty() ? std::string(word) : name.substr(i, word_end - i);
    }
    i = word_end;
  }
  return out;
}

Result<std::vector<HostFiles>> GroupSplitHalves(const std::vector<std::string>& paths,
                                                const std::vector<SplitHalf>& halves) {
  std::vector<HostFiles> hosts;
  // Halves by (folder, stem), in the order given.
  std::map<std::pair<std::string, std::string>, std::vector<size_t>> by_stem;
  std::vector<std::pair<std::string, std::string>> order;
  for (size_t i = 0; i < paths.size(); ++i) {
    if (halves[i] == SplitHalf::kNone) continue;
    const auto key = std::make_pair(FolderOf(paths[i]), SplitHostStem(paths[i]));
    auto& group = by_stem[key];
    if (group.empty()) order.push_back(key);
    group.push_back(i);
  }
  std::vector<size_t> lone_power, lone_use;
  std::map<size_t, HostFiles> pairs;  // by the first file's index
  for (const auto& key : order) {
    const auto& group = by_stem[key];
    std::vector<size_t> power, use;
    for (size_t i : group) (halves[i] == SplitHalf::kPower ? power : use).push_back(i);
    if (power.size() > 1 || use.size() > 1) {
      const auto& two = power.size() > 1 ? power : use;
      return Status::InvalidInput(fmt::format(
          "{} and {} are both the {} half of the split rocm-smi layout of host '{}': give one "
          "file per half (the split layout's rule: docs/triage.md)",
          paths[two[0]], paths[two[1]], HalfName(halves[two[0]]), key.second));
    }
    if (power.size() == 1 && use.size() == 1) {
      pairs[std::min(power[0], use[0])] = HostFiles{{power[0], use[0]}, key.second};
    } else if (power.size() == 1) {
      lone_power.push_back(power[0]);
    } else {
      lone_use.push_back(use[0]);
    }
  }
  if (!lone_power.empty() && !lone_use.empty()) {
    const size_t p = lone_power[0], u = lone_use[0];
    const std::string ps = SplitHostStem(paths[p]), us = SplitHostStem(paths[u]);
    if (lone_power.size() == 1 && lone_use.size() == 1 && (ps.empty() || us.empty())) {
      // Given together, complementary, and no name says otherwise: one host.
      pairs[std::min(p, u)] = HostFiles{{p, u}, ps.empty() ? us : ps};
      lone_power.clear();
      lone_use.clear();
    } else {
      std::string power_list, use_list;
      for (size_t i : lone_power) power_list += (power_list.empty() ? "" : ", ") + paths[i];
      for (size_t i : lone_use) use_list += (use_list.empty() ? "" : ", ") + paths[i];
      return Status::InvalidInput(fmt::format(
          "split rocm-smi CSVs: cannot tell which power file ({}) goes with which use file ({}): "
          "the two files of a host must share a host stem in one folder (node3_power.csv and "
          "node3_usage.csv), or be the only two given (docs/triage.md, split layout)",
          power_list, use_list));
    }
  }
  for (size_t i = 0; i < paths.size(); ++i) {
    if (halves[i] == SplitHalf::kNone ||
        std::find(lone_power.begin(), lone_power.end(), i) != lone_power.end() ||
        std::find(lone_use.begin(), lone_use.end(), i) != lone_use.end()) {
      hosts.push_back(HostFiles{{i}, ""});
    } else if (auto it = pairs.find(i); it != pairs.end()) {
      HostFiles h = it->second;
      if (halves[h.files[0]] != SplitHalf::kPower) std::swap(h.files[0], h.files[1]);
      hosts.push_back(std::move(h));
    }
  }
  return hosts;
}

namespace {

void Fill(std::optional<double>* to, const std::optional<double>& from) {
  if (!*to) *to = from;
}

// Joins two single-host sources of one host by (time, GPU).
class SplitJoinSource final : public TelemetrySource {
 public:
  SplitJoinSource(std::unique_ptr<TelemetrySource> power, std::unique_ptr<TelemetrySource> use,
                  std::string power_path, std::string use_path)
      : power_path_(std::move(power_path)), use_path_(std::move(use_path)) {
    halves_[0].source = std::move(power);
    halves_[1].source = std::move(use);
  }

  Status Next(std::vector<GpuSample>* out) override {
    for (;;) {
      // Everything at or before the older half's newest time is complete.
      const int64_t safe = std::min(halves_[0].Horizon(), halves_[1].Horizon());
      if (!pending_.empty() && pending_.begin()->first.first <= safe) {
        const int64_t t = pending_.begin()->first.first;
        while (!pending_.empty() && pending_.begin()->first.first == t) {
          auto node = pending_.extract(pending_.begin());
          if (node.mapped().halves == 3) ++joined_;
          out->push_back(node.mapped().sample);
        }
        return Status::Ok();
      }
      // Read from the half that is behind.
      int pick = -1;
      for (int h = 0; h < 2; ++h) {
        if (halves_[h].done) continue;
        if (pick < 0 || halves_[h].last_ms < halves_[pick].last_ms) pick = h;
      }
      if (pick < 0) {
        if (!pending_.empty()) continue;  // both done: Horizon() is infinite
        if (joined_ == 0 && halves_[0].read > 0 && halves_[1].read > 0) {
          return Status::InvalidInput(fmt::format(
              "{} and {}: joined as the two halves of one host's rocm-smi data, but no (time, "
              "device) is in both: not the same host's files, or their clocks differ",
              power_path_, use_path_));
        }
        return Status::Ok();
      }
      Half& half = halves_[pick];
      batch_.clear();
      WW_RETURN_IF_ERROR(half.source->Next(&batch_));
      if (batch_.empty()) {
        half.done = true;
        continue;
      }
      for (const GpuSample& s : batch_) {
        ++half.read;
        half.last_ms = std::max(half.last_ms, s.timestamp_ms);
        Joined& j = pending_[{s.timestamp_ms, s.key.gpu}];
        if (j.halves == 0) {
          j.sample = s;
        } else {
          GpuSample& t = j.sample;
          Fill(&t.power_w, s.power_w);
          Fill(&t.power_limit_w, s.power_limit_w);
          Fill(&t.util_gpu_pct, s.util_gpu_pct);
          Fill(&t.util_mem_pct, s.util_mem_pct);
          Fill(&t.gr_engine_active_ratio, s.gr_engine_active_ratio);
          Fill(&t.mem_used_mib, s.mem_used_mib);
          Fill(&t.mem_total_mib, s.mem_total_mib);
          Fill(&t.temperature_c, s.temperature_c);
        }
        j.halves |= 1 << pick;
      }
    }
  }

  const std::vector<std::string>& hosts() const override { return halves_[0].source->hosts(); }
  std::vector<GpuInfo> gpus() const override {
    auto g = halves_[0].source->gpus();
    for (const GpuInfo& i : halves_[1].source->gpus()) {
      if (std::none_of(g.begin(), g.end(), [&](const GpuInfo& o) { return o.key == i.key; })) {
        g.push_back(i);
      }
    }
    return g;
  }
  std::vector<std::string> warnings() const override {
    auto w = halves_[0].source->warnings();
    for (auto& x : halves_[1].source->warnings()) w.push_back(std::move(x));
    return w;
  }

 private:
  struct Half {
    std::unique_ptr<TelemetrySource> source;
    int64_t last_ms = std::numeric_limits<int64_t>::min();
    int64_t read = 0;
    bool done = false;
    int64_t Horizon() const { return done ? std::numeric_limits<int64_t>::max() : last_ms; }
  };
  struct Joined {
    GpuSample sample;
    int halves = 0;  // bit 0: power, bit 1: use
  };
  Half halves_[2];
  std::map<std::pair<int64_t, uint16_t>, Joined> pending_;
  std::vector<GpuSample> batch_;
  int64_t joined_ = 0;
  std::string power_path_, use_path_;
};

}  // namespace

std::unique_ptr<TelemetrySource> JoinSplitHalves(std::unique_ptr<TelemetrySource> power,
                                                 std::unique_ptr<TelemetrySource> use,
                                                 std::string power_path, std::string use_path) {
  return std::make_unique<SplitJoinSource>(std::move(power), std::move(use), std::move(power_path),
                                           std::move(use_path));
}

}  // namespace ww::ingest
