#include "triage/scenario_eval.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>

namespace ww::testing {
namespace {

int Phase(GpuState s) {
  // compute and communication are one phase for scoring
  return s == GpuState::kCommunication ? static_cast<int>(GpuState::kCompute) : static_cast<int>(s);
}

struct LabelCollector : triage::TriageObserver {
  std::unordered_map<uint64_t, GpuState> labels;
  static uint64_t Key(int64_t t, GpuKey k) {
    return (static_cast<uint64_t>(t) << 16) ^ (static_cast<uint64_t>(k.host) << 8) ^ k.gpu;
  }
  void OnLabel(const triage::LabeledSample& l) override {
    labels[Key(l.timestamp_ms, l.key)] = l.state;
  }
};

}  // namespace

std::string Describe(const sim::ScenarioConfig& c) {
  return fmt::format("{} on {}x{} '{}' at {} ms, cap {} W, seed {}", c.name, c.hosts,
                     c.gpus_per_host, c.model.name, c.interval_ms, c.power_cap_w, c.seed);
}

ScenarioScore RunAndScore(const sim::ScenarioConfig& config,
                          const triage::TriageOptions& given_options) {
  triage::TriageOptions options = given_options;
  if (config.max_checkpoint_s > 0) options.max_checkpoint_s = config.max_checkpoint_s;
  sim::Simulator simulator(config);
  LabelCollector collector;
  triage::TriageEngine engine(options, &collector);
  std::vector<GpuInfo> infos;
  for (int h = 0; h < config.hosts; ++h) {
    for (int g = 0; g < config.gpus_per_host; ++g) {
      GpuKey k{static_cast<uint16_t>(h), static_cast<uint16_t>(g)};
      infos.push_back({k, config.model.name, simulator.GpuUuid(k), ""});
    }
  }
  engine.SetGpuInfo(infos);
  std::vector<GpuSample> samples;
  std::vector<sim::TruthLabel> truth, all_truth;
  while (simulator.NextTick(&samples, &truth)) {
    for (const auto& s : samples) engine.Add(s);
    all_truth.insert(all_truth.end(), truth.begin(), truth.end());
    samples.clear();
    truth.clear();
  }
  engine.Finish();

  // Truth phase changes per GPU, to leave out +-2 intervals (at least 2 s) around them.
  std::map<GpuKey, std::vector<int64_t>> changes;
  std::map<GpuKey, int> last;
  for (const auto& t : all_truth) {
    auto it = last.find(t.key);
    if (it != last.end() && it->second != Phase(t.state)) changes[t.key].push_back(t.timestamp_ms);
    last[t.key] = Phase(t.state);
  }
  const int64_t exclude_ms = std::max<int64_t>(2000, 2 * config.interval_ms);
  constexpr int kPhases = kNumGpuStates;
  std::array<int64_t, kPhases> tp{}, fp{}, fn{};
  std::map<std::pair<int, int>, std::pair<int64_t, int64_t>> mismatches;  // count, first time
  ScenarioScore score;
  for (const auto& t : all_truth) {
    const auto& ch = changes[t.key];
    auto lo = std::lower_bound(ch.begin(), ch.end(), t.timestamp_ms - exclude_ms);
    if (lo != ch.end() && *lo <= t.timestamp_ms + exclude_ms) continue;
    auto it = collector.labels.find(LabelCollector::Key(t.timestamp_ms, t.key));
    if (it == collector.labels.end()) continue;
    const int want = Phase(t.state), got = Phase(it->second);
    ++score.scored_samples;
    if (want == got) {
      ++tp[static_cast<size_t>(want)];
    } else {
      ++fn[static_cast<size_t>(want)];
      ++fp[static_cast<size_t>(got)];
      auto& mm = mismatches[{want, got}];
      if (mm.first++ == 0) mm.second = t.timestamp_ms - config.start_unix_ms;
    }
  }
  double sum = 0;
  int n = 0;
  for (int p = 0; p < kPhases; ++p) {
    if (tp[p] + fn[p] == 0) {
      // A phase absent from the truth still counts against false positives.
      if (fp[p] > 0) {
        score.f1_by_phase[std::string(kGpuStateNames[p])] = 0;
        ++n;
      }
      continue;
    }
    const double f1 = 2.0 * tp[p] / static_cast<double>(2 * tp[p] + fp[p] + fn[p]);
    score.f1_by_phase[std::string(kGpuStateNames[p])] = f1;
    sum += f1;
    ++n;
  }
  score.macro_f1 = n ? sum / n : 0;
  for (const auto& [k, v] : mismatches) {
    score.confusion += fmt::format(" {}->{}: {} (first at {:.1f} s);", kGpuStateNames[k.first],
                                   kGpuStateNames[k.second], v.first, v.second / 1000.0);
  }
  score.found = engine.hang_episodes();
  score.stragglers = engine.stragglers();
  score.stragglers_unknown = engine.stragglers_unknown();
  score.truth = simulator.truth_hangs();
  double c = 0, m = 0;
  for (const auto& g : engine.gpu_stats()) {
    c += g.seconds[static_cast<size_t>(GpuState::kCompute)];
    m += g.seconds[static_cast<size_t>(GpuState::kCommunication)];
    if (score.comm_share_unknown.empty()) score.comm_share_unknown = g.comm_share_unknown;
  }
  score.comm_share = c + m > 0 ? m / (c + m) : 0;
  score.gpus = engine.gpu_stats();
  score.checkpoints = engine.checkpoints();
  const double tc = simulator.truth_compute_seconds(), tm = simulator.truth_comm_seconds();
  score.truth_comm_share = tc + tm > 0 ? tm / (tc + tm) : 0;
  return score;
}

}  // namespace ww::testing
