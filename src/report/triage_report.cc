#include "report/triage_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/format.h"
#include "core/timefmt.h"
#include "triage/verdict.h"

namespace ww::report {

std::string HostName(const TriageReport& r, uint16_t host) {
  return host < r.hosts.size() ? r.hosts[host] : fmt::format("host{}", host);
}

namespace {

std::string GpuLabel(const TriageReport& r, GpuKey k) {
  return fmt::format("{}/GPU{}", HostName(r, k.host), k.gpu);
}

std::string GpuList(const TriageReport& r, const std::vector<GpuKey>& keys) {
  return triage::GpuListName(keys, r.hosts);
}

nlohmann::json KeyJson(const TriageReport& r, GpuKey k) {
  return {{"host", HostName(r, k.host)}, {"gpu", k.gpu}};
}

// "node0/GPU0 saved while 15 GPUs (node0/GPU1-7, node1/GPU0-7) waited": the writers are the quiet
// ranks; the waiters the other GPUs of the job (those that spent time in checkpoints).
std::string CheckpointWho(const TriageReport& r, const triage::CheckpointEpisode& c) {
  std::vector<GpuKey> waiters;
  for (const auto& g : r.gpus) {
    if (g.seconds[static_cast<size_t>(GpuState::kCheckpoint)] <= 0) continue;
    if (std::find(c.writers.begin(), c.writers.end(), g.key) != c.writers.end()) continue;
    waiters.push_back(g.key);
  }
  std::vector<GpuKey> writers = c.writers;
  std::sort(writers.begin(), writers.end());
  std::string s = GpuList(r, writers) + " saved";
  if (!waiters.empty()) s += " while " + GpuList(r, waiters) + " waited";
  return s;
}

}  // namespace

double TriageReport::wasted_gpu_hours() const {
  double h = 0;
  for (const auto& e : hang_episodes) h += e.wasted_gpu_hours();
  return h;
}

std::optional<double> TriageReport::comm_share() const {
  double c = 0, m = 0;
  for (const auto& g : gpus) {
    c += g.seconds[static_cast<size_t>(GpuState::kCompute)];
    m += g.seconds[static_cast<size_t>(GpuState::kCommunication)];
  }
  if (c + m <= 0 || !comm_share_unknown().empty()) return std::nullopt;
  return m / (c + m);
}

std::string TriageReport::comm_share_unknown() const {
  for (const auto& g : gpus) {
    const double t = g.seconds[static_cast<size_t>(GpuState::kCompute)] +
                     g.seconds[static_cast<size_t>(GpuState::kCommunication)];
    if (t > 0 && !g.comm_share_unknown.empty()) return g.comm_share_unknown;
  }
  return "";
}

TriageReport MakeReport(const triage::TriageEngine& engine, std::vector<std::string> hosts,
                        std::vector<std::string> warnings) {
  TriageReport r;
  r.hosts = std::move(hosts);
  r.gpus = engine.gpu_stats();
  for (const auto& g : r.gpus) {
    r.evidence.push_back(triage::DescribeEvidence(g.signals, g.samples, engine.options()));
  }
  r.events = engine.events();
  r.hang_episodes = engine.hang_episodes();
  r.stragglers = engine.stragglers();
  r.stragglers_unknown = engine.stragglers_unknown();
  r.checkpoints = engine.checkpoints();
  r.warnings = std::move(warnings);
  r.notes = engine.notes();
  if (const std::string why = r.comm_share_unknown(); !why.empty()) {
    r.notes.push_back("communication share unknown: " + why);
  }
  // What the signals cannot show, once per reason with the GPUs it holds for.
  std::vector<std::pair<std::string, std::vector<GpuKey>>> limits;
  for (size_t i = 0; i < r.gpus.size(); ++i) {
    for (const auto& d : r.evidence[i].cannot_tell_apart) {
      if (!d.affects_hang) continue;
      auto it = std::find_if(limits.begin(), limits.end(),
                             [&](const auto& l) { return l.first == d.why; });
      if (it == limits.end()) it = limits.insert(limits.end(), {d.why, {}});
      it->second.push_back(r.gpus[i].key);
    }
  }
  for (const auto& [why, keys] : limits) {
    r.notes.push_back(
        fmt::format("{}: {}; the shares marked '?' are a guess", GpuList(r, keys), why));
  }
  // Power limits the model cannot have, power that cannot be watts: once per text.
  std::vector<std::pair<std::string, std::vector<GpuKey>>> limit_notes;
  for (const auto& g : r.gpus) {
    if (g.power_note.empty()) continue;
    auto it = std::find_if(limit_notes.begin(), limit_notes.end(),
                           [&](const auto& l) { return l.first == g.power_note; });
    if (it == limit_notes.end()) {
      it = limit_notes.insert(limit_notes.end(), {g.power_note, {}});
    }
    it->second.push_back(g.key);
  }
  for (const auto& [text, keys] : limit_notes) {
    r.notes.push_back(fmt::format("{}: {}", GpuList(r, keys), text));
  }
  if (!r.stragglers_unknown.empty())
    r.notes.push_back("stragglers unknown: " + r.stragglers_unknown);
  r.first_ms = engine.first_timestamp_ms();
  r.last_ms = engine.last_timestamp_ms();
  const double confirm_s = engine.options().hang_confirm_s;
  int64_t samples = 0;
  for (const auto& g : r.gpus) samples += g.samples;
  if (r.hang_episodes.empty() && !r.gpus.empty()) {
    const double span_s = static_cast<double>(r.last_ms - r.first_ms) / 1000.0;
    if (triage::TooShortToTell(span_s, confirm_s)) {
      r.hang_unknown =
          "the log spans " + triage::TooShortReason(span_s, samples, "the job", confirm_s);
      // What one snapshot can say: each GPU against its board's bands (snapshot.h).
      std::vector<triage::SnapshotReading> readings;
      for (const auto& g : r.gpus) readings.push_back(g.EarlyReading());
      r.snapshot =
          triage::JudgeSnapshot(readings, engine.options().thresholds, engine.options().world_size);
    } else {
      r.gpu_hang_unknown.resize(r.gpus.size());
      for (size_t i = 0; i < r.gpus.size(); ++i) {
        const auto& g = r.gpus[i];
        const double gspan_s = static_cast<double>(g.last_ms - g.first_ms) / 1000.0;
        if (!triage::TooShortToTell(gspan_s, confirm_s)) continue;
        r.gpu_hang_unknown[i] =
            "sampled for " + triage::TooShortReason(gspan_s, g.samples, "it", confirm_s);
        r.notes.push_back(GpuLabel(r, g.key) + ": " + r.gpu_hang_unknown[i]);
      }
    }
  }
  // A wait temperature kept from confirmation until the log ended: not a hang, not none either.
  if (r.hang_episodes.empty() && r.hang_unknown.empty() && !engine.thermal_unknown().empty()) {
    r.hang_unknown = engine.thermal_unknown();
  }
  triage::LogVerdictInput verdict;
  verdict.hang_seen = !r.hang_episodes.empty();
  verdict.held_by_temperature = !engine.thermal_unknown().empty();
  verdict.snapshot = r.snapshot ? &*r.snapshot : nullptr;
  verdict.no_gpus = r.gpus.empty();
  for (const auto& e : r.evidence) {
    for (const auto& d : e.cannot_tell_apart) verdict.blind = verdict.blind || d.affects_hang;
  }
  r.hang_verdict = triage::DecideLogVerdict(verdict);
  return r;
}

std::string RenderText(const TriageReport& r, bool color) {
  std::string out;
  auto ts = [&](int64_t ms) { return FormatIsoMs(ms, r.with_zone); };
  const double span_s = static_cast<double>(r.last_ms - r.first_ms) / 1000.0;
  int64_t samples = 0;
  for (const auto& g : r.gpus) samples += g.samples;
  out += fmt::format("wattwatch triage: {} host{}, {} GPU{}, {} .. {} ({}), {} samples\n\n",
                     r.hosts.size(), r.hosts.size() == 1 ? "" : "s", r.gpus.size(),
                     r.gpus.size() == 1 ? "" : "s", ts(r.first_ms), ts(r.last_ms),
                     FormatDuration(span_s), samples);
  if (!r.host_paths.empty()) {
    out += "hosts:";
    for (size_t h = 0; h < r.hosts.size() && h < r.host_paths.size(); ++h) {
      out += fmt::format("{} {} = {}", h == 0 ? "" : ",", r.hosts[h], r.host_paths[h]);
    }
    out += "\n\n";
  }
  const char* red = color ? "\033[1;31m" : "";
  const char* green = color ? "\033[1;32m" : "";
  const char* reset = color ? "\033[0m" : "";

  size_t blind = 0;  // GPUs whose signals cannot show a hang
  for (const auto& e : r.evidence) {
    for (const auto& d : e.cannot_tell_apart) {
      if (d.affects_hang) {
        ++blind;
        break;
      }
    }
  }
  if (r.snapshot && r.snapshot->verdict == triage::HangVerdict::kSuspected) {
    const auto& sv = *r.snapshot;
    out += fmt::format("{}Suspected hang (one snapshot, not confirmed){}: {}\n", red, reset,
                       GpuList(r, [&] {
                         std::vector<GpuKey> k;
                         for (const auto& g : sv.gpus) {
                           if (g.state == triage::SnapshotState::kWaiting ||
                               g.state == triage::SnapshotState::kQuiet) {
                             k.push_back(g.key);
                           }
                         }
                         return k;
                       }()));
    out +=
        fmt::format("  culprit{}: {}\n", sv.culprits.size() == 1 ? "" : "s",
                    sv.culprits.empty() ? "unknown (every rank waits)" : GpuList(r, sv.culprits));
    for (const auto& reason : sv.reasons) out += fmt::format("  - {}\n", reason);
    out += fmt::format("  - {}\n", r.hang_unknown);
    out +=
        "  confirm it: `wattwatch check --seconds 60` on the node (NVML), or triage a log of at "
        "least 30 s\n";
  } else if (r.snapshot && r.snapshot->verdict == triage::HangVerdict::kNone) {
    out += fmt::format("{}No hang in this snapshot{} (not a confirmation: {}).\n", green, reset,
                       r.hang_unknown);
    for (const auto& reason : r.snapshot->reasons) out += fmt::format("  - {}\n", reason);
  } else if (!r.hang_unknown.empty()) {
    out += fmt::format("Hang unknown: {}.\n", r.hang_unknown);
    if (r.snapshot) {
      for (const auto& reason : r.snapshot->reasons) out += fmt::format("  - {}\n", reason);
      if (!r.snapshot->missing.empty()) {
        std::string m;
        for (const auto& x : r.snapshot->missing) m += (m.empty() ? "" : ", ") + x;
        out += fmt::format("  - missing: {}\n", m);
      }
    }
  } else if (r.hang_episodes.empty() && blind == 0) {
    out += fmt::format("{}No hang.{}\n", green, reset);
  } else if (r.hang_episodes.empty()) {
    out += fmt::format(
        "No hang seen, but the signals of {} of {} GPUs cannot show one (see the notes).\n", blind,
        r.gpus.size());
  }
  for (size_t i = 0; i < r.hang_episodes.size(); ++i) {
    const auto& e = r.hang_episodes[i];
    const double dur = static_cast<double>(e.end_ms - e.start_ms) / 1000.0;
    out += fmt::format("{}HANG {}{}: {} stuck from {} to {}{} ({}); confirmed at {} (+{:.1f} s)\n",
                       red, i + 1, reset, GpuList(r, e.gpus), ts(e.start_ms), ts(e.end_ms),
                       e.ongoing ? " (still stuck at the end of the log)" : "", FormatDuration(dur),
                       ts(e.detected_at_ms),
                       static_cast<double>(e.detected_at_ms - e.start_ms) / 1000.0);
    out += fmt::format("  culprit{}: {}\n", e.culprits.size() == 1 ? "" : "s",
                       e.culprits.empty() ? "unknown" : GpuList(r, e.culprits));
    out += fmt::format("  wasted: {:.2f} GPU-hours\n", e.wasted_gpu_hours());
    for (const auto& reason : e.reasons) out += fmt::format("  - {}\n", reason);
  }
  if (!r.hang_episodes.empty()) {
    out += fmt::format("Total wasted: {:.2f} GPU-hours\n", r.wasted_gpu_hours());
  }
  if (r.snapshot && r.snapshot->verdict != triage::HangVerdict::kNone) {
    out += "\nSnapshot (each GPU against its board's bands):\n";
    for (const auto& g : r.snapshot->gpus) {
      out += fmt::format("  {}{}: {} ({})\n", GpuLabel(r, g.key),
                         g.board.empty() ? " [unknown board]" : " [" + g.board + "]",
                         triage::SnapshotStateName(g.state), g.text);
    }
  }
  if (!r.events.empty()) {
    out += "\nEvents:\n";
    for (const auto& e : r.events) {
      if (e.kind == triage::TriageEvent::Kind::kGpuLost) {
        out += fmt::format(
            "  {}: {} lost (the driver reads [GPU is lost]: fell off the bus, e.g. Xid 79)\n",
            ts(e.start_ms), GpuLabel(r, e.key));
      } else {
        out += fmt::format(
            "  {} .. {}: no samples from any GPU for {}; episodes end at its start, the gap "
            "counts towards nothing\n",
            ts(e.start_ms), ts(e.end_ms),
            FormatDuration(static_cast<double>(e.end_ms - e.start_ms) / 1000.0));
      }
    }
  }
  if (!r.checkpoints.empty()) {
    double total = 0;
    for (const auto& c : r.checkpoints) total += static_cast<double>(c.covered_ms()) / 1000.0;
    out +=
        fmt::format("\nCheckpoints: {} ({} in all)\n", r.checkpoints.size(), FormatDuration(total));
    for (const auto& c : r.checkpoints) {
      // Each reading stands for the interval before it: one reading at 15 s sampling is 15 s.
      const std::string span = FormatDuration(static_cast<double>(c.covered_ms()) / 1000.0);
      const std::string when =
          c.start_ms == c.end_ms ? fmt::format("{} ({}, one reading)", ts(c.start_ms), span)
                                 : fmt::format("{} .. {} ({})", ts(c.start_ms), ts(c.end_ms), span);
      out +=
          fmt::format("  {}: {}\n", when, c.all_ranks ? "all ranks saving" : CheckpointWho(r, c));
    }
  }

  {
    std::vector<GpuKey> keys;
    for (const auto& g : r.gpus) keys.push_back(g.key);
    const std::vector<std::string> lines = triage::HostEvidenceLines(keys, r.evidence, r.hosts);
    if (!lines.empty()) out += "\nEvidence (fields the logs lack, and what that costs):\n";
    for (const auto& l : lines) out += "  " + l + "\n";
  }
  if (!r.stragglers.empty()) {
    out += fmt::format("\nStragglers: {} (the others wait for them in every step)\n",
                       r.stragglers.size());
    for (const auto& s : r.stragglers) {
      out +=
          fmt::format("  {}: computes {:.2f}x as long as the median rank{}{}\n", GpuLabel(r, s.key),
                      s.slowdown, s.from_activity ? " (from DCGM activity counters)" : "",
                      s.throttle.empty() ? "" : "; throttled: " + s.throttle);
    }
  }

  out += "\nShare of time per state (comm share = communication / (compute + communication)):\n";
  // The host column is as wide as the longest name (a file stem like
  // grantwilkins_training_profile_ckpt1000 would push its row out of line).
  size_t host_w = 14;
  for (const auto& g : r.gpus) host_w = std::max(host_w, HostName(r, g.key.host).size());
  out += fmt::format("{:<{}} {:>4} {:>7} {:>8} {:>7} {:>8} {:>7} {:>6} {:>6}\n", "host", host_w,
                     "gpu", "idle", "compute", "comm", "starved", "ckpt", "hang", "comm%");
  std::array<double, kNumGpuStates> job{};
  std::array<bool, kNumGpuStates> job_guess{};  // some GPU's share of the state is a guess
  for (size_t i = 0; i < r.gpus.size(); ++i) {
    const auto& g = r.gpus[i];
    const double total = g.total_seconds();
    std::string row = fmt::format("{:<{}} {:>4}", HostName(r, g.key.host), host_w, g.key.gpu);
    for (size_t s = 0; s < kNumGpuStates; ++s) {
      job[s] += g.seconds[s];
      bool guess = false;
      if (i < r.evidence.size()) {
        for (const auto& d : r.evidence[i].cannot_tell_apart) {
          guess =
              guess || (d.affects_hang && std::find(d.states.begin(), d.states.end(),
                                                    static_cast<GpuState>(s)) != d.states.end());
        }
      }
      job_guess[s] = job_guess[s] || guess;
      row += fmt::format(
          " {:>{}}",
          total > 0 ? fmt::format("{:.1f}%{}", 100 * g.seconds[s] / total, guess ? "?" : "")
                    : std::string("-"),
          s == 1 || s == 3 ? 8 : (s == 5 ? 6 : 7));
    }
    auto cs = g.comm_share();
    row += fmt::format(" {:>6}", cs ? fmt::format("{:.0f}%", 100 * *cs)
                                    : std::string(g.comm_share_unknown.empty() ? "-" : "?"));
    out += row + "\n";
  }
  double job_total = 0;
  for (double v : job) job_total += v;
  if (r.gpus.size() > 1 && job_total > 0) {
    std::string row = fmt::format("{:<{}} {:>4}", "job", host_w, "all");
    for (size_t s = 0; s < kNumGpuStates; ++s) {
      row += fmt::format(
          " {:>{}}", fmt::format("{:.1f}%{}", 100 * job[s] / job_total, job_guess[s] ? "?" : ""),
          s == 1 || s == 3 ? 8 : (s == 5 ? 6 : 7));
    }
    auto cs = r.comm_share();
    row += fmt::format(" {:>6}", cs ? fmt::format("{:.0f}%", 100 * *cs)
                                    : std::string(r.comm_share_unknown().empty() ? "-" : "?"));
    out += row + "\n";
  }
  if (!r.notes.empty() || !r.warnings.empty()) out += "\n";
  for (const auto& n : r.notes) out += "note: " + n + "\n";
  for (const auto& w : r.warnings) out += "skipped: " + w + "\n";
  return out;
}

nlohmann::json RenderJson(const TriageReport& r) {
  using nlohmann::json;
  auto ts = [&](int64_t ms) { return FormatIsoMs(ms, r.with_zone); };
  json hosts = json::array();
  for (size_t h = 0; h < r.hosts.size(); ++h) {
    json gpus = json::array();
    for (const auto& g : r.gpus) {
      if (g.key.host != h) continue;
      json seconds = json::object();
      for (size_t s = 0; s < kNumGpuStates; ++s) {
        seconds[std::string(kGpuStateNames[s])] = std::round(g.seconds[s] * 1000) / 1000;
      }
      json gj = {{"gpu", g.key.gpu},
                 {"name", g.name},
                 {"samples", g.samples},
                 {"seconds", seconds},
                 {"calibration", g.calibration}};
      const size_t i = static_cast<size_t>(&g - r.gpus.data());
      if (i < r.evidence.size()) {
        json groups = json::array();
        for (const auto& d : r.evidence[i].cannot_tell_apart) {
          json states = json::array();
          for (GpuState st : d.states) states.push_back(std::string(StateName(st)));
          groups.push_back({{"states", states}, {"why", d.why}});
        }
        gj["evidence"] = {{"signals", r.evidence[i].signals},
                          {"missing", r.evidence[i].missing},
                          {"cannot_tell_apart", groups}};
      }
      auto cs = g.comm_share();
      gj["comm_share"] = cs ? json(std::round(*cs * 10000) / 10000) : json(nullptr);
      if (!g.comm_share_unknown.empty()) gj["comm_share_unknown"] = g.comm_share_unknown;
      if (i < r.gpu_hang_unknown.size() && !r.gpu_hang_unknown[i].empty()) {
        gj["hang_unknown"] = r.gpu_hang_unknown[i];
      }
      if (!r.stragglers_unknown.empty() && gj.contains("evidence")) {
        gj["evidence"]["stragglers_unknown"] = r.stragglers_unknown;
      }
      gpus.push_back(std::move(gj));
    }
    json host = {{"host", r.hosts[h]}, {"gpus", std::move(gpus)}};
    if (h < r.host_paths.size()) host["path"] = r.host_paths[h];
    hosts.push_back(std::move(host));
  }
  json episodes = json::array();
  for (const auto& e : r.hang_episodes) {
    json gpus = json::array(), culprits = json::array();
    for (GpuKey k : e.gpus) gpus.push_back(KeyJson(r, k));
    for (GpuKey k : e.culprits) culprits.push_back(KeyJson(r, k));
    json episode = {{"start", ts(e.start_ms)},
                    {"detected_at", ts(e.detected_at_ms)},
                    {"end", ts(e.end_ms)},
                    {"ongoing", e.ongoing},
                    {"gpus", gpus},
                    {"culprits", culprits},
                    {"reasons", e.reasons},
                    {"wasted_gpu_hours", std::round(e.wasted_gpu_hours() * 10000) / 10000}};
    if (!e.stopped_reporting.empty()) {
      json silent = json::array();
      for (GpuKey k : e.stopped_reporting) silent.push_back(KeyJson(r, k));
      episode["stopped_reporting"] = std::move(silent);
    }
    episodes.push_back(std::move(episode));
  }
  json checkpoints = json::array();
  for (const auto& c : r.checkpoints) {
    json writers = json::array();
    for (GpuKey k : c.writers) writers.push_back(KeyJson(r, k));
    checkpoints.push_back({{"start", ts(c.start_ms)},
                           {"end", ts(c.end_ms)},
                           {"seconds", static_cast<double>(c.covered_ms()) / 1000.0},
                           {"all_ranks", c.all_ranks},
                           {"writers", writers}});
  }
  json events = json::array();
  for (const auto& e : r.events) {
    if (e.kind == triage::TriageEvent::Kind::kGpuLost) {
      json ej = KeyJson(r, e.key);
      ej["type"] = "gpu_lost";
      ej["at"] = ts(e.start_ms);
      events.push_back(std::move(ej));
    } else {
      events.push_back({{"type", "gap"},
                        {"start", ts(e.start_ms)},
                        {"end", ts(e.end_ms)},
                        {"seconds", static_cast<double>(e.end_ms - e.start_ms) / 1000.0}});
    }
  }
  auto cs = r.comm_share();
  json out = {{"start", ts(r.first_ms)},
              {"end", ts(r.last_ms)},
              {"hosts", hosts},
              {"hang_episodes", episodes},
              {"wasted_gpu_hours", std::round(r.wasted_gpu_hours() * 10000) / 10000},
              {"comm_share", cs ? json(std::round(*cs * 10000) / 10000) : json(nullptr)},
              {"checkpoints", checkpoints},
              {"events", events},
              {"notes", r.notes},
              {"warnings", r.warnings}};
  if (const std::string why = r.comm_share_unknown(); !why.empty()) out["comm_share_unknown"] = why;
  json stragglers = json::array();
  for (const auto& s : r.stragglers) {
    json j = {{"host", s.key.host < r.hosts.size() ? r.hosts[s.key.host] : std::string()},
              {"gpu", s.key.gpu},
              {"slowdown", std::round(s.slowdown * 100) / 100}};
    if (!s.throttle.empty()) j["throttle"] = s.throttle;
    // Only where it is not the power split (coarse sampling): outputs of finer logs unchanged.
    if (s.from_activity) j["timed_by"] = "activity_counters";
    stragglers.push_back(std::move(j));
  }
  out["stragglers"] = std::move(stragglers);
  if (!r.stragglers_unknown.empty()) out["stragglers_unknown"] = r.stragglers_unknown;
  out["hang_verdict"] = triage::HangVerdictName(r.hang_verdict);
  if (!r.hang_unknown.empty()) out["hang_unknown"] = r.hang_unknown;
  if (r.snapshot) {
    json gpus = json::array();
    for (const auto& g : r.snapshot->gpus) {
      json gj = KeyJson(r, g.key);
      gj["state"] = triage::SnapshotStateName(g.state);
      gj["board"] = g.board.empty() ? json(nullptr) : json(g.board);
      gj["reading"] = g.text;
      gpus.push_back(std::move(gj));
    }
    json snap = {{"gpus", gpus}, {"reasons", r.snapshot->reasons}};
    if (!r.snapshot->missing.empty()) snap["missing"] = r.snapshot->missing;
    out["snapshot"] = std::move(snap);
    if (r.snapshot->verdict == triage::HangVerdict::kSuspected) {
      json culprits = json::array();
      for (GpuKey k : r.snapshot->culprits) culprits.push_back(KeyJson(r, k));
      out["hang_suspected"] = {{"reasons", r.snapshot->reasons}, {"culprits", culprits}};
    }
  }
  return out;
}

}  // namespace ww::report
