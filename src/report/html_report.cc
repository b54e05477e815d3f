#include "report/html_report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/format.h"
#include "core/timefmt.h"

namespace ww::report {

int TimelineBucket::dominant_state() const {
  int best = -1;
  uint32_t best_n = 0;
  for (int s = 0; s < kNumGpuStates; ++s) {
    const uint32_t n = state_samples[static_cast<size_t>(s)];
    if (n > best_n || (n > 0 && n == best_n && s == static_cast<int>(GpuState::kHang))) {
      best = s;
      best_n = n;
    }
  }
  return best;
}

void TimelineBucket::Merge(const TimelineBucket& o) {
  if (o.has_power()) {
    if (has_power()) {
      power_min_w = std::min(power_min_w, o.power_min_w);
      power_max_w = std::max(power_max_w, o.power_max_w);
    } else {
      power_min_w = o.power_min_w;
      power_max_w = o.power_max_w;
    }
  }
  if (o.has_util()) {
    if (has_util()) {
      util_min_pct = std::min(util_min_pct, o.util_min_pct);
      util_max_pct = std::max(util_max_pct, o.util_max_pct);
    } else {
      util_min_pct = o.util_min_pct;
      util_max_pct = o.util_max_pct;
    }
  }
  for (size_t s = 0; s < state_samples.size(); ++s) state_samples[s] += o.state_samples[s];
}

TimelineCollector::TimelineCollector(triage::Thresholds thresholds) : thresholds_(thresholds) {}
TimelineCollector::~TimelineCollector() = default;

void TimelineCollector::SetGpuInfo(const std::vector<GpuInfo>& gpus) {
  for (const GpuInfo& g : gpus) {
    if (!g.name.empty()) names_[g.key] = g.name;
  }
}

TimelineBucket* TimelineCollector::BucketFor(GpuKey key, int64_t t_ms) {
  if (origin_ms_ == INT64_MIN) origin_ms_ = t_ms;
  // A label older than the first sample cannot happen with RecordingSource (samples first), but
  // a stray one must not index before the array.
  if (t_ms < origin_ms_) return nullptr;
  int64_t index = (t_ms - origin_ms_) / bucket_ms_;
  while (index >= static_cast<int64_t>(kMaxBuckets)) {
    Coarsen();
    index = (t_ms - origin_ms_) / bucket_ms_;
  }
  auto it = lanes_.find(key);
  if (it == lanes_.end()) {
    Lane lane;
    lane.key = key;
    auto n = names_.find(key);
    lane.name = n == names_.end() ? "" : n->second;
    lane.calibration = std::make_unique<triage::PowerCalibration>(lane.name);
    it = lanes_.emplace(key, std::move(lane)).first;
  }
  auto& b = it->second.buckets;
  if (b.size() <= static_cast<size_t>(index)) b.resize(static_cast<size_t>(index) + 1);
  return &b[static_cast<size_t>(index)];
}

void TimelineCollector::Coarsen() {
  for (auto& [key, lane] : lanes_) {
    auto& b = lane.buckets;
    const size_t n = (b.size() + 1) / 2;
    for (size_t i = 0; i < n; ++i) {
      TimelineBucket m = b[2 * i];
      if (2 * i + 1 < b.size()) m.Merge(b[2 * i + 1]);
      b[i] = m;
    }
    b.resize(n);
  }
  bucket_ms_ *= 2;
}

void TimelineCollector::AddSample(const GpuSample& s) {
  TimelineBucket* b = BucketFor(s.key, s.timestamp_ms);
  if (!b) return;
  Lane& lane = lanes_.at(s.key);
  ++lane.samples;
  // The same power the engine classifies on (average, else instantaneous).
  const std::optional<double> power = s.power_w ? s.power_w : s.power_instant_w;
  if (power) {
    const float p = static_cast<float>(*power);
    if (b->has_power()) {
      b->power_min_w = std::min(b->power_min_w, p);
      b->power_max_w = std::max(b->power_max_w, p);
    } else {
      b->power_min_w = b->power_max_w = p;
    }
    lane.calibration->Add(*power, s.util_gpu_pct, s.power_limit_w);
  }
  if (s.util_gpu_pct) {
    const float u = static_cast<float>(*s.util_gpu_pct);
    if (b->has_util()) {
      b->util_min_pct = std::min(b->util_min_pct, u);
      b->util_max_pct = std::max(b->util_max_pct, u);
    } else {
      b->util_min_pct = b->util_max_pct = u;
    }
  }
  if (s.power_limit_w) lane.power_limit_w = std::max(lane.power_limit_w, *s.power_limit_w);
}

void TimelineCollector::OnLabel(const triage::LabeledSample& label) {
  TimelineBucket* b = BucketFor(label.key, label.timestamp_ms);
  if (b) ++b->state_samples[static_cast<size_t>(label.state)];
}

Status RecordingSource::Next(std::vector<GpuSample>* out) {
  const size_t before = out->size();
  Status st = inner_->Next(out);
  if (!st.ok()) return st;
  if (!named_ && out->size() > before) {
    collector_->SetGpuInfo(inner_->gpus());
    named_ = true;
  }
  for (size_t i = before; i < out->size(); ++i) collector_->AddSample((*out)[i]);
  return st;
}

namespace {

std::string Escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// Rounded for the page: a watt or a percent is finer than anyone reads off a chart.
int Round(float v) { return static_cast<int>(std::lround(v)); }

nlohmann::json TimelineJson(const TriageReport& report, const TimelineCollector& tl,
                            const HtmlOptions& options, std::map<GpuKey, int>* lane_index) {
  const auto& lanes = tl.lanes();
  size_t longest = 0;
  for (const auto& [k, l] : lanes) longest = std::max(longest, l.buckets.size());
  // Merge pairwise until GPUs x buckets fits the page budget.
  size_t factor = 1;
  while (lanes.size() * ((longest + factor - 1) / factor) > options.max_total_buckets &&
         factor < (size_t{1} << 40)) {
    factor *= 2;
  }
  const size_t n = (longest + factor - 1) / factor;

  nlohmann::json j;
  j["t0"] = tl.origin_ms() == INT64_MIN ? report.first_ms : tl.origin_ms();
  j["bucket_ms"] = tl.bucket_ms() * static_cast<int64_t>(factor);
  j["n"] = n;
  j["end"] = report.last_ms;
  j["with_zone"] = report.with_zone;
  j["states"] = nlohmann::json::array();
  for (auto name : kGpuStateNames) j["states"].push_back(std::string(name));
  nlohmann::json jl = nlohmann::json::array();
  for (const auto& [key, lane] : lanes) {
    (*lane_index)[key] = static_cast<int>(jl.size());
    std::string states(n, '.');
    std::vector<int> pmin(n, -1), pmax(n, -1), umin(n, -1), umax(n, -1);
    for (size_t i = 0; i < n; ++i) {
      TimelineBucket m;
      for (size_t k = i * factor; k < std::min((i + 1) * factor, lane.buckets.size()); ++k) {
        m.Merge(lane.buckets[k]);
      }
      const int st = m.dominant_state();
      if (st >= 0) states[i] = static_cast<char>('0' + st);
      if (m.has_power()) {
        pmin[i] = Round(m.power_min_w);
        pmax[i] = Round(m.power_max_w);
      }
      if (m.has_util()) {
        umin[i] = Round(m.util_min_pct);
        umax[i] = Round(m.util_max_pct);
      }
    }
    const auto& cal = *lane.calibration;
    const auto& th = tl.thresholds();
    nlohmann::json levels = {
        {"idle_w", std::round(cal.floor_w())},
        {"spin_max_w",
         std::round(cal.floor_w() + th.spin_power_frac * (cal.top_w() - cal.floor_w()))},
        {"comm_w", std::round(cal.floor_w() + th.comm_level_frac * cal.design_range_w())},
        {"compute_w", std::round(cal.compute_level_w())},
    };
    jl.push_back({{"label", fmt::format("{}/GPU{}", HostName(report, key.host), key.gpu)},
                  {"name", lane.name},
                  {"calibration", cal.source()},
                  {"limit_w", std::round(lane.power_limit_w)},
                  {"levels", levels},
                  {"s", states},
                  {"pmin", pmin},
                  {"pmax", pmax},
                  {"umin", umin},
                  {"umax", umax}});
  }
  j["lanes"] = jl;

  auto indices = [&](const std::vector<GpuKey>& keys) {
    nlohmann::json a = nlohmann::json::array();
    for (GpuKey k : keys) {
      auto it = lane_index->find(k);
      if (it != lane_index->end()) a.push_back(it->second);
    }
    return a;
  };
  j["hangs"] = nlohmann::json::array();
  for (const auto& e : report.hang_episodes) {
    j["hangs"].push_back({{"start", e.start_ms},
                          {"end", e.end_ms},
                          {"detected", e.detected_at_ms},
                          {"ongoing", e.ongoing},
                          {"gpus", indices(e.gpus)},
                          {"culprits", indices(e.culprits)},
                          {"reasons", e.reasons},
                          {"wasted_gpu_h", e.wasted_gpu_hours()}});
  }
  j["checkpoints"] = nlohmann::json::array();
  for (const auto& c : report.checkpoints) {
    // Drawn over what its readings stand for (each the interval before it).
    j["checkpoints"].push_back({{"start", c.end_ms - c.covered_ms()},
                                {"end", c.end_ms},
                                {"all_ranks", c.all_ranks},
                                {"writers", indices(c.writers)}});
  }
  return j;
}

std::string SummaryTable(const TriageReport& r) {
  std::string h = "<table class=\"summary\"><thead><tr><th>GPU</th><th>model</th>";
  for (int s = 0; s < kNumGpuStates; ++s) {
    h += fmt::format("<th><span class=\"sw s{}\"></span>{}</th>", s,
                     kGpuStateNames[static_cast<size_t>(s)]);
  }
  h += "<th>comm share</th></tr></thead><tbody>";
  std::array<double, kNumGpuStates> total{};
  for (const auto& g : r.gpus) {
    const double t = g.total_seconds();
    h += fmt::format("<tr><td>{}/GPU{}</td><td>{}</td>", Escape(HostName(r, g.key.host)), g.key.gpu,
                     Escape(g.name));
    for (size_t s = 0; s < total.size(); ++s) {
      total[s] += g.seconds[s];
      h += t > 0 ? fmt::format("<td>{:.1f} %</td>", 100.0 * g.seconds[s] / t) : "<td>-</td>";
    }
    const auto cs = g.comm_share();
    h += cs ? fmt::format("<td>{:.1f} %</td></tr>", 100.0 * *cs) : "<td>-</td></tr>";
  }
  double all = 0;
  for (double v : total) all += v;
  h += "<tr class=\"total\"><td>job</td><td></td>";
  for (double v : total) {
    h += all > 0 ? fmt::format("<td>{:.1f} %</td>", 100.0 * v / all) : "<td>-</td>";
  }
  const auto cs = r.comm_share();
  h += cs ? fmt::format("<td>{:.1f} %</td></tr>", 100.0 * *cs) : "<td>-</td></tr>";
  h += "</tbody></table>";
  return h;
}

std::string Headline(const TriageReport& r) {
  std::string h =
      fmt::format("<p class=\"headline\">{} GPUs on {} host{}, {} &rarr; {} ({}). ", r.gpus.size(),
                  r.hosts.size(), r.hosts.size() == 1 ? "" : "s",
                  FormatIsoMs(r.first_ms, r.with_zone), FormatIsoMs(r.last_ms, r.with_zone),
                  FormatDuration(static_cast<double>(r.last_ms - r.first_ms) / 1000.0));
  if (r.hang_episodes.empty()) {
    h += "No hang found.";
  } else {
    h += fmt::format("<b class=\"bad\">{} hang episode{}</b>, {:.2f} GPU-hours wasted.",
                     r.hang_episodes.size(), r.hang_episodes.size() == 1 ? "" : "s",
                     r.wasted_gpu_hours());
  }
  const auto cs = r.comm_share();
  if (cs) h += fmt::format(" Communication share of training time: {:.1f} %.", 100.0 * *cs);
  h += fmt::format(" Checkpoints: {}.</p>", r.checkpoints.size());
  return h;
}

std::string EpisodeList(const TriageReport& r) {
  if (r.hang_episodes.empty()) return "";
  std::string h = "<h2>Hang episodes</h2><ol class=\"episodes\">";
  for (const auto& e : r.hang_episodes) {
    h += fmt::format("<li><b>{} &rarr; {}</b>{} ({}, {} GPUs, {:.2f} GPU-hours); detected at {}",
                     FormatIsoMs(e.start_ms, r.with_zone), FormatIsoMs(e.end_ms, r.with_zone),
                     e.ongoing ? " (still stuck at end of log)" : "",
                     FormatDuration(static_cast<double>(e.end_ms - e.start_ms) / 1000.0),
                     e.gpus.size(), e.wasted_gpu_hours(),
                     FormatIsoMs(e.detected_at_ms, r.with_zone));
    std::string culprits;
    for (GpuKey k : e.culprits) {
      culprits +=
          (culprits.empty() ? "" : ", ") + fmt::format("{}/GPU{}", HostName(r, k.host), k.gpu);
    }
    h += fmt::format("<br>culprit: {}<ul>", culprits.empty() ? "undetermined" : Escape(culprits));
    for (const auto& reason : e.reasons) h += "<li>" + Escape(reason) + "</li>";
    h += "</ul></li>";
  }
  return h + "</ol>";
}

// JSON inside <script type="application/json">: "</" must not appear, or it would close the tag.
std::string ScriptSafe(const std::string& json) {
  std::string out;
  out.reserve(json.size());
  for (size_t i = 0; i < json.size(); ++i) {
    if (json[i] == '<') {
      out += "\\u003c";
    } else {
      out += json[i];
    }
  }
  return out;
}

}  // namespace

std::string RenderHtml(const TriageReport& report, const TimelineCollector& timeline,
                       const HtmlOptions& options) {
  std::map<GpuKey, int> lane_index;
  nlohmann::json data = TimelineJson(report, timeline, options, &lane_index);
  data["title"] = options.title;
  std::string inputs;
  for (const auto& f : options.inputs) inputs += (inputs.empty() ? "" : ", ") + f;

  std::string page;
  page.reserve(1 << 20);
  page += "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>";
  page += Escape(options.title);
  page += "</title>\n<style>";
  page += HtmlPageStyle();
  page += "</style></head>\n<body data-rendered=\"no\">\n<header><h1>";
  page += Escape(options.title);
  page += "</h1>";
  if (!inputs.empty()) page += "<p class=\"inputs\">" + Escape(inputs) + "</p>";
  page += Headline(report);
  page += "</header>\n";
  page +=
      R"(<div class="toolbar"><button id="zin">zoom in</button><button id="zout">zoom out</button><button id="zreset">whole run</button> <span class="hint">wheel: zoom &middot; drag: pan &middot; click a lane: show its power and utilization &middot; hover: details</span> <span id="range"></span></div>
<div class="legend" id="legend"></div>
<div id="charts"><canvas id="lanes"></canvas>
<div class="gpuhead">GPU: <select id="gpusel"></select> <span id="gpuinfo"></span></div>
<canvas id="power"></canvas><canvas id="util"></canvas></div>
<div id="tip" class="tip"></div>
<h2>Share of time per state</h2>
)";
  page += SummaryTable(report);
  page += EpisodeList(report);
  if (!report.notes.empty() || !report.warnings.empty()) {
    page += "<h2>Notes</h2><ul class=\"notes\">";
    for (const auto& n : report.notes) page += "<li>" + Escape(n) + "</li>";
    for (const auto& w : report.warnings) page += "<li>" + Escape(w) + "</li>";
    page += "</ul>";
  }
  page += "\n<script type=\"application/json\" id=\"ww-data\">";
  page += ScriptSafe(data.dump());
  page += "</script>\n<script>";
  page += HtmlPageScript();
  page += "</script>\n</body></html>\n";
  return page;
}

Status WriteHtmlReport(const std::string& path, const TriageReport& report,
                       const TimelineCollector& timeline, const HtmlOptions& options) {
  const std::string page = RenderHtml(report, timeline, options);
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return Status::IoError(path + ": cannot write the HTML report");
  const size_t written = std::fwrite(page.data(), 1, page.size(), f);
  const bool closed = std::fclose(f) == 0;
  if (written != page.size() || !closed) {
    return Status::IoError(path + ": short write of the HTML report");
  }
  return Status::Ok();
}

}  // namespace ww::report
